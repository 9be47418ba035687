//! Recall's rescoring read on both engines: the f32 vectors of chosen rows come back by id,
//! exactly as stored, and only the asking organisation's.

use brainscan::store::Db;
use brainscan::store::recall::EmbeddedText;

use crate::queue::{open_postgres, open_sqlite};

fn text(i: usize) -> EmbeddedText {
    EmbeddedText {
        kind: "moment".into(),
        lens: "attention".into(),
        second: i as u32,
        text: format!("text {i}"),
        model_id: "m".into(),
        vector: (0..brainscan::embed::DIM)
            .map(|d| ((i * 31 + d) as f32 * 0.013).sin())
            .collect(),
    }
}

async fn vectors_come_back_by_id_for_their_organisation_only(db: Db) {
    let ours: Vec<_> = (0..600).map(text).collect();
    db.insert_recall_texts("org_a", "scan_a", 0, &ours)
        .await
        .expect("insert a");
    db.insert_recall_texts("org_b", "scan_b", 0, &[text(9_999)])
        .await
        .expect("insert b");
    let rows_a = db
        .recall_rows("org_a", "m", 0, 1_000)
        .await
        .expect("rows a");
    let rows_b = db.recall_rows("org_b", "m", 0, 10).await.expect("rows b");
    assert_eq!((rows_a.len(), rows_b.len()), (600, 1));
    // More ids than one statement takes (500), another organisation's id, and one never used.
    let mut ids: Vec<i64> = rows_a.iter().map(|r| r.id).collect();
    ids.push(rows_b[0].id);
    ids.push(i64::MAX);
    let got = db.recall_vectors("org_a", &ids).await.expect("vectors");
    assert_eq!(got.len(), 600);
    for r in &rows_a {
        assert_eq!(got[&r.id], r.vector);
        assert_eq!(got[&r.id], text(r.second as usize).vector);
    }
    assert!(!got.contains_key(&rows_b[0].id));
    assert!(
        db.recall_vectors("org_a", &[])
            .await
            .expect("none")
            .is_empty()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_vectors_come_back_by_id_for_their_organisation_only() {
    let (db, _guard) = open_sqlite().await;
    vectors_come_back_by_id_for_their_organisation_only(db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_vectors_come_back_by_id_for_their_organisation_only() {
    let (db, _guard) = open_postgres().await;
    vectors_come_back_by_id_for_their_organisation_only(db).await;
}

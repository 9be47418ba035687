use serde_json::json;

use crate::support::TestApp;

async fn scan_and_fetch(
    t: &TestApp,
    org: &crate::support::Org,
    lenses: serde_json::Value,
) -> String {
    let (s, b) = t.submit_tone(org, json!({"lenses": lenses})).await;
    assert_eq!(s.as_u16(), 202, "{b}");
    let id = b["scan_id"].as_str().expect("id").to_owned();
    assert_eq!(t.wait_final(&id).await, "complete");
    t.get(org, &format!("/scans/{id}")).await;
    id
}

#[tokio::test]
async fn rollup_matches_hand_computed_values_and_is_org_scoped() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let other = t.org("other", 10_000).await;
    // The fixture analysis gives lens i the series 40+10i + [0, 1, -20] over the 3 s tone.
    let ids = [
        scan_and_fetch(&t, &org, json!(["attention"])).await,
        scan_and_fetch(&t, &org, json!(["attention", "memory"])).await,
        scan_and_fetch(&t, &org, json!(["memory"])).await,
    ];
    let other_id = scan_and_fetch(&t, &other, json!(["attention"])).await;

    let (_, r) = t.get(&org, "/intelligence").await;
    assert_eq!(r["scan_count"], 3);
    // attention: both scans [40,41,20] -> 33.67; memory: [50,51,30] and [40,41,20] -> 38.67
    assert_eq!(
        r["lens_averages"],
        json!({"attention": 33.67, "memory": 38.67})
    );
    assert_eq!(
        r["avg_lens_curves"],
        json!({"attention": [40.0, 41.0, 20.0], "memory": [45.0, 46.0, 25.0]})
    );
    assert_eq!(
        r["recurring_drop_seconds"],
        json!([{"second": 2, "lens": "attention", "count": 2}, {"second": 2, "lens": "memory", "count": 2}])
    );
    assert!(r.get("query").is_none() && r.get("recall").is_none());

    // Semantic recall: the query shares no content word with the moment reasons ("… fell
    // sharply once the soundtrack went silent"), yet they rank first.
    let (_, r) = t
        .get(
            &org,
            "/intelligence?q=viewers%20lost%20interest%20when%20the%20music%20stopped",
        )
        .await;
    assert_eq!(r["query"], "viewers lost interest when the music stopped");
    let hits = r["recall"].as_array().expect("recall");
    assert!(hits.len() >= 4 && hits.len() <= 8, "{hits:?}");
    let ours: std::collections::HashSet<&str> = ids.iter().map(String::as_str).collect();
    for (i, hit) in hits.iter().enumerate() {
        assert!(
            ours.contains(hit["scan_id"].as_str().expect("id")),
            "another org's text: {hit}"
        );
        let score = hit["score"].as_f64().expect("score");
        assert!((0.1..=1.0).contains(&score), "{hit}");
        if i < 4 {
            assert_eq!(hit["kind"], "moment", "{hits:?}");
            assert_eq!(hit["second"], 2);
            assert!(
                hit["text"]
                    .as_str()
                    .expect("text")
                    .contains("soundtrack went silent")
            );
            assert!(
                hit["created_at"]
                    .as_str()
                    .expect("created_at")
                    .ends_with('Z')
            );
        } else {
            assert!(hit["kind"] != "moment", "{hits:?}");
            assert!(
                score < hits[3]["score"].as_f64().expect("score"),
                "unrelated ranked above: {hits:?}"
            );
        }
    }
    // Transcript lines are recalled too, by meaning.
    let (_, r) = t.get(&org, "/intelligence?q=buy%20shoes%20now").await;
    let top = &r["recall"][0];
    assert_eq!(
        (
            top["kind"].as_str(),
            top["lens"].as_str(),
            top["second"].as_u64()
        ),
        (Some("transcript"), Some("overall"), Some(1)),
        "{r}"
    );
    // The other organisation sees only its own scan's texts.
    let (_, o) = t
        .get(
            &other,
            "/intelligence?q=viewers%20lost%20interest%20when%20the%20music%20stopped",
        )
        .await;
    assert_eq!(o["scan_count"], 1);
    let theirs = o["recall"].as_array().expect("recall");
    assert!(!theirs.is_empty());
    assert!(
        theirs.iter().all(|h| h["scan_id"] == other_id.as_str()),
        "{theirs:?}"
    );
    t.stop().await;
}

#[tokio::test]
async fn analyze_returns_the_stored_manipulation_block() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let with = scan_and_fetch(&t, &org, json!(["manipulation"])).await;
    let without = scan_and_fetch(&t, &org, json!(["attention"])).await;
    let (s, r) = t.post(&org, "/analyze", &json!({"scan_id": with})).await;
    assert_eq!(s.as_u16(), 200, "{r}");
    assert_eq!(r["scan_id"], with.as_str());
    assert_eq!(r["result"]["manipulation"]["conversion_risk"], 42.0);
    let (s, r) = t.post(&org, "/analyze", &json!({"scan_id": without})).await;
    assert_eq!(
        (s.as_u16(), r["error"].as_str()),
        (422, Some("manipulation_not_scored"))
    );
    let (s, _) = t
        .post(&org, "/analyze", &json!({"scan_id": "qualia_run_no_such"}))
        .await;
    assert_eq!(s.as_u16(), 404);
    t.stop().await;
}

/// Recall is multilingual (issue 46): an English query finds a moment written in French, and a
/// memory embedded by the earlier English-only model is re-embedded, not lost. Two texts of
/// the earlier all-MiniLM-L6-v2 are put in the organisation's memory; the re-embedding pass
/// that each worker process runs at start moves them to multilingual-e5-small; then the
/// English query ranks the French moment about the same thing first and leaves out the
/// unrelated text.
#[tokio::test]
async fn an_english_query_finds_a_french_moment_and_older_vectors_are_re_embedded() {
    use brainscan::intelligence::recall::migrate;
    use brainscan::store::recall::EmbeddedText;
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let models = brainscan::speech::ModelPaths::under(&t.app.config.models_dir);
    let english = brainscan::embed::shared_english(&models.embedder).expect("all-MiniLM-L6-v2");
    let texts = [
        "l'attention a chuté quand la musique s'est arrêtée",
        "le logo apparaît dans le coin supérieur gauche",
    ];
    let vectors = english.embed(&texts).expect("embed");
    let rows: Vec<EmbeddedText> = texts
        .iter()
        .zip(vectors)
        .map(|(text, vector)| EmbeddedText {
            kind: "moment".into(),
            lens: "attention".into(),
            second: 4,
            text: (*text).into(),
            model_id: english.model_id.clone(),
            vector,
        })
        .collect();
    t.app
        .db
        .insert_recall_texts(&org.id, "scan_before", 0, &rows)
        .await
        .expect("insert");
    // The start-up pass may already have run; this one re-embeds whatever it left.
    migrate::reembed_other_models(
        &t.app.db,
        &t.app.recall,
        &tokio_util::sync::CancellationToken::new(),
    )
    .await
    .expect("re-embed");
    assert_eq!(
        t.app
            .db
            .recall_count(&org.id, &english.model_id)
            .await
            .expect("count"),
        0,
        "rows of the earlier model are left"
    );
    assert_eq!(
        t.app
            .db
            .recall_count(&org.id, brainscan::embed::e5::MODEL_ID)
            .await
            .expect("count"),
        2
    );
    let (s, r) = t
        .get(
            &org,
            "/intelligence?q=viewers%20lost%20interest%20when%20the%20music%20stopped",
        )
        .await;
    assert_eq!(s.as_u16(), 200, "{r}");
    let hits = r["recall"].as_array().expect("recall");
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0]["text"], texts[0], "{hits:?}");
    assert_eq!(hits[0]["scan_id"], "scan_before");
    let score = hits[0]["score"].as_f64().expect("score");
    assert!(score >= 0.82, "{score}");
    t.stop().await;
}

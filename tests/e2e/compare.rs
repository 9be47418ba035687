//! `GET /compare`: two completed scans lens by lens, org-scoped, free, charged as a release.

use serde_json::json;

use crate::openapi::{assert_valid, served_document};
use crate::support::TestApp;

#[tokio::test]
async fn compare_overlays_two_scans_of_the_caller_and_charges_each_once() {
    let t = TestApp::start().await;
    let org = t.org("acme", 2_000).await;
    let other = t.org("rival", 2_000).await;
    let scan = |lenses: serde_json::Value| {
        let t = &t;
        let org = &org;
        async move {
            let (s, b) = t.submit_tone(org, json!({ "lenses": lenses })).await;
            assert_eq!(s.as_u16(), 202, "{b}");
            let id = b["scan_id"].as_str().expect("id").to_owned();
            assert_eq!(t.wait_final(&id).await, "complete");
            id
        }
    };
    // The fixture analyzer scores the i-th requested lens 10 * i higher, so the same lens
    // asked second in `b` reads 10 points above `a` every second.
    let a = scan(json!(["attention", "memory"])).await;
    let b = scan(json!(["memory", "attention"])).await;
    assert_eq!(t.app.db.charge_count(&a).await.expect("count"), 0);

    let (s, c) = t.get(&org, &format!("/compare?a={a}&b={b}")).await;
    assert_eq!(s.as_u16(), 200, "{c}");
    assert_eq!(c["object"], "comparison");
    assert_eq!(c["a"]["scan_id"], a.as_str());
    let lenses = c["lenses"].as_array().expect("lenses");
    assert_eq!(lenses.len(), 2);
    assert_eq!(lenses[0]["lens"], "attention");
    assert_eq!(lenses[0]["mean_difference"], 10.0, "{}", lenses[0]);
    assert_eq!(lenses[1]["mean_difference"], -10.0);
    // The curves are the scans' own, second for second.
    let (_, full_a) = t.get(&org, &format!("/scans/{a}")).await;
    let first: Vec<f64> = full_a["timeline"]
        .as_array()
        .expect("timeline")
        .iter()
        .map(|s| s["scores"]["attention"].as_f64().expect("score"))
        .collect();
    let curve: Vec<f64> = lenses[0]["a"]
        .as_array()
        .expect("curve")
        .iter()
        .map(|v| v.as_f64().expect("number"))
        .collect();
    assert_eq!(curve, first[..curve.len()].to_vec());
    assert_eq!(c["seconds"].as_u64(), Some(curve.len() as u64));
    // Charged at the comparison (the first release), once each; comparing again is free.
    assert_eq!(t.app.db.charge_count(&a).await.expect("count"), 1);
    assert_eq!(t.app.db.charge_count(&b).await.expect("count"), 1);
    t.get(&org, &format!("/compare?a={a}&b={b}")).await;
    assert_eq!(t.app.db.charge_count(&b).await.expect("count"), 1);
    let doc = served_document(&t).await;
    assert_valid(&doc, "/api/v1/compare", "get", 200, &c);
    // An empty id is refused (400), so the document says ids are not empty (schemathesis).
    for p in doc["paths"]["/api/v1/compare"]["get"]["parameters"]
        .as_array()
        .expect("parameters")
    {
        assert_eq!(p["schema"]["minLength"], 1, "{p}");
    }
    let (s, e) = t.get(&org, "/compare?a=&b=").await;
    assert_eq!(s.as_u16(), 400, "{e}");

    // Another organisation sees neither scan: 404, exactly as for a scan that does not exist.
    let (s, e) = t.get(&other, &format!("/compare?a={a}&b={b}")).await;
    assert_eq!(s.as_u16(), 404, "{e}");
    let (s2, e2) = t
        .get(
            &other,
            "/compare?a=qualia_run_0000000000_AAAAAAAAAAAAAAAAAAAAAAAAA&b=x",
        )
        .await;
    assert_eq!((s2, e2["error"].clone()), (s, e["error"].clone()));
    let (s, e) = t.get(&org, &format!("/compare?a={a}")).await;
    assert_eq!((s.as_u16(), e["field"].as_str()), (400, Some("b")), "{e}");
    assert_valid(&doc, "/api/v1/compare", "get", 400, &e);
    t.stop().await;
}

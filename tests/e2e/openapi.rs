//! The served OpenAPI document describes what the server really answers: real responses are
//! validated against the document's schemas.

use serde_json::{Value, json};

use crate::support::TestApp;

fn response_schema(doc: &Value, path: &str, method: &str, status: u16) -> Value {
    let schema =
        doc["paths"][path][method]["responses"][status.to_string()]["content"]["application/json"]
            ["schema"]
            .clone();
    assert!(!schema.is_null(), "no schema for {method} {path} {status}");
    let mut root = match schema {
        Value::Object(m) => m,
        other => panic!("schema is not an object: {other}"),
    };
    root.insert("components".into(), doc["components"].clone());
    Value::Object(root)
}

pub fn assert_valid(doc: &Value, path: &str, method: &str, status: u16, body: &Value) {
    let schema = response_schema(doc, path, method, status);
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path} {status}: {errors:?}\nbody: {body}"
    );
}

/// The document the running server serves.
pub async fn served_document(t: &TestApp) -> Value {
    t.http
        .get(t.url("/openapi.json"))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json")
}

#[tokio::test]
async fn real_responses_match_the_served_document() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let doc = served_document(&t).await;
    assert_eq!(
        doc["openapi"].as_str().map(|v| v.starts_with("3.1")),
        Some(true)
    );

    let (s, created) = t.submit_tone(&org, json!({"lenses": ["attention", "manipulation"], "options": {"include_raw": true, "include_fmri": true}})).await;
    assert_valid(&doc, "/api/v1/scans", "post", s.as_u16(), &created);
    let id = created["scan_id"].as_str().expect("id").to_owned();
    let (s, inflight) = t.get(&org, &format!("/scans/{id}")).await;
    assert_valid(&doc, "/api/v1/scans/{id}", "get", s.as_u16(), &inflight);
    t.wait_final(&id).await;
    let (s, done) = t.get(&org, &format!("/scans/{id}")).await;
    assert_eq!(done["status"], "complete");
    assert_valid(&doc, "/api/v1/scans/{id}", "get", s.as_u16(), &done);
    let (s, list) = t.get(&org, "/scans").await;
    assert_valid(&doc, "/api/v1/scans", "get", s.as_u16(), &list);
    let (s, wallet) = t.get(&org, "/wallet").await;
    assert_valid(&doc, "/api/v1/wallet", "get", s.as_u16(), &wallet);
    let (s, intel) = t.get(&org, "/intelligence?q=music").await;
    assert_valid(&doc, "/api/v1/intelligence", "get", s.as_u16(), &intel);
    let (s, analyzed) = t.post(&org, "/analyze", &json!({"scan_id": id})).await;
    assert_valid(&doc, "/api/v1/analyze", "post", s.as_u16(), &analyzed);
    let (s, lenses) = t.get(&org, "/lenses").await;
    assert_valid(&doc, "/api/v1/lenses", "get", s.as_u16(), &lenses);
    // Errors.
    let (s, e) = t.get(&org, "/scans/qualia_run_x_y").await;
    assert_valid(&doc, "/api/v1/scans/{id}", "get", s.as_u16(), &e);
    let (s, e) = t.submit(&org, "long.mp4", json!({})).await;
    assert_valid(&doc, "/api/v1/scans", "post", s.as_u16(), &e);
    let r = t.http.get(t.url("/wallet")).send().await.expect("send");
    let status = r.status().as_u16();
    assert_valid(
        &doc,
        "/api/v1/wallet",
        "get",
        status,
        &r.json().await.expect("json"),
    );
    let r = t
        .http
        .delete(t.url("/wallet"))
        .bearer_auth(&org.key)
        .send()
        .await
        .expect("send");
    assert_valid(
        &doc,
        "/api/v1/wallet",
        "get",
        r.status().as_u16(),
        &r.json().await.expect("json"),
    );
    t.stop().await;
}

/// The mismatches a schemathesis run found (issue: contract and hardening, OpenAPI
/// precision), each sent for real and checked against the served document: an `offset` that
/// does not fit in 64 bits (400), `/analyze` without a JSON content type (415) or with a body
/// that is not JSON (400), an `input.type` outside the documented enum (400), and a 429 on
/// every keyed operation.
#[tokio::test]
async fn the_statuses_schemathesis_found_undocumented_are_documented() {
    let t = TestApp::start().await;
    let org = t.org("acme", 10_000).await;
    let doc = served_document(&t).await;
    let (s, e) = t.get(&org, "/scans?offset=18446744073709551616").await;
    assert_eq!(s.as_u16(), 400, "{e}");
    assert_valid(&doc, "/api/v1/scans", "get", 400, &e);
    let send = |content_type: Option<&'static str>, body: &'static str| {
        let mut r = t
            .http
            .post(t.url("/analyze"))
            .bearer_auth(&org.key)
            .body(body);
        if let Some(ct) = content_type {
            r = r.header("content-type", ct);
        }
        async move {
            let r = r.send().await.expect("send");
            let s = r.status().as_u16();
            (s, r.json::<Value>().await.expect("json"))
        }
    };
    let (s, e) = send(None, "{\"scan_id\": \"x\"}").await;
    assert_eq!(s, 415, "{e}");
    assert_valid(&doc, "/api/v1/analyze", "post", s, &e);
    let (s, e) = send(Some("application/json"), "{not json").await;
    assert_eq!(s, 400, "{e}");
    assert_valid(&doc, "/api/v1/analyze", "post", s, &e);
    // input is exactly one of its three shapes: the document accepts what the server accepts
    // and refuses the bodies the server must refuse (schemathesis's "schema-valid request
    // rejected" came from the old schema of optional strings).
    let mut input = doc["components"]["schemas"]["CreateScanBody"]["properties"]["input"].clone();
    input["components"] = doc["components"].clone();
    let input = jsonschema::draft202012::new(&input).expect("input schema compiles");
    let u = "https://cdn.example.com/a.mp4";
    for ok in [
        json!({"type": "video", "video_url": u}),
        json!({"type": "video", "url": u}),
        json!({"type": "audio", "audio_url": u}),
        json!({"type": "url", "url": u, "modality": "audio"}),
        json!({"type": "url", "url": u, "text": "ignored"}),
        json!({"type": "video", "video_url": u, "url": null, "text": null}),
        json!({"type": "url", "url": u, "modality": null}),
        json!({"type": "url", "url": "http://[2001:db8::7]:8443/a.mp4"}),
    ] {
        assert!(input.is_valid(&ok), "refused {ok}");
    }
    for bad in [
        json!({"type": "video"}),
        json!({"type": "video", "video_url": ""}),
        json!({"type": "audio", "video_url": u}),
        json!({"type": "url", "video_url": u}),
        json!({"type": "url", "url": "ftp://example.com/a.mp4"}),
        json!({"type": "url", "url": "https://user:pw@example.com/a.mp4"}),
        json!({"type": "url", "url": u, "modality": "smell"}),
        json!({"type": "banana", "url": u}),
        json!({"url": u}),
        json!({"type": "video", "video_url": null}),
        json!({"type": "url", "url": null}),
    ] {
        assert!(!input.is_valid(&bad), "accepted {bad}");
    }
    // What schemathesis's positive_data_acceptance and negative_data_rejection found at seed
    // 20261123, pinned: the document and the server agree on each (src/url_syntax.rs).
    let disagreed = [
        // an unused fallback is still a field the shape names, and is checked
        json!({"type": "video", "video_url": u, "url": "not a url"}),
        json!({"type": "audio", "audio_url": u, "url": ""}),
        // a host the IDNA step would refuse or rewrite
        json!({"type": "url", "url": "httpS://\u{9d}"}),
        json!({"type": "url", "url": "https://münchen.de/a.mp4"}),
        json!({"type": "url", "url": "https://xn--mnchen-3ya.de/a.mp4"}),
        // a host the parser would read as a bad IPv4 address
        json!({"type": "url", "url": "http://1.2.3.256/a.mp4"}),
        json!({"type": "url", "url": "http://cdn.123/a.mp4"}),
        // white space the old check trimmed
        json!({"type": "url", "url": " https://cdn.example.com/a.mp4"}),
        // not RFC 3986, which the document's `format: uri` means
        json!({"type": "audio", "audio_url": u, "url": "htTp://239.102.242.185:10274#%mN{"}),
    ];
    for bad in &disagreed {
        assert!(!input.is_valid(bad), "the document accepts {bad}");
        let (s, e) = t.post(&org, "/scans", &json!({ "input": bad })).await;
        assert_eq!(s.as_u16(), 400, "the server did not refuse {bad}: {e}");
        assert_eq!(e["error"], "invalid_request", "{bad}: {e}");
    }
    // image is a value the spec lists but the service refuses: the document says so.
    let image = json!({"type": "url", "url": u, "modality": "image"});
    assert!(!input.is_valid(&image), "the document accepts {image}");
    let (s, e) = t.post(&org, "/scans", &json!({ "input": image })).await;
    assert_eq!(
        (s.as_u16(), e["error"].as_str()),
        (400, Some("unsupported_input")),
        "{e}"
    );
    // webhook_url and Idempotency-Key say what the server accepts too (schemathesis found both).
    let mut hook =
        doc["components"]["schemas"]["CreateScanBody"]["properties"]["webhook_url"].clone();
    hook["components"] = doc["components"].clone();
    let hook = jsonschema::draft202012::new(&hook).expect("webhook schema compiles");
    for ok in [
        json!(null),
        json!(""),
        json!("  "),
        json!("https://hooks.example.com/x"),
    ] {
        assert!(hook.is_valid(&ok), "refused webhook_url {ok}");
    }
    for bad in [json!("ÀÉ"), json!("ftp://h/x"), json!("https://u:p@h/x")] {
        assert!(!hook.is_valid(&bad), "accepted webhook_url {bad}");
    }
    let key = doc["paths"]["/api/v1/scans"]["post"]["parameters"]
        .as_array()
        .expect("parameters")
        .iter()
        .find(|p| p["name"] == "Idempotency-Key")
        .expect("Idempotency-Key documented")["schema"]
        .clone();
    let key = jsonschema::draft202012::new(&key).expect("header schema compiles");
    assert!(key.is_valid(&json!("order-42")));
    for bad in [json!(""), json!("with space"), json!("x".repeat(256))] {
        assert!(!key.is_valid(&bad), "accepted Idempotency-Key {bad}");
    }
    for bad in [
        json!({"type": "video"}),
        json!({"type": "video", "video_url": ""}),
        json!({"type": "url", "video_url": u}),
    ] {
        let (s, e) = t.post(&org, "/scans", &json!({ "input": bad })).await;
        assert_eq!(s.as_u16(), 400, "{bad}: {e}");
    }
    let schemas = &doc["components"]["schemas"];
    assert_eq!(schemas["ModelName"]["enum"], json!(["qualia", "mary"]));
    assert_eq!(schemas["Granularity"]["enum"], json!(["second"]));
    let (s, e) = t
        .post(
            &org,
            "/scans",
            &json!({"input": {"type": "banana", "url": "https://example.com/a.mp4"}}),
        )
        .await;
    assert_eq!(s.as_u16(), 400, "{e}");
    assert_valid(&doc, "/api/v1/scans", "post", 400, &e);
    // Every operation that takes a key documents the rate limit.
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("operations") {
            if op["security"].as_array().is_some_and(|s| !s.is_empty()) {
                assert!(
                    !op["responses"]["429"].is_null(),
                    "{method} {path} does not document 429"
                );
            }
        }
    }
    t.stop().await;
}

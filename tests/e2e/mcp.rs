//! The MCP server (issue 20), driven by a real MCP client: the official Python SDK, pinned in
//! `scripts/requirements/mcp.txt` and installed by `scripts/test-tools`
//! (`BRAINSCAN_MCP_PYTHON`), against a real `brainscan serve` process scanning a real clip.
//! Both transports: Streamable HTTP at `/mcp`, and `brainscan mcp` on stdio.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::support::{BIN, admin, fixtures, funded_key, media_server, real_clips, serve};

/// The six tools, sorted.
const TOOLS: [&str; 6] = [
    "compare_scans",
    "create_scan",
    "get_scan",
    "get_wallet",
    "list_scans",
    "search_memory",
];

fn python() -> String {
    std::env::var("BRAINSCAN_MCP_PYTHON").unwrap_or_else(|_| {
        panic!("BRAINSCAN_MCP_PYTHON is not set: run `. scripts/test-tools` (scripts/test does)")
    })
}

fn client(args: &[&str]) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/e2e/mcp_client.py");
    let out = Command::new(python())
        .arg(script)
        .args(args)
        .output()
        .expect("run the MCP client");
    assert!(
        out.status.success(),
        "the MCP client failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "client output is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

fn available(wallet: &Value) -> f64 {
    let w = &wallet["structured"];
    w["deposit_balance_usd"].as_f64().expect("deposit")
        + w["free_credit_remaining_usd"].as_f64().expect("free")
}

#[tokio::test]
async fn an_agent_scans_waits_reads_and_compares_over_mcp_and_sees_no_other_org() {
    let dir = tempfile::tempdir().expect("tmp");
    let key = funded_key(dir.path());
    admin(dir.path(), &["org", "create", "rival"]);
    let other_key = admin(dir.path(), &["key", "create", "--org", "rival"])
        .trim()
        .to_owned();
    // Two real clips (scripts/fetch-test-media): a street video without sound, and speech.
    for (from, to) in [("bikes.mp4", "mcp-bikes.mp4"), ("jfk.wav", "mcp-jfk.wav")] {
        std::fs::copy(real_clips().join(from), fixtures().dir.join(to)).expect("copy clip");
    }
    let media = media_server().await;
    let mut server = serve(dir.path());
    let (video, audio) = (
        media.url("/media/mcp-bikes.mp4"),
        media.url("/media/mcp-jfk.wav"),
    );
    let base = server.base.clone();
    let (key2, other2, base2) = (key.clone(), other_key.clone(), base.clone());
    let r = tokio::task::spawn_blocking(move || {
        client(&["http", &base2, &key2, &other2, &video, &audio])
    })
    .await
    .expect("client thread");

    // Discovery: the six tools, each with an input and an output schema; both templates.
    let tools = r["tools"].as_object().expect("tools");
    let mut names: Vec<&str> = tools.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, TOOLS);
    for (name, t) in tools {
        assert_eq!(t["input"]["type"], "object", "{name}");
        assert_eq!(t["output"]["type"], "object", "{name}");
    }
    assert_eq!(
        tools["get_scan"]["input"]["properties"]["wait_seconds"]["maximum"],
        120
    );
    assert_eq!(
        tools["create_scan"]["input"]["required"],
        serde_json::json!(["url"])
    );
    assert_eq!(
        r["templates"],
        serde_json::json!(["scan://{scan_id}", "scan://{scan_id}/summary"])
    );
    assert!(
        r["instructions"]
            .as_str()
            .expect("instructions")
            .contains("not measurements")
    );

    // A real clip, scanned, waited for and read: the REST result itself.
    for created in r["created"].as_array().expect("created") {
        assert_eq!(created["is_error"], false, "{created}");
        assert_eq!(created["structured"]["status"], "queued", "{created}");
    }
    let got = r["got"].as_array().expect("got");
    for g in got {
        assert_eq!(g["is_error"], false, "{g}");
        let scan = &g["structured"];
        assert_eq!(scan["status"], "complete", "{scan}");
        let timeline = scan["timeline"].as_array().expect("timeline");
        assert!(timeline.len() >= 3, "{scan}");
        assert!(scan["provenance"]["model"]["source"].is_string(), "{scan}");
    }
    assert_eq!(
        got[0]["structured"]["lenses"],
        serde_json::json!(["attention", "memory"])
    );
    // The speech clip's own words reached the agent.
    let words: String = got[1]["structured"]["transcript"]
        .as_array()
        .expect("transcript")
        .iter()
        .filter_map(|l| l["text"].as_str())
        .collect();
    assert!(words.contains("country"), "{words}");
    // The structured content is the JSON the REST API returns for the same scan.
    assert_eq!(r["got_again"]["structured"], got[0]["structured"]);
    assert_eq!(
        serde_json::from_str::<Value>(r["resource"]["text"].as_str().expect("json text"))
            .expect("json"),
        got[0]["structured"]
    );
    assert_eq!(r["resource"]["mime"], "application/json");
    let summary = r["summary"]["text"].as_str().expect("summary text");
    let id = r["ids"][0].as_str().expect("id");
    let second = r["ids"][1].as_str().expect("id");
    assert!(
        summary.starts_with(&format!("Scan {second} (")),
        "{summary}"
    );
    assert!(
        summary.contains("Top moments:") || summary.contains("Summary: "),
        "{summary}"
    );
    assert!(summary.contains("Manipulation read:"), "{summary}");
    assert!(summary.contains("Caveat: "), "{summary}");
    assert_eq!(r["summary"]["mime"], "text/plain");

    // Compare, list, memory: the REST answers.
    let cmp = &r["compared"]["structured"];
    assert_eq!(cmp["object"], "comparison", "{cmp}");
    assert_eq!(cmp["a"]["scan_id"], id);
    assert!(
        cmp["lenses"].as_array().is_some_and(|l| !l.is_empty()),
        "{cmp}"
    );
    assert_eq!(r["listed"]["structured"]["total"], 2, "{}", r["listed"]);
    assert_eq!(r["memory"]["is_error"], false, "{}", r["memory"]);

    // Billing is the REST API's: the two results were charged when first read, once.
    let (before, after, last) = (
        available(&r["wallet_before"]),
        available(&r["wallet_after"]),
        available(&r["wallet_final"]),
    );
    assert!(
        after < before - 1e-9,
        "nothing was charged: {before} -> {after}"
    );
    assert!(
        (last - after).abs() < 1e-9,
        "a second read was charged: {after} -> {last}"
    );

    // Bad input: MCP invalid-params errors carrying the API's code and the field.
    for (case, field) in [("bad_wait", "wait_seconds"), ("unknown_argument", "colour")] {
        let e = &r[case]["mcp_error"];
        assert_eq!(e["code"], -32602, "{case}: {}", r[case]);
        assert_eq!(e["data"]["code"], "invalid_request", "{case}");
        assert_eq!(e["data"]["field"], field, "{case}");
    }
    // A URL the API refuses: a tool error with the API's own error body.
    let bad = &r["bad_url"];
    assert_eq!(bad["is_error"], true, "{bad}");
    assert_eq!(bad["structured"]["status"], 400, "{bad}");
    assert_eq!(bad["structured"]["field"], "input.url", "{bad}");
    assert!(
        bad["text"]
            .as_str()
            .expect("text")
            .starts_with(bad["structured"]["error"].as_str().expect("code")),
        "{bad}"
    );

    // Another organisation: 404 not_found for the scans, as the REST cross-org probe gets,
    // and an empty list.
    for case in ["other_get", "other_compare"] {
        let e = &r[case];
        assert_eq!(e["is_error"], true, "{case}: {e}");
        assert_eq!(e["structured"]["status"], 404, "{case}: {e}");
        assert_eq!(e["structured"]["error"], "not_found", "{case}: {e}");
    }
    assert_eq!(
        r["other_resource"]["mcp_error"]["data"]["code"],
        "not_found"
    );
    assert_eq!(
        r["other_list"]["structured"]["total"], 0,
        "{}",
        r["other_list"]
    );

    // The endpoint itself needs a valid key: 401 with the API's body.
    for case in ["no_key", "wrong_key"] {
        assert_eq!(r[case]["status"], 401, "{case}: {}", r[case]);
        assert_eq!(r[case]["body"]["error"], "unauthorized", "{case}");
    }

    // stdio: `brainscan mcp` proxies the same tools to the running service with its key.
    let s = tokio::task::spawn_blocking(move || client(&["stdio", BIN, &base, &key]))
        .await
        .expect("client thread");
    assert_eq!(s["tools"], serde_json::json!(TOOLS));
    assert!(
        (available(&s["wallet"]) - last).abs() < 1e-9,
        "{}",
        s["wallet"]
    );
    assert_eq!(s["listed"]["structured"]["total"], 2, "{}", s["listed"]);
    assert_eq!(
        s["missing"]["structured"]["error"], "not_found",
        "{}",
        s["missing"]
    );

    server.child.kill().ok();
    server.child.wait().ok();
}

/// The organisation's rate limit covers `/mcp` as it covers REST: a burst over the limit gets
/// 429 `rate_limited` with `Retry-After`, on the MCP endpoint and on the REST API alike, since
/// both draw on one per-organisation budget.
#[tokio::test]
async fn mcp_requests_share_the_organisations_rate_limit() {
    use crate::support::{FixtureAnalyzer, TestApp};
    let t = TestApp::start_with(
        |c| {
            c.http.rate_limit_per_sec = 1;
            c.http.rate_limit_burst = 3;
        },
        std::sync::Arc::new(FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 1_000).await;
    let list = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let r = t
            .http
            .post(format!("{}/mcp", t.base))
            .bearer_auth(&org.key)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2025-06-18")
            .json(&list)
            .send()
            .await
            .expect("post");
        statuses.push(r.status().as_u16());
    }
    // The burst is spent on MCP requests; the next REST call is refused, and so is MCP.
    let (s, e) = t.get(&org, "/wallet").await;
    assert_eq!(s.as_u16(), 429, "{statuses:?} then {e}");
    assert_eq!(e["error"], "rate_limited");
    let r = t
        .http
        .post(format!("{}/mcp", t.base))
        .bearer_auth(&org.key)
        .header("Accept", "application/json, text/event-stream")
        .json(&list)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status().as_u16(), 429);
    assert!(r.headers().contains_key("retry-after"));
    // The first three were served.
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    t.stop().await;
}

/// `/mcp` has its own deadline: `get_scan` may wait up to its advertised 120 s, past the
/// request timeout of the REST API (here 2 s), and answers with the scan's status, not 503.
#[tokio::test]
async fn get_scan_may_wait_past_the_rest_request_timeout() {
    use crate::support::{FixtureAnalyzer, TestApp};
    let t = TestApp::start_with(
        |c| {
            c.http.request_timeout_secs = 2;
            // The submit's probe of the slow clip gives up within the request timeout.
            c.fetch.probe_timeout_secs = 1;
        },
        std::sync::Arc::new(FixtureAnalyzer),
    )
    .await;
    let org = t.org("acme", 1_000).await;
    // Still downloading (served slowly) for the whole wait.
    let (_, created) = t
        .submit_url(&org, "video", &t.media.url("/slow/clip.mp4"))
        .await;
    let id = created["scan_id"].as_str().expect("id").to_owned();
    let call = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "get_scan", "arguments": {"scan_id": id, "wait_seconds": 4}}});
    let started = std::time::Instant::now();
    let r = t
        .http
        .post(format!("{}/mcp", t.base))
        .bearer_auth(&org.key)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2025-06-18")
        .json(&call)
        .send()
        .await
        .expect("post");
    assert_eq!(r.status().as_u16(), 200);
    let v: Value = r.json().await.expect("json");
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(3),
        "{v}"
    );
    let text = v.to_string();
    assert!(text.contains(&id) && text.contains("processing"), "{v}");
    t.stop().await;
}

//! The web console in a real browser: headless Chromium (Debian `chromium`) driven through
//! chromedriver (Debian `chromium-driver`) over WebDriver, against the real binary on
//! loopback. The scenario of issue 18: sign in, submit a real clip, watch it complete, open
//! it, click a moment (the playhead, the video time and the transcript line move), compare two
//! scans, and as an operator roll a plugin back and see the event. Assertions are on the DOM,
//! against the values the API returned; screenshots of the main pages are saved as artifacts
//! (`$BRAINSCAN_SCREENSHOTS`, else the target folder's `console-screenshots`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::{Value, json};

use crate::support::{
    call, create_scan, fixtures, funded_key, media_server, real_clips, serve_with_env,
};

const ADMIN_TOKEN: &str = "console-test-admin-token-0123456789abcdef";

/// chromedriver on a free loopback port, killed on drop.
struct Driver {
    child: Child,
    url: String,
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

async fn browser() -> (Driver, Client) {
    let bin = std::env::var("BRAINSCAN_CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
    let port = free_port();
    let child = Command::new(&bin)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| {
            panic!("{bin}: {e} (Debian package chromium-driver; scripts/test-tools installs it)")
        });
    let driver = Driver {
        child,
        url: format!("http://127.0.0.1:{port}"),
    };
    let caps: serde_json::Map<String, Value> = serde_json::from_value(json!({
        "goog:chromeOptions": {
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1280,1400", "--autoplay-policy=no-user-gesture-required",
                     "--no-first-run", "--disable-extensions"],
        }
    }))
    .expect("capabilities");
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let mut last = String::new();
    for _ in 0..100 {
        match ClientBuilder::new(connector.clone())
            .capabilities(caps.clone())
            .connect(&driver.url)
            .await
        {
            Ok(client) => return (driver, client),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("chromedriver did not start a session: {last}");
}

/// Polls a JavaScript expression until it is truthy; returns its value.
async fn until(c: &Client, what: &str, expr: &str) -> Value {
    let script = format!("return ({expr});");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    loop {
        let v = c.execute(&script, vec![]).await.expect("execute");
        let truthy =
            !matches!(&v, Value::Null | Value::Bool(false)) && v != json!(0) && v != json!("");
        if truthy {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            let page = c
                .execute("return document.body.innerText", vec![])
                .await
                .unwrap_or_default();
            panic!("timed out waiting for {what} ({expr}); page: {page}");
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
}

fn screenshots() -> PathBuf {
    let dir = std::env::var_os("BRAINSCAN_SCREENSHOTS").map_or_else(
        || {
            let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
                || Path::new(env!("CARGO_MANIFEST_DIR")).join("../target"),
                PathBuf::from,
            );
            target.join("console-screenshots")
        },
        PathBuf::from,
    );
    std::fs::create_dir_all(&dir).expect("screenshot folder");
    dir
}

async fn shot(c: &Client, name: &str) {
    c.execute("window.scrollTo(0, 0)", vec![])
        .await
        .expect("scroll");
    let png = c.screenshot().await.expect("screenshot");
    std::fs::write(screenshots().join(format!("{name}.png")), png).expect("write screenshot");
}

/// `GET /api/v1{path}` with the key, as JSON.
async fn api(http: &reqwest::Client, base: &str, key: &str, path: &str) -> Value {
    call(http, format!("{base}/api/v1{path}"), key, None).await
}

/// Clicks the element `css` selects.
async fn click(c: &Client, css: &str) {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .click()
        .await
        .unwrap_or_else(|e| panic!("clicking {css}: {e}"));
}

/// The text of the element `css` selects.
async fn text_of(c: &Client, css: &str) -> String {
    c.find(Locator::Css(css))
        .await
        .unwrap_or_else(|e| panic!("{css}: {e}"))
        .text()
        .await
        .unwrap_or_else(|e| panic!("text of {css}: {e}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_drives_the_whole_service_in_a_real_browser() {
    std::fs::copy(real_clips().join("jfk.wav"), fixtures().dir.join("jfk.wav")).expect("copy clip");
    let dir = tempfile::tempdir().expect("tempdir");
    let key = funded_key(dir.path());
    let media = media_server().await;
    let server = serve_with_env(
        dir.path(),
        &[
            ("BRAINSCAN_ADMIN_TOKEN", ADMIN_TOKEN),
            // The console's operator pages call /admin/v1 on the one address this test serves.
            ("BRAINSCAN_ADMIN_ON_PUBLIC_LISTENER", "1"),
        ],
    );
    let base = server.base.clone();
    let http = reqwest::Client::new();
    // The second scan for the comparison, made through the API while the browser starts.
    let other = create_scan(
        &http,
        &base,
        &key,
        &json!({"input": {"type": "video", "video_url": media.url("/media/clip.mp4")},
                "lenses": ["attention", "purchase_intent", "manipulation"]}),
    )
    .await;

    let (_driver, c) = browser().await;
    // 1. Sign in (the key stays in sessionStorage).
    c.goto(&format!("{base}/console")).await.expect("goto");
    until(&c, "the sign-in form", "document.getElementById('key')").await;
    c.find(Locator::Id("key"))
        .await
        .expect("key")
        .send_keys(&key)
        .await
        .expect("type");
    c.find(Locator::Id("admin-token"))
        .await
        .expect("admin")
        .send_keys(ADMIN_TOKEN)
        .await
        .expect("type");
    click(&c, "#signin").await;
    until(
        &c,
        "the scans page",
        "document.getElementById('submit-form')",
    )
    .await;
    let stored = until(
        &c,
        "the key in sessionStorage",
        "sessionStorage.getItem('brainscan.key')",
    )
    .await;
    assert_eq!(stored, json!(key));
    let local = c
        .execute("return localStorage.length", vec![])
        .await
        .expect("js");
    assert_eq!(local, json!(0), "nothing in localStorage");

    // 2. Submit a real clip with the form.
    c.find(Locator::Id("submit-url"))
        .await
        .expect("url")
        .send_keys(&media.url("/media/jfk.wav"))
        .await
        .expect("type");
    c.find(Locator::Id("submit-type"))
        .await
        .expect("type select")
        .select_by_value("audio")
        .await
        .expect("audio");
    let memory = c
        .find(Locator::Css("input[name=lens][value=memory]"))
        .await
        .expect("memory lens box");
    memory.click().await.expect("tick memory");
    click(&c, "#submit-button").await;

    // 3. Watch it complete: the list refreshes itself while a scan is in flight.
    let rows = "[...document.querySelectorAll('#scan-list tr')]";
    let id = until(
        &c,
        "the new scan in the list",
        &format!("{rows}.map(r => r.dataset.scanId).find(i => i !== '{other}')"),
    )
    .await;
    let id = id.as_str().expect("scan id").to_owned();
    until(
        &c,
        "the scan to complete in the list",
        &format!(
            "document.querySelector('tr[data-scan-id=\"{id}\"] .status').textContent === 'complete'"
        ),
    )
    .await;
    until(
        &c,
        "the other scan to complete",
        &format!("document.querySelector('tr[data-scan-id=\"{other}\"] .status')?.textContent === 'complete'"),
    )
    .await;
    shot(&c, "scans").await;

    // 4. Open it. The DOM shows what the API returns.
    click(&c, &format!("tr[data-scan-id=\"{id}\"] a.open")).await;
    until(&c, "the scan page", "document.getElementById('chart')").await;
    let scan = api(&http, &base, &key, &format!("/scans/{id}")).await;
    // The form sends the ticked lenses in the order /lenses lists them: memory was added.
    assert_eq!(
        scan["lenses"],
        json!(["attention", "memory", "purchase_intent", "manipulation"])
    );
    let summary = text_of(&c, "#summary").await;
    // As the page prints a number: 28, not serde's 28.0 (Rust's `{}` of an f64 agrees).
    let overall = scan["overall_score"].as_f64().expect("overall score");
    assert!(
        summary.contains(&format!("Overall {overall}")),
        "{summary} vs {overall}"
    );
    assert!(summary.contains(scan["summary"].as_str().expect("summary")));
    let curves = c
        .find_all(Locator::Css("#chart path.curve"))
        .await
        .expect("curves");
    assert_eq!(curves.len(), 4);
    // The benchmark bands behind the first lens are the corpus ranges GET /lenses gives.
    let bands = api(&http, &base, &key, "/lenses").await["benchmark_bands"]["attention"].clone();
    let average = c
        .execute(
            "return document.querySelector('#chart rect.band[data-label=\"average\"] title').textContent",
            vec![],
        )
        .await
        .expect("band");
    let shown: Vec<f64> = average
        .as_str()
        .and_then(|t| t.strip_prefix("average: "))
        .expect("an average band")
        .split('–')
        .map(|v| v.parse().expect("a number"))
        .collect();
    assert_eq!(
        shown,
        vec![
            bands["p40"].as_f64().expect("p40"),
            bands["p70"].as_f64().expect("p70")
        ],
        "{bands}"
    );
    let moments = scan["moments"].as_array().expect("moments");
    assert!(!moments.is_empty(), "jfk.wav has moments: {scan}");
    let dots = c
        .find_all(Locator::Css("#chart circle.moment"))
        .await
        .expect("dots");
    assert_eq!(dots.len(), moments.len());
    let lines = scan["transcript"].as_array().expect("transcript");
    assert!(!lines.is_empty(), "jfk.wav has speech");
    let items = c
        .find_all(Locator::Css("#transcript li"))
        .await
        .expect("lines");
    assert_eq!(items.len(), lines.len());
    assert!(
        items[0]
            .text()
            .await
            .expect("text")
            .contains(lines[0]["text"].as_str().expect("line"))
    );
    let manipulation = text_of(&c, "#manipulation").await;
    assert!(
        manipulation.contains(
            scan["manipulation"]["threat"]["label"]
                .as_str()
                .expect("label")
        )
    );
    let provenance = text_of(&c, "#provenance").await;
    assert!(
        provenance.contains(
            scan["provenance"]["model"]["id"]
                .as_str()
                .expect("model id")
        )
    );
    assert!(provenance.contains("not fitted"), "{provenance}");
    // The cortex video is the scan's own signed MP4, and the browser can play it.
    let src = until(
        &c,
        "the cortex video",
        "document.getElementById('cortex')?.currentSrc",
    )
    .await;
    assert_eq!(
        src.as_str()
            .map(|s| s.split('?').next().unwrap_or_default().to_owned()),
        scan["fmri_url"]
            .as_str()
            .map(|s| s.split('?').next().unwrap_or_default().to_owned())
    );
    until(
        &c,
        "the video's metadata",
        "document.getElementById('cortex').readyState >= 1",
    )
    .await;
    let duration = c
        .execute("return document.getElementById('cortex').duration", vec![])
        .await
        .expect("duration");
    let clip = scan["duration_sec"].as_f64().expect("duration_sec");
    assert!(
        (duration.as_f64().expect("number") - clip).abs() < 0.2,
        "{duration} vs {clip}"
    );

    // 5. Click a moment: playhead, video time and transcript move there.
    let m = &moments[0];
    let second = m["second"].as_u64().expect("second");
    // Two lenses can have a moment at one second, their dots drawn on top of each other: a
    // person's click lands on the one drawn last, so the test clicks that one.
    c.find_all(Locator::Css(&format!(
        "#chart circle.moment[data-second=\"{second}\"]"
    )))
    .await
    .expect("the moment's dots")
    .pop()
    .expect("a dot at the moment's second")
    .click()
    .await
    .expect("clicking the moment's top dot");
    until(
        &c,
        "the playhead at the moment",
        &format!("document.getElementById('playhead').dataset.second === '{second}'"),
    )
    .await;
    until(
        &c,
        "the video at the moment",
        &format!("Math.abs(document.getElementById('cortex').currentTime - {second}) < 0.5"),
    )
    .await;
    let spoken = lines.iter().find(|l| {
        let (a, b) = (
            l["start_sec"].as_f64().unwrap_or(0.0),
            l["end_sec"].as_f64().unwrap_or(0.0),
        );
        (a..b + 0.5).contains(&(second as f64))
    });
    if let Some(line) = spoken {
        let current = until(
            &c,
            "the transcript line at the moment",
            "document.querySelector('#transcript li.current')?.textContent",
        )
        .await;
        assert!(
            current
                .as_str()
                .expect("text")
                .contains(line["text"].as_str().expect("text"))
        );
    }
    // The keyboard works too: a focused moment jumps on Enter.
    if let Some(last) = moments.last() {
        let s = last["second"].as_u64().expect("second");
        let dot = c
            .find(Locator::Css(&format!(
                "#chart circle.moment[data-second=\"{s}\"]"
            )))
            .await
            .expect("dot");
        c.execute(
            "arguments[0].focus()",
            vec![serde_json::to_value(&dot).expect("element")],
        )
        .await
        .expect("focus");
        dot.send_keys("\u{E007}").await.expect("enter");
        until(
            &c,
            "the playhead after Enter",
            &format!("document.getElementById('playhead').dataset.second === '{s}'"),
        )
        .await;
    }
    shot(&c, "scan").await;

    // 6. Compare the two scans: the table shows the compare endpoint's numbers.
    c.goto(&format!("{base}/console#/compare"))
        .await
        .expect("goto");
    until(
        &c,
        "the compare form",
        "document.getElementById('compare-go')",
    )
    .await;
    c.find(Locator::Id("compare-a"))
        .await
        .expect("a")
        .select_by_value(&id)
        .await
        .expect("pick a");
    c.find(Locator::Id("compare-b"))
        .await
        .expect("b")
        .select_by_value(&other)
        .await
        .expect("pick b");
    click(&c, "#compare-go").await;
    until(
        &c,
        "the comparison",
        "document.getElementById('compare-table')",
    )
    .await;
    let expected = api(&http, &base, &key, &format!("/compare?a={id}&b={other}")).await;
    for l in expected["lenses"].as_array().expect("lenses") {
        let lens = l["lens"].as_str().expect("lens");
        let shown = text_of(
            &c,
            &format!("#compare-table tr[data-lens=\"{lens}\"] .mean-difference"),
        )
        .await;
        assert_eq!(
            shown.parse::<f64>().ok(),
            l["mean_difference"].as_f64(),
            "{lens}"
        );
    }
    shot(&c, "compare").await;

    // 7. As an operator: install a new version of the standard lens plugin with the upload
    // form (the conformance table is shown), activate it, roll its slot back, and see the
    // rollback among the events.
    c.goto(&format!("{base}/console#/operators"))
        .await
        .expect("goto");
    until(
        &c,
        "the plugin table",
        "document.querySelectorAll('#plugins tr').length",
    )
    .await;
    let wasm = Path::new(brainscan::plugins::defaults::WASM_DIR).join("lens_standard_next.wasm");
    c.find(Locator::Id("upload-file"))
        .await
        .expect("file input")
        .send_keys(&wasm.display().to_string())
        .await
        .expect("choose file");
    click(&c, "#upload-go").await;
    until(
        &c,
        "the conformance table",
        "document.querySelectorAll('#conformance tr').length > 2",
    )
    .await;
    let builtin = brainscan::plugins::defaults::LENS_STANDARD;
    let next = format!(
        "[...document.querySelectorAll('#plugins tr')].find(r => r.dataset.plugin.startsWith('lens-standard@') && r.dataset.plugin !== '{builtin}')"
    );
    let activate = format!("{next}?.querySelector('button.activate')");
    until(&c, "the new lens-standard in the table", &activate).await;
    c.execute(&format!("{activate}.click()"), vec![])
        .await
        .expect("activate");
    let rollback = format!("{next}?.querySelector('button.rollback')");
    until(&c, "the new lens-standard active", &rollback).await;
    c.execute(&format!("{rollback}.click()"), vec![])
        .await
        .expect("roll back");
    let event = until(
        &c,
        "the rollback event",
        "document.querySelector('#events li[data-action=\"rollback\"]')?.textContent",
    )
    .await;
    // Back from the new version to the built-in, in the lens-standard slot.
    let event = event.as_str().expect("text");
    assert!(
        event.contains(&format!(
            "rollback lens:lens-standard: lens-standard@{}",
            crate::support::NEXT_LENS_VERSION
        )) && event.contains(&format!("{builtin} (operator)")),
        "{event}"
    );
    let active = until(
        &c,
        "the built-in active again",
        &format!("[...document.querySelectorAll('#plugins tr')].find(r => r.dataset.plugin === '{builtin}')?.querySelector('.state').textContent === 'active in lens:lens-standard'"),
    )
    .await;
    assert_eq!(active, json!(true));
    shot(&c, "operators").await;

    // Wallet and memory: the reserved amount and balance are the API's.
    c.goto(&format!("{base}/console#/wallet"))
        .await
        .expect("goto");
    until(
        &c,
        "the wallet",
        "document.getElementById('wallet-available')",
    )
    .await;
    let w = api(&http, &base, &key, "/wallet").await;
    let shown = text_of(&c, "#wallet-available").await;
    assert_eq!(
        shown,
        format!("${:.2}", w["total_available_usd"].as_f64().expect("total"))
    );
    shot(&c, "wallet").await;

    // A phone's width: the scans page still fits (no sideways scrolling).
    c.set_window_size(390, 844).await.expect("resize");
    c.goto(&format!("{base}/console#/scans"))
        .await
        .expect("goto");
    until(
        &c,
        "the scans page",
        "document.getElementById('submit-form')",
    )
    .await;
    let fits = c
        .execute(
            "return document.documentElement.scrollWidth <= window.innerWidth + 1",
            vec![],
        )
        .await
        .expect("js");
    assert_eq!(
        fits,
        json!(true),
        "the page scrolls sideways at phone width"
    );
    shot(&c, "scans-phone").await;
    c.close().await.expect("close");
    drop(server);
}

/// Types `text` into the input with id `id`.
async fn type_into(c: &Client, id: &str, text: &str) {
    c.find(Locator::Id(id))
        .await
        .unwrap_or_else(|e| panic!("#{id}: {e}"))
        .send_keys(text)
        .await
        .unwrap_or_else(|e| panic!("typing into #{id}: {e}"));
}

const ACCOUNT_LINK_SHOWN: &str = "!document.getElementById('nav-account').hidden";

/// Loads the console afresh and opens the Account page.
async fn open_account(c: &Client, base: &str) {
    c.goto(&format!("{base}/console/#/scans"))
        .await
        .expect("goto");
    until(c, "the account link", ACCOUNT_LINK_SHOWN).await;
    click(c, "#nav-account").await;
}

/// Issue 44's browser scenario for people: an owner signs in with email and password, starts
/// a scan that counts against the Free plan until the allowance runs out, is refused API keys
/// on Free and, once the operator moves the organisation to Pro, creates one that is shown
/// once and then works against the API with curl; signs out, and signs in again with a
/// one-time link from the CLI.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_scans_on_the_plan_and_makes_a_key_in_a_real_browser() {
    use crate::support::{admin, admin_with_stdin};
    let dir = tempfile::tempdir().expect("tempdir");
    admin(dir.path(), &["org", "create", "acme"]);
    let password = "correct horse battery staple";
    let added = admin_with_stdin(
        dir.path(),
        &[
            "person",
            "add",
            "Ada@Example.com",
            "--org",
            "acme",
            "--role",
            "owner",
            "--password-stdin",
        ],
        &format!("{password}\n"),
    );
    assert!(
        added.contains("ada@example.com is an owner of acme"),
        "{added}"
    );
    let media = media_server().await;
    let server = serve_with_env(dir.path(), &[]);
    let base = server.base.clone();
    let wallet_before = admin(dir.path(), &["wallet", "show", "--org", "acme"]);

    let (_driver, c) = browser().await;
    c.goto(&format!("{base}/console")).await.expect("goto");
    until(&c, "the sign-in form", "document.getElementById('email')").await;
    type_into(&c, "email", "ada@example.com").await;
    type_into(&c, "password", password).await;
    click(&c, "#signin-email").await;
    let line = until(
        &c,
        "the plan line",
        "(document.getElementById('plan-line') || {}).textContent",
    )
    .await;
    assert!(
        line.as_str()
            .is_some_and(|l| l.contains("Free plan: 0 of 1")),
        "{line}"
    );
    let stored = c
        .execute(
            "return [sessionStorage.getItem('brainscan.key'), document.cookie]",
            vec![],
        )
        .await
        .expect("js");
    assert_eq!(
        stored,
        json!([null, ""]),
        "no key in storage, and the HttpOnly cookie is out of the page's reach"
    );

    // A scan from the console, counted against the plan.
    type_into(&c, "submit-url", &media.url("/media/tone.wav")).await;
    c.find(Locator::Css("#submit-type option[value='audio']"))
        .await
        .expect("audio option")
        .click()
        .await
        .expect("choose audio");
    click(&c, "#submit-button").await;
    until(
        &c,
        "the scan to complete",
        "document.querySelector('#scan-list .status-complete')",
    )
    .await;
    let used = until(
        &c,
        "the allowance used up",
        "document.getElementById('submit-button').disabled && document.getElementById('plan-line').textContent",
    )
    .await;
    assert!(
        used.as_str()
            .is_some_and(|l| l.contains("all 1 console scan")),
        "{used}"
    );
    shot(&c, "plan-used").await;
    assert_eq!(
        admin(dir.path(), &["wallet", "show", "--org", "acme"]),
        wallet_before,
        "a console scan never touches the wallet"
    );

    // Keys: refused on Free, with the reason on the page.
    until(&c, "the account link", ACCOUNT_LINK_SHOWN).await;
    click(&c, "#nav-account").await;
    let why = until(
        &c,
        "the paid-plan note",
        "(document.getElementById('keys-plan-needed') || {}).textContent",
    )
    .await;
    assert!(
        why.as_str().is_some_and(|w| w.contains("paid plan")),
        "{why}"
    );
    assert!(c.find(Locator::Id("key-create")).await.is_err());

    // The operator moves acme to Pro; the owner creates a key, shown once.
    let moved = admin(dir.path(), &["org", "plan", "acme", "pro"]);
    assert!(
        moved.contains("pro plan: 60 console scans a month"),
        "{moved}"
    );
    open_account(&c, &base).await;
    until(&c, "the key form", "document.getElementById('key-create')").await;
    type_into(&c, "key-name", "ci runner").await;
    click(&c, "#key-create").await;
    let secret = until(
        &c,
        "the new key",
        "(document.getElementById('new-key-secret') || {}).textContent",
    )
    .await;
    let secret = secret.as_str().expect("text").to_owned();
    assert!(secret.starts_with("sk_live_"), "{secret}");
    until(
        &c,
        "the key in the list",
        "[...document.querySelectorAll('#key-list td')].some((td) => td.textContent === 'ci runner')",
    )
    .await;
    shot(&c, "account-keys").await;
    open_account(&c, &base).await;
    until(
        &c,
        "the key list again",
        "document.querySelector('#key-list tr')",
    )
    .await;
    let again = c
        .execute("return document.body.innerText", vec![])
        .await
        .expect("js");
    assert!(
        !again.as_str().unwrap_or_default().contains(&secret),
        "the key is shown once"
    );

    // The new key works against the API, with curl.
    let out = Command::new("curl")
        .args(["-sS", "-H", &format!("Authorization: Bearer {secret}")])
        .arg(format!("{base}/api/v1/wallet"))
        .output()
        .expect("curl (scripts/setup installs it)");
    let wallet: Value = serde_json::from_slice(&out.stdout).expect("curl got JSON");
    assert!(wallet["total_available_usd"].is_number(), "{wallet}");

    // Sign out: the session is gone, and the console asks to sign in.
    click(&c, "#signout").await;
    until(
        &c,
        "the sign-in form",
        "document.getElementById('signin-person')",
    )
    .await;
    let me = c
        .execute_async(
            "const done = arguments[0]; fetch('/console/session/me').then((r) => done(r.status));",
            vec![],
        )
        .await
        .expect("js");
    assert_eq!(me, json!(401));

    // A one-time link from the CLI signs in again, once.
    let link = admin(
        dir.path(),
        &["person", "link", "ada@example.com", "--base-url", &base],
    );
    let link = link.trim().to_owned();
    assert!(
        link.starts_with(&format!("{base}/console/session/link?token=")),
        "{link}"
    );
    // The link opens a page naming the account; only its button signs in.
    c.goto(&link).await.expect("goto link");
    let named = until(
        &c,
        "the link's confirmation page",
        "(document.getElementById('link-email') || {}).textContent",
    )
    .await;
    assert_eq!(named.as_str(), Some("ada@example.com"));
    c.find(Locator::Id("link-confirm"))
        .await
        .expect("the confirm button")
        .click()
        .await
        .expect("click");
    until(&c, "the scans page", "document.getElementById('plan-line')").await;
    c.goto(&link).await.expect("goto link again");
    let note = until(
        &c,
        "the used-link note",
        "(document.getElementById('signin-note') || {}).textContent",
    )
    .await;
    assert!(
        note.as_str()
            .is_some_and(|n| n.contains("used or has expired")),
        "{note}"
    );
    c.close().await.expect("close");
    drop(server);
}

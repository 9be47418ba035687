//! Upgrading a deployment: a database written by an older build must not stop a newer build
//! from starting. Built-in plugins are installed at every start; when the database already holds
//! a built-in's `name@version` with other bytes (another toolchain compiled it), the stored build
//! stays and runs, since a version is immutable and results name its digest.

use std::sync::Arc;

use brainscan::clock::{Clock, SystemClock};
use brainscan::config::PluginConfig;
use brainscan::plugins::Registry;
use brainscan::store::plugins::PluginRow;

use crate::kit::{empty_store, wasm};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_builtin_version_stored_with_other_bytes_keeps_them_and_the_service_starts() {
    let (db, runtime, _dir) = empty_store(PluginConfig::defaults()).await;
    let builtin = runtime
        .load(&wasm("lens_standard.wasm"), "builtin")
        .expect("built-in lens plugin")
        .manifest;
    // What an earlier build left: the same name@version, other bytes. Another toolchain's
    // build differs in its bytes, not in what it declares: here the embedded component with
    // one more custom section (which no runtime reads), so its manifest is the same.
    let earlier_bytes = with_custom_section(&wasm("lens_standard.wasm"), "earlier-toolchain");
    let earlier = runtime
        .load(&earlier_bytes, "builtin")
        .expect("the same component with a custom section")
        .manifest;
    assert_eq!(earlier.id(), builtin.id());
    assert_ne!(earlier.digest, builtin.digest);
    let mut stored = builtin.clone();
    stored.digest = earlier.digest.clone();
    db.insert_plugin(
        &PluginRow {
            name: builtin.name.clone(),
            version: builtin.version.clone(),
            kind: builtin.kind.as_str().to_owned(),
            digest: earlier.digest.clone(),
            manifest: serde_json::to_string(&stored).expect("manifest"),
            conformance: None,
            installed_at: 0,
        },
        &earlier_bytes,
    )
    .await
    .expect("stored by the earlier build");

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let registry = Registry::open(runtime, db.clone(), clock)
        .await
        .expect("a stored built-in version with other bytes must not stop start-up");

    // The slot runs the stored bytes of that version, not the embedded ones.
    let active = registry.snapshot();
    let lens = active.lens_plugin("attention").expect("attention lens");
    assert_eq!(lens.manifest.digest, earlier.digest);
    let listed = registry.list().await.expect("list");
    let rows: Vec<_> = listed
        .iter()
        .filter(|l| l.manifest.name == builtin.name && l.manifest.version == builtin.version)
        .collect();
    assert_eq!(rows.len(), 1, "{listed:?}");
    assert_eq!(rows[0].manifest.digest, earlier.digest);
    // The other built-ins installed as usual.
    assert!(
        listed.iter().any(|l| l.manifest.name == "moments-standard"),
        "{listed:?}"
    );
}

/// `bytes` (a WebAssembly component) with a custom section appended: id 0, the payload size,
/// then the name (LEB128 lengths). Sections may follow one another in any number at the end.
fn with_custom_section(bytes: &[u8], name: &str) -> Vec<u8> {
    fn leb128(mut n: usize, out: &mut Vec<u8>) {
        loop {
            let byte = (n & 0x7f) as u8;
            n >>= 7;
            if n == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    let mut payload = Vec::new();
    leb128(name.len(), &mut payload);
    payload.extend_from_slice(name.as_bytes());
    payload.extend_from_slice(b"built by an earlier toolchain");
    let mut out = bytes.to_vec();
    out.push(0);
    leb128(payload.len(), &mut out);
    out.extend_from_slice(&payload);
    out
}

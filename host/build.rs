//! Builds the WebAssembly plugins in `../plugins` (a workspace of its own, target
//! `wasm32-wasip2`) so that the host can embed the default ones and the tests can find the
//! test-kit components, with no manual step. The nested build shares one target folder per
//! outer target folder, so it is incremental and reused by debug, release and clippy builds.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let plugins = manifest_dir.join("../plugins");
    println!("cargo:rerun-if-changed={}", plugins.display());
    println!(
        "cargo:rerun-if-changed={}",
        manifest_dir.join("../wit").display()
    );

    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<pkg>-<hash>/out: share <target>/wasm-plugins
    // between profiles (debug, release, clippy's check builds) so the plugins build once.
    let target_root = out_dir
        .ancestors()
        .find(|p| p.file_name().is_some_and(|n| n == "build"))
        .and_then(|build| build.parent()?.parent())
        .map_or_else(|| out_dir.join("wasm-plugins"), |t| t.join("wasm-plugins"));

    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let libdir = Command::new(&rustc)
        .args(["--print", "target-libdir", "--target", "wasm32-wasip2"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
    if !libdir.is_some_and(|d| d.join("self-contained").exists()) {
        panic!(
            "\n\nThe Rust target wasm32-wasip2 is not installed; the analysis plugins need it.\n\
             Install it with:  rustup target add wasm32-wasip2\n\
             (scripts/setup, run by the README's commands, does this for you.)\n\n"
        );
    }

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "build",
        "--release",
        "--locked",
        "--target",
        "wasm32-wasip2",
        "--manifest-path",
    ])
    .arg(plugins.join("Cargo.toml"))
    .arg("--target-dir")
    .arg(&target_root);
    // The outer build's settings are for the host, not for wasm.
    for var in [
        "CARGO_TARGET_DIR",
        "CARGO_BUILD_TARGET",
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_MAKEFLAGS",
    ] {
        cmd.env_remove(var);
    }
    let status = cmd.status().expect("could not run cargo for the plugins");
    if !status.success() {
        panic!(
            "building the WebAssembly plugins in {} failed (see above)",
            plugins.display()
        );
    }
    let wasm_dir = target_root.join("wasm32-wasip2/release");
    println!(
        "cargo:rustc-env=BRAINSCAN_PLUGIN_WASM_DIR={}",
        wasm_dir.display()
    );
    // The built-ins' versions, for tests and tools that name `lens-standard@x.y.z`: one place
    // to change when a built-in gets a new version (its Cargo.toml).
    for (krate, var) in [
        ("lens-standard", "BRAINSCAN_LENS_STANDARD_VERSION"),
        ("moments-standard", "BRAINSCAN_MOMENTS_STANDARD_VERSION"),
        (
            "manipulation-standard",
            "BRAINSCAN_MANIPULATION_STANDARD_VERSION",
        ),
    ] {
        let manifest = plugins.join(krate).join("Cargo.toml");
        let text = std::fs::read_to_string(&manifest)
            .unwrap_or_else(|e| panic!("{}: {e}", manifest.display()));
        let version = package_version(&text)
            .unwrap_or_else(|| panic!("{}: no [package] version", manifest.display()));
        println!("cargo:rustc-env={var}={version}");
    }
}

/// The `version = "…"` of a manifest's `[package]` table.
fn package_version(manifest: &str) -> Option<&str> {
    let mut in_package = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package
            && let Some(rest) = line.strip_prefix("version")
            && let Some(value) = rest.trim_start().strip_prefix('=')
        {
            return Some(value.trim().trim_matches('"'));
        }
    }
    None
}

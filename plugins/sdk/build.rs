//! A `no_std` component still needs `memcpy`, `memcmp` and friends. On `wasm32-wasip2` they
//! come from wasi-libc (shipped with the Rust target, self-contained), whose string functions
//! import nothing; linking it statically keeps the component's imports to the host interface.
fn main() {
    if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("wasm32") {
        let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
        let target = std::env::var("TARGET").unwrap_or_else(|_| "wasm32-wasip2".into());
        let out = std::process::Command::new(rustc)
            .args(["--print", "sysroot"])
            .output()
            .expect("rustc --print sysroot");
        let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        println!(
            "cargo:rustc-link-search=native={sysroot}/lib/rustlib/{target}/lib/self-contained"
        );
        println!("cargo:rustc-link-lib=static=c");
    }
}

//! The default plugins, built from `plugins/` for `wasm32-wasip2` by the build script and
//! embedded in the binary, so a fresh install scores scans with no plugin set-up. They are
//! installed into the registry at start (as `source = builtin`) and activated in empty slots.

/// Where the build script put every component of the `plugins/` workspace, the test kit's
/// included. Tests and `plugin test` examples read from here; the service never does.
pub const WASM_DIR: &str = env!("BRAINSCAN_PLUGIN_WASM_DIR");

macro_rules! component {
    ($file:literal) => {
        (
            $file,
            include_bytes!(concat!(env!("BRAINSCAN_PLUGIN_WASM_DIR"), "/", $file)).as_slice(),
        )
    };
}

/// `(file name, bytes)` of each default plugin: one per slot kind.
pub const DEFAULTS: &[(&str, &[u8])] = &[
    component!("lens_standard.wasm"),
    component!("moments_standard.wasm"),
    component!("manipulation_standard.wasm"),
];

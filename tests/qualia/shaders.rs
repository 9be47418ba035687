//! Every WGSL file parses and validates with naga, without a GPU.

use brainscan::inference::gpu::SHADERS;

#[test]
fn every_wgsl_file_parses_and_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shaders");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("shaders/")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".wgsl"))
        .collect();
    on_disk.sort();
    // The qualia kernels, the cortex video's frame kernel, the face search and Whisper's kernels.
    let mut built_in: Vec<String> = SHADERS
        .iter()
        .chain([
            &brainscan::render::gpu_frames::SHADER,
            &brainscan_faces::device::SHADER,
        ])
        .chain(brainscan_whisper_gpu::SHADERS.iter())
        .map(|(n, _)| (*n).to_owned())
        .collect();
    built_in.sort();
    assert_eq!(
        on_disk, built_in,
        "every shader on disk is compiled into the binary"
    );
    for name in on_disk {
        let src = std::fs::read_to_string(dir.join(&name)).expect("read shader");
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
        let mut validator = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::default(),
        );
        validator
            .validate(&module)
            .unwrap_or_else(|e| panic!("{name}: {}", e.emit_to_string(&src)));
        assert!(
            module
                .entry_points
                .iter()
                .all(|e| e.stage == naga::ShaderStage::Compute),
            "{name}: only compute entry points"
        );
    }
}

/// Whisper's f16 variants (the weights declared `array<f16>`), as built where the device has
/// `shader-f16`, validate with that capability.
#[test]
fn whispers_f16_variants_validate() {
    for (name, src) in brainscan_whisper_gpu::f16_sources() {
        let module = naga::front::wgsl::parse_str(&src)
            .unwrap_or_else(|e| panic!("{name} (f16): {}", e.emit_to_string(&src)));
        naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::SHADER_FLOAT16,
        )
        .validate(&module)
        .unwrap_or_else(|e| panic!("{name} (f16): {}", e.emit_to_string(&src)));
        assert!(src.contains("array<f16>"), "{name}: no f16 array");
    }
}

#[test]
fn a_broken_shader_is_rejected() {
    // The validation above can fail: a type error is caught.
    let src = "@compute @workgroup_size(1) fn main() { let x: f32 = 1u; }";
    let module = naga::front::wgsl::parse_str(src);
    assert!(module.is_err());
}

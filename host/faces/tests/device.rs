//! The cascade on a wgpu device (lavapipe in CI) against the CPU detector: the same faces,
//! with the same neighbour counts, on every frame of real clips.
//!
//! A parity test, not a validity test: the device path is meant to compute exactly what the CPU
//! path does (same pyramid, same normalisers, same f32 arithmetic in the same order; see
//! `src/device.rs`), so the bound is equality. Two option sets: OpenCV's defaults, which search
//! every scale from the 24-pixel window up (both the 2-pixel and the 1-pixel step, and many raw
//! hits), and the scan's (faces at least a fifth of the height).

mod support;

use brainscan_faces::{DeviceCascade, DeviceError, Options, detect};
use support::{cascade, frames};

fn device() -> (wgpu::Device, wgpu::Queue) {
    let instance = wgpu::Instance::default();
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("no wgpu adapter: install mesa-vulkan-drivers (lavapipe)");
    pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))
        .expect("a device")
}

#[test]
fn the_device_finds_the_cpus_faces_on_real_frames() {
    let c = cascade();
    let (device, queue) = device();
    let on_device = DeviceCascade::new(device, queue, &c).expect("uploads the cascade");
    let scan = Options {
        min_size: 36,
        ..Options::default()
    };
    let mut compared = 0;
    let mut with_faces = 0;
    // OpenCV's defaults on the first 14 talking-head frames (on lavapipe the smallest scales
    // are most of the time), the scan's settings on every frame of both clips.
    let head = frames("carphone_pristine.mp4");
    let street = frames("bikes.mp4");
    let cases = [
        ("carphone_pristine.mp4", &head[..14], Options::default()),
        ("carphone_pristine.mp4", &head[..], scan),
        ("bikes.mp4", &street[..], scan),
    ];
    for (clip, frames, opts) in cases {
        // Batches of 7 frames, so a batch holds several pyramids and the last is shorter.
        for (b, batch) in frames.chunks(7).enumerate() {
            let refs: Vec<&[u8]> = batch.iter().map(Vec::as_slice).collect();
            let found = on_device
                .detect_many(&refs, 320, 180, &opts)
                .expect("the device decides");
            assert_eq!(found.len(), batch.len());
            for (k, (frame, faces)) in batch.iter().zip(&found).enumerate() {
                let cpu = detect(&c, frame, 320, 180, &opts);
                assert_eq!(faces, &cpu, "{clip} frame {} with {opts:?}", b * 7 + k);
                compared += 1;
                with_faces += usize::from(!cpu.is_empty());
            }
        }
    }
    eprintln!("{compared} frames compared, {with_faces} with a face");
    // Not vacuous: the talking head has a face in most of its frames under both settings.
    assert!(with_faces >= 30, "only {with_faces} frames with a face");
}

#[test]
fn a_frame_of_the_wrong_size_is_refused_and_an_empty_batch_finds_nothing() {
    let c = cascade();
    let (device, queue) = device();
    let on_device = DeviceCascade::new(device, queue, &c).expect("uploads the cascade");
    let err = on_device
        .detect_many(&[&[0u8; 100]], 320, 180, &Options::default())
        .expect_err("refused");
    assert!(matches!(err, DeviceError::Input(_)), "{err}");
    assert!(
        on_device
            .detect_many(&[], 320, 180, &Options::default())
            .expect("nothing to do")
            .is_empty()
    );
    // An image smaller than the window has no level: no face, as on the CPU.
    let tiny = [128u8; 20 * 20];
    let found = on_device
        .detect_many(&[&tiny], 20, 20, &Options::default())
        .expect("decides");
    assert_eq!(found, vec![Vec::new()]);
}

//! `cargo bench -p brainscan-faces`: the face search on the device against the CPU detector
//! (the baseline), measured in the same run on the same frames with the scan's settings
//! (faces at least a fifth of the 180-pixel height; `model.json` `sampling.faces`).
//!
//! Frames: the talking-head and street clips of the test media at 320 x 180 (the scan's
//! detail frames), fetched by `scripts/fetch-test-media`; the cascade from
//! `scripts/fetch-models`. Prints the adapter, the CPU time (one thread, then every core as the
//! scan spreads frames), the device time split into what stays on the CPU (the pyramid and
//! the normalisers) and the whole call, and the ratios. `BENCH_BATCH` sets the frames per call
//! (default 4: the sampled frames of one two-second batch of the scan).

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::Instant;

use brainscan_faces::{DeviceCascade, Options, detect};

fn main() {
    let c = support::cascade();
    let opts = Options {
        min_size: 36,
        ..Options::default()
    };
    let mut frames = support::frames("carphone_pristine.mp4");
    frames.extend(support::frames("bikes.mp4"));
    let batch: usize = std::env::var("BENCH_BATCH")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(4)
        .max(1);
    let instance = wgpu::Instance::default();
    let adapter =
        pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions::default()))
            .expect("no wgpu adapter: install mesa-vulkan-drivers (lavapipe)");
    let info = adapter.get_info();
    println!(
        "adapter: {} ({:?}, {:?}); {} frames of 320 x 180, {batch} per device call",
        info.name,
        info.device_type,
        info.backend,
        frames.len()
    );
    let (device, queue) =
        pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor::default()))
            .expect("a device");
    let on_device = DeviceCascade::new(device, queue, &c).expect("uploads the cascade");
    // Warm both paths (the driver compiles the kernel on its first dispatch).
    let refs: Vec<&[u8]> = frames.iter().map(Vec::as_slice).collect();
    on_device
        .detect_many(&refs[..batch.min(refs.len())], 320, 180, &opts)
        .expect("decides");
    let _ = detect(&c, &frames[0], 320, 180, &opts);

    let runs = 3;
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut cpu_one = Vec::new();
    let mut cpu_all = Vec::new();
    let mut dev = Vec::new();
    let mut host = Vec::new();
    let mut faces = (0, 0);
    for _ in 0..runs {
        let t = Instant::now();
        let found: usize = frames
            .iter()
            .map(|f| usize::from(!detect(&c, f, 320, 180, &opts).is_empty()))
            .sum();
        cpu_one.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        std::thread::scope(|s| {
            let cores = std::thread::available_parallelism().map_or(1, usize::from);
            let chunk = frames.len().div_ceil(cores);
            let c = &c;
            for part in frames.chunks(chunk) {
                s.spawn(move || {
                    for f in part {
                        std::hint::black_box(detect(c, f, 320, 180, &opts));
                    }
                });
            }
        });
        cpu_all.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        let mut on = 0;
        let mut on_host = 0.0;
        for part in refs.chunks(batch) {
            let (found, times) = on_device
                .detect_timed(part, 320, 180, &opts)
                .expect("decides");
            on += found.iter().filter(|f| !f.is_empty()).count();
            on_host += times.host.as_secs_f64();
        }
        dev.push(t.elapsed().as_secs_f64());
        host.push(on_host);
        faces = (found, on);
    }
    let (one, all, d) = (median(cpu_one), median(cpu_all), median(dev));
    let n = frames.len() as f64;
    println!(
        "frames with a face: CPU {}, device {} (of {})",
        faces.0,
        faces.1,
        frames.len()
    );
    println!(
        "CPU, one thread (baseline): {:.2} ms a frame ({one:.3} s)",
        one / n * 1e3
    );
    println!(
        "CPU, every core:            {:.2} ms a frame ({all:.3} s), {:.2} of the baseline",
        all / n * 1e3,
        all / one
    );
    println!(
        "device, whole call:         {:.2} ms a frame ({d:.3} s), {:.2} of the baseline",
        d / n * 1e3,
        d / one
    );
    let h = median(host);
    println!(
        "  of which on the CPU (pyramid, normalisers, grouping): {:.2} ms a frame ({h:.3} s), {:.2} of the baseline",
        h / n * 1e3,
        h / one
    );
}

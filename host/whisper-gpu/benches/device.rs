//! What Whisper costs on the wgpu device against the CPU, on the real shapes of tiny.en and
//! base with stand-in weights (`synthetic::weights`: the cost does not depend on the values,
//! and the bench then needs no model files, so it can be carried to a lent GPU machine).
//!
//! Per shape, in one run: the encoder on a full 30 s window (3000 mel frames) by candle on the
//! CPU (the host's CPU path; the baseline) and on the device, with the cross-attention
//! projection; then decoding steps on the device, one candidate and the fallback's five. Every
//! device figure includes waiting for the device and, for a step, reading the logits back.
//! Before the steps, the host's share of a step (recording and submitting it) both ways
//! ([`Recording`]), with the logits compared. Medians of `BENCH_RUNS` (default 3). `WGPU_BACKEND` and `WGPU_ADAPTER_NAME` pick the
//! adapter; `BENCH_SHAPES=tiny` measures tiny.en alone.
//!
//! The CPU decoding baseline is the host's key/value-cached decoder, which this crate does not
//! hold: `cargo bench -p brainscan --bench speech` times whole transcriptions both ways.

use std::time::Instant;

use brainscan_whisper_gpu::{DeviceWhisper, Dims, Recording, synthetic};
use candle_core::{Device, Tensor};
use candle_transformers::models::whisper as m;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn open() -> (wgpu::Device, wgpu::Queue, wgpu::AdapterInfo) {
    let instance =
        wgpu::Instance::new(wgpu::InstanceDescriptor::new_without_display_handle().with_env());
    let adapter = match std::env::var("WGPU_ADAPTER_NAME") {
        Ok(name) if !name.is_empty() => {
            pollster::block_on(wgpu::util::initialize_adapter_from_env(&instance, None))
                .expect("the adapter named by WGPU_ADAPTER_NAME")
        }
        _ => pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
            power_preference: wgpu::PowerPreference::HighPerformance,
            ..Default::default()
        }))
        .expect("a wgpu adapter (install mesa-vulkan-drivers for lavapipe)"),
    };
    let info = adapter.get_info();
    println!(
        "adapter features: shader-f16 {}",
        adapter.features().contains(wgpu::Features::SHADER_F16)
    );
    let limits = adapter.limits();
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("whisper bench"),
        // As the service's device: f16 storage where the adapter has it.
        required_features: adapter.features() & wgpu::Features::SHADER_F16,
        required_limits: limits,
        ..Default::default()
    }))
    .expect("device");
    (device, queue, info)
}

fn main() {
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3)
        .max(1);
    let (device, queue, info) = open();
    println!(
        "adapter: {} / {:?} / {:?}; cpu threads: {}",
        info.name,
        info.backend,
        info.device_type,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    let shapes = [("tiny.en", 384, 6, 4, 51_864), ("base", 512, 8, 6, 51_865)];
    let only_tiny = std::env::var("BENCH_SHAPES").is_ok_and(|v| v == "tiny");
    for (name, d, heads, layers, vocab) in shapes {
        if only_tiny && name != "tiny.en" {
            continue;
        }
        let dims = Dims {
            n_mels: 80,
            n_state: d,
            audio_ctx: 1500,
            audio_heads: heads,
            audio_layers: layers,
            text_ctx: 448,
            text_heads: heads,
            text_layers: layers,
            vocab,
        };
        let weights = synthetic::weights(&dims, 7, 0.1);
        let t = Instant::now();
        let lookup = |n: &str| {
            weights
                .get(n)
                .cloned()
                .ok_or_else(|| format!("{n} missing"))
        };
        let mut whisper = DeviceWhisper::new(device.clone(), queue.clone(), dims, &lookup)
            .expect("weights on the device");
        let upload = t.elapsed().as_secs_f64();
        println!("{name}: weights held as {:?}", whisper.precision());
        let mel: Vec<f32> = (0..80 * 3000)
            .map(|i| ((i % 97) as f32 - 48.0) / 60.0)
            .collect();

        // The CPU baseline: candle's encoder, as the host runs it.
        let tensors = weights
            .iter()
            .map(|(k, (shape, v))| {
                (
                    k.clone(),
                    Tensor::from_vec(v.clone(), shape.as_slice(), &Device::Cpu).expect("tensor"),
                )
            })
            .collect();
        let vb = candle_nn::VarBuilder::from_tensors(tensors, m::DTYPE, &Device::Cpu);
        let config = m::Config {
            num_mel_bins: 80,
            max_source_positions: 1500,
            d_model: d,
            encoder_attention_heads: heads,
            encoder_layers: layers,
            vocab_size: vocab,
            max_target_positions: 448,
            decoder_attention_heads: heads,
            decoder_layers: layers,
            suppress_tokens: Vec::new(),
        };
        let model = m::model::Whisper::load(&vb, config).expect("candle whisper");
        let input = Tensor::from_vec(mel.clone(), (1, 80, 3000), &Device::Cpu).expect("mel");
        let cpu_encode = median(
            (0..runs)
                .map(|_| {
                    let mut enc = model.encoder.clone();
                    let t = Instant::now();
                    let out = enc.forward(&input, true).expect("cpu encoder");
                    let _ = out.dims();
                    t.elapsed().as_secs_f64()
                })
                .collect(),
        );
        // Compile and warm the kernels once, as the service does at start-up.
        let warm = whisper.encode(&mel, 3000).expect("encode");
        let _ = whisper.attend(&warm).expect("attend");
        let device_encode = median(
            (0..runs)
                .map(|_| {
                    let t = Instant::now();
                    let e = whisper.encode(&mel, 3000).expect("encode");
                    let _ = whisper.attend(&e).expect("attend");
                    t.elapsed().as_secs_f64()
                })
                .collect(),
        );
        let encoded = whisper.encode(&mel, 3000).expect("encode");
        let attended = whisper.attend(&encoded).expect("attend");
        // The host's share of a decoding step: recording and submitting its 17 dispatches a
        // layer, both ways, in this run (BENCH_STEPS steps of one candidate each).
        let host_steps: usize = std::env::var("BENCH_STEPS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20)
            .max(1);
        let mut host = Vec::new();
        for recording in [Recording::PerDispatch, Recording::OnePass] {
            whisper.set_recording(recording);
            let runs_of = |whisper: &DeviceWhisper| {
                let mut pass = whisper.pass(&attended, 1).expect("pass");
                whisper
                    .feed(&mut pass, &[50_257, 50_358, 50_362], true)
                    .expect("prompt");
                let (before, _) = whisper.host_recording();
                let t = Instant::now();
                let mut logits = Vec::new();
                for i in 0..host_steps {
                    let out = whisper
                        .feed(&mut pass, &[(400 + i) as u32], false)
                        .expect("step");
                    logits.push(out.last);
                }
                let (after, _) = whisper.host_recording();
                (
                    (after - before).as_secs_f64() / host_steps as f64,
                    t.elapsed().as_secs_f64() / host_steps as f64,
                    logits,
                )
            };
            let measured: Vec<_> = (0..runs).map(|_| runs_of(&whisper)).collect();
            let logits = measured[0].2.clone();
            host.push((
                median(measured.iter().map(|m| m.0).collect()),
                median(measured.iter().map(|m| m.1).collect()),
                logits,
            ));
        }
        whisper.set_recording(Recording::OnePass);
        println!(
            "{name}: host recording and submission per decoding step (1 candidate, {host_steps} steps): per dispatch {:.3} ms (step {:.2} ms), one pass {:.3} ms (step {:.2} ms): ratio {:.3}; same logits: {}",
            host[0].0 * 1e3,
            host[0].1 * 1e3,
            host[1].0 * 1e3,
            host[1].1 * 1e3,
            host[1].0 / host[0].0,
            host[0].2 == host[1].2
        );
        let mut step_ms = Vec::new();
        for candidates in [1usize, 5] {
            let steps = 100usize;
            let per_step = median(
                (0..runs)
                    .map(|_| {
                        let mut pass = whisper.pass(&attended, candidates).expect("pass");
                        let prompt: Vec<u32> = (0..candidates)
                            .flat_map(|_| [50_257u32, 50_358, 50_362])
                            .collect();
                        whisper.feed(&mut pass, &prompt, true).expect("prompt");
                        let t = Instant::now();
                        for i in 0..steps {
                            let tokens = vec![(400 + i) as u32; candidates];
                            let out = whisper.feed(&mut pass, &tokens, false).expect("step");
                            assert_eq!(out.last.len(), candidates);
                        }
                        t.elapsed().as_secs_f64() / steps as f64
                    })
                    .collect(),
            );
            step_ms.push(per_step * 1e3);
        }
        println!(
            "{name}: weights to the device {upload:.2} s | encoder, 30 s window: cpu {cpu_encode:.3} s, device {device_encode:.4} s (encoder + cross projections), ratio {:.3} | decoding step (logits read back): 1 candidate {:.2} ms, 5 candidates {:.2} ms",
            device_encode / cpu_encode,
            step_ms[0],
            step_ms[1]
        );
    }
}

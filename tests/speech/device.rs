//! Whisper on the wgpu device (`host/whisper-gpu`) against the CPU path, on the real tiny.en
//! model and real speech. CI runs these on lavapipe, which runs the same WGSL as a GPU.
//!
//! The bound: the two paths add the same products in different orders (the device's tiles
//! against candle's matrix kernels), in f32, through four encoder and four decoder layers. The
//! logits are of order 10; a wrong stride, mask, cache slot or head moves them by whole units
//! and changes the most likely token. So every position must pick the same token, and no
//! logit may move by more than 0.001 (measured on lavapipe: 7e-5; the encoder output moves by
//! 9e-5 of values up to 12).
//!
//! The weights are held in f16 where the device has `shader-f16` (lavapipe and NVIDIA's
//! drivers do), as the service holds them. The checkpoints are CTranslate2's fp16 conversions,
//! so f16 holds every weight exactly: the f32 path gives the same figures to the last digit
//! (measured), and the bound above applies unchanged. (f16 rounding of other weights is
//! checked in the crate's unit test, against a reference on the rounded weights.)

use brainscan::speech::whisper::{DeviceHandle, WhisperModel};

use crate::support;
use crate::transcription::{JFK_TOKENS, jfk_and_whisper};

fn on_device(dir: &std::path::Path) -> WhisperModel {
    let gpu = brainscan::inference::gpu::GpuContext::new().expect("a wgpu adapter (lavapipe)");
    let on = DeviceHandle {
        device: gpu.device(),
        queue: gpu.queue(),
        adapter: &gpu.adapter_info,
        precision: None,
    };
    WhisperModel::load_on(dir, Some(on)).expect("whisper on the device")
}

#[test]
fn the_device_encoder_and_decoder_match_the_cpu() {
    let (pcm, cpu) = jfk_and_whisper();
    let model = on_device(&support::models().whisper);
    assert!(
        model
            .device_name()
            .is_some_and(|n| n.ends_with("(f16 weights)")),
        "lavapipe has shader-f16: {:?}",
        model.device_name()
    );
    let parity = model
        .device_disagreement(&cpu, &pcm, &JFK_TOKENS)
        .expect("both paths run");
    eprintln!("{parity:?}");
    assert!(parity.encoder_max_abs > 1.0, "{parity:?}");
    assert!(
        parity.encoder_max_diff < 1e-4 * parity.encoder_max_abs,
        "{parity:?}"
    );
    assert!(parity.logits_max_abs > 5.0, "{parity:?}");
    assert!(parity.logits_max_diff < 1e-3, "{parity:?}");
    assert_eq!(parity.positions, JFK_TOKENS.len() + 1);
    assert_eq!(parity.same_argmax, parity.positions, "{parity:?}");
}

/// The whole decoding on the device (every window, every temperature of the fallback, the
/// candidates as one batch in their slots) gives the CPU's transcript.
#[test]
fn jfk_transcribed_on_the_device_reads_as_on_the_cpu() {
    let (pcm, cpu) = jfk_and_whisper();
    // As the service loads it: f16 weights where the device has shader-f16 (lavapipe does).
    let device = on_device(&support::models().whisper);
    assert!(device.device_name().is_some());
    let every_second = |t: f64| Some(t);
    let text = |m: &WhisperModel| {
        m.transcribe(&pcm, &every_second)
            .expect("transcribes")
            .iter()
            .map(|s| s.text.trim().to_owned())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (a, b) = (text(&cpu), text(&device));
    eprintln!("cpu: {a}\ndevice: {b}");
    assert!(a.contains("ask not what your country"), "{a}");
    assert_eq!(a, b);

    let brainscan::speech::whisper::FallbackComparison {
        one_by_one: alone,
        batched,
        ..
    } = device
        .compare_fallback_batching(&pcm)
        .expect("decodes on the device");
    for (i, ((ta, la), (tb, lb))) in alone.iter().zip(&batched).enumerate() {
        assert_eq!(ta, tb, "candidate {i}");
        assert!((la - lb).abs() < 1e-3, "candidate {i}: {la} vs {lb}");
    }
}

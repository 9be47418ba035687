//! Each WGSL kernel against the plain-Rust reference on random and real inputs: max error
//! ≤ 1e-4, absolute for values up to 1 and relative above.

use rand::{Rng, SeedableRng};

use brainscan::inference::features::{self, FRAME_FEATURES, HOP, HOP_FEATURES, Rect, WINDOW};
use brainscan::inference::run::{decode_frames, decode_samples};
use brainscan::inference::{Presence, TimeBase, motion, reference, v2};
use brainscan::media::decode::{AudioSamples, DecodeSpec, VideoFrames};

use crate::support::{ffmpeg, gpu, qualia_unheard, qualia_v1, real_media, speech};

const TOL: f64 = 1e-4;

fn assert_close(what: &str, gpu: &[f32], cpu: &[f32]) {
    assert_eq!(gpu.len(), cpu.len(), "{what}: lengths");
    let mut worst = (0.0f64, 0usize);
    for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
        assert!(g.is_finite(), "{what}[{i}] is {g}");
        let err = (f64::from(*g) - f64::from(*c)).abs() / f64::from(c.abs()).max(1.0);
        if err > worst.0 {
            worst = (err, i);
        }
    }
    assert!(
        worst.0 <= TOL,
        "{what}: error {:.3e} at {} (gpu {}, cpu {})",
        worst.0,
        worst.1,
        gpu[worst.1],
        cpu[worst.1]
    );
}

fn random_frames(rng: &mut impl Rng, n: usize, w: usize, h: usize) -> Vec<u8> {
    (0..n * w * h * 3).map(|_| rng.random()).collect()
}

#[test]
fn visual_kernel_matches_reference_on_random_and_flat_frames() {
    let (w, h) = (160, 90);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let mut frames = random_frames(&mut rng, 5, w, h);
    // Flat black, flat white and a hard checkerboard exercise the edge cases of the binning.
    let len = w * h * 3;
    frames.extend(std::iter::repeat_n(0u8, len));
    frames.extend(std::iter::repeat_n(255u8, len));
    frames.extend((0..w * h).flat_map(|i| {
        let v = if ((i % w) / 8 + (i / w) / 8) % 2 == 0 {
            255
        } else {
            0
        };
        [v, v / 2, 255 - v]
    }));
    let full = Rect::full(w as u32, h as u32);
    let (g, _) = gpu()
        .visual(&frames, w as u32, h as u32, full)
        .expect("visual kernel");
    let c = reference::visual(&frames, w, h, full);
    assert_eq!(g.len(), 7 * FRAME_FEATURES);
    assert_close("visual(random)", &g, &c);
    // Active pictures that do not divide into the grid evenly: a pillarbox 51 wide, and an
    // off-centre letterbox.
    for rect in [
        Rect {
            x0: 54,
            y0: 0,
            x1: 105,
            y1: 90,
        },
        Rect {
            x0: 3,
            y0: 11,
            x1: 157,
            y1: 80,
        },
    ] {
        let (g, _) = gpu()
            .visual(&frames, w as u32, h as u32, rect)
            .expect("visual kernel");
        let c = reference::visual(&frames, w, h, rect);
        assert_close(&format!("visual(random, {rect:?})"), &g, &c);
    }
    assert!(
        gpu()
            .visual(
                &frames,
                w as u32,
                h as u32,
                Rect {
                    x0: 0,
                    y0: 0,
                    x1: 20,
                    y1: 90
                }
            )
            .is_err(),
        "a picture narrower than the grid is refused"
    );
    // Black after checkerboard-free random: the cut score of identical frames is 0 and the
    // motion of a repeated frame is 0.
    let (g2, _) = gpu()
        .visual(
            &[&frames[..len], &frames[..len]].concat(),
            w as u32,
            h as u32,
            full,
        )
        .expect("visual kernel");
    assert_eq!(g2[4], 0.0, "motion of a repeated frame");
    assert_eq!(g2[6], 0.0, "cut score of a repeated frame");
}

#[tokio::test]
async fn visual_kernel_matches_reference_on_real_frames() {
    let path = real_media().join("trailer_bbb.mp4");
    let spec = DecodeSpec::default();
    let mut v = VideoFrames::open(&path, spec).expect("open");
    let len = v.frame_len();
    let mut frames = vec![0u8; 12 * len];
    for k in 0..12 {
        assert!(
            v.next_frame(&mut frames[k * len..(k + 1) * len])
                .await
                .expect("frame")
        );
    }
    drop(v);
    let full = Rect::full(spec.width, spec.height);
    let (g, _) = gpu()
        .visual(&frames, spec.width, spec.height, full)
        .expect("visual kernel");
    let c = reference::visual(&frames, spec.width as usize, spec.height as usize, full);
    assert_close("visual(trailer)", &g, &c);
    assert!(
        c.chunks(FRAME_FEATURES).any(|r| r[4] > 0.0),
        "real frames move"
    );
}

fn check_audio(what: &str, samples: &[f32], hops: usize, lead_is_self: bool) {
    let (power, feats, _, _) = gpu()
        .audio(samples, hops, lead_is_self, true)
        .expect("audio kernels");
    let (rp, rf) = reference::audio(
        samples,
        hops,
        lead_is_self,
        &features::hann(),
        &features::mel_filters(),
    );
    // Power is compared relative to the frame's peak: an FFT in f32 and a DFT in f64 differ
    // by rounding near the noise floor, far below anything the features can see.
    for (j, (g, c)) in power
        .chunks(features::BINS)
        .zip(rp.chunks(features::BINS))
        .enumerate()
    {
        let peak = c.iter().fold(1.0f32, |m, v| m.max(*v));
        let scaled = |v: &[f32]| v.iter().map(|x| x / peak).collect::<Vec<f32>>();
        assert_close(&format!("{what} power hop {j}"), &scaled(g), &scaled(c));
    }
    assert_eq!(feats.len(), (hops - 1) * HOP_FEATURES);
    assert_close(&format!("{what} hop features"), &feats, &rf);
}

#[test]
fn audio_kernels_match_reference_on_noise_tones_and_silence() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let hops = 24;
    let n = hops * HOP + WINDOW;
    let noise: Vec<f32> = (0..n).map(|_| rng.random_range(-0.5..0.5)).collect();
    check_audio("noise", &noise, hops, true);
    let tone: Vec<f32> = (0..n)
        .map(|i| 0.3 * (2.0 * std::f32::consts::PI * 1000.0 * i as f32 / 16_000.0).sin())
        .collect();
    check_audio("tone", &tone, hops, false);
    // A burst after silence, ending before the buffer does (zero padding past the end).
    let mut burst = vec![0f32; n - 700];
    for (i, s) in burst.iter_mut().enumerate().skip(2000) {
        *s = if i % 37 < 18 { 0.8 } else { -0.8 };
    }
    check_audio("burst", &burst, hops, true);
    check_audio("silence", &vec![0.0; n], hops, true);
}

#[tokio::test]
async fn audio_kernels_match_reference_on_real_speech() {
    let dir = tempfile::tempdir().expect("tempdir");
    let espeak = speech(
        dir.path(),
        "s.wav",
        "The quick brown fox jumps over the lazy dog.",
    );
    for path in [real_media().join("jfk.wav"), espeak] {
        let mut a = AudioSamples::open(&path, DecodeSpec::default()).expect("open");
        let mut samples = vec![0f32; 16_000];
        let got = a.next_block(&mut samples).await.expect("samples");
        samples.truncate(got);
        drop(a);
        let hops = (got - WINDOW) / HOP;
        check_audio(&path.display().to_string(), &samples, hops.min(60), true);
    }
}

#[test]
fn pooling_kernel_matches_reference_including_ragged_ends() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let dft = features::dft_table();
    // (frames, hops, seconds): partial last second, video shorter than audio, audio shorter
    // than video, no video, no audio.
    for (nf, nh, secs) in [
        (45, 450, 5),
        (20, 700, 7),
        (70, 130, 7),
        (0, 300, 3),
        (30, 0, 3),
    ] {
        let ff: Vec<f32> = (0..nf * FRAME_FEATURES)
            .map(|_| rng.random_range(0.0..1.0))
            .collect();
        let mut hf: Vec<f32> = (0..nh * HOP_FEATURES)
            .map(|_| rng.random_range(0.0..1.0))
            .collect();
        for (i, v) in hf.iter_mut().enumerate() {
            match i % HOP_FEATURES {
                0 => *v = *v * 80.0 - 90.0,
                2 => *v *= 0.3,
                k if k >= 7 => *v = *v * 20.0 - 15.0,
                _ => {}
            }
        }
        for offset in [0, 3] {
            let (g, _) = gpu()
                .pool(&ff, &hf, secs, 10, 0.12, offset)
                .expect("pool kernel");
            let c = reference::pool(&ff, &hf, secs, 10, 0.12, offset as usize, &dft);
            assert_close(
                &format!("pool({nf} frames, {nh} hops, offset {offset})"),
                &g,
                &c,
            );
        }
    }
}

#[test]
fn response_kernels_match_reference() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(4);
    for q in [qualia_unheard(), qualia_v1()] {
        let f = q.model.features.len();
        for (secs, video, audio, speech) in [
            (1, true, true, true),
            (9, true, false, false),
            (40, false, true, true),
        ] {
            let presence = Presence {
                video,
                audio,
                speech,
            };
            let raw: Vec<f32> = (0..secs * f)
                .map(|i| q.model.mean[i % f] + q.model.std[i % f] * rng.random_range(-3.0..3.0))
                .collect();
            for time_base in [TimeBase::Stimulus, TimeBase::Bold] {
                let resp = q
                    .gpu
                    .response(&raw, &q.model, presence, time_base)
                    .expect("response kernels");
                let (z, r, y) = (resp.z, resp.r, resp.y);
                let (cz, cr, cy) = reference::response(&raw, &q.model, presence, time_base);
                assert_close("z", &z, &cz);
                assert_close("r", &r, &cr);
                assert_close("y", &y, &cy);
            }
        }
    }
}

/// `frames` in the visual kernel's layout (the first frame twice, then the rest) re-laid for
/// the motion kernel: `lead` frames before the first (the first, repeated), then the rest.
fn with_lead(frames: &[u8], len: usize, lead: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(frames.len() + lead * len);
    for _ in 0..lead {
        out.extend_from_slice(&frames[..len]);
    }
    out.extend_from_slice(&frames[len..]);
    out
}

#[tokio::test]
async fn motion_energy_matches_reference_on_a_real_clip_and_a_portrait_picture() {
    // The Gabor bank on the GPU against the f64 CPU reference: every channel and the feature,
    // on 4 s of the trailer over the whole frame and over a pillarboxed 9:16 rectangle (a
    // narrower grid and fewer filters).
    let spec = DecodeSpec::default();
    let len = (spec.width * spec.height * 3) as usize;
    let frames = decode_frames(&real_media().join("trailer_bbb.mp4"), spec, 40)
        .await
        .expect("frames");
    let portrait = Rect {
        x0: 55,
        y0: 0,
        x1: 106,
        y1: 90,
    };
    for rect in [Rect::full(spec.width, spec.height), portrait] {
        let bank = motion::MotionBank::new(rect, spec.fps);
        let input = with_lead(&frames, len, bank.taps - 1);
        let (g, _) = gpu()
            .motion(&input, spec.width, spec.height, rect, &bank)
            .expect("motion kernel");
        let c: Vec<f32> = motion::reference(&input, spec.width, spec.height, rect, &bank)
            .iter()
            .map(|v| *v as f32)
            .collect();
        let row = 1 + bank.channel_count();
        // The row starts with the frame's contrast; the feature pools the channels over it.
        let split = |v: &[f32]| -> (Vec<f32>, Vec<f32>) {
            let features = bank.features(v);
            let channels = v.chunks_exact(row).flat_map(|r| r[1..].to_vec()).collect();
            (features, channels)
        };
        let ((gf, gc), (cf, cc)) = (split(&g), split(&c));
        assert_close(&format!("motion feature over {rect:?}"), &gf, &cf);
        // Energies are L* x envelope sums (up to about 10^4): compare relative to the largest.
        let scale = cc.iter().fold(1f32, |m, v| m.max(v.abs()));
        let scaled = |v: &[f32]| v.iter().map(|x| x / scale).collect::<Vec<f32>>();
        assert_close(
            &format!("motion channels over {rect:?}"),
            &scaled(&gc),
            &scaled(&cc),
        );
        assert!(cf.iter().any(|v| *v > 0.01), "the trailer moves: {cf:?}");
    }
}

#[tokio::test]
async fn the_whole_chain_matches_reference_on_a_real_clip() {
    // Decode a 3 s clip, run every reference stage on the decoded media, compare the networks.
    let dir = tempfile::tempdir().expect("tempdir");
    ffmpeg(
        dir.path(),
        &[
            "-i",
            real_media().join("trailer_bbb.mp4").to_str().expect("utf8"),
            "-ss",
            "20",
            "-t",
            "3",
            "-c:v",
            "libx264",
            "-c:a",
            "aac",
            "cut.mp4",
        ],
    );
    let out = whole_chain_matches_reference(&dir.path().join("cut.mp4")).await;
    assert!(
        !out.picture_revised,
        "one keyframe: the first batch saw the whole picture"
    );
}

/// A clip whose picture is letterboxed from 11 s on, after an opening drawn by `opening` (an
/// ffmpeg filter applied before 11 s), with keyframes at `keys` only, a tone beside it.
fn late_picture(
    dir: &std::path::Path,
    name: &str,
    opening: &str,
    keys: &str,
) -> std::path::PathBuf {
    let filter = format!("{opening},pad=320:180:0:30:black");
    ffmpeg(
        dir,
        &[
            "-f",
            "lavfi",
            "-i",
            "testsrc2=s=320x120:r=25:d=14",
            "-f",
            "lavfi",
            "-i",
            "sine=f=440:r=48000:d=14",
            "-vf",
            &filter,
            "-force_key_frames",
            keys,
            "-c:v",
            "libx264",
            "-x264-params",
            "keyint=1000:scenecut=0",
            "-c:a",
            "aac",
            name,
        ],
    );
    dir.join(name)
}

/// The scan finds the active picture from its one decode, and the kernels start on the
/// keyframes seen by then. Here the first 11 s show only a white title card, so the first
/// batch's picture is not the clip's: the kernels must run again on the bars-excluded picture,
/// and every feature must be the reference's on the picture of a separate keyframe pass.
/// ffmpeg releases a keyframe on its pipe only when the next one passes (see
/// `VideoFrames::open_with_keyframes`), so the title has a second keyframe at 5 s.
#[tokio::test]
async fn a_picture_revised_after_the_first_batch_matches_reference() {
    let dir = tempfile::tempdir().expect("tempdir");
    let title = "drawbox=t=fill:c=black:enable='lt(t,11)',drawbox=x=100:y=30:w=120:h=60:t=fill:c=white:enable='lt(t,11)'";
    let out =
        whole_chain_matches_reference(&late_picture(dir.path(), "title.mp4", title, "0,5,11"))
            .await;
    assert!(
        out.picture_revised,
        "the picture changed after the first batch"
    );
    let rect = out.picture.expect("video").rect;
    assert!(
        rect.y0 >= 14 && rect.y1 <= 76,
        "the bars are left out: {rect:?}"
    );
}

/// An opening that is black throughout says nothing about where the picture is: the kernels
/// wait for a lit keyframe (at most three batches), so the clip's picture is found without a
/// second run, and the features are still the reference's.
#[tokio::test]
async fn a_black_opening_holds_the_kernels_for_the_picture() {
    let dir = tempfile::tempdir().expect("tempdir");
    let black = "drawbox=t=fill:c=black:enable='lt(t,11)'";
    let out =
        whole_chain_matches_reference(&late_picture(dir.path(), "black.mp4", black, "0,11")).await;
    assert!(!out.picture_revised, "held, not revised");
    let rect = out.picture.expect("video").rect;
    assert!(
        rect.y0 >= 14 && rect.y1 <= 76,
        "the bars are left out: {rect:?}"
    );
}

/// Runs every reference stage on the decoded media of `path` (video and audio, no speech)
/// and compares the scan's features and networks with them; returns the scan.
async fn whole_chain_matches_reference(
    path: &std::path::Path,
) -> brainscan::inference::QualiaOutput {
    let path = path.to_path_buf();
    let q = qualia_unheard();
    let info = brainscan::media::probe::probe(&path, std::time::Duration::from_secs(30))
        .await
        .expect("probe");
    let out = q.analyse(&path, &info, 180, None).await.expect("analyse");
    let spec = DecodeSpec::default();
    let len = (spec.width * spec.height * 3) as usize;
    let frames = decode_frames(&path, spec, usize::MAX)
        .await
        .expect("frames");
    let picture = brainscan::inference::picture::active_picture(&path, spec)
        .await
        .expect("active picture");
    let rect = picture.rect;
    let ff = reference::visual(&frames, spec.width as usize, spec.height as usize, rect);
    let samples = decode_samples(&path, spec, usize::MAX - features::LEAD)
        .await
        .expect("samples");
    // v2 scales the audio to its loudness target before the kernels.
    let measured = v2::track_loudness(&samples[features::LEAD..], spec.sample_rate as usize);
    let target = q
        .model
        .manifest
        .sampling
        .normalise_dbfs
        .expect("v2 normalises");
    let gain = v2::normalising_gain(measured, f64::from(target));
    let samples: Vec<f32> = samples.iter().map(|v| v * gain).collect();
    let total = samples.len() - features::LEAD;
    let hops = total.div_ceil(HOP);
    let (_, hf) = reference::audio(
        &samples,
        hops + 1,
        true,
        &features::hann(),
        &features::mel_filters(),
    );
    let raw = reference::pool(
        &ff,
        &hf,
        out.seconds,
        10,
        q.model.manifest.sampling.onset_threshold,
        q.model.manifest.sampling.hop_offset as usize,
        &features::dft_table(),
    );
    let loudness = v2::loudness_per_second(&hf, out.seconds, 3);
    let streams = v2::streams(&raw, &loudness, true, true, false, Some(measured));
    // The face features come from the CPU detector (tested against OpenCV in host/faces),
    // not from a kernel: take them as the scan computed them.
    let face = v2::feature_index("face_presence").expect("v2 lists faces");
    let faces: Vec<[f32; 2]> = out
        .features
        .chunks_exact(v2::FEATURE_COUNT_V2)
        .map(|r| [r[face], r[face + 1]])
        .collect();
    let bank = motion::MotionBank::new(rect, spec.fps);
    let per_frame = bank.features(&motion::reference(
        &with_lead(&frames, len, bank.taps - 1),
        spec.width,
        spec.height,
        rect,
        &bank,
    ));
    let motion_seconds = motion::per_second(&per_frame, spec.fps, out.seconds);
    let derived = v2::derive(
        &raw,
        &loudness,
        &streams,
        Some(&faces),
        Some(&motion_seconds),
        None,
        if q.model.manifest.sampling.levels {
            picture.luma_range
        } else {
            1.0
        },
    );
    assert_close("v2 features", &out.features, &derived);
    let presence = Presence {
        video: true,
        audio: true,
        speech: false,
    };
    let (_, _, y) = reference::response(&derived, &q.model, presence, TimeBase::Stimulus);
    let got: Vec<f32> = out.networks.iter().flatten().copied().collect();
    assert_close("networks", &got, &y);
    assert_eq!(out.frames, frames.len() / len - 1);
    assert_eq!(out.hops, hops);
    assert_eq!(
        out.picture.map(|p| p.rect),
        Some(rect),
        "the scan's picture"
    );
    out
}

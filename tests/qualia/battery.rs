//! The in-silico localiser battery of QUALIA-MODEL.md: stimuli made at test time (ffmpeg
//! lavfi, espeak-ng), each contrast with the expected sign and an effect size d ≥ 1.
//!
//! These are PLUMBING tests of qualia v1: each contrast probes the feature whose hand-set
//! weight was chosen to produce it, so passing shows the pipeline is wired (decode, kernels,
//! pooling, response, readout), not that the model is right. They run on v1 as shipped.

use std::path::Path;

use brainscan::inference::QualiaOutput;

use crate::support::{
    DEFAULT_MODE, DORSAL, H264, SOMATOMOTOR, VENTRAL, VISUAL, analyse_with, cohens_d, ffmpeg, mean,
    qualia_v1, series, speech,
};

const SECONDS: &str = "12";
const SIZE: &str = "s=320x180:r=25";

/// Encodes `video` (a lavfi graph) with `audio` (a lavfi graph or a file) into `name`.
fn clip(dir: &Path, name: &str, video: &str, audio: &str) -> std::path::PathBuf {
    let audio_input: Vec<&str> = if audio.ends_with(".wav") {
        vec!["-stream_loop", "-1", "-i", audio]
    } else {
        vec!["-f", "lavfi", "-i", audio]
    };
    let args: Vec<&str> = [
        &["-f", "lavfi", "-i", video][..],
        &audio_input,
        &["-t", SECONDS, "-map", "0:v", "-map", "1:a"],
        &H264,
        &["-c:a", "aac", name],
    ]
    .concat();
    ffmpeg(dir, &args);
    dir.join(name)
}

/// Scene `a` and scene `b` (lavfi graphs) alternating every `period` seconds — a hard cut at
/// each switch — over the lavfi `audio` graph.
fn alternating(
    dir: &Path,
    name: &str,
    a: &str,
    b: &str,
    period: &str,
    audio: &str,
) -> std::path::PathBuf {
    let overlay = format!("[0][1]overlay=enable='mod(floor(t/{period}),2)'[v]");
    let args: Vec<&str> = [
        &[
            "-f",
            "lavfi",
            "-i",
            a,
            "-f",
            "lavfi",
            "-i",
            b,
            "-f",
            "lavfi",
            "-i",
            audio,
            "-filter_complex",
            &overlay,
            "-map",
            "[v]",
            "-map",
            "2:a",
            "-t",
            SECONDS,
        ][..],
        &H264,
        &["-c:a", "aac", name],
    ]
    .concat();
    ffmpeg(dir, &args);
    dir.join(name)
}

fn contrast(
    what: &str,
    a: &QualiaOutput,
    b: &QualiaOutput,
    network: usize,
    seconds: std::ops::Range<usize>,
) {
    let (sa, sb) = (
        series(a, network, seconds.clone()),
        series(b, network, seconds),
    );
    let d = cohens_d(&sa, &sb);
    assert!(
        mean(&sa) > mean(&sb) && d >= 1.0,
        "{what}: {:.3} vs {:.3}, d = {d:.2}",
        mean(&sa),
        mean(&sb)
    );
}

const SILENCE: &str = "anullsrc=r=48000:cl=stereo";
const FROZEN_SCENE: &str = "testsrc=s=1280x180:r=25,crop=320:180:0:0,trim=end_frame=1,tpad=stop_mode=clone:stop_duration=20";

#[tokio::test]
async fn flickering_checkerboard_raises_visual_over_grey() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let checker = clip(
        d,
        "checker.mp4",
        &format!(
            "nullsrc={SIZE},geq=lum='if(mod(floor(X/20)+floor(Y/20)+floor(T*8),2),235,16)':cb=128:cr=128"
        ),
        SILENCE,
    );
    let grey = clip(d, "grey.mp4", &format!("color=c=gray:{SIZE}"), SILENCE);
    let (a, b) = (
        analyse_with(&qualia_v1(), &checker).await,
        analyse_with(&qualia_v1(), &grey).await,
    );
    contrast("checkerboard vs grey: Visual", &a, &b, VISUAL, 1..11);
}

#[tokio::test]
async fn motion_raises_visual_and_dorsal_attention_over_the_frozen_frame() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let pan = clip(
        d,
        "pan.mp4",
        "testsrc=s=1280x180:r=25,crop=320:180:x='mod(t*120,960)':y=0",
        SILENCE,
    );
    let frozen = clip(d, "frozen.mp4", FROZEN_SCENE, SILENCE);
    let (a, b) = (
        analyse_with(&qualia_v1(), &pan).await,
        analyse_with(&qualia_v1(), &frozen).await,
    );
    contrast("pan vs frozen: Visual", &a, &b, VISUAL, 1..11);
    contrast("pan vs frozen: Dorsal Attention", &a, &b, DORSAL, 1..11);
}

#[tokio::test]
async fn speech_raises_somatomotor_over_silence_with_the_same_frames() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let words = speech(
        d,
        "speech.wav",
        "In the beginning the engineers built a service that listened to every second of a film, and it told them how an average viewer might respond, moment by moment, to what was shown and said.",
    );
    let talking = clip(
        d,
        "talking.mp4",
        FROZEN_SCENE,
        words.to_str().expect("utf8"),
    );
    let quiet = clip(d, "quiet.mp4", FROZEN_SCENE, SILENCE);
    let (a, b) = (
        analyse_with(&qualia_v1(), &talking).await,
        analyse_with(&qualia_v1(), &quiet).await,
    );
    contrast("speech vs silence: Somatomotor", &a, &b, SOMATOMOTOR, 1..11);
}

#[tokio::test]
async fn hard_cuts_raise_ventral_attention_at_the_cuts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // Two scenes alternating every 2 s (cuts at 2, 4, 6, 8, 10) vs the first scene throughout.
    let cuts = alternating(
        d,
        "cuts.mp4",
        &format!("testsrc2={SIZE}"),
        &format!("smptehdbars={SIZE}"),
        "2",
        SILENCE,
    );
    let one_shot = clip(d, "one_shot.mp4", &format!("testsrc2={SIZE}"), SILENCE);
    let (a, b) = (
        analyse_with(&qualia_v1(), &cuts).await,
        analyse_with(&qualia_v1(), &one_shot).await,
    );
    let at_cuts = [2, 4, 6, 8, 10];
    let sa: Vec<f64> = at_cuts
        .iter()
        .map(|t| f64::from(a.networks[*t][VENTRAL]))
        .collect();
    let sb: Vec<f64> = at_cuts
        .iter()
        .map(|t| f64::from(b.networks[*t][VENTRAL]))
        .collect();
    let d_cuts = cohens_d(&sa, &sb);
    assert!(
        mean(&sa) > mean(&sb) && d_cuts >= 1.0,
        "cuts vs one shot: VA {:.3} vs {:.3}, d = {d_cuts:.2}",
        mean(&sa),
        mean(&sb)
    );
}

#[tokio::test]
async fn a_sudden_loud_onset_raises_ventral_attention_at_the_onset() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // Quiet tone, then loud noise from 6.5 s: the onset is in second 6.
    let onset = clip(
        d,
        "onset.mp4",
        &format!("color=c=gray:{SIZE}"),
        "aevalsrc='if(lt(t,6.5),0.01*sin(2*PI*300*t),0.8*(random(0)*2-1))':s=48000",
    );
    let out = analyse_with(&qualia_v1(), &onset).await;
    let va = series(&out, VENTRAL, 0..out.seconds);
    let peak = va
        .iter()
        .enumerate()
        .max_by(|x, y| x.1.total_cmp(y.1))
        .map(|(i, _)| i)
        .expect("peak");
    assert!(
        (5..=7).contains(&peak),
        "ventral attention peaks at {peak}, the onset is at 6: {va:?}"
    );
    let around = series(&out, VENTRAL, 5..8);
    let before = series(&out, VENTRAL, 1..4);
    let d_onset = cohens_d(&around, &before);
    assert!(d_onset >= 1.0, "onset vs quiet: d = {d_onset:.2} ({va:?})");
}

#[tokio::test]
async fn a_static_quiet_scene_raises_default_mode_over_a_busy_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let still = clip(d, "still.mp4", FROZEN_SCENE, SILENCE);
    let busy = alternating(
        d,
        "busy.mp4",
        &format!("testsrc2={SIZE}"),
        "mandelbrot=s=320x180:r=25",
        "1.5",
        "aevalsrc='0.5*sin(2*PI*(200+100*floor(t*4))*t)*(0.5+0.5*sin(2*PI*3*t))+0.2*(random(0)*2-1)':s=48000",
    );
    let (a, b) = (
        analyse_with(&qualia_v1(), &still).await,
        analyse_with(&qualia_v1(), &busy).await,
    );
    contrast("still vs busy: Default Mode", &a, &b, DEFAULT_MODE, 1..11);
}

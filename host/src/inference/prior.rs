//! qualia v1's prior weights: each one set from a well-established finding, with its reason,
//! written into `model.json` so anyone can audit them. These are literature priors, not weights
//! fitted to fMRI (see `models/qualia/v1/README.md`); `brainscan model fit` replaces them when an
//! operator has data.
//!
//! The feature statistics that z-score inputs come from a reference corpus of clips (their
//! per-second features, as `brainscan features` writes them), never from the clip being scanned.

use std::collections::BTreeMap;

use super::features::{self, FEATURE_COUNT, FEATURES, Modality};
use super::language::{AXES, NEUTRAL, SemanticAxes};
use super::model::{
    AxisSpec, FaceSampling, FeatureSpec, Manifest, Model, NETWORK_COUNT, Presence, ResponseSpec,
    Sampling, SemanticSpec, WeightNote,
};
use super::profiles::ProfileTable;
use super::v2;
use crate::result::NETWORKS;

pub struct Prior {
    pub network: &'static str,
    pub feature: &'static str,
    pub weight: f32,
    pub reason: &'static str,
}

const fn w(
    network: &'static str,
    feature: &'static str,
    weight: f32,
    reason: &'static str,
) -> Prior {
    Prior {
        network,
        feature,
        weight,
        reason,
    }
}

/// The v1 prior. Weights are in z units of response per z unit of (HRF-filtered) feature.
pub const PRIOR: &[Prior] = &[
    w(
        "Visual",
        "contrast",
        0.35,
        "Early visual cortex responds monotonically to luminance contrast (contrast-response functions in V1-V3, e.g. Boynton et al. 1999).",
    ),
    w(
        "Visual",
        "edges",
        0.30,
        "Oriented edge energy is the preferred stimulus of V1 simple/complex cells; image edge density predicts occipital BOLD in natural-image encoding models.",
    ),
    w(
        "Visual",
        "motion",
        0.30,
        "Luminance change over time (flicker, motion energy) drives striate and extrastriate cortex; motion-energy models predict visual-cortex responses to movies (Nishimoto et al. 2011).",
    ),
    w(
        "Visual",
        "motion_coarse",
        0.10,
        "Large-field motion adds drive to visual cortex beyond local flicker (MT+ lies at the visual/dorsal-attention border in Yeo-7).",
    ),
    w(
        "Visual",
        "colourfulness",
        0.10,
        "Chromatic contrast drives V1/V4 colour-selective populations (weak prior).",
    ),
    w(
        "Visual",
        "saliency",
        0.10,
        "Local centre-surround contrast adds stimulus drive in early visual areas (weak prior).",
    ),
    w(
        "Somatomotor",
        "level_db",
        0.35,
        "Yeo-7's somatomotor network contains auditory cortex (Heschl's gyrus, superior temporal plane), whose BOLD rises with sound level.",
    ),
    w(
        "Somatomotor",
        "syllabic",
        0.20,
        "Auditory cortex tracks the 2-8 Hz syllabic envelope of speech (envelope tracking, e.g. Giraud & Poeppel 2012).",
    ),
    w(
        "Somatomotor",
        "speech_ratio",
        0.15,
        "Speech-band energy engages superior temporal auditory cortex more than out-of-band sound.",
    ),
    w(
        "Somatomotor",
        "flux",
        0.10,
        "Spectro-temporal change (onsets) drives auditory cortex beyond steady sound.",
    ),
    w(
        "Somatomotor",
        "onset_rate",
        0.10,
        "Rate of acoustic events drives auditory responses (sound-rate effects on auditory BOLD).",
    ),
    w(
        "Somatomotor",
        "motion",
        0.10,
        "Observed movement engages premotor/somatomotor cortex (action observation), weak prior.",
    ),
    w(
        "Dorsal Attention",
        "motion_coarse",
        0.35,
        "Coherent large-field motion drives MT+/V5 and the intraparietal sulcus, both in the dorsal attention network.",
    ),
    w(
        "Dorsal Attention",
        "motion",
        0.25,
        "Motion engages dorsal-stream areas that orient attention in space (Corbetta & Shulman 2002).",
    ),
    w(
        "Dorsal Attention",
        "saliency",
        0.15,
        "Spatially distinct, salient locations drive top-down/bottom-up orienting in FEF/IPS.",
    ),
    w(
        "Dorsal Attention",
        "edges",
        0.05,
        "Visual clutter raises search demands on the dorsal attention network (weak prior).",
    ),
    w(
        "Ventral Attention",
        "cut",
        0.40,
        "Abrupt scene changes (film cuts, event boundaries) evoke salience/ventral-attention responses (anterior insula, TPJ; Zacks et al. 2010).",
    ),
    w(
        "Ventral Attention",
        "onset_strength",
        0.30,
        "Sudden sounds capture attention through the ventral attention/salience network (stimulus-driven reorienting).",
    ),
    w(
        "Ventral Attention",
        "level_change",
        0.30,
        "Abrupt loudness changes are deviant events that engage the salience network (mismatch/oddball responses).",
    ),
    w(
        "Ventral Attention",
        "luma_change",
        0.20,
        "Abrupt global luminance changes are visual transients that trigger reorienting.",
    ),
    w(
        "Limbic",
        "bass_ratio",
        0.10,
        "Low-frequency, loud sound relates to arousal responses in orbitofrontal/temporal-pole regions (weak prior).",
    ),
    w(
        "Limbic",
        "level_db",
        0.05,
        "Overall sound intensity relates to arousal (weak prior).",
    ),
    w(
        "Limbic",
        "colourfulness",
        0.05,
        "Colour saturation relates to affective appraisal (weak prior).",
    ),
    w(
        "Frontoparietal",
        "syllabic",
        0.20,
        "Following continuous speech loads working memory and control regions (weak-to-moderate prior).",
    ),
    w(
        "Frontoparietal",
        "speech_ratio",
        0.10,
        "Speech content engages frontoparietal control for comprehension (weak prior).",
    ),
    w(
        "Frontoparietal",
        "cut",
        0.10,
        "Event boundaries update working memory in lateral prefrontal/parietal cortex (weak prior).",
    ),
    w(
        "Default Mode",
        "motion",
        -0.25,
        "The default mode network deactivates with external sensory load (task-negative response, Raichle et al. 2001).",
    ),
    w(
        "Default Mode",
        "level_db",
        -0.20,
        "Loud external stimulation deactivates the default mode network.",
    ),
    w(
        "Default Mode",
        "cut",
        -0.15,
        "Abrupt external events pull attention outward, lowering default-mode activity.",
    ),
    w(
        "Default Mode",
        "contrast",
        -0.10,
        "High-contrast visual input is external load (weak prior).",
    ),
    w(
        "Default Mode",
        "onset_strength",
        -0.10,
        "Sudden sounds pull attention outward (weak prior).",
    ),
    w(
        "Default Mode",
        "syllabic",
        0.30,
        "Sustained narrative speech engages the default mode network over long timescales (Lerner et al. 2011; Simony et al. 2016).",
    ),
    w(
        "Default Mode",
        "speech_ratio",
        0.10,
        "Speech-dominated soundtracks tend to carry narrative (weak prior).",
    ),
];

/// Raw feature values that stand for an absent modality in v1: a black, still frame and
/// silence. (v2 uses the corpus mean instead: an absent stream reads as "typical", z = 0.)
#[must_use]
pub fn absent_values() -> Vec<f32> {
    FEATURES
        .iter()
        .map(|(name, modality, _)| match (*modality, *name) {
            (Modality::Audio, "level_db") => -100.0,
            (Modality::Audio, n) if n.starts_with("mel_") => (1e-6f32).ln(),
            _ => 0.0,
        })
        .collect()
}

/// Smallest standard deviation per feature, so a feature that barely varies in the corpus
/// cannot blow up z-scores (documented in the model card).
#[must_use]
pub fn std_floor(feature: &str) -> f32 {
    match feature {
        "level_db" | "level_change" | "loudness" | "loudness_change" => 1.0,
        f if f.starts_with("mel_shape_") => 0.25,
        f if f.starts_with("mel_") => 0.5,
        "onset_rate" | "word_rate" | "intelligibility" => 0.25,
        "video_present" | "audio_present" | "speech_present" => 0.5,
        "speech_presence" => 0.1,
        f if f.starts_with("axis_") || f == "semantic_change" => 0.02,
        _ => 0.01,
    }
}

/// Raises the spread of the content features to their construction unit
/// (`language::content_units`): the reference corpus holds too little speech to measure it.
pub fn raise_to_units(std: &mut [f32], list: &[(&str, Modality)], units: &[(String, f32)]) {
    for (name, unit) in units {
        if let Some(k) = list.iter().position(|(n, _)| *n == name.as_str()) {
            std[k] = std[k].max(*unit);
        }
    }
}

/// One clip's per-second features (`rows x F`) and which modalities it really had.
#[derive(Debug, Clone)]
pub struct CorpusClip {
    pub features: Vec<f32>,
    pub presence: Presence,
}

/// Mean and floored std of per-second features over a corpus, for the feature list `list`
/// (name and modality per column). A feature's statistics use only the clips that had its
/// modality: a clip without sound says nothing about typical loudness. A feature no clip had
/// keeps `fallback` as its mean.
#[must_use]
pub fn corpus_stats(
    clips: &[CorpusClip],
    list: &[(&str, Modality)],
    fallback: &[f32],
) -> (Vec<f32>, Vec<f32>) {
    let f = list.len();
    let present = |c: &CorpusClip, k: usize| c.presence.has(list[k].1);
    let mut mean = vec![0f64; f];
    let mut count = vec![0f64; f];
    for c in clips {
        for row in c.features.chunks_exact(f) {
            for (k, v) in row.iter().enumerate() {
                if present(c, k) {
                    mean[k] += f64::from(*v);
                    count[k] += 1.0;
                }
            }
        }
    }
    for (m, n) in mean.iter_mut().zip(&count) {
        *m /= n.max(1.0);
    }
    let mut var = vec![0f64; f];
    for c in clips {
        for row in c.features.chunks_exact(f) {
            for (k, v) in row.iter().enumerate() {
                if present(c, k) {
                    var[k] += (f64::from(*v) - mean[k]).powi(2);
                }
            }
        }
    }
    let std = var
        .iter()
        .zip(&count)
        .zip(list.iter())
        .map(|((v, n), (name, _))| ((v / n.max(1.0)).sqrt() as f32).max(std_floor(name)))
        .collect();
    let mean = mean
        .iter()
        .zip(&count)
        .enumerate()
        .map(|(k, (m, n))| if *n > 0.0 { *m as f32 } else { fallback[k] })
        .collect();
    (mean, std)
}

/// The v1 feature list as (name, modality).
#[must_use]
pub fn v1_list() -> Vec<(&'static str, Modality)> {
    FEATURES.iter().map(|f| (f.0, f.1)).collect()
}

/// The v2 feature list as (name, modality).
#[must_use]
pub fn v2_list() -> Vec<(&'static str, Modality)> {
    v2::FEATURES.iter().map(|f| (f.0, f.1)).collect()
}

/// A prior model's provenance: `source: prior`, the caveat clients read, and the corpus the
/// statistics came from.
fn prior_provenance(
    summary: &str,
    corpus: serde_json::Value,
) -> BTreeMap<String, serde_json::Value> {
    BTreeMap::from([
        ("source".to_owned(), serde_json::json!("prior")),
        ("summary".to_owned(), serde_json::json!(summary)),
        ("corpus".to_owned(), corpus),
    ])
}

/// `model.json`'s feature list from a feature table.
fn feature_specs(table: &[(&str, Modality, &str)]) -> Vec<FeatureSpec> {
    table
        .iter()
        .map(|(name, modality, description)| FeatureSpec {
            name: (*name).into(),
            modality: *modality,
            description: (*description).into(),
        })
        .collect()
}

/// Default sampling of v1 (see QUALIA-MODEL.md).
#[must_use]
pub fn default_sampling() -> Sampling {
    Sampling {
        fps: 10,
        width: 160,
        height: 90,
        sample_rate: features::SAMPLE_RATE,
        hop: features::HOP as u32,
        window: features::WINDOW as u32,
        onset_threshold: 0.5,
        hop_offset: 0,
        normalise_dbfs: None,
        active_picture: false,
        faces: None,
        motion_energy: false,
        levels: false,
        face_area_of_frame: false,
    }
}

/// Builds the prior model from corpus statistics.
#[must_use]
pub fn build(version: &str, mean: Vec<f32>, std: Vec<f32>, corpus: serde_json::Value) -> Model {
    let f = FEATURE_COUNT;
    let mut weights = vec![0f32; NETWORK_COUNT * f];
    let mut notes = Vec::new();
    for p in PRIOR {
        let n = NETWORKS
            .iter()
            .position(|x| *x == p.network)
            .unwrap_or_else(|| panic!("unknown network {}", p.network));
        let k = features::feature_index(p.feature)
            .unwrap_or_else(|| panic!("unknown feature {}", p.feature));
        weights[n * f + k] = p.weight;
        notes.push(WeightNote {
            network: p.network.into(),
            feature: p.feature.into(),
            weight: p.weight,
            reason: p.reason.into(),
        });
    }
    let provenance = prior_provenance(
        "Weights are literature priors set by hand from the findings listed per weight; they are NOT fitted to fMRI. Feature statistics come from the reference corpus below.",
        corpus,
    );
    let taps = 32;
    let manifest = Manifest {
        name: "qualia".into(),
        version: version.into(),
        format: 1,
        networks: NETWORKS.iter().map(|s| (*s).to_owned()).collect(),
        features: feature_specs(&FEATURES),
        sampling: default_sampling(),
        response: ResponseSpec {
            kind: "spm-double-gamma (peak 6 s, undershoot 16 s, ratio 1/6), unit sum".into(),
            taps,
            lag_seconds: 5,
            stimulus_until_zero: false,
        },
        provenance,
        weights: notes,
        semantic: None,
        checksum: String::new(),
    };
    Model {
        features: FEATURES.iter().map(|f| f.0.to_owned()).collect(),
        modality: FEATURES.iter().map(|f| f.1).collect(),
        mean,
        std,
        absent: absent_values(),
        weights,
        bias: vec![0.0; NETWORK_COUNT],
        hrf: features::canonical_hrf(taps),
        lag: 5,
        stimulus_end: taps,
        axes: SemanticAxes::default(),
        manifest,
    }
}

/// Which Neurosynth construct each v2 feature indexes, and why. A feature's prior weights are
/// its construct's network profile (log odds where the 95 % interval lies above 0, else 0), split
/// equally among the features that index the same construct, so every construct carries one
/// unit of drive however many features measure it. Features that index no construct in the
/// data (spectral shape, presence flags) have no prior weight: only a fit can give them one.
pub const FEATURE_CONSTRUCTS: &[(&str, &str, &str)] = &[
    (
        "contrast",
        "visual",
        "luminance contrast is the elementary drive of visual cortex",
    ),
    (
        "colourfulness",
        "visual",
        "chromatic contrast drives colour-selective visual cortex",
    ),
    (
        "edges",
        "visual",
        "oriented edge energy is what early visual cortex encodes",
    ),
    (
        "saliency",
        "visual",
        "centre-surround contrast is local visual drive",
    ),
    (
        "motion_energy",
        "motion",
        "opponent motion energy (a coherent pan, not flicker) drives MT+ and the motion-selective visual areas; since 2.4.0 it replaces flicker and the coarse frame difference, which are largest for flicker",
    ),
    (
        "cut",
        "attention",
        "a shot change captures attention (stimulus-driven orienting)",
    ),
    (
        "cut",
        "salience",
        "a shot change is an abrupt, unexpected event (salience and reorienting)",
    ),
    (
        "luma_change",
        "attention",
        "an abrupt brightness change captures attention",
    ),
    (
        "luma_change",
        "salience",
        "an abrupt brightness change is a salient event",
    ),
    (
        "onset_strength",
        "attention",
        "a sharp acoustic onset captures attention",
    ),
    (
        "onset_strength",
        "salience",
        "a sharp acoustic onset is a salient event (the oddball response)",
    ),
    (
        "loudness_change",
        "attention",
        "a jump in loudness captures attention",
    ),
    (
        "loudness_change",
        "salience",
        "a jump in loudness is a salient event",
    ),
    (
        "face_presence",
        "faces",
        "a face is in view (fusiform face area, amygdala)",
    ),
    (
        "face_area",
        "faces",
        "faces fill more of the picture (face-selective responses grow with face size)",
    ),
    (
        "loudness",
        "speech_auditory",
        "sound level drives auditory cortex",
    ),
    (
        "flux",
        "speech_auditory",
        "spectro-temporal change drives auditory cortex",
    ),
    (
        "onset_rate",
        "speech_auditory",
        "the rate of acoustic events drives auditory cortex",
    ),
    (
        "syllabic",
        "speech_auditory",
        "auditory cortex tracks the 2-8 Hz syllabic envelope",
    ),
    ("speech_ratio", "speech_auditory", "speech-band energy"),
    (
        "speech_presence",
        "speech_auditory",
        "a voice is present (voice-selective temporal cortex)",
    ),
    ("word_rate", "language", "words understood per second"),
    (
        "intelligibility",
        "language",
        "how much of the speech is understood as words",
    ),
    (
        "semantic_change",
        "memory",
        "event boundaries in a narrative drive episodic encoding",
    ),
    (
        "axis_social",
        "social",
        "the transcript is about people and minds",
    ),
    ("axis_emotion", "emotion", "the transcript carries emotion"),
    (
        "axis_numbers",
        "numbers",
        "the transcript carries numbers and quantities",
    ),
    (
        "axis_pressure",
        "fear",
        "urgency, scarcity and a deadline frame a loss to avoid (fear, threat and cue-driven craving), not a choice to weigh",
    ),
    (
        "axis_evidence",
        "decision_making",
        "specifics, comparisons and caveats are what a deliberate choice weighs",
    ),
    (
        "axis_product",
        "reward",
        "a product and the benefit of having it are a reward to anticipate",
    ),
];

/// v2's grounded prior weights (`7 x F`) and a note per non-zero weight naming its profile row.
///
/// Only networks a construct's studies report *more* often than the rest of the literature get
/// weight. Coordinate databases record activation foci: a network reported less often for a
/// construct is not evidence that the construct deactivates it (2.1.0's first build used the
/// signed log odds; on the Alice first half its zero-shot mean r was 0.043, with speech driving
/// the temporal-pole ROI down because language studies under-report that dropout-prone region;
/// see EVALUATION-PLAN.md, deviations).
///
/// # Panics
/// A feature or construct named in [`FEATURE_CONSTRUCTS`] is missing (a programming error,
/// caught by the unit tests).
#[must_use]
pub fn grounded_weights(table: &ProfileTable) -> (Vec<f32>, Vec<WeightNote>) {
    let f = v2::FEATURE_COUNT_V2;
    let mut weights = vec![0f32; NETWORK_COUNT * f];
    let mut notes: Vec<WeightNote> = Vec::new();
    for (feature, construct, why) in FEATURE_CONSTRUCTS {
        let k = v2::feature_index(feature).unwrap_or_else(|| panic!("unknown feature {feature}"));
        let profile = table
            .get(construct)
            .unwrap_or_else(|| panic!("no profile row for {construct}"));
        let share = FEATURE_CONSTRUCTS
            .iter()
            .filter(|x| x.1 == *construct)
            .count() as f64;
        let visual_feature = v2::FEATURES[k].1 == super::features::Modality::Visual;
        let only = CONSTRUCT_NETWORKS
            .iter()
            .find(|(c, _)| c == construct)
            .map(|(_, n)| *n);
        for (n, network) in NETWORKS.iter().enumerate() {
            if only.is_some_and(|keep| !keep.contains(&n)) {
                continue;
            }
            // Visual cortex takes no weight from what is heard or said: a non-visual construct's
            // Visual foci come from its studies' pictures (memory and attention studies show
            // images), not from the construct, and an audio-only clip must keep Visual at rest.
            if n == VISUAL && !visual_feature {
                continue;
            }
            let w = (profile.credible(n).max(0.0) / share) as f32;
            if w == 0.0 {
                continue;
            }
            let w = (w * 1000.0).round() / 1000.0;
            let reason = format!(
                "Neurosynth profile `{construct}` ({} studies): log odds {:+.3} [{:+.3}, {:+.3}] for {network}, split over {share} feature(s); {why}.",
                profile.studies, profile.log_odds[n], profile.ci_low[n], profile.ci_high[n]
            );
            // A feature that indexes two constructs (an abrupt change is both orienting and a
            // salient event) takes the sum of their shares, with both reasons.
            weights[n * f + k] = ((weights[n * f + k] + w) * 1000.0).round() / 1000.0;
            if let Some(note) = notes
                .iter_mut()
                .find(|x| x.network == *network && x.feature == *feature)
            {
                note.weight = weights[n * f + k];
                note.reason = format!("{} Plus: {reason}", note.reason);
            } else {
                notes.push(WeightNote {
                    network: (*network).into(),
                    feature: (*feature).into(),
                    weight: w,
                    reason,
                });
            }
        }
    }
    (weights, notes)
}

/// Row of Visual in [`NETWORKS`].
const VISUAL: usize = 0;

/// Constructs that ground only some networks: `(construct, networks it weighs)`.
///
/// `salience` (LDA topic 20: conflict, errors, interference) is the profile chosen to give
/// Ventral Attention its inputs, the abrupt events that the salience and ventral attention
/// networks answer. Its other credible networks, Frontoparietal (+0.39) and Dorsal Attention
/// (+0.21), are the control those tasks demand (answering a Stroop or flanker trial), which
/// watching a clip does not; Dorsal Attention already takes the `attention` profile from the
/// same features. Weighed on every network it made each cut and drum hit read as deliberate
/// thinking (Frontoparietal is deliberation's main network), and a melody over a still frame
/// scored purchase intent 68.
pub const CONSTRUCT_NETWORKS: &[(&str, &[usize])] = &[("salience", &[3])];

/// The words every v2 result's `provenance.model.summary` carries. The figures come from the
/// shipped evaluation, so the words a client reads and the numbers beside them cannot disagree
/// (a test checks the committed model.json against both).
#[must_use]
pub fn v2_summary() -> String {
    let e = super::shipped_evaluation::SHIPPED_EVALUATION;
    format!(
        "Weights are a prior derived from data, not fitted: each feature's weights are the Neurosynth v7 network profile (positive log odds, 95% bootstrap interval above 0) of the construct it indexes. They are NOT fitted to fMRI. On real fMRI (Alice, first half) they predict language regions at mean r {:.2}, level with loudness alone ({:.2}; the difference is far inside both intervals), whose level is the response to the story's start after silence: from 6 s after the first word they score {:.3} against loudness's {:.3} (word rate alone {:.3}), and within 5 blocks of the story {:.2} against loudness's {:.2} and word rate's {:.2}: read results as directional prior-model predictions, not measurements. The after-onset and within-block figures were chosen after seeing these data, the model has had two changes informed by them (2.1.0's positive-only weights and 2.6.0's event-boundary and semantic-axis origins), and word rate alone is at or above the model on every measure. Drive features (how much there is to see, hear or understand) are scaled from their value with no stimulus, so 0 on a network is rest and an absent stream, silence or a uniform frame reads as no drive; the other features are centred on the reference corpus below, and every feature's spread comes from that corpus. Since 2.8.0: the response is read in stimulus time from its peak to its first zero crossing, so a sound that stops decays to rest instead of dipping below it; Ventral Attention follows abrupt events (cuts, brightness jumps, acoustic onsets and loudness jumps, by the Neurosynth salience profile) where it had no input; no sound or word drives Visual; a face counts only when the next or previous sampled frame shows it too; and the speech stage hears the loudness-normalised track. Since 2.9.0: the transcript's pressure (urgency, scarcity, social proof, calls to act now), its evidence (specifics, comparisons, caveats) and its product content are three semantic axes grounded in the Neurosynth fear, decision-making and reward profiles (before, one imperative axis read a call to action as deliberation); foci more than 10 mm from every cortical parcel centre (amygdala, striatum, thalamus) count toward no network; and the reference corpus holds a lecture, LibriVox readings and a face close-up, with hold music under 15 % of its seconds. Since 2.11.0: each focus takes the network of the nearest vertex of the HCP midthickness cortical surface within 5 mm, so foci nearest the medial wall (amygdala, hippocampus, thalamus, caudate, ventral striatum) count toward no network; memory now weighs Default Mode more and Limbic less, and deliberation weighs Limbic (orbitofrontal valuation). A known-groups battery of scripted clips checks that the lenses order hard sells, product facts, neutral and emotional speech as their names say; its results, failures included, are in the model card.",
        e.zero_shot_mean_r,
        e.loudness_only_mean_r,
        e.zero_shot_after_onset_mean_r,
        e.loudness_only_after_onset_mean_r,
        e.word_rate_only_after_onset_mean_r,
        e.zero_shot_within_block_mean_r,
        e.loudness_only_within_block_mean_r,
        e.word_rate_only_within_block_mean_r,
    )
}

/// Default sampling of v2: v1's, with the causal hop grid.
#[must_use]
pub fn default_sampling_v2() -> Sampling {
    Sampling {
        hop_offset: 3,
        normalise_dbfs: Some(v2::NORMALISED_DBFS as f32),
        active_picture: true,
        faces: Some(FaceSampling {
            cascade: "opencv-haarcascades/haarcascade_frontalface_default.xml".into(),
            cascade_sha256:
                "sha256:0f7d4527844eb514d4a4948e822da90fbb16a34a0bbbbc6adc6498747a5aafb0".into(),
            width: 320,
            height: 180,
            every: 5,
            min_face: 0.2,
            scale_factor: 1.1,
            min_neighbours: 3,
        }),
        motion_energy: true,
        levels: true,
        face_area_of_frame: true,
        ..default_sampling()
    }
}

/// Builds the v2 prior model from corpus statistics and the semantic axis directions.
#[must_use]
pub fn build_v2(
    version: &str,
    corpus_mean: &[f32],
    std: Vec<f32>,
    axes: SemanticAxes,
    embedder: &str,
    corpus: serde_json::Value,
    profiles: &ProfileTable,
) -> Model {
    let (weights, notes) = grounded_weights(profiles);
    let centre = v2::centres(corpus_mean);
    let summary = v2_summary();
    let mut provenance = prior_provenance(&summary, corpus);
    provenance.insert(
        "evaluation".to_owned(),
        serde_json::json!(super::shipped_evaluation::SHIPPED_EVALUATION),
    );
    provenance.insert(
        "profiles".to_owned(),
        serde_json::json!({
            "table": "models/qualia/v2/grounding/network-profiles.json",
            "method": profiles.method,
            "inputs": profiles.inputs,
            "licence": profiles.licence,
            "attribution": profiles.attribution,
        }),
    );
    let taps = 32;
    let manifest = Manifest {
        name: "qualia".into(),
        version: version.into(),
        format: 2,
        networks: NETWORKS.iter().map(|s| (*s).to_owned()).collect(),
        features: feature_specs(&v2::FEATURES),
        sampling: default_sampling_v2(),
        response: ResponseSpec {
            kind: "spm-double-gamma (peak 6 s, undershoot 16 s, ratio 1/6), unit sum; stimulus time uses the taps from the peak (lag) to the first zero crossing (no undershoot), BOLD time all taps".into(),
            taps,
            lag_seconds: 5,
            stimulus_until_zero: true,
        },
        provenance,
        weights: notes,
        semantic: Some(SemanticSpec {
            embedder: embedder.into(),
            axes: AXES
                .iter()
                .map(|a| AxisSpec {
                    name: a.name.into(),
                    meaning: a.meaning.into(),
                    anchors: a.anchors.iter().map(|s| (*s).to_owned()).collect(),
                })
                .collect(),
            neutral: NEUTRAL.iter().map(|s| (*s).to_owned()).collect(),
        }),
        checksum: String::new(),
    };
    Model {
        features: v2::FEATURES.iter().map(|f| f.0.to_owned()).collect(),
        modality: v2::FEATURES.iter().map(|f| f.1).collect(),
        absent: centre.clone(),
        mean: centre,
        std,
        weights,
        bias: vec![0.0; NETWORK_COUNT],
        stimulus_end: super::model::stimulus_end(
            &features::canonical_hrf(taps),
            &manifest.response,
        ),
        hrf: features::canonical_hrf(taps),
        lag: 5,
        axes,
        manifest,
    }
}

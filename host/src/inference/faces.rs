//! qualia v2.2's face features: how much of each second shows a face, and how large.
//!
//! Faces drive the fusiform face area (Visual in Yeo-7) and the amygdala and anterior temporal
//! cortex (Limbic), which the Neurosynth `faces` profile shows and no low-level feature sees.
//! The detector is OpenCV's trained frontal-face Haar cascade, run by our own implementation
//! ([`brainscan_faces`]) on a larger copy of every `every`-th frame from the same decode (the
//! model's 160 x 90 frames are too small: a talking head was found in 14 of 40 frames at that
//! size, 27 of 40 at 320 x 180). Faces smaller than `min_face` of the frame height are not
//! looked for: they cost most of the scan time and, at this size, are mostly false hits (on the
//! street clip of the test media, 5 of 9 frames with a "face" had only such small ones).

use std::path::Path;

use anyhow::Context;
use brainscan_faces::{Cascade, DeviceCascade, Face, Options};

use super::features::Rect;
use super::gpu::GpuContext;
use super::model::FaceSampling;

/// The per-second face features, in the order `v2::FEATURES` lists them.
pub const FACE_FEATURES: usize = 2;

/// A loaded cascade with the model's sampling, searched on the CPU or on the qualia device.
#[derive(Debug)]
pub struct FaceDetector {
    cascade: Cascade,
    pub sampling: FaceSampling,
    /// The cascade on the qualia device and the adapter's name, when the search runs there
    /// ([`faces_on_device`]). It finds exactly the CPU's faces (`host/faces/tests/device.rs`).
    device: Option<(DeviceCascade, String)>,
}

/// Chooses where the face search runs, once at start-up, from `BRAINSCAN_FACES_ON` (`device`,
/// `cpu` or `auto`; see [`crate::placement`]). On a CPU adapter `auto` keeps the CPU: the
/// face bench measures the kernel 7 times slower there (docs/performance.md).
///
/// # Errors
/// A setting other than `device`, `cpu` or `auto`.
pub fn faces_on_device(adapter: &wgpu::AdapterInfo) -> anyhow::Result<bool> {
    crate::placement::from_env("BRAINSCAN_FACES_ON", adapter)
}

impl FaceDetector {
    /// Loads the cascade a model names from the models folder and checks it is the one the
    /// model was built with.
    ///
    /// # Errors
    /// The file is missing, differs from the model's checksum, or is not a cascade.
    pub fn load(models_dir: &Path, sampling: &FaceSampling) -> anyhow::Result<Self> {
        let path = models_dir.join(&sampling.cascade);
        let hint = "run scripts/fetch-models, or pass --models-dir";
        let meta = std::fs::metadata(&path)
            .with_context(|| format!("the face detector's cascade {} ({hint})", path.display()))?;
        anyhow::ensure!(
            meta.len() <= brainscan_faces::MAX_FILE_BYTES as u64,
            "{} is larger than a cascade ({} bytes)",
            path.display(),
            meta.len()
        );
        let bytes = std::fs::read(&path)?;
        let found = super::model::checksum(&bytes);
        anyhow::ensure!(
            found == sampling.cascade_sha256,
            "{} has sha256 {found}, the model was built with {} ({hint})",
            path.display(),
            sampling.cascade_sha256
        );
        let text = String::from_utf8(bytes).context("the cascade is not UTF-8 text")?;
        let cascade = Cascade::parse(&text).with_context(|| path.display().to_string())?;
        Ok(Self {
            cascade,
            sampling: sampling.clone(),
            device: None,
        })
    }

    /// This detector with its search on `gpu`'s device.
    ///
    /// # Errors
    /// The device refused the kernel or the cascade's buffers.
    pub fn on_device(mut self, gpu: &GpuContext) -> anyhow::Result<Self> {
        let on = DeviceCascade::new(gpu.device().clone(), gpu.queue().clone(), &self.cascade)?;
        self.device = Some((on, gpu.adapter_info.name.clone()));
        Ok(self)
    }

    /// Where the search runs: the adapter's name, or `cpu`.
    #[must_use]
    pub fn computed_on(&self) -> &str {
        self.device
            .as_ref()
            .map_or("cpu", |(_, name)| name.as_str())
    }

    /// The detector's settings for the model's sampling.
    fn options(&self) -> Options {
        let h = self.sampling.height;
        Options {
            scale_factor: f64::from(self.sampling.scale_factor),
            min_neighbours: self.sampling.min_neighbours as usize,
            min_size: (self.sampling.min_face * h as f32).round() as u32,
            step: None,
        }
    }

    /// The detail frame size `(width, height)` the decoder should deliver.
    #[must_use]
    pub fn detail(&self) -> (u32, u32) {
        (self.sampling.width, self.sampling.height)
    }

    /// Whether frame `index` (0-based, at the model's frame rate) is one the detector reads.
    #[must_use]
    pub fn samples(&self, index: usize) -> bool {
        index.is_multiple_of(self.sampling.every.max(1) as usize)
    }

    /// The faces on one detail frame (its [`luma`]), in detail pixels, searched on the CPU.
    #[must_use]
    pub fn faces(&self, luma: &[u8]) -> Vec<Face> {
        let (w, h) = self.detail();
        brainscan_faces::detect(&self.cascade, luma, w as usize, h as usize, &self.options())
    }

    /// The faces on each `(index, luma)` detail frame: on the device in one dispatch when the
    /// search runs there, else on the CPU with the frames spread over the cores. A device
    /// failure searches the batch on the CPU, which finds the same faces.
    #[must_use]
    pub fn faces_of(&self, frames: &[(usize, Vec<u8>)]) -> Vec<(usize, Vec<Face>)> {
        use rayon::prelude::*;
        if let Some((on, _)) = &self.device {
            let (w, h) = self.detail();
            let lumas: Vec<&[u8]> = frames.iter().map(|(_, l)| l.as_slice()).collect();
            match on.detect_many(&lumas, w as usize, h as usize, &self.options()) {
                Ok(found) => {
                    return frames.iter().map(|(i, _)| *i).zip(found).collect();
                }
                Err(e) => tracing::warn!("face search on the CPU for this batch: {e}"),
            }
        }
        frames
            .par_iter()
            .map(|(i, luma)| (*i, self.faces(luma)))
            .collect()
    }

    /// The share of the active picture (`rect`, in the model's frame geometry, `model_size`)
    /// that `faces` (from [`FaceDetector::faces`]) cover, 0 without a face.
    #[must_use]
    pub fn coverage(&self, faces: &[Face], rect: Rect, model_size: (u32, u32)) -> f32 {
        let (w, h) = self.detail();
        let (sx, sy) = (
            f64::from(w) / f64::from(model_size.0),
            f64::from(h) / f64::from(model_size.1),
        );
        let area = (f64::from(rect.width()) * sx * f64::from(rect.height()) * sy) as u64;
        brainscan_faces::coverage(faces, area) as f32
    }
}

/// Whether two detections, on neighbouring sampled frames, are the same face: centres closer
/// than half the larger face's width and widths within a factor of 1.5. A head that turns or
/// moves for half a second stays inside that; a pattern's hit does not follow it around.
fn same_face(a: &Face, b: &Face) -> bool {
    let centre = |f: &Face| {
        (
            f64::from(f.x) + f64::from(f.w) / 2.0,
            f64::from(f.y) + f64::from(f.h) / 2.0,
        )
    };
    let ((ax, ay), (bx, by)) = (centre(a), centre(b));
    let (wa, wb) = (f64::from(a.w), f64::from(b.w));
    let distance = ((ax - bx).powi(2) + (ay - by).powi(2)).sqrt();
    distance <= wa.max(wb) / 2.0 && wa.max(wb) <= 1.5 * wa.min(wb)
}

/// The verification stage (qualia 2.8.0): of each sampled frame's detections, only those that
/// the sampled frame before or after (`every` frames away) confirms with [`same_face`]. A
/// person on screen stays for longer than half a second; the cascade's false hits on test
/// patterns, textures and text flicker from frame to frame (see the model card for the
/// labelled set and the precision and recall this buys). Frames are `(index, faces)` in any
/// order; a face seen only once, at a cut, is not counted.
#[must_use]
pub fn confirmed(frames: &[(usize, Vec<Face>)], every: usize) -> Vec<(usize, Vec<Face>)> {
    let every = every.max(1);
    let at: std::collections::HashMap<usize, &Vec<Face>> =
        frames.iter().map(|(i, f)| (*i, f)).collect();
    let mut out: Vec<(usize, Vec<Face>)> = frames
        .iter()
        .map(|(i, faces)| {
            let neighbours: Vec<&Face> = [i.checked_sub(every), Some(i + every)]
                .into_iter()
                .flatten()
                .filter_map(|j| at.get(&j))
                .flat_map(|f| f.iter())
                .collect();
            let kept = faces
                .iter()
                .filter(|f| neighbours.iter().any(|n| same_face(f, n)))
                .copied()
                .collect();
            (*i, kept)
        })
        .collect();
    out.sort_by_key(|(i, _)| *i);
    out
}

/// The detector a model's sampling needs, loaded from the models folder; `None` for models
/// without face features.
/// With `device`, the search runs on that context's device (see [`faces_on_device`]).
///
/// # Errors
/// As [`FaceDetector::load`], and a device that refuses the kernel.
pub fn load_for(
    sampling: &super::model::Sampling,
    models_dir: &Path,
    device: Option<&GpuContext>,
) -> anyhow::Result<Option<std::sync::Arc<FaceDetector>>> {
    sampling
        .faces
        .as_ref()
        .map(|s| {
            let detector = FaceDetector::load(models_dir, s)?;
            let detector = match device {
                Some(gpu) => detector.on_device(gpu)?,
                None => detector,
            };
            Ok(std::sync::Arc::new(detector))
        })
        .transpose()
}

/// Rec. 601 luma of an RGB24 frame, in integers (as the visual kernel bins it).
#[must_use]
pub fn luma(rgb: &[u8]) -> Vec<u8> {
    rgb.chunks_exact(3)
        .map(|p| {
            ((299 * u32::from(p[0]) + 587 * u32::from(p[1]) + 114 * u32::from(p[2]) + 500) / 1000)
                as u8
        })
        .collect()
}

/// Per-second `[face_presence, face_area]` from the sampled frames `(index, coverage)`:
/// presence is the share of the second's sampled frames with a face, area their mean
/// coverage. A second without a sampled frame (the last, partial second of a clip) keeps the
/// value of the second before: no frame is no evidence that the face went away.
#[must_use]
pub fn per_second(samples: &[(usize, f32)], fps: u32, seconds: usize) -> Vec<[f32; FACE_FEATURES]> {
    let mut sums = vec![(0f32, 0f32, 0u32); seconds];
    for (index, cover) in samples {
        if let Some(s) = sums.get_mut(index / fps.max(1) as usize) {
            s.0 += f32::from(u8::from(*cover > 0.0));
            s.1 += cover;
            s.2 += 1;
        }
    }
    let mut last = [0.0; FACE_FEATURES];
    sums.iter()
        .map(|(present, cover, n)| {
            if *n > 0 {
                last = [present / *n as f32, cover / *n as f32];
            }
            last
        })
        .collect()
}

/// Turns the per-second `face_area` from a share of the active picture into a share of the
/// whole frame, the picture covering `picture_share` of it (v2.5, `face_area_of_frame`).
///
/// Why: a face's drive on face-selective cortex follows its size on the screen, and bars added
/// around a picture (a 9:16 clip pillarboxed into 16:9) do not change that size. As a share of
/// the active picture the same face read 3.2 times larger in the pillarboxed trailer.
pub fn as_share_of_frame(per_second: &mut [[f32; FACE_FEATURES]], picture_share: f32) {
    for second in per_second {
        second[1] *= picture_share.clamp(0.0, 1.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_pool_their_own_samples() {
        // 10 fps, every 5th frame: frames 0 and 5 are second 0, 10 and 15 second 1; second 2
        // has no sampled frame and holds second 1; frame 40 is past the clip.
        let s = per_second(
            &[(0, 0.2), (5, 0.0), (10, 0.1), (15, 0.3), (40, 0.5)],
            10,
            3,
        );
        assert_eq!(s, vec![[0.5, 0.1], [1.0, 0.2], [1.0, 0.2]]);
        assert_eq!(per_second(&[], 10, 2), vec![[0.0, 0.0]; 2]);
    }

    #[test]
    fn face_area_becomes_a_share_of_the_frame_and_presence_is_unchanged() {
        let mut s = vec![[1.0, 0.3], [0.5, 0.0]];
        as_share_of_frame(&mut s, 0.25);
        assert_eq!(s, vec![[1.0, 0.075], [0.5, 0.0]]);
    }

    #[test]
    fn luma_is_rec601() {
        assert_eq!(luma(&[255, 255, 255, 0, 0, 0, 255, 0, 0]), vec![255, 0, 76]);
    }

    fn face(x: u32, y: u32, w: u32) -> Face {
        Face {
            x,
            y,
            w,
            h: w,
            neighbours: 5,
        }
    }

    #[test]
    fn a_face_counts_only_when_a_neighbouring_sample_sees_it_too() {
        let frames = vec![
            (0, vec![face(100, 50, 60)]),
            // The same head moved a little and one flicker hit elsewhere.
            (5, vec![face(110, 55, 64), face(10, 10, 40)]),
            (10, vec![]),
            // Seen once, after a gap: a cut or a false hit.
            (15, vec![face(200, 60, 50)]),
            (20, vec![]),
        ];
        let kept = confirmed(&frames, 5);
        let count: Vec<usize> = kept.iter().map(|(_, f)| f.len()).collect();
        assert_eq!(count, vec![1, 1, 0, 0, 0]);
        assert_eq!(kept[1].1[0], face(110, 55, 64));
        // Twice the size is not the same face, nor is one half its width away.
        assert!(!same_face(&face(0, 0, 40), &face(0, 0, 80)));
        assert!(!same_face(&face(0, 0, 40), &face(41, 0, 40)));
        assert!(same_face(&face(0, 0, 40), &face(20, 0, 40)));
    }
}

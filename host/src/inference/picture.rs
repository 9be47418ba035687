//! The active picture of a clip: the decoded frame less its letterbox or pillarbox bars.
//!
//! A portrait clip letterboxed into a landscape frame, or a film with bars baked in, is the same
//! picture as the clip without bars; averaging the visual features over the bars would make
//! it read as a different, emptier one (measured on the Big Buck Bunny trailer cropped to 9:16
//! and pillarboxed: edges, motion and colourfulness fell to 0.34-0.49 of the original). v2
//! finds the bars once per clip from its keyframes, in the model's own frame geometry, so the
//! decoder's padding and baked-in bars are found the same way. Rows and columns that never rise
//! above [`BAR_LUMA`] on any keyframe are bars, as ffmpeg's `cropdetect` decides.
//!
//! **One decode.** The scan reads the keyframes beside its main decode, from the same ffmpeg
//! ([`VideoFrames::open_with_keyframes`]), into a [`Watch`]. The kernels need the picture
//! before the clip has been seen, so the first batch runs on the picture of the keyframes seen
//! by then; when the whole clip's picture turns out different (a dark opening, a title card),
//! the kernels are run again on the final one (`run.rs`). Either way the features are those of
//! the whole clip's picture, as when a separate keyframe pass ran first: [`active_picture`]
//! keeps that pass as the reference the tests compare with.
//!
//! The same pass reads the picture's **levels**: the spread of luma inside the active picture
//! between its 1st and 99th percentiles over the keyframes, the clip's black and white points.
//! v2.5 reads luminance contrast and edges relative to that range, as the visual system adapts
//! to a scene's black and white (light adaptation and contrast gain control): a brightness or
//! levels change of the whole clip, a different grade of the same picture, then leaves them
//! where they were (measured on 24 s of the trailer at `eq=brightness=-0.25`: contrast fell to
//! 0.77 and edges to 0.75 of the original as the dark end clipped).

use std::sync::{Arc, Mutex};

use super::features::Rect;
use crate::media::decode::{DecodeError, DecodeSpec, Keyframes, VideoFrames};

/// Luma (0-1) that a bar never exceeds: ffmpeg's `cropdetect` default, 24 of 255.
pub const BAR_LUMA: f64 = 24.0 / 255.0;
/// Keyframes read at most (a bound for clips that are all keyframes).
pub const MAX_KEYFRAMES: usize = 400;
/// The narrowest luma range (0-1) a picture's levels are read as: a nearly flat clip (fog, a
/// fade) is not stretched more than this allows, and a uniform field keeps contrast 0.
pub const MIN_LUMA_RANGE: f32 = 0.2;
/// The percentiles that bound the picture's levels (a few specular or noise pixels do not set
/// them).
const LEVEL_PERCENTILES: (f64, f64) = (0.01, 0.99);

/// The clip's picture in the model's frame: where it is, and its levels.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Picture {
    /// The active picture (bars excluded).
    pub rect: Rect,
    /// Luma between the 1st and 99th percentiles inside `rect` (0-1), at least
    /// [`MIN_LUMA_RANGE`].
    pub luma_range: f32,
}

impl Picture {
    /// The whole frame, with the full luma range: what a failed look at the keyframes leaves.
    #[must_use]
    pub fn full(width: u32, height: u32) -> Self {
        Self {
            rect: Rect::full(width, height),
            luma_range: 1.0,
        }
    }

    /// The share of the `width x height` frame that the active picture covers.
    #[must_use]
    pub fn share_of(&self, width: u32, height: u32) -> f32 {
        let frame = f64::from(width) * f64::from(height);
        (f64::from(self.rect.width()) * f64::from(self.rect.height()) / frame.max(1.0)) as f32
    }
}

/// The active picture of `path` in `spec`'s frame geometry and its levels; the whole frame
/// when nothing rises above the bar level (a black clip) or what does is smaller than the
/// feature grid. A decode of its own, of the keyframes only: the reference for the picture a
/// scan finds from its one decode (see [`Watch`]).
///
/// # Errors
/// Decoding errors.
pub async fn active_picture(
    path: &std::path::Path,
    spec: DecodeSpec,
) -> Result<Picture, DecodeError> {
    let mut frames = VideoFrames::open_keyframes(path, spec)?;
    let (w, h) = (spec.width as usize, spec.height as usize);
    let mut frame = vec![0u8; frames.frame_len()];
    let mut extent = Extent::new(w, h);
    let mut n = 0;
    while n < MAX_KEYFRAMES && frames.next_frame(&mut frame).await? {
        extent.add(&frame);
        n += 1;
    }
    if n < MAX_KEYFRAMES {
        frames.finish().await?;
    }
    let rect = extent.rect();
    Ok(Picture {
        rect,
        luma_range: extent.luma_range(rect),
    })
}

/// The picture of the keyframes read so far from a scan's own decode: a blocking thread drains
/// the keyframe pipe (it must be drained, or the decoder stalls) into an [`Extent`] that the
/// scan looks at between batches.
pub struct Watch {
    extent: Arc<Mutex<Extent>>,
    reader: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Watch {
    /// Starts draining `keyframes`, frames of `spec`'s geometry.
    #[must_use]
    pub fn start(mut keyframes: Keyframes, spec: DecodeSpec) -> Self {
        let extent = Arc::new(Mutex::new(Extent::new(
            spec.width as usize,
            spec.height as usize,
        )));
        let shared = extent.clone();
        let reader = tokio::task::spawn_blocking(move || {
            let mut frame = vec![0u8; keyframes.frame_len()];
            while keyframes.next_frame(&mut frame)? {
                shared
                    .lock()
                    .map_err(|_| std::io::Error::other("keyframe extent poisoned"))?
                    .add(&frame);
            }
            Ok(())
        });
        Self { extent, reader }
    }

    /// The active picture of the keyframes seen so far (the whole frame before any).
    #[must_use]
    pub fn rect_so_far(&self) -> Option<Rect> {
        self.extent.lock().ok().map(|e| e.rect())
    }

    /// [`Watch::rect_so_far`] once the keyframes have shown a picture at least the feature
    /// grid's size above the bar level; `None` before (a dark opening or a small title says
    /// nothing about where the picture is).
    #[must_use]
    pub fn lit_rect_so_far(&self) -> Option<Rect> {
        self.extent.lock().ok()?.lit_rect()
    }

    /// The clip's picture, once the decoder has ended; `None` when the keyframes could not be
    /// read to the end (the scan then reads the whole frame, as a failed keyframe pass did).
    pub async fn finish(self) -> Option<Picture> {
        match self.reader.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the keyframe stream broke; reading the whole frame");
                return None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "the keyframe reader failed; reading the whole frame");
                return None;
            }
        }
        let extent = self.extent.lock().ok()?;
        let rect = extent.rect();
        Some(Picture {
            rect,
            luma_range: extent.luma_range(rect),
        })
    }
}

/// The brightest luma seen per row and per column.
struct Extent {
    w: usize,
    h: usize,
    rows: Vec<f64>,
    cols: Vec<f64>,
    /// Each keyframe's 8-bit luma, kept for the levels (at most [`MAX_KEYFRAMES`] frames of the
    /// model's small geometry: 5.8 MB at 160 x 90).
    lumas: Vec<Vec<u8>>,
}

impl Extent {
    fn new(w: usize, h: usize) -> Self {
        Self {
            w,
            h,
            rows: vec![0.0; h],
            cols: vec![0.0; w],
            lumas: Vec::new(),
        }
    }

    fn add(&mut self, rgb: &[u8]) {
        self.lumas.push(super::faces::luma(rgb));
        for (i, px) in rgb.chunks_exact(3).enumerate() {
            let l =
                (0.299 * f64::from(px[0]) + 0.587 * f64::from(px[1]) + 0.114 * f64::from(px[2]))
                    / 255.0;
            let (x, y) = (i % self.w, i / self.w);
            self.rows[y] = self.rows[y].max(l);
            self.cols[x] = self.cols[x].max(l);
        }
    }

    /// The spread between the 1st and 99th luma percentiles of the pixels inside `rect` over
    /// every keyframe (0-1), at least [`MIN_LUMA_RANGE`]; the full range without keyframes.
    fn luma_range(&self, rect: Rect) -> f32 {
        let mut histogram = [0u64; 256];
        for luma in &self.lumas {
            for y in rect.y0 as usize..rect.y1 as usize {
                for x in rect.x0 as usize..rect.x1 as usize {
                    histogram[usize::from(luma[y * self.w + x])] += 1;
                }
            }
        }
        let total: u64 = histogram.iter().sum();
        if total == 0 {
            return 1.0;
        }
        let level = |q: f64| {
            let rank = (q * total as f64).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (v, count) in histogram.iter().enumerate() {
                seen += count;
                if seen >= rank {
                    return v as f32;
                }
            }
            255.0
        };
        ((level(LEVEL_PERCENTILES.1) - level(LEVEL_PERCENTILES.0)) / 255.0).max(MIN_LUMA_RANGE)
    }

    /// The lit part of the keyframes when it is a picture the features can be read over
    /// (at least the feature grid); `None` when nothing is lit or too little (a small title).
    fn lit_rect(&self) -> Option<Rect> {
        let span = |v: &[f64]| {
            let first = v.iter().position(|l| *l > BAR_LUMA)?;
            let last = v.iter().rposition(|l| *l > BAR_LUMA)?;
            Some((first as u32, last as u32 + 1))
        };
        let (x0, x1) = span(&self.cols)?;
        let (y0, y1) = span(&self.rows)?;
        let r = Rect { x0, y0, x1, y1 };
        r.is_valid_in(self.w as u32, self.h as u32).then_some(r)
    }

    fn rect(&self) -> Rect {
        self.lit_rect()
            .unwrap_or_else(|| Rect::full(self.w as u32, self.h as u32))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(w: usize, h: usize, lit: impl Fn(usize, usize) -> bool) -> Vec<u8> {
        let mut f = vec![0u8; w * h * 3];
        for y in 0..h {
            for x in 0..w {
                if lit(x, y) {
                    f[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&[200, 180, 90]);
                }
            }
        }
        f
    }

    #[test]
    fn bars_are_left_out_and_a_black_clip_keeps_the_frame() {
        let (w, h) = (160, 90);
        let mut e = Extent::new(w, h);
        // Pillarboxed picture, columns 54..106, dark at the top on one frame only.
        e.add(&frame(w, h, |x, y| (54..106).contains(&x) && y >= 10));
        e.add(&frame(w, h, |x, _| (54..106).contains(&x)));
        assert_eq!(
            e.rect(),
            Rect {
                x0: 54,
                y0: 0,
                x1: 106,
                y1: 90
            }
        );
        assert_eq!(Extent::new(w, h).rect(), Rect::full(160, 90));
        // Too narrow for the grid: the whole frame.
        let mut thin = Extent::new(w, h);
        thin.add(&frame(w, h, |x, _| (70..80).contains(&x)));
        assert_eq!(thin.rect(), Rect::full(160, 90));
    }

    #[test]
    fn levels_are_read_inside_the_picture_and_move_with_a_brightness_offset_only_by_clipping() {
        // A horizontal luma ramp 40..=198 in the picture (columns 40..120), black bars around.
        let (w, h) = (160, 90);
        let ramp = |offset: i32| {
            let mut f = vec![0u8; w * h * 3];
            for y in 0..h {
                for x in 40..120 {
                    let v = (40 + (x - 40) * 2) as i32 + offset;
                    let v = v.clamp(0, 255) as u8;
                    f[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&[v, v, v]);
                }
            }
            f
        };
        let picture = Rect {
            x0: 40,
            y0: 0,
            x1: 120,
            y1: 90,
        };
        let range = |offset| {
            let mut e = Extent::new(w, h);
            e.add(&ramp(offset));
            e.luma_range(picture)
        };
        // 1st to 99th percentile of 40..=198: 158 levels; the bars are not counted.
        let base = range(0);
        assert!((base - 158.0 / 255.0).abs() < 1e-6, "{base}");
        // Shifted down by 30: the same spread (nothing clips), so contrast over it is unchanged.
        assert!((range(-30) - base).abs() < 1e-6);
        // Shifted down by 100: the dark third clips to black and the range shrinks with it,
        // as the contrast and edges measured on the clipped picture do.
        let clipped = range(-100);
        assert!(
            clipped < base * 0.7 && clipped > base * 0.5,
            "{clipped} vs {base}"
        );
        // A flat grey field reads the floor, not 0.
        let mut grey = Extent::new(w, h);
        grey.add(&vec![128u8; w * h * 3]);
        assert_eq!(grey.luma_range(grey.rect()), MIN_LUMA_RANGE);
    }
}

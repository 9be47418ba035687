//! The active picture of a clip: the decoded frame less its letterbox or pillarbox bars.
//!
//! A portrait clip letterboxed into a landscape frame, or a film with bars baked in, is the same
//! picture as the clip without bars; averaging the visual features over the bars would make
//! it read as a different, emptier one (measured on the Big Buck Bunny trailer cropped to 9:16
//! and pillarboxed: edges, motion and colourfulness fell to 0.34-0.49 of the original). v2
//! finds the bars once per clip, before the scan, from the keyframes only (cheap: no predicted
//! frame is decoded), in the model's own frame geometry, so the decoder's padding and baked-in
//! bars are found the same way. Rows and columns that never rise above [`BAR_LUMA`] on any
//! keyframe are bars, as ffmpeg's `cropdetect` decides.

use super::features::Rect;
use crate::media::decode::{DecodeError, DecodeSpec, VideoFrames};

/// Luma (0-1) that a bar never exceeds: ffmpeg's `cropdetect` default, 24 of 255.
pub const BAR_LUMA: f64 = 24.0 / 255.0;
/// Keyframes read at most (a bound for clips that are all keyframes).
pub const MAX_KEYFRAMES: usize = 400;

/// The active picture of `path` in `spec`'s frame geometry; the whole frame when nothing rises
/// above the bar level (a black clip) or what does is smaller than the feature grid.
///
/// # Errors
/// Decoding errors.
pub async fn active_rect(path: &std::path::Path, spec: DecodeSpec) -> Result<Rect, DecodeError> {
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
    Ok(extent.rect())
}

/// The brightest luma seen per row and per column.
struct Extent {
    w: usize,
    h: usize,
    rows: Vec<f64>,
    cols: Vec<f64>,
}

impl Extent {
    fn new(w: usize, h: usize) -> Self {
        Self {
            w,
            h,
            rows: vec![0.0; h],
            cols: vec![0.0; w],
        }
    }

    fn add(&mut self, rgb: &[u8]) {
        for (i, px) in rgb.chunks_exact(3).enumerate() {
            let l =
                (0.299 * f64::from(px[0]) + 0.587 * f64::from(px[1]) + 0.114 * f64::from(px[2]))
                    / 255.0;
            let (x, y) = (i % self.w, i / self.w);
            self.rows[y] = self.rows[y].max(l);
            self.cols[x] = self.cols[x].max(l);
        }
    }

    fn rect(&self) -> Rect {
        let span = |v: &[f64]| {
            let first = v.iter().position(|l| *l > BAR_LUMA)?;
            let last = v.iter().rposition(|l| *l > BAR_LUMA)?;
            Some((first as u32, last as u32 + 1))
        };
        let (w, h) = (self.w as u32, self.h as u32);
        match (span(&self.cols), span(&self.rows)) {
            (Some((x0, x1)), Some((y0, y1))) => {
                let r = Rect { x0, y0, x1, y1 };
                if r.is_valid_in(w, h) {
                    r
                } else {
                    Rect::full(w, h)
                }
            }
            _ => Rect::full(w, h),
        }
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
}

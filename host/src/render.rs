//! The fMRI-style rendering: a carpet plot of the seven networks over the clip.
//!
//! A carpet plot (Power 2017) is how fMRI researchers look at a whole run at once: one row
//! per brain region, one column per time point, colour for the signal. Here the rows are the
//! seven Yeo networks in [`NETWORKS`] order (top to bottom) and the columns are seconds.
//! Each row is z-scored over the clip and drawn with the usual statistical-map colours:
//! above the clip's mean runs black → red → yellow, below it black → blue → cyan, and
//! |z| < 0.5 stays dark grey, as sub-threshold voxels do. The row order, the colour scale and
//! the scan id are written into the PNG's text chunks so the file explains itself.

pub mod cortex;
pub mod gpu_frames;
pub use crate::cortex_surface as surface;
pub mod timing;
pub mod video;

use crate::result::{NETWORKS, StoredSecond};

/// Height of one network's row, pixels.
const ROW: u32 = 24;
/// Gap between rows, pixels.
const GAP: u32 = 2;
/// |z| below which a cell is drawn as sub-threshold.
const THRESHOLD: f64 = 0.5;
/// z at which the colour scale saturates.
const SATURATE: f64 = 3.0;
/// Width of the whole image is at most this many pixels (180 s × 8 px).
const MAX_WIDTH: u32 = 1440;

/// Colour of a z value.
pub fn colour(z: f64) -> [u8; 3] {
    if !z.is_finite() || z.abs() < THRESHOLD {
        return [40, 40, 40];
    }
    let t = ((z.abs() - THRESHOLD) / (SATURATE - THRESHOLD)).clamp(0.0, 1.0);
    // First half ramps the primary channel, second half adds the secondary one.
    let primary = (96.0 + 159.0 * (t * 2.0).min(1.0)).round() as u8;
    let secondary = (255.0 * (t * 2.0 - 1.0).max(0.0)).round() as u8;
    if z > 0.0 {
        [primary, secondary, 0]
    } else {
        [0, secondary, primary]
    }
}

/// Per-network z-scores over the clip, `[second][network]`. A flat network is all zeros.
fn zscores(timeline: &[StoredSecond]) -> Vec<[f64; 7]> {
    let n = timeline.len().max(1) as f64;
    let mut mean = [0.0; 7];
    for s in timeline {
        for (m, v) in mean.iter_mut().zip(s.raw) {
            *m += v / n;
        }
    }
    let mut sd = [0.0; 7];
    for s in timeline {
        for k in 0..7 {
            sd[k] += (s.raw[k] - mean[k]).powi(2) / n;
        }
    }
    let sd = sd.map(f64::sqrt);
    timeline
        .iter()
        .map(|s| {
            std::array::from_fn(|k| {
                if sd[k] > 1e-12 {
                    (s.raw[k] - mean[k]) / sd[k]
                } else {
                    0.0
                }
            })
        })
        .collect()
}

/// Pixels per second for a clip of `seconds`: wide cells for short clips, 8 px at 180 s.
pub fn cell_width(seconds: usize) -> u32 {
    (MAX_WIDTH / seconds.max(1) as u32).clamp(1, 48)
}

/// The carpet plot of `timeline` as PNG bytes.
///
/// # Errors
/// Only if the encoder fails (it writes to memory, so in practice never).
pub fn carpet_png(scan_id: &str, timeline: &[StoredSecond]) -> Result<Vec<u8>, png::EncodingError> {
    let cell = cell_width(timeline.len());
    let width = cell * timeline.len().max(1) as u32;
    let height = ROW * 7 + GAP * 6;
    let mut pixels = vec![0u8; (width * height * 3) as usize];
    for (t, z) in zscores(timeline).iter().enumerate() {
        for (k, &zk) in z.iter().enumerate() {
            let rgb = colour(zk);
            let top = k as u32 * (ROW + GAP);
            for y in top..top + ROW {
                for x in t as u32 * cell..(t as u32 + 1) * cell {
                    let at = ((y * width + x) * 3) as usize;
                    pixels[at..at + 3].copy_from_slice(&rgb);
                }
            }
        }
    }
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.add_text_chunk("Title".into(), format!("brainscan carpet plot, {scan_id}"))?;
        encoder.add_text_chunk(
            "Description".into(),
            format!(
                "Rows top to bottom: {}. One column of {cell} px per second ({} s). Colour: each network's z-score over the clip; black-red-yellow above its mean, black-blue-cyan below, dark grey for |z| < {THRESHOLD}; saturates at |z| = {SATURATE}. Model predictions of an average viewer, not a measurement.",
                NETWORKS.join(", "),
                timeline.len()
            ),
        )?;
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&pixels)?;
        writer.finish()?;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(i: u32, raw: [f64; 7]) -> StoredSecond {
        StoredSecond {
            second: i,
            scores: Default::default(),
            benchmark: Default::default(),
            reasons: Default::default(),
            raw,
        }
    }

    fn decode(bytes: &[u8]) -> (png::OutputInfo, Vec<u8>, Vec<(String, String)>) {
        let mut reader = png::Decoder::new(std::io::Cursor::new(bytes))
            .read_info()
            .expect("png header");
        let mut buf = vec![0; reader.output_buffer_size().expect("size")];
        let info = reader.next_frame(&mut buf).expect("frame");
        let text = reader
            .info()
            .uncompressed_latin1_text
            .iter()
            .map(|t| (t.keyword.clone(), t.text.clone()))
            .collect();
        (info, buf, text)
    }

    #[test]
    fn colours_follow_the_stat_map_convention() {
        assert_eq!(colour(0.2), [40, 40, 40]);
        assert_eq!(colour(-0.4), [40, 40, 40]);
        assert_eq!(colour(3.0), [255, 255, 0], "saturated positive is yellow");
        assert_eq!(colour(-3.0), [0, 255, 255], "saturated negative is cyan");
        let mid = colour(1.75);
        assert_eq!(mid, [255, 0, 0], "half way is pure red");
        assert_eq!(colour(-1.75), [0, 0, 255]);
        assert_eq!(colour(f64::NAN), [40, 40, 40]);
    }

    #[test]
    fn the_peak_second_of_a_network_is_hot_and_its_trough_cold() {
        // Network 2 (Dorsal Attention) peaks at second 3 and dips at second 7; the rest flat.
        let timeline: Vec<_> = (0..10)
            .map(|i| {
                let mut raw = [0.5; 7];
                raw[2] = match i {
                    3 => 0.9,
                    7 => 0.1,
                    _ => 0.5,
                };
                second(i, raw)
            })
            .collect();
        let bytes = carpet_png("sc_run_test", &timeline).expect("png");
        let (info, pixels, text) = decode(&bytes);
        let cell = cell_width(10);
        assert_eq!(info.width, cell * 10);
        assert_eq!(info.height, ROW * 7 + GAP * 6);
        let at = |second: u32, row: u32| {
            let x = second * cell + cell / 2;
            let y = row * (ROW + GAP) + ROW / 2;
            let i = ((y * info.width + x) * 3) as usize;
            [pixels[i], pixels[i + 1], pixels[i + 2]]
        };
        // z at the peak: (0.9-0.5)/sd with sd = sqrt((0.16+0.16)/10) ≈ 0.179 → 2.24.
        let peak = at(3, 2);
        assert!(peak[0] == 255 && peak[1] > 50 && peak[2] == 0, "{peak:?}");
        let trough = at(7, 2);
        assert!(
            trough[2] == 255 && trough[1] > 50 && trough[0] == 0,
            "{trough:?}"
        );
        assert_eq!(
            at(5, 2),
            [40, 40, 40],
            "an ordinary second is sub-threshold"
        );
        assert_eq!(at(3, 0), [40, 40, 40], "a flat network stays grey");
        let description = &text
            .iter()
            .find(|(k, _)| k == "Description")
            .expect("text")
            .1;
        assert!(description.contains("Dorsal Attention"), "{description}");
        assert!(text.iter().any(|(_, v)| v.contains("sc_run_test")));
    }

    #[test]
    fn a_three_minute_clip_fits_the_width_cap() {
        let timeline: Vec<_> = (0..180).map(|i| second(i, [f64::from(i); 7])).collect();
        let (info, _, _) = decode(&carpet_png("x", &timeline).expect("png"));
        assert_eq!(info.width, 1440);
    }
}

//! Programme loudness of a track, and the gain that brings it to a target.
//!
//! One measurement serves every reader of a clip's sound: the model's audio kernels and the
//! speech stage (voice gate and Whisper) both hear the track at the same normalised level, so
//! playback gain changes neither the features nor the transcript (qualia 2.8.0; before, the
//! speech stage read the raw track and −20 dB moved Whisper's segmentation).

/// Loudness below this (dBFS of mean energy) is treated as silence (BS.1770's absolute gate).
pub const FLOOR_DBFS: f64 = -70.0;
/// The gated loudness v2 scales every clip's audio to before the kernels (EBU R128's -23).
pub const NORMALISED_DBFS: f64 = -23.0;
/// Largest gain the normalisation applies either way: quieter tracks are left a little quiet
/// rather than lifting their noise floor by more.
pub const MAX_GAIN_DB: f64 = 40.0;

/// The linear gain that brings a clip of `loudness` dBFS to [`NORMALISED_DBFS`]: 1 when the
/// clip has no audible sound, at most [`MAX_GAIN_DB`] either way.
#[must_use]
pub fn normalising_gain(loudness: Option<f64>, target: f64) -> f32 {
    loudness.map_or(1.0, |l| {
        10f64.powf((target - l).clamp(-MAX_GAIN_DB, MAX_GAIN_DB) / 20.0) as f32
    })
}

/// Gated loudness over seconds, after ITU-R BS.1770: seconds below [`FLOOR_DBFS`] are left
/// out (absolute gate), then seconds more than 10 dB below the mean of the rest (relative
/// gate). `None` when no second passes the absolute gate.
#[must_use]
pub fn gated_loudness(per_second: &[f64]) -> Option<f64> {
    let energy = |v: &[f64]| -> Option<f64> {
        (!v.is_empty()).then(|| {
            10.0 * (v.iter().map(|d| 10f64.powf(d / 10.0)).sum::<f64>() / v.len() as f64).log10()
        })
    };
    let loud: Vec<f64> = per_second
        .iter()
        .copied()
        .filter(|d| *d > FLOOR_DBFS)
        .collect();
    let ungated = energy(&loud)?;
    let kept: Vec<f64> = loud.into_iter().filter(|d| *d > ungated - 10.0).collect();
    energy(&kept)
}

/// Sums sample energy into whole seconds as blocks arrive, so a stream is measured without
/// holding it (the last partial second counts when it holds at least a quarter second).
#[derive(Debug, Clone)]
pub struct Meter {
    rate: usize,
    energy: f64,
    in_second: usize,
    seconds: Vec<f64>,
}

impl Meter {
    #[must_use]
    pub fn new(rate: usize) -> Self {
        Self {
            rate: rate.max(1),
            energy: 0.0,
            in_second: 0,
            seconds: Vec::new(),
        }
    }

    pub fn add(&mut self, samples: &[f32]) {
        for v in samples {
            self.energy += f64::from(*v) * f64::from(*v);
            self.in_second += 1;
            if self.in_second == self.rate {
                self.seconds
                    .push(10.0 * (self.energy / self.rate as f64).max(1e-30).log10());
                (self.energy, self.in_second) = (0.0, 0);
            }
        }
    }

    /// dBFS of the mean energy of each second so far.
    #[must_use]
    pub fn seconds(&self) -> Vec<f64> {
        let mut out = self.seconds.clone();
        if self.in_second > self.rate / 4 {
            out.push(10.0 * (self.energy / self.in_second as f64).max(1e-30).log10());
        }
        out
    }
}

/// Scales `samples` in place to `target` dBFS of gated loudness (see [`normalising_gain`]) and
/// returns the loudness as it was, `None` for a track with no audible second (left as it is).
pub fn normalise(samples: &mut [f32], rate: usize, target: f64) -> Option<f64> {
    let mut meter = Meter::new(rate);
    meter.add(samples);
    let loudness = gated_loudness(&meter.seconds());
    let gain = normalising_gain(loudness, target);
    if gain != 1.0 {
        for v in samples.iter_mut() {
            *v = (*v * gain).clamp(-1.0, 1.0);
        }
    }
    loudness
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_track_is_brought_to_the_target_and_silence_is_left_alone() {
        let rate = 16_000;
        let tone = |amp: f32| -> Vec<f32> {
            (0..rate * 3)
                .map(|i| amp * (i as f32 * 440.0 * std::f32::consts::TAU / rate as f32).sin())
                .collect()
        };
        let (mut loud, mut quiet) = (tone(0.5), tone(0.05));
        normalise(&mut loud, rate, NORMALISED_DBFS);
        let before = normalise(&mut quiet, rate, NORMALISED_DBFS).expect("audible");
        assert!((before - (-29.0)).abs() < 0.2, "{before}");
        for (a, b) in loud.iter().zip(&quiet) {
            assert!((a - b).abs() < 1e-4);
        }
        let mut silence = vec![0f32; rate];
        assert_eq!(normalise(&mut silence, rate, NORMALISED_DBFS), None);
        assert!(silence.iter().all(|v| *v == 0.0));
    }
}

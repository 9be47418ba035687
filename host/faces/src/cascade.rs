//! A trained boosted Haar cascade, read from OpenCV's XML format (the `opencv-cascade-classifier`
//! layout that `cv2/data/haarcascade_*.xml` use).
//!
//! The file is untrusted input like any model file: its size, its stage, classifier and feature
//! counts, its window size and every rectangle are bounded, and every feature index is checked,
//! so a malformed or hostile file fails to load with a message rather than misbehaving at scan
//! time. Only what the frontal-face cascades use is accepted: boosted stumps (one split per weak
//! classifier) over upright Haar features; tilted features and deeper trees are refused by name.

use quick_xml::Reader;
use quick_xml::events::Event;

/// Largest cascade file read (the frontal-face cascades are 0.5-1 MB).
pub const MAX_FILE_BYTES: usize = 8 << 20;
/// Bounds on what a cascade may declare.
const MAX_STAGES: usize = 64;
const MAX_WEAK: usize = 20_000;
const MAX_FEATURES: usize = 20_000;
const MAX_RECTS: usize = 3;
const WINDOW_RANGE: std::ops::RangeInclusive<u32> = 8..=64;

#[derive(Debug, thiserror::Error)]
pub enum CascadeError {
    #[error("cascade file: {0}")]
    Io(#[from] std::io::Error),
    #[error("cascade file is {0} bytes, more than the {MAX_FILE_BYTES} read")]
    TooLarge(u64),
    #[error("cascade XML: {0}")]
    Xml(String),
    #[error("cascade: {0}")]
    Invalid(String),
}

fn invalid(msg: impl Into<String>) -> CascadeError {
    CascadeError::Invalid(msg.into())
}

/// One weighted rectangle of a Haar feature, in window coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeightedRect {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
    pub weight: f32,
}

/// A Haar feature: the weighted sum of up to three rectangle sums.
#[derive(Debug, Clone, PartialEq)]
pub struct Feature {
    pub rects: Vec<WeightedRect>,
}

/// A boosted stump: `left` when the variance-normalised feature value is below `threshold`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weak {
    pub feature: usize,
    pub threshold: f32,
    pub left: f32,
    pub right: f32,
}

/// A stage: the window passes when the sum of its stumps' leaves reaches `threshold`.
#[derive(Debug, Clone, PartialEq)]
pub struct Stage {
    pub threshold: f32,
    pub weak: Vec<Weak>,
}

/// A loaded cascade: the detection window and its stages, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Cascade {
    pub width: u32,
    pub height: u32,
    pub stages: Vec<Stage>,
    pub features: Vec<Feature>,
}

/// OpenCV subtracts this from every stage threshold when it loads a cascade (`THRESHOLD_EPS`),
/// so a window exactly at the threshold passes.
const THRESHOLD_EPS: f32 = 1e-5;

impl Cascade {
    /// Loads a cascade file, bounded in size.
    ///
    /// # Errors
    /// The file is missing, too large, not XML, or not a cascade this detector runs.
    pub fn load(path: &std::path::Path) -> Result<Self, CascadeError> {
        let len = std::fs::metadata(path)?.len();
        if len > MAX_FILE_BYTES as u64 {
            return Err(CascadeError::TooLarge(len));
        }
        Self::parse(&std::fs::read_to_string(path)?)
    }

    /// Parses the XML text of a cascade.
    ///
    /// # Errors
    /// Malformed XML, an unsupported cascade type, or a value out of bounds.
    pub fn parse(xml: &str) -> Result<Self, CascadeError> {
        if xml.len() > MAX_FILE_BYTES {
            return Err(CascadeError::TooLarge(xml.len() as u64));
        }
        let mut reader = Reader::from_str(xml);
        reader.config_mut().trim_text(true);
        let mut path: Vec<String> = Vec::new();
        let mut b = Builder::default();
        loop {
            let event = reader.read_event().map_err(|e| {
                CascadeError::Xml(format!("at byte {}: {e}", reader.buffer_position()))
            })?;
            match event {
                Event::Start(e) => {
                    let name = String::from_utf8_lossy(e.name().as_ref()).into_owned();
                    b.open(&path, &name)?;
                    path.push(name);
                    if path.len() > 16 {
                        return Err(invalid("elements nested deeper than a cascade has"));
                    }
                }
                Event::End(_) => {
                    path.pop();
                }
                Event::Text(t) => {
                    let text = t
                        .decode()
                        .map_err(|e| CascadeError::Xml(e.to_string()))?
                        .into_owned();
                    b.text(&path, text.trim())?;
                }
                Event::Eof => break,
                _ => {}
            }
        }
        b.finish()
    }

    /// Total weak classifiers over all stages.
    #[must_use]
    pub fn weak_count(&self) -> usize {
        self.stages.iter().map(|s| s.weak.len()).sum()
    }
}

/// Collects a cascade while the XML streams past.
#[derive(Default)]
struct Builder {
    width: Option<u32>,
    height: Option<u32>,
    stage_type: Option<String>,
    feature_type: Option<String>,
    stages: Vec<Stage>,
    features: Vec<Feature>,
    weak: usize,
    /// The weak classifier being read: its split, then its leaves.
    node: Option<(usize, f32)>,
}

fn ends_with(path: &[String], suffix: &[&str]) -> bool {
    path.len() >= suffix.len()
        && path[path.len() - suffix.len()..]
            .iter()
            .zip(suffix)
            .all(|(a, b)| a == b)
}

fn numbers(text: &str, what: &str) -> Result<Vec<f64>, CascadeError> {
    text.split_whitespace()
        .map(|v| {
            v.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| invalid(format!("{what}: {v:?} is not a number")))
        })
        .collect()
}

fn whole(v: f64, what: &str) -> Result<i64, CascadeError> {
    if v.fract() != 0.0 || v.abs() > 1e9 {
        return Err(invalid(format!("{what}: {v} is not an integer")));
    }
    Ok(v as i64)
}

impl Builder {
    fn open(&mut self, path: &[String], name: &str) -> Result<(), CascadeError> {
        if name != "_" {
            return Ok(());
        }
        match path.last().map(String::as_str) {
            Some("stages") => {
                if self.stages.len() == MAX_STAGES {
                    return Err(invalid(format!("more than {MAX_STAGES} stages")));
                }
                self.stages.push(Stage {
                    threshold: f32::NAN,
                    weak: Vec::new(),
                });
            }
            Some("features") => {
                if self.features.len() == MAX_FEATURES {
                    return Err(invalid(format!("more than {MAX_FEATURES} features")));
                }
                self.features.push(Feature { rects: Vec::new() });
            }
            Some("weakClassifiers") => {
                self.weak += 1;
                if self.weak > MAX_WEAK {
                    return Err(invalid(format!("more than {MAX_WEAK} weak classifiers")));
                }
                self.node = None;
            }
            _ => {}
        }
        Ok(())
    }

    fn text(&mut self, path: &[String], text: &str) -> Result<(), CascadeError> {
        let last = path.last().map_or("", String::as_str);
        if path.len() >= 2 && path[path.len() - 2] == "cascade" {
            match last {
                "width" | "height" => {
                    let v = text
                        .parse::<u32>()
                        .ok()
                        .filter(|v| WINDOW_RANGE.contains(v))
                        .ok_or_else(|| invalid(format!("window {last} {text:?} out of range")))?;
                    if last == "width" {
                        self.width = Some(v);
                    } else {
                        self.height = Some(v);
                    }
                }
                "stageType" => self.stage_type = Some(text.to_owned()),
                "featureType" => self.feature_type = Some(text.to_owned()),
                _ => {}
            }
        } else if ends_with(path, &["stages", "_", "stageThreshold"]) {
            let stage = self
                .stages
                .last_mut()
                .ok_or_else(|| invalid("threshold outside a stage"))?;
            let v = numbers(text, "stageThreshold")?;
            if v.len() != 1 {
                return Err(invalid("stageThreshold must be one number"));
            }
            stage.threshold = v[0] as f32 - THRESHOLD_EPS;
        } else if ends_with(path, &["weakClassifiers", "_", "internalNodes"]) {
            let v = numbers(text, "internalNodes")?;
            if v.len() != 4 {
                return Err(invalid(format!(
                    "internalNodes has {} values: only stumps (one split per weak classifier) are supported",
                    v.len()
                )));
            }
            let (left, right) = (whole(v[0], "internalNodes")?, whole(v[1], "internalNodes")?);
            if (left, right) != (0, -1) {
                return Err(invalid("only stumps (leaves 0 and -1) are supported"));
            }
            let feature = usize::try_from(whole(v[2], "feature index")?)
                .map_err(|_| invalid("negative feature index"))?;
            self.node = Some((feature, v[3] as f32));
        } else if ends_with(path, &["weakClassifiers", "_", "leafValues"]) {
            let v = numbers(text, "leafValues")?;
            let (feature, threshold) = self
                .node
                .take()
                .ok_or_else(|| invalid("leafValues before internalNodes"))?;
            if v.len() != 2 {
                return Err(invalid("a stump has two leaf values"));
            }
            let stage = self
                .stages
                .last_mut()
                .ok_or_else(|| invalid("classifier outside a stage"))?;
            stage.weak.push(Weak {
                feature,
                threshold,
                left: v[0] as f32,
                right: v[1] as f32,
            });
        } else if ends_with(path, &["features", "_", "rects", "_"]) {
            let v = numbers(text, "rect")?;
            if v.len() != 5 {
                return Err(invalid("a rect is x y width height weight"));
            }
            let feature = self
                .features
                .last_mut()
                .ok_or_else(|| invalid("rect outside a feature"))?;
            if feature.rects.len() == MAX_RECTS {
                return Err(invalid(format!(
                    "a feature with more than {MAX_RECTS} rects"
                )));
            }
            let int = |i: usize| {
                u32::try_from(whole(v[i], "rect")?).map_err(|_| invalid("negative rect coordinate"))
            };
            feature.rects.push(WeightedRect {
                x: int(0)?,
                y: int(1)?,
                w: int(2)?,
                h: int(3)?,
                weight: v[4] as f32,
            });
        } else if ends_with(path, &["features", "_", "tilted"]) && text != "0" {
            return Err(invalid("tilted Haar features are not supported"));
        }
        Ok(())
    }

    fn finish(self) -> Result<Cascade, CascadeError> {
        if self.stage_type.as_deref() != Some("BOOST")
            || self.feature_type.as_deref() != Some("HAAR")
        {
            return Err(invalid(format!(
                "not a boosted Haar cascade (stageType {:?}, featureType {:?})",
                self.stage_type, self.feature_type
            )));
        }
        let (width, height) = match (self.width, self.height) {
            (Some(w), Some(h)) => (w, h),
            _ => return Err(invalid("no window size")),
        };
        if self.stages.is_empty() {
            return Err(invalid("no stages"));
        }
        for (i, s) in self.stages.iter().enumerate() {
            if s.weak.is_empty() || !s.threshold.is_finite() {
                return Err(invalid(format!(
                    "stage {i} has no classifiers or no threshold"
                )));
            }
            if let Some(w) = s.weak.iter().find(|w| w.feature >= self.features.len()) {
                return Err(invalid(format!(
                    "stage {i} names feature {} of {}",
                    w.feature,
                    self.features.len()
                )));
            }
        }
        for (i, f) in self.features.iter().enumerate() {
            if f.rects.len() < 2 {
                return Err(invalid(format!("feature {i} has fewer than two rects")));
            }
            if f.rects
                .iter()
                .any(|r| r.w == 0 || r.h == 0 || r.x + r.w > width || r.y + r.h > height)
            {
                return Err(invalid(format!(
                    "feature {i} leaves the {width}x{height} window"
                )));
            }
        }
        Ok(Cascade {
            width,
            height,
            stages: self.stages,
            features: self.features,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = r#"<?xml version="1.0"?>
<opencv_storage>
<cascade type_id="opencv-cascade-classifier"><stageType>BOOST</stageType>
  <featureType>HAAR</featureType>
  <height>24</height>
  <width>24</width>
  <stageNum>1</stageNum>
  <stages>
    <_>
      <maxWeakCount>1</maxWeakCount>
      <stageThreshold>-0.5</stageThreshold>
      <weakClassifiers>
        <_>
          <internalNodes>
            0 -1 0 -3.1e-02</internalNodes>
          <leafValues>
            2.0 -2.0</leafValues></_></weakClassifiers></_></stages>
  <features>
    <_>
      <rects>
        <_>
          6 4 12 9 -1.</_>
        <_>
          6 7 12 3 3.</_></rects></_></features></cascade>
</opencv_storage>"#;

    #[test]
    fn reads_the_opencv_layout() {
        let c = Cascade::parse(TINY).expect("parses");
        assert_eq!((c.width, c.height), (24, 24));
        assert_eq!(c.stages.len(), 1);
        assert_eq!(c.weak_count(), 1);
        let w = c.stages[0].weak[0];
        assert_eq!((w.feature, w.left, w.right), (0, 2.0, -2.0));
        assert!((w.threshold + 0.031).abs() < 1e-7);
        assert!((c.stages[0].threshold + 0.5 + THRESHOLD_EPS).abs() < 1e-7);
        assert_eq!(
            c.features[0].rects[1],
            WeightedRect {
                x: 6,
                y: 7,
                w: 12,
                h: 3,
                weight: 3.0
            }
        );
    }

    #[test]
    fn malformed_and_hostile_files_are_refused_by_name() {
        let cases = [
            (
                TINY.replace("0 -1 0 -3.1e-02", "0 -1 7 -3.1e-02"),
                "names feature 7",
            ),
            (
                TINY.replace("6 4 12 9 -1.", "20 4 12 9 -1."),
                "leaves the 24x24 window",
            ),
            (TINY.replace("<width>24", "<width>4000"), "out of range"),
            (TINY.replace("HAAR", "LBP"), "not a boosted Haar cascade"),
            (
                TINY.replace("0 -1 0 -3.1e-02", "1 2 0 -3.1e-02 0 -1 0 0.5"),
                "only stumps",
            ),
            (TINY.replace("2.0 -2.0", "2.0 NaN"), "not a number"),
            (TINY.replace("</features>", ""), "cascade XML"),
        ];
        for (xml, expected) in cases {
            let err = Cascade::parse(&xml).expect_err(expected).to_string();
            assert!(err.contains(expected), "{err:?} should say {expected:?}");
        }
    }
}

//! Multi-scale detection with a [`Cascade`], as OpenCV's `CascadeClassifier::detectMultiScale`
//! does it, so that OpenCV's trained cascades behave here as their authors tuned them:
//! - the image is resized (bilinear) by `scale_factor` steps, the window stays at its trained
//!   size, and a window is kept when it passes every stage;
//! - each window's feature values are divided by the standard deviation of its pixels (times
//!   its area), which makes the detector indifferent to brightness and contrast;
//! - windows are visited every 2 pixels below a scale of 2 and every pixel above, skipping one
//!   more step after a window that fails the first stage (OpenCV's own shortcut);
//! - raw hits are grouped (`groupRectangles`, eps 0.2): a face is a cluster of more than
//!   `min_neighbours` overlapping hits, and clusters inside a stronger one are dropped.

use super::cascade::Cascade;

/// Detection settings; the defaults are OpenCV's.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Ratio between consecutive scales (> 1).
    pub scale_factor: f64,
    /// Hits a cluster needs beyond the first to count as a face.
    pub min_neighbours: usize,
    /// Smallest face side in pixels (the window size when smaller).
    pub min_size: u32,
    /// Window step in pixels of the resized image; `None` is OpenCV's (2 below a scale of 2,
    /// 1 above, which spends most of the time on the largest faces).
    pub step: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            scale_factor: 1.1,
            min_neighbours: 3,
            min_size: 0,
            step: None,
        }
    }
}

/// A detected face, in pixels of the input image, with the number of raw hits it groups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Face {
    pub x: u32,
    pub y: u32,
    pub w: u32,
    pub h: u32,
    pub neighbours: usize,
}

impl Face {
    #[must_use]
    pub fn area(&self) -> u64 {
        u64::from(self.w) * u64::from(self.h)
    }
}

/// Rect `x y w h` in integer pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rect {
    x: i64,
    y: i64,
    w: i64,
    h: i64,
}

/// OpenCV's `cvRound`: round half to even.
fn round(v: f64) -> i64 {
    v.round_ties_even() as i64
}

/// Finds faces in an 8-bit luma image of `width x height` (row-major, no padding). An image
/// whose length does not match, or smaller than the window, has none.
#[must_use]
pub fn detect(
    cascade: &Cascade,
    luma: &[u8],
    width: usize,
    height: usize,
    opts: &Options,
) -> Vec<Face> {
    if width == 0 || height == 0 || luma.len() != width * height || opts.scale_factor <= 1.0 {
        return Vec::new();
    }
    let mut hits = Vec::new();
    let mut scaled = Vec::new();
    let mut scan = Scan::new(cascade);
    for level in levels(cascade, width, height, opts) {
        resize_bilinear(luma, width, height, &mut scaled, level.width, level.height);
        scan.set_image(&scaled, level.width, level.height);
        level.walk(|x, y| scan.run(x, y), &mut hits);
    }
    faces(&hits, opts)
}

/// The raw hits grouped into faces (`groupRectangles`, eps 0.2).
pub(crate) fn faces(hits: &[Rect], opts: &Options) -> Vec<Face> {
    group(hits, opts.min_neighbours, 0.2)
        .into_iter()
        .map(|(r, n)| Face {
            x: r.x.max(0) as u32,
            y: r.y.max(0) as u32,
            w: r.w as u32,
            h: r.h as u32,
            neighbours: n,
        })
        .collect()
}

/// One scale of the search: the image resized by `factor`, the window's size in input pixels,
/// and the grid of window positions visited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Level {
    pub factor: f64,
    /// The window's size in pixels of the input image.
    pub window: (i64, i64),
    /// The resized image.
    pub width: usize,
    pub height: usize,
    /// Window step in resized pixels.
    pub step: usize,
    /// Window origins run over `0..span.0` and `0..span.1` in steps of `step`.
    pub span: (usize, usize),
}

impl Level {
    /// Window positions on the step grid, across and down.
    pub fn grid(&self) -> (usize, usize) {
        (
            self.span.0.div_ceil(self.step),
            self.span.1.div_ceil(self.step),
        )
    }

    /// Visits the grid as OpenCV does, `outcome` deciding each window: after a window that the
    /// first stage rejects, the next position along the row is skipped. Faces land in `hits`
    /// in input pixels. The outcome of a window does not depend on which others were visited,
    /// so `outcome` may be read from a table computed for every grid position (the device path).
    pub fn walk(&self, mut outcome: impl FnMut(usize, usize) -> Outcome, hits: &mut Vec<Rect>) {
        let mut y = 0;
        while y < self.span.1 {
            let mut x = 0;
            while x < self.span.0 {
                match outcome(x, y) {
                    Outcome::Face => hits.push(Rect {
                        x: round(x as f64 * self.factor),
                        y: round(y as f64 * self.factor),
                        w: self.window.0,
                        h: self.window.1,
                    }),
                    Outcome::FirstStage => x += self.step,
                    Outcome::Later => {}
                }
                x += self.step;
            }
            y += self.step;
        }
    }
}

/// The scales [`detect`] searches an image of `width x height` at: the factor grows by
/// `scale_factor` from 1 until the resized image no longer holds a window, and scales whose
/// window is under `min_size` are passed over.
pub(crate) fn levels(cascade: &Cascade, width: usize, height: usize, opts: &Options) -> Vec<Level> {
    let mut out = Vec::new();
    if width == 0 || height == 0 || opts.scale_factor <= 1.0 {
        return out;
    }
    let (cw, ch) = (i64::from(cascade.width), i64::from(cascade.height));
    let mut factor = 1.0f64;
    loop {
        let (win_w, win_h) = (round(cw as f64 * factor), round(ch as f64 * factor));
        let (sw, sh) = (round(width as f64 / factor), round(height as f64 / factor));
        if sw - cw <= 0 || sh - ch <= 0 {
            break;
        }
        if win_w >= i64::from(opts.min_size) && win_h >= i64::from(opts.min_size) {
            let (sw, sh) = (sw as usize, sh as usize);
            out.push(Level {
                factor,
                window: (win_w, win_h),
                width: sw,
                height: sh,
                step: opts.step.unwrap_or(if factor > 2.0 { 1 } else { 2 }).max(1),
                span: (sw - cascade.width as usize, sh - cascade.height as usize),
            });
        }
        factor *= opts.scale_factor;
    }
    out
}

/// Bilinear resize with pixel centres aligned (as `cv::resize` with `INTER_LINEAR`).
pub(crate) fn resize_bilinear(
    src: &[u8],
    w: usize,
    h: usize,
    dst: &mut Vec<u8>,
    dw: usize,
    dh: usize,
) {
    dst.clear();
    dst.reserve(dw * dh);
    let (fx, fy) = (w as f64 / dw as f64, h as f64 / dh as f64);
    let axis = |d: usize, f: f64, n: usize| {
        let s = ((d as f64 + 0.5) * f - 0.5).max(0.0);
        let i = (s.floor() as usize).min(n - 1);
        let t = if i + 1 < n {
            (s - i as f64) as f32
        } else {
            0.0
        };
        (i, (i + 1).min(n - 1), t)
    };
    let cols: Vec<_> = (0..dw).map(|x| axis(x, fx, w)).collect();
    for y in 0..dh {
        let (y0, y1, ty) = axis(y, fy, h);
        let (r0, r1) = (&src[y0 * w..(y0 + 1) * w], &src[y1 * w..(y1 + 1) * w]);
        for &(x0, x1, tx) in &cols {
            let top = f32::from(r0[x0]) * (1.0 - tx) + f32::from(r0[x1]) * tx;
            let bottom = f32::from(r1[x0]) * (1.0 - tx) + f32::from(r1[x1]) * tx;
            dst.push((top * (1.0 - ty) + bottom * ty).round().clamp(0.0, 255.0) as u8);
        }
    }
}

pub(crate) enum Outcome {
    Face,
    /// Rejected by the first stage (OpenCV then skips the next position too).
    FirstStage,
    Later,
}

/// The cascade laid out for one image: integral images and each feature's four corner offsets
/// per rectangle at the image's row stride.
pub(crate) struct Scan<'a> {
    cascade: &'a Cascade,
    stride: usize,
    /// Integral image: 320 x 180 x 255 is far inside `i32`.
    sum: Vec<i32>,
    sqsum: Vec<f64>,
    /// Per feature, up to three rects of four integral offsets, and how many it has.
    offsets: Vec<[[usize; 4]; 3]>,
    weights: Vec<[f32; 3]>,
    rects: Vec<usize>,
    norm: [usize; 4],
    norm_area: f64,
}

impl<'a> Scan<'a> {
    pub fn new(cascade: &'a Cascade) -> Self {
        let weights = cascade
            .features
            .iter()
            .map(|f| {
                let mut w = [0f32; 3];
                for (k, r) in f.rects.iter().enumerate() {
                    w[k] = r.weight;
                }
                w
            })
            .collect();
        Self {
            rects: cascade.features.iter().map(|f| f.rects.len()).collect(),
            cascade,
            stride: 0,
            sum: Vec::new(),
            sqsum: Vec::new(),
            offsets: Vec::new(),
            weights,
            norm: [0; 4],
            norm_area: f64::from((cascade.width - 2) * (cascade.height - 2)),
        }
    }

    fn corners(&self, x: u32, y: u32, w: u32, h: u32) -> [usize; 4] {
        let s = self.stride;
        let (x, y, w, h) = (x as usize, y as usize, w as usize, h as usize);
        [
            y * s + x,
            y * s + x + w,
            (y + h) * s + x,
            (y + h) * s + x + w,
        ]
    }

    pub fn set_image(&mut self, img: &[u8], w: usize, h: usize) {
        let s = w + 1;
        self.sum.clear();
        self.sum.resize(s * (h + 1), 0);
        self.sqsum.clear();
        self.sqsum.resize(s * (h + 1), 0.0);
        for y in 0..h {
            let (mut row, mut row_sq) = (0i32, 0f64);
            for x in 0..w {
                let v = i32::from(img[y * w + x]);
                row += v;
                row_sq += f64::from(v * v);
                self.sum[(y + 1) * s + x + 1] = self.sum[y * s + x + 1] + row;
                self.sqsum[(y + 1) * s + x + 1] = self.sqsum[y * s + x + 1] + row_sq;
            }
        }
        if self.stride != s {
            self.stride = s;
            let c = self.cascade;
            self.norm = self.corners(1, 1, c.width - 2, c.height - 2);
            self.offsets = c
                .features
                .iter()
                .map(|f| {
                    let mut o = [[0usize; 4]; 3];
                    for (k, r) in f.rects.iter().enumerate() {
                        o[k] = self.corners(r.x, r.y, r.w, r.h);
                    }
                    o
                })
                .collect();
        }
    }

    fn rect_sum(v: &[i32], base: usize, o: &[usize; 4]) -> i32 {
        v[base + o[0]] - v[base + o[1]] - v[base + o[2]] + v[base + o[3]]
    }

    /// The integral image of the image last set (row stride [`Scan::stride`]).
    pub fn sums(&self) -> &[i32] {
        &self.sum
    }

    /// The integral image's row stride: the image's width plus one.
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// What the window at `(x, y)` multiplies its feature values by: the reciprocal of its
    /// pixels' standard deviation times its area (1 on a flat window), as OpenCV's
    /// `HaarEvaluator::setWindow` computes it, in f64. Shared by both paths so the device reads
    /// the same bits (WGSL has no f64, and the difference of squares cancels badly in f32).
    pub fn normaliser(&self, x: usize, y: usize) -> f32 {
        let base = y * self.stride + x;
        let n = &self.norm;
        let total = f64::from(Self::rect_sum(&self.sum, base, n));
        let sq = self.sqsum[base + n[0]] - self.sqsum[base + n[1]] - self.sqsum[base + n[2]]
            + self.sqsum[base + n[3]];
        let nf = self.norm_area * sq - total * total;
        let nf = if nf > 0.0 { nf.sqrt() } else { 1.0 };
        (1.0 / nf) as f32
    }

    fn run(&self, x: usize, y: usize) -> Outcome {
        let base = y * self.stride + x;
        let scale = self.normaliser(x, y);
        for (i, stage) in self.cascade.stages.iter().enumerate() {
            let mut acc = 0f32;
            for weak in &stage.weak {
                let (o, w) = (&self.offsets[weak.feature], &self.weights[weak.feature]);
                // Summed in the same order as before whatever the count, so the result is
                // the same bits (a two-rect feature adds nothing for the third).
                let mut value = w[0] * Self::rect_sum(&self.sum, base, &o[0]) as f32
                    + w[1] * Self::rect_sum(&self.sum, base, &o[1]) as f32;
                if self.rects[weak.feature] == 3 {
                    value += w[2] * Self::rect_sum(&self.sum, base, &o[2]) as f32;
                }
                acc += if value * scale < weak.threshold {
                    weak.left
                } else {
                    weak.right
                };
            }
            if acc < stage.threshold {
                return if i == 0 {
                    Outcome::FirstStage
                } else {
                    Outcome::Later
                };
            }
        }
        Outcome::Face
    }
}

/// OpenCV's `SimilarRects`: every edge within `eps` of the mean smaller side.
fn similar(a: &Rect, b: &Rect, eps: f64) -> bool {
    let delta = eps * (a.w.min(b.w) + a.h.min(b.h)) as f64 * 0.5;
    let close = |p: i64, q: i64| ((p - q).abs() as f64) <= delta;
    close(a.x, b.x) && close(a.y, b.y) && close(a.x + a.w, b.x + b.w) && close(a.y + a.h, b.y + b.h)
}

/// OpenCV's `groupRectangles`: clusters of similar hits (transitively), averaged; clusters of
/// `min_neighbours` hits or fewer dropped, and so are clusters inside a stronger cluster.
fn group(hits: &[Rect], min_neighbours: usize, eps: f64) -> Vec<(Rect, usize)> {
    let n = hits.len();
    let mut parent: Vec<usize> = (0..n).collect();
    fn root(p: &mut [usize], mut i: usize) -> usize {
        while p[i] != i {
            p[i] = p[p[i]];
            i = p[i];
        }
        i
    }
    for i in 0..n {
        for j in 0..i {
            if similar(&hits[i], &hits[j], eps) {
                let (a, b) = (root(&mut parent, i), root(&mut parent, j));
                if a != b {
                    parent[a] = b;
                }
            }
        }
    }
    // Clusters in order of their first member, as OpenCV numbers its partition.
    let mut label = vec![usize::MAX; n];
    let mut sums: Vec<([i64; 4], usize)> = Vec::new();
    for (i, hit) in hits.iter().enumerate() {
        let r = root(&mut parent, i);
        if label[r] == usize::MAX {
            label[r] = sums.len();
            sums.push(([0; 4], 0));
        }
        let s = &mut sums[label[r]];
        s.0[0] += hit.x;
        s.0[1] += hit.y;
        s.0[2] += hit.w;
        s.0[3] += hit.h;
        s.1 += 1;
    }
    let clusters: Vec<(Rect, usize)> = sums
        .iter()
        .map(|(s, k)| {
            let f = 1.0 / *k as f64;
            (
                Rect {
                    x: round(s[0] as f64 * f),
                    y: round(s[1] as f64 * f),
                    w: round(s[2] as f64 * f),
                    h: round(s[3] as f64 * f),
                },
                *k,
            )
        })
        .collect();
    clusters
        .iter()
        .enumerate()
        .filter(|(_, (_, k))| *k > min_neighbours)
        .filter(|(i, (r1, n1))| {
            !clusters.iter().enumerate().any(|(j, (r2, n2))| {
                if j == *i || *n2 <= min_neighbours {
                    return false;
                }
                let (dx, dy) = ((r2.w as f64 * eps) as i64, (r2.h as f64 * eps) as i64);
                (*n2 > (*n1).max(3) || *n1 < 3)
                    && r1.x >= r2.x - dx
                    && r1.y >= r2.y - dy
                    && r1.x + r1.w <= r2.x + r2.w + dx
                    && r1.y + r1.h <= r2.y + r2.h + dy
            })
        })
        .map(|(_, c)| *c)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(x: i64, y: i64, w: i64) -> Rect {
        Rect { x, y, w, h: w }
    }

    #[test]
    fn clusters_need_more_than_min_neighbours_hits_and_are_averaged() {
        let hits = [
            r(10, 10, 24),
            r(11, 10, 24),
            r(10, 12, 26),
            r(12, 11, 24),
            r(100, 100, 24),
        ];
        let g = group(&hits, 3, 0.2);
        assert_eq!(
            g,
            vec![(
                Rect {
                    x: 11,
                    y: 11,
                    w: 24,
                    h: 24
                },
                4
            )],
            "24.5 rounds to even"
        );
        assert!(group(&hits, 4, 0.2).is_empty());
    }

    #[test]
    fn a_weak_cluster_inside_a_strong_one_is_dropped() {
        let mut hits: Vec<Rect> = (0..8).map(|k| r(50 + k % 2, 50, 60)).collect();
        hits.extend((0..4).map(|k| r(70 + k % 2, 70, 20)));
        let g = group(&hits, 3, 0.2);
        assert_eq!(g.len(), 1, "{g:?}");
        assert_eq!(g[0].1, 8);
    }

    /// The walk visits what OpenCV visits: after a first-stage rejection the next position on
    /// the row is skipped, so a face there is never seen; after a later-stage rejection it is.
    /// The device path reads every position's outcome from a table and relies on this.
    #[test]
    fn the_walk_skips_the_window_after_a_first_stage_rejection() {
        let level = Level {
            factor: 1.5,
            window: (36, 36),
            width: 30,
            height: 26,
            step: 2,
            span: (6, 2),
        };
        assert_eq!(level.grid(), (3, 1));
        let run = |first: Outcome| {
            let mut visited = Vec::new();
            let mut hits = Vec::new();
            let mut first = Some(first);
            level.walk(
                |x, _| {
                    visited.push(x);
                    match (x, first.take()) {
                        (0, Some(o)) => o,
                        _ => Outcome::Face,
                    }
                },
                &mut hits,
            );
            (visited, hits)
        };
        let (visited, hits) = run(Outcome::FirstStage);
        assert_eq!(visited, vec![0, 4]);
        assert_eq!(
            hits,
            vec![Rect {
                x: 6,
                y: 0,
                w: 36,
                h: 36
            }]
        );
        let (visited, hits) = run(Outcome::Later);
        assert_eq!(visited, vec![0, 2, 4]);
        assert_eq!(hits.len(), 2);
        assert_eq!(
            hits[0],
            Rect {
                x: 3,
                y: 0,
                w: 36,
                h: 36
            }
        );
    }

    #[test]
    fn resize_keeps_a_flat_image_flat_and_halves_a_ramp() {
        let (w, h) = (8, 4);
        let ramp: Vec<u8> = (0..h)
            .flat_map(|_| (0..w).map(|x| (x * 20) as u8))
            .collect();
        let mut out = Vec::new();
        resize_bilinear(&ramp, w, h, &mut out, 4, 2);
        assert_eq!(&out[..4], &[10, 50, 90, 130]);
        resize_bilinear(&[77; 64], 8, 8, &mut out, 5, 3);
        assert!(out.iter().all(|v| *v == 77));
    }
}

//! Write brainscan analysis plugins in Rust.
//!
//! A plugin is a WebAssembly component that implements one world of the WIT package
//! `brainscan:analysis@1.0.0` (`wit/analysis@1.0.0/analysis.wit`): `lens`, `moments` or
//! `manipulation`. This crate wraps the generated bindings so an author writes one trait impl
//! and one macro line:
//!
//! ```ignore
//! use brainscan_sdk::{Clip, LensPlugin, LensSeries, PluginError};
//!
//! struct Calm;
//! impl LensPlugin for Calm {
//!     fn provides() -> Vec<String> { vec!["calm".into()] }
//!     fn score(clip: &Clip, lenses: &[String]) -> Result<Vec<LensSeries>, PluginError> { … }
//! }
//! brainscan_sdk::export_lens!(Calm);
//! ```
//!
//! The macro fills `describe()` from the crate's `Cargo.toml` (name, version, authors) and
//! runs [`validate_clip`] before your code, so NaN, empty or inconsistent input becomes a
//! typed [`PluginError`] rather than a trap — which is what the host's conformance check asks.
//! Build with `cargo build --target wasm32-wasip2 --release`.
//!
//! In the component, plugins are `no_std` (plus `alloc`): version 1.0.0 of the contract grants
//! no WASI at all (no files, sockets, clocks or randomness), and Rust's `std` on
//! `wasm32-wasip2` imports WASI interfaces even when unused. This crate supplies what `std`
//! would have: an allocator, a panic handler (a panic traps), and `libm` for math. Start the
//! plugin with `#![cfg_attr(target_arch = "wasm32", no_std)]` and `extern crate alloc;`: on
//! the host the same crate builds with `std`, so `cargo test` runs its unit tests natively and
//! the export macros expand to nothing there.

#![no_std]
extern crate alloc;

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// Generated bindings, one module per world. The `moments` and `manipulation` worlds reuse
/// the `types` and `host` modules of the `lens` world so every plugin sees the same types.
pub mod bindings {
    pub mod lens {
        wit_bindgen::generate!({
            path: "../../wit/analysis@1.0.0",
            world: "lens",
            pub_export_macro: true,
            export_macro_name: "__export_lens_world",
            default_bindings_module: "brainscan_sdk::bindings::lens",
            generate_all,
        });
    }
    pub mod moments {
        wit_bindgen::generate!({
            path: "../../wit/analysis@1.0.0",
            world: "moments",
            pub_export_macro: true,
            export_macro_name: "__export_moments_world",
            default_bindings_module: "brainscan_sdk::bindings::moments",
            with: {
                "brainscan:analysis/types@1.0.0": crate::bindings::lens::brainscan::analysis::types,
                "brainscan:analysis/host@1.0.0": crate::bindings::lens::brainscan::analysis::host,
            },
        });
    }
    pub mod manipulation {
        wit_bindgen::generate!({
            path: "../../wit/analysis@1.0.0",
            world: "manipulation",
            pub_export_macro: true,
            export_macro_name: "__export_manipulation_world",
            default_bindings_module: "brainscan_sdk::bindings::manipulation",
            with: {
                "brainscan:analysis/types@1.0.0": crate::bindings::lens::brainscan::analysis::types,
                "brainscan:analysis/host@1.0.0": crate::bindings::lens::brainscan::analysis::host,
            },
        });
    }
}

pub use bindings::lens::brainscan::analysis::types::{
    BuyMoment, Circuit, Clip, Detection, ExposureSecond, LensSecond, LensSeries, LimitsRequest,
    Manipulation, Mechanism, Modalities, Moment, MomentKind, NetworkSecond, PeakMoment,
    PluginError, PluginInfo, Population, Quadrant, Tactic, Threat, TranscriptLine,
};

#[doc(hidden)]
pub use bindings::lens::exports::brainscan::analysis::lens_plugin::Guest as __LensGuest;
#[doc(hidden)]
pub use bindings::manipulation::exports::brainscan::analysis::manipulation_plugin::Guest as __ManipulationGuest;
#[doc(hidden)]
pub use bindings::moments::exports::brainscan::analysis::moments_plugin::Guest as __MomentsGuest;

/// The version of the WIT contract this SDK builds against.
pub const WIT_VERSION: &str = "1.0.0";

/// The longest clip a plugin built with this SDK accepts, in seconds. Hosts send at most their
/// own maximum (180 s for brainscan 1.x); this bound only keeps a confused caller from making
/// the plugin allocate without limit.
pub const MAX_SECONDS: usize = 3600;

/// The network names in field order of [`NetworkSecond`].
pub const NETWORKS: [&str; 7] = [
    "Visual",
    "Somatomotor",
    "Dorsal Attention",
    "Ventral Attention",
    "Limbic",
    "Frontoparietal",
    "Default Mode",
];

/// Column indices of the networks that plugins read by name, in [`NETWORKS`] order.
pub const VENTRAL_ATTENTION: usize = 3;
pub const LIMBIC: usize = 4;
pub const FRONTOPARIETAL: usize = 5;
pub const DEFAULT_MODE: usize = 6;

/// What each network stands for, in plain words, in [`NETWORKS`] order (the spec's
/// `raw_labeled` names, spelled out for sentences).
pub const PLAIN_NETWORKS: [&str; 7] = [
    "visual processing",
    "voice and movement",
    "focused attention",
    "salience",
    "emotion",
    "deliberate thinking",
    "memory and self-relevance",
];

impl NetworkSecond {
    /// The seven values in [`NETWORKS`] order.
    pub fn values(&self) -> [f32; 7] {
        [
            self.visual,
            self.somatomotor,
            self.dorsal_attention,
            self.ventral_attention,
            self.limbic,
            self.frontoparietal,
            self.default_mode,
        ]
    }

    /// A second from seven values in [`NETWORKS`] order: the inverse of
    /// [`NetworkSecond::values`].
    pub fn from_values(v: [f32; 7]) -> Self {
        Self {
            visual: v[0],
            somatomotor: v[1],
            dorsal_attention: v[2],
            ventral_attention: v[3],
            limbic: v[4],
            frontoparietal: v[5],
            default_mode: v[6],
        }
    }
}

impl PluginError {
    pub fn new(code: &str, message: impl Into<String>) -> Self {
        Self {
            code: code.to_string(),
            message: message.into(),
        }
    }
}

/// The checks every SDK plugin runs before its own code: one network row per started second,
/// every number finite, at least one second, at most [`MAX_SECONDS`].
///
/// # Errors
/// `empty_clip`, `too_long`, `length_mismatch` or `invalid_input`.
pub fn validate_clip(clip: &Clip) -> Result<(), PluginError> {
    if !clip.duration_sec.is_finite() || clip.duration_sec < 0.0 {
        return Err(PluginError::new(
            "invalid_input",
            format!(
                "duration {} is not a finite, non-negative number",
                clip.duration_sec
            ),
        ));
    }
    if clip.networks.is_empty() {
        return Err(PluginError::new(
            "empty_clip",
            "the clip has no seconds to analyse",
        ));
    }
    if clip.networks.len() > MAX_SECONDS {
        return Err(PluginError::new(
            "too_long",
            format!("{} seconds is more than {MAX_SECONDS}", clip.networks.len()),
        ));
    }
    let expected = ceil(clip.duration_sec) as usize;
    if expected != clip.networks.len() {
        return Err(PluginError::new(
            "length_mismatch",
            format!(
                "{} network rows for a {:.3} s clip (expected {expected})",
                clip.networks.len(),
                clip.duration_sec
            ),
        ));
    }
    for (second, row) in clip.networks.iter().enumerate() {
        if let Some(i) = row.values().iter().position(|v| !v.is_finite()) {
            return Err(PluginError::new(
                "invalid_input",
                format!(
                    "network {} at second {second} is not a finite number",
                    NETWORKS[i]
                ),
            ));
        }
    }
    for line in &clip.transcript {
        if !line.start_sec.is_finite() || !line.end_sec.is_finite() {
            return Err(PluginError::new(
                "invalid_input",
                "a transcript line has a time that is not a finite number",
            ));
        }
    }
    Ok(())
}

/// [`validate_clip`] plus: every series has one entry per second and finite scores in 0-100.
///
/// # Errors
/// As [`validate_clip`], and `length_mismatch` / `invalid_input` for the series.
pub fn validate_series(clip: &Clip, series: &[LensSeries]) -> Result<(), PluginError> {
    validate_clip(clip)?;
    for s in series {
        if s.seconds.len() != clip.networks.len() {
            return Err(PluginError::new(
                "length_mismatch",
                format!(
                    "lens {} has {} seconds, the clip {}",
                    s.lens,
                    s.seconds.len(),
                    clip.networks.len()
                ),
            ));
        }
        if s.seconds.iter().any(|x| !(0.0..=100.0).contains(&x.score)) {
            return Err(PluginError::new(
                "invalid_input",
                format!("lens {} has a score outside 0-100", s.lens),
            ));
        }
    }
    Ok(())
}

pub use libm::ceil;

/// Math without `std` (sqrt, exp, log, erf, …): the `libm` crate, re-exported.
pub use libm;

/// The runtime a `no_std` component needs: an allocator and a panic handler. A panic traps,
/// which the host reports as a failed call of this plugin.
#[cfg(all(target_arch = "wasm32", feature = "runtime"))]
mod runtime {
    #[global_allocator]
    static ALLOCATOR: dlmalloc::GlobalDlmalloc = dlmalloc::GlobalDlmalloc;

    #[panic_handler]
    fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
        core::arch::wasm32::unreachable()
    }

    /// The canonical ABI's allocator entry point. Under `std` the Rust target's libc provides
    /// it; a `no_std` component must, or the host cannot pass strings and lists in.
    ///
    /// # Safety
    /// Called only by the component runtime, with the canonical ABI's contract: `old_ptr` and
    /// `old_len` describe an allocation it got from this function (or are 0), and `align` is a
    /// power of two.
    #[unsafe(no_mangle)]
    pub unsafe extern "C" fn cabi_realloc(
        old_ptr: *mut u8,
        old_len: usize,
        align: usize,
        new_len: usize,
    ) -> *mut u8 {
        use alloc::alloc::{Layout, alloc, handle_alloc_error, realloc};
        if new_len == 0 {
            return align as *mut u8;
        }
        // SAFETY: the canonical ABI passes a power-of-two align and sizes it got from us.
        unsafe {
            let ptr = if old_len == 0 {
                alloc(Layout::from_size_align_unchecked(new_len, align))
            } else {
                realloc(
                    old_ptr,
                    Layout::from_size_align_unchecked(old_len, align),
                    new_len,
                )
            };
            if ptr.is_null() {
                handle_alloc_error(Layout::from_size_align_unchecked(new_len, align));
            }
            ptr
        }
    }
}

/// Small statistics helpers plugins keep needing.
pub mod stats {
    /// Arithmetic mean; 0 for an empty slice.
    pub fn mean(xs: &[f64]) -> f64 {
        if xs.is_empty() {
            0.0
        } else {
            xs.iter().sum::<f64>() / xs.len() as f64
        }
    }

    /// Population standard deviation; 0 for fewer than two values.
    pub fn std(xs: &[f64]) -> f64 {
        if xs.len() < 2 {
            return 0.0;
        }
        let m = mean(xs);
        libm::sqrt(xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64)
    }

    /// `v` rounded to `decimals` places (half away from zero), as outputs are shown.
    pub fn round_to(v: f64, decimals: i32) -> f64 {
        let f = libm::pow(10.0, f64::from(decimals));
        libm::round(v * f) / f
    }

    /// The logistic function 1 / (1 + e^-x).
    pub fn logistic(x: f64) -> f64 {
        1.0 / (1.0 + libm::exp(-x))
    }
}

/// Reading the transcript and writing about time, the way every default plugin does.
pub mod text {
    use alloc::format;
    use alloc::string::String;

    use crate::Clip;

    /// The transcript line that covers most of second `second` (the interval
    /// `[second, second + 1)`), or `None` when no line overlaps it. Lines are taken as given:
    /// the host sorts them and drops ones with times outside the clip.
    pub fn line_at(clip: &Clip, second: u32) -> Option<&str> {
        let (a, b) = (second as f32, second as f32 + 1.0);
        let mut best: Option<(&str, f32)> = None;
        for line in &clip.transcript {
            let overlap = line.end_sec.min(b) - line.start_sec.max(a);
            let text = line.text.trim();
            if overlap > 0.0 && !text.is_empty() && best.is_none_or(|(_, o)| overlap > o) {
                best = Some((text, overlap));
            }
        }
        best.map(|(t, _)| t)
    }

    /// Whether the clip has words: a transcript line with text. Without words the
    /// deliberation readout has no input (every language feature is absent), so persuasion
    /// pressure has nothing to be weighed against and manipulation is not assessable.
    pub fn has_words(clip: &Clip) -> bool {
        clip.transcript.iter().any(|l| !l.text.trim().is_empty())
    }

    /// The one sentence the default plugins write where manipulation is not assessable.
    pub const NOT_ASSESSABLE: &str = "Manipulation is not assessable: the clip has no words, so there is no deliberation for persuasive pressure to be weighed against. Its scores sit at the neutral 50, which is no reading, not a verdict.";

    /// `m:ss`, the way people write a position in a clip.
    pub fn clock(second: u32) -> String {
        format!("{}:{:02}", second / 60, second % 60)
    }

    /// `s` cut to at most `max` characters on a character boundary, with `…` when cut.
    pub fn clip_to(s: &str, max: usize) -> String {
        match s.char_indices().nth(max) {
            None => String::from(s),
            Some((i, _)) => format!("{}…", s[..i].trim_end()),
        }
    }

    /// 1st, 2nd, 3rd, 4th, … 11th, 12th, 13th, 21st.
    pub fn ordinal(n: usize) -> String {
        let suffix = match (n % 10, n % 100) {
            (_, 11..=13) => "th",
            (1, _) => "st",
            (2, _) => "nd",
            (3, _) => "rd",
            _ => "th",
        };
        format!("{n}{suffix}")
    }
}

/// The conversion-risk bands brainscan uses, so the manipulation block and any text that
/// mentions it agree: `low` below 40, `moderate` from 40, `elevated` from 55, `high` from 70.
/// 50 is a neutral clip (the mean of the `manipulation` lens over a clip).
pub fn risk_band(conversion_risk: f64) -> &'static str {
    if conversion_risk >= 70.0 {
        "high"
    } else if conversion_risk >= 55.0 {
        "elevated"
    } else if conversion_risk >= 40.0 {
        "moderate"
    } else {
        "low"
    }
}

/// Write to the service log. Long lines and chatty plugins are cut by the host.
pub mod log {
    use crate::bindings::lens::brainscan::analysis::host::{self, Level};

    pub fn debug(message: &str) {
        host::log(Level::Debug, message);
    }
    pub fn info(message: &str) {
        host::log(Level::Info, message);
    }
    pub fn warn(message: &str) {
        host::log(Level::Warn, message);
    }
    pub fn error(message: &str) {
        host::log(Level::Error, message);
    }
}

/// What every plugin kind shares: its self-description. All methods have defaults; the export
/// macros pass the crate's name, version and authors.
pub trait Describe {
    /// One sentence for operators' `plugin list`.
    fn description() -> String {
        String::new()
    }
    /// Ask for more fuel or memory than the host's defaults (granted up to its ceiling).
    fn limits() -> LimitsRequest {
        LimitsRequest {
            fuel_per_second: None,
            memory_bytes: None,
        }
    }
}

/// A lens plugin: per-second 0-100 scores with reasons.
pub trait LensPlugin: Describe {
    /// The lens names this plugin scores (lower-case, `[a-z0-9_]`).
    fn provides() -> Vec<String>;
    /// Score the requested lenses this plugin provides; `lenses` is already filtered to those.
    ///
    /// # Errors
    /// A [`PluginError`] when the clip cannot be scored.
    fn score(clip: &Clip, lenses: &[String]) -> Result<Vec<LensSeries>, PluginError>;
}

/// A moments plugin: moments, buy moments and the summary.
pub trait MomentsPlugin: Describe {
    /// # Errors
    /// A [`PluginError`] when the clip cannot be read.
    fn detect(clip: &Clip, lenses: &[LensSeries]) -> Result<Detection, PluginError>;
}

/// A manipulation plugin: the spec's manipulation block.
pub trait ManipulationPlugin: Describe {
    /// # Errors
    /// A [`PluginError`] when the clip cannot be read.
    fn analyze(clip: &Clip) -> Result<Manipulation, PluginError>;
}

#[doc(hidden)]
pub fn __info<D: Describe>(
    name: &str,
    version: &str,
    authors: &str,
    provides: Vec<String>,
) -> PluginInfo {
    PluginInfo {
        name: name.to_string(),
        version: version.to_string(),
        author: authors.to_string(),
        description: D::description(),
        provides,
        limits: D::limits(),
    }
}

/// Export a [`LensPlugin`] as the component's `lens` world. `name = "…", version = "…"` override
/// the crate's own (for a build that ships under another name).
#[macro_export]
macro_rules! export_lens {
    ($ty:ty) => {
        $crate::export_lens!($ty, name = env!("CARGO_PKG_NAME"), version = env!("CARGO_PKG_VERSION"));
    };
    ($ty:ty, name = $name:expr, version = $version:expr) => {
        // Exports exist only in the component; a host build (unit tests, a native bench)
        // links the plugin as an ordinary library.
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __BrainscanLens;
            impl $crate::__LensGuest for __BrainscanLens {
                fn describe() -> $crate::PluginInfo {
                    $crate::__info::<$ty>($name, $version, env!("CARGO_PKG_AUTHORS"), <$ty as $crate::LensPlugin>::provides())
                }
                fn score(
                    clip: $crate::Clip,
                    lenses: ::alloc::vec::Vec<::alloc::string::String>,
                ) -> Result<::alloc::vec::Vec<$crate::LensSeries>, $crate::PluginError> {
                    $crate::validate_clip(&clip)?;
                    let provided = <$ty as $crate::LensPlugin>::provides();
                    let wanted: ::alloc::vec::Vec<::alloc::string::String> =
                        lenses.into_iter().filter(|l| provided.contains(l)).collect();
                    <$ty as $crate::LensPlugin>::score(&clip, &wanted)
                }
            }
            $crate::bindings::lens::__export_lens_world!(__BrainscanLens with_types_in $crate::bindings::lens);
        };
    };
}

/// Export a [`MomentsPlugin`] as the component's `moments` world.
#[macro_export]
macro_rules! export_moments {
    ($ty:ty) => {
        $crate::export_moments!($ty, name = env!("CARGO_PKG_NAME"), version = env!("CARGO_PKG_VERSION"));
    };
    ($ty:ty, name = $name:expr, version = $version:expr) => {
        // Exports exist only in the component; a host build (unit tests, a native bench)
        // links the plugin as an ordinary library.
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __BrainscanMoments;
            impl $crate::__MomentsGuest for __BrainscanMoments {
                fn describe() -> $crate::PluginInfo {
                    $crate::__info::<$ty>($name, $version, env!("CARGO_PKG_AUTHORS"), ::alloc::vec::Vec::new())
                }
                fn detect(
                    clip: $crate::Clip,
                    lenses: ::alloc::vec::Vec<$crate::LensSeries>,
                ) -> Result<$crate::Detection, $crate::PluginError> {
                    $crate::validate_series(&clip, &lenses)?;
                    <$ty as $crate::MomentsPlugin>::detect(&clip, &lenses)
                }
            }
            $crate::bindings::moments::__export_moments_world!(__BrainscanMoments with_types_in $crate::bindings::moments);
        };
    };
}

/// Export a [`ManipulationPlugin`] as the component's `manipulation` world.
#[macro_export]
macro_rules! export_manipulation {
    ($ty:ty) => {
        $crate::export_manipulation!($ty, name = env!("CARGO_PKG_NAME"), version = env!("CARGO_PKG_VERSION"));
    };
    ($ty:ty, name = $name:expr, version = $version:expr) => {
        // Exports exist only in the component; a host build (unit tests, a native bench)
        // links the plugin as an ordinary library.
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            struct __BrainscanManipulation;
            impl $crate::__ManipulationGuest for __BrainscanManipulation {
                fn describe() -> $crate::PluginInfo {
                    $crate::__info::<$ty>($name, $version, env!("CARGO_PKG_AUTHORS"), ::alloc::vec::Vec::new())
                }
                fn analyze(clip: $crate::Clip) -> Result<$crate::Manipulation, $crate::PluginError> {
                    $crate::validate_clip(&clip)?;
                    <$ty as $crate::ManipulationPlugin>::analyze(&clip)
                }
            }
            $crate::bindings::manipulation::__export_manipulation_world!(__BrainscanManipulation with_types_in $crate::bindings::manipulation);
        };
    };
}

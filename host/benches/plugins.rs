//! The plugin host's costs, measured in one run against a native baseline:
//!
//! - **instantiate**: `InstancePre::instantiate` into a fresh store from the pooling allocator
//!   (goal: ≤ 10 µs p50);
//! - **per-call overhead**: the whole host path of one `score` call on a 1 s clip — input
//!   check, conversion, a blocking-pool hop, store, fuel, instantiate, call, output check —
//!   minus the same clip scored natively;
//! - **plugin stage, 180 s clip**: `lens-standard` scoring all four lenses in wasm through the
//!   full host path, and the guest call alone, against the same Rust code compiled natively
//!   (goal: ≤ 2×).
//!
//! Run: `cargo bench -p brainscan --bench plugins` (add `-- --quick` for fewer samples).

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use brainscan::config::PluginConfig;
use brainscan::plugins::bindings::ClipData;
use brainscan::plugins::conformance::fixture_clip;
use brainscan::plugins::{PluginRuntime, defaults};
use brainscan_sdk::LensPlugin;

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let i = ((samples.len() - 1) as f64 * p).round() as usize;
    samples[i]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// The host's clip as the SDK's type, for the native baseline.
fn sdk_clip(clip: &ClipData) -> brainscan_sdk::Clip {
    brainscan_sdk::Clip {
        duration_sec: clip.duration_sec,
        networks: clip
            .networks
            .iter()
            .map(|r| brainscan_sdk::NetworkSecond {
                visual: r[0],
                somatomotor: r[1],
                dorsal_attention: r[2],
                ventral_attention: r[3],
                limbic: r[4],
                frontoparietal: r[5],
                default_mode: r[6],
            })
            .collect(),
        modalities: brainscan_sdk::Modalities {
            video: clip.video,
            audio: clip.audio,
        },
        transcript: Vec::new(),
    }
}

struct Row {
    what: &'static str,
    p50: Duration,
    p99: Duration,
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let scale = if quick { 10 } else { 1 };
    let tokio = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let runtime = PluginRuntime::new(PluginConfig::defaults(), None)?;
    let bytes = std::fs::read(std::path::Path::new(defaults::WASM_DIR).join("lens_standard.wasm"))?;
    let t = Instant::now();
    let plugin = Arc::new(
        runtime
            .load(&bytes, "bench")
            .map_err(|e| anyhow::anyhow!("{e}"))?,
    );
    let compile = t.elapsed();
    let lenses = plugin.manifest.provides.clone();
    let mut rows = Vec::new();

    // Instantiate.
    for _ in 0..200 {
        runtime.instantiate_only(&plugin)?;
    }
    let mut inst: Vec<Duration> = (0..20_000 / scale)
        .map(|_| runtime.instantiate_only(&plugin))
        .collect::<anyhow::Result<_>>()?;
    rows.push(Row {
        what: "instantiate (InstancePre, pooling)",
        p50: percentile(&mut inst, 0.5),
        p99: percentile(&mut inst, 0.99),
    });

    // Per-call overhead: a 1 s clip, whole host path vs native.
    let short = fixture_clip(1);
    let short_sdk = sdk_clip(&short);
    let mut call_1s = Vec::new();
    tokio.block_on(async {
        for i in 0..(5_000 / scale + 100) {
            let t = Instant::now();
            let out = runtime.score(&plugin, &short, &lenses).await;
            let d = t.elapsed();
            black_box(out.map_err(|e| anyhow::anyhow!("{e}"))?);
            if i >= 100 {
                call_1s.push(d);
            }
        }
        anyhow::Ok(())
    })?;
    let mut native_1s: Vec<Duration> = (0..5_000 / scale)
        .map(|_| {
            let t = Instant::now();
            black_box(lens_standard::lens::StandardLenses::score(
                black_box(&short_sdk),
                &lenses,
            ))
            .ok();
            t.elapsed()
        })
        .collect();
    // What a guest call pays before any wasm runs: the hop to tokio's blocking pool (guest
    // code never runs on the async workers) under the outer timeout.
    let mut hop = Vec::new();
    tokio.block_on(async {
        for i in 0..(5_000 / scale + 100) {
            let t = Instant::now();
            let r = tokio::time::timeout(
                Duration::from_secs(2),
                tokio::task::spawn_blocking(|| black_box(1)),
            )
            .await;
            let d = t.elapsed();
            black_box(r.ok());
            if i >= 100 {
                hop.push(d);
            }
        }
    });
    rows.push(Row {
        what: "blocking-pool hop + timeout, empty",
        p50: percentile(&mut hop, 0.5),
        p99: percentile(&mut hop, 0.99),
    });
    let call_1s_p50 = percentile(&mut call_1s, 0.5);
    rows.push(Row {
        what: "score, 1 s clip, full host path",
        p50: call_1s_p50,
        p99: percentile(&mut call_1s, 0.99),
    });
    let native_1s_p50 = percentile(&mut native_1s, 0.5);
    rows.push(Row {
        what: "score, 1 s clip, native",
        p50: native_1s_p50,
        p99: percentile(&mut native_1s, 0.99),
    });

    // The plugin stage on the longest clip.
    let long = fixture_clip(180);
    let long_sdk = sdk_clip(&long);
    let mut full = Vec::new();
    let mut guest = Vec::new();
    let mut fuel = 0;
    tokio.block_on(async {
        for i in 0..(1_000 / scale + 20) {
            let t = Instant::now();
            let (out, stats) = runtime
                .score(&plugin, &long, &lenses)
                .await
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            let d = t.elapsed();
            black_box(out);
            fuel = stats.fuel_used;
            if i >= 20 {
                full.push(d);
                guest.push(Duration::from_nanos(stats.call_ns));
            }
        }
        anyhow::Ok(())
    })?;
    let mut native: Vec<Duration> = (0..1_000 / scale)
        .map(|_| {
            let t = Instant::now();
            black_box(lens_standard::lens::StandardLenses::score(
                black_box(&long_sdk),
                &lenses,
            ))
            .ok();
            t.elapsed()
        })
        .collect();
    let full_p50 = percentile(&mut full, 0.5);
    let guest_p50 = percentile(&mut guest, 0.5);
    let native_p50 = percentile(&mut native, 0.5);
    rows.push(Row {
        what: "plugin stage, 180 s, full host path",
        p50: full_p50,
        p99: percentile(&mut full, 0.99),
    });
    rows.push(Row {
        what: "plugin stage, 180 s, guest call only",
        p50: guest_p50,
        p99: percentile(&mut guest, 0.99),
    });
    rows.push(Row {
        what: "plugin stage, 180 s, native",
        p50: native_p50,
        p99: percentile(&mut native, 0.99),
    });

    println!(
        "plugin bench: lens-standard@{} ({} bytes, compiled in {:.0} ms), 4 lenses{}",
        plugin.manifest.version,
        bytes.len(),
        compile.as_secs_f64() * 1e3,
        if quick { ", --quick" } else { "" }
    );
    println!("{:<40} {:>12} {:>12}", "", "p50 µs", "p99 µs");
    for r in &rows {
        println!("{:<40} {:>12.1} {:>12.1}", r.what, us(r.p50), us(r.p99));
    }
    println!();
    println!(
        "per-call overhead (1 s clip, host path − native): {:.1} µs",
        us(call_1s_p50) - us(native_1s_p50)
    );
    println!(
        "180 s stage, wasm full path / native: {:.2}×   (goal ≤ 2×)",
        full_p50.as_secs_f64() / native_p50.as_secs_f64()
    );
    println!(
        "180 s stage, guest call only / native: {:.2}×",
        guest_p50.as_secs_f64() / native_p50.as_secs_f64()
    );
    println!(
        "instantiate p50: {:.2} µs   (goal ≤ 10 µs)",
        us(rows[0].p50)
    );
    println!("fuel for the 180 s clip: {fuel}");
    Ok(())
}

//! The known-groups validity battery, as registered in `models/qualia/v2/KNOWN-GROUPS-PLAN.md`
//! before its first run: scripted clips that plainly differ on a construct (a hard sell, calm
//! product facts, neutral speech, an emotional appeal, a call to action and the same text
//! without it, silent test patterns), each in four presentations (two voices, a still card, a
//! moving street scene, audio only), scored through the model and the built-in lens plugin.
//!
//! A validity test: the orderings follow from what the constructs are, not from the weights,
//! so a model whose features do not carry a construct fails its row whatever its weights are.
//! Every row passes on qualia 2.9.0 and on 2.11.0, with lens-standard 2.7.0, 2.8.0 and 2.9.0 (the
//! first run, on qualia 2.8.0, failed five: the model card's table "Known-groups validity" has
//! every run); each row's mean difference is pinned at the card's figure, so the card cannot go
//! stale.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use futures_util::StreamExt as _;

use crate::support::{
    ATTENTION, H264, MANIPULATION, MEMORY, PURCHASE_INTENT, STILL, analyse_shared,
    bootstrap_mean_interval, builtin, default_lens_means, ffmpeg, lens_series, pattern_clip,
    real_media, scored_in_order, voiced,
};

/// The plan's groups. `CallToAction` is [`Group::Facts`] with one sentence added; the plan's
/// C− is the facts group itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Group {
    HardSell,
    Facts,
    Neutral,
    Emotional,
    CallToAction,
}

const GROUPS: [Group; 5] = [
    Group::HardSell,
    Group::Facts,
    Group::Neutral,
    Group::Emotional,
    Group::CallToAction,
];

pub const HARD_SELL: [&str; 4] = [
    "Hurry, this offer ends tonight. Only three left in stock. Call now and get half price. Do not miss out.",
    "Everyone is switching, and you will be left behind. Doctors recommend it. Order yours today before it is gone.",
    "Last chance. Prices go up at midnight. Thousands of happy customers cannot be wrong. Buy now.",
    "Act fast. This deal will never come back. Join millions who already said yes. Click the button right now.",
];

pub const FACTS: [&str; 4] = [
    "The blender has a one thousand watt motor and a two litre glass jug. It weighs four kilograms and has five speed settings.",
    "This kettle boils one litre in about three minutes. It uses two thousand two hundred watts and switches off when the water boils. It is not suitable for induction hobs.",
    "The laptop has sixteen gigabytes of memory and a fourteen inch screen. Its battery lasts about nine hours in our tests, two hours less than the previous model.",
    "These running shoes weigh two hundred and forty grams. The sole is rubber with a foam midsole. Sizes run small, so consider one size up.",
];

pub const NEUTRAL: [&str; 4] = [
    "The river runs north through the valley and joins the sea near the old harbour. In winter the water is higher.",
    "The office is on the third floor. The meeting room is at the end of the corridor, next to the kitchen.",
    "The train leaves the station at nine and reaches the coast by noon. The line was built a century ago.",
    "The library opens at eight. Books are sorted by subject, and the reading room is on the ground floor.",
];

const EMOTIONAL: [&str; 4] = [
    "When my father died, the house went quiet. I still set two cups on the table some mornings, and I cry when I remember.",
    "She held her newborn daughter for the first time and wept. Every fear she had melted away into love.",
    "The old dog waited by the door every evening for a boy who was never coming home again.",
    "We lost everything in the fire. My children's drawings, our photographs, the quilt my mother made. Nothing is left.",
];

/// The one sentence that turns a facts script into its call-to-action twin.
const CALL_TO_ACTION: &str = "Order yours today.";

fn script(group: Group, index: usize) -> String {
    match group {
        Group::HardSell => HARD_SELL[index].to_owned(),
        Group::Facts => FACTS[index].to_owned(),
        Group::Neutral => NEUTRAL[index].to_owned(),
        Group::Emotional => EMOTIONAL[index].to_owned(),
        Group::CallToAction => format!("{} {CALL_TO_ACTION}", FACTS[index]),
    }
}

/// The plan's four presentations: a voice, and a picture or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Presentation {
    StillUs,
    MovingUs,
    StillF,
    Audio,
}

const PRESENTATIONS: [Presentation; 4] = [
    Presentation::StillUs,
    Presentation::MovingUs,
    Presentation::StillF,
    Presentation::Audio,
];

impl Presentation {
    fn voice(self) -> &'static str {
        match self {
            Self::StillUs | Self::MovingUs => "en-us",
            Self::StillF => "en-gb+f3",
            Self::Audio => "en-gb",
        }
    }
}

/// One battery clip: the script spoken in the presentation's voice, over its picture.
fn clip(dir: &Path, group: Group, index: usize, presentation: Presentation) -> PathBuf {
    let stem = format!("{group:?}-{index}-{presentation:?}");
    let wav = voiced(
        dir,
        &format!("{stem}.wav"),
        Some(presentation.voice()),
        &script(group, index),
    );
    let wav = wav.to_str().expect("utf8").to_owned();
    let name = format!("{stem}.mp4");
    let bikes = real_media().join("bikes.mp4");
    let picture: Vec<&str> = match presentation {
        Presentation::Audio => return PathBuf::from(wav),
        Presentation::StillUs | Presentation::StillF => vec!["-f", "lavfi", "-i", STILL],
        Presentation::MovingUs => {
            vec!["-stream_loop", "-1", "-i", bikes.to_str().expect("utf8")]
        }
    };
    let args: Vec<&str> = [
        &picture[..],
        &["-i", &wav, "-map", "0:v", "-map", "1:a", "-shortest"],
        &["-vf", "scale=320:180,fps=25"],
        &H264,
        &["-c:a", "aac", &name],
    ]
    .concat();
    ffmpeg(dir, &args);
    dir.join(name)
}

/// The lens plugin's four clip means (attention, memory, purchase intent, manipulation), its
/// per-second manipulation scores, and how many tactics the manipulation block's transcript
/// lexicon found.
async fn score(path: &Path) -> ([f64; 4], Vec<f64>, usize) {
    let out = analyse_shared(path).await;
    let (runtime, data, series) = lens_series(&out).await;
    let block = builtin("manipulation_standard.wasm");
    let (block, _) = runtime
        .analyze(&block, &data)
        .await
        .expect("manipulation block");
    let tactics = block.tactics.len();
    let manipulation: Vec<f64> = series
        .iter()
        .find(|s| s.lens == "manipulation")
        .expect("the lens plugin reports manipulation")
        .seconds
        .iter()
        .map(|s| f64::from(s.score))
        .collect();
    (default_lens_means(&series), manipulation, tactics)
}

/// A row of the plan: its matched-pair differences, their mean, the bootstrap interval and how
/// many pairs are in order.
struct Row {
    id: &'static str,
    differences: Vec<f64>,
    floor: f64,
}

impl Row {
    fn mean(&self) -> f64 {
        self.differences.iter().sum::<f64>() / self.differences.len() as f64
    }

    fn in_order(&self) -> usize {
        self.differences.iter().filter(|d| **d > 0.0).count()
    }

    fn passes(&self) -> bool {
        self.mean() >= self.floor && self.in_order() >= 12
    }

    /// The 95 % percentile interval of the mean difference over 2000 bootstrap resamples of
    /// the matched pairs (the plan's seed).
    fn interval(&self) -> (f64, f64) {
        bootstrap_mean_interval(&self.differences, 20_261_126)
    }
}

/// The two-sided sign test p value of `k` of `n` untied pairs in order (1 with none untied).
fn sign_test(k: usize, n: usize) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let choose = |n: usize, k: usize| -> f64 {
        (0..k).fold(1.0, |acc, i| acc * (n - i) as f64 / (i + 1) as f64)
    };
    let tail = |k: usize| (k..=n).map(|j| choose(n, j)).sum::<f64>() / 2f64.powi(n as i32);
    (2.0 * tail(k.max(n - k))).min(1.0)
}

#[tokio::test]
async fn the_lenses_order_known_groups_as_their_names_say() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let mut means: BTreeMap<(Group, usize, Presentation), [f64; 4]> = BTreeMap::new();
    let mut tactics: BTreeMap<Group, usize> = BTreeMap::new();
    // One presentation after another: the still and moving presentations share their
    // voice-over, and scored far apart the moving one finds the still one's transcript made
    // (`brainscan::speech::memory`) instead of waiting beside it for Whisper.
    let keys: Vec<(Group, usize, Presentation)> = PRESENTATIONS
        .iter()
        .flat_map(|&p| {
            GROUPS
                .iter()
                .flat_map(move |&g| (0..4).map(move |i| (g, i, p)))
        })
        .collect();
    let mut scores = scored_in_order(keys.iter().map(|&(g, i, p)| async move {
        let path = clip(d, g, i, p);
        score(&path).await
    }));
    for &(group, index, presentation) in &keys {
        let (m, _, found) = scores.next().await.expect("one score per clip");
        println!(
            "{group:?} {index} {presentation:?}: attention {:.1}, memory {:.1}, purchase intent {:.1}, manipulation {:.1}, tactics {found}",
            m[0], m[1], m[2], m[3]
        );
        *tactics.entry(group).or_default() += found;
        means.insert((group, index, presentation), m);
    }
    // The still and moving presentations share their voice-over: one transcript serves both.
    println!(
        "transcripts reused in this test binary so far: {}",
        crate::support::listener().speech.transcripts_reused()
    );
    // Matched pairs: same presentation, same script index, two groups.
    let pairs = |lens: usize, a: Group, b: Group| -> Vec<f64> {
        PRESENTATIONS
            .iter()
            .flat_map(|p| (0..4).map(move |i| (*p, i)))
            .map(|(p, i)| means[&(a, i, p)][lens] - means[&(b, i, p)][lens])
            .collect()
    };
    let moving_over_still: Vec<f64> = [
        Group::HardSell,
        Group::Facts,
        Group::Neutral,
        Group::Emotional,
    ]
    .iter()
    .flat_map(|g| (0..4).map(move |i| (*g, i)))
    .map(|(g, i)| {
        means[&(g, i, Presentation::MovingUs)][ATTENTION]
            - means[&(g, i, Presentation::StillUs)][ATTENTION]
    })
    .collect();
    let rows = [
        Row {
            id: "M1 manipulation H > F",
            differences: pairs(MANIPULATION, Group::HardSell, Group::Facts),
            floor: 10.0,
        },
        Row {
            id: "M2 manipulation H > N",
            differences: pairs(MANIPULATION, Group::HardSell, Group::Neutral),
            floor: 10.0,
        },
        Row {
            id: "M3 manipulation C+ > C-",
            differences: pairs(MANIPULATION, Group::CallToAction, Group::Facts),
            floor: 3.0,
        },
        Row {
            id: "P1 purchase intent H > N",
            differences: pairs(PURCHASE_INTENT, Group::HardSell, Group::Neutral),
            floor: 5.0,
        },
        Row {
            id: "P2 purchase intent F > N",
            differences: pairs(PURCHASE_INTENT, Group::Facts, Group::Neutral),
            floor: 5.0,
        },
        Row {
            id: "P3 purchase intent H > E",
            differences: pairs(PURCHASE_INTENT, Group::HardSell, Group::Emotional),
            floor: 5.0,
        },
        Row {
            id: "A1 attention moving > still",
            differences: moving_over_still,
            floor: 5.0,
        },
        Row {
            id: "R1 memory E > N",
            differences: pairs(MEMORY, Group::Emotional, Group::Neutral),
            floor: 5.0,
        },
    ];
    let mut results = BTreeMap::new();
    for row in &rows {
        let (low, high) = row.interval();
        println!(
            "{}: mean difference {:+.1} [{low:+.1}, {high:+.1}], {} of 16 in order, floor {}: {}",
            row.id,
            row.mean(),
            row.in_order(),
            row.floor,
            if row.passes() { "PASS" } else { "FAIL" }
        );
        results.insert(row.id, (row.passes(), row.mean(), row.in_order()));
    }
    let m1 = &rows[0];
    let untied = m1.differences.iter().filter(|d| **d != 0.0).count();
    println!(
        "M1 sign test: p = {:.4} ({} of {untied} untied pairs in order)",
        sign_test(m1.in_order(), untied),
        m1.in_order()
    );
    // The transcript lexicon and the lens must agree in sign (issue 42): more tactics found in
    // the hard sells than in the facts, and in the call-to-action twins than in the facts.
    println!("tactics found per group (16 clips each): {tactics:?}");
    // S1 and S2: silent synthetic patterns.
    let mut silent_exact = true;
    let mut silent_purchase = Vec::new();
    for (name, source) in [
        ("testsrc2", "testsrc2=s=640x360:r=25"),
        ("smptebars", "smptebars=s=640x360:r=25"),
        ("mandelbrot", "mandelbrot=s=640x360:r=25"),
    ] {
        let path = pattern_clip(d, name, source);
        let (m, manipulation, _) = score(&path).await;
        println!(
            "S {name}: attention {:.1}, memory {:.1}, purchase intent {:.1}, manipulation {:.1}",
            m[0], m[1], m[2], m[3]
        );
        silent_exact &= manipulation.iter().all(|s| *s == 50.0);
        silent_purchase.push(m[PURCHASE_INTENT]);
    }
    let s2 = silent_purchase.iter().all(|p| (45.0..=55.0).contains(p));
    println!("S1 manipulation 50 every second: {silent_exact}");
    println!("S2 purchase intent within 45-55: {s2} ({silent_purchase:.1?})");
    // Every registered row passes on qualia 2.9.0 with lens-standard 2.5.0 and on 2.11.0 with
    // lens-standard 2.6.0 (the first run, on 2.8.0, failed M1, M2, M3, P2 and P3: the model card
    // has every table). 2.11.0's M1 is 12.5 points under 2.9.0's: deliberation now weighs
    // Limbic, which the hard sells drive. lens-standard 2.7.0 (manipulation reads the balance of
    // pressure over deliberation; plan deviation 2) ships because every row still passes: M1
    // +42.3, M2 +55.2, M3 +4.2. lens-standard 2.8.0 (purchase intent reads the reward profile's
    // part that the emotion profile does not predict; plan deviation 3) ships on the same rule:
    // P1 +72.0, P2 +37.2, P3 +62.2 (were +56.4, +15.4, +11.7), the other rows unchanged.
    // lens-standard 2.9.0 (pressure reads the emotion profile alone; plan deviation 4) ships on
    // the same rule: M1 +38.8, M2 +46.6, M3 +4.0 (were +42.3, +55.2, +4.2), the other rows
    // unchanged. Each row's mean difference is pinned at the card's figure, so the card cannot
    // go stale.
    assert!(silent_exact, "S1");
    assert!(s2, "S2: {silent_purchase:?}");
    let card = [
        ("M1 manipulation H > F", 38.8),
        ("M2 manipulation H > N", 46.6),
        ("M3 manipulation C+ > C-", 4.0),
        ("P1 purchase intent H > N", 72.0),
        ("P2 purchase intent F > N", 37.2),
        ("P3 purchase intent H > E", 62.2),
        ("A1 attention moving > still", 47.2),
        ("R1 memory E > N", 24.9),
    ];
    for (id, figure) in card {
        let (passes, mean, in_order) = results[id];
        assert!(passes, "{id}: {mean:+.1}, {in_order} of 16 in order");
        assert!(
            (mean - figure).abs() < 1.0,
            "{id}: mean difference {mean:+.1}; the model card says {figure:+.1}: update it"
        );
    }
    // The transcript lexicon agrees with the lens in sign: more tactics in the hard sells than
    // in the facts, and in the call-to-action twins than in the facts (which have none).
    assert!(
        tactics[&Group::HardSell] > tactics[&Group::Facts],
        "{tactics:?}"
    );
    assert!(
        tactics[&Group::CallToAction] > tactics[&Group::Facts],
        "{tactics:?}"
    );
    assert_eq!(
        tactics[&Group::Neutral] + tactics[&Group::Emotional],
        0,
        "{tactics:?}"
    );
}

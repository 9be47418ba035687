//! Persuasion tactics in the transcript, from a fixed phrase lexicon (below, and in the
//! README). Matching is case-insensitive on whole words (a phrase must start and end at a
//! word boundary, so "free" does not match "freedom"); curly apostrophes read as straight
//! ones. One entry per tactic per line, in time order, at most [`MAX_TACTICS`].

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use brainscan_sdk::text::clip_to;
use brainscan_sdk::{Clip, Tactic};

pub const MAX_TACTICS: usize = 50;
/// Quotes are cut to this many characters.
pub const MAX_QUOTE_CHARS: usize = 200;

/// `(tactic, kind, phrases)`. `kind` groups tactics by the lever they pull: `pressure`
/// (time or supply), `social`, `authority`, `emotional`.
pub const LEXICON: &[(&str, &str, &[&str])] = &[
    (
        "scarcity",
        "pressure",
        &[
            "only a few left",
            "few left",
            "limited stock",
            "limited supply",
            "while supplies last",
            "limited edition",
            "selling out",
            "sold out",
            "almost gone",
            "last chance",
            "exclusive",
            "rare",
        ],
    ),
    (
        "urgency",
        "pressure",
        &[
            "act now",
            "hurry",
            "today only",
            "ends tonight",
            "ends soon",
            "don't wait",
            "limited time",
            "right now",
            "before it's too late",
            "order now",
            "buy now",
            "now or never",
            "deadline",
        ],
    ),
    // Since 2.5.0: a call to action asks the listener to act on the message itself. Without
    // this entry the lexicon found nothing in "Order yours today" or "Call now", the central
    // case of the known-groups battery's call-to-action pair.
    (
        "call_to_action",
        "pressure",
        &[
            "call now",
            "call today",
            "call us today",
            "order yours",
            "order today",
            "buy today",
            "get yours",
            "shop now",
            "book now",
            "sign up now",
            "subscribe now",
            "click the link",
            "click the button",
        ],
    ),
    (
        "social_proof",
        "social",
        &[
            "everyone is",
            "everybody is",
            "millions of",
            "thousands of",
            "best-selling",
            "bestselling",
            "best selling",
            "most popular",
            "customers love",
            "trusted by",
            "join the",
            "five-star",
            "5-star",
        ],
    ),
    (
        "authority",
        "authority",
        &[
            "doctors recommend",
            "dentists recommend",
            "experts",
            "expert",
            "scientifically proven",
            "clinically proven",
            "studies show",
            "research shows",
            "recommended by",
            "certified",
            "award-winning",
        ],
    ),
    (
        "fear",
        "emotional",
        &[
            "don't miss",
            "don't let",
            "danger",
            "dangerous",
            "at risk",
            "afraid",
            "protect your",
            "warning",
            "you could lose",
            "too late",
        ],
    ),
    (
        "reciprocity",
        "social",
        &[
            "free gift",
            "for free",
            "free",
            "bonus",
            "our gift",
            "complimentary",
            "on us",
            "no cost",
        ],
    ),
    (
        "flattery",
        "emotional",
        &[
            "you deserve",
            "you're worth it",
            "you are worth it",
            "smart people",
            "people like you",
            "treat yourself",
            "you've earned",
        ],
    ),
];

fn normalise(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\u{2019}' | '\u{2018}' => '\'',
            c => c.to_ascii_lowercase(),
        })
        .collect()
}

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '\''
}

/// Whether `phrase` occurs in `text` as whole words (both already normalised).
pub fn contains_phrase(text: &str, phrase: &str) -> bool {
    let mut from = 0;
    while let Some(i) = text[from..].find(phrase) {
        let start = from + i;
        let end = start + phrase.len();
        let before_ok = text[..start]
            .chars()
            .next_back()
            .is_none_or(|c| !is_word(c));
        let after_ok = text[end..].chars().next().is_none_or(|c| !is_word(c));
        if before_ok && after_ok {
            return true;
        }
        from = start + text[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

pub fn find(clip: &Clip) -> Vec<Tactic> {
    let mut lines: Vec<_> = clip
        .transcript
        .iter()
        .filter(|l| l.start_sec.is_finite())
        .collect();
    lines.sort_by(|a, b| a.start_sec.total_cmp(&b.start_sec));
    let mut out = Vec::new();
    for line in lines {
        let text = normalise(&line.text);
        for (tactic, kind, phrases) in LEXICON {
            if phrases.iter().any(|p| contains_phrase(&text, p)) {
                if out.len() == MAX_TACTICS {
                    return out;
                }
                out.push(Tactic {
                    tactic: (*tactic).to_string(),
                    kind: (*kind).to_string(),
                    at_sec: line.start_sec.max(0.0) as u32,
                    quote: clip_to(line.text.trim(), MAX_QUOTE_CHARS),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use brainscan_sdk::{Modalities, NetworkSecond, TranscriptLine};

    fn clip(lines: &[(f32, &str)]) -> Clip {
        Clip {
            duration_sec: 30.0,
            networks: alloc::vec![
                NetworkSecond {
                    visual: 0.0,
                    somatomotor: 0.0,
                    dorsal_attention: 0.0,
                    ventral_attention: 0.0,
                    limbic: 0.0,
                    frontoparietal: 0.0,
                    default_mode: 0.0,
                };
                30
            ],
            modalities: Modalities {
                video: true,
                audio: true,
            },
            transcript: lines
                .iter()
                .map(|(t, s)| TranscriptLine {
                    start_sec: *t,
                    end_sec: *t + 2.0,
                    text: (*s).into(),
                })
                .collect(),
        }
    }

    #[test]
    fn finds_each_kind_with_its_second() {
        let got = find(&clip(&[
            (12.4, "Hurry — only a few left at this price!"),
            (2.0, "Doctors recommend it, and millions of people agree."),
            (20.0, "You deserve it. Don’t miss out."),
        ]));
        let pairs: Vec<(&str, u32)> = got.iter().map(|t| (t.tactic.as_str(), t.at_sec)).collect();
        assert_eq!(
            pairs,
            alloc::vec![
                ("social_proof", 2),
                ("authority", 2),
                ("scarcity", 12),
                ("urgency", 12),
                ("fear", 20),
                ("flattery", 20),
            ]
        );
        assert_eq!(got[2].kind, "pressure");
        assert_eq!(got[2].quote, "Hurry — only a few left at this price!");
    }

    #[test]
    fn whole_words_only() {
        assert!(!contains_phrase("freedom is not for sale", "free"));
        assert!(contains_phrase("it's free.", "free"));
        assert!(!contains_phrase("a rarer bird", "rare"));
        assert!(find(&clip(&[(1.0, "The weather was calm and the river wide.")])).is_empty());
    }
}

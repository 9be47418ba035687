//! The language subtitles are written in, identified from their text.
//!
//! Whisper names the language of speech; subtitles come as text, and may not be in the
//! language spoken (a French track on an English film). Their language is read from the text
//! with `whatlang` (MIT): trigram profiles of 69 languages with a script pre-filter, pure Rust
//! and no model file, so it runs wherever the service does. Its answer is used only when
//! whatlang calls it reliable; otherwise the subtitles are read as before, by the English
//! model, and the provenance says that the language was not identified.
//!
//! A container may also name a subtitle stream's language in a tag. That is a declaration,
//! not a measurement (a mislabelled track is common), so the text decides when it can; the tag
//! names the language only when the text is too short to tell ([`from_tag`]), as a two-line
//! advertisement's subtitles often are.

use super::{Language, TranscriptLine};

/// Text beyond this many bytes adds nothing to the identification and only costs time.
const MAX_BYTES: usize = 4_000;

/// What [`Language::transcribed_by`] says for subtitles: nothing transcribed them.
pub const SUBTITLES: &str = "subtitles (language identified from the text by whatlang)";

/// What [`Language::transcribed_by`] says for subtitles whose language their stream's tag
/// names, because their text was too short to identify it.
pub const SUBTITLES_TAGGED: &str =
    "subtitles (language from the subtitle stream's tag; too little text to identify it)";

/// ISO 639-2 bibliographic codes, which containers may carry, and the terminology codes (ISO
/// 639-3's) that whatlang uses for the same languages.
const BIBLIOGRAPHIC: [(&str, &str); 20] = [
    ("alb", "sqi"),
    ("arm", "hye"),
    ("baq", "eus"),
    ("bur", "mya"),
    ("chi", "cmn"),
    ("cze", "ces"),
    ("dut", "nld"),
    ("fre", "fra"),
    ("geo", "kat"),
    ("ger", "deu"),
    ("gre", "ell"),
    ("ice", "isl"),
    ("mac", "mkd"),
    ("mao", "mri"),
    ("may", "msa"),
    ("per", "pes"),
    ("rum", "ron"),
    ("slo", "slk"),
    ("tib", "bod"),
    ("wel", "cym"),
];

/// The language a container's tag names (`spa`, `fre`, `es`, `pt-BR`: its primary subtag as
/// ISO 639-2, ISO 639-3 or ISO 639-1), in Whisper's codes, when whatlang and Whisper both know
/// it. `probability` is 0: a tag is a declaration, and nothing measured it.
#[must_use]
pub fn from_tag(tag: &str) -> Option<Language> {
    let primary = tag.split(['-', '_']).next()?.to_ascii_lowercase();
    let lang = match primary.len() {
        2 => whatlang::Lang::all()
            .iter()
            .copied()
            .find(|l| whisper_code(*l) == Some(primary.as_str())),
        3 => {
            let terminology = BIBLIOGRAPHIC
                .iter()
                .find(|(b, _)| *b == primary)
                .map_or(primary.as_str(), |(_, t)| t);
            // whatlang files Chinese as Mandarin (`cmn`); ISO 639-2's `zho` is the same here.
            let terminology = if terminology == "zho" {
                "cmn"
            } else {
                terminology
            };
            whatlang::Lang::from_code(terminology)
        }
        _ => None,
    }?;
    Some(Language {
        code: whisper_code(lang)?.to_owned(),
        probability: 0.0,
        transcribed_by: SUBTITLES_TAGGED.to_owned(),
        foreign_script_lines: 0,
    })
}

/// The language of `lines`, in Whisper's codes, when whatlang identifies it reliably and
/// Whisper's list has it.
#[must_use]
pub fn identify(lines: &[TranscriptLine]) -> Option<Language> {
    let mut text = String::new();
    for line in lines {
        if text.len() >= MAX_BYTES {
            break;
        }
        text.push_str(&line.text);
        text.push('\n');
    }
    let cut = (0..=text.len().min(MAX_BYTES))
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    let info = whatlang::detect(&text[..cut])?;
    if !info.is_reliable() {
        return None;
    }
    Some(Language {
        code: whisper_code(info.lang())?.to_owned(),
        probability: info.confidence() as f32,
        transcribed_by: SUBTITLES.to_owned(),
        foreign_script_lines: 0,
    })
}

/// whatlang's language as a Whisper language code (ISO 639-1, with Whisper's `jw` for
/// Javanese); `None` for the four whatlang knows and Whisper does not (Esperanto, Odia, Akan,
/// Zulu).
fn whisper_code(lang: whatlang::Lang) -> Option<&'static str> {
    use whatlang::Lang as L;
    Some(match lang {
        L::Eng => "en",
        L::Rus => "ru",
        L::Cmn => "zh",
        L::Spa => "es",
        L::Por => "pt",
        L::Ita => "it",
        L::Ben => "bn",
        L::Fra => "fr",
        L::Deu => "de",
        L::Ukr => "uk",
        L::Kat => "ka",
        L::Ara => "ar",
        L::Hin => "hi",
        L::Jpn => "ja",
        L::Heb => "he",
        L::Yid => "yi",
        L::Pol => "pl",
        L::Amh => "am",
        L::Jav => "jw",
        L::Kor => "ko",
        L::Nob => "no",
        L::Dan => "da",
        L::Swe => "sv",
        L::Fin => "fi",
        L::Tur => "tr",
        L::Nld => "nl",
        L::Hun => "hu",
        L::Ces => "cs",
        L::Ell => "el",
        L::Bul => "bg",
        L::Bel => "be",
        L::Mar => "mr",
        L::Kan => "kn",
        L::Ron => "ro",
        L::Slv => "sl",
        L::Hrv => "hr",
        L::Srp => "sr",
        L::Mkd => "mk",
        L::Lit => "lt",
        L::Lav => "lv",
        L::Est => "et",
        L::Tam => "ta",
        L::Vie => "vi",
        L::Urd => "ur",
        L::Tha => "th",
        L::Guj => "gu",
        L::Uzb => "uz",
        L::Pan => "pa",
        L::Aze => "az",
        L::Ind => "id",
        L::Tel => "te",
        L::Pes => "fa",
        L::Mal => "ml",
        L::Mya => "my",
        L::Nep => "ne",
        L::Sin => "si",
        L::Khm => "km",
        L::Tuk => "tk",
        L::Sna => "sn",
        L::Afr => "af",
        L::Lat => "la",
        L::Slk => "sk",
        L::Cat => "ca",
        L::Tgl => "tl",
        L::Hye => "hy",
        L::Epo | L::Ori | L::Aka | L::Zul => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(texts: &[&str]) -> Vec<TranscriptLine> {
        texts
            .iter()
            .enumerate()
            .map(|(i, t)| TranscriptLine {
                start_sec: i as f32,
                end_sec: i as f32 + 1.0,
                text: (*t).to_owned(),
            })
            .collect()
    }

    #[test]
    fn subtitles_are_identified_in_their_own_language() {
        for (code, texts) in [
            (
                "fr",
                [
                    "Dépêchez-vous, cette offre se termine ce soir.",
                    "Plus que trois en stock. Appelez maintenant et payez moitié prix.",
                ],
            ),
            (
                "de",
                [
                    "Beeilen Sie sich, dieses Angebot endet heute Abend.",
                    "Nur noch drei auf Lager. Rufen Sie jetzt an.",
                ],
            ),
            (
                "en",
                [
                    "Hurry, this offer ends tonight.",
                    "Only three left in stock. Call now and get half price.",
                ],
            ),
            (
                "ja",
                [
                    "夜中に電話が鳴ったとき、本当に怖かった。",
                    "それから彼女の声が聞こえて、うれし涙があふれた。",
                ],
            ),
        ] {
            let l = identify(&lines(&texts)).unwrap_or_else(|| panic!("{code}: not identified"));
            assert_eq!(l.code, code);
            assert_eq!(l.transcribed_by, SUBTITLES);
        }
    }

    #[test]
    fn a_tag_names_the_language_in_any_of_its_forms() {
        for (tag, code) in [
            ("spa", "es"),
            ("fre", "fr"),
            ("fra", "fr"),
            ("ger", "de"),
            ("deu", "de"),
            ("ita", "it"),
            ("jpn", "ja"),
            ("chi", "zh"),
            ("zho", "zh"),
            ("es", "es"),
            ("pt-BR", "pt"),
            ("EN", "en"),
        ] {
            let l = from_tag(tag).unwrap_or_else(|| panic!("{tag}: not read"));
            assert_eq!(l.code, code, "{tag}");
            assert_eq!(l.transcribed_by, SUBTITLES_TAGGED);
            assert_eq!(l.probability, 0.0, "a tag is not a measurement");
        }
        for tag in ["", "xx", "qaa", "english", "-"] {
            assert!(from_tag(tag).is_none(), "{tag:?}");
        }
    }

    #[test]
    fn too_little_text_is_not_identified() {
        assert!(identify(&lines(&["OK"])).is_none());
        assert!(identify(&[]).is_none());
    }

    #[test]
    fn long_text_is_cut_at_a_character_boundary_and_still_read() {
        // 47 bytes a line with two-byte letters: the 4,000-byte cut falls inside a line, and
        // on a character boundary.
        let line = "Dépêchez-vous, cette offre se termine ce soir.";
        let many = vec![line; 200];
        let l = identify(&lines(&many)).expect("identified");
        assert_eq!(l.code, "fr");
    }
}

//! Whether a transcript line is written in its language's script.
//!
//! Whisper base, given speech it cannot read, can write letters of scripts the identified
//! language does not use: on espeak-ng's French voice it wrote "d'擓 conditions." and "d'אח
//! deserve l'immichen…" (the language battery's third run). Such a line is a recogniser
//! artefact, not something said, so [`foreign_letters`] lets the speech stage drop it as it
//! drops sound annotations.
//!
//! Latin letters are allowed in every language (names, brands, loanwords: "iPhoneを買う"), as
//! is anything that is not a letter. Each character's script comes from `whatlang`'s script
//! tables (already the subtitles' language identifier), which cover the 24 scripts below; a
//! letter of a script it does not know (Lao, Tibetan, Mongolian, …) is not judged.

use whatlang::Script;

/// The scripts `code` (a Whisper language code) is written in besides Latin; empty for
/// languages written in Latin.
fn own_scripts(code: &str) -> &'static [Script] {
    use Script::*;
    match code {
        "zh" | "yue" => &[Mandarin],
        "ja" => &[Mandarin, Hiragana, Katakana],
        "ko" => &[Hangul, Mandarin],
        "ru" | "uk" | "bg" | "sr" | "mk" | "be" | "kk" | "tg" | "tt" | "ba" | "mn" | "uz" => {
            &[Cyrillic]
        }
        "ar" | "fa" | "ur" | "ps" | "sd" => &[Arabic],
        "he" | "yi" => &[Hebrew],
        "el" => &[Greek],
        "hi" | "mr" | "ne" | "sa" => &[Devanagari],
        "bn" | "as" => &[Bengali],
        "ta" => &[Tamil],
        "te" => &[Telugu],
        "kn" => &[Kannada],
        "ml" => &[Malayalam],
        "gu" => &[Gujarati],
        "pa" => &[Gurmukhi],
        "si" => &[Sinhala],
        "th" => &[Thai],
        "km" => &[Khmer],
        "my" => &[Myanmar],
        "ka" => &[Georgian],
        "hy" => &[Armenian],
        "am" => &[Ethiopic],
        _ => &[],
    }
}

/// Whether `text` holds a letter of a script that is neither Latin nor one `code` is written
/// in.
#[must_use]
pub fn foreign_letters(text: &str, code: &str) -> bool {
    let own = own_scripts(code);
    let mut buffer = [0u8; 4];
    // Full-width Latin letters (`Ｆ`, U+FF21–FF5A) are Latin; whatlang's tables put that block
    // with the CJK scripts.
    let latin_full_width = |c: &char| ('\u{FF21}'..='\u{FF5A}').contains(c);
    text.chars()
        .filter(|c| c.is_alphabetic() && !latin_full_width(c))
        .any(
            |c| match whatlang::detect_script(c.encode_utf8(&mut buffer)) {
                Some(Script::Latin) | None => false,
                Some(script) => !own.contains(&script),
            },
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_of_another_script_are_foreign() {
        // The third battery run's French lines.
        assert!(foreign_letters("d'擓 conditions.", "fr"));
        assert!(foreign_letters(
            "d'אח deserve l'immichen coup de merdonna",
            "fr"
        ));
        assert!(foreign_letters("ESTelesильppetak jós", "la"));
        assert!(foreign_letters("Привет", "en"));
        assert!(!foreign_letters("東京", "ko"));
        assert!(foreign_letters("안녕", "ja"));
    }

    #[test]
    fn a_language_keeps_its_own_script_latin_and_what_is_not_a_letter() {
        assert!(!foreign_letters(
            "Dieser Wasserkocher bringt einen Liter zum Kochen.",
            "de"
        ));
        assert!(!foreign_letters(
            "¡Esta oferta termina esta noche! 50 %",
            "es"
        ));
        assert!(!foreign_letters(
            "いくらですか?とたずねると iPhoneを買う",
            "ja"
        ));
        assert!(!foreign_letters("Ｆｕｌｌ-width ＡＢＣ", "en"));
        assert!(!foreign_letters("Привет, Google", "ru"));
        assert!(!foreign_letters("שלום", "he"));
        assert!(!foreign_letters("Γειά σου", "el"));
        assert!(!foreign_letters("… — 3,000 ♪", "fr"));
    }
}

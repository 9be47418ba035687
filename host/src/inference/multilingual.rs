//! The meaning of speech in languages other than English: the semantic features read by the
//! multilingual embedder (multilingual-e5-small, [`crate::embed::e5`]) on axes anchored in five
//! languages, and put on the model's scale by construction.
//!
//! - **Anchors in five languages.** Each axis's anchor sentences and the neutral reference of
//!   [`super::language`] are used in English and in French, German, Spanish and Japanese
//!   translations (below; written for this purpose, one translation per sentence). An axis's
//!   direction is built exactly as the English model's is ([`language::axes_from`]): from the
//!   centroid of all neutral sentences to the centroid of all its anchors, origin at the
//!   midpoint. Pooling the languages keeps a direction from encoding one language's surface
//!   form: any sentence in any of them sits on the same side of the origin as its meaning.
//! - **One scale.** Each axis's readings are put on the English model's scale by a linear
//!   equating (mean-sigma) over the 210 construction sentences: e5's projection of each
//!   sentence, in any of the five languages, is paired with the English model's reading of its
//!   English original, and e5's origin and factor are those that give e5's readings the English
//!   model's mean and spread over them ([`construct`]). `semantic_change`'s unit is the English
//!   model's over e5's ([`language::units_from`]). This is a construction on the anchor
//!   sentences, not a fit to anything a clip or brain data says.
//! - **Which languages.** e5 is XLM-RoBERTa's tokenizer and pre-training: the 100 languages of
//!   its CC-100 corpus ([`crate::embed::e5::LANGUAGES`], in Whisper's codes). A language
//!   Whisper hears outside that list keeps its transcript but no semantic reading, as before.
//!
//! Whether the readings agree across languages is measured, not assumed, in the speech suite
//! (`tests/speech/embedding.rs`), with floors registered before each first run: the same
//! scripts (a hard sell, calm product facts, neutral narration, a family evening, a night-time
//! scare, a price list, a jacket) in the five languages. An axis whose e5 reading of its target
//! script is not within a factor of 2 of the English model's reads 0 in other languages
//! ([`CARRIES_OVER`]). Until 2026-11-27 the scale matched only the anchors' centroid, and the
//! evidence axis failed that gate (3.6–5.0 times); the equating is the deviation that followed.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use super::language::{self, AXES, Embed, NEUTRAL, SemanticAxes};
use crate::embed::e5::MultilingualEmbedder;
use crate::embed::{DIM, dot};

impl Embed for MultilingualEmbedder {
    fn embed(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        MultilingualEmbedder::embed(self, texts)
    }
}

/// The multilingual reader of a process: the embedder and its axes, made at the first clip in
/// a language other than English (an English-only deployment never loads it), and again only
/// if the model's own axes change (a model swap).
pub struct MultilingualMeaning {
    dir: PathBuf,
    made: Mutex<Option<Made>>,
}

/// The model's axes a reader was made for, the embedder, and its axes on their scale.
type Made = (SemanticAxes, Arc<MultilingualEmbedder>, Arc<SemanticAxes>);

impl MultilingualMeaning {
    /// The reader of the model folder `dir` (`multilingual-e5-small/`), not yet loaded.
    #[must_use]
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            made: Mutex::new(None),
        }
    }

    /// The embedder and its axes on the scale of `model_axes` (built by `english`).
    ///
    /// # Errors
    /// The model cannot be loaded, or an embedder fails.
    pub fn reader(
        &self,
        english: &dyn Embed,
        model_axes: &SemanticAxes,
    ) -> anyhow::Result<(Arc<MultilingualEmbedder>, Arc<SemanticAxes>)> {
        let mut made = self
            .made
            .lock()
            .map_err(|_| anyhow::anyhow!("the multilingual reader's loader panicked"))?;
        if let Some((model, embedder, axes)) = made.as_ref()
            && model == model_axes
        {
            return Ok((embedder.clone(), axes.clone()));
        }
        let embedder = crate::embed::shared_multilingual(&self.dir)?;
        let axes = Arc::new(axes(embedder.as_ref(), english, model_axes)?);
        *made = Some((model_axes.clone(), embedder.clone(), axes.clone()));
        Ok((embedder, axes))
    }
}

/// The translation languages of the anchors, in the order of the rows below.
pub const TRANSLATED: [&str; 4] = ["fr", "de", "es", "ja"];

/// The neutral reference in [`TRANSLATED`]'s languages, sentence for sentence with [`NEUTRAL`].
pub const NEUTRAL_TRANSLATED: [[&str; 6]; 4] = [
    [
        "la table est dans la pièce",
        "le rapport décrit le processus",
        "il se trouve au deuxième étage",
        "le système utilise un format standard",
        "la rivière traverse la vallée",
        "la réunion est dans le calendrier",
    ],
    [
        "der Tisch steht im Zimmer",
        "der Bericht beschreibt den Ablauf",
        "es befindet sich im zweiten Stock",
        "das System verwendet ein Standardformat",
        "der Fluss fließt durch das Tal",
        "das Treffen steht im Kalender",
    ],
    [
        "la mesa está en la habitación",
        "el informe describe el proceso",
        "está en el segundo piso",
        "el sistema usa un formato estándar",
        "el río atraviesa el valle",
        "la reunión está en el calendario",
    ],
    [
        "テーブルは部屋の中にある",
        "報告書はその手順を説明している",
        "それは二階にある",
        "そのシステムは標準形式を使う",
        "川が谷を流れている",
        "会議は予定表に入っている",
    ],
];

/// Each axis's anchors ([`AXES`] order) in [`TRANSLATED`]'s languages, sentence for sentence.
pub const ANCHORS_TRANSLATED: [[[&str; 6]; 4]; 6] = [
    // social
    [
        [
            "mes amis et ma famille",
            "elle lui a dit qu'elle l'aimait",
            "des gens qui parlent et rient ensemble",
            "nous avons rencontré nos nouveaux voisins",
            "une mère serre son enfant dans ses bras",
            "l'équipe a fêté ça avec tout le monde",
        ],
        [
            "meine Freunde und meine Familie",
            "sie sagte ihm, dass sie ihn liebt",
            "Menschen, die zusammen reden und lachen",
            "wir haben unsere neuen Nachbarn kennengelernt",
            "eine Mutter umarmt ihr Kind",
            "das Team hat mit allen zusammen gefeiert",
        ],
        [
            "mis amigos y mi familia",
            "ella le dijo que lo amaba",
            "gente hablando y riendo juntos",
            "conocimos a nuestros nuevos vecinos",
            "una madre abraza a su hijo",
            "el equipo lo celebró junto con todos",
        ],
        [
            "私の友達と家族",
            "彼女は彼に愛していると言った",
            "一緒に話して笑う人たち",
            "新しい隣人に会った",
            "母親が子どもを抱きしめる",
            "チームはみんなと一緒にお祝いした",
        ],
    ],
    // emotion
    [
        [
            "je suis tellement heureux",
            "c'est absolument terrifiant",
            "elle avait le cœur brisé et a pleuré",
            "je l'adore tellement",
            "il était furieux et bouleversé",
            "quelle merveilleuse et joyeuse surprise",
        ],
        [
            "ich bin so glücklich",
            "das ist absolut furchterregend",
            "sie war untröstlich und weinte",
            "ich liebe es so sehr",
            "er war wütend und aufgebracht",
            "was für eine wunderbare, freudige Überraschung",
        ],
        [
            "estoy tan feliz",
            "esto es absolutamente aterrador",
            "tenía el corazón roto y lloró",
            "me encanta muchísimo",
            "estaba furioso y alterado",
            "qué sorpresa tan maravillosa y alegre",
        ],
        [
            "とても幸せです",
            "これは本当に恐ろしい",
            "彼女は悲しみに暮れて泣いた",
            "それが大好きです",
            "彼は激怒して動揺していた",
            "なんて素敵でうれしい驚きでしょう",
        ],
    ],
    // numbers
    [
        [
            "seulement dix-neuf quatre-vingt-dix-neuf",
            "économisez cinquante pour cent aujourd'hui",
            "trois pour le prix de deux",
            "ça coûte dix dollars",
            "les prix commencent à deux cent quatre-vingt-dix-neuf",
            "vingt-cinq pour cent de réduction sur tout",
        ],
        [
            "nur neunzehn neunundneunzig",
            "sparen Sie heute fünfzig Prozent",
            "drei zum Preis von zwei",
            "es kostet zehn Dollar",
            "die Preise beginnen bei zweihundertneunundneunzig",
            "fünfundzwanzig Prozent Rabatt auf alles",
        ],
        [
            "solo diecinueve noventa y nueve",
            "ahorra un cincuenta por ciento hoy",
            "tres por el precio de dos",
            "cuesta diez dólares",
            "los precios empiezan en doscientos noventa y nueve",
            "veinticinco por ciento de descuento en todo",
        ],
        [
            "たったの千九百九十九円",
            "今日は五十パーセントお得",
            "二つの値段で三つ",
            "十ドルです",
            "価格は二百九十九から",
            "全品二十五パーセントオフ",
        ],
    ],
    // pressure
    [
        [
            "dépêchez-vous, les soldes se terminent à minuit",
            "il n'en reste que quelques-uns, prenez le vôtre avant qu'il n'y en ait plus",
            "tout le monde l'achète, ne restez pas à l'écart",
            "les experts ne jurent que par lui, vous aussi devriez",
            "n'attendez pas, appelez tout de suite",
            "offre à durée limitée, agissez maintenant",
        ],
        [
            "beeilen Sie sich, der Ausverkauf endet um Mitternacht",
            "es sind nur noch wenige übrig, holen Sie sich Ihres, bevor sie weg sind",
            "alle kaufen es, bleiben Sie nicht außen vor",
            "Experten schwören darauf, Sie sollten es auch",
            "warten Sie nicht, rufen Sie jetzt sofort an",
            "zeitlich begrenztes Angebot, handeln Sie jetzt",
        ],
        [
            "date prisa, la oferta termina a medianoche",
            "quedan pocos, consigue el tuyo antes de que se agoten",
            "todo el mundo lo está comprando, no te quedes fuera",
            "los expertos lo recomiendan, tú también deberías",
            "no esperes, llama ahora mismo",
            "oferta por tiempo limitado, actúa ahora",
        ],
        [
            "お急ぎください、セールは真夜中に終わります",
            "残りわずか、なくなる前に手に入れてください",
            "みんなが買っています、乗り遅れないで",
            "専門家も絶賛、あなたもぜひ",
            "待たないで、今すぐお電話を",
            "期間限定のオファー、今すぐ行動を",
        ],
    ],
    // evidence
    [
        [
            "le boîtier est en aluminium et le câble mesure un mètre",
            "lors de tests indépendants, il a duré plus longtemps que l'ancienne version",
            "comparé à l'autre modèle, il est plus lent mais plus silencieux",
            "il ne fonctionne pas avec les appareils plus anciens",
            "le cadre mesure trente centimètres de large",
            "les résultats varient et il peut ne pas convenir à tout le monde",
        ],
        [
            "das Gehäuse ist aus Aluminium und das Kabel ist einen Meter lang",
            "in unabhängigen Tests hielt es länger als die ältere Version",
            "im Vergleich zum anderen Modell ist es langsamer, aber leiser",
            "es funktioniert nicht mit älteren Geräten",
            "der Rahmen misst dreißig Zentimeter in der Breite",
            "die Ergebnisse variieren, und es passt vielleicht nicht zu jedem",
        ],
        [
            "la carcasa es de aluminio y el cable mide un metro",
            "en pruebas independientes duró más que la versión anterior",
            "comparado con el otro modelo es más lento pero más silencioso",
            "no funciona con dispositivos más antiguos",
            "el marco mide treinta centímetros de ancho",
            "los resultados varían y puede que no sea para todos",
        ],
        [
            "ケースはアルミ製で、ケーブルの長さは一メートルです",
            "独立した試験で、旧モデルより長持ちした",
            "他のモデルと比べると、遅いが静かだ",
            "古い機器では動作しません",
            "フレームの幅は三十センチです",
            "効果には個人差があり、すべての人に合うとは限りません",
        ],
    ],
    // product
    [
        [
            "ce téléphone prend de magnifiques photos",
            "notre nouvelle cafetière rend vos matins plus faciles",
            "un canapé confortable que toute la famille appréciera",
            "cette crème laisse votre peau douce et lisse",
            "la voiture est silencieuse, sûre et agréable à conduire",
            "savourez des repas frais et délicieux en quelques minutes",
        ],
        [
            "dieses Handy macht wunderschöne Fotos",
            "unsere neue Kaffeemaschine macht Ihre Morgen leichter",
            "ein bequemes Sofa, das die ganze Familie genießen wird",
            "diese Creme macht Ihre Haut weich und glatt",
            "das Auto ist leise, sicher und macht Spaß zu fahren",
            "genießen Sie frische, köstliche Mahlzeiten in wenigen Minuten",
        ],
        [
            "este teléfono hace fotos preciosas",
            "nuestra nueva cafetera hace tus mañanas más fáciles",
            "un sofá cómodo que toda la familia disfrutará",
            "esta crema deja tu piel suave y tersa",
            "el coche es silencioso, seguro y divertido de conducir",
            "disfruta de comidas frescas y deliciosas en minutos",
        ],
        [
            "このスマホはきれいな写真が撮れます",
            "新しいコーヒーメーカーで朝がもっと楽になります",
            "家族みんなで楽しめる快適なソファ",
            "このクリームで肌がしっとりなめらかに",
            "この車は静かで安全、運転が楽しい",
            "新鮮でおいしい食事を数分で",
        ],
    ],
];

/// The neutral sentences in all five languages, one group per language.
fn neutral_groups() -> Vec<Vec<&'static str>> {
    std::iter::once(NEUTRAL.to_vec())
        .chain(NEUTRAL_TRANSLATED.iter().map(|g| g.to_vec()))
        .collect()
}

/// Each axis's anchors in all five languages.
fn anchors_pooled() -> Vec<Vec<&'static str>> {
    AXES.iter()
        .zip(&ANCHORS_TRANSLATED)
        .map(|(axis, translated)| {
            axis.anchors
                .iter()
                .copied()
                .chain(translated.iter().flatten().copied())
                .collect()
        })
        .collect()
}

/// The axes whose readings carry over from the English model to e5: the outcome of the gate
/// registered in `tests/speech/embedding.rs`
/// (`every_axis_is_read_in_other_languages_only_where_its_scale_carries_over`), which fails
/// when this list and the measurement disagree. The other axes read 0 in other languages.
/// Evidence fails because MiniLM reads the calm-facts script far lower than e5 does (e5's own
/// readings agree across the five languages); reading English with e5 too was tried and lost
/// the English known-groups ordering (model card, "The same ad in five languages").
pub const CARRIES_OVER: [&str; 5] = ["social", "emotion", "numbers", "pressure", "product"];

/// Adds to the transcript's provenance note, when the multilingual reader reads its meaning,
/// which semantic axes it leaves out ([`CARRIES_OVER`]) and what that does: a client reading a
/// French facts script must learn that its evidence counts as absent.
pub fn note_unread_axes(heard: &mut crate::speech::Heard) {
    if heard.meaning_reader() != crate::speech::MeaningReader::Multilingual {
        return;
    }
    let unread: Vec<String> = AXES
        .iter()
        .filter(|a| !CARRIES_OVER.contains(&a.name))
        .map(|a| format!("{} ({})", a.name, a.meaning))
        .collect();
    if unread.is_empty() {
        return;
    }
    let before = heard.source["note"].as_str().unwrap_or_default();
    heard.source["note"] = format!(
        "{before} Not read in this language, because the two models disagree on it even in English: {}. It counts as absent, so deliberation can read lower than for the same words in English.",
        unread.join(", ")
    )
    .trim_start()
    .into();
}

/// The service's multilingual axes: [`construct`], with every axis outside [`CARRIES_OVER`]
/// read as 0 (scale 0).
///
/// # Errors
/// As [`construct`].
pub fn axes(
    multilingual: &dyn Embed,
    english: &dyn Embed,
    model_axes: &SemanticAxes,
) -> anyhow::Result<SemanticAxes> {
    let mut axes = construct(multilingual, english, model_axes)?;
    for (k, axis) in AXES.iter().enumerate() {
        if !CARRIES_OVER.contains(&axis.name) {
            axes.scale[1 + k] = 0.0;
        }
    }
    Ok(axes)
}

/// The multilingual embedder's axes, with the origins and factors that put its readings on the
/// scale of `model_axes` (built by `english`, the model's own embedder), every axis kept.
///
/// Directions are [`language::axes_from`] on the sentences of all five languages. Each axis's
/// origin and factor are then a **linear equating** (the mean-sigma method of test linking) of
/// e5's projections on the English model's readings, over the 210 construction sentences, each
/// paired with the English model's projection of its English original: e5's readings get the
/// English model's mean and spread over the same sentences, off-axis ones included. Until
/// 2026-11-27 only the anchors' centroid was matched (one point per axis); the equating uses
/// every sentence, and brought the carried axes' readings of their test scripts from 0.78–1.36
/// to 0.81–1.20 times the English model's. It did not carry evidence over (2.6–3.9 times,
/// against 3.6–5.0): on the calm-facts script the two models disagree even in English. Nothing
/// here reads a clip, a test script or brain data.
///
/// `semantic_change`'s factor is the English model's boundary unit over e5's
/// ([`language::units_from`]: the median distance between two unrelated neutral sentences of
/// one language).
///
/// # Errors
/// Embedder errors, a unit of zero, or an axis on which the two embedders disagree in sign.
pub fn construct(
    multilingual: &dyn Embed,
    english: &dyn Embed,
    model_axes: &SemanticAxes,
) -> anyhow::Result<SemanticAxes> {
    let groups = neutral_groups();
    let neutral: Vec<&str> = groups.iter().flatten().copied().collect();
    let anchors = anchors_pooled();
    // Each of the 210 sentences is embedded once, in one call (the construction, the units and
    // the equating read the same sentences): full batches.
    let memo = Memo::new(multilingual);
    let every: Vec<&str> = neutral
        .iter()
        .chain(anchors.iter().flatten())
        .copied()
        .collect();
    memo.embed(&every)?;
    let mut axes = language::axes_from(&memo, &neutral, &anchors)?;
    let group_refs: Vec<&[&str]> = groups.iter().map(Vec::as_slice).collect();
    let theirs = language::units_from(&memo, &axes, &group_refs, &anchors)?;
    let ours = language::content_units(english, model_axes)?;
    let change = |units: &[(String, f32)]| {
        units
            .iter()
            .find(|(n, _)| n == "semantic_change")
            .map(|(_, u)| *u)
            .ok_or_else(|| anyhow::anyhow!("no unit for semantic_change"))
    };
    let (model, e5) = (change(&ours)?, change(&theirs)?);
    anyhow::ensure!(
        e5 > 1e-6 && model.is_finite(),
        "semantic_change: a unit of {e5} in the multilingual model"
    );
    let mut scale = vec![model / e5];
    let (texts, originals) = paired_sentences();
    let e5_vectors = memo.embed(&texts)?;
    let english_vectors = english.embed(&originals)?;
    for (k, axis) in AXES.iter().enumerate() {
        let (e5_direction, model_direction) = (
            &axes.directions[k * DIM..(k + 1) * DIM],
            &model_axes.directions[k * DIM..(k + 1) * DIM],
        );
        let x: Vec<f64> = e5_vectors
            .iter()
            .map(|v| f64::from(dot(v, e5_direction)))
            .collect();
        let y: Vec<f64> = english_vectors
            .iter()
            .map(|v| f64::from(dot(v, model_direction) - model_axes.origins[k]))
            .collect();
        let link = Equating::of(&x, &y);
        anyhow::ensure!(
            link.agreement > 0.0 && link.factor.is_finite() && link.factor > 1e-6,
            "axis_{}: the two embedders' readings of the construction sentences correlate {:.2}",
            axis.name,
            link.agreement
        );
        // factor * x + offset = factor * (x - origin).
        axes.origins[k] = (-link.offset / link.factor) as f32;
        scale.push(link.factor as f32);
    }
    axes.scale = scale;
    Ok(axes)
}

/// The construction sentences of every language with their English originals, in one order.
fn paired_sentences() -> (Vec<&'static str>, Vec<&'static str>) {
    let mut pairs: Vec<(&str, &str)> = Vec::new();
    for (i, original) in NEUTRAL.iter().enumerate() {
        pairs.push((original, original));
        pairs.extend(NEUTRAL_TRANSLATED.iter().map(|l| (l[i], *original)));
    }
    for (axis, translated) in AXES.iter().zip(&ANCHORS_TRANSLATED) {
        for (i, original) in axis.anchors.iter().enumerate() {
            pairs.push((original, original));
            pairs.extend(translated.iter().map(|l| (l[i], *original)));
        }
    }
    pairs.into_iter().unzip()
}

/// A linear equating of readings `x` on readings `y` of the same items (mean-sigma): `factor *
/// x + offset` has `y`'s mean and standard deviation. `agreement` is their Pearson r.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Equating {
    pub factor: f64,
    pub offset: f64,
    pub agreement: f64,
}

impl Equating {
    /// The equating of `x` on `y` (paired by index). Empty or constant readings give a factor
    /// of 0, infinity or NaN, which [`construct`] rejects.
    #[must_use]
    pub fn of(x: &[f64], y: &[f64]) -> Self {
        let n = x.len().min(y.len()).max(1) as f64;
        let mean = |v: &[f64]| v.iter().sum::<f64>() / n;
        let (mx, my) = (mean(x), mean(y));
        let sxx = x.iter().map(|a| (a - mx).powi(2)).sum::<f64>();
        let syy = y.iter().map(|b| (b - my).powi(2)).sum::<f64>();
        let sxy = x
            .iter()
            .zip(y)
            .map(|(a, b)| (a - mx) * (b - my))
            .sum::<f64>();
        let factor = (syy / sxx).sqrt();
        Self {
            factor,
            offset: my - factor * mx,
            agreement: sxy / (sxx * syy).sqrt(),
        }
    }
}

/// An embedder that embeds each distinct text once and remembers it.
struct Memo<'a> {
    inner: &'a dyn Embed,
    seen: std::cell::RefCell<std::collections::HashMap<String, Vec<f32>>>,
}

impl<'a> Memo<'a> {
    fn new(inner: &'a dyn Embed) -> Self {
        Self {
            inner,
            seen: std::cell::RefCell::default(),
        }
    }
}

impl Embed for Memo<'_> {
    fn embed(&self, texts: &[&str]) -> anyhow::Result<Vec<Vec<f32>>> {
        let mut missing: Vec<&str> = texts
            .iter()
            .copied()
            .filter(|t| !self.seen.borrow().contains_key(*t))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if !missing.is_empty() {
            let vectors = self.inner.embed(&missing)?;
            let mut seen = self.seen.borrow_mut();
            for (text, vector) in missing.into_iter().zip(vectors) {
                seen.insert(text.to_owned(), vector);
            }
        }
        let seen = self.seen.borrow();
        texts
            .iter()
            .map(|t| {
                seen.get(*t)
                    .cloned()
                    .ok_or_else(|| anyhow::anyhow!("the embedder returned too few vectors"))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_anchor_and_neutral_sentence_has_its_translations() {
        for (axis, translated) in AXES.iter().zip(&ANCHORS_TRANSLATED) {
            for language in translated {
                assert_eq!(language.len(), axis.anchors.len(), "{}", axis.name);
                assert!(language.iter().all(|s| !s.trim().is_empty()));
            }
        }
        for language in &NEUTRAL_TRANSLATED {
            assert_eq!(language.len(), NEUTRAL.len());
        }
        assert!(TRANSLATED.iter().all(|l| crate::embed::e5::reads(l)));
    }

    #[test]
    fn an_equating_gives_the_target_mean_and_spread() {
        let x = [1.0, 2.0, 3.0, 6.0];
        let y = [10.0, 30.0, 50.0, 110.0];
        let link = Equating::of(&x, &y);
        assert!((link.factor - 20.0).abs() < 1e-9, "{link:?}");
        assert!((link.offset + 10.0).abs() < 1e-9, "{link:?}");
        assert!((link.agreement - 1.0).abs() < 1e-12, "{link:?}");
        // Unrelated readings keep their spread ratio; the agreement says they disagree.
        let reversed = Equating::of(&x, &[110.0, 50.0, 30.0, 10.0]);
        assert!((reversed.factor - 20.0).abs() < 1e-9 && reversed.agreement < -0.8);
    }

    #[test]
    fn every_sentence_is_paired_with_its_english_original() {
        let (texts, originals) = paired_sentences();
        assert_eq!(texts.len(), 5 * (NEUTRAL.len() + AXES.len() * 6));
        assert_eq!(texts.len(), originals.len());
        for (text, original) in texts.iter().zip(&originals) {
            let english =
                NEUTRAL.contains(original) || AXES.iter().any(|a| a.anchors.contains(original));
            assert!(english, "{original}");
            if text == original {
                continue;
            }
            let translated = NEUTRAL_TRANSLATED.iter().flatten().any(|t| t == text)
                || ANCHORS_TRANSLATED
                    .iter()
                    .flatten()
                    .flatten()
                    .any(|t| t == text);
            assert!(translated, "{text}");
        }
    }
}

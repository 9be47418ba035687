//! Whether the words heard make an offer (issue 72: purchase intent needs an offer).
//!
//! A nearest-centroid reading of the transcript's meaning over kinds of speech. The sentence
//! embedder that reads the clip's words (all-MiniLM-L6-v2 for English, multilingual-e5-small
//! for other languages, as for the semantic axes) embeds prototype sentences of nine kinds,
//! written from what each kind is, not from any battery's scripts: two that make an offer (a
//! sales offer, a product or service with a price or a call to buy; and a product description,
//! a product and its features or benefits) and seven that do not (a public speech, a poem, a
//! lecture, news, instructions, a story, a conversation). A window's **offer reading** is its
//! cosine to the nearer offer centroid minus its cosine to the nearest other one: above 0 the
//! words are nearer to an offer than to any other kind of speech this reader knows.
//!
//! Why not the model's semantic axes: on real recordings they do not tell an offer apart. The
//! product axis (a product and its benefit, measured from a neutral reference) read highest on
//! a political speech (J. F. Kennedy's inaugural, mean 0.118) of every real clip tried, above a
//! recorded description of a telephone product (0.011) and read poetry (0.066): an axis
//! measures likeness to its anchors against neutral text, and rhetoric about what one can do
//! and give is like product talk. A reading against the other kinds of speech asks the
//! question purchase intent needs: is this an offer, or something else?
//!
//! **A prior, not a measurement**: the prototypes are this project's choice, and the reader is
//! checked by the known-groups battery's scripts and the real-clip battery, not fitted to them
//! (`models/qualia/v2/REAL-CLIPS-PLAN.md`). It does not change the model: no network reads it.

use std::sync::Arc;

use super::language::Embed;

/// The kinds of speech, with their prototypes. The first [`OFFER_KINDS`] make an offer.
pub const KINDS: [(&str, [&str; 6]); 9] = [
    (
        "sales offer",
        [
            "Buy it now and save.",
            "Order today and we deliver for free.",
            "Try our new service free for thirty days.",
            "The new model is in the shops now for ninety-nine dollars.",
            "Sign up this week and your first month costs nothing.",
            "Visit our website to see this season's offers.",
        ],
    ),
    (
        "product description",
        [
            "The phone has a large screen and a battery that lasts all day.",
            "This jacket is waterproof and comes in three colours.",
            "Our coffee machine makes espresso and cappuccino at the touch of a button.",
            "The car seats five and has a large boot.",
            "The mattress is memory foam and comes with a ten-year guarantee.",
            "This vacuum cleaner is light, quiet and cordless.",
        ],
    ),
    (
        "public speech",
        [
            "My fellow citizens, we must stand together as one nation.",
            "We will defend our freedom and our future.",
            "I stand before you today to speak about our country.",
            "Together we can build a better tomorrow for our children.",
            "This government will keep its promises to the people.",
            "Let us remember those who gave their lives for this land.",
        ],
    ),
    (
        "poem",
        [
            "The moon rose softly over the silent sea.",
            "Shall I compare thee to a summer's day?",
            "Love is a flower that blooms and fades away.",
            "The autumn leaves fall gently on the grave.",
            "O wind, carry my sorrow over the hills.",
            "Her eyes were stars in the deep of night.",
        ],
    ),
    (
        "lecture",
        [
            "Today we will study the motion of a falling object.",
            "The force is equal to the mass times the acceleration.",
            "Let us write the equation on the board and solve it.",
            "This experiment shows how energy is conserved.",
            "Cells divide by a process called mitosis.",
            "In the last lecture we saw how prices are set in a market.",
        ],
    ),
    (
        "news",
        [
            "The government announced new measures on Tuesday.",
            "Heavy rain caused flooding in the northern region.",
            "Officials said the talks would continue next week.",
            "The company reported lower profits this quarter.",
            "Police are investigating a fire in the city centre.",
            "The team won the final after extra time.",
        ],
    ),
    (
        "instructions",
        [
            "Press one to speak to an operator.",
            "Turn left at the next junction and continue straight on.",
            "Open the lid and insert the battery.",
            "Please hold the line; your call is important to us.",
            "Enter your password and press the green button.",
            "Fasten your seat belt and remain seated.",
        ],
    ),
    (
        "story",
        [
            "Once upon a time a little girl lived in a small village.",
            "He walked home slowly, thinking about his father.",
            "She opened the door and saw her old friend smiling.",
            "The children played in the garden until it was dark.",
            "Years later, the old man returned to the sea.",
            "The dog barked, and everyone in the house woke up.",
        ],
    ),
    (
        "conversation",
        [
            "Hi, how are you doing today?",
            "I think we should meet for coffee tomorrow.",
            "Yeah, I saw that too, it was really funny.",
            "What do you want for dinner tonight?",
            "Sorry, I did not catch that, could you say it again?",
            "Thanks, that sounds great, see you later.",
        ],
    ),
];

/// How many of [`KINDS`], from the first, make an offer.
pub const OFFER_KINDS: usize = 2;

/// One embedder's centroids of [`KINDS`].
#[derive(Debug, Clone)]
pub struct OfferReader {
    /// Unit centroids, in [`KINDS`] order.
    centroids: Vec<Vec<f32>>,
}

impl OfferReader {
    /// Embeds the prototypes with `embedder`.
    ///
    /// # Errors
    /// The embedder's errors.
    pub fn new(embedder: &dyn Embed) -> anyhow::Result<Self> {
        let mut centroids = Vec::with_capacity(KINDS.len());
        for (_, sentences) in &KINDS {
            let vectors = embedder.embed(sentences)?;
            let dim = vectors.first().map_or(0, Vec::len);
            let mut c = vec![0f32; dim];
            for v in &vectors {
                for (a, b) in c.iter_mut().zip(v) {
                    *a += b;
                }
            }
            let norm = c.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
            centroids.push(c.into_iter().map(|x| x / norm).collect());
        }
        Ok(Self { centroids })
    }

    /// The offer reading of a window's unit embedding `v` (module docs), in −1..1.
    #[must_use]
    pub fn margin(&self, v: &[f32]) -> f32 {
        let cos = |c: &Vec<f32>| c.iter().zip(v).map(|(a, b)| a * b).sum::<f32>();
        let best = |cs: &[Vec<f32>]| cs.iter().map(cos).fold(f32::NEG_INFINITY, f32::max);
        let (offer, other) = self.centroids.split_at(OFFER_KINDS);
        (best(offer) - best(other)).clamp(-1.0, 1.0)
    }

    /// The nearest kind of a window's unit embedding, for reports.
    #[must_use]
    pub fn nearest(&self, v: &[f32]) -> &'static str {
        let cos = |c: &Vec<f32>| c.iter().zip(v).map(|(a, b)| a * b).sum::<f32>();
        let (i, _) =
            self.centroids
                .iter()
                .map(cos)
                .enumerate()
                .fold(
                    (0, f32::NEG_INFINITY),
                    |b, (i, c)| if c > b.1 { (i, c) } else { b },
                );
        KINDS[i].0
    }
}

/// An [`OfferReader`] made once per embedder and kept (the prototypes are embedded at the
/// first clip that needs them).
#[derive(Debug, Default)]
pub struct OfferReaders {
    english: std::sync::OnceLock<Arc<OfferReader>>,
    multilingual: std::sync::OnceLock<Arc<OfferReader>>,
}

impl OfferReaders {
    /// The reader of `embedder`, the English one or the multilingual one.
    ///
    /// # Errors
    /// The embedder's errors.
    pub fn get(&self, english: bool, embedder: &dyn Embed) -> anyhow::Result<Arc<OfferReader>> {
        let cell = if english {
            &self.english
        } else {
            &self.multilingual
        };
        if let Some(r) = cell.get() {
            return Ok(r.clone());
        }
        let made = Arc::new(OfferReader::new(embedder)?);
        Ok(cell.get_or_init(|| made).clone())
    }
}

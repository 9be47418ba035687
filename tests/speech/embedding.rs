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

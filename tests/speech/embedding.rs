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

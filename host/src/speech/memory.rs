//! Transcripts remembered by the audio they were heard from.
//!
//! Ads are tested in variants: one voice-over under several cuts, end cards or aspect ratios,
//! and the same clip scanned again after a lens plugin changed. The transcript is the costly
//! part of a scan on the CPU (Whisper's two 30 s encoder passes and its decoding are about nine
//! tenths of a 10 s clip's scan on two cores), and it depends only on the audio: the same
//! samples give the same lines, language and confidences, bit for bit. So a worker process
//! keeps the last transcripts it made, keyed by the SHA-256 of the samples Whisper heard (after
//! loudness normalisation) and of the speech regions it was given, and hears a repeated track
//! once.
//!
//! **Bounds.** At most [`DEFAULT_ENTRIES`] transcripts (`BRAINSCAN_TRANSCRIPT_MEMORY`), least
//! recently used first out; a transcript of the longest clip is a few kilobytes of text. Only
//! the transcript is kept, never the audio.
//!
//! **What it can tell.** One process serves every organisation, so a scan of a track another
//! organisation scanned recently finishes sooner. Learning that needs the same audio, sample for
//! sample. Operators who do not want even that set the memory to 0 (operator guide).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};

use super::{Language, ScoredLines, vad};

/// Transcripts a process keeps unless configured otherwise.
pub const DEFAULT_ENTRIES: u64 = crate::config::DEFAULT_TRANSCRIPT_MEMORY;

/// What Whisper made of one track: its scored lines and the language heard.
pub type Transcript = Arc<(ScoredLines, Option<Language>)>;

/// The last transcripts made, by the content they were made from.
pub struct Memory {
    kept: Option<moka::sync::Cache<[u8; 32], Transcript>>,
    reused: AtomicU64,
}

impl Memory {
    /// A memory of at most `entries` transcripts; 0 remembers none.
    #[must_use]
    pub fn new(entries: u64) -> Self {
        Self {
            kept: (entries > 0).then(|| moka::sync::Cache::new(entries)),
            reused: AtomicU64::new(0),
        }
    }

    /// The transcript of `pcm` over `regions`: the remembered one, or `hear`'s, which is then
    /// remembered. Scans of one track at the same time (variants submitted together) wait for
    /// the one that hears it rather than each running Whisper.
    ///
    /// # Errors
    /// `hear`'s; a failure is not remembered, and scans that waited on it get it too.
    pub fn recall_or(
        &self,
        pcm: &[f32],
        regions: &[vad::Region],
        hear: impl FnOnce() -> anyhow::Result<(ScoredLines, Option<Language>)>,
    ) -> anyhow::Result<Transcript> {
        let Some(kept) = &self.kept else {
            return Ok(Arc::new(hear()?));
        };
        let mut heard_here = false;
        let transcript = kept
            .try_get_with(content_key(pcm, regions), || {
                heard_here = true;
                hear().map(Arc::new)
            })
            .map_err(|e: Arc<anyhow::Error>| anyhow::anyhow!("{e:#}"))?;
        if !heard_here {
            self.reused.fetch_add(1, Ordering::Relaxed);
            metrics::counter!("brainscan_transcripts_reused_total").increment(1);
            tracing::debug!("transcript of this audio reused");
        }
        Ok(transcript)
    }

    /// How many scans reused a remembered transcript since the process started.
    #[must_use]
    pub fn reused(&self) -> u64 {
        self.reused.load(Ordering::Relaxed)
    }
}

/// SHA-256 of the samples' bits and of the regions' bounds, each length-prefixed so no two
/// different inputs share a byte stream. The samples are hashed in this machine's byte order:
/// a key never leaves the process that made it.
fn content_key(pcm: &[f32], regions: &[vad::Region]) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update((pcm.len() as u64).to_le_bytes());
    h.update(bytemuck::cast_slice::<f32, u8>(pcm));
    h.update((regions.len() as u64).to_le_bytes());
    for r in regions {
        h.update(r.start.to_bits().to_le_bytes());
        h.update(r.end.to_bits().to_le_bytes());
    }
    h.finalize().into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(text: &str) -> (ScoredLines, Option<Language>) {
        (
            vec![(
                crate::plugins::bindings::TranscriptLine {
                    start_sec: 0.0,
                    end_sec: 1.0,
                    text: text.into(),
                },
                0.9,
            )],
            None,
        )
    }

    #[test]
    fn the_same_samples_are_heard_once_and_different_ones_again() {
        let memory = Memory::new(4);
        let pcm = vec![0.25f32; 16_000];
        let regions = [vad::Region {
            start: 0.0,
            end: 1.0,
        }];
        let mut heard = 0;
        let mut hear = |text: &str| {
            heard += 1;
            Ok(line(text))
        };
        let a = memory
            .recall_or(&pcm, &regions, || hear("first"))
            .expect("heard");
        let b = memory
            .recall_or(&pcm, &regions, || hear("second"))
            .expect("heard");
        assert_eq!(a.0[0].0.text, "first");
        assert_eq!(b.0[0].0.text, "first", "the second scan reuses the first");
        assert_eq!(memory.reused(), 1);
        // One sample's last bit, or other regions, is other audio.
        let mut other = pcm.clone();
        other[15_999] = f32::from_bits(other[15_999].to_bits() ^ 1);
        let c = memory
            .recall_or(&other, &regions, || hear("third"))
            .expect("heard");
        assert_eq!(c.0[0].0.text, "third");
        let d = memory
            .recall_or(&pcm, &[], || hear("fourth"))
            .expect("heard");
        assert_eq!(d.0[0].0.text, "fourth");
        assert_eq!(heard, 3);
        assert_eq!(memory.reused(), 1);
    }

    #[test]
    fn a_failure_is_not_remembered_and_zero_entries_remember_nothing() {
        let memory = Memory::new(4);
        let pcm = vec![0.5f32; 100];
        assert!(
            memory
                .recall_or(&pcm, &[], || Err(anyhow::anyhow!("no model")))
                .is_err()
        );
        let ok = memory
            .recall_or(&pcm, &[], || Ok(line("heard")))
            .expect("heard");
        assert_eq!(ok.0[0].0.text, "heard");

        let none = Memory::new(0);
        let mut heard = 0;
        for _ in 0..2 {
            none.recall_or(&pcm, &[], || {
                heard += 1;
                Ok(line("again"))
            })
            .expect("heard");
        }
        assert_eq!((heard, none.reused()), (2, 0));
    }
}

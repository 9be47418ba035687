//! Getting media in: the guarded downloader ([`fetch`]), the outbound address policy
//! ([`guard`]) and `ffprobe` ([`probe`]). Decoding to frames and PCM is the inference issue's.

pub mod fetch;
pub mod guard;
pub mod probe;

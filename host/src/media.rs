//! Getting media in: the guarded downloader ([`fetch`]), the outbound address policy
//! ([`guard`]), `ffprobe` ([`probe`]) and `ffmpeg` decoding to frames and PCM ([`decode`]).

pub mod decode;
pub mod fetch;
pub mod guard;
pub mod probe;
pub mod probe_slots;

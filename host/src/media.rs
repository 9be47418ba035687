//! Getting media in: the guarded downloader ([`fetch`]), the outbound address policy
//! ([`guard`]), `ffprobe` ([`probe`]) and `ffmpeg` decoding to frames and PCM ([`decode`]),
//! both held to single-file container formats ([`demuxers`]).

pub mod decode;
pub mod demuxers;
pub mod fetch;
pub mod guard;
pub mod loudness;
pub mod page;
pub mod probe;
pub mod probe_slots;

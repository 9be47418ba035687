//! Speech transcription and sentence embeddings on the real models (`scripts/fetch-models`)
//! and real audio: whisper.cpp's `jfk.wav`, the Big Buck Bunny soundtrack (music and effects,
//! no speech), silence, espeak-ng speech placed after known silence, and embedded subtitles.

mod device;
mod embedding;
mod support;
mod surprisal;
mod transcription;

//! The engines that run the decoder graph: [`tract`] (pure Rust, the default) and
//! `ort` (ONNX Runtime, cargo feature `ort`). Both implement [`Decoder`](super::Decoder).

#[cfg(feature = "ort")]
pub mod ort;
pub mod tract;

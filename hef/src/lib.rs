//! Read, verify and write Hailo HEF files, without HailoRT.
//!
//! A HEF is a big-endian header (versions 0 to 3), a protobuf description of
//! the network groups, and the compiled code words. This crate lists the
//! model the way HailoRT lists it ([`Hef`]), verifies the checksums, and
//! writes valid files for tests, fixtures and the simulator.

#![warn(missing_docs)]
#![allow(missing_docs)] // lifted once the reader lands

mod model;

pub use model::*;

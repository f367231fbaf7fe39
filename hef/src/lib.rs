//! Read, verify and write Hailo HEF files, without HailoRT.
//!
//! A HEF is a big-endian header (versions 0 to 3), a protobuf description of
//! the network groups, and the compiled code words. This crate lists the
//! model the way HailoRT lists it ([`Hef`]), verifies the checksums, and
//! writes valid files for tests, fixtures and the simulator ([`HefBuilder`]).
//!
//! | module | what it holds |
//! |---|---|
//! | [`format`](mod@format) | the raw header structures of every version |
//! | `read` | header checks, checksum, protobuf decode, listing ([`Hef::open`], [`ReaderOptions`]) |
//! | `write` | [`HefBuilder`] |
//! | `proto` | the protobuf messages, written from `hef.proto` field numbers |
//! | [`limits`] | what a stream of a Hailo part can carry, checked on every listing |
//! | [`samples`] | sample models and the committed fixtures made from them |
//!
//! ```no_run
//! let hef = hef::Hef::open("fixtures/backbone_288.hef")?;
//! hef.check_compatible(hef::Chip::Hailo10H)?;
//! for group in &hef.network_groups {
//!     println!("{}: {} inputs", group.name, group.inputs.len());
//! }
//! # Ok::<(), hef::HefError>(())
//! ```

#![warn(missing_docs)]

/// Declares by-value builder setters: `name(arg: T) => field;` stores `arg` in `self.field` and
/// returns the builder, so options chain.
macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident($arg:ident: $t:ty) => $field:ident;)*) => {
        $(
            $(#[$doc])*
            pub fn $name(mut self, $arg: $t) -> Self {
                self.$field = $arg;
                self
            }
        )*
    };
}

mod error;
pub mod format;
pub mod limits;
mod model;
mod proto;
mod read;
pub mod samples;
mod write;

pub use error::{Checksum, ChecksumAlgorithm, ErrorClass, HefError, HefErrorKind};
pub use model::*;
pub use read::ReaderOptions;
pub use write::{HefBuilder, WriteError};

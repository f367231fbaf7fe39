//! Reading a HEF: header, size consistency, checksum, protobuf, listing.
//!
//! The reader reads the header and the protobuf into memory and nothing
//! else: the code-word section (the weights, most of a real HEF) is only
//! streamed through the hash when the checksum is verified, in fixed-size
//! chunks. No size read from the file is trusted: every section must fit in
//! the file before a byte of it is allocated, and the decoded protobuf only
//! allocates for elements actually present in its bytes (a decoded
//! message takes at most a constant factor more memory than its encoding;
//! an empty two-byte element becomes a struct of up to 208 bytes, so the
//! worst case is about 100 times the protobuf size; unknown and opaque fields
//! are skipped without copying). [`ReaderOptions::max_proto_size`]
//! caps the protobuf read into memory.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

use crate::error::{HefError, HefErrorKind};
use crate::format::{COMMON_HEADER_LEN, MAX_HEADER_LEN};
use crate::model::Hef;

mod header;
mod listing;
#[cfg(test)]
mod tests;

pub(crate) use header::{ChecksumPlan, Hasher};

/// Limits and switches of the reader.
///
/// The default verifies the checksum (streaming over the whole file once)
/// and accepts a protobuf of up to 256 MiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderOptions {
    verify_checksum: bool,
    max_proto_size: u64,
}

impl Default for ReaderOptions {
    fn default() -> Self {
        Self {
            verify_checksum: true,
            max_proto_size: 256 << 20,
        }
    }
}

/// Size of the chunks the checksum streams the code words through.
const CHUNK: usize = 64 << 10;

impl ReaderOptions {
    /// The defaults: checksum verified, protobuf up to 256 MiB.
    pub fn new() -> Self {
        Self::default()
    }

    setters! {
        /// Whether to verify the header checksum. Without it the reader touches
        /// only the header and the protobuf, never the code words.
        verify_checksum(yes: bool) => verify_checksum;
        /// The largest protobuf payload accepted, in bytes.
        max_proto_size(bytes: u64) => max_proto_size;
    }

    /// Reads a HEF held in memory.
    ///
    /// # Errors
    /// Any [`HefErrorKind`] but `Io` and `NotCompatible`; the error names no file.
    pub fn read_bytes(&self, bytes: &[u8]) -> Result<Hef, HefError> {
        self.read_from(bytes, bytes.len() as u64)
            .map_err(HefError::new)
    }

    /// Opens and reads a HEF file.
    ///
    /// # Errors
    /// Any [`HefErrorKind`] but `NotCompatible`; the error names `path`.
    pub fn open(&self, path: impl AsRef<Path>) -> Result<Hef, HefError> {
        let path = path.as_ref();
        let read = || -> Result<Hef, HefErrorKind> {
            let file = File::open(path)?;
            let len = file.metadata()?.len();
            self.read_from(io::BufReader::with_capacity(CHUNK, file), len)
        };
        read().map_err(|kind| HefError::new(kind).with_path(path))
    }

    /// Reads a HEF of `file_len` bytes from a sequential reader.
    fn read_from(&self, mut r: impl Read, file_len: u64) -> Result<Hef, HefErrorKind> {
        let mut head = [0u8; MAX_HEADER_LEN];
        let common_len = COMMON_HEADER_LEN.min(file_len as usize);
        r.read_exact(&mut head[..common_len])?;
        let header_len = header::check_common(&head[..common_len], file_len)?;
        r.read_exact(&mut head[COMMON_HEADER_LEN..header_len])?;
        let layout = header::check_layout(&head[..header_len], file_len)?;
        if layout.proto_size > self.max_proto_size {
            return Err(HefErrorKind::LimitExceeded {
                what: "protobuf payload",
                size: layout.proto_size,
                limit: self.max_proto_size,
            });
        }
        // The protobuf fits in the file (checked above), so this allocation
        // is bounded by the file size.
        let mut proto = vec![0u8; layout.proto_size as usize];
        r.read_exact(&mut proto)?;
        if self.verify_checksum {
            let plan = ChecksumPlan::for_header(&layout.header);
            let mut hasher = plan.hasher();
            hasher.update(&proto);
            if plan.covers_rest {
                stream_into(&mut r, layout.after_proto, &mut hasher)?;
            }
            plan.check(hasher.finish())?;
        }
        log::debug!(
            "HEF v{}: {} byte header, {} byte protobuf, {} bytes after it",
            layout.version.number(),
            layout.header_len,
            layout.proto_size,
            layout.after_proto
        );
        let message = crate::proto::decode(&proto).map_err(|e| HefErrorKind::Protobuf {
            message: e.to_string(),
        })?;
        let hef = listing::build(&message, layout.version)?;
        hef.check_limits()?;
        Ok(hef)
    }
}

/// Feeds exactly `len` bytes of `r` to the hasher, in fixed-size chunks.
fn stream_into(r: &mut impl Read, len: u64, hasher: &mut Hasher) -> Result<(), HefErrorKind> {
    let mut buf = vec![0u8; CHUNK];
    let mut left = len;
    while left > 0 {
        let n = CHUNK.min(usize::try_from(left).unwrap_or(CHUNK));
        r.read_exact(&mut buf[..n])?;
        hasher.update(&buf[..n]);
        left -= n as u64;
    }
    Ok(())
}

impl Hef {
    /// Reads a HEF held in memory, verifying its checksum.
    ///
    /// # Errors
    /// [`HefError`] of class not supported or corrupted; it names no file.
    pub fn from_bytes(bytes: &[u8]) -> Result<Hef, HefError> {
        ReaderOptions::default().read_bytes(bytes)
    }

    /// Opens a HEF file and verifies its checksum while streaming over the
    /// code words once; only the header and the protobuf stay in memory.
    /// For a listing without hashing use
    /// `ReaderOptions::new().verify_checksum(false).open(path)`.
    ///
    /// # Errors
    /// [`HefError`] naming `path`: I/O, not supported or corrupted.
    pub fn open(path: impl AsRef<Path>) -> Result<Hef, HefError> {
        ReaderOptions::default().open(path)
    }

    /// Checks a HEF file's structure and checksum, whatever the options
    /// elsewhere; returns the model when the file is sound.
    ///
    /// # Errors
    /// As [`Hef::open`].
    pub fn verify(path: impl AsRef<Path>) -> Result<Hef, HefError> {
        ReaderOptions::default().verify_checksum(true).open(path)
    }
}

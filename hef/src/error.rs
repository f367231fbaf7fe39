//! Errors of reading a HEF, grouped into the classes HailoRT uses.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::format::MAGIC;
use crate::model::Chip;

/// A failure to read, verify or use a HEF, naming the file it came from.
///
/// The [`kind`](Self::kind) says what went wrong; [`class`](Self::class) maps it
/// onto HailoRT's status codes (`HAILO_HEF_NOT_SUPPORTED`,
/// `HAILO_HEF_FILE_CORRUPTED`, `HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE`).
#[derive(Debug)]
pub struct HefError {
    path: Option<PathBuf>,
    kind: HefErrorKind,
}

/// Which HailoRT status an error corresponds to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// `HAILO_HEF_NOT_SUPPORTED`: not a HEF this reader (or HailoRT 5.2) handles.
    NotSupported,
    /// `HAILO_HEF_FILE_CORRUPTED` / `HAILO_INVALID_HEF`: the bytes are damaged or inconsistent.
    Corrupted,
    /// `HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE`: a sound HEF for another chip.
    NotCompatible,
    /// A configured [`crate::ReaderOptions`] limit was exceeded.
    LimitExceeded,
    /// The file could not be read at all.
    Io,
}

/// A checksum algorithm of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChecksumAlgorithm {
    /// MD5 (header v0).
    Md5,
    /// CRC-32 IEEE (header v1).
    Crc32,
    /// XXH3-64, seed 0, over everything after the header (v2, v3).
    Xxh3,
    /// XXH3-64, seed 0, over the protobuf only (v3 with `proto_xxh3` set).
    Xxh3Proto,
}

impl fmt::Display for ChecksumAlgorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Md5 => "MD5",
            Self::Crc32 => "CRC-32",
            Self::Xxh3 => "XXH3-64",
            Self::Xxh3Proto => "XXH3-64 of the protobuf",
        })
    }
}

/// A checksum value, printed as lower-case hex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Checksum {
    /// MD5 digest.
    Md5([u8; 16]),
    /// CRC-32.
    Crc32(u32),
    /// XXH3-64.
    Xxh3(u64),
}

impl fmt::Display for Checksum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Md5(d) => d.iter().try_for_each(|b| write!(f, "{b:02x}")),
            Self::Crc32(v) => write!(f, "{v:08x}"),
            Self::Xxh3(v) => write!(f, "{v:016x}"),
        }
    }
}

/// What went wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HefErrorKind {
    /// The file does not start with the HEF magic.
    #[error("bad magic 0x{found:08x}, expected 0x{MAGIC:08x} (\"\\x01HEF\"): not a HEF file")]
    BadMagic {
        /// The first four bytes, big-endian.
        found: u32,
    },
    /// The header version is not 0 to 3.
    #[error("unknown header version {version}, expected 0, 1, 2 or 3")]
    UnknownVersion {
        /// The version number in the header.
        version: u32,
    },
    /// The HEF requires an extension HailoRT 5.2 does not know.
    #[error("unknown required extension {index} (\"{name}\"); known are 0 to 35 except 7 and 8")]
    UnknownExtension {
        /// `type_index` of the extension.
        index: u32,
        /// Its name as the HEF states it.
        name: String,
    },
    /// The HEF lacks an extension HailoRT 5.x requires.
    #[error("required extension {index} ({name}) is missing: the HEF is too old for HailoRT 5.x")]
    MissingExtension {
        /// `type_index` of the missing extension.
        index: u32,
        /// Its name in `hef.proto`.
        name: &'static str,
    },
    /// The file ends before a part the header announces.
    #[error("truncated {what}: needs {needed} bytes, only {available} available")]
    Truncated {
        /// Which part is cut short.
        what: &'static str,
        /// Bytes the part needs (counted from the start of the file).
        needed: u64,
        /// Bytes the file has.
        available: u64,
    },
    /// The file is longer than the header's sizes add up to.
    #[error("size mismatch: the header accounts for {header} bytes but the file has {actual}")]
    SizeMismatch {
        /// Total size the header declares.
        header: u64,
        /// Actual file size.
        actual: u64,
    },
    /// A header field contradicts another.
    #[error("invalid header field {field}: {reason}")]
    InvalidHeader {
        /// The field.
        field: &'static str,
        /// What was expected of it.
        reason: String,
    },
    /// The stored checksum does not match the content.
    #[error("{algorithm} checksum mismatch: header says {expected}, content hashes to {actual}")]
    ChecksumMismatch {
        /// Which algorithm the header version uses.
        algorithm: ChecksumAlgorithm,
        /// The value stored in the header.
        expected: Checksum,
        /// The value computed over the content.
        actual: Checksum,
    },
    /// The protobuf payload does not decode.
    #[error("protobuf payload is not a valid ProtoHEFHef message: {message}")]
    Protobuf {
        /// prost's message, including the message/field path of the failure.
        message: String,
    },
    /// A protobuf field has a value HailoRT rejects.
    #[error("invalid field {field}: expected {expected}, found {found}")]
    InvalidField {
        /// Path of the field, e.g. `network_groups[0].contexts[1].metadata.edge_layers[2].layer_info.edge_layer_base.format`.
        field: String,
        /// What HailoRT accepts there.
        expected: &'static str,
        /// What the file holds.
        found: String,
    },
    /// The HEF was compiled for an arch that does not run on the chip.
    #[error("compiled for hw_arch {hw_arch} ({compatible}), which does not run on {chip}")]
    NotCompatible {
        /// `ProtoHEFHeader.hw_arch`.
        hw_arch: u64,
        /// The chip asked for.
        chip: Chip,
        /// The chips the arch runs on, comma separated (or "no known chip").
        compatible: String,
    },
    /// A [`crate::ReaderOptions`] limit was exceeded.
    #[error("{what} of {size} bytes exceeds the limit of {limit} bytes")]
    LimitExceeded {
        /// What is too large.
        what: &'static str,
        /// Its size.
        size: u64,
        /// The configured limit.
        limit: u64,
    },
    /// A stream whose frame no Hailo part can carry
    /// ([`crate::limits::MAX_STREAM_FRAME_BYTES`]).
    #[error("stream {stream}: a frame of {} exceeds the {limit} bytes one DMA descriptor list of a Hailo part carries", bytes.map_or_else(|| "more than 2^64 bytes".to_owned(), |b| format!("{b} bytes")))]
    StreamTooLarge {
        /// The stream (`<network group>/<name>`).
        stream: String,
        /// Bytes of one frame (`None` when the product overflows).
        bytes: Option<u64>,
        /// The most one frame can hold.
        limit: u64,
    },
    /// A stream with no elements: a dimension of zero.
    #[error("stream {stream}: a frame of zero elements (a dimension is 0)")]
    EmptyStream {
        /// The stream (`<network group>/<name>`).
        stream: String,
    },
    /// A quantisation or rate field that is NaN, infinite or (fps) not positive.
    #[error("{at}: {field} is {value}, not {expected}")]
    NonFinite {
        /// The stream, or the network group for `bottleneck_fps`.
        at: String,
        /// The field: `qp_zp`, `qp_scale`, `limvals_min`, `limvals_max` or `bottleneck_fps`.
        field: &'static str,
        /// Its value.
        value: f64,
        /// What it must be.
        expected: &'static str,
    },
    /// Reading the file failed.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
}

impl HefErrorKind {
    /// The HailoRT class of this error.
    pub fn class(&self) -> ErrorClass {
        use HefErrorKind::*;
        match self {
            BadMagic { .. }
            | UnknownVersion { .. }
            | UnknownExtension { .. }
            | MissingExtension { .. } => ErrorClass::NotSupported,
            Truncated { .. }
            | SizeMismatch { .. }
            | InvalidHeader { .. }
            | ChecksumMismatch { .. }
            | Protobuf { .. }
            | InvalidField { .. }
            | EmptyStream { .. }
            | NonFinite { .. } => ErrorClass::Corrupted,
            NotCompatible { .. } => ErrorClass::NotCompatible,
            LimitExceeded { .. } | StreamTooLarge { .. } => ErrorClass::LimitExceeded,
            Io(_) => ErrorClass::Io,
        }
    }
}

impl HefError {
    /// An error about in-memory bytes (no file name yet).
    pub fn new(kind: HefErrorKind) -> Self {
        Self { path: None, kind }
    }

    /// The same error, naming `path` as its file.
    pub fn with_path(mut self, path: impl AsRef<Path>) -> Self {
        self.path = Some(path.as_ref().to_path_buf());
        self
    }

    /// The file the error is about, if it came from one.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// What went wrong.
    pub fn kind(&self) -> &HefErrorKind {
        &self.kind
    }

    /// The HailoRT class of the error.
    pub fn class(&self) -> ErrorClass {
        self.kind.class()
    }

    /// What went wrong, by value.
    pub fn into_kind(self) -> HefErrorKind {
        self.kind
    }
}

impl From<HefErrorKind> for HefError {
    fn from(kind: HefErrorKind) -> Self {
        Self::new(kind)
    }
}

impl fmt::Display for HefError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.path {
            Some(path) => write!(f, "HEF {}: {}", path.display(), self.kind),
            None => write!(f, "HEF <in memory>: {}", self.kind),
        }
    }
}

impl std::error::Error for HefError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.kind {
            HefErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}

//! Header parsing, size consistency and checksum verification.

use md5::{Digest, Md5};

use crate::error::{Checksum, ChecksumAlgorithm, HefErrorKind};
use crate::format::{header_len, CommonHeader, HeaderTail, RawHeader, COMMON_HEADER_LEN, MAGIC};
use crate::model::HeaderVersion;

/// Where the sections of a checked file lie.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    pub header: RawHeader,
    pub version: HeaderVersion,
    pub header_len: u64,
    pub proto_size: u64,
    /// Bytes after the protobuf up to the end of the file.
    pub after_proto: u64,
}

/// Checks the common part of the header given its first bytes; returns the
/// version's header length. `file_len` is the size of the whole file.
pub(crate) fn check_common(prefix: &[u8], file_len: u64) -> Result<usize, HefErrorKind> {
    let common = CommonHeader::parse(prefix).ok_or(HefErrorKind::Truncated {
        what: "header",
        needed: COMMON_HEADER_LEN as u64,
        available: file_len,
    })?;
    if common.magic != MAGIC {
        return Err(HefErrorKind::BadMagic {
            found: common.magic,
        });
    }
    let len = header_len(common.version).ok_or(HefErrorKind::UnknownVersion {
        version: common.version,
    })?;
    if file_len < len as u64 {
        return Err(HefErrorKind::Truncated {
            what: "header",
            needed: len as u64,
            available: file_len,
        });
    }
    Ok(len)
}

/// Parses a whole header (`bytes` holds at least its length) and checks that
/// the sizes it declares add up to `file_len`.
pub(crate) fn check_layout(bytes: &[u8], file_len: u64) -> Result<Layout, HefErrorKind> {
    let len = check_common(bytes, file_len)?;
    let header = RawHeader::parse(bytes).ok_or(HefErrorKind::Truncated {
        what: "header",
        needed: len as u64,
        available: bytes.len() as u64,
    })?;
    let version =
        HeaderVersion::from_number(header.common.version).ok_or(HefErrorKind::UnknownVersion {
            version: header.common.version,
        })?;
    if let HeaderTail::V3 {
        ccws_size_with_padding,
        padding_size,
        ..
    } = header.tail
    {
        if u64::from(padding_size) > ccws_size_with_padding {
            return Err(HefErrorKind::InvalidHeader {
                field: "hef_padding_size",
                reason: format!(
                    "padding of {padding_size} bytes is larger than ccws_size_with_padding {ccws_size_with_padding}"
                ),
            });
        }
    }
    let header_len = len as u64;
    let proto_size = u64::from(header.common.proto_size);
    let declared = header
        .declared_rest_len()
        .and_then(|rest| rest.checked_add(header_len))
        .ok_or_else(|| HefErrorKind::InvalidHeader {
            field: "section sizes",
            reason: "their sum overflows 64 bits".to_string(),
        })?;
    let proto_end = header_len + proto_size;
    if file_len < proto_end {
        return Err(HefErrorKind::Truncated {
            what: "protobuf",
            needed: proto_end,
            available: file_len,
        });
    }
    if file_len < declared {
        return Err(HefErrorKind::Truncated {
            what: "code-word section",
            needed: declared,
            available: file_len,
        });
    }
    if file_len > declared {
        return Err(HefErrorKind::SizeMismatch {
            header: declared,
            actual: file_len,
        });
    }
    Ok(Layout {
        header,
        version,
        header_len,
        proto_size,
        after_proto: file_len - proto_end,
    })
}

/// A running checksum of the algorithm a header version uses.
pub(crate) enum Hasher {
    Md5(Box<Md5>),
    Crc32(crc32fast::Hasher),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
}

impl Hasher {
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            Self::Md5(h) => h.update(bytes),
            Self::Crc32(h) => h.update(bytes),
            Self::Xxh3(h) => h.update(bytes),
        }
    }

    pub fn finish(self) -> Checksum {
        match self {
            Self::Md5(h) => Checksum::Md5(h.finalize().into()),
            Self::Crc32(h) => Checksum::Crc32(h.finalize()),
            Self::Xxh3(h) => Checksum::Xxh3(h.digest()),
        }
    }
}

/// What to hash and what to compare with.
pub(crate) struct ChecksumPlan {
    pub algorithm: ChecksumAlgorithm,
    pub expected: Checksum,
    /// Whether the bytes after the protobuf are part of the hashed range.
    pub covers_rest: bool,
}

impl ChecksumPlan {
    /// The plan for a header, as HailoRT 5.2 checks it.
    pub fn for_header(header: &RawHeader) -> Self {
        match header.tail {
            HeaderTail::V0 { md5, .. } => Self {
                algorithm: ChecksumAlgorithm::Md5,
                expected: Checksum::Md5(md5),
                covers_rest: true,
            },
            HeaderTail::V1 { crc, .. } => Self {
                algorithm: ChecksumAlgorithm::Crc32,
                expected: Checksum::Crc32(crc),
                covers_rest: true,
            },
            HeaderTail::V2 { xxh3, .. } => Self {
                algorithm: ChecksumAlgorithm::Xxh3,
                expected: Checksum::Xxh3(xxh3),
                covers_rest: true,
            },
            HeaderTail::V3 {
                proto_xxh3: 0,
                xxh3,
                ..
            } => Self {
                algorithm: ChecksumAlgorithm::Xxh3,
                expected: Checksum::Xxh3(xxh3),
                covers_rest: true,
            },
            HeaderTail::V3 { proto_xxh3, .. } => Self {
                algorithm: ChecksumAlgorithm::Xxh3Proto,
                expected: Checksum::Xxh3(proto_xxh3),
                covers_rest: false,
            },
        }
    }

    pub fn hasher(&self) -> Hasher {
        match self.algorithm {
            ChecksumAlgorithm::Md5 => Hasher::Md5(Box::default()),
            ChecksumAlgorithm::Crc32 => Hasher::Crc32(crc32fast::Hasher::new()),
            _ => Hasher::Xxh3(Box::default()),
        }
    }

    /// Compares a finished hash with the header's value.
    pub fn check(&self, actual: Checksum) -> Result<(), HefErrorKind> {
        if actual == self.expected {
            Ok(())
        } else {
            Err(HefErrorKind::ChecksumMismatch {
                algorithm: self.algorithm,
                expected: self.expected,
                actual,
            })
        }
    }
}

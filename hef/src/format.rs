//! The on-disk header: raw big-endian structures, one per header version.
//!
//! Every HEF starts with a 12-byte common part (magic, version, protobuf size)
//! followed by a version-specific tail. The structures here only know how to
//! turn bytes into numbers and back; what the numbers must satisfy is checked
//! by the reader (`read` module).

/// `"\x01HEF"` as a big-endian `u32`.
pub const MAGIC: u32 = 0x0148_4546;

/// Size of the part shared by all versions: magic, version, protobuf size.
pub const COMMON_HEADER_LEN: usize = 12;

/// The largest header of any version (v3), in bytes.
pub const MAX_HEADER_LEN: usize = 56;

/// Alignment of the code-word section in a v3 file.
pub const V3_CCW_ALIGNMENT: u64 = 4096;

/// The fields every version shares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommonHeader {
    /// Must equal [`MAGIC`].
    pub magic: u32,
    /// Header version number (0 to 3 are known).
    pub version: u32,
    /// Size of the protobuf right after the header.
    pub proto_size: u32,
}

/// The version-specific tail of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderTail {
    /// 32-byte header: MD5 over the protobuf (the whole rest of the file).
    V0 {
        /// Unused.
        reserved: u32,
        /// MD5 digest.
        md5: [u8; 16],
    },
    /// 28-byte header: CRC-32 over protobuf and code words.
    V1 {
        /// CRC-32 (IEEE).
        crc: u32,
        /// Size of the code-word section after the protobuf.
        ccws_size: u64,
        /// Unused.
        reserved: u32,
    },
    /// 44-byte header: XXH3-64 over protobuf and code words.
    V2 {
        /// XXH3-64, seed 0.
        xxh3: u64,
        /// Size of the code-word section after the protobuf.
        ccws_size: u64,
        /// Unused.
        reserved: [u64; 2],
    },
    /// 56-byte header: XXH3-64, 4 KiB aligned code words, additional info.
    V3 {
        /// XXH3-64 over everything after the header.
        xxh3: u64,
        /// Size of padding plus code words.
        ccws_size_with_padding: u64,
        /// Zero bytes between the protobuf and the code words.
        padding_size: u32,
        /// Size of the additional-info (external resources) section at the end.
        additional_info_size: u64,
        /// XXH3-64 of the protobuf alone; when non-zero only it is checked.
        proto_xxh3: u64,
        /// Unused.
        reserved: u64,
    },
}

/// A whole header: common part plus its tail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawHeader {
    /// Magic, version, protobuf size.
    pub common: CommonHeader,
    /// The version-specific rest.
    pub tail: HeaderTail,
}

/// Header length of a version number, if the version is known.
pub fn header_len(version: u32) -> Option<usize> {
    match version {
        0 => Some(32),
        1 => Some(28),
        2 => Some(44),
        3 => Some(56),
        _ => None,
    }
}

/// A big-endian cursor over a slice whose length the caller has already
/// checked; reads past the end yield zero rather than panic.
struct Be<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Be<'_> {
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.bytes.get(self.pos..self.pos + N) {
            out.copy_from_slice(src);
        }
        self.pos += N;
        out
    }
    fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.take())
    }
    fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.take())
    }
}

impl CommonHeader {
    /// Parses the common part; `None` if fewer than [`COMMON_HEADER_LEN`] bytes.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        if bytes.len() < COMMON_HEADER_LEN {
            return None;
        }
        let mut be = Be { bytes, pos: 0 };
        Some(Self {
            magic: be.u32(),
            version: be.u32(),
            proto_size: be.u32(),
        })
    }
}

impl RawHeader {
    /// Parses a whole header; `None` if the version is unknown or the slice is
    /// shorter than that version's header.
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let common = CommonHeader::parse(bytes)?;
        let len = header_len(common.version)?;
        if bytes.len() < len {
            return None;
        }
        let mut be = Be {
            bytes: &bytes[..len],
            pos: COMMON_HEADER_LEN,
        };
        let tail = match common.version {
            0 => HeaderTail::V0 {
                reserved: be.u32(),
                md5: be.take(),
            },
            1 => HeaderTail::V1 {
                crc: be.u32(),
                ccws_size: be.u64(),
                reserved: be.u32(),
            },
            2 => HeaderTail::V2 {
                xxh3: be.u64(),
                ccws_size: be.u64(),
                reserved: [be.u64(), be.u64()],
            },
            _ => HeaderTail::V3 {
                xxh3: be.u64(),
                ccws_size_with_padding: be.u64(),
                padding_size: be.u32(),
                additional_info_size: be.u64(),
                proto_xxh3: be.u64(),
                reserved: be.u64(),
            },
        };
        Some(Self { common, tail })
    }

    /// The header as bytes; its length is the version's header length.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(MAX_HEADER_LEN);
        // Appends each value, big-endian, in order.
        macro_rules! put {
            ($($v:expr),*) => {{
                $(out.extend_from_slice(&$v.to_be_bytes());)*
            }};
        }
        let common = &self.common;
        put!(common.magic, common.version, common.proto_size);
        match self.tail {
            HeaderTail::V0 { reserved, md5 } => {
                put!(reserved);
                out.extend_from_slice(&md5);
            }
            HeaderTail::V1 {
                crc,
                ccws_size,
                reserved,
            } => put!(crc, ccws_size, reserved),
            HeaderTail::V2 {
                xxh3,
                ccws_size,
                reserved: [r0, r1],
            } => put!(xxh3, ccws_size, r0, r1),
            HeaderTail::V3 {
                xxh3,
                ccws_size_with_padding,
                padding_size,
                additional_info_size,
                proto_xxh3,
                reserved,
            } => put!(
                xxh3,
                ccws_size_with_padding,
                padding_size,
                additional_info_size,
                proto_xxh3,
                reserved
            ),
        }
        out
    }

    /// Bytes the header says follow it (protobuf, padding, code words,
    /// additional info), or `None` if that sum overflows `u64`.
    pub fn declared_rest_len(&self) -> Option<u64> {
        let proto = u64::from(self.common.proto_size);
        match self.tail {
            HeaderTail::V0 { .. } => Some(proto),
            HeaderTail::V1 { ccws_size, .. } | HeaderTail::V2 { ccws_size, .. } => {
                proto.checked_add(ccws_size)
            }
            HeaderTail::V3 {
                ccws_size_with_padding,
                additional_info_size,
                ..
            } => proto
                .checked_add(ccws_size_with_padding)?
                .checked_add(additional_info_size),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_sizes_match_the_format() {
        for (version, len) in [(0, 32), (1, 28), (2, 44), (3, 56)] {
            let bytes = vec![0u8; len];
            let mut bytes = bytes;
            bytes[4..8].copy_from_slice(&(version as u32).to_be_bytes());
            let header = RawHeader::parse(&bytes).expect("parses");
            assert_eq!(header.to_bytes(), bytes, "version {version}");
            assert!(RawHeader::parse(&bytes[..len - 1]).is_none());
        }
        assert_eq!(header_len(4), None);
    }
}

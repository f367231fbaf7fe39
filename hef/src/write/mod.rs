//! Writing HEF files from a [`Hef`] model: valid headers of every version
//! with correct checksums, a protobuf the reader lists back as the same
//! model, and an optional fake code-word section.
//!
//! The output is deterministic: the same model and options give the same bytes.

use md5::{Digest, Md5};
use prost::Message;

use crate::format::{CommonHeader, HeaderTail, RawHeader, MAGIC, V3_CCW_ALIGNMENT};
use crate::model::{HeaderVersion, Hef};

mod encode;

/// Why a model cannot be written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WriteError {
    /// The model holds something a HEF cannot express.
    #[error("cannot write {field}: {reason}")]
    InvalidModel {
        /// The model field, e.g. `network_groups[0] (backbone).outputs`.
        field: String,
        /// What a HEF needs instead.
        reason: String,
    },
    /// A section is larger than its header field can state.
    #[error("{what} of {size} bytes does not fit the header's {bits}-bit size field")]
    TooLarge {
        /// Which section.
        what: &'static str,
        /// Its size.
        size: u64,
        /// Width of the header field.
        bits: u32,
    },
}

/// Builds HEF bytes from a model description.
///
/// ```
/// # use hef::*;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let model = Hef {
///     header_version: HeaderVersion::V3,
///     hw_arch: HwArch::HAILO1XH,
///     sdk_version: Some("5.2.0".into()),
///     network_groups: vec![],
/// };
/// let bytes = HefBuilder::new(&model).ccw_bytes(vec![0xAB; 64]).build()?;
/// assert_eq!(Hef::from_bytes(&bytes)?, model);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct HefBuilder<'a> {
    hef: &'a Hef,
    version: HeaderVersion,
    ccws: Vec<u8>,
    additional_info: Vec<u8>,
    proto_only_hash: bool,
    pub(crate) net_flow: bool,
    pub(crate) mux_outputs: bool,
    pub(crate) timestamp: u64,
    pub(crate) extra_extensions: Vec<(u32, String)>,
}

impl<'a> HefBuilder<'a> {
    /// A builder for `hef`, writing its own header version, net-flow style
    /// (extension 13, as current compilers do), no code words.
    pub fn new(hef: &'a Hef) -> Self {
        Self {
            hef,
            version: hef.header_version,
            ccws: Vec::new(),
            additional_info: Vec::new(),
            proto_only_hash: false,
            net_flow: true,
            mux_outputs: false,
            timestamp: 0,
            extra_extensions: Vec::new(),
        }
    }

    setters! {
        /// Writes this header version instead of the model's (the file then
        /// reads back with this version).
        version(version: HeaderVersion) => version;
        /// Bytes of the code-word section (fake weights). Version 0 has no such
        /// section; [`build`](Self::build) refuses non-empty code words there.
        ccw_bytes(bytes: Vec<u8>) => ccws;
        /// Bytes of the v3 additional-info section (external resources).
        additional_info(bytes: Vec<u8>) => additional_info;
        /// v3 only: store a protobuf-only XXH3 (`proto_xxh3`), which makes
        /// HailoRT check only the protobuf at open time.
        proto_only_hash(yes: bool) => proto_only_hash;
        /// Whether the core op is written as a net-flow op (extension 13) or in
        /// the legacy network-group fields.
        net_flow(yes: bool) => net_flow;
        /// Joins each group's outputs into one MUX edge layer (the reader lists
        /// the MUX's predecessors).
        mux_outputs(yes: bool) => mux_outputs;
        /// The header timestamp (default 0, for reproducible files).
        timestamp(seconds: u64) => timestamp;
    }

    /// Adds a required extension by index, known or not (for tests of refusal).
    pub fn required_extension(mut self, index: u32, name: &str) -> Self {
        self.extra_extensions.push((index, name.to_string()));
        self
    }

    /// Encodes the protobuf payload alone.
    ///
    /// # Errors
    /// [`WriteError::InvalidModel`] when the model holds something a HEF cannot express.
    pub fn proto_bytes(&self) -> Result<Vec<u8>, WriteError> {
        Ok(self.message()?.encode_to_vec())
    }

    /// The protobuf message before encoding (for tests that tamper with it).
    pub(crate) fn message(&self) -> Result<crate::proto::ProtoHefHef, WriteError> {
        encode::message(self.hef, self)
    }

    /// The whole file.
    ///
    /// # Errors
    /// [`WriteError::InvalidModel`] for a model a HEF cannot express or code
    /// words in a v0 file; [`WriteError::TooLarge`] for a protobuf over 4 GiB.
    pub fn build(&self) -> Result<Vec<u8>, WriteError> {
        self.build_around(self.proto_bytes()?)
    }

    /// The whole file around the given protobuf bytes instead of the
    /// model's: header, sizes and checksum are valid for them. For tests of
    /// what the reader does with a payload that does not decode.
    ///
    /// # Errors
    /// As [`build`](Self::build).
    pub fn build_around(&self, proto: Vec<u8>) -> Result<Vec<u8>, WriteError> {
        let proto_size = u32::try_from(proto.len()).map_err(|_| WriteError::TooLarge {
            what: "protobuf payload",
            size: proto.len() as u64,
            bits: 32,
        })?;
        let common = CommonHeader {
            magic: MAGIC,
            version: self.version.number(),
            proto_size,
        };
        let (tail, rest) = match self.version {
            HeaderVersion::V0 => {
                if !self.ccws.is_empty() || !self.additional_info.is_empty() {
                    return Err(WriteError::InvalidModel {
                        field: "code words".into(),
                        reason: "a v0 HEF holds only the protobuf".into(),
                    });
                }
                let md5 = Md5::digest(&proto).into();
                (HeaderTail::V0 { reserved: 0, md5 }, proto)
            }
            HeaderVersion::V1 => {
                let rest = [proto, self.ccws.clone()].concat();
                let tail = HeaderTail::V1 {
                    crc: crc32fast::hash(&rest),
                    ccws_size: self.ccws.len() as u64,
                    reserved: 0,
                };
                (tail, rest)
            }
            HeaderVersion::V2 => {
                let rest = [proto, self.ccws.clone()].concat();
                let tail = HeaderTail::V2 {
                    xxh3: xxhash_rust::xxh3::xxh3_64(&rest),
                    ccws_size: self.ccws.len() as u64,
                    reserved: [0; 2],
                };
                (tail, rest)
            }
            HeaderVersion::V3 => {
                let header_len = HeaderVersion::V3.header_len() as u64;
                let end = header_len + proto.len() as u64;
                let padding = (V3_CCW_ALIGNMENT - end % V3_CCW_ALIGNMENT) % V3_CCW_ALIGNMENT;
                let proto_xxh3 = if self.proto_only_hash {
                    xxhash_rust::xxh3::xxh3_64(&proto)
                } else {
                    0
                };
                let rest = [
                    proto,
                    vec![0u8; padding as usize],
                    self.ccws.clone(),
                    self.additional_info.clone(),
                ]
                .concat();
                let tail = HeaderTail::V3 {
                    xxh3: xxhash_rust::xxh3::xxh3_64(&rest),
                    ccws_size_with_padding: padding + self.ccws.len() as u64,
                    padding_size: padding as u32,
                    additional_info_size: self.additional_info.len() as u64,
                    proto_xxh3,
                    reserved: 0,
                };
                (tail, rest)
            }
        };
        let mut out = RawHeader { common, tail }.to_bytes();
        out.extend_from_slice(&rest);
        Ok(out)
    }
}

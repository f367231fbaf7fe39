//! The model a HEF describes, listed the way HailoRT lists it.
//!
//! These types are what the reader produces and what the writer
//! ([`crate::HefBuilder`]) consumes, so a model survives a write/read round
//! trip unchanged. They carry no protobuf types: callers never see the wire
//! format.

use serde::{Deserialize, Serialize};

/// Version of the binary header in front of the protobuf payload.
///
/// Each version has its own header size and checksum algorithm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HeaderVersion {
    /// 32 bytes, MD5 over the protobuf.
    V0,
    /// 28 bytes, CRC-32 over protobuf and code words.
    V1,
    /// 44 bytes, XXH3-64 over protobuf and code words.
    V2,
    /// 56 bytes, XXH3-64 over everything after the header, or over the
    /// protobuf only when the header's protobuf hash is set.
    V3,
}

impl HeaderVersion {
    /// All versions, oldest first.
    pub const ALL: [HeaderVersion; 4] = [Self::V0, Self::V1, Self::V2, Self::V3];

    /// The number stored in the header.
    pub fn number(self) -> u32 {
        match self {
            Self::V0 => 0,
            Self::V1 => 1,
            Self::V2 => 2,
            Self::V3 => 3,
        }
    }

    /// The version for a header number, if it is one HailoRT knows.
    pub fn from_number(n: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.number() == n)
    }

    /// Size of the whole header in bytes, magic included.
    pub fn header_len(self) -> usize {
        match self {
            Self::V0 => 32,
            Self::V1 => 28,
            Self::V2 => 44,
            Self::V3 => 56,
        }
    }
}

/// A Hailo chip a HEF can run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Chip {
    /// Hailo-8.
    Hailo8,
    /// Hailo-8L.
    Hailo8L,
    /// Hailo-8R.
    Hailo8R,
    /// Hailo-10H.
    Hailo10H,
    /// Hailo-15H.
    Hailo15H,
    /// Hailo-15M.
    Hailo15M,
    /// Hailo-15L.
    Hailo15L,
    /// Hailo-12L (MARS).
    Hailo12L,
}

impl Chip {
    /// Every chip, in declaration order.
    pub const ALL: [Chip; 8] = [
        Self::Hailo8,
        Self::Hailo8L,
        Self::Hailo8R,
        Self::Hailo10H,
        Self::Hailo15H,
        Self::Hailo15M,
        Self::Hailo15L,
        Self::Hailo12L,
    ];

    /// The name `hailortcli` prints.
    pub fn name(self) -> &'static str {
        match self {
            Self::Hailo8 => "HAILO8",
            Self::Hailo8L => "HAILO8L",
            Self::Hailo8R => "HAILO8R",
            Self::Hailo10H => "HAILO10H",
            Self::Hailo15H => "HAILO15H",
            Self::Hailo15M => "HAILO15M",
            Self::Hailo15L => "HAILO15L",
            Self::Hailo12L => "HAILO12L",
        }
    }
}

impl std::str::FromStr for Chip {
    type Err = String;

    /// Parses a chip name as HailoRT prints it, case-insensitively
    /// (`hailo10h`, `HAILO-10H` and `Hailo10H` all work).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let wanted: String = s.chars().filter(|c| *c != '-' && *c != '_').collect();
        Self::ALL
            .into_iter()
            .find(|c| c.name().eq_ignore_ascii_case(&wanted))
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|c| c.name()).collect();
                format!("unknown chip '{s}', expected one of {}", names.join(", "))
            })
    }
}

impl std::fmt::Display for Chip {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The `hw_arch` a HEF was compiled for (`ProtoHEFHeader.hw_arch`).
///
/// Hailo-10H HEFs carry [`HwArch::HAILO1XH`] (103).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HwArch(pub u64);

impl HwArch {
    /// `PROTO__HW_ARCH__HAILO8` (0, the protobuf default).
    pub const HAILO8: HwArch = HwArch(0);
    /// `PROTO__HW_ARCH__HAILO8L`.
    pub const HAILO8L: HwArch = HwArch(3);
    /// `PROTO__HW_ARCH__HAILO1XH` (called HAILO15H in 4.23): Hailo-15H and Hailo-10H.
    pub const HAILO1XH: HwArch = HwArch(103);

    /// The chips a HEF of this arch runs on, as HailoRT decides it;
    /// empty for an arch HailoRT does not know.
    pub fn compatible_chips(self) -> &'static [Chip] {
        use Chip::*;
        match self.0 {
            0..=2 => &[Hailo8],
            3 => &[Hailo8L, Hailo8],
            4 => &[Hailo15M, Hailo15H, Hailo10H],
            5 => &[Hailo10H],
            6 => &[Hailo15L],
            100 => &[Hailo8],
            101 | 102 => &[Hailo8],
            103..=105 => &[Hailo15H, Hailo10H],
            106 => &[Hailo15L],
            108 => &[Hailo12L],
            _ => &[],
        }
    }

    /// The `ProtoHEFHwArch` name (`PROTO__HW_ARCH__` stripped), if known.
    pub fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            0 => "HAILO8",
            1 => "HAILO8P",
            2 => "HAILO8R",
            3 => "HAILO8L",
            4 => "HAILO15M",
            5 => "HAILO10H",
            6 => "HAILO15L",
            100 => "SAGE_A0",
            101 => "SAGE_B0",
            102 => "PAPRIKA_B0",
            103 => "HAILO1XH",
            104 => "GINGER",
            105 => "LAVENDER",
            106 => "PLUTO",
            108 => "MARS",
            _ => return None,
        })
    }

    /// Whether a HEF of this arch can be configured on `chip`.
    pub fn runs_on(self, chip: Chip) -> bool {
        self.compatible_chips().contains(&chip)
    }
}

/// The SDK (Dataflow Compiler) version a HEF was compiled with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SdkVersion {
    /// Major version.
    pub major: u32,
    /// Minor version.
    pub minor: u32,
    /// Revision.
    pub revision: u32,
}

impl std::fmt::Display for SdkVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.revision)
    }
}

/// A parsed HEF: what `hailortcli parse-hef` lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hef {
    /// Version of the binary header.
    pub header_version: HeaderVersion,
    /// The arch the HEF was compiled for.
    pub hw_arch: HwArch,
    /// The compiler version as the HEF states it (string form, e.g. "5.2.0").
    pub sdk_version: Option<String>,
    /// Network groups sorted by name, as the C API returns them.
    pub network_groups: Vec<NetworkGroup>,
}

impl Hef {
    /// The chips this HEF runs on.
    pub fn compatible_chips(&self) -> &'static [Chip] {
        self.hw_arch.compatible_chips()
    }

    /// The network group with this name.
    pub fn network_group(&self, name: &str) -> Option<&NetworkGroup> {
        self.network_groups.iter().find(|g| g.name == name)
    }

    /// Checks that the HEF can be configured on `chip`, as HailoRT does at
    /// configure time.
    ///
    /// # Errors
    /// [`HefErrorKind::NotCompatible`](crate::HefErrorKind::NotCompatible)
    /// (class not compatible). The error names no file; add it with
    /// [`HefError::with_path`](crate::HefError::with_path).
    pub fn check_compatible(&self, chip: Chip) -> Result<(), crate::HefError> {
        if self.hw_arch.runs_on(chip) {
            return Ok(());
        }
        let chips = self.compatible_chips();
        let compatible = if chips.is_empty() {
            "no known chip".to_string()
        } else {
            format!(
                "runs on {}",
                chips
                    .iter()
                    .map(|c| c.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        Err(crate::HefErrorKind::NotCompatible {
            hw_arch: self.hw_arch.0,
            chip,
            compatible,
        }
        .into())
    }
}

/// One network group (a configurable unit; one "model" to the scheduler).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NetworkGroup {
    /// The group's name.
    pub name: String,
    /// Network names, `"<group>/<network>"`.
    pub networks: Vec<String>,
    /// Number of contexts; more than one means multi-context.
    pub contexts: u32,
    /// The compiler's bottleneck fps estimate, when the HEF carries one.
    pub bottleneck_fps: Option<f64>,
    /// Operations per frame (multiply and add counted separately), when the HEF
    /// carries them.
    pub ops_per_frame: Option<u64>,
    /// Boundary input streams, in file order.
    pub inputs: Vec<StreamInfo>,
    /// Boundary output streams, in file order.
    pub outputs: Vec<StreamInfo>,
}

impl NetworkGroup {
    /// Whether the group needs context switches inside one inference.
    pub fn is_multi_context(&self) -> bool {
        self.contexts > 1
    }

    /// Inputs then outputs.
    pub fn streams(&self) -> impl Iterator<Item = &StreamInfo> {
        self.inputs.iter().chain(self.outputs.iter())
    }

    /// The stream with this name, input or output.
    pub fn stream(&self, name: &str) -> Option<&StreamInfo> {
        self.streams().find(|s| s.name == name)
    }
}

/// Direction of a stream, seen from the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Host to device.
    Input,
    /// Device to host.
    Output,
}

impl Direction {
    /// `input` or `output`, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Input => "input",
            Direction::Output => "output",
        }
    }

    /// The `hailo_stream_direction_t` value: host to device 0, device to host 1.
    pub fn c_value(self) -> u32 {
        match self {
            Direction::Input => 0,
            Direction::Output => 1,
        }
    }
}

/// Element type of a stream's device buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DataType {
    /// One byte per element.
    Uint8,
    /// Two bytes per element.
    Uint16,
}

impl DataType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Self::Uint8 => 1,
            Self::Uint16 => 2,
        }
    }

    /// The name HailoRT prints.
    pub fn name(self) -> &'static str {
        match self {
            Self::Uint8 => "UINT8",
            Self::Uint16 => "UINT16",
        }
    }
}

/// Declares [`FormatOrder`] from one table of variant, C value and the name
/// HailoRT prints, so the three cannot drift apart.
macro_rules! format_orders {
    ($($variant:ident = $value:literal, $name:literal;)*) => {
        /// A HailoRT `hailo_format_order_t`, by its C value.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
        #[repr(u32)]
        pub enum FormatOrder {
            $(
                #[doc = concat!("`HAILO_FORMAT_ORDER_", $name, "`.")]
                #[serde(rename = $name)]
                $variant = $value,
            )*
        }

        impl FormatOrder {
            /// Every order, in C value order.
            const ALL: &[FormatOrder] = &[$(FormatOrder::$variant,)*];

            /// The name HailoRT prints (`HAILO_FORMAT_ORDER_` stripped).
            pub fn name(self) -> &'static str {
                match self {
                    $(FormatOrder::$variant => $name,)*
                }
            }
        }
    };
}

format_orders! {
    Nhwc = 1, "NHWC";
    Nhcw = 2, "NHCW";
    Fcr = 3, "FCR";
    F8cr = 4, "F8CR";
    Nhw = 5, "NHW";
    Nc = 6, "NC";
    BayerRgb = 7, "BAYER_RGB";
    TwelveBitBayerRgb = 8, "12_BIT_BAYER_RGB";
    HailoNms = 9, "HAILO_NMS";
    Rgb888 = 10, "RGB888";
    Nchw = 11, "NCHW";
    Yuy2 = 12, "YUY2";
    Nv12 = 13, "NV12";
    Nv21 = 14, "NV21";
    Yyuv = 15, "YYUV";
    Yyvu = 16, "YYVU";
    Rgb4 = 17, "RGB4";
    I420 = 18, "I420";
    Yyyyuv = 19, "YYYYUV";
    NmsWithByteMask = 20, "NMS_WITH_BYTE_MASK";
    NmsOnChip = 21, "NMS_ON_CHIP";
    NmsByClass = 22, "NMS_BY_CLASS";
    NmsByScore = 23, "NMS_BY_SCORE";
}

impl FormatOrder {
    /// The `hailo_format_order_t` value.
    pub fn c_value(self) -> u32 {
        self as u32
    }

    /// The order for a `hailo_format_order_t` value (AUTO = 0 has none).
    pub fn from_c_value(v: u32) -> Option<Self> {
        Self::ALL.iter().copied().find(|o| o.c_value() == v)
    }

    /// The host (vstream / InferModel) order HailoRT uses by default for a
    /// device order (`HailoRTDefaults::get_default_host_format_order`).
    pub fn host_order(self) -> FormatOrder {
        use FormatOrder::*;
        match self {
            Nhcw | Rgb888 => Nhwc,
            Yyuv => Nv12,
            Yyvu => Nv21,
            Yyyyuv => I420,
            NmsOnChip => NmsByClass,
            other => other,
        }
    }
}

/// Shape of one frame of a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StreamShape {
    /// An image-like tensor (height, width, features), after any transpose.
    Image {
        /// Rows.
        height: u32,
        /// Columns.
        width: u32,
        /// Channels.
        features: u32,
    },
    /// An on-chip NMS output.
    Nms {
        /// Number of classes.
        classes: u32,
        /// Values per box (`bbox_size`).
        bbox_params: u32,
        /// Boxes per class (`max_output_size` times the division factor).
        max_bboxes_per_class: u32,
    },
}

impl StreamShape {
    /// Number of elements in one frame, saturating at `u64::MAX` (a listed
    /// HEF is within [`crate::limits::MAX_STREAM_FRAME_BYTES`], far below).
    pub fn elements(&self) -> u64 {
        self.checked_elements().unwrap_or(u64::MAX)
    }

    /// Number of elements in one frame, `None` when the product overflows.
    pub fn checked_elements(&self) -> Option<u64> {
        let [a, b, c] = match *self {
            Self::Image {
                height,
                width,
                features,
            } => [height, width, features],
            Self::Nms {
                classes,
                bbox_params,
                max_bboxes_per_class,
            } => [classes, bbox_params, max_bboxes_per_class],
        };
        u64::from(a)
            .checked_mul(u64::from(b))?
            .checked_mul(u64::from(c))
    }
}

/// Quantisation of a stream: real value = (q - zp) * scale.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QuantInfo {
    /// Zero point.
    pub zp: f32,
    /// Scale.
    pub scale: f32,
    /// Smallest real value the stream holds.
    pub limvals_min: f32,
    /// Largest real value the stream holds.
    pub limvals_max: f32,
}

impl QuantInfo {
    /// The real value of a quantised element.
    #[inline]
    pub fn dequantize(&self, q: f32) -> f32 {
        (q - self.zp) * self.scale
    }

    /// The quantised element nearest to a real value (not clamped).
    #[inline]
    pub fn quantize(&self, x: f32) -> f32 {
        (x / self.scale + self.zp).round()
    }
}

/// Quantisation of a stream: one for all features, or one per feature.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Quantization {
    /// One (zp, scale) for the whole stream.
    Uniform(QuantInfo),
    /// One (zp, scale) per feature (extension 25); HailoRT then reports a
    /// zeroed stream-level quant info.
    PerFeature(Vec<QuantInfo>),
}

/// One boundary stream of a network group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StreamInfo {
    /// The stream's (edge layer's) name.
    pub name: String,
    /// The network it belongs to, `"<group>/<network>"`.
    pub network: String,
    /// Input or output.
    pub direction: Direction,
    /// Frame shape, after any transpose.
    pub shape: StreamShape,
    /// Order of the device buffer.
    pub device_order: FormatOrder,
    /// Order the host (vstream / InferModel) buffer uses by default.
    pub host_order: FormatOrder,
    /// Element type.
    pub data_type: DataType,
    /// Whether the compiler transposed height and width.
    pub transposed: bool,
    /// Quantisation of the elements.
    pub quant: Quantization,
}

/// The last component of a stream name, `<network group>/<name>` -> `<name>`: the name a
/// consumer of the stream (a decoder input, a reference model output) matches it by.
pub fn layer_name(stream: &str) -> &str {
    stream.rsplit('/').next().unwrap_or(stream)
}

impl StreamInfo {
    /// The last component of the stream's name ([`layer_name`]).
    pub fn layer_name(&self) -> &str {
        layer_name(&self.name)
    }

    /// Bytes of one frame in the host order and the device data type.
    pub fn frame_size(&self) -> u64 {
        self.shape
            .elements()
            .saturating_mul(self.data_type.size() as u64)
    }
}

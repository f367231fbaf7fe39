//! Where the device half of the model ends, and how many query slots run the keypoint branch.
//!
//! RF-DETR's keypoint model splits in two places that the runtime supports:
//!
//! | split | device half | maps the HEF returns and the decoder reads |
//! |---|---|---|
//! | [`Split::Design`] (default) | ViT + both C2f projectors (upstream `backbone_only`) | `features`, `cross_attn_features`: (g, g, 256) each |
//! | [`Split::Taps`] | ViT alone | `tap0` .. `tap3`: (g, g, 384) each, the projectors run on the host |
//!
//! A split is recognised from the names of the decoder's inputs, never from their
//! positions or shapes: every map of a split has the same shape, so a compiler that
//! reorders outputs would otherwise feed the wrong map without a sign.

use std::fmt;
use std::num::NonZeroUsize;

/// Patch side of the device half's ViT, pixels: one feature-map cell per 12 x 12
/// pixels, so the maps of a `side` input are `side / PATCH` cells square.
pub const PATCH: u32 = 12;

/// Every input side is a multiple of this: the patch times two windows per side.
pub const SIDE_MULTIPLE: u32 = 2 * PATCH;

/// The device/host split a decoder graph is built for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Split {
    /// The ViT and both projectors on the device: two 256-channel maps.
    #[default]
    Design,
    /// The ViT on the device, the projectors on the host: four 384-channel taps.
    Taps,
}

impl Split {
    /// Both splits, the default first.
    pub const ALL: [Split; 2] = [Split::Design, Split::Taps];

    /// The decoder input names of this split, in the graph's order.
    pub fn input_names(self) -> &'static [&'static str] {
        match self {
            Self::Design => &["features", "cross_attn_features"],
            Self::Taps => &["tap0", "tap1", "tap2", "tap3"],
        }
    }

    /// Channels of each map.
    pub const fn channels(self) -> usize {
        match self {
            Self::Design => 256,
            Self::Taps => 384,
        }
    }

    /// Short key, as reports and the CLI print it.
    pub fn key(self) -> &'static str {
        match self {
            Self::Design => "design",
            Self::Taps => "taps",
        }
    }

    /// What runs where, in words, for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Design => {
                "design split: ViT and both projectors on the device, two 256-channel maps"
            }
            Self::Taps => {
                "taps split: ViT on the device, four 384-channel taps, projectors on the host"
            }
        }
    }

    /// The split whose input names are exactly `names` (in any order), if any.
    ///
    /// A level suffix (`features_0`, `cross_attn_features_0`, as an export with several
    /// feature levels names them) is accepted for the design split's single level.
    pub fn recognise<S: AsRef<str>>(names: &[S]) -> Option<Split> {
        Self::ALL.into_iter().find(|split| {
            let want = split.input_names();
            names.len() == want.len()
                && want.iter().all(|w| {
                    names.iter().any(|n| {
                        let n = n.as_ref();
                        n == *w || n.strip_suffix("_0") == Some(w)
                    })
                })
        })
    }
}

impl fmt::Display for Split {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// How many query slots run the keypoint branch (config key `decoder.keypoint_slots`).
///
/// The two-stage selection sorts the query slots by the encoder's class score, so the
/// first `n` slots are the `n` best proposals. Running the keypoint sublayers on those
/// only is exact for them (boxes and keypoints equal the full graph's); the other slots
/// keep their boxes but lose the keypoint term of their class logits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeypointSlots {
    /// The first `n` slots (`1` for a one-subject rig, the default).
    Top(NonZeroUsize),
    /// Every slot, as upstream RF-DETR exports it.
    All,
}

impl Default for KeypointSlots {
    fn default() -> Self {
        Self::Top(NonZeroUsize::MIN)
    }
}

impl KeypointSlots {
    /// Slots that run the keypoint branch out of `queries`.
    pub fn count(self, queries: usize) -> usize {
        match self {
            Self::Top(n) => n.get().min(queries),
            Self::All => queries,
        }
    }
}

impl fmt::Display for KeypointSlots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Top(n) => write!(f, "{n}"),
            Self::All => f.write_str("all"),
        }
    }
}

/// A `keypoint_slots` value that is neither a positive whole number nor `all`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("keypoint_slots \"{0}\": expected a whole number of at least 1, or \"all\"")]
pub struct KeypointSlotsError(pub String);

impl std::str::FromStr for KeypointSlots {
    type Err = KeypointSlotsError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "all" {
            return Ok(Self::All);
        }
        s.parse::<NonZeroUsize>()
            .map(Self::Top)
            .map_err(|_| KeypointSlotsError(s.to_owned()))
    }
}

impl serde::Serialize for KeypointSlots {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Top(n) => s.serialize_u64(n.get() as u64),
            Self::All => s.serialize_str("all"),
        }
    }
}

impl<'de> serde::Deserialize<'de> for KeypointSlots {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Count(u64),
            Word(String),
        }
        let text = match Raw::deserialize(d)? {
            Raw::Count(n) => n.to_string(),
            Raw::Word(w) => w,
        };
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_are_recognised_by_name_only() {
        assert_eq!(
            Split::recognise(&["cross_attn_features", "features"]),
            Some(Split::Design)
        );
        assert_eq!(
            Split::recognise(&["features_0", "cross_attn_features_0"]),
            Some(Split::Design)
        );
        assert_eq!(
            Split::recognise(&["tap3", "tap1", "tap0", "tap2"]),
            Some(Split::Taps)
        );
        // Negative controls: a missing, an extra and an unknown name.
        assert_eq!(Split::recognise(&["features"]), None);
        assert_eq!(
            Split::recognise(&["features", "cross_attn_features", "tap0"]),
            None
        );
        assert_eq!(Split::recognise(&["input_0", "input_1"]), None);
    }

    #[test]
    fn keypoint_slots_parse_count_and_refuse() {
        assert_eq!("all".parse::<KeypointSlots>().unwrap(), KeypointSlots::All);
        let three = "3".parse::<KeypointSlots>().unwrap();
        assert_eq!(three.count(100), 3);
        assert_eq!(KeypointSlots::default().count(100), 1);
        assert_eq!(KeypointSlots::All.count(100), 100);
        assert_eq!(three.to_string(), "3");
        for bad in ["0", "-1", "some", ""] {
            let err = bad.parse::<KeypointSlots>().unwrap_err().to_string();
            assert!(err.contains("\"all\""), "{err}");
        }
        #[derive(serde::Deserialize)]
        struct Key {
            keypoint_slots: KeypointSlots,
        }
        let k: Key = toml::from_str("keypoint_slots = 2").unwrap();
        assert_eq!(k.keypoint_slots.count(100), 2);
        let k: Key = toml::from_str("keypoint_slots = \"all\"").unwrap();
        assert_eq!(k.keypoint_slots, KeypointSlots::All);
        assert!(toml::from_str::<Key>("keypoint_slots = 0").is_err());
    }
}

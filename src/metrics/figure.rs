//! Figures that say where they come from.
//!
//! Every number a report prints is a [`Figure`]: a value, a unit and a [`Provenance`] that is
//! measured (on which device), published (by whom, for which rows) or modelled (with every
//! assumed value listed). Planning defaults such as the 30% utilisation are modelled figures
//! whose assumption is named, so a reader can always tell a measurement on this device from a
//! public measurement of another model and from an estimate.

use std::fmt;

use serde::{Deserialize, Serialize};

/// One assumed input of a modelled figure, e.g. `utilisation = 0.30`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assumption {
    /// What is assumed.
    pub name: String,
    /// The value assumed, with its unit.
    pub value: String,
}

impl Assumption {
    /// An assumption `name = value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Where a figure comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Provenance {
    /// Measured on a real device.
    Measured {
        /// The device it was measured on (HailoRT device id, e.g. `0000:01:00.0`).
        device: String,
    },
    /// Computed from a model (the simulator's timing model, a planning formula).
    Modelled {
        /// Every assumed value the figure depends on.
        assumed: Vec<Assumption>,
    },
    /// Derived from measurements someone else published on the same part for other models
    /// (Hailo's model zoo): neither assumed nor measured on this device.
    Published {
        /// The publication, the rows used and how they were combined.
        source: String,
    },
}

impl Provenance {
    /// A measured figure from `device`.
    pub fn measured(device: impl Into<String>) -> Self {
        Provenance::Measured {
            device: device.into(),
        }
    }

    /// A modelled figure with the given assumptions.
    pub fn modelled(assumed: impl IntoIterator<Item = Assumption>) -> Self {
        Provenance::Modelled {
            assumed: assumed.into_iter().collect(),
        }
    }

    /// A figure derived from published measurements described by `source`.
    pub fn published(source: impl Into<String>) -> Self {
        Provenance::Published {
            source: source.into(),
        }
    }

    /// True for figures measured on a device.
    pub fn is_measured(&self) -> bool {
        matches!(self, Provenance::Measured { .. })
    }

    /// The provenance's kind as JSON tags it: `measured`, `modelled` or `published`.
    pub fn kind(&self) -> &'static str {
        match self {
            Provenance::Measured { .. } => "measured",
            Provenance::Modelled { .. } => "modelled",
            Provenance::Published { .. } => "published",
        }
    }

    /// This provenance combined with `other`: measured only when both are measured on the same
    /// device, published only when both rest on the same publication; otherwise modelled, with
    /// the assumptions of both.
    pub fn combine(&self, other: &Provenance) -> Provenance {
        match (self, other) {
            (Provenance::Measured { device: a }, Provenance::Measured { device: b }) if a == b => {
                self.clone()
            }
            (Provenance::Published { source: a }, Provenance::Published { source: b })
                if a == b =>
            {
                self.clone()
            }
            _ => {
                let mut assumed = self.assumptions();
                for a in other.assumptions() {
                    if !assumed.contains(&a) {
                        assumed.push(a);
                    }
                }
                Provenance::Modelled { assumed }
            }
        }
    }

    /// The assumptions behind this figure; a measurement on a device, or a published one, is
    /// listed as one.
    fn assumptions(&self) -> Vec<Assumption> {
        match self {
            Provenance::Measured { device } => vec![Assumption::new("measured on", device.clone())],
            Provenance::Modelled { assumed } => assumed.clone(),
            Provenance::Published { source } => vec![Assumption::new("published", source.clone())],
        }
    }
}

impl fmt::Display for Provenance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Provenance::Measured { device } => write!(f, "measured on {device}"),
            Provenance::Published { source } => write!(f, "published: {source}"),
            Provenance::Modelled { assumed } if assumed.is_empty() => write!(f, "modelled"),
            Provenance::Modelled { assumed } => {
                write!(f, "ASSUMED: ")?;
                for (i, a) in assumed.iter().enumerate() {
                    if i > 0 {
                        write!(f, "; ")?;
                    }
                    write!(f, "{} = {}", a.name, a.value)?;
                }
                Ok(())
            }
        }
    }
}

/// The backend a device figure comes from: HailoRT on a real part, or the
/// simulator. Reports spell it `hailort` or `simulator`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum BackendKind {
    /// HailoRT on a real part.
    #[serde(rename = "hailort")]
    HailoRt,
    /// The built-in simulator (its device figures are modelled).
    #[serde(rename = "simulator")]
    Sim,
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BackendKind::HailoRt => "HailoRT",
            BackendKind::Sim => "simulator",
        })
    }
}

/// The unit of a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Unit {
    /// Frames per second.
    Fps,
    /// A fraction in [0, 1] (utilisation, busy share); printed as percent.
    Fraction,
    /// Milliseconds.
    Milliseconds,
    /// Billions of multiply-accumulates.
    Gmac,
    /// Billions of operations (2 x GMAC).
    Gops,
    /// Tera-operations per second.
    Tops,
    /// Bytes per second.
    BytesPerSecond,
    /// Events per second (e.g. graph switches).
    PerSecond,
    /// Watts.
    Watts,
    /// Degrees Celsius.
    Celsius,
}

/// The unit's name as `report.json` spells it (`fps`, `fraction`, `bytes_per_second`, ...).
impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Unit::Fps => "fps",
            Unit::Fraction => "fraction",
            Unit::Milliseconds => "milliseconds",
            Unit::Gmac => "gmac",
            Unit::Gops => "gops",
            Unit::Tops => "tops",
            Unit::BytesPerSecond => "bytes_per_second",
            Unit::PerSecond => "per_second",
            Unit::Watts => "watts",
            Unit::Celsius => "celsius",
        })
    }
}

/// A value with its unit and provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// The value, in `unit`.
    pub value: f64,
    /// Its unit.
    pub unit: Unit,
    /// Where it comes from.
    pub provenance: Provenance,
}

impl Figure {
    /// A measured figure.
    pub fn measured(value: f64, unit: Unit, device: impl Into<String>) -> Self {
        Self {
            value,
            unit,
            provenance: Provenance::measured(device),
        }
    }

    /// A modelled figure.
    pub fn modelled(value: f64, unit: Unit, assumed: impl IntoIterator<Item = Assumption>) -> Self {
        Self {
            value,
            unit,
            provenance: Provenance::modelled(assumed),
        }
    }
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.unit {
            Unit::Fraction => write!(f, "{:.1}%", 100.0 * self.value)?,
            Unit::Fps => write!(f, "{:.1} fps", self.value)?,
            Unit::Milliseconds => write!(f, "{:.3} ms", self.value)?,
            Unit::Gmac => write!(f, "{:.2} GMAC", self.value)?,
            Unit::Gops => write!(f, "{:.2} GOPS", self.value)?,
            Unit::Tops => write!(f, "{:.2} TOPS", self.value)?,
            Unit::BytesPerSecond => write!(f, "{:.1} MB/s", self.value / 1e6)?,
            Unit::PerSecond => write!(f, "{:.1} /s", self.value)?,
            Unit::Watts => write!(f, "{:.2} W", self.value)?,
            Unit::Celsius => write!(f, "{:.1} °C", self.value)?,
        }
        write!(f, " ({})", self.provenance)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_displays_as_report_json_spells_it() {
        for unit in [Unit::Fps, Unit::BytesPerSecond, Unit::Celsius] {
            let json = serde_json::to_value(unit).unwrap();
            assert_eq!(json.as_str(), Some(unit.to_string().as_str()));
        }
    }

    #[test]
    fn display_says_measured_or_assumed() {
        let m = Figure::measured(0.27, Unit::Fraction, "0000:01:00.0");
        assert_eq!(m.to_string(), "27.0% (measured on 0000:01:00.0)");
        let a = Figure::modelled(
            0.3,
            Unit::Fraction,
            [Assumption::new("utilisation", "0.30")],
        );
        assert_eq!(a.to_string(), "30.0% (ASSUMED: utilisation = 0.30)");
    }

    #[test]
    fn combining_keeps_measured_only_when_both_are() {
        let dev = Provenance::measured("dev0");
        assert!(dev.combine(&Provenance::measured("dev0")).is_measured());
        assert!(!dev.combine(&Provenance::measured("dev1")).is_measured());
        let mixed = dev.combine(&Provenance::modelled([Assumption::new("peak", "40 TOPS")]));
        let Provenance::Modelled { assumed } = mixed else {
            panic!("expected modelled")
        };
        assert_eq!(assumed.len(), 2);
    }

    #[test]
    fn published_is_its_own_kind_and_combines_to_modelled() {
        let zoo = Provenance::published("zoo vit_small at batch 3");
        assert_eq!(zoo.kind(), "published");
        assert!(!zoo.is_measured());
        assert_eq!(zoo.combine(&zoo), zoo);
        let other = Provenance::published("zoo vit_small at batch 1");
        let Provenance::Modelled { assumed } = zoo.combine(&other) else {
            panic!("two publications are not one")
        };
        assert_eq!(assumed.len(), 2);
        assert!(assumed.iter().all(|a| a.name == "published"));
        let f = Figure {
            value: 0.12,
            unit: Unit::Fraction,
            provenance: zoo,
        };
        assert_eq!(f.to_string(), "12.0% (published: zoo vit_small at batch 3)");
        let s = serde_json::to_string(&f).unwrap();
        assert!(s.contains("\"kind\":\"published\""), "{s}");
        assert_eq!(serde_json::from_str::<Figure>(&s).unwrap(), f);
    }

    #[test]
    fn json_round_trip_is_tagged() {
        let f = Figure::modelled(12.0, Unit::Fps, [Assumption::new("clock", "virtual")]);
        let s = serde_json::to_string(&f).unwrap();
        assert!(s.contains("\"kind\":\"modelled\""), "{s}");
        assert_eq!(serde_json::from_str::<Figure>(&s).unwrap(), f);
    }
}

//! Compute utilisation and busy share: the two numbers that are easy to confuse.
//!
//! * **Compute %** = ops per frame x fps / peak ops. It is quoted against both the INT8 and the
//!   INT4 peak of the part, with the precision the HEF was compiled for stated beside it.
//!   ops = 2 x MACs, the convention of Hailo's "OPS (G)" column.
//! * **Busy %** = the share of wall time with work on the NN core. It can read 100% while the
//!   compute share is low.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::figure::{Assumption, Figure, Provenance, Unit};

/// Arithmetic precision of a compiled graph, which decides the peak it can reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// 8-bit weights and activations.
    Int8,
    /// 4-bit weights.
    Int4,
}

impl Precision {
    /// Both precisions, INT8 first.
    pub const ALL: [Precision; 2] = [Precision::Int8, Precision::Int4];

    /// Nominal peak of the Hailo-10H at this precision, in TOPS.
    pub fn hailo10h_peak_tops(self) -> f64 {
        match self {
            Precision::Int8 => 20.0,
            Precision::Int4 => 40.0,
        }
    }
}

impl fmt::Display for Precision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Precision::Int8 => "INT8",
            Precision::Int4 => "INT4",
        })
    }
}

impl FromStr for Precision {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "int8" | "a8w8" => Ok(Precision::Int8),
            "int4" | "a8w4" => Ok(Precision::Int4),
            _ => Err(format!("precision `{s}`: expected int8 or int4")),
        }
    }
}

/// The peak a part reaches at one precision, as a figure (the nominal datasheet value is an
/// assumption, not a measurement).
pub fn peak(precision: Precision) -> Figure {
    let tops = precision.hailo10h_peak_tops();
    Figure::modelled(
        tops,
        Unit::Tops,
        [Assumption::new(
            format!("Hailo-10H {precision} peak"),
            format!("{tops} TOPS"),
        )],
    )
}

/// Compute share of a graph against both peaks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComputeShare {
    /// The precision the HEF was compiled for: the share against this peak is the one that
    /// describes the run; the other is for comparison.
    pub hef_precision: Precision,
    /// Achieved ops per second, in TOPS.
    pub achieved: Figure,
    /// Achieved over the INT8 peak.
    pub of_int8_peak: Figure,
    /// Achieved over the INT4 peak.
    pub of_int4_peak: Figure,
}

impl ComputeShare {
    /// The share against the HEF's own precision.
    pub fn of_own_peak(&self) -> &Figure {
        match self.hef_precision {
            Precision::Int8 => &self.of_int8_peak,
            Precision::Int4 => &self.of_int4_peak,
        }
    }
}

/// Compute % = `gops_per_frame` x `fps` / peak, against both nominal peaks. The result is
/// measured only when both inputs are measured on the same device (the nominal peak is the
/// definition of the percentage, not an assumption about the run).
pub fn compute_share(
    gops_per_frame: &Figure,
    fps: &Figure,
    hef_precision: Precision,
) -> ComputeShare {
    let achieved_tops = gops_per_frame.value * fps.value / 1e3;
    let provenance = gops_per_frame.provenance.combine(&fps.provenance);
    let share = |p: Precision| Figure {
        value: achieved_tops / p.hailo10h_peak_tops(),
        unit: Unit::Fraction,
        provenance: provenance.clone(),
    };
    ComputeShare {
        hef_precision,
        achieved: Figure {
            value: achieved_tops,
            unit: Unit::Tops,
            provenance: provenance.clone(),
        },
        of_int8_peak: share(Precision::Int8),
        of_int4_peak: share(Precision::Int4),
    }
}

/// Busy share: time with work on the NN core over the wall time of the window.
pub fn busy_share(busy: Duration, window: Duration, provenance: Provenance) -> Option<Figure> {
    if window.is_zero() || busy > window {
        return None;
    }
    Some(Figure {
        value: busy.as_secs_f64() / window.as_secs_f64(),
        unit: Unit::Fraction,
        provenance,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vit_base_public_figure() {
        // Hailo's model zoo: vit_base 35.19 GOPS at 191 fps (batch 8) on the Hailo-10H is
        // 6.7 TOPS, 34% of the INT8 peak.
        let ops = Figure::modelled(35.19, Unit::Gops, []);
        let fps = Figure::measured(191.0, Unit::Fps, "zoo");
        let s = compute_share(&ops, &fps, Precision::Int8);
        assert!((s.achieved.value - 6.72).abs() < 0.01);
        assert!((s.of_own_peak().value - 0.336).abs() < 0.001);
        assert!((s.of_int4_peak.value - 0.168).abs() < 0.001);
        assert!(
            !s.of_int8_peak.provenance.is_measured(),
            "the peak is a datasheet value"
        );
    }

    #[test]
    fn busy_share_rejects_impossible_windows() {
        let p = Provenance::measured("dev0");
        let b = busy_share(
            Duration::from_millis(250),
            Duration::from_secs(1),
            p.clone(),
        )
        .unwrap();
        assert!((b.value - 0.25).abs() < 1e-12);
        assert!(busy_share(Duration::from_secs(2), Duration::from_secs(1), p.clone()).is_none());
        assert!(busy_share(Duration::ZERO, Duration::ZERO, p).is_none());
    }

    #[test]
    fn precision_parses() {
        assert_eq!("INT4".parse::<Precision>().unwrap(), Precision::Int4);
        assert!("fp16".parse::<Precision>().is_err());
    }
}

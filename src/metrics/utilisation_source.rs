//! Where the utilisation of the peak comes from: the one choice the planner, the simulator's
//! timing profile and the rig file share.
//!
//! | spelling | source | provenance |
//! |---|---|---|
//! | `assumed` (or a fraction, e.g. `0.4`) | the planning assumption, 0.30 unless given | modelled |
//! | `published` | the model zoo's Hailo-10H fps of the nearest ViT ([`super::published`]) | published |
//! | a path | a `bench` or `run` report ([`super::utilisation_report`]) | as the report labels it |
//!
//! [`UtilisationCurve`] is what a source resolves to: a share by batch, with its provenance.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::figure::{Assumption, Figure, Provenance, Unit};
use super::plan::{Utilisation, DEFAULT_UTILISATION};
use super::published::{PublishedError, PublishedRow, PublishedTable};
use super::utilisation_report::{load_any, ReportError};

/// Family of the published rows the RF-DETR backbone is matched to.
pub const BACKBONE_FAMILY: &str = "vit";
/// Embedding width of the RF-DETR keypoint backbone (DINOv2-small).
pub const BACKBONE_WIDTH: u32 = 384;

/// The utilisation source: `assumed`, `published` or a report file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum UtilisationSource {
    /// An assumed fraction of the peak (0.30 by default).
    Assumed(f64),
    /// The model zoo's published fps of the nearest ViT, by batch.
    Published,
    /// A `bench` report.json or a `run` report.
    Report(PathBuf),
}

impl Default for UtilisationSource {
    fn default() -> Self {
        Self::Assumed(DEFAULT_UTILISATION)
    }
}

/// What is wrong with a utilisation source, or with resolving it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// An assumed fraction outside (0, 1].
    #[error("utilisation {value}: expected a fraction in (0, 1], `assumed`, `published` or a report file")]
    BadFraction {
        /// The value given.
        value: f64,
    },
    /// The published table, or a question put to it.
    #[error(transparent)]
    Published(#[from] PublishedError),
    /// The report file.
    #[error(transparent)]
    Report(#[from] ReportError),
    /// A report with no graph to take a utilisation from.
    #[error("{file}: the report has no graph with a compute share")]
    EmptyReport {
        /// The report.
        file: String,
    },
}

impl UtilisationSource {
    /// The word a table column or report names it by: `assumed`, `published` or `report`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Assumed(_) => "assumed",
            Self::Published => "published",
            Self::Report(_) => "report",
        }
    }

    /// The curve the simulator charges compute with: the assumed fraction; the published
    /// curve of the ViT row nearest the backbone's width; or the lowest compute share in the
    /// report (the cautious choice when the report covers several graphs).
    ///
    /// # Errors
    /// [`SourceError`] when the fraction is out of range, the table does not load or the
    /// report is unreadable or empty.
    pub fn simulator_curve(&self) -> Result<UtilisationCurve, SourceError> {
        match self {
            Self::Assumed(u) => UtilisationCurve::assumed(*u),
            Self::Published => {
                let table = PublishedTable::embedded()?;
                let row = table.nearest(BACKBONE_FAMILY, BACKBONE_WIDTH, 0)?;
                Ok(UtilisationCurve::published(row))
            }
            Self::Report(path) => {
                let loaded = load_any(path)?;
                if loaded.report.graphs.is_empty() {
                    return Err(SourceError::EmptyReport {
                        file: path.display().to_string(),
                    });
                }
                let lowest = Utilisation::from_report(&loaded.report).default;
                let mut provenance = lowest.provenance.clone();
                if let Provenance::Modelled { assumed } = &mut provenance {
                    assumed.insert(
                        0,
                        Assumption::new("utilisation from", path.display().to_string()),
                    );
                }
                Ok(UtilisationCurve::constant(lowest.value, provenance))
            }
        }
    }
}

impl FromStr for UtilisationSource {
    type Err = SourceError;

    /// `assumed`, `published`, a fraction (an assumed value) or a report file's path.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "assumed" => Ok(Self::default()),
            "published" => Ok(Self::Published),
            t => match t.parse::<f64>() {
                Ok(value) if value > 0.0 && value <= 1.0 => Ok(Self::Assumed(value)),
                Ok(value) => Err(SourceError::BadFraction { value }),
                Err(_) => Ok(Self::Report(PathBuf::from(t))),
            },
        }
    }
}

impl TryFrom<String> for UtilisationSource {
    type Error = SourceError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<UtilisationSource> for String {
    fn from(s: UtilisationSource) -> Self {
        s.to_string()
    }
}

/// The spelling [`FromStr`] reads back: `assumed`, `0.4`, `published` or the path.
impl fmt::Display for UtilisationSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Assumed(u) if *u == DEFAULT_UTILISATION => f.write_str("assumed"),
            Self::Assumed(u) => write!(f, "{u}"),
            Self::Published => f.write_str("published"),
            Self::Report(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A share of the peak by batch: one value at every batch, or published points with the
/// share linear in batch between them.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UtilisationCurve {
    /// The same share at every batch.
    Constant {
        /// The share.
        share: Figure,
    },
    /// The share of a published row at its batches, linear in batch between them.
    Published {
        /// The row.
        row: PublishedRow,
    },
}

impl UtilisationCurve {
    /// The same `share` at every batch, with `provenance`.
    pub fn constant(share: f64, provenance: Provenance) -> Self {
        Self::Constant {
            share: Figure {
                value: share,
                unit: Unit::Fraction,
                provenance,
            },
        }
    }

    /// The assumed fraction `u`, labelled as an assumption.
    ///
    /// # Errors
    /// [`SourceError::BadFraction`] outside (0, 1].
    pub fn assumed(u: f64) -> Result<Self, SourceError> {
        if !(u > 0.0 && u <= 1.0) {
            return Err(SourceError::BadFraction { value: u });
        }
        let label = if u == DEFAULT_UTILISATION {
            "planning default"
        } else {
            "given"
        };
        Ok(Self::labelled(u, label))
    }

    /// [`DEFAULT_UTILISATION`], labelled as the planning default.
    pub fn planning_default() -> Self {
        Self::labelled(DEFAULT_UTILISATION, "planning default")
    }

    fn labelled(u: f64, label: &str) -> Self {
        Self::constant(
            u,
            Provenance::modelled([Assumption::new("utilisation", format!("{u:.2} ({label})"))]),
        )
    }

    /// The share of `row` at each batch it publishes, linear in batch between them.
    pub fn published(row: &PublishedRow) -> Self {
        Self::Published { row: row.clone() }
    }

    /// The share at `batch`.
    ///
    /// # Errors
    /// [`PublishedError::BatchOutside`] for a published curve and a batch beyond its
    /// published batches.
    pub fn at(&self, batch: u32) -> Result<Figure, PublishedError> {
        match self {
            Self::Constant { share } => Ok(share.clone()),
            Self::Published { row } => row.share(batch),
        }
    }
}

/// `30.0% (ASSUMED: ...)` or `published vit_small (...): 5.1% at batch 1 .. 18.4% at batch 8,
/// linear in batch between`.
impl fmt::Display for UtilisationCurve {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Published { row } => {
                write!(f, "published {}:", row.describe())?;
                for (i, p) in row.points.iter().enumerate() {
                    let sep = if i == 0 { " " } else { " .. " };
                    write!(
                        f,
                        "{sep}{:.1}% at batch {}",
                        100.0 * row.share_at_fps(p.fps),
                        p.batch
                    )?;
                }
                write!(f, ", linear in batch between ({})", row.citation())
            }
            Self::Constant { share } => write!(f, "{share}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_three_sources_in_one_place() {
        assert_eq!(
            "assumed".parse::<UtilisationSource>().unwrap(),
            UtilisationSource::Assumed(0.30)
        );
        assert_eq!(
            "0.4".parse::<UtilisationSource>().unwrap(),
            UtilisationSource::Assumed(0.4)
        );
        assert_eq!(
            "published".parse::<UtilisationSource>().unwrap(),
            UtilisationSource::Published
        );
        assert_eq!(
            "bench-out/report.json"
                .parse::<UtilisationSource>()
                .unwrap(),
            UtilisationSource::Report("bench-out/report.json".into())
        );
        let err = "1.5".parse::<UtilisationSource>().unwrap_err().to_string();
        assert!(err.contains("1.5") && err.contains("published"), "{err}");
        for s in ["assumed", "0.4", "published", "r.json"] {
            let parsed: UtilisationSource = s.parse().unwrap();
            assert_eq!(parsed.to_string(), s);
        }
    }

    #[test]
    fn simulator_curves_carry_their_provenance() {
        let assumed = UtilisationSource::default().simulator_curve().unwrap();
        assert_eq!(assumed.at(8).unwrap().value, 0.30);
        assert_eq!(assumed.at(8).unwrap().provenance.kind(), "modelled");
        let published = UtilisationSource::Published.simulator_curve().unwrap();
        let b1 = published.at(1).unwrap();
        let b8 = published.at(8).unwrap();
        assert_eq!(b1.provenance.kind(), "published");
        // vit_small: 8.62 GOPS x 119 fps and x 428 fps over 20 TOPS.
        assert!((b1.value - 8.62 * 119.0 / 20e3).abs() < 1e-12);
        assert!((b8.value - 8.62 * 428.0 / 20e3).abs() < 1e-12);
        assert!(published.at(9).is_err(), "no extrapolation past batch 8");
        assert!(published.to_string().contains("vit_small"), "{published}");
        let missing = UtilisationSource::Report("no/such/report.json".into()).simulator_curve();
        assert!(matches!(missing, Err(SourceError::Report(_))));
    }
}

//! Utilisation published for the Hailo-10H: device fps of Hailo's model zoo, as data.
//!
//! `data/published_utilisation.toml` holds one row per zoo network: its family, embedding
//! width, input side, ops per frame and device fps at batch 1 and 8 as the zoo states them,
//! with the file, Dataflow Compiler version and zoo commit they come from. A row's compute share
//! at a published batch is `gops x fps / 20 TOPS` (INT8 peak). Between published batches the
//! share is taken linear in batch; a batch outside them is an error
//! ([`PublishedError::BatchOutside`]), never an extrapolation.
//!
//! Loading checks each row's stated TOPS and share against its ops x fps, so a mistyped fps
//! or ops figure fails at load with the row named.

use serde::{Deserialize, Serialize};

use super::figure::{Figure, Provenance, Unit};
use super::utilisation::Precision;

/// The table compiled into the binary.
pub const EMBEDDED: &str = include_str!("../../data/published_utilisation.toml");
/// How the embedded table is named in errors and provenance.
pub const EMBEDDED_NAME: &str = "data/published_utilisation.toml";
/// The batches the zoo publishes fps for.
pub const PUBLISHED_BATCHES: [u32; 2] = [1, 8];

/// A stated TOPS figure is rounded to 0.1 TOPS.
const TOPS_ROUNDING: f64 = 0.05;
/// A stated share is rounded to whole percent.
const SHARE_ROUNDING: f64 = 0.005;
/// Room for the binary representation of the stated figures.
const EPSILON: f64 = 1e-9;

/// What is wrong with the published table, or with a question put to it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum PublishedError {
    /// The file is not TOML of the expected form.
    #[error("{file}: {reason}")]
    Parse {
        /// The table's name.
        file: String,
        /// What the parser says.
        reason: String,
    },
    /// A row lacks a field that says where it comes from.
    #[error("{file}: row {index} ({model}) has no `{field}`: every row names its source file, DFC version and zoo commit")]
    MissingSource {
        /// The table's name.
        file: String,
        /// Row index (0-based).
        index: usize,
        /// The row's model.
        model: String,
        /// The missing field.
        field: &'static str,
    },
    /// A figure that must be a positive number is not.
    #[error("{file}: row {model}: `{field}` = {value}, expected a positive number")]
    NotPositive {
        /// The table's name.
        file: String,
        /// The row's model.
        model: String,
        /// The field.
        field: &'static str,
        /// Its value.
        value: f64,
    },
    /// A stated TOPS or share does not follow from the row's ops x fps.
    #[error("{file}: row {model}: `{field}` = {stated} but gops x fps at batch {batch} gives {computed:.3}")]
    Mismatch {
        /// The table's name.
        file: String,
        /// The row's model.
        model: String,
        /// The batch.
        batch: u32,
        /// The stated field.
        field: &'static str,
        /// The value stated.
        stated: f64,
        /// The value ops x fps gives, in the stated field's unit.
        computed: f64,
    },
    /// The table has no row of the family asked for.
    #[error("{file}: no row of family `{family}`")]
    NoFamily {
        /// The table's name.
        file: String,
        /// The family.
        family: String,
    },
    /// A batch the published rows do not cover.
    #[error("batch {batch} lies outside the batches {lo}..={hi} published for {model}; the zoo's figures are not extrapolated")]
    BatchOutside {
        /// The batch asked for.
        batch: u32,
        /// The row.
        model: String,
        /// Lowest published batch.
        lo: u32,
        /// Highest published batch.
        hi: u32,
    },
}

/// One row as the file has it; the source fields are checked after parsing so that their
/// absence names the row.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRow {
    model: String,
    family: String,
    width: u32,
    input: u32,
    gops: f64,
    fps_batch1: f64,
    fps_batch8: f64,
    tops_batch1: f64,
    tops_batch8: f64,
    share_batch1: f64,
    share_batch8: f64,
    hef: String,
    source: Option<String>,
    dfc: Option<String>,
    commit: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTable {
    row: Vec<RawRow>,
}

/// Device fps at one published batch.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PublishedPoint {
    /// Batch size.
    pub batch: u32,
    /// Frames per second on the device.
    pub fps: f64,
}

/// One zoo network's published throughput on the Hailo-10H.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublishedRow {
    /// The zoo's network name, e.g. `vit_small`.
    pub model: String,
    /// Architecture family: `vit`, `vit_bn`, `deit`, `swin`, `davit`.
    pub family: String,
    /// Embedding width of the architecture (channels of the first stage for Swin and DaViT).
    pub width: u32,
    /// Input side in pixels.
    pub input: u32,
    /// Operations per frame as published, in G (ops = 2 x MAC).
    pub gops: f64,
    /// Fps at each published batch, ascending.
    pub points: Vec<PublishedPoint>,
    /// The compiled model the row links.
    pub hef: String,
    /// The zoo file the row comes from.
    pub source: String,
    /// Dataflow Compiler version the zoo compiled with.
    pub dfc: String,
    /// The zoo commit read.
    pub commit: String,
}

impl PublishedRow {
    /// Compute share of the INT8 peak at the published `fps`.
    pub fn share_at_fps(&self, fps: f64) -> f64 {
        self.gops * fps / 1e3 / Precision::Int8.hailo10h_peak_tops()
    }

    /// Fps at `batch`: a published point, or linear in batch between the two around it.
    ///
    /// # Errors
    /// [`PublishedError::BatchOutside`] for a batch beyond the published ones.
    pub fn fps_at(&self, batch: u32) -> Result<f64, PublishedError> {
        let (lo, hi) = (self.points[0], self.points[self.points.len() - 1]);
        if batch < lo.batch || batch > hi.batch {
            return Err(PublishedError::BatchOutside {
                batch,
                model: self.model.clone(),
                lo: lo.batch,
                hi: hi.batch,
            });
        }
        let upper = self
            .points
            .iter()
            .position(|p| p.batch >= batch)
            .unwrap_or(self.points.len() - 1);
        let b = self.points[upper];
        if b.batch == batch || upper == 0 {
            return Ok(b.fps);
        }
        let a = self.points[upper - 1];
        let t = f64::from(batch - a.batch) / f64::from(b.batch - a.batch);
        Ok(a.fps + t * (b.fps - a.fps))
    }

    /// The share of the INT8 peak at `batch`, as a published figure naming the row and how
    /// the batch was reached.
    ///
    /// # Errors
    /// [`PublishedError::BatchOutside`] for a batch beyond the published ones.
    pub fn share(&self, batch: u32) -> Result<Figure, PublishedError> {
        let fps = self.fps_at(batch)?;
        let how = if self.points.iter().any(|p| p.batch == batch) {
            format!("{fps} fps at batch {batch}")
        } else {
            let (lo, hi) = (self.points[0], self.points[self.points.len() - 1]);
            format!(
                "{fps:.1} fps at batch {batch}, linear in batch between {} fps at {} and {} at {}",
                lo.fps, lo.batch, hi.fps, hi.batch
            )
        };
        Ok(Figure {
            value: self.share_at_fps(fps),
            unit: Unit::Fraction,
            provenance: Provenance::published(format!(
                "{} x {how} of {} TOPS INT8 ({})",
                self.describe(),
                Precision::Int8.hailo10h_peak_tops(),
                self.citation()
            )),
        })
    }

    /// `vit_small (384 wide, 224 px, 8.62 GOPS)`.
    pub fn describe(&self) -> String {
        format!(
            "{} ({} wide, {} px, {} GOPS)",
            self.model, self.width, self.input, self.gops
        )
    }

    /// `hailo_model_zoo c83fc03 HAILO10H_classification.rst, DFC 5.2.0`.
    pub fn citation(&self) -> String {
        let file = self.source.rsplit('/').next().unwrap_or(&self.source);
        let commit = self.commit.get(..7).unwrap_or(&self.commit);
        format!("hailo_model_zoo {commit} {file}, DFC {}", self.dfc)
    }
}

/// The published table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublishedTable {
    /// Where it was read from.
    pub file: String,
    /// Its rows, in file order.
    pub rows: Vec<PublishedRow>,
}

impl PublishedTable {
    /// The table compiled into the binary.
    ///
    /// # Errors
    /// Any [`PublishedError`] of [`PublishedTable::parse`]; the tests keep the embedded table
    /// free of them.
    pub fn embedded() -> Result<Self, PublishedError> {
        Self::parse(EMBEDDED, EMBEDDED_NAME)
    }

    /// Parses and checks a table; `file` names it in errors.
    ///
    /// # Errors
    /// [`PublishedError::Parse`] for malformed TOML, [`PublishedError::MissingSource`] for a
    /// row without source, DFC or commit, [`PublishedError::NotPositive`] for a zero or
    /// negative figure, [`PublishedError::Mismatch`] when a stated TOPS or share does not
    /// follow from the row's ops x fps.
    pub fn parse(text: &str, file: &str) -> Result<Self, PublishedError> {
        let raw: RawTable = toml::from_str(text).map_err(|e| PublishedError::Parse {
            file: file.to_owned(),
            reason: e.to_string(),
        })?;
        let rows = raw
            .row
            .into_iter()
            .enumerate()
            .map(|(i, r)| check_row(file, i, r))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            file: file.to_owned(),
            rows,
        })
    }

    /// The row of `family` nearest to `width`, then to `input`; ties go to the narrower and
    /// smaller row.
    ///
    /// # Errors
    /// [`PublishedError::NoFamily`] when no row is of `family`.
    pub fn nearest(
        &self,
        family: &str,
        width: u32,
        input: u32,
    ) -> Result<&PublishedRow, PublishedError> {
        self.rows
            .iter()
            .filter(|r| r.family == family)
            .min_by_key(|r| (r.width.abs_diff(width), r.width, r.input.abs_diff(input)))
            .ok_or_else(|| PublishedError::NoFamily {
                file: self.file.clone(),
                family: family.to_owned(),
            })
    }
}

fn check_row(file: &str, index: usize, r: RawRow) -> Result<PublishedRow, PublishedError> {
    let missing = |field| PublishedError::MissingSource {
        file: file.to_owned(),
        index,
        model: r.model.clone(),
        field,
    };
    let source = r.source.clone().ok_or_else(|| missing("source"))?;
    let dfc = r.dfc.clone().ok_or_else(|| missing("dfc"))?;
    let commit = r.commit.clone().ok_or_else(|| missing("commit"))?;
    for (field, value) in [
        ("gops", r.gops),
        ("fps_batch1", r.fps_batch1),
        ("fps_batch8", r.fps_batch8),
    ] {
        if !(value.is_finite() && value > 0.0) {
            return Err(PublishedError::NotPositive {
                file: file.to_owned(),
                model: r.model.clone(),
                field,
                value,
            });
        }
    }
    let row = PublishedRow {
        points: vec![
            PublishedPoint {
                batch: PUBLISHED_BATCHES[0],
                fps: r.fps_batch1,
            },
            PublishedPoint {
                batch: PUBLISHED_BATCHES[1],
                fps: r.fps_batch8,
            },
        ],
        model: r.model,
        family: r.family,
        width: r.width,
        input: r.input,
        gops: r.gops,
        hef: r.hef,
        source,
        dfc,
        commit,
    };
    let stated = [
        (r.tops_batch1, r.share_batch1, "tops_batch1", "share_batch1"),
        (r.tops_batch8, r.share_batch8, "tops_batch8", "share_batch8"),
    ];
    for (point, (tops, share, tops_field, share_field)) in row.points.iter().zip(stated) {
        let computed_tops = row.gops * point.fps / 1e3;
        let computed_share = row.share_at_fps(point.fps);
        let mismatch = |field, stated, computed| PublishedError::Mismatch {
            file: file.to_owned(),
            model: row.model.clone(),
            batch: point.batch,
            field,
            stated,
            computed,
        };
        if (computed_tops - tops).abs() > TOPS_ROUNDING + EPSILON {
            return Err(mismatch(tops_field, tops, computed_tops));
        }
        if (computed_share - share / 100.0).abs() > SHARE_ROUNDING + EPSILON {
            return Err(mismatch(share_field, share, 100.0 * computed_share));
        }
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row<'a>(t: &'a PublishedTable, model: &str) -> &'a PublishedRow {
        t.rows.iter().find(|r| r.model == model).unwrap()
    }

    #[test]
    fn every_embedded_row_reproduces_its_tops_and_share() {
        // `parse` checks every row's stated TOPS and share against gops x fps.
        let t = PublishedTable::embedded().unwrap();
        assert!(t.rows.len() >= 10, "{}", t.rows.len());
        for r in &t.rows {
            assert!(
                r.source.starts_with("docs/public_models/HAILO10H/"),
                "{}",
                r.model
            );
            assert_eq!(r.dfc, "5.2.0", "{}", r.model);
            assert_eq!(r.commit.len(), 40, "{}", r.model);
        }
        // The shares the reference notes quote (peers-ecosystem.md, section 5).
        let pct = |m: &str, b: u32| (100.0 * row(&t, m).share(b).unwrap().value).round();
        assert_eq!(pct("vit_base", 1), 11.0);
        assert_eq!(pct("vit_base", 8), 34.0);
        assert_eq!(pct("vit_small", 8), 18.0);
        assert_eq!(pct("deit_base", 8), 23.0);
        assert!(pct("swin_tiny", 8) <= 5.0);
        let tops = row(&t, "vit_base").gops * row(&t, "vit_base").fps_at(8).unwrap() / 1e3;
        assert!((tops - 6.72).abs() < 0.01, "{tops}");
    }

    #[test]
    fn an_edited_fps_is_caught_naming_the_row() {
        let edited = EMBEDDED.replacen("fps_batch8 = 191", "fps_batch8 = 200", 1);
        assert_ne!(edited, EMBEDDED, "the vit_base row is in the table");
        let err = PublishedTable::parse(&edited, "edited.toml").unwrap_err();
        let PublishedError::Mismatch {
            model,
            batch,
            field,
            ..
        } = &err
        else {
            panic!("{err}")
        };
        assert_eq!(
            (model.as_str(), *batch, *field),
            ("vit_base", 8, "tops_batch8")
        );
        assert!(err.to_string().contains("edited.toml"), "{err}");
        // A share edited alone is caught too.
        let edited = EMBEDDED.replacen("share_batch8 = 34", "share_batch8 = 30", 1);
        let err = PublishedTable::parse(&edited, "t.toml").unwrap_err();
        assert!(
            matches!(
                err,
                PublishedError::Mismatch {
                    field: "share_batch8",
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn a_row_without_its_source_file_is_an_error_naming_it() {
        let text = EMBEDDED.replacen(
            "source = \"docs/public_models/HAILO10H/HAILO10H_classification.rst\"\n",
            "",
            1,
        );
        let err = PublishedTable::parse(&text, "t.toml").unwrap_err();
        assert_eq!(
            err,
            PublishedError::MissingSource {
                file: "t.toml".into(),
                index: 0,
                model: "vit_tiny".into(),
                field: "source",
            }
        );
        assert!(err.to_string().contains("vit_tiny"), "{err}");
    }

    #[test]
    fn batches_interpolate_linearly_and_never_extrapolate() {
        let t = PublishedTable::embedded().unwrap();
        let small = row(&t, "vit_small");
        assert_eq!(small.fps_at(1).unwrap(), 119.0);
        assert_eq!(small.fps_at(8).unwrap(), 428.0);
        // 119 + (428 - 119) x 3 / 7
        assert!((small.fps_at(4).unwrap() - 251.428_571).abs() < 1e-5);
        let f = small.share(4).unwrap();
        assert_eq!(f.provenance.kind(), "published");
        assert!(f.provenance.to_string().contains("linear in batch"), "{f}");
        for batch in [0, 9] {
            let err = small.fps_at(batch).unwrap_err();
            assert!(
                matches!(err, PublishedError::BatchOutside { lo: 1, hi: 8, .. }),
                "{err}"
            );
        }
    }

    #[test]
    fn nearest_row_by_family_then_width() {
        let t = PublishedTable::embedded().unwrap();
        assert_eq!(t.nearest("vit", 384, 288).unwrap().model, "vit_small");
        assert_eq!(t.nearest("vit", 700, 432).unwrap().model, "vit_base");
        // Half-way between 192 and 384: the narrower row.
        assert_eq!(t.nearest("vit", 288, 288).unwrap().model, "vit_tiny");
        assert_eq!(t.nearest("deit", 384, 224).unwrap().model, "deit_small");
        assert!(matches!(
            t.nearest("resnet", 384, 224),
            Err(PublishedError::NoFamily { .. })
        ));
    }
}

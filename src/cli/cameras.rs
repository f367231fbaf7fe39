//! `hailo-edge cameras`: the V4L2 capture devices, their formats, sizes and rates.

use std::process::ExitCode;

use clap::Args;

use hailo_edge::camera::v4l2::{self, suggest, DeviceSummary, Sizes};

#[derive(Debug, Args)]
pub struct CamerasArgs {
    /// Print JSON instead of text.
    #[arg(long, conflicts_with = "toml")]
    json: bool,
    /// Print ready `[[camera]]` entries for a rig file: a path under
    /// /dev/v4l that survives a reboot, and the fastest mode covering --side.
    #[arg(long)]
    toml: bool,
    /// With --toml: the side of the graph input the cameras feed, pixels.
    #[arg(long, default_value_t = 288, requires = "toml")]
    side: u32,
    /// With --toml: the highest rate to ask for.
    #[arg(long, default_value_t = 120.0, requires = "toml")]
    max_fps: f64,
    /// With --toml: the graph the entries feed.
    #[arg(long, default_value = "body", requires = "toml")]
    graph: String,
}

pub fn run(args: CamerasArgs) -> anyhow::Result<ExitCode> {
    let mut found = Vec::new();
    let mut failed = 0;
    for entry in v4l2::list_devices() {
        match entry {
            Ok(d) => found.push(d),
            Err(e) => {
                failed += 1;
                eprintln!("warning: {e}");
            }
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&found)?);
    } else if args.toml && !found.is_empty() {
        let stable = suggest::stable_paths(std::path::Path::new("/dev/v4l"));
        print!(
            "{}",
            suggest::rig_entries(&found, &stable, args.side, args.max_fps, &args.graph)
        );
    } else if found.is_empty() {
        println!(
            "no V4L2 capture devices found (looked at {} /dev/video* node(s){})",
            v4l2::device_nodes().len(),
            if failed > 0 {
                format!(", {failed} could not be opened")
            } else {
                String::new()
            }
        );
        println!(
            "without cameras, `hailo-edge run` runs the demo rig on synthetic cameras (`hailo-edge run --help`)"
        );
    } else {
        for d in &found {
            print_device(d);
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn print_device(d: &DeviceSummary) {
    use hailo_edge::output::printable;
    println!(
        "{}: {} (driver {}, bus {}){}",
        printable(&d.path.display().to_string()),
        printable(&d.caps.card),
        printable(&d.caps.driver),
        printable(&d.caps.bus),
        if d.caps.streaming {
            ""
        } else {
            " [no streaming I/O: unusable]"
        }
    );
    for f in &d.formats {
        let note = if f.supported { "" } else { "  (not handled)" };
        println!(
            "  {} {}{note}",
            printable(&f.fourcc.to_string()),
            printable(&f.description)
        );
        match &f.sizes {
            Sizes::Discrete(_) => {
                for ((w, h), rates) in &f.rates {
                    let rates: Vec<String> = rates
                        .iter()
                        .map(|r| {
                            format!("{r:.3}")
                                .trim_end_matches('0')
                                .trim_end_matches('.')
                                .to_string()
                        })
                        .collect();
                    println!("    {w}x{h} @ {} fps", rates.join(", "));
                }
            }
            Sizes::Stepwise { width, height } => println!(
                "    {}..{} step {} x {}..{} step {}",
                width[0], width[1], width[2], height[0], height[1], height[2]
            ),
        }
    }
}

//! `calibrate --frames RECORDING.mcap` and `calibrate --config RIG.toml`: the board's views
//! captured from a recording or from the rig's cameras, each camera's coverage on the status
//! line while the board is waved.

use std::time::Duration;

use anyhow::{bail, Context};
use indicatif::{ProgressBar, ProgressStyle};

use hailo_edge::calibrate::capture::{self, CameraTally, CaptureSettings};
use hailo_edge::calibrate::corners_file::{CameraEntry, Corners};
use hailo_edge::calibrate::AprilGrid;
use hailo_edge::camera::replay::{Pacing, Recording};
use hailo_edge::camera::source::Source;
use hailo_edge::camera::stop::Stop;
use hailo_edge::limits;
use hailo_edge::output::printable;
use hailo_edge::rig::RigConfig;

use super::CalibrateArgs;

/// Cameras opened for a capture, not yet read.
pub struct Capture {
    /// What the frames come from, for the report.
    pub what: String,
    /// The cameras' names, in the rig's order.
    pub names: Vec<String>,
    sources: Vec<Box<dyn Source>>,
    /// A recording ends by itself; live cameras run for the duration or until Ctrl-C.
    live: bool,
}

/// Opens the recording of `--frames`, or the cameras of `--config`.
pub fn open(args: &CalibrateArgs) -> anyhow::Result<Capture> {
    if let Some(path) = &args.frames {
        let recording = Recording::open(path)?;
        if let Some(cut) = recording.truncation() {
            eprintln!(
                "warning: {} is cut short ({}): read up to its last whole message",
                path.display(),
                printable(&cut.error)
            );
        }
        let sources: Vec<Box<dyn Source>> = recording
            .sources(Pacing::AsFastAsPossible)
            .into_iter()
            .map(|s| Box::new(s) as Box<dyn Source>)
            .collect();
        if sources.is_empty() {
            bail!("{}: no camera is recorded in it", path.display());
        }
        let names = sources.iter().map(|s| s.info().name.clone()).collect();
        return Ok(Capture {
            what: format!("recording {}", path.display()),
            names,
            sources,
            live: false,
        });
    }
    let Some(config) = &args.config else {
        bail!("give --corners FILE, --frames RECORDING.mcap, --config RIG.toml or --synthetic");
    };
    let rig = RigConfig::load(config)?;
    let sources = hailo_edge::rig::build::filming_sources(&rig, "calibration board")
        .with_context(|| format!("{}: its cameras", config.display()))?;
    Ok(Capture {
        what: format!("cameras of {}", config.display()),
        names: rig.cameras.iter().map(|c| c.name.clone()).collect(),
        sources,
        live: true,
    })
}

impl Capture {
    /// Reads the frames, the board's corners found in one frame per camera every `--every`
    /// seconds, each camera's coverage on a status line; then the still board at the anchor
    /// averaged. Live cameras stop at `--duration` or Ctrl-C.
    pub fn run(
        self,
        args: &CalibrateArgs,
        board: AprilGrid,
    ) -> anyhow::Result<(Corners, Vec<CameraTally>)> {
        let every = limits::duration("--every", args.every, MAX_CAPTURE)?;
        let duration = match args.duration {
            Some(d) => Some(limits::duration("--duration", d, MAX_CAPTURE)?),
            None if self.live => Some(Duration::from_secs(60)),
            None => None,
        };
        let settings = CaptureSettings {
            every,
            duration,
            ..CaptureSettings::default()
        };
        let stop = Stop::new();
        if self.live {
            let on_signal = stop.clone();
            ctrlc::set_handler(move || on_signal.request())
                .context("cannot take Ctrl-C to end the capture")?;
            println!(
                "capturing from {} for {:.0} s (Ctrl-C ends it): wave the board before each camera, then show it to several at once, then lay it on the floor",
                printable(&self.what),
                duration.map_or(0.0, |d| d.as_secs_f64())
            );
        }
        let sizes: Vec<(u32, u32)> = self
            .sources
            .iter()
            .map(|s| (s.info().width, s.info().height))
            .collect();
        // One line per camera under the terminal's other bars; hidden when stderr is not a
        // terminal.
        let style = ProgressStyle::with_template("{prefix:>12} {wide_msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner());
        let lines: Vec<ProgressBar> = self
            .names
            .iter()
            .map(|n| {
                let bar = hailo_edge::rig::status::terminal().add(ProgressBar::new_spinner());
                bar.set_style(style.clone());
                bar.set_prefix(printable(n).into_owned());
                bar.set_message("no view yet");
                bar
            })
            .collect();
        let captured = capture::capture(
            &board,
            &self.names,
            self.sources,
            &settings,
            &stop,
            &mut |coverage| {
                for (bar, c) in lines.iter().zip(coverage) {
                    bar.set_message(c.to_string());
                }
            },
        );
        for bar in &lines {
            bar.finish_and_clear();
        }
        let mut captured = captured?;
        for ((name, tally), c) in self
            .names
            .iter()
            .zip(&captured.tallies)
            .zip(&captured.coverage)
        {
            println!(
                "  {}: {} frames read, {} searched, {} with the board, {} bad, {} unreadable; {c}",
                printable(name),
                tally.frames,
                tally.examined,
                tally.views,
                tally.bad_frames,
                tally.unreadable,
            );
            if let Some(e) = &tally.last_error {
                eprintln!("warning: {}: {}", printable(name), printable(e));
            }
        }
        // The anchor itself is set from --anchor by the command, as for a corners file.
        if let Some(instant) = args.anchor {
            let folded = capture::average_still(&mut captured.views, instant, STILL_PX);
            println!(
                "anchor: instant {instant} ({:.2} s), the still board averaged over {} frame(s)",
                instant as f64 * every.as_secs_f64(),
                folded + 1
            );
        }
        let corners = Corners {
            board,
            cameras: self
                .names
                .iter()
                .zip(sizes)
                .map(|(name, (width, height))| CameraEntry {
                    name: name.clone(),
                    width,
                    height,
                })
                .collect(),
            anchor: None,
            views: captured.views,
        };
        Ok((corners, captured.tallies))
    }
}

/// How far a corner of a board lying still may wander between frames (pixels): the
/// detector's noise, well under a board's smallest movement.
const STILL_PX: f64 = 0.5;

/// The longest capture and the widest spacing of instants: a day.
const MAX_CAPTURE: Duration = Duration::from_secs(86_400);

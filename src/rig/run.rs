//! Starting the rig, running it, stopping it and draining every frame.
//!
//! ```text
//! capture thread x N --drop-oldest queue--> NPU stage (preprocess, batch, submit, switch)
//!   --completions--> decoder threads --views--> sync + fit --> JSON lines, recorder
//! ```
//!
//! Stopping: the capture threads stop first; the NPU stage then takes what is
//! left in the camera queues, flushes partial batches and waits for the device;
//! each later stage ends when its input closes. After the drain no frame is in
//! flight, so every camera's `captured = processed + dropped`.
//!
//! Stopping is bounded in time: every source wait ends on the run's
//! [`Stop`], so a stop is seen within a poll of the wait loop (100 ms), and
//! the drain has its own deadline ([`RunOptions::drain_timeout`]). A drain
//! that runs out of time is reported (the stages still running, and the
//! frames in flight), the recording is finished with what reached it, and
//! the report is written.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crate::body::fit::PoseFitter;
use crate::camera::record::Recorder;
use crate::camera::synthetic::SceneClock;
use crate::camera::{take, Source, SourceInfo, Stop};
use crate::decode::{Decoder, Pairing};
use crate::geom::Camera;
use crate::npu::sim::DeviceProfile;
use crate::npu::Device;
use crate::preprocess::Preprocessor;
use crate::publish::foxglove_ws::FoxgloveServer;
use crate::publish::zenoh::ZenohPublisher;
use crate::scene::{BodyRig, BodyScene};

use super::build;
use super::config::RigConfig;
use super::decoders::{self, DecoderChoice};
use super::inject::Faults;
use super::report::{Report, RunFacts};
use super::stage::decode::GraphDecode;
use super::stage::live::{LiveRig, LiveTap};
use super::stage::npu::Lane;
use super::stats::LiveStats;
use super::RunError;

mod drain;
mod outputs;
mod start;
mod wait;
use drain::drain;
use outputs::{open_foxglove, open_jsonl, open_recorder, open_zenoh, prepare_outputs};
use start::{start_stages, Channels, Stages, Started};
use wait::wait;

/// How to run a rig (what the rig file does not say).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Stop by itself after this long.
    pub duration: Option<Duration>,
    /// Requested to stop (Ctrl-C, SIGTERM, SIGHUP); the run then drains and
    /// reports.
    pub stop: Stop,
    /// How long the drain after the stop may take before the run reports
    /// what is still in flight and ends.
    pub drain_timeout: Duration,
    /// Replace existing output files (`--force`).
    pub overwrite: bool,
    /// Draw the live status line.
    pub status: bool,
    /// Frames each camera queue holds before it drops its oldest.
    pub queue_depth: usize,
    /// Replace the simulator's device profile (e.g. zero-time, for host-cost runs).
    pub profile: Option<DeviceProfile>,
    /// Route NPU completions past the decoder and the fit (pipeline-only runs).
    pub pipeline_only: bool,
    /// Extra time per view in the fit stage (a deliberately slow stage, for
    /// backpressure tests).
    pub fit_delay: Option<Duration>,
    /// Seed of the ground-truth keypoint noise.
    pub seed: u64,
    /// Live viewers' tap (`run --serve`): frames, results and status figures.
    pub live: Option<LiveTap>,
    /// The clock synthetic cameras and their scene run on (`--scene-clock`).
    pub scene_clock: SceneClock,
    /// Added to every wall-clock stamp Zenoh publishing puts (`--publish-skew-ms`): a box
    /// whose clock is off, for testing what receivers make of it.
    pub publish_skew_ns: i64,
    /// Faults to inject (the fault matrix's tests).
    pub faults: Faults,
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            duration: None,
            stop: Stop::new(),
            drain_timeout: Duration::from_secs(5),
            overwrite: false,
            status: false,
            queue_depth: 2,
            profile: None,
            pipeline_only: false,
            fit_delay: None,
            seed: 1,
            scene_clock: SceneClock::Start,
            publish_skew_ns: 0,
            live: None,
            faults: Faults::default(),
        }
    }
}

/// Runs `rig` until `options.duration` passes or `options.stop` is set, drains,
/// writes the outputs the rig asks for and returns the report.
///
/// # Errors
/// [`RunError`] naming the key, file, camera or device that failed.
pub fn run(rig: &RigConfig, origin: &str, options: &RunOptions) -> Result<Report, RunError> {
    let report_file = prepare_outputs(rig, options)?;
    let device = build::open_device(rig, options.profile.clone(), &options.faults.npu)?;
    let parts = build_parts(rig, options, &device)?;
    if let Some(tap) = &options.live {
        tap.set_rig(LiveRig::describe(
            rig,
            &device,
            &parts.body.naming,
            &parts.infos,
        ));
    }
    let infos = parts.infos.clone();
    let pairings: Vec<Pairing> = parts
        .decode_info
        .iter()
        .map(|d| d.pairing.clone())
        .collect();
    let choices = parts.choices.clone();
    let model = parts.model_name;
    let stature_m = parts.body.stature_m;
    let framing = parts.framing.clone();
    let foxglove = parts.foxglove.clone();
    let zenoh = parts.zenoh.clone();
    let stats = Arc::new(LiveStats::new(rig.cameras.len(), rig.graphs.len()));
    let channels = Channels::new(rig, options);
    let started = start_stages(rig, options, parts, channels, &stats)?;
    let waited = wait(rig, options, &device, &stats, &started);
    let drained = drain(rig, started.stages, options.drain_timeout);
    if let Some(s) = waited.status {
        s.finish();
    }
    let drained = drained?;
    let facts = RunFacts {
        origin: origin.to_owned(),
        rig,
        device: &device,
        infos: &infos,
        pairings: &pairings,
        decoders: &choices,
        camera_status: &drained.camera_status,
        stats: &stats,
        run_time: waited.elapsed,
        drain_time: drained
            .at
            .duration_since(started.at)
            .saturating_sub(waited.elapsed),
        process_cpu_ns: crate::geom::time::process_cpu_ns().saturating_sub(started.cpu_ns),
        rss_samples: waited.rss_samples,
        model,
        options,
        recorded: drained.recorded,
        foxglove: foxglove.map(|l| l.report()),
        zenoh: zenoh.map(|z| z.report()),
        stature_m,
        framing,
        drain: drained.drain,
        sink_failures: drained.failures,
    };
    let report = Report::build(&facts);
    if let Some(file) = report_file {
        file.commit(report.to_json().as_bytes())?;
    }
    Ok(report)
}

/// What a rig builds before anything runs.
struct Parts {
    lanes: Vec<Lane>,
    /// Per graph: the decoder ONNX that runs.
    choices: Vec<DecoderChoice>,
    decode_info: Vec<GraphDecode>,
    preprocessors: Vec<Preprocessor>,
    /// Per camera: the index of its graph.
    graph_of: Vec<usize>,
    /// Per decoder thread: one decoder per graph (none in pipeline-only runs).
    decoders: Vec<Vec<Box<dyn Decoder>>>,
    fitter: Option<PoseFitter>,
    body: Arc<BodyRig>,
    model_name: &'static str,
    sources: Vec<Box<dyn Source>>,
    infos: Vec<SourceInfo>,
    jsonl: Option<Box<dyn Write + Send>>,
    recorder: Option<Recorder>,
    /// Every camera's frame id and calibration, for the recording's `/tf`.
    placed: Vec<(String, Camera)>,
    /// The live Foxglove server, when asked for.
    foxglove: Option<Arc<FoxgloveServer>>,
    /// The Zenoh publisher, when asked for.
    zenoh: Option<Arc<ZenohPublisher>>,
    /// Per camera: millimetres per feature cell at the subject.
    framing: Option<Vec<crate::camera::calib::framing::Framing>>,
}

/// Builds the graphs, cameras, decoders, fitter and outputs `rig` names.
fn build_parts(rig: &RigConfig, options: &RunOptions, device: &Device) -> Result<Parts, RunError> {
    let choices = decoders::choose(rig)?;
    let graphs = build::graphs(rig, device, &choices)?;
    let graph_of: Vec<usize> = rig
        .cameras
        .iter()
        .map(|c| {
            rig.graphs
                .iter()
                .position(|g| g.name == c.graph)
                .unwrap_or(0)
        })
        .collect();
    let preprocessors = build::preprocessors(rig, &graphs, &graph_of)?;
    let calibrations = build::calibrations(rig)?;
    let (body, model_name) = build::body(rig)?;
    let mut decoders = Vec::new();
    if !options.pipeline_only {
        for _ in 0..rig.decoder.threads.max(1) {
            decoders.push(decoders::load(rig, &choices)?);
        }
    }
    let fitter = if options.pipeline_only {
        None
    } else {
        Some(build::fitter(&body, &calibrations)?)
    };
    let sources = camera_sources(rig, options, &calibrations, &body)?;
    let infos: Vec<_> = sources.iter().map(|s| s.info().clone()).collect();
    let jsonl = open_jsonl(rig, options.overwrite)?;
    let recorder = open_recorder(rig, &infos, &calibrations, options.overwrite)?;
    let placed: Vec<(String, Camera)> = infos
        .iter()
        .zip(&calibrations)
        .map(|(i, c)| (i.camera.to_string(), *c))
        .collect();
    let foxglove = open_foxglove(rig, &infos, &calibrations, &body.naming.keypoints)?;
    let zenoh = open_zenoh(rig, &calibrations, &body.naming, options.publish_skew_ns)?;
    let decode_info: Vec<_> = graphs.iter().map(|g| g.decode.clone()).collect();
    let sides: Vec<u32> = graph_of
        .iter()
        .map(|&g| decode_info.get(g).map_or(0, |d| d.input_size.0))
        .collect();
    let framing = build::framing(rig, &calibrations, &sides, body.stature_m);
    let lanes = lanes(rig, graphs)?;
    Ok(Parts {
        lanes,
        choices,
        decode_info,
        preprocessors,
        graph_of,
        decoders,
        fitter,
        body,
        model_name,
        sources,
        infos,
        jsonl,
        recorder,
        placed,
        foxglove,
        zenoh,
        framing,
    })
}

/// The rig's cameras as sources, faults injected where asked; on a virtual clock each ends
/// after `--duration` of its own frames.
fn camera_sources(
    rig: &RigConfig,
    options: &RunOptions,
    calibrations: &[Camera],
    body: &Arc<BodyRig>,
) -> Result<Vec<Box<dyn Source>>, RunError> {
    let scene = Arc::new(BodyScene::demo(Arc::clone(body), options.seed));
    let real_time = rig.device.clock.is_real_time();
    if options.scene_clock == SceneClock::Wall && !real_time {
        return Err(RunError::Option {
            flag: "--scene-clock wall",
            what: "paces the cameras in real time, and the rig's `device.clock` is not `realtime`"
                .into(),
        });
    }
    let sources = options.faults.wrap(build::sources(
        rig,
        calibrations,
        scene,
        real_time,
        options.scene_clock,
    )?);
    // On a virtual clock `--duration` counts the cameras' time: each camera ends after
    // that many of its frames, so a run is the same frames whatever the host's speed.
    let sources = match options.duration {
        Some(d) if !real_time => sources
            .into_iter()
            .map(|s| {
                let frames = (d.as_secs_f64() * s.info().fps).ceil().max(1.0) as u64;
                Box::new(take(s, frames)) as Box<dyn Source>
            })
            .collect(),
        _ => sources,
    };
    Ok(sources)
}

/// One NPU lane per graph: its batch, its scheduler timeout and a queue of two batches,
/// configured again by its setup when the graph breaks.
fn lanes(rig: &RigConfig, graphs: Vec<build::BuiltGraph>) -> Result<Vec<Lane>, RunError> {
    graphs
        .into_iter()
        .zip(&rig.graphs)
        .map(|(g, cfg)| {
            let batch = usize::from(rig.batch(cfg));
            Lane::new(
                g.cm,
                g.input,
                batch,
                (rig.timeout_ms(cfg) * 1e6) as u64,
                2 * batch,
            )
            .map(|lane| lane.recovering_with(g.setup))
            .map_err(|source| RunError::Npu { source })
        })
        .collect()
}

/// How long the recorder may take to finish its file once a drain that ran
/// out of time abandons it.
const RECORDER_GRACE: Duration = Duration::from_secs(2);

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
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use crate::body::fit::PoseFitter;
use crate::camera::record::{RecordError, Recorder};
use crate::camera::synthetic::SceneClock;
use crate::camera::{take, Source, SourceInfo, Stop};
use crate::decode::{Decoder, Pairing};
use crate::geom::time::{Clock, MonotonicClock};
use crate::geom::Camera;
use crate::npu::sim::DeviceProfile;
use crate::npu::{Device, NpuError};
use crate::preprocess::Preprocessor;
use crate::publish::foxglove_ws::FoxgloveServer;
use crate::publish::zenoh::ZenohPublisher;
use crate::scene::{BodyRig, BodyScene};

use super::build;
use super::config::{KeypointsFrom, RecordFrames, RigConfig, SwitchingConfig};
use super::decoders::{self, DecoderChoice};
use super::inject::Faults;
use super::report::{Report, RunFacts};
use super::stage::capture::{Backoff, CaptureThread, QueuePolicy};
use super::stage::decode::{DecodeWorker, GraphDecode};
use super::stage::fit::{Arrivals, FitStage, KeypointSource};
use super::stage::live::{LiveRig, LiveTap};
use super::stage::npu::{InstantSets, Lane, NpuStage, Switching};
use super::stage::record;
use super::stage::sinks::{Item, Recorded, Recording, SinkFailures, Sinks};
use super::stage::sync::SyncConfig;
use super::stage::{start, Running};
use super::stats::LiveStats;
use super::work::{DecodeWork, Returned, ViewResult};
use super::{CameraSetupError, RunError};

mod drain;
mod outputs;
mod wait;
use drain::drain;
use outputs::{open_foxglove, open_jsonl, open_recorder, open_zenoh, prepare_outputs};
use wait::wait;

/// How long no view of a camera may reach the sync, while others do, before
/// its groups go ahead without it. Views arrive skewed by their place in the
/// decoder queues and each camera's admitted frames can be several periods
/// apart, so this is well above any frame period; an unplugged camera holds
/// the fit up this long once.
const SILENT_CAMERA: Duration = Duration::from_secs(1);

/// The same on a virtual clock, in the cameras' time. The cameras wait for room there
/// rather than drop, so one graph's views can trail another's by every frame the queues
/// and decoders hold; only a camera that has ended falls this far behind.
const SILENT_CAMERA_VIRTUAL: Duration = Duration::from_secs(30);

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
    let scene = Arc::new(BodyScene::demo(Arc::clone(&body), options.seed));
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
        &calibrations,
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
    let lanes: Vec<Lane> = graphs
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
        .collect::<Result<_, _>>()?;
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

/// The bounded queues between the stages (the recycle queue is unbounded:
/// it carries at most the frames in flight).
struct Channels {
    /// Frames each camera queue holds before it drops its oldest.
    camera_depth: usize,
    /// Frames admitted past the camera queues and not yet decoded, at most.
    in_flight: usize,
    decode: Vec<(Sender<DecodeWork>, Receiver<DecodeWork>)>,
    views: (Sender<ViewResult>, Receiver<ViewResult>),
    recycle: (Sender<Returned>, Receiver<Returned>),
    record: (Sender<Item>, Receiver<Item>),
}

impl Channels {
    fn new(rig: &RigConfig, options: &RunOptions) -> Self {
        // Admission holds at most `in_flight` frames past the camera queues, so a
        // decoder queue of that size never blocks the NPU stage.
        let in_flight = rig.in_flight();
        Self {
            camera_depth: options.queue_depth.max(1),
            in_flight,
            decode: (0..rig.decoder.threads.max(1))
                .map(|_| bounded(in_flight))
                .collect(),
            views: bounded(16),
            recycle: unbounded(),
            record: bounded(match rig.output.record_frames {
                RecordFrames::Admitted => 64,
                // The cameras do not wait for the recorder: room for a quarter
                // second of four 120 fps cameras rides out a slow chunk write.
                RecordFrames::All => RECORD_EVERY_QUEUE,
            }),
        }
    }
}

/// The running stages, in the order the frame meets them.
struct Stages {
    captures: Vec<CaptureThread>,
    recording: Option<Running<Result<Recorded, RecordError>>>,
    npu: Running<Result<(), NpuError>>,
    decoders: Vec<Running<()>>,
    fit: Running<std::io::Result<()>>,
    /// Tells the recorder to finish with what reached it.
    abandon: Stop,
    failures: SinkFailures,
}

/// The stages, when they started and the process CPU time then.
struct Started {
    stages: Stages,
    at: Instant,
    cpu_ns: u64,
}

/// Starts the capture threads, then the recorder, the NPU stage, the decoder
/// pool and the fit.
fn start_stages(
    rig: &RigConfig,
    options: &RunOptions,
    parts: Parts,
    channels: Channels,
    stats: &Arc<LiveStats>,
) -> Result<Started, RunError> {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock);
    let thread = |source: std::io::Error| RunError::Spawn { source };
    // The recorder starts first: with every captured frame recorded, the cameras
    // feed it from their first frame.
    let (record_tx, record_rx) = channels.record;
    let abandon = Stop::new();
    let failures = SinkFailures::default();
    let not_recorded = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let recording = parts
        .recorder
        .map(|recorder| {
            start(Recording {
                recorder,
                items: record_rx,
                skeleton: parts.body.naming.clone(),
                cameras: parts.placed,
                which_frames: rig.output.record_frames,
                not_recorded: Arc::clone(&not_recorded),
                abandon: abandon.clone(),
                failures: failures.clone(),
            })
        })
        .transpose()
        .map_err(thread)?;
    let record_tx = recording.as_ref().map(|_| record_tx);
    let record_every = rig.output.record_frames == RecordFrames::All;
    let mut captures = Vec::new();
    let mut camera_rxs = Vec::new();
    for (i, source) in parts.sources.into_iter().enumerate() {
        let source: Box<dyn Source> = match (&record_tx, record_every) {
            (Some(tx), true) => Box::new(record::record_every(
                source,
                tx.clone(),
                Arc::clone(&not_recorded),
            )),
            _ => source,
        };
        let (tx, rx) = bounded(channels.camera_depth);
        // On a virtual clock the sources are not paced by real time: they wait for room
        // instead of dropping, so the cameras advance in step whatever the host's speed.
        let policy = if rig.device.clock.is_real_time() {
            QueuePolicy::DropOldest
        } else {
            QueuePolicy::Wait
        };
        let thread = CaptureThread::spawn_with(source, tx, rx.clone(), Backoff::default(), policy)
            .map_err(|e| RunError::Camera {
                camera: rig.cameras[i].name.clone(),
                source: CameraSetupError::CaptureThread(e),
            })?;
        captures.push(thread);
        camera_rxs.push(rx);
    }
    let at = Instant::now();
    let cpu_ns = crate::geom::time::process_cpu_ns();

    let (view_tx, view_rx) = channels.views;
    let (recycle_tx, recycle_rx) = channels.recycle;
    let (decode_txs, decode_rxs): (Vec<_>, Vec<_>) = channels.decode.into_iter().unzip();

    let mut npu = NpuStage::new(
        parts.lanes,
        parts.preprocessors,
        parts.graph_of,
        camera_rxs,
        decode_txs,
        recycle_rx,
        switching(rig),
        Arc::clone(stats),
        Arc::clone(&clock),
    );
    if !record_every {
        npu.record = record_tx.clone();
    }
    npu.foxglove = parts.foxglove.clone();
    npu.live = options.live.clone();
    npu.stop = Some(options.stop.clone());
    npu.set_in_flight_limit(channels.in_flight);
    // Cameras of one rate are taken instant by instant (see `NpuStage::take_sets`).
    let rates: Vec<f64> = rig.cameras.iter().map(|c| c.fps).collect();
    if rates.iter().all(|&r| (r - rates[0]).abs() < 1e-9) {
        let period_ns = (1e9 / rates[0]) as u64;
        npu.instant_sets = Some(if rig.device.clock.is_real_time() {
            InstantSets::real_time(period_ns)
        } else {
            InstantSets::virtual_time(period_ns)
        });
    }
    if options.pipeline_only {
        npu.bypass = Some(view_tx.clone());
    }
    let npu = start(npu).map_err(thread)?;
    let mut decoders = Vec::new();
    for (index, (worker_decoders, rx)) in parts.decoders.into_iter().zip(decode_rxs).enumerate() {
        let worker = DecodeWorker {
            index,
            nice: rig.decoder.nice,
            decoders: worker_decoders,
            graphs: parts.decode_info.clone(),
            input: rx,
            output: view_tx.clone(),
            recycle: recycle_tx.clone(),
            stats: Arc::clone(stats),
            clock: Arc::clone(&clock),
        };
        decoders.push(start(worker).map_err(thread)?);
    }
    drop(view_tx);
    drop(recycle_tx);
    let keypoints = match rig.body.keypoints {
        KeypointsFrom::GroundTruth => KeypointSource::GroundTruth {
            noise_px: rig.body.noise_px,
            seed: options.seed,
        },
        KeypointsFrom::Decoder => KeypointSource::Decoder,
    };
    let (arrivals, stall) = if rig.device.clock.is_real_time() {
        (Arrivals::Wall, SILENT_CAMERA)
    } else {
        (Arrivals::CaptureTime, SILENT_CAMERA_VIRTUAL)
    };
    let fit = FitStage {
        input: view_rx,
        cameras: rig.cameras.len(),
        fitter: parts.fitter,
        keypoints,
        keypoint_count: parts.body.rig.keypoints(),
        stats: Arc::clone(stats),
        clock,
        sinks: Sinks {
            jsonl: parts.jsonl,
            jsonl_path: rig.output.jsonl.clone().unwrap_or_default(),
            record: record_tx,
            foxglove: parts.foxglove,
            zenoh: parts.zenoh,
            failures: failures.clone(),
            live: options.live.clone(),
        },
        arrivals,
        sync: SyncConfig {
            stall_ns: Some(stall.as_nanos() as u64),
            ..SyncConfig::for_rates(&rig.cameras.iter().map(|c| c.fps).collect::<Vec<_>>())
        },
        bone_names: parts.body.rig.names().to_vec(),
        active: parts.body.active.clone(),
        stature_m: parts.body.stature_m,
        naming: parts.body.naming.clone(),
        delay: options.fit_delay,
    };
    let fit = start(fit).map_err(thread)?;
    Ok(Started {
        stages: Stages {
            captures,
            recording,
            npu,
            decoders,
            fit,
            abandon,
            failures,
        },
        at,
        cpu_ns,
    })
}

/// How the rig's graphs share the device.
fn switching(rig: &RigConfig) -> Switching {
    match rig.switching {
        SwitchingConfig::Scheduler => Switching::Scheduler,
        SwitchingConfig::Manual { frames_per_switch } => Switching::Manual {
            frames_per_switch: u64::from(frames_per_switch),
        },
    }
}

/// Frames queued for the recorder when it records every captured frame.
const RECORD_EVERY_QUEUE: usize = 128;

/// How long the recorder may take to finish its file once a drain that ran
/// out of time abandons it.
const RECORDER_GRACE: Duration = Duration::from_secs(2);

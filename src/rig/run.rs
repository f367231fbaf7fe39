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

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded};

use crate::camera::record::{RecordedCamera, Recorder};
use crate::npu::sim::{DeviceProfile, TimeBase};
use crate::rig::stage::capture::{Backoff, CaptureThread};
use crate::rig::stage::sync::SyncConfig;

use super::build;
use super::config::{KeypointsFrom, RigConfig, SwitchingConfig};
use super::report::{Report, RunFacts};
use super::stage::decode::DecodeWorker;
use super::stage::fit::{FitStage, KeypointSource};
use super::stage::npu::{Lane, NpuStage, Switching};
use super::stats::LiveStats;
use super::status::StatusLine;
use super::{CameraSetupError, RunError};
use crate::geom::time::{Clock, MonotonicClock};
use crate::scene::BodyScene;

/// How long no view of a camera may reach the sync, while others do, before
/// its groups go ahead without it. Views arrive skewed by their place in the
/// decoder queues and each camera's admitted frames can be several periods
/// apart, so this is well above any frame period; an unplugged camera holds
/// the fit up this long once.
const SILENT_CAMERA: Duration = Duration::from_secs(1);

/// How to run a rig (what the rig file does not say).
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Stop by itself after this long.
    pub duration: Option<Duration>,
    /// Set to stop (e.g. by Ctrl-C); the run then drains and reports.
    pub stop: Arc<AtomicBool>,
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
}

impl Default for RunOptions {
    fn default() -> Self {
        Self {
            duration: None,
            stop: Arc::new(AtomicBool::new(false)),
            status: false,
            queue_depth: 2,
            profile: None,
            pipeline_only: false,
            fit_delay: None,
            seed: 1,
        }
    }
}

/// Runs `rig` until `options.duration` passes or `options.stop` is set, drains,
/// writes the outputs the rig asks for and returns the report.
///
/// # Errors
/// [`RunError`] naming the key, file, camera or device that failed.
pub fn run(rig: &RigConfig, origin: &str, options: &RunOptions) -> Result<Report, RunError> {
    let clock: Arc<dyn Clock> = Arc::new(MonotonicClock);
    let device = build::open_device(rig, options.profile.clone())?;
    let graphs = build::graphs(rig, &device)?;
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
    let threads = rig.decoder.threads.max(1);
    let mut worker_decoders = Vec::new();
    if !options.pipeline_only {
        for _ in 0..threads {
            worker_decoders.push(build::decoders(rig)?);
        }
    }
    let fitter = if options.pipeline_only {
        None
    } else {
        Some(build::fitter(&body, &calibrations)?)
    };
    let scene = Arc::new(BodyScene::new(Arc::clone(&body), 6, 0.8, options.seed));
    let real_time = match rig.device.clock {
        TimeBase::RealTime => true,
        TimeBase::Virtual | TimeBase::Manual(_) => false,
    };
    let sources = build::sources(rig, &calibrations, scene, real_time)?;
    let infos: Vec<_> = sources.iter().map(|s| s.info().clone()).collect();

    let jsonl = match &rig.output.jsonl {
        Some(path) => Some(Box::new(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|source| RunError::Io {
                path: path.clone(),
                source,
            })?,
        )) as Box<dyn std::io::Write + Send>),
        None => None,
    };
    let recorder = match &rig.output.record {
        Some(path) => {
            let cams: Vec<RecordedCamera> = infos
                .iter()
                .zip(&calibrations)
                .map(|(info, c)| RecordedCamera {
                    info: info.clone(),
                    calibration: Some(*c),
                })
                .collect();
            Some(Recorder::create(path, &cams)?)
        }
        None => None,
    };

    let stats = Arc::new(LiveStats::new(rig.cameras.len(), rig.graphs.len()));
    let switching = match rig.switching {
        SwitchingConfig::Scheduler => Switching::Scheduler,
        SwitchingConfig::Manual { frames_per_switch } => Switching::Manual {
            frames_per_switch: u64::from(frames_per_switch),
        },
    };
    let depth = options.queue_depth.max(1);
    // Admission holds at most `in_flight` frames past the camera queues, so a
    // decoder queue of that size never blocks the NPU stage.
    let in_flight = rig.in_flight();
    let (decode_txs, decode_rxs): (Vec<_>, Vec<_>) =
        (0..threads).map(|_| bounded(in_flight)).unzip();
    let (view_tx, view_rx) = bounded(16);
    let (recycle_tx, recycle_rx) = unbounded();
    let (record_tx, record_rx) = bounded::<super::stage::sinks::Item>(64);
    let decode_info: Vec<_> = graphs.iter().map(|g| g.decode.clone()).collect();
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
        })
        .collect();

    // Capture threads.
    let mut captures = Vec::new();
    let mut camera_rxs = Vec::new();
    for (i, source) in sources.into_iter().enumerate() {
        let (tx, rx) = bounded(depth);
        let thread =
            CaptureThread::spawn(source, tx, rx.clone(), Backoff::default()).map_err(|e| {
                RunError::Camera {
                    camera: rig.cameras[i].name.clone(),
                    source: CameraSetupError::CaptureThread(e),
                }
            })?;
        captures.push(thread);
        camera_rxs.push(rx);
    }
    let started = Instant::now();
    let cpu_start = crate::geom::time::process_cpu_ns();

    // Recorder: frames from the NPU stage, results from the fit stage.
    let recording = recorder.map(|r| {
        std::thread::Builder::new()
            .name("recorder".into())
            .spawn(move || super::stage::sinks::run(r, record_rx))
    });
    let record_tx = recording.as_ref().map(|_| record_tx);

    let mut npu = NpuStage::new(
        lanes,
        preprocessors,
        graph_of.clone(),
        camera_rxs,
        decode_txs,
        recycle_rx,
        switching,
        Arc::clone(&stats),
        Arc::clone(&clock),
    );
    npu.record = record_tx.clone();
    npu.set_in_flight_limit(in_flight);
    // Cameras of one rate are taken instant by instant (see `NpuStage::take_sets`).
    let rates: Vec<f64> = rig.cameras.iter().map(|c| c.fps).collect();
    if rates.iter().all(|&r| (r - rates[0]).abs() < 1e-9) {
        npu.instant_sets = Some((1e9 / rates[0]) as u64);
    }
    if options.pipeline_only {
        npu.bypass = Some(view_tx.clone());
    }
    let npu_thread = std::thread::Builder::new()
        .name("npu-stage".into())
        .spawn(move || npu.run())
        .map_err(|source| RunError::Spawn {
            thread: "NPU stage",
            source,
        })?;
    let mut workers = Vec::new();
    for (index, (decoders, rx)) in worker_decoders.into_iter().zip(decode_rxs).enumerate() {
        let worker = DecodeWorker {
            index,
            nice: rig.decoder.nice,
            decoders,
            graphs: decode_info.clone(),
            input: rx,
            output: view_tx.clone(),
            recycle: recycle_tx.clone(),
            stats: Arc::clone(&stats),
            clock: Arc::clone(&clock),
        };
        workers.push(
            std::thread::Builder::new()
                .name("decoder".into())
                .spawn(move || worker.run())
                .map_err(|source| RunError::Spawn {
                    thread: "decoder",
                    source,
                })?,
        );
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
    let fit = FitStage {
        input: view_rx,
        cameras: rig.cameras.len(),
        fitter,
        keypoints,
        keypoint_count: body.rig.keypoints(),
        stats: Arc::clone(&stats),
        clock: Arc::clone(&clock),
        jsonl,
        record: record_tx,
        sync: SyncConfig {
            stall_ns: Some(SILENT_CAMERA.as_nanos() as u64),
            ..SyncConfig::for_rates(&rig.cameras.iter().map(|c| c.fps).collect::<Vec<_>>())
        },
        bone_names: body.rig.names().to_vec(),
        active: body.active.clone(),
        delay: options.fit_delay,
    };
    let fit_thread = std::thread::Builder::new()
        .name("fit".into())
        .spawn(move || fit.run())
        .map_err(|source| RunError::Spawn {
            thread: "fit",
            source,
        })?;

    // Run until told or timed out, drawing the status line.
    let mut status = options.status.then(|| StatusLine::new(rig, &device));
    let mut rss_samples = Vec::new();
    loop {
        let elapsed = started.elapsed();
        if options.stop.load(Ordering::Relaxed) || options.duration.is_some_and(|d| elapsed >= d) {
            break;
        }
        if captures.iter().all(CaptureThread::is_finished) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        rss_samples.push((started.elapsed().as_secs_f64(), super::report::rss_bytes()));
        if let Some(s) = &mut status {
            s.update(&stats, &captures, &device, started.elapsed());
        }
    }
    let run_time = started.elapsed();
    // Stop the cameras first, then let every later stage drain.
    let camera_status: Vec<_> = captures
        .into_iter()
        .map(|c| {
            let status = Arc::clone(&c.status);
            c.stop();
            status
        })
        .collect();
    let npu_result = npu_thread.join().map_err(|_| RunError::Panicked {
        thread: "NPU stage",
    })?;
    for w in workers {
        w.join()
            .map_err(|_| RunError::Panicked { thread: "decoder" })?;
    }
    let fit_result = fit_thread
        .join()
        .map_err(|_| RunError::Panicked { thread: "fit" })?;
    let recorded = match recording {
        Some(h) => Some(
            h.map_err(|source| RunError::Spawn {
                thread: "recorder",
                source,
            })?
            .join()
            .map_err(|_| RunError::Panicked { thread: "recorder" })??,
        ),
        None => None,
    };
    let drained = started.elapsed();
    if let Some(s) = status {
        s.finish();
    }
    npu_result.map_err(|source| RunError::Npu { source })?;
    fit_result.map_err(|source| RunError::Io {
        path: rig
            .output
            .jsonl
            .clone()
            .unwrap_or_else(|| PathBuf::from("-")),
        source,
    })?;
    let facts = RunFacts {
        origin: origin.to_owned(),
        rig,
        device: &device,
        infos: &infos,
        camera_status: &camera_status,
        stats: &stats,
        run_time,
        drain_time: drained.saturating_sub(run_time),
        process_cpu_ns: crate::geom::time::process_cpu_ns().saturating_sub(cpu_start),
        rss_samples,
        model: model_name,
        options,
        recorded,
    };
    let report = Report::build(&facts);
    if let Some(path) = &rig.output.report {
        std::fs::write(path, report.to_json()).map_err(|source| RunError::Io {
            path: path.clone(),
            source,
        })?;
    }
    Ok(report)
}

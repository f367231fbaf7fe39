//! Starting the stages, one function a stage, in the order the frame meets
//! them: the recorder (so that a rig recording every captured frame has it
//! from the cameras' first frame), the capture threads, the NPU stage, the
//! decoder pool and the fit.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossbeam_channel::{bounded, unbounded, Receiver, Sender};

use crate::body::fit::PoseFitter;
use crate::camera::record::{RecordError, Recorder};
use crate::camera::{Frame, Source, Stop};
use crate::decode::Decoder;
use crate::geom::time::{Clock, MonotonicClock};
use crate::geom::Camera;
use crate::npu::NpuError;
use crate::publish::foxglove_ws::FoxgloveServer;
use crate::scene::BodyRig;

use super::super::config::{KeypointsFrom, RecordFrames, RigConfig, SwitchingConfig};
use super::super::stage::capture::{Backoff, CaptureThread, QueuePolicy};
use super::super::stage::decode::{DecodeWorker, GraphDecode};
use super::super::stage::fit::{Arrivals, FitStage, KeypointSource};
use super::super::stage::npu::{InstantSets, NpuStage, Switching};
use super::super::stage::record;
use super::super::stage::sinks::{Item, Recorded, Recording, SinkFailures, Sinks};
use super::super::stage::sync::SyncConfig;
use super::super::stage::{start, Running};
use super::super::stats::LiveStats;
use super::super::work::{DecodeWork, Returned, ViewResult};
use super::super::{CameraSetupError, RunError};
use super::{Parts, RunOptions};

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

/// Frames queued for the recorder when it records every captured frame.
const RECORD_EVERY_QUEUE: usize = 128;

/// The bounded queues between the stages (the recycle queue is unbounded:
/// it carries at most the frames in flight).
pub(super) struct Channels {
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
    pub(super) fn new(rig: &RigConfig, options: &RunOptions) -> Self {
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
pub(super) struct Stages {
    pub(super) captures: Vec<CaptureThread>,
    pub(super) recording: Option<Running<Result<Recorded, RecordError>>>,
    pub(super) npu: Running<Result<(), NpuError>>,
    pub(super) decoders: Vec<Running<()>>,
    pub(super) fit: Running<std::io::Result<()>>,
    /// Tells the recorder to finish with what reached it.
    pub(super) abandon: Stop,
    pub(super) failures: SinkFailures,
}

/// The stages, when they started and the process CPU time then.
pub(super) struct Started {
    pub(super) stages: Stages,
    pub(super) at: Instant,
    pub(super) cpu_ns: u64,
}

/// Starts every stage of `rig` from its built `parts`, joined by `channels`.
pub(super) fn start_stages(
    rig: &RigConfig,
    options: &RunOptions,
    parts: Parts,
    channels: Channels,
    stats: &Arc<LiveStats>,
) -> Result<Started, RunError> {
    let starter = Starter {
        rig,
        options,
        stats,
        clock: Arc::new(MonotonicClock),
        not_recorded: Arc::default(),
        abandon: Stop::new(),
        failures: SinkFailures::default(),
    };
    let (record_tx, record_rx) = channels.record;
    let recording = parts
        .recorder
        .map(|recorder| starter.recording(recorder, record_rx, parts.placed, &parts.body))
        .transpose()?;
    let record_tx = recording.as_ref().map(|_| record_tx);
    let every_frame = rig.output.record_frames == RecordFrames::All;
    let (captures, camera_rxs) = starter.captures(
        parts.sources,
        channels.camera_depth,
        record_tx.as_ref().filter(|_| every_frame),
    )?;
    let at = Instant::now();
    let cpu_ns = crate::geom::time::process_cpu_ns();

    let (view_tx, view_rx) = channels.views;
    let (recycle_tx, recycle_rx) = channels.recycle;
    let (decode_txs, decode_rxs): (Vec<_>, Vec<_>) = channels.decode.into_iter().unzip();
    let npu = NpuStage::new(
        parts.lanes,
        parts.preprocessors,
        parts.graph_of,
        camera_rxs,
        decode_txs,
        recycle_rx,
        switching(rig),
        Arc::clone(stats),
        Arc::clone(&starter.clock),
    );
    let npu = starter.npu(
        npu,
        record_tx.clone().filter(|_| !every_frame),
        parts.foxglove.clone(),
        options.pipeline_only.then(|| view_tx.clone()),
        channels.in_flight,
    )?;
    let decoders = starter.decoders(
        parts.decoders,
        &parts.decode_info,
        decode_rxs,
        &view_tx,
        &recycle_tx,
    )?;
    drop(view_tx);
    drop(recycle_tx);
    let sinks = Sinks {
        jsonl: parts.jsonl,
        jsonl_path: rig.output.jsonl.clone().unwrap_or_default(),
        record: record_tx,
        foxglove: parts.foxglove,
        zenoh: parts.zenoh,
        failures: starter.failures.clone(),
        live: options.live.clone(),
    };
    let fit = starter.fit(view_rx, parts.fitter, &parts.body, sinks)?;
    Ok(Started {
        stages: Stages {
            captures,
            recording,
            npu,
            decoders,
            fit,
            abandon: starter.abandon,
            failures: starter.failures,
        },
        at,
        cpu_ns,
    })
}

/// What every stage's start shares.
struct Starter<'a> {
    rig: &'a RigConfig,
    options: &'a RunOptions,
    stats: &'a Arc<LiveStats>,
    /// What the stages stamp their figures with.
    clock: Arc<dyn Clock>,
    /// Captured frames the recorder had no room for, when it records every one.
    not_recorded: Arc<AtomicU64>,
    /// Tells the recorder to finish with what reached it.
    abandon: Stop,
    /// Where a failed output is recorded.
    failures: SinkFailures,
}

impl Starter<'_> {
    /// Every camera's frame rate, in the rig's order.
    fn rates(&self) -> Vec<f64> {
        self.rig.cameras.iter().map(|c| c.fps).collect()
    }

    /// The recorder, writing what reaches `items`.
    fn recording(
        &self,
        recorder: Recorder,
        items: Receiver<Item>,
        cameras: Vec<(String, Camera)>,
        body: &BodyRig,
    ) -> Result<Running<Result<Recorded, RecordError>>, RunError> {
        start(Recording {
            recorder,
            items,
            skeleton: body.naming.clone(),
            cameras,
            which_frames: self.rig.output.record_frames,
            not_recorded: Arc::clone(&self.not_recorded),
            abandon: self.abandon.clone(),
            failures: self.failures.clone(),
        })
        .map_err(spawn)
    }

    /// One capture thread a camera, each with its queue; every captured frame
    /// also goes to `record_every` when it is given.
    fn captures(
        &self,
        sources: Vec<Box<dyn Source>>,
        depth: usize,
        record_every: Option<&Sender<Item>>,
    ) -> Result<(Vec<CaptureThread>, Vec<Receiver<Frame>>), RunError> {
        // On a virtual clock the sources are not paced by real time: they wait for room
        // instead of dropping, so the cameras advance in step whatever the host's speed.
        let policy = if self.rig.device.clock.is_real_time() {
            QueuePolicy::DropOldest
        } else {
            QueuePolicy::Wait
        };
        let mut captures = Vec::new();
        let mut queues = Vec::new();
        for (source, camera) in sources.into_iter().zip(&self.rig.cameras) {
            let source: Box<dyn Source> = match record_every {
                Some(tx) => Box::new(record::record_every(
                    source,
                    tx.clone(),
                    Arc::clone(&self.not_recorded),
                )),
                None => source,
            };
            let (tx, rx) = bounded(depth);
            let thread =
                CaptureThread::spawn_with(source, tx, rx.clone(), Backoff::default(), policy)
                    .map_err(|e| RunError::Camera {
                        camera: camera.name.clone(),
                        source: CameraSetupError::CaptureThread(e),
                    })?;
            captures.push(thread);
            queues.push(rx);
        }
        Ok((captures, queues))
    }

    /// The NPU stage, wired to its outlets besides the decoders (the recorder
    /// when it records what is admitted, the live server, the views past the
    /// decoders in pipeline-only runs), held to `in_flight` frames, told how to
    /// take the cameras' frames and when to stop.
    fn npu(
        &self,
        mut npu: NpuStage,
        record: Option<Sender<Item>>,
        foxglove: Option<Arc<FoxgloveServer>>,
        bypass: Option<Sender<ViewResult>>,
        in_flight: usize,
    ) -> Result<Running<Result<(), NpuError>>, RunError> {
        npu.record = record;
        npu.foxglove = foxglove;
        npu.bypass = bypass;
        npu.set_in_flight_limit(in_flight);
        npu.live = self.options.live.clone();
        npu.stop = Some(self.options.stop.clone());
        // Cameras of one rate are taken instant by instant (see `NpuStage::take_sets`).
        let rates = self.rates();
        if rates.iter().all(|&r| (r - rates[0]).abs() < 1e-9) {
            let period_ns = (1e9 / rates[0]) as u64;
            npu.instant_sets = Some(if self.rig.device.clock.is_real_time() {
                InstantSets::real_time(period_ns)
            } else {
                InstantSets::virtual_time(period_ns)
            });
        }
        start(npu).map_err(spawn)
    }

    /// One decoder thread per set of `decoders`, each reading its own queue.
    fn decoders(
        &self,
        decoders: Vec<Vec<Box<dyn Decoder>>>,
        graphs: &[GraphDecode],
        inputs: Vec<Receiver<DecodeWork>>,
        views: &Sender<ViewResult>,
        recycle: &Sender<Returned>,
    ) -> Result<Vec<Running<()>>, RunError> {
        decoders
            .into_iter()
            .zip(inputs)
            .enumerate()
            .map(|(index, (decoders, input))| {
                start(DecodeWorker {
                    index,
                    nice: self.rig.decoder.nice,
                    decoders,
                    graphs: graphs.to_vec(),
                    input,
                    output: views.clone(),
                    recycle: recycle.clone(),
                    stats: Arc::clone(self.stats),
                    clock: Arc::clone(&self.clock),
                })
                .map_err(spawn)
            })
            .collect()
    }

    /// The sync and the fit, reading the decoders' views and writing `sinks`.
    fn fit(
        &self,
        input: Receiver<ViewResult>,
        fitter: Option<PoseFitter>,
        body: &BodyRig,
        sinks: Sinks,
    ) -> Result<Running<std::io::Result<()>>, RunError> {
        let rig = self.rig;
        let keypoints = match rig.body.keypoints {
            KeypointsFrom::GroundTruth => KeypointSource::GroundTruth {
                noise_px: rig.body.noise_px,
                seed: self.options.seed,
            },
            KeypointsFrom::Decoder => KeypointSource::Decoder,
        };
        let (arrivals, stall) = if rig.device.clock.is_real_time() {
            (Arrivals::Wall, SILENT_CAMERA)
        } else {
            (Arrivals::CaptureTime, SILENT_CAMERA_VIRTUAL)
        };
        let rates = self.rates();
        start(FitStage {
            input,
            cameras: rig.cameras.len(),
            fitter,
            keypoints,
            keypoint_count: body.rig.keypoints(),
            stats: Arc::clone(self.stats),
            clock: Arc::clone(&self.clock),
            sinks,
            arrivals,
            sync: SyncConfig {
                stall_ns: Some(stall.as_nanos() as u64),
                ..SyncConfig::for_rates(&rates)
            },
            bone_names: body.rig.names().to_vec(),
            active: body.active.clone(),
            stature_m: body.stature_m,
            naming: body.naming.clone(),
            delay: self.options.fit_delay,
        })
        .map_err(spawn)
    }
}

/// A stage's thread that did not start.
fn spawn(source: std::io::Error) -> RunError {
    RunError::Spawn { source }
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

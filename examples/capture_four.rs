//! Four cameras at mixed resolutions: capture, preprocess into HEF inputs
//! (288 for the body cameras, 432 for the face camera), group by capture
//! time and record everything to MCAP; then print per-camera fps, drops,
//! errors and sync statistics.
//!
//! ```sh
//! cargo run --release --example capture_four                      # synthetic ANNY rig
//! cargo run --release --example capture_four -- --scene markers --faults
//! cargo run --release --example capture_four -- /dev/video0:1280x720@30:yuyv /dev/video2:640x480@60:mjpeg
//! ```
//! Options: `--seconds N` (default 3), `--out FILE.mcap` (default a temporary file),
//! `--scene anny|markers`, `--faults` (unplug and corrupt frames on camera 1).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hailo_edge::body::Model;
use hailo_edge::camera::fault::{CameraFault, FaultySource};
use hailo_edge::camera::record::{RecordedCamera, Recorder};
use hailo_edge::camera::synthetic::{mixed_rig, SyntheticSource};
use hailo_edge::camera::v4l2::{V4l2Config, V4l2Source};
use hailo_edge::camera::{CameraId, Frame, PixelFormat, Source};
use hailo_edge::preprocess::{InputSpec, PreprocessConfig, Preprocessor};
use hailo_edge::rig::stage::capture::{Backoff, CaptureThread, StatusSnapshot};
use hailo_edge::rig::stage::sync::{SyncConfig, Synchronizer};
use hailo_edge::scene::{BodyRig, BodyScene, MarkerScene, Scene};

/// Four cameras captured, preprocessed, grouped by capture time and recorded to MCAP.
#[derive(clap::Parser)]
struct Options {
    /// Seconds to capture.
    #[arg(long, default_value_t = 3.0, value_parser = seconds)]
    seconds: f64,
    /// The MCAP recording to write (default: a temporary file, removed at the end).
    #[arg(long)]
    out: Option<PathBuf>,
    /// The synthetic scene.
    #[arg(long, value_enum, default_value_t = SceneKind::Anny)]
    scene: SceneKind,
    /// Unplug and corrupt frames on camera 1 (synthetic rig only).
    #[arg(long)]
    faults: bool,
    /// V4L2 cameras as /dev/videoN[:WxH[@FPS[:FORMAT]]]; none captures the synthetic rig.
    devices: Vec<String>,
}

/// The synthetic scene the cameras see.
#[derive(Clone, Copy, clap::ValueEnum)]
enum SceneKind {
    /// The ANNY body moving.
    Anny,
    /// Coloured markers.
    Markers,
}

impl SceneKind {
    fn name(self) -> &'static str {
        match self {
            Self::Anny => "anny",
            Self::Markers => "markers",
        }
    }
}

fn seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s > 0.0 && s <= 3600.0 => Ok(s),
        _ => Err(format!("expected seconds in (0, 3600], got {text}")),
    }
}

/// `/dev/videoN[:WxH[@FPS[:FORMAT]]]`.
fn v4l2_config(spec: &str, camera: u32) -> anyhow::Result<V4l2Config> {
    let mut parts = spec.splitn(3, ':');
    let path = PathBuf::from(parts.next().unwrap_or_default());
    let (mut width, mut height, mut fps, mut format) = (1280, 720, 30.0, PixelFormat::Yuyv);
    if let Some(size) = parts.next() {
        let (wh, rate) = size.split_once('@').unwrap_or((size, "30"));
        let (w, h) = wh
            .split_once('x')
            .ok_or_else(|| anyhow::anyhow!("{spec}: size must be WxH"))?;
        (width, height, fps) = (w.parse()?, h.parse()?, rate.parse()?);
    }
    if let Some(f) = parts.next() {
        format = PixelFormat::from_name(f)
            .ok_or_else(|| anyhow::anyhow!("{spec}: unknown format {f}"))?;
    }
    Ok(V4l2Config {
        path,
        camera: CameraId(camera),
        format,
        width,
        height,
        fps,
        buffers: 4,
        timeout: Duration::from_secs(1),
        controls: Default::default(),
    })
}

fn main() -> anyhow::Result<()> {
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let o = <Options as clap::Parser>::parse();
    let Cameras { sources, recorded } = if o.devices.is_empty() {
        let cameras = synthetic_cameras(&o)?;
        println!(
            "synthetic rig, scene {}: {} cameras",
            o.scene.name(),
            cameras.sources.len()
        );
        cameras
    } else {
        v4l2_cameras(&o.devices)?
    };
    for s in &sources {
        let i = s.info();
        println!(
            "  {}: {} {}x{} {} @ {} fps",
            i.camera, i.name, i.width, i.height, i.format, i.fps
        );
    }

    let tmp = tempfile::tempdir()?;
    let out = o
        .out
        .clone()
        .unwrap_or_else(|| tmp.path().join("capture_four.mcap"));
    let mut recorder = Recorder::create(&out, &recorded)?;
    let mut sync = Synchronizer::new(&SyncConfig::for_rates(
        &recorded.iter().map(|c| c.info.fps).collect::<Vec<_>>(),
    ));
    let tally = capture(&o, sources, &recorded, &mut recorder, &mut sync)?;
    sync.finish();
    let written = recorder.finish()?;

    print_cameras(&tally, &sync);
    if o.devices.is_empty() {
        println!(
            "(synthetic cameras render on this machine's CPU: drv-drp counts frames skipped because \
             rendering fell behind real time, q-drop frames this loop could not take in time)"
        );
    }
    println!(
        "recorded {written} frames to {} ({:.1} MB)",
        out.display(),
        std::fs::metadata(&out)?.len() as f64 / 1e6
    );
    if o.out.is_none() {
        println!("(temporary file removed; pass --out FILE.mcap to keep it)");
    }
    Ok(())
}

/// The cameras captured, and what the recording says of each.
struct Cameras {
    sources: Vec<Box<dyn Source>>,
    recorded: Vec<RecordedCamera>,
}

/// The mixed synthetic rig seeing `o.scene`, camera 1 made faulty with `o.faults`.
fn synthetic_cameras(o: &Options) -> anyhow::Result<Cameras> {
    let scene: Arc<dyn Scene> = match o.scene {
        SceneKind::Anny => {
            let model = Model::embedded()?;
            let body = Arc::new(BodyRig::anny(model, true)?);
            Arc::new(BodyScene::new(body, 6, 0.8, 7).with_mesh(model))
        }
        SceneKind::Markers => Arc::new(MarkerScene::default()),
    };
    let rig = mixed_rig()?;
    let mut sources: Vec<Box<dyn Source>> = Vec::new();
    let mut recorded = Vec::new();
    for (cam, src) in rig.iter().zip(SyntheticSource::rig(scene, &rig, true)?) {
        recorded.push(RecordedCamera {
            info: src.info().clone(),
            calibration: Some(cam.calibration),
        });
        if o.faults && cam.camera == CameraId(1) {
            let faults = vec![
                CameraFault::WrongSize { at: 5 },
                CameraFault::CorruptJpeg { at: 9 },
                CameraFault::Unplug {
                    at: 20,
                    failed_reconnects: 3,
                },
            ];
            sources.push(Box::new(FaultySource::new(src, faults)));
        } else {
            sources.push(Box::new(src));
        }
    }
    Ok(Cameras { sources, recorded })
}

/// The V4L2 cameras `devices` names, in order.
fn v4l2_cameras(devices: &[String]) -> anyhow::Result<Cameras> {
    let mut sources: Vec<Box<dyn Source>> = Vec::new();
    let mut recorded = Vec::new();
    for (i, spec) in devices.iter().enumerate() {
        let src = V4l2Source::open(v4l2_config(spec, i as u32)?)?;
        recorded.push(src.info().clone().into());
        sources.push(Box::new(src));
    }
    Ok(Cameras { sources, recorded })
}

/// What the capture came to, per camera.
struct Tally {
    /// Frames preprocessed.
    good: Vec<u64>,
    /// Time spent preprocessing them.
    preprocess: Vec<Duration>,
    /// Each capture thread's counts at the end.
    statuses: Vec<StatusSnapshot>,
    /// The capture's wall time, seconds.
    wall_s: f64,
}

/// Captures `sources` for `o.seconds`: every frame is recorded, preprocessed into its HEF
/// input (432 for the face camera, 288 for the others) and pushed to the sync.
fn capture(
    o: &Options,
    sources: Vec<Box<dyn Source>>,
    recorded: &[RecordedCamera],
    recorder: &mut Recorder,
    sync: &mut Synchronizer<Frame>,
) -> anyhow::Result<Tally> {
    let mut pre: Vec<Preprocessor> = recorded
        .iter()
        .map(|c| {
            let side = if c.info.camera.0 == 3 { 432 } else { 288 };
            Preprocessor::new(InputSpec::rgb(side, side), PreprocessConfig::default())
        })
        .collect::<Result<_, _>>()?;
    let (tx, rx) = crossbeam_channel::bounded(32);
    let threads: Vec<CaptureThread> = sources
        .into_iter()
        .map(|s| {
            CaptureThread::spawn(
                s,
                tx.clone(),
                rx.clone(),
                Backoff {
                    initial: Duration::from_millis(50),
                    ..Backoff::default()
                },
            )
        })
        .collect::<Result<_, _>>()?;
    drop(tx);

    let n = threads.len();
    let mut good = vec![0u64; n];
    let mut preprocess = vec![Duration::ZERO; n];
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs_f64(o.seconds) {
        let Ok(frame) = rx.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        let c = frame.camera.0 as usize;
        recorder.write(&frame)?;
        let t = Instant::now();
        match pre[c].run(&frame) {
            Ok(_tensor) => {
                preprocess[c] += t.elapsed();
                good[c] += 1;
            }
            Err(e) => threads[c].status.record_bad_frame(&e),
        }
        sync.push(frame);
    }
    let wall_s = start.elapsed().as_secs_f64();
    let statuses = threads.iter().map(|t| t.status.snapshot()).collect();
    for t in threads {
        t.stop();
    }
    Ok(Tally {
        good,
        preprocess,
        statuses,
        wall_s,
    })
}

/// The per-camera table (frames, fps, drops, faults, sync misses, preprocessing time) and
/// the sync's groups.
fn print_cameras(tally: &Tally, sync: &Synchronizer<Frame>) {
    println!();
    println!(
        "{:<5} {:>7} {:>8} {:>7} {:>7} {:>6} {:>6} {:>6} {:>9} {:>10}  state",
        "cam", "frames", "fps", "drv-drp", "q-drop", "bad", "disc", "recon", "sync-miss", "prep ms"
    );
    let s = sync.stats();
    for (c, st) in tally.statuses.iter().enumerate() {
        let good = tally.good[c];
        let fps = good as f64 / tally.wall_s;
        let prep = if good > 0 {
            tally.preprocess[c].as_secs_f64() * 1e3 / good as f64
        } else {
            0.0
        };
        println!(
            "cam{c:<2} {:>7} {:>8.1} {:>7} {:>7} {:>6} {:>6} {:>6} {:>9} {:>10.3}  {}",
            st.frames,
            fps,
            st.driver_drops,
            st.queue_drops,
            st.bad_frames,
            st.disconnects,
            st.reconnects,
            s.missing[c],
            prep,
            st.state
        );
    }
    let unused: Vec<String> = s
        .unused
        .iter()
        .enumerate()
        .map(|(c, n)| format!("cam{c} {n}"))
        .collect();
    println!(
        "sync (anchor cam{}): {} complete groups, {} incomplete; unused frames per camera: {}",
        sync.anchor(),
        s.complete,
        s.incomplete,
        unused.join(", ")
    );
}

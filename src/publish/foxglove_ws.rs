//! `run --foxglove [ADDR]`: the recording's channels, live, over the Foxglove
//! WebSocket protocol (Foxglove's own server, `foxglove::WebSocketServer`).
//!
//! The pipeline never waits for a viewer. Logging a message to a channel nobody
//! subscribes to is a flag test, and images are encoded only while someone watches
//! that camera, at most [`FoxgloveServer::image_fps`] a second each (a viewer on a LAN does not
//! need 4 x 120 frames of raw pixels a second). Each client has a bounded queue
//! ([`CLIENT_BACKLOG`] messages) in the server; a client that does not read loses
//! messages there, not the pipeline's time.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use foxglove::messages::{
    CameraCalibration, CompressedImage, FrameTransforms, ImageAnnotations, RawImage, SceneUpdate,
};
use foxglove::{Channel, Context, WebSocketServer, WebSocketServerHandle};

use super::messages;
use crate::camera::record::image::{self, Image};
use crate::camera::{Frame, PixelFormat};
use crate::decode::keypoints::{bones, COCO17};
use crate::geom::time::WallClock;
use crate::geom::Camera;

/// Messages each client may have queued before the server drops for it.
pub const CLIENT_BACKLOG: usize = 256;

/// Images per second per camera while a viewer watches it.
pub const DEFAULT_IMAGE_FPS: f64 = 10.0;

/// Why the live server could not start.
#[derive(Debug, thiserror::Error)]
#[error("--foxglove {addr}: the Foxglove WebSocket server cannot listen there: {what}")]
pub struct FoxgloveError {
    pub addr: SocketAddr,
    pub what: String,
}

/// What the live server did, for the run report.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FoxgloveReport {
    /// The address it listened on, with the port it got.
    pub address: String,
    /// Images at most this often per camera while watched.
    pub image_fps: f64,
    /// Images sent (each to every client subscribed to its camera).
    pub images_sent: u64,
    /// Clients connected at the end of the run.
    pub clients_at_end: usize,
    /// Messages each client may have queued before the server drops for it.
    pub client_backlog: usize,
}

/// One camera's live channels.
struct CameraChannels {
    frame_id: String,
    image: ImageChannel,
    calibration: Channel<CameraCalibration>,
    keypoints: Channel<ImageAnnotations>,
    camera: Option<Camera>,
    /// Capture time of the last image sent, ns (0: none yet).
    last_image_ns: AtomicU64,
}

/// A camera's image channel: raw, or compressed for an MJPEG camera, as in the
/// recording.
enum ImageChannel {
    Raw(Channel<RawImage>),
    Compressed(Channel<CompressedImage>),
}

impl ImageChannel {
    fn has_sinks(&self) -> bool {
        match self {
            Self::Raw(c) => c.has_sinks(),
            Self::Compressed(c) => c.has_sinks(),
        }
    }

    fn topic(&self) -> (&str, &'static str) {
        match self {
            Self::Raw(c) => (c.topic(), "foxglove.RawImage"),
            Self::Compressed(c) => (c.topic(), "foxglove.CompressedImage"),
        }
    }
}

/// The live Foxglove server and the rig's channels on it.
pub struct FoxgloveServer {
    handle: Mutex<Option<WebSocketServerHandle>>,
    /// The channels' context: the server holds it weakly, so it lives here.
    _context: Arc<Context>,
    addr: SocketAddr,
    port: u16,
    cameras: Vec<CameraChannels>,
    body: Channel<SceneUpdate>,
    tf: Channel<FrameTransforms>,
    wall: WallClock,
    image_period_ns: u64,
    /// Bones between a view's COCO-17 keypoints, and between the body's keypoints.
    view_bones: Vec<[usize; 2]>,
    body_bones: Vec<[usize; 2]>,
    /// Capture time after which the transforms and calibrations are sent again.
    static_due_ns: AtomicU64,
    images_sent: AtomicU64,
}

/// One camera as the live server names it.
pub struct FoxgloveCamera {
    /// `camN`: the topic prefix and the image frame.
    pub frame_id: String,
    pub format: PixelFormat,
    pub calibration: Option<Camera>,
}

impl FoxgloveServer {
    /// Starts the server on `addr` (port 0: any free port, see [`FoxgloveServer::port`]) with the
    /// rig's channels: per camera `/camN/image`, `/camN/calibration`, `/camN/keypoints`;
    /// `/body`, `/tf`.
    ///
    /// # Errors
    /// [`FoxgloveError`] naming the address when the server cannot listen there.
    pub fn start(
        addr: SocketAddr,
        cameras: Vec<FoxgloveCamera>,
        body_keypoints: &[String],
        image_fps: f64,
    ) -> Result<Self, FoxgloveError> {
        let ctx = Context::new();
        let cameras = cameras
            .into_iter()
            .map(|c| {
                let id = &c.frame_id;
                let topic = format!("/{id}/image");
                CameraChannels {
                    image: if c.format == PixelFormat::Mjpeg {
                        ImageChannel::Compressed(ctx.channel_builder(topic).build())
                    } else {
                        ImageChannel::Raw(ctx.channel_builder(topic).build())
                    },
                    calibration: ctx.channel_builder(format!("/{id}/calibration")).build(),
                    keypoints: ctx.channel_builder(format!("/{id}/keypoints")).build(),
                    camera: c.calibration,
                    frame_id: c.frame_id,
                    last_image_ns: AtomicU64::new(0),
                }
            })
            .collect();
        let body = ctx.channel_builder("/body").build();
        let tf = ctx.channel_builder("/tf").build();
        let handle = WebSocketServer::new()
            .name(concat!("hailo-edge ", env!("CARGO_PKG_VERSION")))
            .context(&ctx)
            .bind(addr.ip().to_string(), addr.port())
            .message_backlog_size(CLIENT_BACKLOG)
            .start_blocking()
            .map_err(|e| FoxgloveError {
                addr,
                what: e.to_string(),
            })?;
        let port = handle.port();
        let image_period_ns = if image_fps > 0.0 && image_fps.is_finite() {
            (1e9 / image_fps) as u64
        } else {
            0
        };
        Ok(Self {
            handle: Mutex::new(Some(handle)),
            _context: ctx,
            addr,
            port,
            cameras,
            body,
            tf,
            wall: WallClock::now(),
            image_period_ns,
            view_bones: bones(&COCO17),
            body_bones: bones(body_keypoints),
            static_due_ns: AtomicU64::new(0),
            images_sent: AtomicU64::new(0),
        })
    }

    /// The port the server listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Images at most this often per camera, as asked at the start.
    pub fn image_fps(&self) -> f64 {
        if self.image_period_ns == 0 {
            f64::INFINITY
        } else {
            1e9 / self.image_period_ns as f64
        }
    }

    /// Images sent so far (to one client or more).
    pub fn images_sent(&self) -> u64 {
        self.images_sent.load(Ordering::Relaxed)
    }

    /// What the server did so far.
    pub fn report(&self) -> FoxgloveReport {
        FoxgloveReport {
            address: SocketAddr::new(self.addr.ip(), self.port).to_string(),
            image_fps: self.image_fps(),
            images_sent: self.images_sent(),
            clients_at_end: self.clients(),
            client_backlog: CLIENT_BACKLOG,
        }
    }

    /// Clients connected now.
    pub fn clients(&self) -> usize {
        self.lock_handle()
            .as_ref()
            .map_or(0, WebSocketServerHandle::client_count)
    }

    fn lock_handle(&self) -> std::sync::MutexGuard<'_, Option<WebSocketServerHandle>> {
        self.handle.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Offers one frame: sent when a client watches its camera and the camera's last
    /// image is at least a period old.
    pub fn frame(&self, frame: &Frame) {
        let Some(cam) = self.cameras.get(frame.camera.0 as usize) else {
            return;
        };
        let wall_ns = self.wall.wall_ns(frame.capture_ns);
        self.send_static(frame.capture_ns, wall_ns);
        if !cam.image.has_sinks() {
            return;
        }
        let last = cam.last_image_ns.load(Ordering::Relaxed);
        if last != 0 && frame.capture_ns < last.saturating_add(self.image_period_ns) {
            return;
        }
        cam.last_image_ns
            .store(frame.capture_ns.max(1), Ordering::Relaxed);
        match (Image::of(frame, &cam.frame_id, wall_ns), &cam.image) {
            (Image::Raw(m), ImageChannel::Raw(c)) => c.log_with_time(&m, wall_ns),
            (Image::Compressed(m), ImageChannel::Compressed(c)) => c.log_with_time(&m, wall_ns),
            // A frame of another format than the camera declared: not shown.
            _ => return,
        }
        self.images_sent.fetch_add(1, Ordering::Relaxed);
    }

    /// The camera poses and calibrations, once a second of capture time, so a viewer
    /// that connects mid-run gets them.
    fn send_static(&self, capture_ns: u64, wall_ns: u64) {
        let due = self.static_due_ns.load(Ordering::Relaxed);
        if capture_ns < due
            || self
                .static_due_ns
                .compare_exchange(
                    due,
                    capture_ns + 1_000_000_000,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                )
                .is_err()
        {
            return;
        }
        if self.tf.has_sinks() {
            let placed: Vec<(String, Camera)> = self
                .cameras
                .iter()
                .filter_map(|c| Some((c.frame_id.clone(), c.camera?)))
                .collect();
            self.tf
                .log_with_time(&messages::transforms(&placed, wall_ns), wall_ns);
        }
        for c in &self.cameras {
            if let (Some(camera), true) = (&c.camera, c.calibration.has_sinks()) {
                c.calibration
                    .log_with_time(&image::calibration(camera, &c.frame_id, wall_ns), wall_ns);
            }
        }
    }

    /// One view's keypoints (camera pixels, `[x, y, visibility, score]`).
    pub fn keypoints(&self, camera: usize, capture_ns: u64, keypoints: &[[f32; 4]]) {
        if let Some(c) = self.cameras.get(camera) {
            if c.keypoints.has_sinks() {
                let wall_ns = self.wall.wall_ns(capture_ns);
                c.keypoints.log_with_time(
                    &messages::keypoints(keypoints, &self.view_bones, wall_ns),
                    wall_ns,
                );
            }
        }
    }

    /// The fitted body's 3D keypoints (metres, world frame).
    pub fn body(&self, capture_ns: u64, keypoints_3d: &[[f64; 3]], residual_mm: Option<f64>) {
        if self.body.has_sinks() {
            let wall_ns = self.wall.wall_ns(capture_ns);
            self.body.log_with_time(
                &messages::body(keypoints_3d, &self.body_bones, wall_ns, residual_mm),
                wall_ns,
            );
        }
    }

    /// Stops the server (clients are disconnected).
    pub fn stop(&self) {
        if let Some(h) = self.lock_handle().take() {
            // The shutdown completes on the server's runtime; nothing here waits on it.
            drop(h.stop());
        }
    }

    /// Channel topics, for the report and the documentation's test.
    pub fn topics(&self) -> BTreeMap<String, &'static str> {
        let mut out = BTreeMap::new();
        for c in &self.cameras {
            let (topic, schema) = c.image.topic();
            out.insert(topic.to_owned(), schema);
            out.insert(
                c.calibration.topic().to_owned(),
                "foxglove.CameraCalibration",
            );
            out.insert(c.keypoints.topic().to_owned(), "foxglove.ImageAnnotations");
        }
        out.insert(self.body.topic().to_owned(), "foxglove.SceneUpdate");
        out.insert(self.tf.topic().to_owned(), "foxglove.FrameTransforms");
        out
    }
}

impl Drop for FoxgloveServer {
    fn drop(&mut self) {
        self.stop();
    }
}

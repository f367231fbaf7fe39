//! `run --publish zenoh[:ENDPOINT]`: each fitted body and each view's keypoints on Zenoh,
//! the robotics ecosystem's pub/sub engine.
//!
//! Key expressions, under a prefix `hailo-edge/NAME` (NAME: `--publish-as`, default the
//! host name):
//!
//! | key | message | when |
//! |---|---|---|
//! | `hailo-edge/NAME/body` | [`BodyMessage`] (`hailo-edge.body/1`) | each fitted instant |
//! | `hailo-edge/NAME/view/camN` | [`ViewMessage`] (`hailo-edge.view/1`) | each view of an instant |
//! | `hailo-edge/NAME/skeleton` | [`SkeletonMessage`] (`hailo-edge.skeleton/1`) | at the start, then once a second |
//!
//! Every payload is JSON (Zenoh encoding `application/json`) whose `schema` field names
//! what it is; `docs/zenoh.md` documents every field. A subscriber decodes any of them
//! with [`Message::decode`]; a payload that is not one is counted and skipped by the
//! caller, never a panic.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use ::zenoh::bytes::Encoding;
use ::zenoh::pubsub::Publisher;
use ::zenoh::{Session, Wait};
use serde::{Deserialize, Serialize};

use crate::body::SkeletonNaming;
use crate::geom::time::{monotonic_ns, WallClock};
use crate::geom::Camera;

/// The key prefix every rig publishes under.
pub const PREFIX: &str = "hailo-edge";

/// Why Zenoh publishing could not start.
#[derive(Debug, thiserror::Error)]
#[error("--publish zenoh{}: {what}", endpoint.as_deref().map(|e| format!(":{e}")).unwrap_or_default())]
pub struct ZenohError {
    pub endpoint: Option<String>,
    pub what: String,
}

/// One fitted body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BodyMessage<'a> {
    /// `hailo-edge.body/1`.
    pub schema: Cow<'a, str>,
    /// The publishing rig's name.
    pub rig: Cow<'a, str>,
    /// Capture time of the instant, the rig's CLOCK_MONOTONIC ns.
    pub capture_ns: u64,
    /// The same instant on the wall clock (ns since the Unix epoch): what boxes compare.
    pub wall_ns: u64,
    /// Root translation, metres, world frame.
    pub translation: [f64; 3],
    /// Rotation vectors (radians) of the fitted bones, by bone name.
    pub rotations: BTreeMap<Cow<'a, str>, [f64; 3]>,
    /// 3D keypoints, metres, in the skeleton's keypoint order.
    pub keypoints_3d: Cow<'a, [[f64; 3]]>,
    /// The fit residual, millimetres.
    pub residual_mm: Option<f64>,
    /// The fit residual, pixels.
    pub residual_px: Option<f64>,
}

/// One view's decoded keypoints, with the camera that saw them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewMessage<'a> {
    /// `hailo-edge.view/1`.
    pub schema: Cow<'a, str>,
    pub rig: Cow<'a, str>,
    /// Camera index in the rig.
    pub camera: usize,
    pub sequence: u64,
    pub capture_ns: u64,
    pub wall_ns: u64,
    /// The publisher's wall clock when it put the message: a receiver's own clock at
    /// arrival, less this, is the network's delay plus the two clocks' skew.
    pub sent_wall_ns: u64,
    /// The keypoints the rig's fit used, camera pixels `[x, y, visibility, score]`, pixel
    /// centres at +0.5, in the skeleton's keypoint order (the decoder's are its first 17,
    /// COCO-17); a keypoint not seen has visibility 0.
    pub keypoints: Cow<'a, [[f32; 4]]>,
    /// The camera's calibration (intrinsics, distortion, world-to-camera R and t in metres).
    pub calibration: Camera,
}

/// The skeleton the bodies count in: bone names, their topology, keypoint labels.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkeletonMessage {
    /// `hailo-edge.skeleton/1`.
    pub schema: String,
    pub rig: String,
    pub skeleton: serde_json::Value,
}

/// Any message of the three keys.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    Body(BodyMessage<'static>),
    View(Box<ViewMessage<'static>>),
    Skeleton(SkeletonMessage),
}

/// A payload that is not one of the messages, named by its key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: not a hailo-edge message: {what}")]
pub struct MalformedPayload {
    pub key: String,
    pub what: String,
}

impl Message {
    /// Decodes a payload received on `key`.
    ///
    /// # Errors
    /// [`MalformedPayload`] naming the key: not JSON, no known `schema`, or a field
    /// missing or of the wrong type.
    pub fn decode(key: &str, payload: &[u8]) -> Result<Self, MalformedPayload> {
        #[derive(Deserialize)]
        struct Tag {
            schema: String,
        }
        let bad = |what: String| MalformedPayload {
            key: key.to_owned(),
            what,
        };
        let tag: Tag = serde_json::from_slice(payload).map_err(|e| bad(e.to_string()))?;
        let parsed = match tag.schema.as_str() {
            BODY_SCHEMA => serde_json::from_slice(payload).map(Message::Body),
            VIEW_SCHEMA => serde_json::from_slice(payload).map(|v| Message::View(Box::new(v))),
            SKELETON_SCHEMA => serde_json::from_slice(payload).map(Message::Skeleton),
            other => return Err(bad(format!("unknown schema `{other}`"))),
        };
        parsed.map_err(|e| bad(e.to_string()))
    }
}

pub const BODY_SCHEMA: &str = "hailo-edge.body/1";
pub const VIEW_SCHEMA: &str = "hailo-edge.view/1";
pub const SKELETON_SCHEMA: &str = "hailo-edge.skeleton/1";

/// How a session finds its peers besides Zenoh's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint<'a> {
    /// Zenoh's defaults (the `ZENOH_CONFIG` file when set): peers found by scouting.
    Default,
    /// Listen on this endpoint (e.g. `tcp/0.0.0.0:7447`): what `--publish zenoh:ENDPOINT` does.
    Listen(&'a str),
    /// Connect to this endpoint: what a subscriber of one rig does.
    Connect(&'a str),
    /// Connect to each of these: what `fuse` does with several boxes. A box not up yet, or
    /// gone, is retried by Zenoh.
    ConnectAll(&'a [String]),
}

/// A Zenoh session: Zenoh's defaults (or the `ZENOH_CONFIG` file), plus `endpoint`;
/// multicast scouting off unless `scouting`.
///
/// # Errors
/// [`ZenohError`] naming the endpoint when the configuration is refused or the session
/// cannot open.
pub fn open_session(endpoint: Endpoint<'_>, scouting: bool) -> Result<Session, ZenohError> {
    let (key, named): (&str, Vec<&str>) = match endpoint {
        Endpoint::Default => ("", Vec::new()),
        Endpoint::Listen(e) => ("listen/endpoints", vec![e]),
        Endpoint::Connect(e) => ("connect/endpoints", vec![e]),
        Endpoint::ConnectAll(list) => (
            "connect/endpoints",
            list.iter().map(String::as_str).collect(),
        ),
    };
    let err = |what: String| ZenohError {
        endpoint: (!named.is_empty()).then(|| named.join(",")),
        what,
    };
    let mut config = ::zenoh::Config::from_env().unwrap_or_default();
    if !named.is_empty() {
        let list = serde_json::to_string(&named).map_err(|e| err(e.to_string()))?;
        config
            .insert_json5(key, &list)
            .map_err(|e| err(format!("not an endpoint Zenoh takes: {e}")))?;
    }
    if !scouting {
        config
            .insert_json5("scouting/multicast/enabled", "false")
            .map_err(|e| err(e.to_string()))?;
    }
    ::zenoh::open(config)
        .wait()
        .map_err(|e| err(format!("the session does not open: {e}")))
}

/// What a subscriber read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tally {
    pub bodies: u64,
    pub views: u64,
    pub skeletons: u64,
    /// Payloads that were not a hailo-edge message (each logged with its key, then skipped).
    pub malformed: u64,
}

/// Subscribes to `key` (e.g. `hailo-edge/**`) on `session` for `seconds` and hands each
/// message to `each` with its key; a malformed payload is logged naming its key, counted
/// and skipped.
///
/// # Errors
/// [`ZenohError`] when the subscription cannot be declared.
pub fn read(
    session: &Session,
    key: &str,
    seconds: f64,
    mut each: impl FnMut(&str, &Message),
) -> Result<Tally, ZenohError> {
    let subscriber = session
        .declare_subscriber(key.to_owned())
        .wait()
        .map_err(|e| ZenohError {
            endpoint: None,
            what: format!("subscribing to {key}: {e}"),
        })?;
    let mut tally = Tally::default();
    let t0 = std::time::Instant::now();
    while t0.elapsed().as_secs_f64() < seconds {
        let Ok(Some(sample)) = subscriber.recv_timeout(std::time::Duration::from_millis(100))
        else {
            continue;
        };
        let key = sample.key_expr().as_str();
        match Message::decode(key, &sample.payload().to_bytes()) {
            Ok(m) => {
                match &m {
                    Message::Body(_) => tally.bodies += 1,
                    Message::View(_) => tally.views += 1,
                    Message::Skeleton(_) => tally.skeletons += 1,
                }
                each(key, &m);
            }
            Err(e) => {
                tally.malformed += 1;
                log::warn!("{e}; skipped");
            }
        }
    }
    Ok(tally)
}

/// Publishes a rig's bodies and views.
pub struct ZenohPublisher {
    _session: Session,
    rig: String,
    body: Publisher<'static>,
    views: Vec<Publisher<'static>>,
    skeleton: Publisher<'static>,
    skeleton_json: serde_json::Value,
    cameras: Vec<Camera>,
    wall: WallClock,
    /// Capture time after which the skeleton is put again.
    skeleton_due_ns: AtomicU64,
    put: AtomicU64,
    failed: AtomicU64,
    last_error: Mutex<Option<String>>,
}

/// What the publisher did, for the run report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ZenohReport {
    /// The key prefix, `hailo-edge/NAME`.
    pub prefix: String,
    /// Messages put.
    pub put: u64,
    /// Puts Zenoh refused (each logged once per kind of error).
    pub failed: u64,
}

impl ZenohPublisher {
    /// Opens a session and declares the rig's keys.
    ///
    /// # Errors
    /// [`ZenohError`] naming the endpoint.
    pub fn start(
        endpoint: Option<&str>,
        rig: &str,
        cameras: &[Camera],
        skeleton: &SkeletonNaming,
    ) -> Result<Self, ZenohError> {
        let err = |what: String| ZenohError {
            endpoint: endpoint.map(str::to_owned),
            what,
        };
        let session = open_session(endpoint.map_or(Endpoint::Default, Endpoint::Listen), true)?;
        let declare = |key: String| {
            session
                .declare_publisher(key.clone())
                .encoding(Encoding::APPLICATION_JSON)
                // Sent at once, not batched: a body is small and late is useless.
                .express(true)
                .wait()
                .map_err(|e| err(format!("{key}: {e}")))
        };
        let base = format!("{PREFIX}/{rig}");
        let body = declare(format!("{base}/body"))?;
        let views = (0..cameras.len())
            .map(|i| declare(format!("{base}/view/cam{i}")))
            .collect::<Result<Vec<_>, _>>()?;
        let skeleton_pub = declare(format!("{base}/skeleton"))?;
        let skeleton_json = serde_json::to_value(skeleton).map_err(|e| err(e.to_string()))?;
        Ok(Self {
            _session: session,
            rig: rig.to_owned(),
            body,
            views,
            skeleton: skeleton_pub,
            skeleton_json,
            cameras: cameras.to_vec(),
            wall: WallClock::now(),
            skeleton_due_ns: AtomicU64::new(0),
            put: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            last_error: Mutex::new(None),
        })
    }

    fn put(&self, publisher: &Publisher<'_>, json: serde_json::Result<Vec<u8>>) {
        let result = json
            .map_err(|e| e.to_string())
            .and_then(|bytes| publisher.put(bytes).wait().map_err(|e| e.to_string()));
        match result {
            Ok(()) => {
                self.put.fetch_add(1, Ordering::Relaxed);
            }
            Err(e) => {
                self.failed.fetch_add(1, Ordering::Relaxed);
                let mut last = self.last_error.lock().unwrap_or_else(|p| p.into_inner());
                if last.as_deref() != Some(e.as_str()) {
                    log::warn!("zenoh {}: put failed: {e}", publisher.key_expr());
                    *last = Some(e);
                }
            }
        }
    }

    /// Puts the skeleton when it is due (first call, then once a second).
    fn skeleton_if_due(&self, capture_ns: u64) {
        let due = self.skeleton_due_ns.load(Ordering::Relaxed);
        if capture_ns >= due {
            self.skeleton_due_ns
                .store(capture_ns.saturating_add(1_000_000_000), Ordering::Relaxed);
            let msg = SkeletonMessage {
                schema: SKELETON_SCHEMA.into(),
                rig: self.rig.clone(),
                skeleton: self.skeleton_json.clone(),
            };
            self.put(&self.skeleton, serde_json::to_vec(&msg));
        }
    }

    /// Puts one view's keypoints.
    pub fn view(&self, camera: usize, sequence: u64, capture_ns: u64, keypoints: &[[f32; 4]]) {
        let (Some(publisher), Some(calibration)) =
            (self.views.get(camera), self.cameras.get(camera))
        else {
            return;
        };
        self.skeleton_if_due(capture_ns);
        // Borrowed throughout: nothing is allocated per message but the JSON.
        let msg = ViewMessage {
            schema: VIEW_SCHEMA.into(),
            rig: Cow::Borrowed(&self.rig),
            camera,
            sequence,
            capture_ns,
            wall_ns: self.wall.wall_ns(capture_ns),
            sent_wall_ns: self.wall.wall_ns(monotonic_ns()),
            keypoints: Cow::Borrowed(keypoints),
            calibration: *calibration,
        };
        self.put(publisher, serde_json::to_vec(&msg));
    }

    /// The wall clock shifted by `skew_ns`: every stamp this publisher puts is that far off,
    /// as a box whose clock is off would put them (what `--publish-skew-ms` tests receivers
    /// with).
    #[must_use]
    pub fn with_clock_skew(mut self, skew_ns: i64) -> Self {
        self.wall = WallClock::with_offset(self.wall.offset_ns() + i128::from(skew_ns));
        self
    }

    /// Puts one fitted body: root translation (m), rotation vectors by bone, 3D
    /// keypoints (m) and the residuals (mm, px).
    pub fn body<'a>(
        &self,
        capture_ns: u64,
        translation: [f64; 3],
        rotations: impl IntoIterator<Item = (&'a str, [f64; 3])>,
        keypoints_3d: &[[f64; 3]],
        residual: (Option<f64>, Option<f64>),
    ) {
        self.skeleton_if_due(capture_ns);
        let msg = BodyMessage {
            schema: BODY_SCHEMA.into(),
            rig: Cow::Borrowed(&self.rig),
            capture_ns,
            wall_ns: self.wall.wall_ns(capture_ns),
            translation,
            rotations: rotations
                .into_iter()
                .map(|(k, v)| (Cow::Borrowed(k), v))
                .collect(),
            keypoints_3d: Cow::Borrowed(keypoints_3d),
            residual_mm: residual.0,
            residual_px: residual.1,
        };
        self.put(&self.body, serde_json::to_vec(&msg));
    }

    /// What was published so far.
    pub fn report(&self) -> ZenohReport {
        ZenohReport {
            prefix: format!("{PREFIX}/{}", self.rig),
            put: self.put.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

/// The host name, the default rig name on Zenoh (anything but letters, digits, `-` and
/// `_` becomes `_`, so it is one chunk of a key expression).
pub fn default_rig_name() -> String {
    // The kernel's host name (what gethostname(2) returns), without an unsafe call.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    key_chunk(host.trim())
}

/// `name` as one chunk of a key expression.
pub fn key_chunk(name: &str) -> String {
    let chunk: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if chunk.is_empty() {
        "rig".into()
    } else {
        chunk
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_payloads_are_named_by_their_key() {
        let key = "hailo-edge/a/body";
        let e = Message::decode(key, b"{not json").unwrap_err();
        assert_eq!(e.key, key);
        let e = Message::decode(key, br#"{"schema":"other/1"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown schema `other/1`"), "{e}");
        let e = Message::decode(key, br#"{"schema":"hailo-edge.body/1","rig":"a"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field"), "{e}");
        // Negative control: a whole body decodes.
        let body = BodyMessage {
            schema: BODY_SCHEMA.into(),
            rig: "a".into(),
            capture_ns: 1,
            wall_ns: 2,
            translation: [0.0, 1.0, 2.0],
            rotations: BTreeMap::from([("root".into(), [0.1, 0.2, 0.3])]),
            keypoints_3d: vec![[1.0, 2.0, 3.0]].into(),
            residual_mm: Some(4.0),
            residual_px: None,
        };
        let bytes = serde_json::to_vec(&body).unwrap();
        assert_eq!(Message::decode(key, &bytes).unwrap(), Message::Body(body));
    }

    #[test]
    fn a_host_name_becomes_one_key_chunk() {
        assert_eq!(key_chunk("box-1.local"), "box-1_local");
        assert_eq!(key_chunk("a/b*"), "a_b_");
        assert_eq!(key_chunk(""), "rig");
    }
}

//! What the recorder adds to the camera recording: Foxglove's result channels
//! (`SceneChannels`) and, when every captured frame is recorded, the tee that
//! copies frames from the cameras ([`record_every`]).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crossbeam_channel::{Sender, TrySendError};
use foxglove::messages::{FrameTransforms, ImageAnnotations, SceneUpdate};

use crate::camera::pool::PooledBuffer;
use crate::camera::record::{RecordError, Recorder};
use crate::camera::{Frame, Hooked, Source};
use crate::decode::keypoints::{bones, COCO17};
use crate::geom::Camera;
use crate::publish::messages;

use super::sinks::{Item, ResultItem};

/// The recording's Foxglove result channels: each camera's keypoints over its
/// image, the body, and the camera poses (once a second of capture time).
pub(super) struct SceneChannels {
    keypoints: BTreeMap<usize, u16>,
    body: u16,
    tf: u16,
    cameras: Vec<(String, Camera)>,
    /// Bones between the decoder's COCO-17 keypoints of a view, and between the body's.
    view_bones: Vec<[usize; 2]>,
    body_bones: Vec<[usize; 2]>,
    tf_due_ns: u64,
    bodies: u32,
}

impl SceneChannels {
    pub(super) fn add(
        recorder: &mut Recorder,
        cameras: Vec<(String, Camera)>,
        body_keypoints: &[String],
    ) -> Result<Self, RecordError> {
        let mut keypoints = BTreeMap::new();
        for (i, (frame_id, _)) in cameras.iter().enumerate() {
            let id = recorder.add_channel::<ImageAnnotations>(
                &format!("/{frame_id}/keypoints"),
                &BTreeMap::new(),
            )?;
            keypoints.insert(i, id);
        }
        Ok(Self {
            keypoints,
            body: recorder.add_channel::<SceneUpdate>("/body", &BTreeMap::new())?,
            tf: recorder.add_channel::<FrameTransforms>("/tf", &BTreeMap::new())?,
            cameras,
            view_bones: bones(&COCO17),
            body_bones: bones(body_keypoints),
            tf_due_ns: 0,
            bodies: 0,
        })
    }

    pub(super) fn write(
        &mut self,
        recorder: &mut Recorder,
        r: &ResultItem,
    ) -> Result<(), RecordError> {
        let wall = recorder.wall_clock();
        if r.capture_ns >= self.tf_due_ns {
            self.tf_due_ns = r.capture_ns.saturating_add(1_000_000_000);
            let tf = messages::transforms(&self.cameras, wall.wall_ns(r.capture_ns));
            recorder.write_message(self.tf, 0, r.capture_ns, &tf)?;
        }
        for (camera, capture_ns, kps) in &r.views {
            if let Some(&channel) = self.keypoints.get(camera) {
                let a = messages::keypoints(kps, &self.view_bones, wall.wall_ns(*capture_ns));
                recorder.write_message(channel, 0, *capture_ns, &a)?;
            }
        }
        if let Some((points, residual_mm)) = &r.body {
            let scene = messages::body(
                points,
                &self.body_bones,
                wall.wall_ns(r.capture_ns),
                *residual_mm,
            );
            recorder.write_message(self.body, self.bodies, r.capture_ns, &scene)?;
            self.bodies = self.bodies.wrapping_add(1);
        }
        Ok(())
    }
}

/// `inner`, its every frame also offered to the recorder (`run --record-frames all`).
/// The camera never waits for the recorder: a frame the recorder has no room for is
/// counted in `not_recorded` and goes on to the pipeline, so captured = recorded + not
/// recorded.
pub fn record_every(
    inner: Box<dyn Source>,
    record: Sender<Item>,
    not_recorded: Arc<AtomicU64>,
) -> impl Source {
    Hooked::new(inner, move |inner: &mut Box<dyn Source>| {
        let frame = inner.next_frame()?;
        let copy = Frame {
            data: PooledBuffer::detached(frame.data.to_vec()),
            truth: None,
            ..frame
        };
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            record.try_send(Item::Frame(copy))
        {
            not_recorded.fetch_add(1, Ordering::Relaxed);
        }
        Ok(frame)
    })
}

//! The decoder pool: threads that dequantise a completed job's backbone maps,
//! run the decoder on them and map the top detection back to camera pixels.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

use crate::decode::input::DeviceMap;
use crate::decode::keypoints::top_detections;
use crate::decode::{DecodeError, Decoder, FeatureMaps, Pairing};
use crate::hef::{DataType, Quantization};
use crate::npu::Bindings;

use crate::geom::time::{thread_cpu_ns, Clock};
use crate::rig::stamp::Leg;
use crate::rig::stats::{DropStage, LiveStats};
use crate::rig::work::{DecodeWork, Returned, ViewResult};

use super::Stage;

/// One device output the decoder reads, as the HEF describes it.
#[derive(Debug, Clone)]
pub struct FeatureStream {
    pub stream: String,
    pub data_type: DataType,
    pub quant: Quantization,
}

/// What a decoder thread needs to know about one graph.
#[derive(Debug, Clone)]
pub struct GraphDecode {
    /// The device outputs, in the decoder's input order (paired by name).
    pub streams: Vec<FeatureStream>,
    /// Which output feeds which decoder input, for reports.
    pub pairing: Pairing,
    /// Graph input (width, height) in pixels.
    pub input_size: (u32, u32),
}

/// One decoder thread's state: a loaded decoder and reused maps per graph.
pub struct DecodeWorker {
    pub decoders: Vec<Box<dyn Decoder>>,
    pub graphs: Vec<GraphDecode>,
    pub input: Receiver<DecodeWork>,
    pub output: Sender<ViewResult>,
    /// Buffers back to the NPU stage once decoded (which also frees the
    /// frame's in-flight slot).
    pub recycle: Sender<Returned>,
    /// This thread's index in the pool.
    pub index: usize,
    /// Niceness to run at (0: unchanged).
    pub nice: i32,
    pub stats: Arc<LiveStats>,
    pub clock: Arc<dyn Clock>,
}

fn decode_one(
    decoder: &mut dyn Decoder,
    maps: &mut FeatureMaps,
    graph: &GraphDecode,
    bindings: &Bindings,
) -> Result<crate::decode::RawOutput, DecodeError> {
    let mut views = Vec::with_capacity(graph.streams.len());
    for s in &graph.streams {
        let bytes = bindings
            .output(&s.stream)
            .map_err(|e| DecodeError::Buffer {
                stream: s.stream.clone(),
                message: e.to_string(),
            })?;
        views.push(DeviceMap {
            stream: &s.stream,
            bytes,
            data_type: s.data_type,
            quant: &s.quant,
        });
    }
    maps.fill_from_device(&views)?;
    decoder.run(maps)
}

impl Stage for DecodeWorker {
    type Output = ();

    fn name(&self) -> String {
        "decoder".into()
    }

    /// Decodes until the input queue closes.
    fn run(mut self) {
        if self.nice > 0 {
            lower_priority(self.nice);
        }
        let mut maps: Vec<FeatureMaps> = self.decoders.iter().map(|d| d.new_maps()).collect();
        let start_cpu = thread_cpu_ns();
        let mut in_decoder = 0u64;
        while let Ok(work) = self.input.recv() {
            let DecodeWork { mut meta, bindings } = work;
            let g = meta.graph;
            let c0 = thread_cpu_ns();
            let result = decode_one(
                self.decoders[g].as_mut(),
                &mut maps[g],
                &self.graphs[g],
                &bindings,
            );
            let (w, h) = self.graphs[g].input_size;
            let transform = meta.transform;
            let detection = result.map(|raw| {
                let to_camera = |x: f32, y: f32| {
                    let [cx, cy] = transform.to_camera([f64::from(x), f64::from(y)]);
                    (cx as f32, cy as f32)
                };
                top_detections(&raw, 0, 1, (w as f32, h as f32), &to_camera)
                    .into_iter()
                    .next()
            });
            in_decoder += thread_cpu_ns().saturating_sub(c0);
            self.stats
                .cpu
                .decoded_frames
                .fetch_add(1, Ordering::Relaxed);
            let camera = meta.camera;
            match detection {
                Ok(detection) => {
                    meta.stamps.leave(Leg::Decode, self.clock.now_ns());
                    if self.output.send(ViewResult { meta, detection }).is_err() {
                        self.stats.cameras[camera].drop_at(DropStage::Decode);
                    }
                }
                Err(e) => {
                    log::warn!("camera {camera}: decoder: {e}");
                    self.stats.cameras[camera].drop_at(DropStage::Decode);
                }
            }
            // Only now: returning the buffers frees the camera to go to another
            // decoder thread, so its next view must not overtake this one.
            let _ = self.recycle.send(Returned {
                graph: g,
                camera,
                worker: self.index,
                bindings,
            });
        }
        let total = thread_cpu_ns().saturating_sub(start_cpu);
        self.stats
            .cpu
            .decode
            .fetch_add(in_decoder, Ordering::Relaxed);
        self.stats
            .cpu
            .decode_overhead
            .fetch_add(total.saturating_sub(in_decoder), Ordering::Relaxed);
    }
}

/// Lowers the calling thread's scheduling priority to `nice` (Linux threads
/// have their own niceness); a failure only logs, the decoder runs either way.
fn lower_priority(nice: i32) {
    // SAFETY: gettid has no preconditions and returns the calling thread's id.
    let tid = unsafe { libc::gettid() };
    // SAFETY: setpriority only reads its integer arguments; PRIO_PROCESS with
    // a thread id changes that one thread.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    if rc != 0 {
        log::warn!(
            "decoder thread: could not set niceness {nice}: {}",
            std::io::Error::last_os_error()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::lower_priority;

    fn own_nice() -> i32 {
        // SAFETY: as in lower_priority.
        let tid = unsafe { libc::gettid() };
        // SAFETY: getpriority only reads its integer arguments.
        unsafe { libc::getpriority(libc::PRIO_PROCESS, tid as libc::id_t) }
    }

    #[test]
    fn a_decoder_thread_lowers_only_its_own_priority() {
        let before = own_nice();
        let inside = std::thread::spawn(move || {
            lower_priority(before + 3);
            own_nice()
        })
        .join()
        .unwrap();
        assert_eq!(inside, (before + 3).min(19));
        assert_eq!(own_nice(), before, "the spawning thread kept its niceness");
    }
}

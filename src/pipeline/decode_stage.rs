//! The decoder pool: threads that dequantise a completed job's backbone maps,
//! run the decoder on them and map the top detection back to camera pixels.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crossbeam_channel::{Receiver, Sender};

use crate::decode::input::DeviceMap;
use crate::decode::keypoints::top_detections;
use crate::decode::{DecodeError, Decoder, FeatureMaps, TAPS};
use crate::hef::{DataType, Quantization};
use crate::npu::Bindings;

use super::stamp::{thread_cpu_ns, Clock, Stage};
use super::stats::{DropStage, LiveStats};
use super::work::{DecodeWork, Returned, ViewResult};

/// One backbone output the decoder reads, as the HEF describes it.
#[derive(Debug, Clone)]
pub struct Tap {
    pub stream: String,
    pub data_type: DataType,
    pub quant: Quantization,
}

/// What a decoder thread needs to know about one graph.
#[derive(Debug, Clone)]
pub struct GraphDecode {
    /// The four backbone outputs, in the decoder's input order.
    pub taps: Vec<Tap>,
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
    pub stats: Arc<LiveStats>,
    pub clock: Arc<dyn Clock>,
}

fn decode_one(
    decoder: &mut dyn Decoder,
    maps: &mut FeatureMaps,
    graph: &GraphDecode,
    bindings: &Bindings,
) -> Result<crate::decode::RawOutput, DecodeError> {
    let mut views = Vec::with_capacity(TAPS);
    for tap in &graph.taps {
        let bytes = bindings
            .output(&tap.stream)
            .map_err(|e| DecodeError::Buffer {
                stream: tap.stream.clone(),
                message: e.to_string(),
            })?;
        views.push(DeviceMap {
            stream: &tap.stream,
            bytes,
            data_type: tap.data_type,
            quant: &tap.quant,
        });
    }
    let taps: [DeviceMap<'_>; TAPS] =
        views.try_into().map_err(|v: Vec<_>| DecodeError::Buffer {
            stream: "backbone outputs".into(),
            message: format!("{} outputs, the decoder reads {TAPS}", v.len()),
        })?;
    maps.fill_from_device(&taps)?;
    decoder.run(maps)
}

impl DecodeWorker {
    /// Decodes until the input queue closes.
    pub fn run(mut self) {
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
            let _ = self.recycle.send(Returned {
                graph: g,
                camera: meta.camera,
                worker: self.index,
                bindings,
            });
            match detection {
                Ok(detection) => {
                    meta.stamps.leave(Stage::Decode, self.clock.now_ns());
                    let camera = meta.camera;
                    if self.output.send(ViewResult { meta, detection }).is_err() {
                        self.stats.cameras[camera].drop_at(DropStage::Decode);
                    }
                }
                Err(e) => {
                    log::warn!("camera {}: decoder: {e}", meta.camera);
                    self.stats.cameras[meta.camera].drop_at(DropStage::Decode);
                }
            }
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

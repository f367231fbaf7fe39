//! What a stream of a Hailo part can carry, and the check every listed HEF
//! passes before anyone sizes a buffer from it.
//!
//! A boundary stream moves one frame per transfer through one scatter-gather
//! descriptor list of the part's DMA engine. HailoRT's lists hold at most
//! 64 Ki descriptors of at most 4 KiB each, so one frame of one stream is at
//! most 256 MiB on every Hailo part (Hailo-8, -8L, -15 and -10H alike). A
//! listing that claims more (a 65535 x 65535 x 3 input, a 2^32 - 1 byte
//! output) comes from a damaged or hostile file: the device could not move
//! it, and a host that believed it would allocate gigabytes per frame.

use crate::error::HefErrorKind;
use crate::model::{Hef, QuantInfo, Quantization, StreamInfo};

/// Descriptors in one scatter-gather list of a Hailo DMA engine.
pub const MAX_DESCRIPTORS: u64 = 64 * 1024;

/// Bytes one descriptor of a Hailo DMA engine moves at most.
pub const MAX_DESCRIPTOR_PAGE: u64 = 4096;

/// The most bytes one frame of one stream can hold: one full descriptor list.
pub const MAX_STREAM_FRAME_BYTES: u64 = MAX_DESCRIPTORS * MAX_DESCRIPTOR_PAGE;

impl Hef {
    /// Checks that every stream of every network group is one a Hailo part
    /// can carry: a frame of at least one element and at most
    /// [`MAX_STREAM_FRAME_BYTES`], finite quantisation (zero point, scale
    /// and limits), and a finite, positive bottleneck fps when one is
    /// stated. The reader runs it on every listing, so no buffer is ever
    /// sized from a stream it refuses.
    ///
    /// # Errors
    /// [`HefErrorKind::StreamTooLarge`], [`HefErrorKind::EmptyStream`] or
    /// [`HefErrorKind::NonFinite`] naming the stream (or group) and the field.
    pub fn check_limits(&self) -> Result<(), HefErrorKind> {
        for group in &self.network_groups {
            if let Some(fps) = group.bottleneck_fps {
                if !(fps.is_finite() && fps > 0.0) {
                    return Err(HefErrorKind::NonFinite {
                        at: format!("network group {}", group.name),
                        field: "bottleneck_fps",
                        value: fps,
                        expected: "a finite positive rate",
                    });
                }
            }
            for stream in group.streams() {
                check_stream(stream)?;
            }
        }
        Ok(())
    }
}

/// One stream's size and quantisation.
fn check_stream(stream: &StreamInfo) -> Result<(), HefErrorKind> {
    let elements = stream.shape.checked_elements();
    if elements == Some(0) {
        return Err(HefErrorKind::EmptyStream {
            stream: stream.name.clone(),
        });
    }
    // Three factors below 2^32 overflow 64 bits: the product is checked.
    let bytes = elements.and_then(|e| e.checked_mul(stream.data_type.size() as u64));
    if bytes.is_none_or(|b| b > MAX_STREAM_FRAME_BYTES) {
        return Err(HefErrorKind::StreamTooLarge {
            stream: stream.name.clone(),
            bytes,
            limit: MAX_STREAM_FRAME_BYTES,
        });
    }
    let quants: &[QuantInfo] = match &stream.quant {
        Quantization::Uniform(q) => std::slice::from_ref(q),
        Quantization::PerFeature(v) => v,
    };
    for q in quants {
        let fields = [
            ("qp_zp", q.zp),
            ("qp_scale", q.scale),
            ("limvals_min", q.limvals_min),
            ("limvals_max", q.limvals_max),
        ];
        for (field, value) in fields {
            if !value.is_finite() {
                return Err(HefErrorKind::NonFinite {
                    at: format!("stream {}", stream.name),
                    field,
                    value: f64::from(value),
                    expected: "a finite number",
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::model::{HeaderVersion, Hef, Quantization, StreamShape};
    use crate::{samples, ErrorClass, HefBuilder, HefErrorKind};

    /// The tiny sample with `edit` applied, written and read back.
    fn reread(edit: impl FnOnce(&mut Hef)) -> Result<Hef, HefErrorKind> {
        let mut hef = samples::tiny(HeaderVersion::V2);
        edit(&mut hef);
        let bytes = HefBuilder::new(&hef).build().expect("encodes");
        Hef::from_bytes(&bytes).map_err(crate::HefError::into_kind)
    }

    fn image(height: u32, width: u32, features: u32) -> StreamShape {
        StreamShape::Image {
            height,
            width,
            features,
        }
    }

    #[test]
    fn the_sample_passes() {
        reread(|_| {}).expect("the tiny sample is within every limit");
    }

    #[test]
    fn frames_no_part_can_carry_are_refused_with_the_stream_named() {
        for shape in [image(65535, 65535, 3), image(u32::MAX, u32::MAX, u32::MAX)] {
            let err = reread(|h| h.network_groups[0].inputs[0].shape = shape).unwrap_err();
            let name = samples::tiny(HeaderVersion::V2).network_groups[0].inputs[0]
                .name
                .clone();
            assert!(
                matches!(&err, HefErrorKind::StreamTooLarge { stream, .. } if *stream == name),
                "{err}"
            );
            assert_eq!(err.class(), ErrorClass::LimitExceeded);
            assert!(err.to_string().contains("268435456"), "{err}");
        }
        // One frame at the bound passes; one byte-row more does not.
        let at = |h: &mut Hef, rows| {
            let s = &mut h.network_groups[0].outputs[0];
            let bytes_per_row = 4096 * s.data_type.size() as u32;
            s.shape = image(rows, 4096, 1);
            bytes_per_row
        };
        let mut per_row = 0;
        reread(|h| per_row = at(h, 1)).expect("a small frame");
        let rows = (super::MAX_STREAM_FRAME_BYTES / u64::from(per_row)) as u32;
        reread(|h| {
            at(h, rows);
        })
        .expect("exactly the bound");
        assert!(matches!(
            reread(|h| {
                at(h, rows + 1);
            }),
            Err(HefErrorKind::StreamTooLarge { .. })
        ));
    }

    #[test]
    fn empty_outputs_are_refused() {
        let err = reread(|h| h.network_groups[0].outputs[0].shape = image(4, 0, 8)).unwrap_err();
        assert!(matches!(err, HefErrorKind::EmptyStream { .. }), "{err}");
    }

    #[test]
    fn non_finite_quantisation_and_fps_are_refused() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let err = reread(|h| {
                if let Quantization::Uniform(q) = &mut h.network_groups[0].outputs[0].quant {
                    q.scale = bad;
                }
            })
            .unwrap_err();
            assert!(
                matches!(
                    err,
                    HefErrorKind::NonFinite {
                        field: "qp_scale",
                        ..
                    }
                ),
                "{err}"
            );
            let err = reread(|h| {
                if let Quantization::Uniform(q) = &mut h.network_groups[0].inputs[0].quant {
                    q.zp = bad;
                }
            })
            .unwrap_err();
            assert!(
                matches!(err, HefErrorKind::NonFinite { field: "qp_zp", .. }),
                "{err}"
            );
        }
        for fps in [f64::NAN, f64::INFINITY, -30.0] {
            let err = reread(|h| h.network_groups[0].bottleneck_fps = Some(fps)).unwrap_err();
            assert!(
                matches!(
                    err,
                    HefErrorKind::NonFinite {
                        field: "bottleneck_fps",
                        ..
                    }
                ),
                "{err}"
            );
        }
        reread(|h| h.network_groups[0].bottleneck_fps = Some(30.0)).expect("a stated rate");
    }
}

//! A narrow stand-in for the device half, for the simulator's reference ONNX.
//!
//! The simulator runs a graph's reference ONNX on the CPU so that its outputs are
//! features a decoder can read. The device half of the keypoint model is the ViT plus
//! both C2f projectors ([`VitSpec`]); the stand-in is that graph at a small width (the
//! projectors keep their real 128/256 channels), wrapped to the device's stream layout:
//! input `image` (1, side, side, 3) NHWC, outputs `features` and `cross_attn_features`
//! (1, g, g, 256) NHWC, named like the HEF's streams so that the simulator pairs them
//! by name. Weights are deterministic random values: the outputs exercise the chain, not
//! accuracy.

use tract_onnx::pb;

use super::builder::{encode, value_info};
use super::vit::{SpecError, VitSpec};
use crate::decode::{Split, PATCH};

/// The stand-in's ViT: real patch, layers, taps and projectors, a narrow width.
pub fn stand_in_spec(side: usize) -> VitSpec {
    VitSpec {
        embed: 32,
        heads: 2,
        mlp: 64,
        ..VitSpec::rfdetr_keypoint(side)
    }
}

/// The stand-in device half at `side` as ONNX bytes (see the module docs).
///
/// # Errors
/// [`SpecError`] when `side` is not a multiple of the patch.
pub fn stand_in_onnx(side: usize) -> Result<Vec<u8>, SpecError> {
    let mut model = stand_in_spec(side).build()?;
    let graph = model
        .graph
        .as_mut()
        .expect("the builder always makes a graph");
    to_device_layout(graph, side);
    Ok(encode(&model))
}

/// Feeds the NCHW graph from an NHWC `image` and gives its projector outputs back
/// NHWC under the design split's names.
fn to_device_layout(graph: &mut pb::GraphProto, side: usize) {
    const NCHW: &str = "image.nchw";
    for node in &mut graph.node {
        for input in &mut node.input {
            if input == "image" {
                NCHW.clone_into(input);
            }
        }
    }
    graph.input[0] = value_info("image", &[1.into(), side.into(), side.into(), 3.into()]);
    let mut nodes = vec![transpose("image", NCHW, [0, 3, 1, 2])];
    let projected: Vec<String> = graph.output.iter().map(|o| o.name.clone()).collect();
    graph.output.clear();
    let g = side / PATCH as usize;
    for (from, name) in projected.iter().zip(Split::Design.input_names()) {
        graph.node.push(transpose(from, name, [0, 2, 3, 1]));
        graph.output.push(value_info(
            name,
            &[
                1.into(),
                g.into(),
                g.into(),
                Split::Design.channels().into(),
            ],
        ));
    }
    nodes.append(&mut graph.node);
    graph.node = nodes;
}

fn transpose(from: &str, to: &str, perm: [i64; 4]) -> pb::NodeProto {
    pb::NodeProto {
        name: format!("{to}.transpose"),
        op_type: "Transpose".into(),
        input: vec![from.into()],
        output: vec![to.into()],
        attribute: vec![pb::AttributeProto {
            name: "perm".into(),
            r#type: pb::attribute_proto::AttributeType::Ints as i32,
            ints: perm.to_vec(),
            ..Default::default()
        }],
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use tract_onnx::prelude::*;

    use super::*;

    #[test]
    fn the_stand_in_has_the_device_streams_and_reads_its_image() {
        let bytes = stand_in_onnx(288).unwrap();
        let model = tract_onnx::onnx()
            .model_for_read(&mut std::io::Cursor::new(&bytes))
            .unwrap()
            .into_optimized()
            .unwrap();
        let names: Vec<String> = model
            .output_outlets()
            .unwrap()
            .iter()
            .map(|o| model.outlet_label(*o).unwrap_or_default().to_owned())
            .collect();
        assert_eq!(names, ["features", "cross_attn_features"]);
        let plan = model.into_runnable().unwrap();
        let run = |seed: u32| {
            let pixels: Vec<f32> = (0..288 * 288 * 3)
                .map(|i| ((i as u32 * 31 + seed) % 256) as f32 / 255.0)
                .collect();
            let image = Tensor::from_shape(&[1, 288, 288, 3], &pixels).unwrap();
            plan.run(tvec!(image.into_tvalue())).unwrap()
        };
        let a = run(0);
        assert_eq!(a[0].shape(), &[1, 24, 24, 256]);
        assert_eq!(a[1].shape(), &[1, 24, 24, 256]);
        // The two projectors have their own weights, and the image matters.
        let f = |t: &TValue| {
            t.to_plain_array_view::<f32>()
                .unwrap()
                .iter()
                .copied()
                .collect::<Vec<f32>>()
        };
        assert_ne!(f(&a[0]), f(&a[1]));
        assert_ne!(f(&a[0]), f(&run(7)[0]));
        // The same bytes every time.
        assert_eq!(bytes, stand_in_onnx(288).unwrap());
    }
}

//! Which HEF output feeds which decoder input: matched by name, never by position or shape.
//!
//! Every map of a split has the same shape (two (g, g, 256) maps, or four (g, g, 384)
//! taps), and a compiler is free to order a HEF's outputs as it likes, so position and
//! shape cannot tell the maps apart. A HEF output named `backbone_288/features` feeds
//! the decoder input `features`: the last component of the stream name is the input's
//! name. Outputs named otherwise are mapped explicitly under the rig's `[graph.inputs]`
//! (`"<HEF output>" = "<decoder input>"`). Anything left unmatched on either side is an
//! error that lists both sides with their shapes; there is no fallback to position.

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

use super::input::specs_text;
use super::{MapSpec, Split};

/// One output map of the device half, as its HEF describes it (NHWC on the device).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceOutput {
    /// The stream (vstream) name, `<network group>/<name>`.
    pub stream: String,
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Channels.
    pub channels: usize,
}

impl DeviceOutput {
    /// The last component of the stream name, the name a decoder input must carry.
    pub fn short_name(&self) -> &str {
        hef::layer_name(&self.stream)
    }

    /// Whether this output has the elements of decoder input `map`: NHWC (g, g, C)
    /// against NCHW (1, C, g, g).
    fn fits(&self, map: &MapSpec) -> bool {
        map.shape == [1, self.channels, self.height, self.width]
    }
}

impl fmt::Display for DeviceOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}, {}, {})",
            self.stream, self.height, self.width, self.channels
        )
    }
}

fn outputs_text(outputs: &[DeviceOutput]) -> String {
    let parts: Vec<String> = outputs.iter().map(DeviceOutput::to_string).collect();
    parts.join(", ")
}

/// The files and rig key a pairing is made for, named by its errors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingSides {
    /// The HEF whose outputs are paired.
    pub hef: PathBuf,
    /// The decoder ONNX whose inputs are paired.
    pub onnx: PathBuf,
    /// The rig key that maps names explicitly, e.g. `graph[0].inputs`.
    pub key: String,
}

/// One output feeding one input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pair {
    /// Index of the output among the HEF's outputs.
    pub output: usize,
    /// The output.
    pub from: DeviceOutput,
    /// The decoder input it feeds.
    pub to: MapSpec,
    /// Whether `[graph.inputs]` named this pair (rather than equal names).
    pub explicit: bool,
}

/// Errors pairing HEF outputs with decoder inputs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PairingError {
    /// A `[graph.inputs]` entry names an output or input that does not exist.
    #[error(
        "{key}.\"{from}\" = \"{to}\": {problem}; the HEF {} returns {}; the decoder {} reads {}",
        hef.display(), outputs_text(outputs), onnx.display(), specs_text(inputs)
    )]
    Explicit {
        key: String,
        from: String,
        to: String,
        problem: String,
        hef: PathBuf,
        onnx: PathBuf,
        outputs: Vec<DeviceOutput>,
        inputs: Vec<MapSpec>,
    },
    /// Outputs or inputs left without a partner.
    #[error(
        "the outputs of {} and the inputs of {} do not pair by name: unmatched outputs [{}], \
         unmatched inputs [{}]; the HEF returns {}; the decoder reads {}.{} \
         Map other names under [graph.inputs] (rig key {key}), e.g. \"{example_from}\" = \"{example_to}\"",
        hef.display(), onnx.display(), outputs_text(unmatched_outputs), specs_text(unmatched_inputs),
        outputs_text(outputs), specs_text(inputs), split_hint(*hef_split, *onnx_split),
    )]
    Unmatched {
        key: String,
        hef: PathBuf,
        onnx: PathBuf,
        outputs: Vec<DeviceOutput>,
        inputs: Vec<MapSpec>,
        unmatched_outputs: Vec<DeviceOutput>,
        unmatched_inputs: Vec<MapSpec>,
        hef_split: Option<Split>,
        onnx_split: Option<Split>,
        example_from: String,
        example_to: String,
    },
    /// A pair whose shapes differ: another grid (input side) or another channel count.
    #[error(
        "{} output {from} cannot feed {} input {to}: expected the output (g, g, C) of an \
         input (1, C, g, g); the HEF returns {}; the decoder reads {}; the HEF and the decoder \
         are built for different grids or splits (pairs are named under [graph.inputs], rig key {key})",
        hef.display(), onnx.display(), outputs_text(outputs), specs_text(inputs)
    )]
    Shape {
        key: String,
        hef: PathBuf,
        onnx: PathBuf,
        from: DeviceOutput,
        to: MapSpec,
        outputs: Vec<DeviceOutput>,
        inputs: Vec<MapSpec>,
    },
}

fn split_hint(hef: Option<Split>, onnx: Option<Split>) -> String {
    match (hef, onnx) {
        (Some(h), Some(o)) if h != o => format!(
            " The HEF is built for the {}; the decoder for the {}: use a decoder of the HEF's split.",
            h.describe(),
            o.describe()
        ),
        _ => String::new(),
    }
}

/// The outputs of one HEF matched to the inputs of one decoder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pairing {
    /// One pair per decoder input, in the decoder's input order.
    pairs: Vec<Pair>,
    split: Option<Split>,
}

impl Pairing {
    /// Matches `outputs` to `inputs` by name, after the explicit entries of
    /// `explicit` (HEF output name, full or last component, to decoder input name).
    ///
    /// # Errors
    /// [`PairingError`] naming the HEF, the ONNX, both lists with shapes and the
    /// `[graph.inputs]` key that would fix it (boxed: it carries both lists).
    pub fn by_name(
        sides: &PairingSides,
        outputs: &[DeviceOutput],
        inputs: &[MapSpec],
        explicit: &BTreeMap<String, String>,
    ) -> Result<Self, Box<PairingError>> {
        let mut source: Vec<Option<(usize, bool)>> = vec![None; inputs.len()];
        let mut used = vec![false; outputs.len()];
        let explicit_err = |from: &str, to: &str, problem: String| {
            Box::new(PairingError::Explicit {
                key: sides.key.clone(),
                from: from.to_owned(),
                to: to.to_owned(),
                problem,
                hef: sides.hef.clone(),
                onnx: sides.onnx.clone(),
                outputs: outputs.to_vec(),
                inputs: inputs.to_vec(),
            })
        };
        for (from, to) in explicit {
            let o = outputs
                .iter()
                .position(|o| o.stream == *from || o.short_name() == from)
                .ok_or_else(|| explicit_err(from, to, "the HEF has no such output".into()))?;
            let i = inputs
                .iter()
                .position(|m| m.name == *to)
                .ok_or_else(|| explicit_err(from, to, "the decoder has no such input".into()))?;
            if used[o] || source[i].is_some() {
                return Err(explicit_err(
                    from,
                    to,
                    "an output or input named twice".into(),
                ));
            }
            used[o] = true;
            source[i] = Some((o, true));
        }
        for (o, output) in outputs.iter().enumerate() {
            if used[o] {
                continue;
            }
            let name = output.short_name();
            if let Some(i) = inputs.iter().position(|m| m.name == name) {
                if source[i].is_none() {
                    used[o] = true;
                    source[i] = Some((o, false));
                }
            }
        }
        let unmatched_outputs: Vec<DeviceOutput> = outputs
            .iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|(o, _)| o.clone())
            .collect();
        let unmatched_inputs: Vec<MapSpec> = inputs
            .iter()
            .zip(&source)
            .filter(|(_, s)| s.is_none())
            .map(|(m, _)| m.clone())
            .collect();
        if !unmatched_outputs.is_empty() || !unmatched_inputs.is_empty() {
            let short: Vec<&str> = outputs.iter().map(DeviceOutput::short_name).collect();
            let names: Vec<&str> = inputs.iter().map(|m| m.name.as_str()).collect();
            return Err(Box::new(PairingError::Unmatched {
                key: sides.key.clone(),
                hef: sides.hef.clone(),
                onnx: sides.onnx.clone(),
                outputs: outputs.to_vec(),
                inputs: inputs.to_vec(),
                example_from: unmatched_outputs
                    .first()
                    .map_or("<output>".into(), |o| o.stream.clone()),
                example_to: unmatched_inputs
                    .first()
                    .map_or("<input>".into(), |m| m.name.clone()),
                unmatched_outputs,
                unmatched_inputs,
                hef_split: Split::recognise(&short),
                onnx_split: Split::recognise(&names),
            }));
        }
        let mut pairs = Vec::with_capacity(inputs.len());
        for (to, s) in inputs.iter().zip(source) {
            let (output, explicit) = s.expect("every input is matched");
            let from = &outputs[output];
            if !from.fits(to) {
                return Err(Box::new(PairingError::Shape {
                    key: sides.key.clone(),
                    hef: sides.hef.clone(),
                    onnx: sides.onnx.clone(),
                    from: from.clone(),
                    to: to.clone(),
                    outputs: outputs.to_vec(),
                    inputs: inputs.to_vec(),
                }));
            }
            pairs.push(Pair {
                output,
                from: from.clone(),
                to: to.clone(),
                explicit,
            });
        }
        let names: Vec<&str> = inputs.iter().map(|m| m.name.as_str()).collect();
        Ok(Self {
            pairs,
            split: Split::recognise(&names),
        })
    }

    /// The pairs, one per decoder input, in the decoder's input order.
    pub fn pairs(&self) -> &[Pair] {
        &self.pairs
    }

    /// The split the decoder is built for, when its input names are a known split.
    pub fn split(&self) -> Option<Split> {
        self.split
    }

    /// The split in words, for reports: a known split, or "custom inputs".
    pub fn split_text(&self) -> &'static str {
        self.split.map_or(
            "custom inputs, paired through [graph.inputs]",
            Split::describe,
        )
    }

    /// One line per pair, `stream (g, g, C) -> input (1, C, g, g)`, for reports.
    pub fn lines(&self) -> Vec<String> {
        self.pairs
            .iter()
            .map(|p| {
                let how = if p.explicit { " ([graph.inputs])" } else { "" };
                format!("{} -> {}{how}", p.from, p.to)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests;

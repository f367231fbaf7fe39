//! What ran: the rig, device, decoder and body model, and notes on how to
//! read the figures of this run.

use crate::npu::BackendKind;
use crate::rig::config::KeypointsFrom;

use super::schema::WhatRan;
use super::{assumptions, RunFacts};

/// What ran, with `switching` the switching mode as the report names it.
pub(super) fn what_ran(f: &RunFacts<'_>, switching: &str) -> WhatRan {
    let rig = f.rig;
    let demo_keypoints = match rig.body.keypoints {
        KeypointsFrom::GroundTruth => true,
        KeypointsFrom::Decoder => false,
    };
    WhatRan {
        rig: f.origin.clone(),
        ran_on: f.device.ran_on(),
        simulator_clock: f.device.sim_profile().map(|p| p.clock.name().to_string()),
        npu_outputs: f
            .device
            .sim_profile()
            .map_or("device", |p| {
                if p.references.is_empty() {
                    "simulator: synthetic deterministic outputs"
                } else {
                    "simulator: reference ONNX, quantised per the HEF"
                }
            })
            .to_owned(),
        decoder: if f.options.pipeline_only {
            "skipped".into()
        } else {
            rig.decoder.engine.key().to_owned()
        },
        decoder_threads: rig.decoder.threads,
        fit_keypoints: if demo_keypoints {
            format!("ground truth + {} px Gaussian noise", rig.body.noise_px)
        } else {
            "decoder".into()
        },
        body_model: f.model.into(),
        switching: switching.to_owned(),
        notes: notes(f, demo_keypoints),
        assumed: assumptions(f.device),
    }
}

/// What a reader must know to read this run's figures.
fn notes(f: &RunFacts<'_>, demo_keypoints: bool) -> Vec<String> {
    let mut notes = Vec::new();
    if demo_keypoints {
        notes.push(format!(
            "the fit takes the synthetic scene's 2D keypoints with {} px noise, not the decoder's: the decoder runs for real on the NPU features (its cost is real) but its weights are random",
            f.rig.body.noise_px
        ));
    }
    if f.options.pipeline_only {
        notes.push("pipeline-only run: the decoder and the fit were skipped".into());
    }
    if let Some(d) = f.options.fit_delay {
        notes.push(format!(
            "a delay of {} ms per view was added to the fit stage on purpose",
            d.as_secs_f64() * 1e3
        ));
    }
    if f.device.backend() == BackendKind::Sim {
        notes.push("device figures (device fps, switches, busy, NPU stage latency) are modelled by the simulator; host CPU, queue, decode, sync, fit latencies and camera rates are measured".into());
    }
    notes
}

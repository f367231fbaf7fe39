//! Simulated VDevices and infer models: opening a device by id, reading
//! HEFs, and turning a model's settings into what the device runs.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use hef::{ErrorClass, Hef, NetworkGroup};

use super::core::{Core, Fail, MAX_NETWORK_GROUPS};
use super::model_spec::{ModelSpec, OpsSource, StreamSpec};
use super::registry;
use super::status::*;
use super::time_base::TimeBase;
use super::SimProfile;

/// An open simulated device.
pub(crate) struct SimVDevice {
    pub core: Arc<Core>,
    pub profile: SimProfile,
}

impl SimVDevice {
    /// Opens the device `ids[0]` (the default device when empty) for a
    /// VDevice of `group` (HailoRT's "UNIQUE" when `None`).
    ///
    /// A device held by another VDevice answers as HailoRT 5.2.0 does: the
    /// card's server gives `HAILO_DEVICE_IN_USE`, after waiting for the
    /// holder when the client is "UNIQUE" (`hailort_server.cpp`); a client
    /// that named no device then tries the next one and, with none left,
    /// answers `HAILO_OUT_OF_PHYSICAL_DEVICES`
    /// (`vdevice_hrpc_client.cpp`, `create_available_vdevice`).
    pub fn open(
        ids: &[String],
        round_robin: bool,
        group: Option<&str>,
    ) -> Result<SimVDevice, Fail> {
        if ids.len() > 1 {
            return Err((
                HAILO_OUT_OF_PHYSICAL_DEVICES,
                format!(
                    "a Hailo-10H VDevice takes one device, {} ids given",
                    ids.len()
                ),
            ));
        }
        let group = group.unwrap_or(registry::UNIQUE_GROUP);
        let id = ids
            .first()
            .cloned()
            .unwrap_or_else(|| registry::DEFAULT_ID.to_string());
        let profile = registry::profile(&id).ok_or_else(|| {
            (
                HAILO_NOT_FOUND,
                format!("no simulated device with id '{id}'"),
            )
        })?;
        let modelled_wait = Duration::from_secs_f64(profile.device.vdevice_wait_s.value.max(0.0));
        let wait = matches!(profile.clock, TimeBase::RealTime).then_some(modelled_wait);
        let core = registry::claim(&id, group, wait, || {
            Core::start(
                id.clone(),
                profile.device.clone(),
                profile.clock.clone(),
                profile.faults.clone(),
                round_robin,
                profile.async_queue_size,
            )
        })
        .map_err(|held| in_use(&id, group, &held, modelled_wait, ids.is_empty()))?;
        Ok(SimVDevice { core, profile })
    }
}

/// The refusal of a held device, in HailoRT's status.
fn in_use(id: &str, group: &str, held: &registry::Held, wait: Duration, any_device: bool) -> Fail {
    let why = if group == registry::UNIQUE_GROUP {
        format!(
            "a \"UNIQUE\" client waits {:.1} s for the holder (here {:.1} s: the wait is modelled, \
             not slept, on a virtual clock)",
            wait.as_secs_f64(),
            held.waited.as_secs_f64()
        )
    } else {
        format!("group id \"{group}\" differs from the holder's")
    };
    let held_text = format!(
        "simulated device '{id}' is held by a VDevice of group \"{}\"; {why}",
        held.group
    );
    if any_device {
        (
            HAILO_OUT_OF_PHYSICAL_DEVICES,
            format!("no free device: {held_text}"),
        )
    } else {
        (HAILO_DEVICE_IN_USE, held_text)
    }
}

impl Drop for SimVDevice {
    fn drop(&mut self) {
        super::queue::note_release("a device");
        if registry::leave(&self.core.id) {
            self.core.stop();
            registry::close(&self.core.id);
        }
    }
}

/// A model's settings before configure.
pub(crate) struct Settings {
    pub batch: u16,
    /// `hailo_latency_measurement_flags_t`, applied at configure.
    pub latency_flags: u32,
    pub inputs: Vec<StreamSpec>,
    pub outputs: Vec<StreamSpec>,
}

/// A simulated InferModel: one network group of a HEF.
pub(crate) struct SimInferModel {
    pub device: Arc<SimVDevice>,
    pub hef: Hef,
    pub group: NetworkGroup,
    pub origin: String,
    settings: Mutex<Settings>,
}

impl SimInferModel {
    pub fn new(device: Arc<SimVDevice>, hef: Hef, origin: &str) -> Result<SimInferModel, Fail> {
        if hef.network_groups.len() > MAX_NETWORK_GROUPS {
            return Err((
                HAILO_INVALID_HEF,
                format!(
                    "{origin}: {} network groups, HailoRT supports at most {MAX_NETWORK_GROUPS}",
                    hef.network_groups.len()
                ),
            ));
        }
        let group = hef
            .network_groups
            .first()
            .cloned()
            .ok_or_else(|| (HAILO_INVALID_HEF, format!("{origin}: no network group")))?;
        if hef.network_groups.len() > 1 {
            log::warn!(
                "{origin}: {} network groups; the model uses '{}'",
                hef.network_groups.len(),
                group.name
            );
        }
        let settings = Settings {
            batch: 0,
            latency_flags: 0,
            inputs: group.inputs.iter().map(StreamSpec::from_hef).collect(),
            outputs: group.outputs.iter().map(StreamSpec::from_hef).collect(),
        };
        Ok(SimInferModel {
            device,
            hef,
            group,
            origin: origin.to_string(),
            settings: Mutex::new(settings),
        })
    }

    pub fn settings(&self) -> MutexGuard<'_, Settings> {
        self.settings.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Reads a HEF, answering with HailoRT's status for each kind of failure.
pub(crate) fn parse_hef(bytes: &[u8], origin: &str) -> Result<Hef, Fail> {
    Hef::from_bytes(bytes).map_err(|e| {
        let status = match e.class() {
            ErrorClass::NotSupported => HAILO_HEF_NOT_SUPPORTED,
            ErrorClass::Corrupted => HAILO_HEF_FILE_CORRUPTED,
            ErrorClass::NotCompatible => HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE,
            ErrorClass::LimitExceeded => HAILO_INVALID_HEF,
            ErrorClass::Io => HAILO_OPEN_FILE_FAILURE,
            _ => HAILO_INVALID_HEF,
        };
        (status, format!("{origin}: {e}"))
    })
}

/// The configured form of a model: checks the chip, fixes the batch and
/// formats, and finds the operations per frame.
pub(crate) fn build_spec(model: &SimInferModel) -> Result<ModelSpec, Fail> {
    let chip = model.device.core.profile.chip;
    if !model.hef.hw_arch.runs_on(chip) {
        return Err((
            HAILO_HEF_NOT_COMPATIBLE_WITH_DEVICE,
            format!(
                "{}: HEF hw_arch {} runs on {}, the device is a {chip}",
                model.origin,
                model.hef.hw_arch.0,
                model
                    .hef
                    .compatible_chips()
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ));
    }
    let settings = model.settings();
    let name = model.group.name.clone();
    let profile = &model.device.profile;
    let reference = profile.references.get(&name).cloned();
    let device = &model.device.core.profile;
    let batch = settings.batch.max(1);
    let utilisation_by_burst = device
        .utilisation_by_burst(batch)
        .map_err(|e| (HAILO_INVALID_ARGUMENT, format!("{}: {e}", model.origin)))?;
    let (ops, source) = if let Some(ops) = model.group.ops_per_frame {
        (ops as f64, OpsSource::Hef)
    } else if let Some(ops) = reference.as_ref().and_then(|r| r.ops_per_frame()) {
        (ops as f64, OpsSource::ReferenceOnnx)
    } else if let Some(&ops) = profile.ops_per_frame.get(&name) {
        (ops as f64, OpsSource::Given)
    } else if let Some(fps) = model.group.bottleneck_fps.filter(|f| *f > 0.0) {
        (
            device.peak_ops_per_s() * utilisation_by_burst[0] / fps,
            OpsSource::BottleneckFps,
        )
    } else {
        log::warn!(
            "{}: no ops per frame for '{name}'; compute time is zero",
            model.origin
        );
        (0.0, OpsSource::Unknown)
    };
    Ok(ModelSpec {
        name,
        batch,
        inputs: settings.inputs.clone(),
        outputs: settings.outputs.clone(),
        ops_per_frame: ops,
        ops_source: source,
        reference,
        utilisation_by_burst,
    })
}

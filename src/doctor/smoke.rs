//! `doctor --hef FILE`: open a device, load and configure the HEF, run one
//! frame, through the same safe API the runtime uses.
//!
//! Over PCIe a Hailo-10H runs its own HailoRT server; the host's libhailort
//! is an hRPC client of it. Only a configure and a frame that comes back
//! prove that the server is up: the node and the driver can be fine while it
//! is not.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::npu::{Device, NpuError, RanOn};

use super::Check;

/// How long the one frame may take.
pub const FRAME_TIMEOUT: Duration = Duration::from_secs(10);

/// The step of the smoke test that failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SmokeError {
    #[error("opening the device: {0}")]
    Open(#[source] NpuError),
    #[error("{path}: loading the HEF on {backend}: {source}")]
    Load {
        path: PathBuf,
        backend: String,
        source: NpuError,
    },
    #[error("{path}: configuring on {backend}: {source}")]
    Configure {
        path: PathBuf,
        backend: String,
        source: NpuError,
    },
    #[error("{path}: running one frame on {backend}: {source}")]
    Run {
        path: PathBuf,
        backend: String,
        source: NpuError,
    },
}

/// What one smoke test did.
#[derive(Debug, Clone, Serialize)]
pub struct SmokeOutcome {
    /// The HEF.
    pub hef: PathBuf,
    /// Which backend ran, on which device, and why the simulator ran if a
    /// part is present.
    pub ran_on: RanOn,
    /// Network group of the HEF.
    pub network_group: String,
    /// Wall time of the frame, submit to completion.
    pub frame_ms: f64,
}

/// Opens `device` with `open`, loads and configures `hef`, runs one frame
/// of zeros and waits up to [`FRAME_TIMEOUT`] for it.
///
/// # Errors
/// [`SmokeError`] naming the step, the HEF and the backend.
pub fn smoke_test(
    open: impl FnOnce() -> Result<Device, NpuError>,
    hef: &Path,
) -> Result<SmokeOutcome, SmokeError> {
    let device = open().map_err(SmokeError::Open)?;
    let ran_on = device.ran_on();
    let at = |source| (hef.to_path_buf(), ran_on.device.clone(), source);
    let model = device.load_model_file(hef).map_err(|e| {
        let (path, backend, source) = at(e);
        SmokeError::Load {
            path,
            backend,
            source,
        }
    })?;
    let network_group = model.name().to_owned();
    let configured = model.configure().map_err(|e| {
        let (path, backend, source) = at(e);
        SmokeError::Configure {
            path,
            backend,
            source,
        }
    })?;
    let run = || -> Result<f64, NpuError> {
        let bindings = configured.bindings()?;
        let start = Instant::now();
        let mut job = configured.run_async(bindings)?;
        let done = job.wait(FRAME_TIMEOUT)?;
        done.status?;
        Ok(start.elapsed().as_secs_f64() * 1e3)
    };
    let frame_ms = run().map_err(|e| {
        let (path, backend, source) = at(e);
        SmokeError::Run {
            path,
            backend,
            source,
        }
    })?;
    Ok(SmokeOutcome {
        hef: hef.to_path_buf(),
        ran_on,
        network_group,
        frame_ms,
    })
}

/// `smoke`: the result of [`smoke_test`] as a row of the table.
pub fn check(result: &Result<SmokeOutcome, SmokeError>) -> Check {
    const ID: &str = "smoke";
    match result {
        Ok(o) => {
            let detail = format!(
                "{}: open, configure ({}), 1 frame in {:.1} ms on {}",
                o.hef.display(),
                o.network_group,
                o.frame_ms,
                o.ran_on.device
            );
            match &o.ran_on.backend_warning {
                Some(w) => Check::warn(
                    ID,
                    format!("{detail}; NOT on the part: {w}"),
                    format!(
                        "`{}`, then run doctor again",
                        crate::npu::probe::BUILD_WITH_HAILORT
                    ),
                ),
                None => Check::ok(ID, detail),
            }
        }
        Err(e) => {
            let fix = match e {
                SmokeError::Open(_) => {
                    "fix the failing hailort.* / pcie.* / net.* rows above; over PCIe the card boots \
                     Linux and runs hailort_server: wait for it after power-up"
                }
                SmokeError::Load { .. } => {
                    "check that the HEF was compiled for this part (hailo10h)"
                }
                _ => {
                    "the card's HailoRT server did not configure or run the model: \
                     `hailortcli run2 -m raw set-net FILE` on the host shows HailoRT's own error"
                }
            };
            Check::fail(ID, e.to_string(), fix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::Verdict;
    use crate::fixture;
    use crate::npu::sim::SimProfile;
    use crate::npu::Backend;

    #[test]
    fn one_frame_runs_on_the_simulator_and_says_so() {
        let backend = Backend::Sim(SimProfile::default());
        let r = smoke_test(
            || Device::open(backend.clone()),
            &fixture("backbone_288.hef"),
        );
        let c = check(&r);
        assert_eq!(c.verdict, Verdict::Ok, "{}", c.detail);
        assert!(
            c.detail.contains("1 frame in") && c.detail.contains("simulator"),
            "{}",
            c.detail
        );
    }

    #[test]
    fn each_failing_step_is_named() {
        let backend = Backend::Sim(SimProfile::default());
        let missing = fixture("no_such.hef");
        let r = smoke_test(|| Device::open(backend.clone()), &missing);
        assert!(matches!(r, Err(SmokeError::Load { .. })));
        assert_eq!(check(&r).verdict, Verdict::Fail);
        let stub =
            || Device::open_on_table(crate::npu::Api::stub(), backend.clone(), Default::default());
        let r = smoke_test(stub, &fixture("backbone_288.hef"));
        let c = check(&r);
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(c.detail.contains("opening the device"), "{}", c.detail);
    }
}

//! The run loop: configure the graphs, keep them fed in their traffic ratio, collect
//! completions with their host latency, then read the device's figures.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crossbeam_channel::Select;

use super::telemetry::{self, Window};
use super::{
    GraphMeasurement, GraphRun, HostCpu, HostLatency, MeasureError, RunConfig, RunMeasurement,
};
use crate::geom::time::ThreadCpu;
use crate::metrics::figure::{Assumption, Figure, Provenance, Unit};
use crate::metrics::ops::hef::{read_hef, HefGraph};
use crate::metrics::stats::LatencyStats;
use crate::metrics::utilisation::compute_share;
use crate::npu::{BackendKind, Bindings, ConfiguredModel, Device, NpuError};

/// How long the loop waits for any completion before calling the run stalled.
pub(super) const STALL: Duration = Duration::from_secs(30);

/// Frames kept in flight per graph, in batches of its weight: enough that the device never
/// waits for the host between bursts, within the model's async queue (see [`in_flight_cap`]).
const IN_FLIGHT_PER_BATCH: usize = 4;

/// Most frames of one graph in flight: [`IN_FLIGHT_PER_BATCH`] batches of its weight, but
/// never more than the configured model's async queue holds (HailoRT's card answers one more
/// with `HAILO_QUEUE_IS_FULL` and shuts the model down).
fn in_flight_cap(weight: u32, batch: u16, queue: usize) -> usize {
    let wanted = (IN_FLIGHT_PER_BATCH * weight as usize * usize::from(batch.max(1))).max(4);
    wanted.min(queue).max(1)
}

/// Most host latency samples kept per graph for CDF plots.
const MAX_SAMPLES: usize = 100_000;

fn npu(what: impl FnOnce() -> String) -> impl FnOnce(NpuError) -> MeasureError {
    move |source| MeasureError::Npu {
        what: what(),
        source,
    }
}

/// One configured graph and its bookkeeping.
pub(super) struct Fed {
    pub(super) hef: HefGraph,
    weight: u32,
    pub(super) cm: ConfiguredModel,
    ops: Figure,
    ops_source: String,
    pub(super) cap: usize,
    pub(super) in_flight: usize,
    done: u64,
    spare: Vec<Bindings>,
    submitted_at: HashMap<u64, Instant>,
    latency: LatencyStats,
    samples_ms: Vec<f64>,
    /// Thread CPU spent submitting frames (bindings included) and handling completions.
    submit_cpu: Duration,
    complete_cpu: Duration,
}

impl Fed {
    pub(super) fn submit(&mut self) -> Result<(), MeasureError> {
        let cpu = ThreadCpu::start();
        let bindings = match self.spare.pop() {
            Some(b) => b,
            None => self
                .cm
                .bindings()
                .map_err(npu(|| format!("creating bindings of {}", self.hef.name)))?,
        };
        let at = Instant::now();
        let id = self
            .cm
            .submit(bindings)
            .map_err(npu(|| format!("submitting a frame of {}", self.hef.name)))?;
        self.submitted_at.insert(id, at);
        self.in_flight += 1;
        self.submit_cpu += cpu.elapsed().unwrap_or_default();
        Ok(())
    }

    pub(super) fn complete(&mut self, c: crate::npu::Completion) -> Result<(), MeasureError> {
        let cpu = ThreadCpu::start();
        let now = Instant::now();
        c.status
            .map_err(npu(|| format!("frame {} of {}", c.job, self.hef.name)))?;
        if let Some(at) = self.submitted_at.remove(&c.job) {
            let latency = now - at;
            self.latency.record(latency);
            if self.samples_ms.len() < MAX_SAMPLES {
                self.samples_ms.push(latency.as_secs_f64() * 1e3);
            }
        }
        self.in_flight -= 1;
        self.done += 1;
        self.spare.push(c.bindings);
        self.complete_cpu += cpu.elapsed().unwrap_or_default();
        Ok(())
    }
}

/// Waits for at least one completion of any graph and handles every one that is ready.
fn collect(fed: &mut [Fed]) -> Result<(), MeasureError> {
    {
        let mut select = Select::new();
        for f in fed.iter() {
            select.recv(f.cm.completions());
        }
        if select.ready_timeout(STALL).is_err() {
            let stuck = fed.iter().max_by_key(|f| f.in_flight);
            return Err(MeasureError::Stalled {
                graph: stuck.map_or_else(String::new, |f| f.hef.name.clone()),
                missing: stuck.map_or(0, |f| f.in_flight),
                timeout: STALL,
            });
        }
    }
    for f in fed.iter_mut() {
        while let Ok(c) = f.cm.completions().try_recv() {
            f.complete(c)?;
        }
    }
    Ok(())
}

pub(super) fn load(
    device: &Device,
    run: &GraphRun,
    batch: u16,
    config: &RunConfig,
) -> Result<Fed, MeasureError> {
    let graphs = read_hef(&run.hef)?;
    let hef = graphs
        .into_iter()
        .next()
        .ok_or_else(|| MeasureError::Config(format!("{}: no network group", run.hef.display())))?;
    let what = |step: &str| format!("{step} {} ({})", hef.name, hef.file);
    let mut model = device
        .load_model_file(&run.hef)
        .map_err(npu(|| what("loading")))?;
    model
        .set_batch_size(batch)
        .map_err(npu(|| what("setting the batch size of")))?;
    let (ops, ops_source) = ops_of(device, &model, &hef, run)?;
    model
        .set_hw_latency_measurement(true)
        .map_err(npu(|| what("asking for hardware latency of")))?;
    let cm = model.configure().map_err(npu(|| what("configuring")))?;
    cm.set_scheduler_threshold(config.threshold)
        .map_err(npu(|| what("setting the scheduler threshold of")))?;
    cm.set_scheduler_timeout(config.timeout)
        .map_err(npu(|| what("setting the scheduler timeout of")))?;
    let weight = run.weight.max(1);
    let queue = cm
        .async_queue_size()
        .map_err(npu(|| what("reading the async queue size of")))?;
    Ok(Fed {
        cap: in_flight_cap(weight, batch, queue),
        hef,
        weight,
        cm,
        ops,
        ops_source,
        in_flight: 0,
        done: 0,
        spare: Vec::new(),
        submitted_at: HashMap::new(),
        latency: LatencyStats::new(),
        samples_ms: Vec::new(),
        submit_cpu: Duration::ZERO,
        complete_cpu: Duration::ZERO,
    })
}

/// Ops per frame: what the backend reports for the loaded graph (HailoRT's
/// `get_computational_ops`, or the simulator's table reading the HEF), else the HEF reader's,
/// else the caller's override.
fn ops_of(
    device: &Device,
    model: &crate::npu::Model,
    hef: &HefGraph,
    run: &GraphRun,
) -> Result<(Figure, String), MeasureError> {
    if let Some(gops) = run.ops_override {
        if !(gops.is_finite() && gops > 0.0) {
            return Err(MeasureError::Config(format!(
                "ops override of {}: {gops} GOPS, expected a positive number",
                hef.file
            )));
        }
        let fig = Figure::modelled(
            gops,
            Unit::Gops,
            [Assumption::new(
                "ops per frame",
                format!("{gops} GOPS, given"),
            )],
        );
        return Ok((fig, "given".into()));
    }
    match model.computational_ops() {
        Ok(ops) if ops > 0 => {
            let gops = ops as f64 / 1e9;
            return Ok(match device.backend() {
                // The count HailoRT reports for the graph loaded on this device.
                BackendKind::HailoRt => (
                    Figure::measured(gops, Unit::Gops, device.device_id()),
                    "HailoRT get_computational_ops".into(),
                ),
                BackendKind::Sim => (
                    Figure::modelled(
                        gops,
                        Unit::Gops,
                        [Assumption::new(
                            "ops per frame",
                            format!("computational_ops of {} in {}", hef.name, hef.file),
                        )],
                    ),
                    "HEF computational_ops (simulator table)".into(),
                ),
            });
        }
        Ok(_) => {}
        Err(err) => log::info!(
            "{}: computational ops not available from the backend: {err}",
            hef.file
        ),
    }
    hef.ops_figure()
        .map(|f| (f, "HEF computational_ops (hef reader)".into()))
        .ok_or_else(|| MeasureError::NoOps {
            file: hef.file.clone(),
            graph: hef.name.clone(),
        })
}

/// Runs `config` on `device` and measures it.
///
/// # Errors
/// [`MeasureError`] naming the HEF, graph and step that failed.
pub fn measure(device: &Device, config: &RunConfig) -> Result<RunMeasurement, MeasureError> {
    if config.graphs.is_empty() {
        return Err(MeasureError::Config("no graph to run".into()));
    }
    if config.batch == 0 {
        return Err(MeasureError::Config(
            "batch size 0, expected at least 1".into(),
        ));
    }
    if config.duration.is_zero() {
        return Err(MeasureError::Config(
            "duration 0, expected a positive time".into(),
        ));
    }
    if device
        .sim_profile()
        .is_some_and(|p| matches!(p.clock, crate::npu::sim::TimeBase::Manual(_)))
    {
        return Err(MeasureError::Config(
            "the simulator's manual clock only moves when its feeder advances it; \
             measure on the virtual or real-time clock"
                .into(),
        ));
    }
    let mut fed = config
        .graphs
        .iter()
        .map(|g| load(device, g, config.batch, config))
        .collect::<Result<Vec<_>, _>>()?;
    let virtual_time = virtual_time(device);
    let cpu = ThreadCpu::start();
    let start = Instant::now();
    let mut rounds = 0u64;
    loop {
        for i in 0..fed.len() {
            for _ in 0..fed[i].weight {
                while fed[i].in_flight >= fed[i].cap {
                    collect(&mut fed)?;
                }
                fed[i].submit()?;
            }
        }
        rounds += 1;
        if rounds.is_multiple_of(8) && elapsed(device, virtual_time, start) >= config.duration {
            break;
        }
    }
    while fed.iter().any(|f| f.in_flight > 0) {
        collect(&mut fed)?;
    }
    let wall = start.elapsed();
    let cpu_time = cpu.elapsed();

    let window = match device.sim_stats() {
        Some(stats) => Window::Sim(stats),
        None => Window::Wall(wall),
    };
    let provenance = telemetry::provenance(device);
    let window_s = window.seconds();
    let frames: u64 = fed.iter().map(|f| f.done).sum();
    let submit_cpu: Duration = fed.iter().map(|f| f.submit_cpu).sum();
    let complete_cpu: Duration = fed.iter().map(|f| f.complete_cpu).sum();
    let graphs = fed
        .into_iter()
        .map(|f| graph_measurement(device, &window, &provenance, f))
        .collect::<Vec<_>>();
    let device_figures = telemetry::device_figures(device, &window, &provenance, &graphs);
    let host_cpu = cpu_time
        .filter(|_| frames > 0 && !wall.is_zero())
        .map(|cpu| {
            let host = Provenance::measured("host (measuring thread)");
            let per_frame = |d: Duration| Figure {
                value: d.as_secs_f64() * 1e3 / frames as f64,
                unit: Unit::Milliseconds,
                provenance: host.clone(),
            };
            HostCpu {
                per_frame: per_frame(cpu),
                submit_per_frame: per_frame(submit_cpu),
                complete_per_frame: per_frame(complete_cpu),
                share_of_wall: Figure {
                    value: cpu.as_secs_f64() / wall.as_secs_f64(),
                    unit: Unit::Fraction,
                    provenance: host,
                },
            }
        });
    Ok(RunMeasurement {
        backend: device.describe(),
        on_device: device.backend() == BackendKind::HailoRt,
        backend_warning: device.backend_warning().map(str::to_owned),
        device_id: device.device_id().to_owned(),
        provenance,
        batch: config.batch,
        threshold: config.threshold,
        timeout_ms: u64::try_from(config.timeout.as_millis()).unwrap_or(u64::MAX),
        window_s,
        graphs,
        device: device_figures,
        host_cpu,
    })
}

/// Whether the run's time is the simulator's device time (its virtual clock) rather than wall
/// time.
pub(super) fn virtual_time(device: &Device) -> bool {
    device
        .sim_profile()
        .is_some_and(|p| !matches!(p.clock, crate::npu::sim::TimeBase::RealTime))
}

/// Time the run has covered: the simulated device's time on a virtual clock, else wall time.
pub(super) fn elapsed(device: &Device, virtual_time: bool, start: Instant) -> Duration {
    if virtual_time {
        if let Some(stats) = device.sim_stats() {
            return Duration::from_nanos(stats.now_ns);
        }
    }
    start.elapsed()
}

fn graph_measurement(
    device: &Device,
    window: &Window,
    provenance: &Provenance,
    mut f: Fed,
) -> GraphMeasurement {
    let frames = window.frames(&f.hef.name).unwrap_or(f.done);
    let fps = Figure {
        value: frames as f64 / window.seconds(),
        unit: Unit::Fps,
        provenance: provenance.clone(),
    };
    let compute = compute_share(&f.ops, &fps, f.hef.precision);
    let hw_latency = telemetry::hw_latency(&f.cm, &f.hef.name, provenance);
    f.samples_ms.sort_by(f64::total_cmp);
    let host_latency = f.latency.summary().map(|summary| HostLatency {
        provenance: telemetry::host_latency_provenance(device, provenance),
        summary,
        samples_ms: f.samples_ms,
    });
    GraphMeasurement {
        name: f.hef.name.clone(),
        file: f.hef.file.clone(),
        side: f.hef.side,
        weight: f.weight,
        precision: f.hef.precision,
        precision_basis: f.hef.precision_basis.clone(),
        ops_per_frame: f.ops,
        ops_source: f.ops_source,
        frames,
        bytes_in_per_frame: f.hef.bytes_in_per_frame,
        bytes_out_per_frame: f.hef.bytes_out_per_frame,
        fps,
        compute,
        hw_latency,
        host_latency,
    }
}

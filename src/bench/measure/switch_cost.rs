//! The time one switch between two graphs costs under the model scheduler, inferred from
//! completion times.
//!
//! HailoRT 5.2.0 traces each activation's duration (`ActivateCoreOpTrace`, written by
//! `HAILO_TRACE=scheduler` to a `.hrtt` file, HailoRT 5.2.0 `vdma_config_core_op.cpp`), but on a
//! Hailo-10H the scheduler runs in `hailort_server` on the card (the client is a
//! `VDeviceHrpcClient`, HailoRT 5.2.0 `vdevice.cpp`), and no header of the library exposes the
//! trace. A client therefore infers the cost from what it sees: completions.
//!
//! The method, on any backend:
//! 1. both graphs are configured on one device with equal batch sizes;
//! 2. the first graph alone: `cycles` bursts of `weight` frames, each burst submitted whole and
//!    waited for, gives the time of one burst `t_a`; the same for the second graph, `t_b`;
//! 3. the two together: `cycles` cycles of one burst of each, each burst waited for before the
//!    other graph's is submitted, so the scheduler has only one graph with frames and must
//!    switch twice per cycle; one cycle takes `t_ab`;
//! 4. one switch costs `(t_ab - t_a - t_b) / 2`: the time missing from compute per switch.
//!
//! A warm-up burst before each phase keeps the first activation out of the timings. The host's
//! round trips are the same in number in the alone phases and in the pair, so they cancel.

use std::time::{Duration, Instant};

use serde::Serialize;

use super::driver::{elapsed, load, virtual_time, Fed, STALL};
use super::{telemetry, GraphRun, MeasureError, RunConfig};
use crate::metrics::figure::{Assumption, Figure, Unit};
use crate::npu::Device;

/// How the switch cost was obtained, as reports name it.
pub const METHOD: &str = "inferred from completion times: each graph alone, then both in \
alternating bursts (two switches per cycle); switch = (pair cycle - burst A - burst B) / 2";

/// What to run to infer the switch cost.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchCostConfig {
    /// The first graph; its weight is the frames of one of its bursts.
    pub first: GraphRun,
    /// The second graph; its weight is the frames of one of its bursts.
    pub second: GraphRun,
    /// Batch size of both graphs (the scheduler needs them equal).
    pub batch: u16,
    /// Bursts per alone phase, and cycles of the pair phase.
    pub cycles: u32,
}

impl SwitchCostConfig {
    /// Two graphs at 3 frames of the first per frame of the second (the rig's traffic), batch 1,
    /// 200 cycles.
    pub fn rig_ratio(first: GraphRun, second: GraphRun) -> Self {
        Self {
            first: first.with_weight(3),
            second: second.with_weight(1),
            batch: 1,
            cycles: 200,
        }
    }
}

/// The inferred switch cost and the timings it rests on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SwitchCost {
    /// How the figure was obtained ([`METHOD`]).
    pub method: String,
    /// The two graphs, first then second.
    pub graphs: [String; 2],
    /// Frames per burst, first then second.
    pub burst_frames: [u32; 2],
    /// Cycles timed in each phase.
    pub cycles: u32,
    /// Time of one burst of the first graph alone, ms.
    pub first_burst: Figure,
    /// Time of one burst of the second graph alone, ms.
    pub second_burst: Figure,
    /// Time of one cycle of both, ms.
    pub pair_cycle: Figure,
    /// The inferred time of one switch, ms (may come out slightly negative from noise on a
    /// real part; it is reported as found).
    pub per_switch: Figure,
    /// The simulator's own per-switch figure, ms, an assumption of its profile (`None` on a
    /// real part).
    pub simulator_assumed: Option<Figure>,
}

/// Infers the switch cost of `config` on `device`.
///
/// # Errors
/// [`MeasureError`] naming the graph and step that failed, or [`MeasureError::Config`] for an
/// impossible configuration (no cycles, a batch of 0, a burst of 0 frames).
pub fn infer_switch_cost(
    device: &Device,
    config: &SwitchCostConfig,
) -> Result<SwitchCost, MeasureError> {
    check(config)?;
    let run = RunConfig {
        graphs: vec![config.first.clone(), config.second.clone()],
        batch: config.batch,
        threshold: 0,
        timeout: Duration::ZERO,
        duration: Duration::from_secs(1),
    };
    let mut fed = run
        .graphs
        .iter()
        .map(|g| load(device, g, config.batch, &run))
        .collect::<Result<Vec<_>, _>>()?;
    let bursts = [config.first.weight, config.second.weight];
    for (f, &frames) in fed.iter().zip(&bursts) {
        // A burst is submitted whole; past the async queue the card would refuse a frame.
        if frames as usize > f.cap {
            return Err(MeasureError::Config(format!(
                "switch cost: {}: a burst of {frames} frames exceeds the {} the model keeps \
                 in flight (its async queue); give a smaller weight",
                f.hef.name, f.cap
            )));
        }
    }
    let clock = Clock::new(device);
    let a = timed(&clock, &mut fed, &[(0, bursts[0])], config.cycles)?;
    let b = timed(&clock, &mut fed, &[(1, bursts[1])], config.cycles)?;
    let ab = timed(
        &clock,
        &mut fed,
        &[(0, bursts[0]), (1, bursts[1])],
        config.cycles,
    )?;
    let per_cycle = |d: Duration| d.as_secs_f64() * 1e3 / f64::from(config.cycles);
    let (ta, tb, tab) = (per_cycle(a), per_cycle(b), per_cycle(ab));
    let provenance = telemetry::provenance(device);
    let ms = |value: f64| Figure {
        value,
        unit: Unit::Milliseconds,
        provenance: provenance.clone(),
    };
    Ok(SwitchCost {
        method: METHOD.to_owned(),
        graphs: [fed[0].hef.name.clone(), fed[1].hef.name.clone()],
        burst_frames: bursts,
        cycles: config.cycles,
        first_burst: ms(ta),
        second_burst: ms(tb),
        pair_cycle: ms(tab),
        per_switch: ms((tab - ta - tb) / 2.0),
        simulator_assumed: simulator_assumed(device),
    })
}

fn check(config: &SwitchCostConfig) -> Result<(), MeasureError> {
    let bad = |what: String| Err(MeasureError::Config(what));
    if config.cycles == 0 {
        return bad("switch cost: 0 cycles, expected at least 1".into());
    }
    if config.batch == 0 {
        return bad("switch cost: batch size 0, expected at least 1".into());
    }
    for g in [&config.first, &config.second] {
        if g.weight == 0 {
            return bad(format!(
                "switch cost: {}: a burst of 0 frames, expected at least 1",
                g.hef.display()
            ));
        }
    }
    Ok(())
}

/// The simulator's assumed switch cost, in ms, labelled as the assumption it is.
fn simulator_assumed(device: &Device) -> Option<Figure> {
    let profile = &device.sim_profile()?.device;
    let s = &profile.switch_cost_s;
    Some(Figure::modelled(
        s.value * 1e3,
        Unit::Milliseconds,
        [Assumption::new(
            "switch cost",
            format!("{} ms ({})", s.value * 1e3, s.source),
        )],
    ))
}

/// The time base of the phases: the simulator's device time on its virtual clock, else the
/// host's wall clock.
struct Clock<'a> {
    device: &'a Device,
    virtual_time: bool,
    start: Instant,
}

impl<'a> Clock<'a> {
    fn new(device: &'a Device) -> Self {
        Self {
            device,
            virtual_time: virtual_time(device),
            start: Instant::now(),
        }
    }

    fn now(&self) -> Duration {
        elapsed(self.device, self.virtual_time, self.start)
    }
}

/// Runs one warm-up cycle, then `cycles` timed cycles of `bursts` (graph index, frames), each
/// burst waited for before the next is submitted; returns the timed cycles' total time.
fn timed(
    clock: &Clock<'_>,
    fed: &mut [Fed],
    bursts: &[(usize, u32)],
    cycles: u32,
) -> Result<Duration, MeasureError> {
    cycle(fed, bursts)?;
    let start = clock.now();
    for _ in 0..cycles {
        cycle(fed, bursts)?;
    }
    Ok(clock.now().saturating_sub(start))
}

fn cycle(fed: &mut [Fed], bursts: &[(usize, u32)]) -> Result<(), MeasureError> {
    for &(i, frames) in bursts {
        let f = &mut fed[i];
        for _ in 0..frames {
            f.submit()?;
        }
        while f.in_flight > 0 {
            let c =
                f.cm.completions()
                    .recv_timeout(STALL)
                    .map_err(|_| MeasureError::Stalled {
                        graph: f.hef.name.clone(),
                        missing: f.in_flight,
                        timeout: STALL,
                    })?;
            f.complete(c)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::npu::sim::{DeviceProfile, SimProfile, TimeBase};
    use crate::npu::Backend;

    const A: &str = "fixtures/backbone_288.hef";
    const B: &str = "fixtures/backbone_432.hef";

    fn infer(profile: DeviceProfile) -> SwitchCost {
        let device = Device::open(Backend::Sim(
            SimProfile::new(profile).with_clock(TimeBase::Virtual),
        ))
        .unwrap();
        let config = SwitchCostConfig {
            cycles: 20,
            ..SwitchCostConfig::rig_ratio(GraphRun::new(A), GraphRun::new(B))
        };
        infer_switch_cost(&device, &config).unwrap()
    }

    #[test]
    fn recovers_the_simulators_assumed_switch_cost() {
        let s = infer(DeviceProfile::hailo10h());
        assert!(
            (s.per_switch.value - 1.0).abs() < 1e-3,
            "{:?}",
            s.per_switch
        );
        assert!(!s.per_switch.provenance.is_measured());
        let assumed = s.simulator_assumed.as_ref().unwrap();
        assert_eq!(assumed.value, 1.0);
        assert!(s.pair_cycle.value > s.first_burst.value + s.second_burst.value);
    }

    #[test]
    fn recovers_an_injected_switch_cost_and_zero() {
        let s = infer(DeviceProfile::hailo10h().with_switch_cost(0.003, "test: 3 ms"));
        assert!(
            (s.per_switch.value - 3.0).abs() < 1e-3,
            "{:?}",
            s.per_switch
        );
        // Negative control: no switch cost, nothing missing from compute.
        let s = infer(DeviceProfile::hailo10h().with_switch_cost(0.0, "test: none"));
        assert!(s.per_switch.value.abs() < 1e-3, "{:?}", s.per_switch);
    }

    #[test]
    fn impossible_configurations_are_refused() {
        let device = Device::open(Backend::Sim(SimProfile::default())).unwrap();
        let mut c = SwitchCostConfig::rig_ratio(GraphRun::new(A), GraphRun::new(B));
        c.cycles = 0;
        let err = infer_switch_cost(&device, &c).unwrap_err().to_string();
        assert!(err.contains("0 cycles"), "{err}");
        let mut c = SwitchCostConfig::rig_ratio(GraphRun::new(A), GraphRun::new(B));
        c.second.weight = 0;
        let err = infer_switch_cost(&device, &c).unwrap_err().to_string();
        assert!(
            err.contains("backbone_432") && err.contains("0 frames"),
            "{err}"
        );
        // A burst past the model's async queue would be refused by the card mid-measurement.
        let small =
            Device::open(Backend::Sim(SimProfile::default().with_async_queue_size(2))).unwrap();
        let c = SwitchCostConfig::rig_ratio(GraphRun::new(A), GraphRun::new(B));
        let err = infer_switch_cost(&small, &c).unwrap_err().to_string();
        assert!(
            err.contains("backbone_288") && err.contains("burst of 3 frames"),
            "{err}"
        );
    }
}

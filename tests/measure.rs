//! Measurement on the virtual-clock simulator gives what its timing model implies, and the
//! bench report is labelled honestly and feeds the planner.

mod common;

use std::time::Duration;

use common::fixture;
use hailo_edge::bench::measure::{self, GraphRun, RunConfig, RunMeasurement};
use hailo_edge::bench::{self, GraphsMode, SweepConfig};
use hailo_edge::metrics::figure::{Assumption, Figure, Provenance, Unit};
use hailo_edge::metrics::plan::Utilisation;
use hailo_edge::metrics::utilisation_report::UtilisationReport;
use hailo_edge::npu::sim::{DeviceProfile, Link, SimProfile, TimeBase};
use hailo_edge::npu::{Backend, Device};

fn sim(profile: DeviceProfile) -> Device {
    Device::open(Backend::Sim(
        SimProfile::new(profile).with_clock(TimeBase::Virtual),
    ))
    .unwrap()
}

fn run(profile: DeviceProfile, graphs: Vec<GraphRun>, batch: u16, secs: f64) -> RunMeasurement {
    let config = RunConfig {
        graphs,
        batch,
        threshold: 0,
        timeout: Duration::ZERO,
        duration: Duration::from_secs_f64(secs),
    };
    measure::measure(&sim(profile), &config).unwrap()
}

/// Seconds per burst of `n` frames of `graph` on `profile`: link in, compute, link out.
fn burst_s(p: &DeviceProfile, m: &RunMeasurement, n: u64) -> f64 {
    let g = &m.graphs[0];
    p.link.transfer_s(n * g.bytes_in_per_frame)
        + p.compute_s(
            g.ops_per_frame.value * 1e9 * n as f64,
            p.utilisation.at(n as u32).unwrap().value,
        )
        + p.link.transfer_s(n * g.bytes_out_per_frame)
}

#[test]
fn backbone_288_alone_without_link_time_runs_at_the_planning_rate() {
    let profile = DeviceProfile::hailo10h().with_link(Link::free());
    let m = run(
        profile,
        vec![GraphRun::new(fixture("backbone_288.hef"))],
        1,
        2.0,
    );
    let g = &m.graphs[0];
    assert!((g.ops_per_frame.value - 35.6).abs() < 1e-9);
    // 0.30 x 20e12 / 35.6e9 = 168.5 fps; the one 1 ms activation over 2 s costs 0.05 %.
    let expected = 0.30 * 20e12 / 35.6e9;
    assert!(
        (g.fps.value / expected - 1.0).abs() < 0.002,
        "fps {} vs {expected}",
        g.fps.value
    );
    assert!((g.compute.of_int8_peak.value - 0.30).abs() < 0.001);
    assert!((g.compute.of_int4_peak.value - 0.15).abs() < 0.001);
    let busy = m.device.busy.as_ref().unwrap();
    assert!(
        busy.value > 0.99,
        "saturated feed keeps the core busy: {}",
        busy.value
    );
    assert_eq!(m.device.switch_ms, vec![1.0], "one activation, no switches");
    assert!(m.device.power.is_none() && m.device.temperature.is_none());
    assert!(m
        .device
        .not_reported
        .iter()
        .any(|n| n.contains("power: not modelled")));
    let cpu = m.host_cpu.as_ref().unwrap();
    assert!(cpu.per_frame.provenance.is_measured());
    assert!(cpu.submit_per_frame.value > 0.0 && cpu.complete_per_frame.value > 0.0);
    assert!(
        cpu.submit_per_frame.value + cpu.complete_per_frame.value <= cpu.per_frame.value * 1.01,
        "stages exceed the whole: {cpu:?}"
    );
}

#[test]
fn fps_follows_the_pcie_profile_and_grows_with_batch() {
    let p = DeviceProfile::hailo10h();
    let mut last = 0.0;
    for batch in [1u16, 2, 4, 8] {
        let m = run(
            p.clone(),
            vec![GraphRun::new(fixture("backbone_288.hef"))],
            batch,
            1.0,
        );
        let g = &m.graphs[0];
        let n = u64::from(batch);
        // Full bursts (four batches are kept in flight), one activation.
        let bursts = g.frames.div_ceil(n) as f64;
        let window = p.switch_cost_s.value + bursts * burst_s(&p, &m, n);
        let expected = g.frames as f64 / window;
        assert!(
            (g.fps.value / expected - 1.0).abs() < 0.005,
            "batch {batch}: {} vs {expected}",
            g.fps.value
        );
        let hw = g.hw_latency.as_ref().unwrap();
        // HailoRT's average over frames: a frame of a full burst is charged that burst's
        // time, one of a partial burst (the scheduler runs what is queued) less, down to a
        // one-frame burst's.
        let full = 1e3 * burst_s(&p, &m, n);
        let single = 1e3 * burst_s(&p, &m, 1);
        assert!(
            hw.value <= full + 1e-5 && hw.value >= single - 1e-5,
            "batch {batch}: hw latency {} ms, full burst {full} ms",
            hw.value
        );
        assert!(
            g.fps.value >= last * 0.999,
            "batch {batch}: {} fell below {last}",
            g.fps.value
        );
        last = g.fps.value;
        // Link traffic is the frames' bytes over the window.
        let bytes_in = m.device.bytes_in_per_s.as_ref().unwrap().value * m.window_s;
        assert!((bytes_in / (g.frames * g.bytes_in_per_frame) as f64 - 1.0).abs() < 1e-9);
    }
    // The per-transfer latency is paid per burst, so batch 8 beats batch 1 by a margin the
    // model fixes: a wrong batch (always 1) would fail this.
    let b1 = 1.0
        / burst_s(
            &p,
            &run(
                p.clone(),
                vec![GraphRun::new(fixture("backbone_288.hef"))],
                1,
                0.2,
            ),
            1,
        );
    assert!(last > b1 * 1.001, "batch 8 {last} vs batch 1 model {b1}");
}

#[test]
fn two_graphs_at_three_to_one_switch_at_the_profile_cost() {
    let p = DeviceProfile::hailo10h();
    let m = run(
        p.clone(),
        vec![
            GraphRun::new(fixture("backbone_288.hef")).with_weight(3),
            GraphRun::new(fixture("backbone_432.hef")),
        ],
        1,
        1.0,
    );
    let (a, b) = (&m.graphs[0], &m.graphs[1]);
    let ratio = a.frames as f64 / b.frames as f64;
    assert!((ratio - 3.0).abs() < 0.1, "ratio {ratio}");
    let per_s = m.device.switches_per_s.as_ref().unwrap().value;
    assert!(per_s > 5.0, "switches/s {per_s}");
    let per_switch = m.device.time_per_switch.as_ref().unwrap().value;
    assert!((per_switch - 1e3 * p.switch_cost_s.value).abs() < 1e-9);
    assert!(m.device.switch_ms.iter().all(|&ms| ms == 1.0));
    // Busy time covers switches, transfers and compute of both graphs.
    let switches = m.device.switch_ms.len() as f64 * p.switch_cost_s.value;
    let work = a.frames as f64 * burst_s(&p, &m, 1)
        + b.frames as f64 * {
            let g = b;
            p.link.transfer_s(g.bytes_in_per_frame)
                + p.compute_s(
                    g.ops_per_frame.value * 1e9,
                    p.utilisation.at(1).unwrap().value,
                )
                + p.link.transfer_s(g.bytes_out_per_frame)
        };
    let busy = m.device.busy.as_ref().unwrap().value * m.window_s;
    assert!(
        (busy / (switches + work) - 1.0).abs() < 0.01,
        "{busy} vs {}",
        switches + work
    );
    // A switch-free profile must show zero-time switches: the figure follows the profile.
    let free = run(
        p.with_switch_cost(0.0, "test"),
        vec![
            GraphRun::new(fixture("backbone_288.hef")).with_weight(3),
            GraphRun::new(fixture("backbone_432.hef")),
        ],
        1,
        0.3,
    );
    assert_eq!(free.device.time_per_switch.unwrap().value, 0.0);
}

fn small_sweep() -> bench::Sweep {
    let config = SweepConfig {
        hefs: vec![fixture("backbone_288.hef"), fixture("backbone_432.hef")],
        batches: vec![1, 4],
        thresholds: vec![0],
        timeouts: vec![Duration::ZERO],
        graphs: GraphsMode::Both,
        duration: Duration::from_millis(300),
        pair_ratio: (3, 1),
        ops_override: Default::default(),
    };
    let mut seen = Vec::new();
    let sweep = bench::run_sweep(
        || Device::open(Backend::Sim(SimProfile::default())),
        &config,
        |i, label| seen.push((i, label.to_owned())),
    )
    .unwrap();
    assert_eq!(seen.len(), 6);
    assert_eq!(sweep.points.len(), 6);
    sweep
}

#[test]
fn simulator_report_is_modelled_and_lists_its_assumptions() {
    let sweep = small_sweep();
    let report = bench::utilisation_report(&sweep).unwrap();
    assert_eq!(report.graphs.len(), 2);
    bench::check_provenance(&report).unwrap();
    let json = report.to_json();
    assert!(!json.contains("\"measured\""), "{json}");
    for g in &report.graphs {
        let Provenance::Modelled { assumed } = &g.fps.provenance else {
            panic!("fps of {} is not modelled", g.name)
        };
        for name in ["switch_cost_s", "utilisation", "clock"] {
            assert!(assumed.iter().any(|a| a.name == name), "{name} missing");
        }
    }
    // Negative controls: a figure claiming a measurement on the simulator, or a modelled figure
    // without its assumptions, is refused.
    let mut lying = report.clone();
    lying.graphs[1].fps = Figure::measured(lying.graphs[1].fps.value, Unit::Fps, "sim-0");
    let err = bench::check_provenance(&lying).unwrap_err().to_string();
    assert!(
        err.contains("graphs[1].fps") && err.contains("measured"),
        "{err}"
    );
    let mut bare = report.clone();
    bare.graphs[0].compute.of_int4_peak.provenance = Provenance::modelled(Vec::<Assumption>::new());
    assert!(bench::check_provenance(&bare)
        .unwrap_err()
        .to_string()
        .contains("of_int4_peak"));
}

#[test]
fn report_feeds_the_planner() {
    let sweep = small_sweep();
    let report = bench::utilisation_report(&sweep).unwrap();
    let back = UtilisationReport::from_json("report.json", &report.to_json()).unwrap();
    let u = Utilisation::from_report(&back);
    for g in &back.graphs {
        let side = g.side.unwrap();
        let (fig, covered) = u.for_side(side);
        assert!(covered, "side {side}");
        assert!((fig.value - g.compute.of_int8_peak.value).abs() < 1e-12);
        assert!(!fig.provenance.is_measured());
        // The report's entry is the graph's best point alone, which is below the 30 % the
        // profile computes at because link time is not compute.
        assert!(
            fig.value > 0.25 && fig.value < 0.30,
            "{side}: {}",
            fig.value
        );
    }
}

#[test]
fn a_threshold_with_a_timeout_trades_switches_for_batching() {
    // With four frames of the face graph in flight, a threshold of 8 is never met, so the
    // scheduler waits for the 20 ms timeout before switching to it: fewer switches, and the
    // time they cost goes to compute instead. Threshold 0 switches whenever the other graph has
    // a frame.
    // A 5 ms switch makes the saving large against the few frames by which the order of
    // submissions and decisions on two threads can move a virtual-clock run.
    let profile = || DeviceProfile::hailo10h().with_switch_cost(0.005, "test: a costly switch");
    let pair = || {
        vec![
            GraphRun::new(fixture("backbone_288.hef")).with_weight(3),
            GraphRun::new(fixture("backbone_432.hef")),
        ]
    };
    let at = |threshold: u32, timeout_ms: u64| {
        let config = RunConfig {
            graphs: pair(),
            batch: 1,
            threshold,
            timeout: Duration::from_millis(timeout_ms),
            // Two seconds of virtual time: a shorter window rounds the saved switch time away
            // in whole frames.
            duration: Duration::from_secs_f64(2.0),
        };
        measure::measure(&sim(profile()), &config).unwrap()
    };
    let eager = at(0, 0);
    let patient = at(8, 60);
    let sw = |m: &RunMeasurement| m.device.switches_per_s.as_ref().unwrap().value;
    // Work done per busy second. A patient scheduler shifts the mix between the graphs, so
    // frames are weighed by their operations; and on the virtual clock the device idles when it
    // waits out a timeout before the measuring thread has refilled the other queue, which is
    // the host's share, not the scheduler's.
    let gops = |m: &RunMeasurement| {
        let work: f64 = m
            .graphs
            .iter()
            .map(|g| g.fps.value * g.ops_per_frame.value)
            .sum();
        work / m.device.busy.as_ref().unwrap().value
    };
    assert!(
        sw(&patient) < 0.9 * sw(&eager),
        "{} vs {}",
        sw(&patient),
        sw(&eager)
    );
    // The device is compute-bound, so the share of time the saved switches cost returns as
    // work: at least half of it, allowing for the frames in flight when the window closes.
    let switch_s = profile().switch_cost_s.value;
    let saved = (sw(&eager) - sw(&patient)) * switch_s;
    assert!(
        gops(&patient) / gops(&eager) - 1.0 > 0.5 * saved,
        "{} vs {} GOPS per busy second, {saved} of the time saved",
        gops(&patient),
        gops(&eager)
    );
    // The timeout alone (threshold 0 is always met) changes nothing.
    let timeout_only = at(0, 60);
    assert!(
        (sw(&timeout_only) / sw(&eager) - 1.0).abs() < 0.02,
        "{} vs {}",
        sw(&timeout_only),
        sw(&eager)
    );
}

#[test]
fn impossible_runs_are_refused_naming_the_reason() {
    let device = sim(DeviceProfile::hailo10h());
    let mut config = RunConfig::single(fixture("backbone_288.hef"), Duration::from_millis(100));
    config.batch = 0;
    let err = measure::measure(&device, &config).unwrap_err().to_string();
    assert!(err.contains("batch size 0"), "{err}");
    let config = RunConfig::single(fixture("missing.hef"), Duration::from_millis(100));
    let err = measure::measure(&device, &config).unwrap_err().to_string();
    assert!(err.contains("missing.hef"), "{err}");
    let config = RunConfig::single(fixture("header_v0.hef"), Duration::from_millis(100));
    let err = measure::measure(&device, &config).unwrap_err().to_string();
    assert!(
        err.contains("header_v0.hef") && err.contains("computational ops"),
        "{err}"
    );
    let manual = Device::open(Backend::Sim(
        SimProfile::default()
            .with_clock(TimeBase::Manual(hailo_edge::npu::sim::ManualClock::new())),
    ))
    .unwrap();
    let config = RunConfig::single(fixture("backbone_288.hef"), Duration::from_millis(100));
    let err = measure::measure(&manual, &config).unwrap_err().to_string();
    assert!(err.contains("manual clock"), "{err}");
    // A HEF without ops runs once they are given.
    let mut config = RunConfig::single(fixture("backbone_288.hef"), Duration::from_millis(200));
    config.graphs[0].ops_override = Some(71.2);
    let m = measure::measure(&device, &config).unwrap();
    assert_eq!(m.graphs[0].ops_source, "given");
    assert!((m.graphs[0].ops_per_frame.value - 71.2).abs() < 1e-12);
}

#[test]
fn published_utilisation_sets_the_simulators_fps_by_batch() {
    use hailo_edge::metrics::utilisation_source::UtilisationSource;
    let curve = UtilisationSource::Published.simulator_curve().unwrap();
    let profile = DeviceProfile::hailo10h()
        .with_link(Link::free())
        .with_utilisation(curve);
    let fps = |batch: u16| {
        let graphs = vec![GraphRun::new(fixture("backbone_288.hef"))];
        let m = run(profile.clone(), graphs, batch, 2.0);
        let g = &m.graphs[0];
        let Provenance::Modelled { assumed } = &g.fps.provenance else {
            panic!("simulator figures are modelled")
        };
        let u = assumed.iter().find(|a| a.name == "utilisation").unwrap();
        assert!(u.value.starts_with("published vit_small"), "{}", u.value);
        g.fps.value
    };
    // vit_small's share at batch 1 of 20 TOPS, over 35.6 G ops per frame.
    let at = |zoo_fps: f64| 8.62 * zoo_fps / 20e3 * 20e12 / 35.6e9;
    let one = fps(1);
    assert!(
        (one / at(119.0) - 1.0).abs() < 0.005,
        "{one} vs {}",
        at(119.0)
    );
    // Batch 8: bursts of up to 8 frames, each charged at the share for its size, so the
    // rate lies above batch 1's and at most at the batch-8 figure.
    let eight = fps(8);
    assert!(eight > 1.5 * one && eight <= at(428.0) * 1.005, "{eight}");
    // A batch the zoo does not publish is refused when the model is configured.
    let device = sim(profile);
    let config = RunConfig {
        graphs: vec![GraphRun::new(fixture("backbone_288.hef"))],
        batch: 9,
        threshold: 0,
        timeout: Duration::ZERO,
        duration: Duration::from_secs_f64(0.5),
    };
    let err = measure::measure(&device, &config).unwrap_err().to_string();
    assert!(err.contains("batch 9"), "{err}");
}

//! The simulator's scheduler and timing against expectations computed here,
//! independently, from HailoRT's documented rules.

mod common;

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use common::{compute_only, fixture, open, open_manual_clock};
use hailo_edge::npu::sim::{DeviceProfile, Link, SimProfile, TimeBase};
use hailo_edge::npu::ConfiguredModel;

const T: Duration = Duration::from_secs(30);
const OPS_288: f64 = 35.6e9;
const OPS_432: f64 = 97.4e9;
const EFFECTIVE: f64 = 20e12 * 0.30;
const SWITCH_NS: u64 = 1_000_000;

fn frame_ns(ops: f64) -> u64 {
    (ops / EFFECTIVE * 1e9).round() as u64
}

/// One model as the rules see it.
#[derive(Clone)]
struct Rule {
    priority: u8,
    threshold: usize,
    timeout_ns: u64,
    frame_ns: u64,
}

#[derive(Debug, PartialEq)]
struct Outcome {
    switches: u64,
    frames: Vec<u64>,
    end_ns: u64,
}

/// The rules, written out plainly: when idle, the highest priority with a
/// ready model wins, round robin among equals; ready = >= 1 frame and
/// (frames >= threshold or timeout since the model last ran); the active
/// model keeps running while nobody of equal or higher priority is ready;
/// batch 1, so a burst is one frame; a change of model costs one switch.
/// `round_robin = false` gives a deliberately wrong rule (lowest index
/// first) used as a negative control.
fn expected(rules: &[Rule], arrivals: &[Vec<u64>], round_robin: bool) -> Outcome {
    let mut queues: Vec<VecDeque<u64>> = arrivals
        .iter()
        .map(|a| a.iter().copied().collect())
        .collect();
    let mut last_run = vec![0u64; rules.len()];
    let mut frames = vec![0u64; rules.len()];
    let mut last_pick: BTreeMap<u8, usize> = BTreeMap::new();
    let (mut t, mut active, mut switches) = (0u64, None::<usize>, 0u64);
    let here = |q: &VecDeque<u64>, t: u64| q.iter().filter(|&&a| a <= t).count();
    loop {
        if queues.iter().all(VecDeque::is_empty) {
            break;
        }
        let ready: Vec<bool> = (0..rules.len())
            .map(|i| {
                let n = here(&queues[i], t);
                n >= 1 && (n >= rules[i].threshold || t >= last_run[i] + rules[i].timeout_ns)
            })
            .collect();
        let mut pick = None;
        if let Some(a) = active {
            let contender = (0..rules.len())
                .any(|o| o != a && ready[o] && rules[o].priority >= rules[a].priority);
            if here(&queues[a], t) >= 1 && !contender {
                pick = Some(a);
            }
        }
        if pick.is_none() {
            let mut priorities: Vec<u8> = rules.iter().map(|r| r.priority).collect();
            priorities.sort_unstable();
            priorities.dedup();
            'outer: for &p in priorities.iter().rev() {
                let same: Vec<usize> = (0..rules.len())
                    .filter(|&i| rules[i].priority == p)
                    .collect();
                let start = match (round_robin, last_pick.get(&p)) {
                    (true, Some(&last)) => same.iter().position(|&i| i > last).unwrap_or(0),
                    _ => 0,
                };
                for k in 0..same.len() {
                    let i = same[(start + k) % same.len()];
                    if ready[i] {
                        last_pick.insert(p, i);
                        pick = Some(i);
                        break 'outer;
                    }
                }
            }
        }
        match pick {
            Some(i) => {
                if active != Some(i) {
                    switches += 1;
                    t += SWITCH_NS;
                    active = Some(i);
                }
                queues[i].pop_front();
                frames[i] += 1;
                t += rules[i].frame_ns;
                last_run[i] = t;
            }
            None => {
                let next_arrival = queues.iter().flatten().copied().filter(|&a| a > t).min();
                let next_timeout = (0..rules.len())
                    .filter(|&i| here(&queues[i], t) >= 1)
                    .map(|i| last_run[i] + rules[i].timeout_ns)
                    .filter(|&x| x > t)
                    .min();
                t = next_arrival
                    .into_iter()
                    .chain(next_timeout)
                    .min()
                    .expect("something to wait for");
            }
        }
    }
    Outcome {
        switches,
        frames,
        end_ns: t,
    }
}

fn configure(device: &hailo_edge::npu::Device, file: &str, rule: &Rule) -> ConfiguredModel {
    let cm = device
        .load_model_file(fixture(file))
        .unwrap()
        .configure()
        .unwrap();
    cm.set_scheduler_priority(rule.priority).unwrap();
    cm.set_scheduler_threshold(rule.threshold as u32).unwrap();
    cm.set_scheduler_timeout(Duration::from_nanos(rule.timeout_ns))
        .unwrap();
    cm
}

/// Feeds 3 frames of the 288 graph and 1 of the 432 graph every `period`,
/// `periods` times, on a manual clock; returns what the simulator did.
fn simulate(rules: &[Rule; 2], period_ns: u64, periods: u64) -> Outcome {
    let (clock, device) = open_manual_clock();
    let a = configure(&device, "backbone_288.hef", &rules[0]);
    let b = configure(&device, "backbone_432.hef", &rules[1]);
    for p in 0..periods {
        clock.advance_to(Duration::from_nanos(p * period_ns));
        // The device catches up with the clock on its own thread: on a loaded machine this
        // thread can be ahead of it, so room in the queues is waited for, as HailoRT asks.
        a.wait_for_async_ready(T, 3).unwrap();
        for _ in 0..3 {
            a.submit(a.bindings().unwrap()).unwrap();
        }
        b.wait_for_async_ready(T, 1).unwrap();
        b.submit(b.bindings().unwrap()).unwrap();
    }
    clock.finish();
    for (cm, n) in [(&a, 3 * periods), (&b, periods)] {
        for _ in 0..n {
            cm.wait_next_complete(T)
                .expect("completion")
                .status
                .unwrap();
        }
    }
    let stats = device.sim_stats().unwrap();
    assert!(
        stats.switch_ns.iter().all(|&d| d == SWITCH_NS),
        "each switch costs the profile's 1 ms"
    );
    assert_eq!(stats.switch_ns.len() as u64, stats.switches);
    let ma = &stats.models["backbone_288"];
    let mb = &stats.models["backbone_432"];
    Outcome {
        switches: stats.switches,
        frames: vec![ma.frames, mb.frames],
        end_ns: ma.last_end_ns.max(mb.last_end_ns),
    }
}

fn arrivals(period_ns: u64, periods: u64) -> Vec<Vec<u64>> {
    let a = (0..periods).flat_map(|p| [p * period_ns; 3]).collect();
    let b = (0..periods).map(|p| p * period_ns).collect();
    vec![a, b]
}

fn rule(priority: u8, threshold: usize, timeout_ms: u64, ops: f64) -> Rule {
    Rule {
        priority,
        threshold,
        timeout_ns: timeout_ms * 1_000_000,
        frame_ns: frame_ns(ops),
    }
}

#[test]
fn three_to_one_traffic_switches_as_the_rules_predict() {
    let cases: Vec<([Rule; 2], u64)> = vec![
        ([rule(16, 0, 0, OPS_288), rule(16, 0, 0, OPS_432)], 40),
        ([rule(16, 0, 0, OPS_288), rule(16, 2, 100, OPS_432)], 40),
        ([rule(20, 0, 0, OPS_288), rule(16, 0, 0, OPS_432)], 25),
        ([rule(16, 3, 10, OPS_288), rule(16, 3, 10, OPS_432)], 25),
        ([rule(16, 0, 0, OPS_288), rule(16, 0, 0, OPS_432)], 30),
    ];
    let periods = 12;
    for (rules, period_ms) in cases {
        let period_ns = period_ms * 1_000_000;
        let want = expected(&rules, &arrivals(period_ns, periods), true);
        let got = simulate(&rules, period_ns, periods);
        assert_eq!(
            got.switches, want.switches,
            "switches, period {period_ms} ms"
        );
        assert_eq!(got.frames, want.frames);
        assert!(
            got.end_ns.abs_diff(want.end_ns) <= 2,
            "end {} vs {}",
            got.end_ns,
            want.end_ns
        );
    }
}

#[test]
fn drained_periods_give_two_switches_each_plus_the_first_activation() {
    // With the device idle at each period start, default threshold/timeout:
    // A (first by round robin), B, A; then every period B, A.
    let rules = [rule(16, 0, 0, OPS_288), rule(16, 0, 0, OPS_432)];
    let got = simulate(&rules, 40_000_000, 10);
    assert_eq!(got.switches, 2 * 10 + 1);
    assert_eq!(got.frames, vec![30, 10]);
    // Negative control: a rule without round robin predicts something else,
    // so the comparison above can fail.
    let wrong = expected(&rules, &arrivals(40_000_000, 10), false);
    assert_ne!(wrong.switches, got.switches);
}

#[test]
fn backbone_288_at_20_tops_and_30_percent_runs_at_168_5_fps() {
    // 17.8 GMAC = 35.6 G ops per frame (the HEF's computational ops), one
    // graph, no switches after the first activation, link time left out.
    let device = open(SimProfile::new(
        DeviceProfile::hailo10h().with_link(Link::free()),
    ));
    let model = device.load_model_file(fixture("backbone_288.hef")).unwrap();
    assert_eq!(model.computational_ops().unwrap(), 35_600_000_000);
    let cm = model.configure().unwrap();
    let n = 200u64;
    // The async queue holds 32: wait for a slot as HailoRT callers must,
    // so the test does not race the simulator's completion thread.
    for _ in 0..n {
        cm.wait_for_async_ready(T, 1).unwrap();
        cm.submit(cm.bindings().unwrap()).unwrap();
    }
    for _ in 0..n {
        cm.wait_next_complete(T).unwrap().status.unwrap();
    }
    let stats = device.sim_stats().unwrap();
    let m = &stats.models["backbone_288"];
    assert_eq!(m.frames, n);
    // The one switch is the first activation; steady state excludes it.
    assert_eq!(stats.switch_ns, vec![SWITCH_NS]);
    let elapsed = (m.last_end_ns - m.first_start_ns.unwrap() - SWITCH_NS) as f64 / 1e9;
    let fps = n as f64 / elapsed;
    assert!((fps - 168.54).abs() < 0.01, "fps {fps}");
    // Negative control: the same graph over USB-Ethernet is slower.
    let usb = open(SimProfile::new(DeviceProfile::hailo10h_usb()));
    let cm = usb
        .load_model_file(fixture("backbone_288.hef"))
        .unwrap()
        .configure()
        .unwrap();
    for _ in 0..20 {
        cm.submit(cm.bindings().unwrap()).unwrap();
    }
    for _ in 0..20 {
        cm.wait_next_complete(T).unwrap().status.unwrap();
    }
    let s = usb.sim_stats().unwrap();
    let m = &s.models["backbone_288"];
    let fps_usb = 20.0 / ((m.last_end_ns - m.first_start_ns.unwrap()) as f64 / 1e9);
    assert!(fps_usb < 160.0, "USB fps {fps_usb}");
}

#[test]
fn real_time_clock_sleeps_to_the_modelled_completion() {
    let device = open(compute_only().with_clock(TimeBase::RealTime));
    let cm = device
        .load_model_file(fixture("backbone_288.hef"))
        .unwrap()
        .configure()
        .unwrap();
    cm.wait_for_async_ready(T, 1).unwrap();
    let start = std::time::Instant::now();
    for _ in 0..5 {
        cm.run(cm.bindings().unwrap(), T).unwrap();
    }
    let elapsed = start.elapsed();
    // 1 ms activation + 5 x 5.93 ms of compute, in wall time.
    assert!(elapsed >= Duration::from_micros(30_600), "{elapsed:?}");
    // Negative control: the virtual clock does the same work without sleeping.
    let fast = open(compute_only());
    let cm = fast
        .load_model_file(fixture("backbone_288.hef"))
        .unwrap()
        .configure()
        .unwrap();
    let start = std::time::Instant::now();
    for _ in 0..5 {
        cm.run(cm.bindings().unwrap(), T).unwrap();
    }
    assert_eq!(fast.sim_stats().unwrap().compute_ns, 5 * frame_ns(OPS_288));
    assert!(start.elapsed() < elapsed);
}

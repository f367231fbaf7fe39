//! Overhead of the NPU API: one submit -> complete round trip through the
//! safe layer, the C table and the simulator's device thread on a zero-time
//! profile, against a bare crossbeam channel round trip to an echo thread
//! (the floor for any cross-thread completion). Both cross two threads.
//!
//! ```sh
//! cargo bench --bench bench_npu
//! ```
//!
//! Prints the criterion figures and then `ratio: npu / crossbeam = X`
//! (median of repeated timed loops, measured in the same run).

use std::time::{Duration, Instant};

use std::hint::black_box;

use criterion::Criterion;
use crossbeam_channel::{bounded, Receiver, Sender};
use hailo_edge::npu::sim::{DeviceProfile, SimProfile};
use hailo_edge::npu::{Backend, Bindings, ConfiguredModel, Device};

fn tiny_hef() -> Vec<u8> {
    use hef::samples::{group, stream};
    use hef::{Direction, HeaderVersion, Hef, HwArch, QuantInfo, Quantization, StreamShape};
    let q = Quantization::Uniform(QuantInfo {
        zp: 0.0,
        scale: 1.0,
        limvals_min: 0.0,
        limvals_max: 255.0,
    });
    let shape = |f| StreamShape::Image {
        height: 4,
        width: 4,
        features: f,
    };
    let g = group(
        "tiny",
        1,
        vec![stream("tiny", "in", Direction::Input, shape(3), q.clone())],
        vec![stream("tiny", "out", Direction::Output, shape(2), q)],
    );
    let hef = Hef {
        header_version: HeaderVersion::V3,
        hw_arch: HwArch::HAILO1XH,
        sdk_version: Some("5.2.0".into()),
        network_groups: vec![g],
    };
    hef::HefBuilder::new(&hef).build().expect("tiny HEF")
}

struct Npu {
    _device: Device,
    cm: ConfiguredModel,
    bindings: Option<Bindings>,
}

impl Npu {
    fn new() -> Npu {
        let device = Device::open(Backend::Sim(SimProfile::new(DeviceProfile::zero_time())))
            .expect("simulator");
        let cm = device
            .load_model(&tiny_hef())
            .expect("model")
            .configure()
            .expect("configure");
        let bindings = Some(cm.bindings().expect("bindings"));
        Npu {
            _device: device,
            cm,
            bindings,
        }
    }

    fn round_trip(&mut self) {
        let b = self.bindings.take().expect("bindings are back");
        self.cm.submit(b).expect("submit");
        let c = self
            .cm
            .wait_next_complete(Duration::from_secs(5))
            .expect("completion");
        c.status.expect("ok");
        self.bindings = Some(c.bindings);
    }
}

struct Echo {
    tx: Sender<u64>,
    rx: Receiver<u64>,
    _thread: std::thread::JoinHandle<()>,
}

impl Echo {
    fn new() -> Echo {
        let (to_tx, to_rx) = bounded::<u64>(1);
        let (back_tx, back_rx) = bounded::<u64>(1);
        let thread = std::thread::spawn(move || {
            while let Ok(v) = to_rx.recv() {
                if back_tx.send(v).is_err() {
                    break;
                }
            }
        });
        Echo {
            tx: to_tx,
            rx: back_rx,
            _thread: thread,
        }
    }

    fn round_trip(&self, v: u64) -> u64 {
        self.tx.send(v).expect("send");
        self.rx.recv().expect("recv")
    }
}

fn per_iter_ns(f: &mut impl FnMut(), iters: u32) -> f64 {
    let start = Instant::now();
    for _ in 0..iters {
        f();
    }
    start.elapsed().as_nanos() as f64 / f64::from(iters)
}

/// Alternates timed loops of `a` and `b` so both see the same machine load;
/// returns (median a, median b, min a, min b) in ns per iteration.
fn interleaved(mut a: impl FnMut(), mut b: impl FnMut(), rounds: usize, iters: u32) -> [f64; 4] {
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        xs.push(per_iter_ns(&mut a, iters));
        ys.push(per_iter_ns(&mut b, iters));
    }
    xs.sort_by(|p, q| p.total_cmp(q));
    ys.sort_by(|p, q| p.total_cmp(q));
    [xs[rounds / 2], ys[rounds / 2], xs[0], ys[0]]
}

fn main() {
    let mut npu = Npu::new();
    let echo = Echo::new();
    let mut c = Criterion::default().configure_from_args();
    {
        let mut group = c.benchmark_group("round_trip");
        group.bench_function("npu_submit_complete_zero_time", |b| {
            b.iter(|| npu.round_trip())
        });
        group.bench_function("crossbeam_echo", |b| {
            b.iter(|| black_box(echo.round_trip(black_box(7))))
        });
        group.finish();
    }
    c.final_summary();

    let [npu_med, echo_med, npu_min, echo_min] = interleaved(
        || npu.round_trip(),
        || {
            black_box(echo.round_trip(7));
        },
        15,
        2_000,
    );
    println!(
        "npu submit->complete (zero-time simulator): median {npu_med:.0} ns, best {npu_min:.0} ns; \
         crossbeam echo round trip: median {echo_med:.0} ns, best {echo_min:.0} ns"
    );
    println!(
        "ratio npu / crossbeam: {:.2} (medians), {:.2} (best); goal < 10",
        npu_med / echo_med,
        npu_min / echo_min
    );
}

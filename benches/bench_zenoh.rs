//! Zenoh publish-to-subscribe latency of `run --publish zenoh` bodies on loopback, against
//! the target p99 ≤ 2 ms at 120 bodies/s (a bench binary, not criterion: one timed run).
//!
//! ```sh
//! cargo bench --bench bench_zenoh                         # 10 s at 120 bodies/s
//! HAILO_EDGE_ZENOH_SECS=30 cargo bench --bench bench_zenoh
//! ```
//!
//! Two sessions in this process, joined over TCP on 127.0.0.1 (the whole transport
//! stack, as between two processes): one publishes a body of the real size (23 keypoints,
//! 104 bone rotations) every 1/120 s through [`ZenohPublisher`], the other receives it;
//! the latency is put to arrival on one clock.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hailo_edge::publish::zenoh::{open_session, Endpoint, Message, ZenohPublisher};
use zenoh::Wait;

fn main() -> anyhow::Result<()> {
    let secs: f64 = std::env::var("HAILO_EDGE_ZENOH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10.0);
    let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let endpoint = format!("tcp/127.0.0.1:{port}");
    let model = hailo_edge::body::Model::embedded()?;
    let cameras = hailo_edge::scene::demo_rig();
    let publisher = ZenohPublisher::start(Some(&endpoint), "bench", &cameras, &model.naming())?;
    let session = open_session(Endpoint::Connect(&endpoint), false)?;
    let clock = Instant::now();
    let arrivals: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let sink = Arc::clone(&arrivals);
    let _sub = session
        .declare_subscriber("hailo-edge/bench/body")
        .callback(move |sample| {
            let at = clock.elapsed().as_nanos() as u64;
            if let Ok(Message::Body(b)) =
                Message::decode(sample.key_expr().as_str(), &sample.payload().to_bytes())
            {
                sink.lock().unwrap().push((b.capture_ns, at));
            }
        })
        .wait()
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    std::thread::sleep(Duration::from_millis(500));
    let rotations: BTreeMap<String, [f64; 3]> = model
        .naming()
        .bones
        .iter()
        .map(|b| (b.clone(), [0.1, -0.2, 0.3]))
        .collect();
    let keypoints = vec![[0.1, 0.2, 1.5]; 23];
    let period = Duration::from_secs_f64(1.0 / 120.0);
    let n = (secs * 120.0) as u64;
    let start = Instant::now();
    for k in 0..n {
        let due = start + period * k as u32;
        if let Some(wait) = due.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        // The capture stamp carries the put time, on the subscriber's clock.
        let put_ns = clock.elapsed().as_nanos() as u64;
        publisher.body(
            put_ns,
            [0.0, 0.0, 0.9],
            rotations.iter().map(|(k, v)| (k.as_str(), *v)),
            &keypoints,
            (Some(12.0), Some(1.5)),
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let got = arrivals.lock().unwrap().clone();
    let mut lat: Vec<f64> = got
        .iter()
        .map(|&(put, at)| (at - put) as f64 / 1e6)
        .collect();
    lat.sort_by(f64::total_cmp);
    let q = |p: f64| lat[((lat.len() - 1) as f64 * p).round() as usize];
    anyhow::ensure!(!lat.is_empty(), "no body arrived");
    println!(
        "zenoh loopback, {} bodies put at 120/s, {} received: latency p50 {:.3} ms, p99 {:.3} ms, max {:.3} ms \
         (target p99 <= 2 ms: {})",
        n,
        lat.len(),
        q(0.5),
        q(0.99),
        lat[lat.len() - 1],
        if q(0.99) <= 2.0 { "met" } else { "NOT met" }
    );
    Ok(())
}

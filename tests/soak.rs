//! The soak's two-minute version: the demo rig on the zero-time device at twice the load its
//! fit stage sustains; resident size within 10% of its value at 20 s, threads and open
//! descriptors constant, and the frame accounting exact (`hailo_edge::rig::soak`). The hour
//! is `cargo bench --bench bench_pipeline -- soak` with `HAILO_EDGE_SOAK_SECS=3600`
//! (docs/performance.md, row (d)).
//!
//! One test in a binary of its own, so that the threads and descriptors counted are the
//! rig's and no other test's.

use std::time::Duration;

use hailo_edge::rig::soak::{soak, SUSTAINABLE_VIEWS_PER_S};
use hailo_edge::rig::RigConfig;

/// The soak's length: `HAILO_EDGE_SOAK_SECS`, or two minutes.
fn duration() -> Duration {
    let secs = std::env::var("HAILO_EDGE_SOAK_SECS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s >= 6.0)
        .unwrap_or(120.0);
    Duration::from_secs_f64(secs)
}

#[test]
fn two_minutes_at_twice_the_sustainable_load_leak_nothing_and_lose_nothing() {
    hailo_edge::rig::alloc::retain_freed_memory();
    let fixtures = RigConfig::demo_fixtures_dir().expect("the demo HEFs");
    let d = duration();
    let soak = soak(&fixtures, d).expect("the soak runs");
    let r = &soak.report;
    let secs = d.as_secs_f64();
    let captured: u64 = r.cameras.iter().map(|c| c.frames.captured).sum();
    let processed: u64 = r.cameras.iter().map(|c| c.frames.processed).sum();
    let dropped: u64 = r.cameras.iter().map(|c| c.frames.dropped_total()).sum();
    // Twice the sustainable load: the fit stage holds the processed rate near half the
    // offered one, so drops are many and counted.
    assert!(
        processed as f64 <= 1.1 * SUSTAINABLE_VIEWS_PER_S * secs,
        "{processed} processed in {secs} s"
    );
    assert!(
        dropped as f64 >= 0.2 * captured as f64,
        "{dropped} of {captured} dropped: the load is not above the sustainable one"
    );
    for c in &r.cameras {
        assert_eq!(
            c.frames.captured,
            c.frames.processed + c.frames.dropped_total() + c.frames.in_flight,
            "camera {}",
            c.name
        );
    }
    let failures = soak.failures();
    assert!(
        failures.is_empty(),
        "{}; reference {:?}, end {:?}",
        failures.join("; "),
        soak.reference,
        soak.end
    );
    assert!(
        soak.samples as f64 >= 0.8 * secs,
        "{} samples",
        soak.samples
    );
}

//! The fuser fed message by message, without a network: two synthetic boxes around one subject.

use std::sync::Arc;

use rand::SeedableRng;

use super::*;
use crate::geom::Camera;
use crate::publish::zenoh::{ViewMessage, VIEW_SCHEMA};
use crate::scene::observe::{observe, Detections};
use crate::scene::{demo_rig, turned};

const MS: u64 = 1_000_000;
/// Wall-clock time of the first instant.
const W0: u64 = 1_800_000_000 * 1_000 * MS;
/// 30 fps.
const PERIOD: u64 = 33_333_333;

#[derive(Clone)]
struct Rig {
    name: &'static str,
    cameras: Vec<Camera>,
    /// Added to the box's wall-clock stamps.
    skew_ns: i64,
    /// Its views arrive this long after capture.
    latency_ns: u64,
}

fn body() -> Arc<BodyRig> {
    let model = Model::embedded().unwrap();
    Arc::new(BodyRig::anny(model, true).unwrap())
}

/// The views `rig` publishes of instant `k`, as (key, payload, arrival monotonic ns).
fn views(
    rig: &Rig,
    scene: &BodyScene,
    k: u64,
    rng: &mut rand::rngs::StdRng,
) -> Vec<(String, Vec<u8>, u64)> {
    let wall = W0 + k * PERIOD;
    let truth = scene.keypoints(wall as f64 * 1e-9);
    let seen = observe(
        &rig.cameras,
        &truth,
        Detections {
            noise_px: 2.0,
            drop_rate: 0.0,
        },
        rng,
    );
    let skewed = |ns: u64| (i128::from(ns) + i128::from(rig.skew_ns)) as u64;
    let arrival = k * PERIOD + rig.latency_ns;
    seen.iter()
        .zip(&rig.cameras)
        .enumerate()
        .map(|(c, (obs, cal))| {
            let keypoints: Vec<[f32; 4]> = obs
                .iter()
                .map(|o| match o {
                    Some(o) => [o.pixel.x as f32, o.pixel.y as f32, 1.0, o.confidence as f32],
                    None => [0.0; 4],
                })
                .collect();
            let msg = ViewMessage {
                schema: VIEW_SCHEMA.into(),
                rig: rig.name.into(),
                camera: c,
                sequence: k,
                capture_ns: k * PERIOD,
                wall_ns: skewed(wall),
                sent_wall_ns: skewed(wall + rig.latency_ns),
                keypoints: keypoints.into(),
                calibration: *cal,
            };
            let key = format!("hailo-edge/{}/view/cam{c}", rig.name);
            (key, serde_json::to_vec(&msg).unwrap(), arrival)
        })
        .collect()
}

/// Feeds `frames` instants of `rigs` (those `silent` says are quiet at an instant send
/// nothing) and reports.
fn feed(
    options: &FuseOptions,
    rigs: &[Rig],
    frames: u64,
    silent: impl Fn(&str, u64) -> bool,
) -> (FuseReport, Vec<FusedLine>) {
    let body = body();
    let scene = BodyScene::demo(Arc::clone(&body), 1);
    let mut fuser = Fuser::new(options, Arc::clone(&body), Some(BodyScene::demo(body, 1)));
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut lines = Vec::new();
    let mut last = 0;
    for k in 0..frames {
        let mut batch: Vec<(String, Vec<u8>, u64)> = rigs
            .iter()
            .filter(|r| !silent(r.name, k))
            .flat_map(|r| views(r, &scene, k, &mut rng))
            .collect();
        batch.sort_by_key(|v| v.2);
        for (key, payload, at) in batch {
            fuser.boxes.tick(at, at.saturating_sub(last) as f64 * 1e-9);
            last = last.max(at);
            // This host's wall clock runs with the capture's.
            fuser.receive(&key, &payload, at, W0 + at);
            lines.extend(fuser.ready(at));
        }
    }
    lines.extend(fuser.finish());
    let report = fuser.report(frames as f64 * PERIOD as f64 * 1e-9, 0);
    // Every view is fused, late or not fused, each counted.
    for r in &report.rigs {
        let s = &r.stats;
        assert_eq!(
            s.views,
            s.fused + s.late + s.not_fused,
            "{}",
            report.summary()
        );
    }
    (report, lines)
}

fn two_boxes() -> Vec<Rig> {
    vec![
        Rig {
            name: "a",
            cameras: demo_rig().to_vec(),
            skew_ns: 0,
            latency_ns: 60 * MS,
        },
        Rig {
            name: "b",
            cameras: turned(&demo_rig(), 60.0),
            skew_ns: 0,
            latency_ns: 90 * MS,
        },
    ]
}

#[test]
fn eight_views_beat_each_box_s_four() {
    // The boxes are fused once their clocks are judged, 2 s (60 instants) in.
    let (report, lines) = feed(&FuseOptions::default(), &two_boxes(), 80, |_, _| false);
    let acc = report.accuracy.as_ref().unwrap();
    assert!(acc.shared_instants >= 18, "{}", report.summary());
    let fused = acc.fused_mpjpe_mm.unwrap();
    for (rig, alone) in &acc.by_rig_mpjpe_mm {
        assert!(
            fused < *alone,
            "rig {rig}: fused {fused} mm, alone {alone} mm"
        );
    }
    assert_eq!(acc.by_rig_mpjpe_mm.len(), 2);
    let short: Vec<_> = lines
        .iter()
        .filter(|l| l.views != 8 || l.fit_error.is_some())
        .map(|l| (l.wall_ns, l.views, l.fit_error.clone()))
        .collect();
    // The first instant may hold box a's views alone: a was judged first.
    assert!(short.len() <= 1, "{short:?}\n{}", report.summary());
    assert!(report.views_fused + 4 >= 8 * report.instants);
    assert_eq!((report.late, report.malformed), (0, 0));

    // Negative control: box b's calibration turned other than its views were seen from
    // (a wrong world frame the checks cannot see), and fusing makes it worse than a alone.
    let mut wrong = two_boxes();
    let seen_from = wrong[1].cameras.clone();
    wrong[1].cameras = turned(&demo_rig(), 75.0);
    let (bad, _) = feed_mislabelled(&wrong, &seen_from);
    let acc = bad.accuracy.unwrap();
    assert!(
        acc.fused_mpjpe_mm.unwrap() > acc.by_rig_mpjpe_mm["a"],
        "{acc:?}"
    );
}

/// Two boxes where b's views are seen from `seen_from` but published with its
/// `cameras`.
fn feed_mislabelled(rigs: &[Rig], seen_from: &[Camera]) -> (FuseReport, Vec<FusedLine>) {
    let body = body();
    let scene = BodyScene::demo(Arc::clone(&body), 1);
    let mut fuser = Fuser::new(
        &FuseOptions::default(),
        Arc::clone(&body),
        Some(BodyScene::demo(body, 1)),
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut lines = Vec::new();
    for k in 0..80 {
        for r in rigs {
            let seeing = Rig {
                cameras: if r.name == "b" {
                    seen_from.to_vec()
                } else {
                    r.cameras.clone()
                },
                ..r.clone()
            };
            for ((key, payload, at), cal) in views(&seeing, &scene, k, &mut rng)
                .into_iter()
                .zip(&r.cameras)
            {
                let mut msg: serde_json::Value = serde_json::from_slice(&payload).unwrap();
                msg["calibration"] = serde_json::to_value(cal).unwrap();
                fuser.receive(&key, &serde_json::to_vec(&msg).unwrap(), at, W0 + at);
                lines.extend(fuser.ready(at));
            }
        }
    }
    lines.extend(fuser.finish());
    (fuser.report(1.0, 0), lines)
}

#[test]
fn a_box_that_falls_silent_is_fused_without_counted_and_taken_back() {
    // Both are fused from 2 s in (instant 60); box b says nothing from instant 90 to 149
    // (2 s at 30 fps), and is fused again once its clock is judged afresh (instant 210).
    let options = FuseOptions::default();
    let quiet = |rig: &str, k: u64| rig == "b" && (90..150).contains(&k);
    let (report, lines) = feed(&options, &two_boxes(), 240, quiet);
    let b = report.rigs.iter().find(|r| r.name == "b").unwrap();
    assert_eq!(
        (b.stats.gaps, b.stats.returns),
        (1, 1),
        "{}",
        report.summary()
    );
    assert_eq!(b.presence, Presence::Present);
    // Absent for the 2 s less the second it takes to be declared so.
    assert!(
        (0.8..1.2).contains(&b.stats.absent_s),
        "{}",
        b.stats.absent_s
    );
    assert!(b.stats.instants_missed >= 25, "{}", b.stats.instants_missed);
    // a went on alone; every instant from 2 s on was fused, nothing is late.
    assert!(
        (179..=181).contains(&report.instants),
        "{}",
        report.summary()
    );
    assert_eq!(report.late, 0, "{}", report.summary());
    let alone = lines.iter().filter(|l| l.rigs == ["a"]).count();
    // Instants 90 to 209, and the first instant of each entry of b (its views came after
    // the instant left with a's).
    assert!((120..=123).contains(&alone), "{alone}");
    let back = W0 + 212 * PERIOD;
    assert!(lines
        .iter()
        .filter(|l| l.wall_ns >= back)
        .all(|l| l.views == 8));
    // Negative control: without the silence there is no gap.
    let (report, _) = feed(&options, &two_boxes(), 60, |_, _| false);
    assert!(report
        .rigs
        .iter()
        .all(|r| r.stats.gaps == 0 && r.stats.returns == 0));
}

#[test]
fn a_box_whose_clock_is_off_is_detected_reported_and_not_fused() {
    let mut rigs = two_boxes();
    rigs[1].skew_ns = 50 * MS as i64;
    let (report, lines) = feed(&FuseOptions::default(), &rigs, 75, |_, _| false);
    let b = report.rigs.iter().find(|r| r.name == "b").unwrap();
    assert!(
        b.stats.skewed && b.stats.skew_detected == 1,
        "{}",
        report.summary()
    );
    // Ahead by 50 ms: its messages seem to arrive 50 ms before they were sent.
    let off = b.stats.clock_offset_ms.unwrap();
    assert!((off + 50.0).abs() < 1.0, "{off}");
    assert_eq!(b.stats.fused, 0);
    assert_eq!(b.stats.not_fused, b.stats.views);
    assert!(lines.iter().all(|l| l.rigs == ["a"]));
    assert!(report.summary().contains("clock off"));
    // Negative control: box a, on time, is fused, and a skew within the tolerance passes.
    let a = report.rigs.iter().find(|r| r.name == "a").unwrap();
    assert!(
        !a.stats.skewed && a.stats.fused > 0 && a.stats.late == 0,
        "{}",
        report.summary()
    );
    rigs[1].skew_ns = MS as i64;
    let (report, _) = feed(&FuseOptions::default(), &rigs, 75, |_, _| false);
    assert!(
        report.rigs.iter().all(|r| !r.stats.skewed),
        "{}",
        report.summary()
    );
}

/// The refusal of a box b with `cameras`, after a with the demo's.
fn refusal(cameras: Vec<Camera>) -> Option<String> {
    let mut rigs = two_boxes();
    rigs[1].cameras = cameras;
    let (report, lines) = feed(&FuseOptions::default(), &rigs, 3, |_, _| false);
    let b = report.rigs.iter().find(|r| r.name == "b").unwrap();
    if b.refused.is_some() {
        assert_eq!(b.presence, Presence::Refused);
        assert_eq!(b.stats.fused, 0);
        assert!(lines.iter().all(|l| l.rigs == ["a"]));
    }
    b.refused.clone()
}

#[test]
fn a_box_outside_the_others_world_frame_is_refused_naming_it() {
    // Its calibration is the other box's: the cameras coincide.
    let why = refusal(demo_rig().to_vec()).unwrap();
    assert!(
        why.contains("`a/cam0` and `b/cam0`") && why.contains("world frame"),
        "{why}"
    );
    // Millimetres for metres.
    let mm: Vec<Camera> = turned(&demo_rig(), 60.0)
        .into_iter()
        .map(|mut c| {
            c.translation *= 1000.0;
            c
        })
        .collect();
    let why = refusal(mm).unwrap();
    assert!(
        why.contains("m apart") && why.contains("unit = \"mm\""),
        "{why}"
    );
    // Kilometres for metres.
    let km: Vec<Camera> = turned(&demo_rig(), 60.0)
        .into_iter()
        .map(|mut c| {
            c.translation /= 1000.0;
            c
        })
        .collect();
    let why = refusal(km).unwrap();
    assert!(
        why.contains("`b/cam0` and `b/cam1`") && why.contains("mm apart"),
        "{why}"
    );
    // Negative control: the same rig from another side is taken in.
    assert_eq!(refusal(turned(&demo_rig(), 60.0)), None);
    // The refusal names the box in the log line's error.
    let e = Refusal {
        rig: "b".into(),
        what: why,
    };
    assert!(e.to_string().starts_with("rig `b`: "));
}

#[test]
fn malformed_payloads_and_other_rigs_are_counted_or_left_out() {
    let body = body();
    let options = FuseOptions {
        rigs: vec!["a".into()],
        ..FuseOptions::default()
    };
    let mut fuser = Fuser::new(&options, body, None);
    fuser.receive("hailo-edge/a/view/cam0", b"{not json", 0, W0);
    fuser.receive(
        "hailo-edge/a/view/cam0",
        br#"{"schema":"hailo-edge.view/1"}"#,
        0,
        W0,
    );
    let scene = BodyScene::demo(Arc::clone(&self::body()), 1);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for (key, payload, at) in views(&two_boxes()[1], &scene, 0, &mut rng) {
        fuser.receive(&key, &payload, at, W0 + at);
    }
    let report = fuser.report(1.0, 0);
    assert_eq!(report.malformed, 2);
    // Rig b is not among those asked for: not even heard.
    assert!(report.rigs.is_empty());
    assert!(report.accuracy.is_none());
}

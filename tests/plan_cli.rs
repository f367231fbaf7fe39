//! `hailo-edge plan` reproduces the planning figures, reads measured reports, checks tables.

mod common;

use common::cli::{hailo_edge, json, json_of, succeed, write};
use serde_json::Value;

fn fixture(name: &str) -> String {
    format!("{}/fixtures/plan/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn plan_json(args: &[&str]) -> Value {
    json(
        hailo_edge()
            .args(["plan", "--json", "--exit-zero"])
            .args(args),
    )
}

fn pct(v: &Value) -> i64 {
    (100.0 * v.as_f64().unwrap()).round() as i64
}

#[test]
fn single_camera_fps_at_30_percent() {
    for (side, int8, int4) in [
        (288, 168, 337),
        (384, 84, 167),
        (432, 62, 123),
        (576, 28, 56),
    ] {
        let v = plan_json(&["--camera", &format!("{side}@1")]);
        let max = &v["cameras"][0]["max_fps"];
        assert_eq!(
            max[0][1].as_f64().unwrap().round() as i64,
            int8,
            "{side} INT8"
        );
        assert_eq!(
            max[1][1].as_f64().unwrap().round() as i64,
            int4,
            "{side} INT4"
        );
        assert_eq!(
            v["utilisation"]["default"]["provenance"]["kind"],
            "modelled"
        );
    }
}

#[test]
fn rig_shares_at_perfect_utilisation() {
    let four = plan_json(&[
        "--camera", "432@120", "--camera", "432@120", "--camera", "432@120", "--camera", "432@120",
    ]);
    assert_eq!(four["precisions"][1]["precision"], "int4");
    assert_eq!(pct(&four["precisions"][1]["share_at_peak"]), 117);
    let rig = plan_json(&[
        "--camera",
        "288@120",
        "--camera",
        "288@120",
        "--camera",
        "288@120",
        "--camera",
        "432@120:face",
    ]);
    assert_eq!(pct(&rig["precisions"][1]["share_at_peak"]), 61);
    // Negative control: at 60 fps the same rig needs half as much.
    let half = plan_json(&[
        "--camera", "288@60", "--camera", "288@60", "--camera", "288@60", "--camera", "432@60",
    ]);
    assert_ne!(pct(&half["precisions"][1]["share_at_peak"]), 61);
}

#[test]
fn measured_report_replaces_the_assumption() {
    let v = plan_json(&[
        "--from",
        &fixture("report_measured.json"),
        "--camera",
        "288@120",
        "--camera",
        "432@120",
    ]);
    let cams = v["cameras"].as_array().unwrap();
    assert_eq!(cams[0]["utilisation"]["provenance"]["kind"], "measured");
    assert_eq!(
        cams[0]["utilisation"]["provenance"]["device"],
        "0000:01:00.0"
    );
    // 288 was measured at 150 fps, saturated: that is its max fps on INT8.
    assert!((cams[0]["max_fps"][0][1].as_f64().unwrap() - 150.0).abs() < 1.0);
    assert!((cams[1]["utilisation"]["value"].as_f64().unwrap() - 0.19472).abs() < 1e-9);
}

#[test]
fn malformed_report_names_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("report_measured.json")).unwrap();
    let bad = write(&dir, "bad.json", text.replacen("0.267375", "26.7", 1));
    let out = hailo_edge()
        .args(["plan", "--camera", "288@120", "--from"])
        .arg(&bad)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.json") && err.contains("graphs[0].compute.of_int8_peak"),
        "{err}"
    );
}

#[test]
fn check_flags_fps_that_does_not_follow() {
    let out = hailo_edge()
        .args(["plan", "--json", "--check", &fixture("planning_table.toml")])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let v = json_of(&out.stdout);
    let flagged: Vec<_> = v
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["ok"] == false)
        .collect();
    assert_eq!(flagged.len(), 1);
    assert_eq!(flagged[0]["side"], 336);
    assert_eq!(flagged[0]["computed_fps"].as_f64().unwrap().round(), 116.0);

    // Negative control: the corrected table passes.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(fixture("planning_table.toml")).unwrap();
    let fixed = write(
        &dir,
        "fixed.toml",
        text.replace("fps_int8 = 139", "fps_int8 = 116"),
    );
    succeed(hailo_edge().args(["plan", "--check"]).arg(&fixed));
}

#[test]
fn unknown_side_is_a_clear_error() {
    let out = hailo_edge()
        .args(["plan", "--camera", "300@30"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("side 300"));
    let v = plan_json(&["--camera", "300@30", "--gmac", "300=20"]);
    assert_eq!(v["cameras"][0]["cost"]["source"]["kind"], "given");
}

#[test]
fn graph_cost_counted_from_onnx() {
    use hailo_edge::metrics::ops::builder::encode;
    let spec = common::vit::small_vit(48, 1);
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "small.onnx", encode(&spec.build().unwrap()));
    let v = plan_json(&[
        "--onnx",
        &format!("48={}", path.display()),
        "--camera",
        "48@10",
    ]);
    assert_eq!(v["cameras"][0]["cost"]["source"]["kind"], "counted");
    let gmac = v["cameras"][0]["cost"]["gmac"].as_f64().unwrap();
    assert!((gmac * 1e9 - spec.analytic_macs() as f64).abs() < 1.0);
}

const DESIGN_RIG: [&str; 8] = [
    "--camera", "288@120", "--camera", "288@120", "--camera", "288@120", "--camera", "432@120",
];

#[test]
fn published_utilisation_plans_at_each_graphs_batch_and_says_which_rows() {
    let mut args = vec!["--utilisation", "published"];
    args.extend(DESIGN_RIG);
    let v = plan_json(&args);
    assert_eq!(v["source"], "published");
    let cams = v["cameras"].as_array().unwrap();
    let body = &cams[0]["utilisation"];
    assert_eq!(body["provenance"]["kind"], "published");
    let text = body["provenance"]["source"].as_str().unwrap();
    assert!(
        text.contains("vit_small") && text.contains("batch 3") && text.contains("c83fc03"),
        "{text}"
    );
    // Three body cameras per burst: vit_small's fps linear in batch between 119 (1) and 428 (8).
    let fps3 = 119.0 + (428.0 - 119.0) * 2.0 / 7.0;
    assert!((body["value"].as_f64().unwrap() - 8.62 * fps3 / 20e3).abs() < 1e-9);
    let face = &cams[3]["utilisation"];
    assert!((face["value"].as_f64().unwrap() - 8.62 * 119.0 / 20e3).abs() < 1e-9);
    // Negative control: the assumed plan of the same rig is not published.
    let assumed = plan_json(&DESIGN_RIG);
    assert_eq!(assumed["source"], "assumed");
    assert_eq!(
        assumed["cameras"][0]["utilisation"]["provenance"]["kind"],
        "modelled"
    );
}

#[test]
fn json_carries_all_three_sources_and_flags_the_assumption() {
    let mut args = vec!["--from", "FILE"];
    let report = fixture("report_measured.json");
    args[1] = &report;
    args.extend(DESIGN_RIG);
    let v = plan_json(&args);
    let sources: Vec<_> = v["compare"]["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["source"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(sources, ["assumed", "published", "report"]);
    assert_eq!(v["source"], "report");
    assert_eq!(v["report_label"], "report: measured on 0000:01:00.0");
    let check = &v["compare"]["assumption"];
    assert_eq!(check["outside"], true);
    assert_eq!(check["band"]["low"]["row"], "vit_small at batch 1");
    assert_eq!(check["band"]["high"]["row"], "vit_small at batch 8");
    // The text output flags it, naming the rows that bound the band.
    let out = succeed(hailo_edge().args(["plan", "--exit-zero"]).args(DESIGN_RIG));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("FLAG: the assumed 30.0% lies outside the published band")
            && text.contains("vit_small at batch 8"),
        "{text}"
    );
    // Negative control: an assumption inside the band is not flagged.
    let out = succeed(
        hailo_edge()
            .args(["plan", "--exit-zero", "--utilisation", "0.1"])
            .args(DESIGN_RIG),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("FLAG"), "{text}");
    assert!(text.contains("inside the published band"), "{text}");
}

#[test]
fn a_batch_beyond_the_published_ones_is_an_error() {
    let mut cmd = hailo_edge();
    cmd.args(["plan", "--utilisation", "published"]);
    for _ in 0..9 {
        cmd.args(["--camera", "288@30"]);
    }
    let out = cmd.output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("batch 9") && err.contains("1..=8") && err.contains("vit_small"),
        "{err}"
    );
}

#[test]
fn a_rig_that_does_not_fit_exits_3_unless_asked_not_to() {
    // 288 at 30 fps: 1.07 TOPS of 6 usable at the assumed 30 %: fits.
    succeed(hailo_edge().args(["plan", "--camera", "288@30"]));
    // 432 at 120 fps: 11.7 TOPS, 195 % of one part at INT8 (97 % at INT4).
    hailo_edge()
        .args(["plan", "--camera", "432@120"])
        .assert()
        .code(3)
        .stderr(predicates::str::contains(
            "does not fit one Hailo-10H at INT8: it needs 195 %",
        ))
        .stderr(predicates::str::contains("at INT4 it needs 97 %"));
    hailo_edge()
        .args(["plan", "--camera", "432@120", "--exit-zero"])
        .assert()
        .success()
        .stderr(predicates::str::contains("exit status 0"));
}

#[test]
fn plan_reads_the_cameras_and_hef_costs_of_a_rig_file() {
    let v = plan_json(&["--config", "examples/rig.toml"]);
    let cams = v["cameras"].as_array().unwrap();
    let sides: Vec<u64> = cams
        .iter()
        .map(|c| c["camera"]["side"].as_u64().unwrap())
        .collect();
    assert_eq!(sides, [288, 288, 288, 432]);
    // Each graph's cost is the ops its HEF carries (35.6 G ops = 17.8 GMAC at 288).
    assert_eq!(cams[0]["cost"]["source"]["kind"], "hef", "{}", cams[0]);
    assert!((cams[0]["cost"]["gmac"].as_f64().unwrap() - 17.8).abs() < 1e-9);
    // Negative control: a rig file the run would refuse is refused here, naming the key.
    let dir = tempfile::tempdir().unwrap();
    let bad = write(&dir, "rig.toml", "[device]\nprofil = \"hailo10h-usb\"\n");
    hailo_edge()
        .args(["plan", "--config"])
        .arg(&bad)
        .assert()
        .failure()
        .stderr(predicates::str::contains("profil"));
    hailo_edge()
        .args([
            "plan",
            "--config",
            "examples/rig.toml",
            "--camera",
            "288@30",
        ])
        .assert()
        .failure()
        .stderr(predicates::str::contains("cannot be used with"));
}

/// A HEF that cannot be read is named by the flag that gave it and by the reader's error,
/// which says what is wrong with it: the path stands twice on the line, not three times.
#[test]
fn an_unreadable_hef_is_named_by_its_flag_and_its_error() {
    let out = hailo_edge()
        .args([
            "plan",
            "--camera",
            "288@120",
            "--hef",
            "288=fixtures/corrupt_truncated.hef",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--hef 288=fixtures/corrupt_truncated.hef: HEF fixtures/corrupt_truncated.hef: truncated"),
        "{err}"
    );
    assert_eq!(err.matches("corrupt_truncated.hef").count(), 2, "{err}");
}

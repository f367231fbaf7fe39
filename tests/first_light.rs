//! `hailo-edge first-light` end to end on the simulator, a failing step stopping the chain, and
//! `plan --from` on the reports the code writes (bench's and run's).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::cli::{hailo_edge, read_json, succeed, PLAN_BODY_AND_FACE};
use common::fixture;
use hailo_edge::camera::PixelFormat;
use hailo_edge::doctor::budget::Rig;
use hailo_edge::first_light::{self, FirstLightConfig, Outcome, Status};
use hailo_edge::metrics::plan::CameraMode;
use hailo_edge::metrics::utilisation_report::{load_any, ReportError, ReportKind};
use hailo_edge::npu::sim::SimProfile;
use hailo_edge::rig::{run, RigConfig, RunOptions};
use serde_json::Value;

/// Runs `cmd`, asserts it failed and returns what it wrote to stderr.
fn failing_stderr(cmd: &mut assert_cmd::Command) -> String {
    let out = cmd.output().unwrap();
    assert!(
        !out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs the CLI on the two fixture backbones on the simulator into `out`.
fn first_light_cli(out: &Path) -> std::process::Output {
    hailo_edge()
        .args(["first-light", "--backend", "sim"])
        .args(["--hef", "fixtures/backbone_288.hef"])
        .args(["--hef", "fixtures/backbone_432.hef"])
        .args(["--bench-seconds", "0.2", "--switch-cycles", "20"])
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn first_light_runs_end_to_end_on_the_simulator_and_labels_every_figure() {
    let dir = tempfile::tempdir().unwrap();
    let out = first_light_cli(dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report = read_json(&dir.path().join("first-light.json"));
    assert_eq!(report["schema"], first_light::SCHEMA);
    assert_eq!(report["on_part"], false);
    assert!(report["stopped_at"].is_null());
    let steps = report["steps"].as_array().unwrap();
    let names: Vec<&str> = steps.iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["doctor", "gate", "bench", "switch-cost", "plan"]);
    let status = |i: usize| steps[i]["status"].as_str().unwrap();
    assert_eq!(status(1), "skipped", "no --onnx: nothing to gate");
    for i in [0, 2, 3, 4] {
        assert_eq!(status(i), "passed", "{}", steps[i]);
    }

    // Every figure is named measured, modelled or assumed; no part ran, so none is measured.
    let figures: Vec<&Value> = steps
        .iter()
        .flat_map(|s| s["figures"].as_array().unwrap())
        .collect();
    assert!(figures.len() > 10, "{}", figures.len());
    for f in &figures {
        let label = f["label"].as_str().unwrap();
        assert!(["modelled", "assumed"].contains(&label), "{f}");
        assert!(!f["source"].as_str().unwrap().is_empty(), "{f}");
    }
    let md = std::fs::read_to_string(dir.path().join("first-light.md")).unwrap();
    for f in &figures {
        let row = md
            .lines()
            .find(|l| l.starts_with(&format!("| {} |", f["name"].as_str().unwrap())))
            .unwrap_or_else(|| panic!("{} not in the summary", f["name"]));
        assert!(row.contains(f["label"].as_str().unwrap()), "{row}");
    }
    assert!(md.contains("MODELLED"), "{md}");

    // The switch cost: inferred (modelled here, with its method) and the simulator's own
    // figure, an assumption, next to it; the inference recovers it.
    let switch = steps[3]["figures"].as_array().unwrap();
    let per_switch = switch
        .iter()
        .find(|f| f["name"].as_str().unwrap().ends_with("time per switch"))
        .unwrap();
    assert_eq!(per_switch["label"], "modelled");
    assert!(per_switch["method"]
        .as_str()
        .unwrap()
        .contains("completion times"));
    assert!((per_switch["value"].as_f64().unwrap() - 1.0).abs() < 1e-3);
    let assumed = switch.iter().find(|f| f["label"] == "assumed").unwrap();
    assert_eq!(assumed["value"].as_f64().unwrap(), 1.0);

    // The plan read the bench report and said which kind it was; the plots are there.
    let plan_notes = steps[4]["notes"].to_string();
    assert!(plan_notes.contains("bench report"), "{plan_notes}");
    let svgs = std::fs::read_dir(dir.path().join("bench"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "svg")
        })
        .count();
    assert!(svgs >= 3, "{svgs} plots");
}

/// A short chain on the simulator over fixture HEFs, writing into `out`.
fn sim_config(out: &Path, hefs: &[&str], cameras: Vec<CameraMode>) -> FirstLightConfig {
    FirstLightConfig {
        hefs: hefs.iter().map(|h| fixture(h)).collect(),
        onnx: Vec::new(),
        out: out.to_owned(),
        backend: hailo_edge::npu::Backend::Sim(SimProfile::default()),
        cameras,
        bench_seconds: 0.2,
        switch_cycles: 5,
        doctor_root: None,
    }
}

/// A step that fails with a fix, in the gate's slot.
fn failing_gate() -> first_light::steps::GateSlot {
    first_light::steps::GateSlot::with(Box::new(|_| {
        Outcome::failed("output heads/0 differs from its ONNX", "recompile the HEF")
    }))
}

#[test]
fn a_failing_step_stops_the_chain_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let config = sim_config(
        dir.path(),
        &["backbone_288.hef", "backbone_432.hef"],
        Rig::demo_cameras(),
    );
    let mut steps = first_light::default_steps();
    steps[1] = Box::new(failing_gate());
    let report = first_light::run(config.clone(), &mut steps).unwrap();
    assert_eq!(report.stopped_at, Some("gate"));
    assert_eq!(report.fix(), Some("recompile the HEF"));
    for s in &report.steps[2..] {
        assert_eq!(s.outcome.status, Status::NotRun, "{}", s.name);
    }
    assert!(
        !dir.path().join("bench").exists(),
        "bench ran after the failure"
    );
    let md = std::fs::read_to_string(dir.path().join("first-light.md")).unwrap();
    assert!(
        md.contains("FAILED") && md.contains("recompile the HEF"),
        "{md}"
    );

    // Control: the same chain with a passing gate goes on to the bench.
    let mut steps = first_light::default_steps();
    steps[1] = Box::new(first_light::steps::GateSlot::with(Box::new(|_| {
        Outcome::passed()
    })));
    let report = first_light::run(config, &mut steps).unwrap();
    assert!(report.passed(), "{}", report.to_json());
    assert!(dir.path().join("bench/report.json").is_file());
}

#[test]
fn the_gate_step_compares_each_hef_with_its_onnx_and_stops_out_of_bound() {
    use hailo_edge::metrics::ops::device_half::stand_in_onnx;
    let dir = tempfile::tempdir().unwrap();
    let mut config = sim_config(
        dir.path(),
        &["backbone_288.hef", "backbone_432.hef"],
        Rig::demo_cameras(),
    );
    // One ONNX for two HEFs: the pairing would be a guess.
    let onnx: Vec<PathBuf> = [288, 432]
        .iter()
        .map(|&side| {
            let path = dir.path().join(format!("device_half_{side}.onnx"));
            std::fs::write(&path, stand_in_onnx(side).unwrap()).unwrap();
            path
        })
        .collect();
    config.onnx = onnx[..1].to_vec();
    let report = first_light::run(config.clone(), &mut first_light::default_steps()).unwrap();
    assert_eq!(report.stopped_at, Some("gate"));
    assert_eq!(
        report.fix(),
        Some("give one --onnx per --hef, in the same order")
    );

    // The committed fixtures' output steps are as wide as the stand-in's maps, so the real
    // gate runs, pairs by name and finds them out of bound (tests/gate.rs passes a HEF
    // calibrated on the stand-in).
    config.onnx = onnx;
    let report = first_light::run(config, &mut first_light::default_steps()).unwrap();
    assert_eq!(report.stopped_at, Some("gate"), "{}", report.to_json());
    let gate = &report.steps[1].outcome;
    let Status::Failed { error, .. } = &gate.status else {
        panic!("{}", report.to_json())
    };
    assert!(error.contains("features"), "{error}");
    assert!(dir.path().join("gate_0.json").is_file());
    assert!(
        gate.notes.iter().any(|n| n.contains("pairing (by name)")),
        "{:?}",
        gate.notes
    );
}

#[test]
fn the_cli_exits_non_zero_with_the_fix_when_a_step_fails() {
    // No part here: insisting on HailoRT stops the chain at the doctor (or, on a box whose
    // doctor passes, at the bench, which cannot open the part).
    let dir = tempfile::tempdir().unwrap();
    let stderr = failing_stderr(
        hailo_edge()
            .args(["first-light", "--backend", "hailort"])
            .args(["--hef", "fixtures/backbone_288.hef", "--out"])
            .arg(dir.path()),
    );
    assert!(
        stderr.contains("stopped at") && stderr.contains("fix:"),
        "{stderr}"
    );
    let report = read_json(&dir.path().join("first-light.json"));
    let stopped = report["stopped_at"].as_str().unwrap();
    assert!(["doctor", "bench"].contains(&stopped), "{stopped}");
    let last = report["steps"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["status"], "not_run");
}

/// A short run of the demo rig on the simulator, its report written by `run`.
fn run_report(dir: &Path) -> PathBuf {
    hailo_edge::rig::alloc::retain_freed_memory();
    let mut rig = RigConfig::demo(&fixture(""));
    for c in &mut rig.cameras {
        c.format = Some(PixelFormat::Rgb24);
        c.fps = 30.0;
    }
    for (g, side) in rig.graphs.iter_mut().zip([288, 432]) {
        g.decoder_onnx = Some(fixture(&format!("decoder_reduced_{side}.onnx")));
    }
    let path = dir.join("run-report.json");
    rig.output.report = Some(path.clone());
    let options = RunOptions {
        duration: Some(Duration::from_millis(1000)),
        pipeline_only: true,
        ..RunOptions::default()
    };
    run(&rig, "demo", &options).unwrap();
    path
}

#[test]
fn plan_reads_a_run_report_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = run_report(dir.path());
    let loaded = load_any(&path).unwrap();
    assert_eq!(loaded.kind, ReportKind::Run);
    let r = &loaded.report;
    assert_eq!(r.backend, hailo_edge::metrics::figure::BackendKind::Sim);
    let sides: Vec<Option<u32>> = r.graphs.iter().map(|g| g.side).collect();
    assert_eq!(sides, [Some(288), Some(432)]);
    for g in &r.graphs {
        assert!(!g.fps.provenance.is_measured(), "simulator fps is modelled");
        assert!(g.compute.of_int8_peak.value > 0.0);
    }
    let out = succeed(
        hailo_edge()
            .args(PLAN_BODY_AND_FACE)
            .arg("--from")
            .arg(&path),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("is a run report"), "{text}");
    let out = succeed(
        hailo_edge()
            .args([
                "plan",
                "--json",
                "--exit-zero",
                "--camera",
                "288@120",
                "--from",
            ])
            .arg(&path),
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["from"]["kind"], "run");
    assert_eq!(
        v["cameras"][0]["utilisation"]["provenance"]["kind"],
        "modelled"
    );
}

#[test]
fn plan_refuses_a_file_that_is_neither_report_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // A file the bench writes that is not its report, and a run report whose tag is changed.
    let config = sim_config(
        dir.path(),
        &["backbone_288.hef"],
        vec!["288@120".parse().unwrap()],
    );
    let mut steps: Vec<Box<dyn first_light::Step>> = vec![Box::new(first_light::steps::BenchStep)];
    let report = first_light::run(config, &mut steps).unwrap();
    assert!(report.passed(), "{}", report.to_json());
    let bench = load_any(&dir.path().join("bench/report.json")).unwrap();
    assert_eq!(bench.kind, ReportKind::Bench);

    let sweep = dir.path().join("bench/sweep.json");
    let err = load_any(&sweep).unwrap_err();
    assert!(matches!(err, ReportError::NotAReport { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("sweep.json") && text.contains("no `schema` field"),
        "{text}"
    );
    assert!(text.contains("expected a bench report"), "{text}");

    let other = dir.path().join("other.json");
    let mut v = read_json(&dir.path().join("bench/report.json"));
    v["schema"] = "hailo-edge.something/1".into();
    std::fs::write(&other, v.to_string()).unwrap();
    let text = load_any(&other).unwrap_err().to_string();
    assert!(text.contains("schema `hailo-edge.something/1`"), "{text}");

    let stderr = failing_stderr(
        hailo_edge()
            .args(["plan", "--camera", "288@120", "--from"])
            .arg(&sweep),
    );
    assert!(
        stderr.contains("sweep.json") && stderr.contains("run report"),
        "{stderr}"
    );
}

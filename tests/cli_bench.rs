//! `hailo-edge bench`, `ops FILE.hef` and `plan --hef` / `plan --from` from the command line.

use std::path::Path;

mod common;

use common::cli::{hailo_edge as cli, PLAN_BODY_AND_FACE};
use predicates::prelude::*;

#[test]
fn bench_writes_reports_and_plots_that_plan_reads() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    cli()
        .args([
            "bench",
            "--batch",
            "1,2",
            "--threshold",
            "0",
            "--timeout-ms",
            "0",
        ])
        .args(["--duration-per-point", "0.2", "--out"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("MODELLED by the simulator"))
        .stdout(predicate::str::contains("switch_cost_s = 0.001"))
        .stdout(predicate::str::contains("power: not modelled"));
    for name in ["report.json", "sweep.json", "report.csv"] {
        assert!(out.join(name).is_file(), "{name}");
    }
    let csv = std::fs::read_to_string(out.join("report.csv")).unwrap();
    // Header + 2 batches x (288 alone, 432 alone, pair with two graphs).
    assert_eq!(csv.lines().count(), 1 + 2 * 4, "{csv}");
    for stem in [
        "fps_vs_batch",
        "utilisation_vs_batch",
        "latency_cdf",
        "switch_cost_histogram",
    ] {
        let png = image::open(out.join(format!("{stem}.png"))).unwrap();
        assert_eq!((png.width(), png.height()), (900, 560), "{stem}");
        // Not a blank canvas: some pixels are not white.
        let rgb = png.to_rgb8();
        assert!(
            rgb.pixels().filter(|p| p.0 != [255, 255, 255]).count() > 1000,
            "{stem}"
        );
        let svg = std::fs::read_to_string(out.join(format!("{stem}.svg"))).unwrap();
        assert!(
            svg.contains("<svg") && svg.trim_end().ends_with("</svg>"),
            "{stem}"
        );
        assert!(
            svg_texts(&svg)[0].ends_with(": modelled (simulator)"),
            "{stem}: the title says where its figures come from"
        );
    }
    // Batch axes tick at whole numbers only, and every point says its value.
    for stem in ["fps_vs_batch", "utilisation_vs_batch"] {
        let texts = svg_texts(&std::fs::read_to_string(out.join(format!("{stem}.svg"))).unwrap());
        assert!(
            texts.iter().any(|t| t == "1") && texts.iter().any(|t| t == "2"),
            "{stem}: {texts:?}"
        );
        assert!(
            !texts.iter().any(|t| t == "1.5" || t == "1.50"),
            "{stem}: {texts:?}"
        );
    }
    let util = svg_texts(&std::fs::read_to_string(out.join("utilisation_vs_batch.svg")).unwrap());
    assert!(
        util.iter().filter(|t| t.ends_with('%')).count() >= 8,
        "{util:?}"
    );
    // The CDF names the point whose latencies it shows.
    let cdf = svg_texts(&std::fs::read_to_string(out.join("latency_cdf.svg")).unwrap());
    assert!(
        cdf.iter()
            .any(|t| t.starts_with("backbone_288, at its fastest point (")),
        "{cdf:?}"
    );
    // Busy shares that coincide are dashed, each with its own dash: many
    // segments in their colour, where a solid series has two polylines (its
    // line and its legend key).
    let svg = std::fs::read_to_string(out.join("utilisation_vs_batch.svg")).unwrap();
    let mut per_colour = std::collections::BTreeMap::<&str, usize>::new();
    for line in svg.split("<polyline").skip(1) {
        let stroke = line.split("stroke=\"").nth(1).and_then(|s| s.get(..7));
        if let Some(c) = stroke.filter(|&c| c != "#000000") {
            *per_colour.entry(c).or_default() += 1;
        }
    }
    let counts: Vec<usize> = per_colour.values().copied().collect();
    assert_eq!(
        counts.iter().min(),
        Some(&2),
        "solid series: {per_colour:?}"
    );
    assert!(
        counts.iter().max() > Some(&4),
        "dashed series: {per_colour:?}"
    );
    let report = out.join("report.json");
    cli()
        .args(PLAN_BODY_AND_FACE)
        .arg("--from")
        .arg(&report)
        .assert()
        .success()
        .stdout(predicate::str::contains("per graph side from the report"))
        .stdout(predicate::str::contains("switch_cost_s"));
    // A report edited to claim a measurement on the simulator fails the bench's check.
    let text = std::fs::read_to_string(&report).unwrap();
    let parsed =
        hailo_edge::metrics::utilisation_report::UtilisationReport::from_json("r", &text).unwrap();
    hailo_edge::bench::check_provenance(&parsed).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&text).unwrap();
    value["graphs"][0]["fps"]["provenance"] =
        serde_json::json!({"kind": "measured", "device": "sim-0"});
    let lying = hailo_edge::metrics::utilisation_report::UtilisationReport::from_json(
        "r",
        &value.to_string(),
    )
    .unwrap();
    let err = hailo_edge::bench::check_provenance(&lying)
        .unwrap_err()
        .to_string();
    assert!(err.contains("graphs[0].fps"), "{err}");
}

#[test]
fn bench_refuses_bad_arguments_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 5] = [
        (
            &["--graphs", "two", "--hef", "fixtures/backbone_288.hef"],
            "needs two HEFs",
        ),
        (&["--hef", "fixtures/missing.hef"], "fixtures/missing.hef"),
        (&["--batch", "0"], "batch size 0"),
        (
            &["--hef", "fixtures/header_v0.hef", "--graphs", "one"],
            "computational ops",
        ),
        (
            &[
                "--hef",
                "fixtures/backbone_288.hef",
                "--graphs",
                "one",
                "--ops",
                "fixtures/backbone_288.hef=lots",
            ],
            "`lots` is not a number",
        ),
    ];
    for (args, named) in cases {
        cli()
            .arg("bench")
            .args(args)
            .arg("--out")
            .arg(dir.path())
            .assert()
            .failure()
            .stderr(predicate::str::contains(named));
    }
}

#[test]
fn ops_reads_the_hef_count_or_says_there_is_none() {
    cli()
        .args(["ops", "fixtures/backbone_432.hef"])
        .assert()
        .success()
        .stdout(predicate::str::contains("97.400 GOPS = 48.700 GMAC"))
        .stdout(predicate::str::contains("UINT8"));
    cli()
        .args(["ops", "fixtures/header_v0.hef"])
        .assert()
        .code(2)
        .stdout(predicate::str::contains("carries no computational ops"));
    cli()
        .args(["ops", "fixtures/corrupt_bad_magic.hef"])
        .assert()
        .failure()
        .stderr(predicate::str::contains("corrupt_bad_magic.hef"));
}

#[test]
fn plan_uses_hef_op_counts() {
    // 35.6 G ops per frame at 30 % of 20 TOPS: 168.5 fps.
    let out = cli()
        .args([
            "plan",
            "--camera",
            "288@120",
            "--hef",
            "fixtures/backbone_288.hef",
        ])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains("HEF backbone_288.hef"), "{out}");
    assert!(out.contains("168.5"), "{out}");
    // The planning model gives 17.83 GMAC (168.3 fps), so the HEF's figure really was used.
    let model = cli()
        .args(["plan", "--camera", "288@120"])
        .output()
        .unwrap();
    assert!(!String::from_utf8(model.stdout).unwrap().contains("168.5"));
    cli()
        .args([
            "plan",
            "--camera",
            "288@120",
            "--hef",
            "288=fixtures/header_v0.hef",
        ])
        .assert()
        .failure()
        .stderr(predicate::str::contains("carries no computational ops"));
    assert!(Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/backbone_288.hef")
        .is_file());
}

/// The text of every `<text>` element of an SVG, trimmed, in document order.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = t.split_once('>')?.1;
            Some(body.split_once("</text>")?.0.trim().to_owned())
        })
        .collect()
}

//! Every size, count and duration of a rig file against its bound
//! ([`crate::limits`]), the clock a camera can keep, and where relative
//! paths resolve.

use super::tests::parse;
use super::*;
use crate::limits;

/// One synthetic camera on one graph; the `[[graph]]` table comes last so
/// that tables prepended to the text (`[decoder]`, `[body]`) stay whole.
const RIG: &str = r#"
[[camera]]
name = "cam0"
source = "synthetic"
width = 320
height = 240
fps = 30
graph = "g"

[[graph]]
name = "g"
hef = "backbone_288.hef"
"#;

/// The error of `text`, which must name `key` and every one of `words`.
fn refused(text: &str, key: &str, words: &[&str]) {
    let err = parse(text).expect_err(key).to_string();
    assert!(
        err.contains(&format!("`{key}`")),
        "expected `{key}` in: {err}"
    );
    for w in words {
        assert!(err.contains(w), "expected `{w}` in: {err}");
    }
}

#[test]
fn sizes_and_counts_beyond_their_bounds_are_refused_naming_key_value_and_bound() {
    let decoder = |line: &str| format!("[decoder]\n{line}\n{RIG}");
    let max_in_flight = limits::MAX_IN_FLIGHT.to_string();
    refused(
        &decoder("in_flight = 18446744073709551615"),
        "decoder.in_flight",
        &["18446744073709551615", &max_in_flight],
    );
    refused(
        &decoder("in_flight = 100000000"),
        "decoder.in_flight",
        &["100000000", &max_in_flight],
    );
    refused(
        &decoder("threads = 2000"),
        "decoder.threads",
        &["2000", &limits::MAX_DECODER_THREADS.to_string()],
    );
    let side = limits::MAX_CAMERA_SIDE.to_string();
    refused(
        &RIG.replace("width = 320", "width = 100000"),
        "camera[0].width",
        &["100000", &side],
    );
    refused(
        &RIG.replace("height = 240", "height = 100000"),
        "camera[0].height",
        &["100000", &side],
    );
    let graph = |line: &str| {
        RIG.replace(
            "hef = \"backbone_288.hef\"",
            &format!("hef = \"x.hef\"\n{line}"),
        )
    };
    refused(
        &graph("timeout_ms = 1e300"),
        "graph[0].timeout_ms",
        &["1e300", "60000"],
    );
    refused(&graph("timeout_ms = nan"), "graph[0].timeout_ms", &["NaN"]);
    refused(&graph("batch = 65535"), "graph[0].batch", &["65535", "64"]);
    refused(
        &graph("threshold = 4294967295"),
        "graph[0].threshold",
        &["4294967295", &max_in_flight],
    );
    refused(
        &format!("[switching]\nmode = \"manual\"\nframes_per_switch = 4294967295\n{RIG}"),
        "switching.frames_per_switch",
        &["4294967295"],
    );
    refused(
        &format!("[body]\nnoise_px = 1e300\n{RIG}"),
        "body.noise_px",
        &["1e300", "8192"],
    );
    let many: String = (0..=limits::MAX_CAMERAS)
        .map(|i| {
            format!(
                "[[camera]]\nname = \"c{i}\"\nsource = \"synthetic\"\nwidth = 8\nheight = 8\nfps = 30\ngraph = \"g\"\n"
            )
        })
        .collect();
    let graph_table = &RIG[RIG.find("[[graph]]").unwrap()..];
    let text = many + graph_table;
    refused(&text, "camera", &["33 [[camera]] tables", "32"]);
    // Negative controls: every bound itself is accepted.
    let at_bounds = decoder(&format!(
        "in_flight = {}\nthreads = {}",
        limits::MAX_IN_FLIGHT,
        limits::MAX_DECODER_THREADS
    ))
    .replace("width = 320", &format!("width = {side}"))
    .replace("height = 240", &format!("height = {side}"))
    .replace(
        "hef = \"backbone_288.hef\"",
        "hef = \"x.hef\"\ntimeout_ms = 60000\nbatch = 64\nthreshold = 256",
    );
    let rig = parse(&at_bounds).expect("values at their bounds");
    assert_eq!(rig.in_flight(), limits::MAX_IN_FLIGHT);
}

#[test]
fn the_derived_in_flight_stays_within_its_bound() {
    let text = format!("[decoder]\nthreads = 64\n{RIG}")
        .replace("hef = \"backbone_288.hef\"", "hef = \"x.hef\"\nbatch = 64");
    let rig = parse(&text).unwrap();
    assert_eq!(rig.in_flight(), 128);
    let graphs: String = (0..8)
        .map(|i| format!("[[graph]]\nname = \"g{i}\"\nhef = \"x.hef\"\nbatch = 64\n"))
        .collect();
    let cams: String = (0..8)
        .map(|i| {
            format!(
                "[[camera]]\nname = \"c{i}\"\nsource = \"synthetic\"\nwidth = 8\nheight = 8\nfps = 30\ngraph = \"g{i}\"\n"
            )
        })
        .collect();
    let rig = parse(&format!("[decoder]\nthreads = 64\n{graphs}{cams}")).unwrap();
    assert_eq!(rig.in_flight(), limits::MAX_IN_FLIGHT);
}

#[test]
fn a_virtual_clock_with_a_v4l2_camera_is_refused_naming_the_key_and_the_camera() {
    let v4l2 = RIG.replace("source = \"synthetic\"", "source = \"v4l2:/dev/video0\"");
    let virtual_clock = format!("[device]\nclock = \"virtual\"\n{v4l2}");
    refused(
        &virtual_clock,
        "device.clock",
        &["cam0", "v4l2:/dev/video0", "realtime"],
    );
    // Negative controls: real time with V4L2, and virtual time with synthetic cameras.
    parse(&v4l2).expect("a real-time V4L2 rig");
    parse(&format!("[device]\nclock = \"virtual\"\n{RIG}")).expect("a virtual-clock synthetic rig");
}

#[test]
fn relative_paths_resolve_against_the_rig_file_s_folder() {
    let text = RIG
        .replace(
            "hef = \"backbone_288.hef\"",
            "hef = \"backbone_288.hef\"\ndecoder_onnx = \"d.onnx\"\nreference_onnx = \"r.onnx\"",
        )
        .replace("source = \"synthetic\"", "source = \"replay:takes/a.mcap\"")
        .replace("graph = \"g\"\n", "graph = \"g\"\ncalibration_file = \"cal.yaml\"\n")
        + "[body]\nmodel = \"anny.safetensors\"\n[output]\njsonl = \"out/r.jsonl\"\nreport = \"out/r.json\"\nrecord = \"out/r.mcap\"\n";
    let rig = parse(&text).unwrap();
    let g = &rig.graphs[0];
    let c = &rig.cameras[0];
    let paths = [
        g.hef.as_path(),
        g.decoder_onnx.as_deref().unwrap(),
        g.reference_onnx.as_deref().unwrap(),
        c.calibration_file.as_deref().unwrap(),
        rig.body.model.as_deref().unwrap(),
        rig.output.jsonl.as_deref().unwrap(),
        rig.output.report.as_deref().unwrap(),
        rig.output.record.as_deref().unwrap(),
    ];
    for p in paths {
        assert!(p.starts_with("rigs"), "{} is not under rigs/", p.display());
    }
    assert_eq!(c.source, CameraSource::Replay("rigs/takes/a.mcap".into()));
    // Absolute paths and device nodes stay as written.
    let text = text.replace("replay:takes/a.mcap", "replay:/data/a.mcap");
    assert_eq!(
        parse(&text).unwrap().cameras[0].source,
        CameraSource::Replay("/data/a.mcap".into())
    );
}

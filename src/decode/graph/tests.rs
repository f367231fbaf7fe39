//! Tests of the generated host graphs, run with tract directly (inputs and outputs by name).

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::Path;

use tract_onnx::prelude::*;

use super::*;
use crate::metrics::ops::builder::SplitMix64;

type Outputs = HashMap<String, tract_ndarray::ArrayD<f32>>;

fn reduced(side: usize, split: Split, slots: KeypointSlots) -> HostGraph {
    HostGraph {
        side,
        width: Width::Reduced,
        split,
        keypoint_slots: slots,
        seed: DEFAULT_SEED,
    }
}

fn top(n: usize) -> KeypointSlots {
    KeypointSlots::Top(NonZeroUsize::new(n).expect("n > 0"))
}

/// Seeded input maps for `graph`, by name.
fn inputs(graph: &HostGraph, seed: u64) -> Vec<(String, tract_ndarray::ArrayD<f32>)> {
    let mut rng = SplitMix64::new(seed);
    graph
        .inputs()
        .into_iter()
        .map(|(name, shape)| {
            let len = shape.iter().product();
            let values: Vec<f32> = (0..len).map(|_| rng.next_f32(1.7)).collect();
            let array = tract_ndarray::ArrayD::from_shape_vec(shape.to_vec(), values)
                .expect("shape matches");
            (name.to_owned(), array)
        })
        .collect()
}

/// Runs ONNX bytes in tract, feeding inputs by name, returning outputs by name.
fn run_tract(bytes: &[u8], feed: &[(String, tract_ndarray::ArrayD<f32>)]) -> TractResult<Outputs> {
    let model = tract_onnx::onnx().model_for_read(&mut &bytes[..])?;
    let model = model.into_optimized()?.into_runnable()?;
    let graph = model.model();
    let mut ordered = Vec::new();
    for outlet in graph.input_outlets()? {
        let name = &graph.node(outlet.node).name;
        let (_, array) = feed
            .iter()
            .find(|(n, _)| n == name)
            .ok_or_else(|| anyhow::anyhow!("no input named {name}"))?;
        ordered.push(array.clone().into_tvalue());
    }
    let results = model.run(ordered.into())?;
    let mut out = Outputs::new();
    for (outlet, value) in graph.output_outlets()?.iter().zip(results) {
        let name = graph
            .outlet_label(*outlet)
            .map(str::to_owned)
            .unwrap_or_else(|| graph.node(outlet.node).name.clone());
        out.insert(name, value.to_plain_array_view::<f32>()?.to_owned());
    }
    Ok(out)
}

/// Largest difference of the first `k` slots (axis 1) of every output.
fn kept_diff(a: &Outputs, b: &Outputs, k: usize) -> f32 {
    OUTPUTS
        .iter()
        .map(|name| {
            let (x, y) = (&a[*name], &b[*name]);
            let x = x.slice_axis(tract_ndarray::Axis(1), (0..k).into());
            let y = y.slice_axis(tract_ndarray::Axis(1), (0..k).into());
            x.iter()
                .zip(y.iter())
                .map(|(p, q)| (p - q).abs())
                .fold(0.0, f32::max)
        })
        .fold(0.0, f32::max)
}

#[test]
fn encoding_is_deterministic_and_follows_the_seed() {
    let g = reduced(288, Split::Design, KeypointSlots::All);
    let a = g.encode().unwrap();
    assert_eq!(a, g.encode().unwrap(), "two encodes differ");
    let other = HostGraph { seed: 8, ..g }.encode().unwrap();
    assert_eq!(a.len(), other.len());
    assert_ne!(a, other, "the seed changes nothing");
}

#[test]
fn bad_sides_are_refused_with_the_side() {
    for side in [0, 12, 300] {
        let err = HostGraph::real(side).encode().unwrap_err();
        assert!(matches!(err, GraphError::Side { side: s } if s == side));
        assert!(err.to_string().contains(&side.to_string()), "{err}");
    }
    assert!(HostGraph::real(288).validate().is_ok());
}

#[test]
fn file_names_say_width_split_side_slots_and_seed() {
    assert_eq!(
        HostGraph::real(432).file_name(),
        "decoder_real_design_432_kp1_s7_g2.onnx"
    );
    let g = reduced(288, Split::Taps, KeypointSlots::All);
    assert_eq!(g.file_name(), "decoder_reduced_taps_288_kpall_s7_g2.onnx");
}

/// Output shapes by name.
fn shapes(out: &Outputs) -> Vec<(String, Vec<usize>)> {
    let mut v: Vec<_> = out
        .iter()
        .map(|(n, a)| (n.clone(), a.shape().to_vec()))
        .collect();
    v.sort();
    v
}

fn expected_shapes(g: &HostGraph) -> Vec<(String, Vec<usize>)> {
    let mut v: Vec<_> = g
        .outputs()
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s))
        .collect();
    v.sort();
    v
}

#[test]
fn reduced_graphs_load_and_run_with_the_stated_names_and_shapes() {
    for g in [
        reduced(288, Split::Design, KeypointSlots::All),
        reduced(432, Split::Design, top(1)),
        reduced(288, Split::Taps, KeypointSlots::All),
    ] {
        let out = run_tract(&g.encode().unwrap(), &inputs(&g, 1)).unwrap();
        assert_eq!(shapes(&out), expected_shapes(&g), "{}", g.file_name());
        assert!(out.values().all(|a| a.iter().all(|v| v.is_finite())));
        let model = tract_onnx::onnx()
            .model_for_read(&mut &g.encode().unwrap()[..])
            .unwrap();
        let names: Vec<&str> = model
            .input_outlets()
            .unwrap()
            .iter()
            .map(|o| model.node(o.node).name.as_str())
            .collect();
        assert_eq!(names, g.split.input_names());
    }
}

#[test]
fn feeding_swapped_maps_changes_the_outputs() {
    // The two design-split maps have one shape; the graph must tell them apart by name.
    let g = reduced(288, Split::Design, top(1));
    let bytes = g.encode().unwrap();
    let feed = inputs(&g, 3);
    let mut swapped = feed.clone();
    swapped[0].0 = feed[1].0.clone();
    swapped[1].0 = feed[0].0.clone();
    let a = run_tract(&bytes, &feed).unwrap();
    let b = run_tract(&bytes, &swapped).unwrap();
    assert!(kept_diff(&a, &b, 1) > 1e-3);
}

/// Keypoint slots against all slots, with `knobs` on the sliced graph.
fn slot_diff(side: usize, k: usize, knobs: Knobs) -> (f32, Outputs, Outputs) {
    let full = reduced(side, Split::Design, KeypointSlots::All);
    let part = reduced(side, Split::Design, top(k));
    let feed = inputs(&full, 11);
    let all_knobs = Knobs {
        reversed_slots: false,
        ..knobs
    };
    let a = run_tract(&full.generate_with(all_knobs).unwrap().bytes, &feed).unwrap();
    let b = run_tract(&part.generate_with(knobs).unwrap().bytes, &feed).unwrap();
    (kept_diff(&a, &b, k), a, b)
}

#[test]
fn kept_keypoint_slots_equal_the_full_graph() {
    for k in [1, 3] {
        let (diff, full, part) = slot_diff(288, k, Knobs::default());
        eprintln!("reduced 288, keypoint slots {k}: kept slots max |diff| {diff:.2e}");
        assert!(diff <= 1e-5, "slots {k}: {diff}");
        // The graph returns the kept slots alone; upstream's returns every slot.
        assert_eq!(part["dets"].shape(), &[1, k, 4]);
        assert_eq!(part["labels"].shape(), &[1, k, CLASSES]);
        assert_eq!(
            part["keypoints"].shape(),
            &[1, k, KEYPOINTS, KEYPOINT_FIELDS]
        );
        assert_eq!(full["dets"].shape(), &[1, 100, 4]);
    }
}

#[test]
fn a_broken_slot_order_is_rejected() {
    let knobs = Knobs {
        reversed_slots: true,
        ..Knobs::default()
    };
    for k in [1, 3] {
        let (diff, _, _) = slot_diff(288, k, knobs);
        eprintln!("reversed slots {k}: max |diff| {diff:.2e}");
        assert!(
            diff > 1e-3,
            "the comparison accepts reversed slots ({diff})"
        );
    }
}

#[test]
fn the_slot_coupling_grows_with_the_layer_scale() {
    // Measures how much the kept slots depend on the other slots' keypoint work, which
    // reaches them only through the layer-scaled write-back and the next self-attention.
    let mut last = 0.0;
    for scale in [LAYER_SCALE, 1e-2, 1e-1, 1.0] {
        let knobs = Knobs {
            layer_scale: scale,
            ..Knobs::default()
        };
        let (diff, _, _) = slot_diff(288, 1, knobs);
        eprintln!("layer scale {scale:e}: kept slot max |diff| {diff:.2e}");
        assert!(diff >= last * 0.5, "{scale}: {diff} < {last}");
        last = diff;
    }
    assert!(last > 1e-4, "no coupling at layer scale 1: {last}");
}

#[test]
#[ignore = "real width: several seconds in tract; run with --ignored"]
fn real_width_kept_slots_equal_the_full_graph() {
    let full = HostGraph {
        keypoint_slots: KeypointSlots::All,
        ..HostGraph::real(288)
    };
    let feed = inputs(&full, 11);
    let a = run_tract(&full.encode().unwrap(), &feed).unwrap();
    for k in [1, 3] {
        let part = HostGraph {
            keypoint_slots: top(k),
            ..full
        };
        let b = run_tract(&part.encode().unwrap(), &feed).unwrap();
        let diff = kept_diff(&a, &b, k);
        eprintln!("real 288, keypoint slots {k}: kept slots max |diff| {diff:.2e}");
        assert!(diff <= 1e-5, "{diff}");
    }
}

#[test]
fn real_graph_loads_with_its_names_shapes_and_parameters() {
    let design = HostGraph::real(288).generate().unwrap();
    let taps = HostGraph {
        split: Split::Taps,
        keypoint_slots: KeypointSlots::All,
        ..HostGraph::real(288)
    }
    .generate()
    .unwrap();
    eprintln!(
        "real 288: design top-1 {} parameters, {:.1} MB; taps all slots {} parameters, {:.1} MB",
        design.parameters,
        design.bytes.len() as f64 / 1e6,
        taps.parameters,
        taps.bytes.len() as f64 / 1e6
    );
    // Upstream's host graph holds 13.46 M (projectors included, the keypoint initialiser as
    // learned queries rather than its folded result).
    assert!(
        (12_500_000..14_500_000).contains(&taps.parameters),
        "{}",
        taps.parameters
    );
    assert!(design.parameters + 2_500_000 < taps.parameters);
    let g = HostGraph::real(288);
    let out = run_tract(&design.bytes, &inputs(&g, 2)).unwrap();
    assert_eq!(shapes(&out), expected_shapes(&g));
}

#[test]
fn committed_fixtures_match_the_generator() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    for (file, g) in [
        (
            "decoder_reduced_288.onnx",
            reduced(288, Split::Design, KeypointSlots::All),
        ),
        (
            "decoder_reduced_432.onnx",
            reduced(432, Split::Design, KeypointSlots::All),
        ),
        (
            "decoder_reduced_taps_288.onnx",
            reduced(288, Split::Taps, KeypointSlots::All),
        ),
    ] {
        let path = fixtures.join(file);
        if std::env::var_os("HAILO_EDGE_WRITE_FIXTURES").is_some() {
            std::fs::write(&path, g.encode().unwrap()).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(
            committed == g.encode().unwrap(),
            "{} differs from the generator: regenerate it with `HAILO_EDGE_WRITE_FIXTURES=1 cargo test --lib decode::graph::tests::committed` (or `hailo-edge decoder-graph --reduced --side {} --split {} --keypoint-slots all -o {}`)",
            path.display(),
            g.side,
            g.split,
            path.display()
        );
    }
}

#[test]
fn the_cache_writes_once_reuses_and_regenerates_a_truncated_file() {
    let dir = tempfile::tempdir().unwrap();
    let g = reduced(288, Split::Design, top(1));
    let path = cache::cached_in(dir.path(), &g).unwrap();
    assert_eq!(path, dir.path().join(g.file_name()));
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(bytes, g.encode().unwrap());
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(cache::cached_in(dir.path(), &g).unwrap(), path);
    assert_eq!(
        std::fs::metadata(&path).unwrap().modified().unwrap(),
        mtime,
        "rewritten"
    );
    // Truncated: regenerated, whole again.
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    cache::cached_in(dir.path(), &g).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    // Same length, one byte flipped: regenerated too.
    let mut corrupt = bytes.clone();
    corrupt[bytes.len() / 3] ^= 0x55;
    std::fs::write(&path, &corrupt).unwrap();
    cache::cached_in(dir.path(), &g).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
    // No temporary files left behind.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn the_cache_directory_follows_the_variables_in_order() {
    let env = |vars: &'static [(&str, &str)]| {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| std::ffi::OsString::from(v))
        }
    };
    static ALL: [(&str, &str); 3] = [
        ("HAILO_EDGE_CACHE", "/c"),
        ("XDG_CACHE_HOME", "/x"),
        ("HOME", "/h"),
    ];
    let all = &ALL;
    assert_eq!(cache::dir_from(env(all)).unwrap(), Path::new("/c/decoders"));
    assert_eq!(
        cache::dir_from(env(&all[1..])).unwrap(),
        Path::new("/x/hailo-edge/decoders")
    );
    assert_eq!(
        cache::dir_from(env(&all[2..])).unwrap(),
        Path::new("/h/.cache/hailo-edge/decoders")
    );
    assert!(matches!(
        cache::dir_from(env(&[])),
        Err(GraphError::NoCacheDir)
    ));
}

#[cfg(feature = "ort")]
mod on_onnx_runtime {
    use super::*;
    use ort::session::Session;
    use ort::value::TensorRef;

    /// Runs ONNX bytes in ONNX Runtime (one thread), or `None` (printed) without ORT_DYLIB_PATH.
    fn run_ort(bytes: &[u8], feed: &[(String, tract_ndarray::ArrayD<f32>)]) -> Option<Outputs> {
        let Some(lib) = std::env::var_os("ORT_DYLIB_PATH") else {
            eprintln!("skipped: ORT_DYLIB_PATH is not set");
            return None;
        };
        // Given a library, a load failure is a failure: CI points ORT_DYLIB_PATH at its wheel.
        let env = match crate::decode::engine::ort::environment() {
            Ok(env) => env,
            Err(e) => panic!(
                "ORT_DYLIB_PATH={}: ONNX Runtime does not load: {e}",
                lib.to_string_lossy()
            ),
        };
        let mut session = Session::builder(env)
            .and_then(|b| Ok(b.with_intra_threads(1)?))
            .and_then(|mut b| b.commit_from_memory(bytes))
            .expect("session");
        let views: Vec<(&str, TensorRef<'_, f32>)> = feed
            .iter()
            .map(|(n, a)| {
                (
                    n.as_str(),
                    TensorRef::from_array_view(a.view()).expect("view"),
                )
            })
            .collect();
        let outputs = session.run(views).expect("run");
        let mut out = Outputs::new();
        for name in OUTPUTS {
            let a = outputs[name].try_extract_array::<f32>().expect("f32");
            out.insert(name.to_owned(), a.to_owned().into_dyn());
        }
        Some(out)
    }

    #[test]
    fn kept_slots_equal_the_full_graph_on_onnx_runtime() {
        let full = reduced(288, Split::Design, KeypointSlots::All);
        let feed = inputs(&full, 11);
        let Some(a) = run_ort(&full.encode().unwrap(), &feed) else {
            return;
        };
        for k in [1, 3] {
            let part = reduced(288, Split::Design, top(k));
            let b = run_ort(&part.encode().unwrap(), &feed).expect("loaded once");
            let diff = kept_diff(&a, &b, k);
            eprintln!("ONNX Runtime, keypoint slots {k}: kept slots max |diff| {diff:.2e}");
            assert!(diff <= 1e-5, "{diff}");
            let broken = Knobs {
                reversed_slots: true,
                ..Knobs::default()
            };
            let c = run_ort(&part.generate_with(broken).unwrap().bytes, &feed).expect("loaded");
            assert!(kept_diff(&a, &c, k) > 1e-3, "reversed slots accepted");
        }
        let t = run_tract(&full.encode().unwrap(), &feed).unwrap();
        let engines = kept_diff(&a, &t, 100);
        eprintln!("ONNX Runtime against tract, all slots: max |diff| {engines:.2e}");
        assert!(engines <= 1e-3, "{engines}");
    }
}

#[test]
#[ignore = "real width: generates and times the real graphs; run with --ignored --nocapture"]
fn real_graphs_generation_and_tract_time() {
    // Generation time, size and single-thread tract CPU time per run of the real design-split
    // top-1 graphs (the build profile decides the time: quote release figures only).
    let dir = tempfile::tempdir().unwrap();
    for side in [288, 432] {
        let g = HostGraph::real(side);
        let t0 = std::time::Instant::now();
        let path = cache::cached_in(dir.path(), &g).unwrap();
        let generated = t0.elapsed();
        let bytes = std::fs::read(&path).unwrap();
        let model = tract_onnx::onnx()
            .model_for_read(&mut &bytes[..])
            .unwrap()
            .into_optimized()
            .unwrap()
            .into_runnable()
            .unwrap();
        let feed: TVec<TValue> = inputs(&g, 5)
            .into_iter()
            .map(|(_, a)| a.into_tvalue())
            .collect();
        model.run(feed.clone()).unwrap();
        let runs = 5;
        let cpu0 = crate::geom::time::thread_cpu_ns();
        for _ in 0..runs {
            model.run(feed.clone()).unwrap();
        }
        let per_run = (crate::geom::time::thread_cpu_ns() - cpu0) as f64 / runs as f64 / 1e6;
        eprintln!(
            "real {side}: generated and cached in {:.2} s, {:.1} MB, tract 1 thread {per_run:.1} ms CPU per run ({})",
            generated.as_secs_f64(),
            bytes.len() as f64 / 1e6,
            path.display()
        );
        if let Some(out) = std::env::var_os("HAILO_EDGE_GRAPH_OUT") {
            std::fs::copy(&path, Path::new(&out).join(g.file_name())).unwrap();
        }
    }
    // The reduced slot graphs as files, for a comparison in another engine.
    if let Some(out) = std::env::var_os("HAILO_EDGE_GRAPH_OUT") {
        for slots in [KeypointSlots::All, top(1), top(3)] {
            let g = reduced(288, Split::Design, slots);
            std::fs::write(Path::new(&out).join(g.file_name()), g.encode().unwrap()).unwrap();
        }
    }
}

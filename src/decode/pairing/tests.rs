use super::*;

fn sides() -> PairingSides {
    PairingSides {
        hef: PathBuf::from("models/backbone_288.hef"),
        onnx: PathBuf::from("models/decoder_288.onnx"),
        key: "graph[0].inputs".into(),
    }
}

fn output(stream: &str, g: usize, c: usize) -> DeviceOutput {
    DeviceOutput {
        stream: stream.into(),
        height: g,
        width: g,
        channels: c,
    }
}

fn design_inputs(g: usize) -> Vec<MapSpec> {
    Split::Design
        .input_names()
        .iter()
        .map(|n| MapSpec::new(*n, 256, g, g))
        .collect()
}

fn taps_outputs(g: usize) -> Vec<DeviceOutput> {
    (0..4)
        .map(|i| output(&format!("backbone_288/tap{i}"), g, 384))
        .collect()
}

#[test]
fn outputs_pair_by_name_whatever_their_order() {
    // The compiler put cross_attn_features first: the pairing follows names.
    let outputs = [
        output("backbone_288/cross_attn_features", 24, 256),
        output("backbone_288/features", 24, 256),
    ];
    let p = Pairing::by_name(&sides(), &outputs, &design_inputs(24), &BTreeMap::new()).unwrap();
    let streams: Vec<&str> = p.pairs().iter().map(|p| p.from.stream.as_str()).collect();
    assert_eq!(
        streams,
        ["backbone_288/features", "backbone_288/cross_attn_features"]
    );
    assert_eq!(p.pairs()[0].output, 1);
    assert_eq!(p.split(), Some(Split::Design));
    assert_eq!(
        p.lines()[0],
        "backbone_288/features (24, 24, 256) -> features (1, 256, 24, 24)"
    );
    // Negative control: pairing by position would have fed features from output 0.
    assert_ne!(p.pairs()[0].output, 0);
}

#[test]
fn the_taps_split_is_recognised_too() {
    let mut outputs = taps_outputs(24);
    outputs.reverse();
    let inputs: Vec<MapSpec> = Split::Taps
        .input_names()
        .iter()
        .map(|n| MapSpec::new(*n, 384, 24, 24))
        .collect();
    let p = Pairing::by_name(&sides(), &outputs, &inputs, &BTreeMap::new()).unwrap();
    assert_eq!(p.split(), Some(Split::Taps));
    for (i, pair) in p.pairs().iter().enumerate() {
        assert_eq!(pair.from.short_name(), format!("tap{i}"));
        assert_eq!(pair.output, 3 - i);
    }
}

#[test]
fn a_four_tap_hef_with_a_two_map_decoder_names_everything() {
    let err = Pairing::by_name(
        &sides(),
        &taps_outputs(24),
        &design_inputs(24),
        &BTreeMap::new(),
    )
    .unwrap_err()
    .to_string();
    for want in [
        "models/backbone_288.hef",
        "models/decoder_288.onnx",
        "backbone_288/tap0 (24, 24, 384)",
        "features (1, 256, 24, 24)",
        "cross_attn_features (1, 256, 24, 24)",
        "graph[0].inputs",
        "taps split",
        "design split",
    ] {
        assert!(err.contains(want), "missing {want:?} in: {err}");
    }
}

#[test]
fn an_output_the_decoder_lacks_is_an_error_not_a_fallback() {
    let outputs = [
        output("backbone_288/features", 24, 256),
        output("backbone_288/conv41", 24, 256),
    ];
    let err =
        Pairing::by_name(&sides(), &outputs, &design_inputs(24), &BTreeMap::new()).unwrap_err();
    let PairingError::Unmatched {
        unmatched_outputs,
        unmatched_inputs,
        ..
    } = &*err
    else {
        panic!("expected Unmatched, got {err}");
    };
    assert_eq!(unmatched_outputs[0].stream, "backbone_288/conv41");
    assert_eq!(unmatched_inputs[0].name, "cross_attn_features");
    let text = err.to_string();
    assert!(
        text.contains("\"backbone_288/conv41\" = \"cross_attn_features\""),
        "{text}"
    );
    // The same outputs pair once [graph.inputs] maps the odd name.
    let explicit = BTreeMap::from([("conv41".to_string(), "cross_attn_features".to_string())]);
    let p = Pairing::by_name(&sides(), &outputs, &design_inputs(24), &explicit).unwrap();
    assert!(p.pairs()[1].explicit && !p.pairs()[0].explicit);
    assert!(
        p.lines()[1].ends_with("([graph.inputs])"),
        "{:?}",
        p.lines()
    );
}

#[test]
fn a_grid_or_channel_mismatch_is_refused() {
    let outputs = [
        output("backbone_432/features", 36, 256),
        output("backbone_432/cross_attn_features", 36, 256),
    ];
    let err = Pairing::by_name(&sides(), &outputs, &design_inputs(24), &BTreeMap::new())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("backbone_432/features (36, 36, 256)")
            && err.contains("features (1, 256, 24, 24)"),
        "{err}"
    );
    // Both lists, both files and the key, as for unmatched names.
    for want in [
        "backbone_432/cross_attn_features (36, 36, 256)",
        "cross_attn_features (1, 256, 24, 24)",
        "models/backbone_288.hef",
        "models/decoder_288.onnx",
        "graph[0].inputs",
    ] {
        assert!(err.contains(want), "missing {want:?} in: {err}");
    }
    let narrow = [
        output("b/features", 24, 128),
        output("b/cross_attn_features", 24, 256),
    ];
    let err = Pairing::by_name(&sides(), &narrow, &design_inputs(24), &BTreeMap::new());
    assert!(matches!(
        err.as_ref().map_err(|e| &**e),
        Err(PairingError::Shape { .. })
    ));
}

#[test]
fn explicit_entries_must_name_real_outputs_and_inputs() {
    let outputs = [
        output("b/features", 24, 256),
        output("b/cross_attn_features", 24, 256),
    ];
    for (from, to, want) in [
        ("b/nothing", "features", "the HEF has no such output"),
        ("features", "memory", "the decoder has no such input"),
    ] {
        let explicit = BTreeMap::from([(from.to_string(), to.to_string())]);
        let err = Pairing::by_name(&sides(), &outputs, &design_inputs(24), &explicit)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(want) && err.contains("graph[0].inputs"),
            "{err}"
        );
    }
    // Swapping on purpose is allowed, and is what runs.
    let swap = BTreeMap::from([
        ("features".to_string(), "cross_attn_features".to_string()),
        ("cross_attn_features".to_string(), "features".to_string()),
    ]);
    let p = Pairing::by_name(&sides(), &outputs, &design_inputs(24), &swap).unwrap();
    assert_eq!(p.pairs()[0].from.stream, "b/cross_attn_features");
}

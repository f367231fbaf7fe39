//! `hailo-edge cameras` on whatever machine runs the tests.

mod common;

use common::cli::{hailo_edge, json, succeed};

#[test]
fn cameras_lists_devices_or_says_there_are_none() {
    let out = succeed(hailo_edge().arg("cameras"));
    let text = String::from_utf8_lossy(&out.stdout);
    let has_video_nodes = std::fs::read_dir("/dev")
        .map(|d| {
            d.flatten()
                .any(|e| e.file_name().to_string_lossy().starts_with("video"))
        })
        .unwrap_or(false);
    if has_video_nodes {
        assert!(
            text.contains("/dev/video") || text.contains("no V4L2 capture devices found"),
            "{text}"
        );
    } else {
        assert!(
            text.starts_with("no V4L2 capture devices found (looked at 0 /dev/video* node(s))"),
            "{text}"
        );
        // What a user of the binary can run instead (no `cargo run --example`).
        assert!(
            text.contains("`hailo-edge run` runs the demo rig"),
            "{text}"
        );
        assert!(!text.contains("cargo"), "{text}");
    }
}

#[test]
fn cameras_toml_needs_no_other_flag_and_side_needs_toml() {
    succeed(hailo_edge().args(["cameras", "--toml", "--side", "432"]));
    hailo_edge()
        .args(["cameras", "--side", "432"])
        .assert()
        .failure()
        .stderr(predicates::str::contains("--toml"));
    hailo_edge()
        .args(["cameras", "--toml", "--json"])
        .assert()
        .failure();
}

#[test]
fn cameras_json_is_a_list() {
    let v = json(hailo_edge().args(["cameras", "--json"]));
    assert!(v.is_array(), "{v}");
}

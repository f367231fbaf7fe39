//! `hailo-edge cameras` on whatever machine runs the tests.

use assert_cmd::Command;

#[test]
fn cameras_lists_devices_or_says_there_are_none() {
    let out = Command::cargo_bin("hailo-edge")
        .unwrap()
        .arg("cameras")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    }
}

#[test]
fn cameras_json_is_a_list() {
    let out = Command::cargo_bin("hailo-edge")
        .unwrap()
        .args(["cameras", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v.is_array(), "{v}");
}

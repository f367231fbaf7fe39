use std::path::Path;

use super::super::{Caps, Sizes};
use super::*;
use crate::rig::config::RigConfig;

fn format(fourcc: &str, modes: &[((u32, u32), &[f64])]) -> FormatInfo {
    FormatInfo {
        fourcc: fourcc.into(),
        description: fourcc.into(),
        supported: pixel_format(fourcc).is_some(),
        sizes: Sizes::Discrete(modes.iter().map(|(s, _)| *s).collect()),
        rates: modes.iter().map(|(s, r)| (*s, r.to_vec())).collect(),
    }
}

/// A typical UVC camera: fast modes only in MJPEG, and raw frames fast
/// only when small.
fn uvc() -> Vec<FormatInfo> {
    vec![
        format(
            "YUYV",
            &[
                ((320, 240), &[120.0, 60.0]),
                ((640, 480), &[30.0]),
                ((1280, 720), &[10.0]),
            ],
        ),
        format(
            "MJPG",
            &[
                ((640, 480), &[120.0, 60.0, 30.0]),
                ((1280, 720), &[60.0, 30.0]),
            ],
        ),
        format("H264", &[((1920, 1080), &[240.0])]),
    ]
}

#[test]
fn the_fastest_mode_that_covers_the_side_wins() {
    let m = best_mode(&uvc(), 288, 120.0).unwrap();
    // 320x240 YUYV is as fast but 240 < 288 would upsample; H264 is not handled.
    assert_eq!(
        (m.format, m.width, m.height, m.fps),
        (PixelFormat::Mjpeg, 640, 480, 120.0)
    );
    // At a side of 240 the raw mode is as fast, and needs no JPEG decode.
    let m = best_mode(&uvc(), 240, 120.0).unwrap();
    assert_eq!((m.format, m.width, m.height), (PixelFormat::Yuyv, 320, 240));
    // A 60 fps cap takes the smaller of the two 60 fps MJPEG sizes.
    let m = best_mode(&uvc(), 432, 60.0).unwrap();
    assert_eq!((m.width, m.height, m.fps), (640, 480, 60.0));
    // Control: nothing covers 1080.
    assert_eq!(best_mode(&uvc(), 1080, 120.0), None);
}

fn device(node: &str, card: &str, formats: Vec<FormatInfo>) -> DeviceSummary {
    DeviceSummary {
        path: PathBuf::from(node),
        caps: Caps {
            driver: "uvcvideo".into(),
            card: card.into(),
            bus: "usb-0000:00:14.0-1".into(),
            capture: true,
            streaming: true,
        },
        formats,
    }
}

#[test]
fn entries_use_stable_paths_and_load_as_a_rig() {
    let devices = [
        device("/dev/video0", "Body Cam", uvc()),
        device("/dev/video2", "Face \x1b[2J Cam", uvc()),
        device(
            "/dev/video4",
            "Tiny",
            vec![format("YUYV", &[((160, 120), &[30.0])])],
        ),
    ];
    let stable = BTreeMap::from([(
        PathBuf::from("/dev/video0"),
        PathBuf::from("/dev/v4l/by-id/usb-Body_Cam_0001-video-index0"),
    )]);
    let text = rig_entries(&devices, &stable, 288, 120.0, "body");
    assert!(text.contains("source = \"v4l2:/dev/v4l/by-id/usb-Body_Cam_0001-video-index0\""));
    assert!(text.contains("source = \"v4l2:/dev/video2\""));
    assert!(text.contains("the node number may change"));
    assert!(text.contains("Tiny (/dev/video4): no handled format"));
    assert!(!text.contains('\x1b'), "device names are escaped: {text}");

    let rig = format!(
        "[device]\nbackend = \"sim\"\n\n[[graph]]\nname = \"body\"\nhef = \"b.hef\"\n\n{text}"
    );
    let rig = RigConfig::parse(&rig, Path::new("rigs/cameras.toml")).unwrap();
    assert_eq!(rig.cameras.len(), 2);
    assert_eq!(rig.cameras[0].name, "cam0");
    assert_eq!(rig.cameras[1].name, "cam1");
    assert_eq!((rig.cameras[0].width, rig.cameras[0].height), (640, 480));
    assert_eq!(rig.cameras[0].fps, 120.0);
    assert_eq!(rig.cameras[0].format, Some(PixelFormat::Mjpeg));
}

#[test]
fn stable_paths_follow_the_links_and_prefer_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let nodes = dir.path().join("dev");
    std::fs::create_dir_all(&nodes).unwrap();
    let (video0, video2) = (nodes.join("video0"), nodes.join("video2"));
    std::fs::write(&video0, b"").unwrap();
    std::fs::write(&video2, b"").unwrap();
    let v4l = dir.path().join("v4l");
    for d in ["by-id", "by-path"] {
        std::fs::create_dir_all(v4l.join(d)).unwrap();
    }
    let by_id = v4l.join("by-id/usb-Cam_42-video-index0");
    let by_path0 = v4l.join("by-path/pci-0000:00:14.0-usb-0:1:1.0-video-index0");
    let by_path2 = v4l.join("by-path/pci-0000:00:14.0-usb-0:2:1.0-video-index0");
    std::os::unix::fs::symlink(&video0, &by_id).unwrap();
    std::os::unix::fs::symlink(&video0, &by_path0).unwrap();
    std::os::unix::fs::symlink(&video2, &by_path2).unwrap();
    let map = stable_paths(&v4l);
    let real = |p: &Path| std::fs::canonicalize(p).unwrap();
    assert_eq!(map[&real(&video0)], by_id);
    assert_eq!(
        map[&real(&video2)],
        by_path2,
        "no by-id link: the port names it"
    );
    assert!(stable_paths(&dir.path().join("absent")).is_empty());
}

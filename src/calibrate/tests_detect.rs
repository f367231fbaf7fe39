//! The detector on rendered frames: corner ids and pixels against the projection that made
//! them.

use nalgebra::{Isometry3, Point3, Vector3};
use rand::SeedableRng;

use super::board::AprilGrid;
use super::detect::{BoardDetector, Luma};
use super::render::{Look, Pattern, Renderer};
use crate::geom::{Camera, Distortion};

fn board() -> AprilGrid {
    "aprilgrid:6x6:0.088:0.3".parse().unwrap()
}

fn camera(side: u32) -> Camera {
    Camera::look_at(
        Point3::new(0.0, 0.0, 1.0),
        Point3::origin(),
        Vector3::y(),
        60.0,
        (side, side),
        Distortion {
            k1: -0.12,
            k2: 0.03,
            p1: 0.001,
            p2: -0.0008,
            k3: 0.0,
        },
    )
    .unwrap()
}

#[test]
fn rendered_corners_are_found_where_they_project() {
    let board = board();
    let (bw, bh) = board.extent();
    let cam = camera(432);
    let pose = Isometry3::new(
        Vector3::new(-bw / 2.0, -bh / 2.0, 0.0),
        Vector3::new(0.3, -0.2, 0.4),
    );
    let pattern = Pattern::new(&board).unwrap();
    let renderer = Renderer::new(&cam, 3);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let pixels = renderer.render(&pattern, &pose, &Look::default(), &mut rng);
    let luma = Luma {
        width: 432,
        height: 432,
        pixels,
    };
    let corners = BoardDetector::new(&board).detect("cam", luma).unwrap();
    let mut sq = 0.0;
    let mut worst: f64 = 0.0;
    for c in &corners {
        let truth = cam.project(&(pose * board.corner(c.id).unwrap())).unwrap();
        let e = (c.pixel - truth).norm();
        sq += e * e;
        worst = worst.max(e);
    }
    let rms = (sq / corners.len() as f64).sqrt();
    eprintln!(
        "{} corners, rms {rms:.3} px, worst {worst:.3} px",
        corners.len()
    );
    assert!(corners.len() >= 100, "{}", corners.len());
    assert!(rms < 0.3, "{rms}");
}

#[test]
fn a_mirrored_or_empty_frame_gives_no_corners() {
    let board = board();
    let (bw, bh) = board.extent();
    let cam = camera(288);
    let pose = Isometry3::new(Vector3::new(-bw / 2.0, -bh / 2.0, 0.0), Vector3::zeros());
    let pattern = Pattern::new(&board).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(2);
    let pixels = Renderer::new(&cam, 3).render(&pattern, &pose, &Look::default(), &mut rng);
    let mut detector = BoardDetector::new(&board);
    let upright = Luma {
        width: 288,
        height: 288,
        pixels: pixels.clone(),
    };
    assert!(detector.detect("cam", upright.clone()).unwrap().len() >= 100);
    // Seen in a mirror the codes are not tag36h11's: nothing is taken for the board.
    let mirrored: Vec<u8> = pixels
        .chunks_exact(288)
        .flat_map(|row| row.iter().rev().copied())
        .collect();
    let mirrored = Luma {
        width: 288,
        height: 288,
        pixels: mirrored,
    };
    assert!(detector.detect("cam", mirrored).unwrap().is_empty());
    let blank = Luma {
        width: 288,
        height: 288,
        pixels: vec![128; 288 * 288],
    };
    assert!(detector.detect("cam", blank).unwrap().is_empty());
    // A smaller board takes only its own tags (ids 0..9) from the same frame.
    let small: AprilGrid = "aprilgrid:3x3:0.088:0.3".parse().unwrap();
    let found = BoardDetector::new(&small).detect("cam", upright).unwrap();
    assert!(
        !found.is_empty() && found.iter().all(|c| c.id < 36),
        "{found:?}"
    );
}

#[test]
fn luma_is_read_from_every_camera_format() {
    use crate::camera::frame::{CameraId, Frame, PixelFormat};

    let frame = |format, data: Vec<u8>| Frame::still(CameraId(0), format, 4, 2, data);
    let y: Vec<u8> = (10..18).collect();
    let yuyv: Vec<u8> = y.iter().flat_map(|&v| [v, 128]).collect();
    let nv12: Vec<u8> = y.iter().copied().chain([128; 4]).collect();
    let rgb: Vec<u8> = y.iter().flat_map(|&v| [v, v, v]).collect();
    for (format, data) in [
        (PixelFormat::Yuyv, yuyv),
        (PixelFormat::Nv12, nv12),
        (PixelFormat::Grey, y.clone()),
        (PixelFormat::Rgb24, rgb),
    ] {
        let luma = Luma::of_frame("cam", &frame(format, data)).unwrap();
        assert_eq!(luma.pixels, y, "{format}");
    }
    let short = Luma::of_frame("body1", &frame(PixelFormat::Yuyv, vec![0; 15])).unwrap_err();
    assert_eq!(
        short.to_string(),
        "body1: a yuyv frame of 4x2 needs 16 bytes, got 15"
    );
    // A UVC camera's MJPEG frame carries no Huffman tables: it decodes all the same.
    use crate::preprocess::jpeg::tests::{encode, smooth_rgb, strip_dht};
    let jpeg = encode(
        &smooth_rgb(16, 8),
        16,
        8,
        jpeg_encoder::SamplingFactor::R_4_2_2,
    );
    let bare = strip_dht(&jpeg);
    assert!(crate::preprocess::jpeg::lacks_huffman_tables(&bare));
    let mut mjpeg = frame(PixelFormat::Mjpeg, bare);
    (mjpeg.width, mjpeg.height) = (16, 8);
    let luma = Luma::of_frame("cam", &mjpeg).unwrap();
    assert_eq!((luma.width, luma.height, luma.pixels.len()), (16, 8, 128));
    let jpeg =
        Luma::of_frame("body1", &frame(PixelFormat::Mjpeg, vec![0xff, 0xd8, 0])).unwrap_err();
    assert!(
        jpeg.to_string()
            .starts_with("body1: the JPEG frame does not decode"),
        "{jpeg}"
    );
}

#[test]
fn the_rig_is_calibrated_from_rendered_frames() {
    use super::synthetic::{capture, errors, rig_errors, CaptureSpec};
    use super::{calibrate_rig, RigInput, Settings};
    let cameras = crate::scene::demo_rig();
    // Tags the 288-pixel body cameras resolve from the rig's middle, at 60 degrees, for the
    // instants that tie them (docs/calibrate.md#the-boards-size).
    let board: AprilGrid = "aprilgrid:5x5:0.25:0.3".parse().unwrap();
    let spec = CaptureSpec {
        render: Some(Look::default()),
        poses_per_camera: 200,
        ..CaptureSpec::default()
    };
    let cap = capture(&board, &cameras, &spec);
    let names: Vec<String> = crate::scene::DEMO_CAMERA_NAMES.map(String::from).to_vec();
    let sizes: Vec<(u32, u32)> = cameras.iter().map(|c| (c.width, c.height)).collect();
    let input = RigInput {
        board: &cap.board,
        names: &names,
        sizes: &sizes,
        anchor: &cap.anchor.unwrap(),
        placed: Some(&cameras),
    };
    let rig = calibrate_rig(&input, &cap.views, &Settings::default(), &mut |_, _, _| {}).unwrap();
    let shape = rig_errors(&cameras, rig.cameras()).unwrap();
    // The three body cameras find the board lying on the floor (9 to 26 corners each, at 63
    // degrees from its face, averaged over its 90 frames), and it fixes the world to some
    // hundredths of a degree (measured 0.026): docs/calibrate.md#from-rendered-frames.
    let anchor = cap.anchor.unwrap().pose;
    let up = (cap.poses[anchor].rotation * Vector3::z()).z;
    let on_floor: Vec<(usize, usize)> = cap
        .views
        .iter()
        .filter(|v| v.pose == anchor)
        .map(|v| (v.camera, v.corners.len()))
        .collect();
    eprintln!("anchor: face up {up:.3}, corners by camera {on_floor:?}");
    assert!(up > 0.999, "the anchor is not the board on the floor: {up}");
    assert_eq!(on_floor.len(), 3, "{on_floor:?}");
    eprintln!(
        "world: turned {:.4} degrees, shifted {:.3} mm",
        shape.world.rotation_deg, shape.world.position_mm
    );
    assert!(
        shape.world.rotation_deg < 0.05 && shape.world.position_mm < 2.0,
        "{shape:?}"
    );
    for (c, (truth, solved)) in cameras.iter().zip(rig.cameras()).enumerate() {
        let e = errors(truth, solved);
        let rms = rig.reprojection.cameras[c].rms_px().unwrap();
        assert!(
            rig.coverage[c].complete(),
            "{}: {}",
            names[c],
            rig.coverage[c]
        );
        assert!(
            e.focal_pct < 0.3 && e.principal_px < 1.0,
            "{}: {e:?}",
            names[c]
        );
        assert!(
            e.distortion_px < 0.3 && rms <= 0.3,
            "{}: {e:?}, {rms}",
            names[c]
        );
        // The targets hold in the rig's own shape, and in the world, where each camera also
        // carries the world's turn over its distance from the floor's board
        // (docs/calibrate.md#from-rendered-frames).
        let pose = shape.shape[c];
        eprintln!(
            "{}: shape {:.3} mm, {:.4} degrees; world {:.3} mm, {:.4} degrees",
            names[c], pose.position_mm, pose.rotation_deg, e.position_mm, e.rotation_deg
        );
        assert!(
            pose.position_mm < 2.0 && pose.rotation_deg < 0.1,
            "{}: {pose:?}",
            names[c]
        );
        assert!(
            e.position_mm < 2.0 && e.rotation_deg < 0.1,
            "{}: {e:?}",
            names[c]
        );
    }
    // The control: the world fixed by the instant two cameras or more share with the fewest
    // corners between them (a board seen small or at a slant) turns the rig past the world's
    // bound, and a camera past 0.1 degrees; the rig's shape is the same.
    let corners_at = |p: usize| -> Option<usize> {
        let seen: Vec<usize> = cap
            .views
            .iter()
            .filter(|v| v.pose == p)
            .map(|v| v.corners.len())
            .collect();
        (seen.len() >= 2).then(|| seen.iter().sum())
    };
    let weak = (0..cap.poses.len())
        .filter_map(|p| corners_at(p).map(|n| (n, p)))
        .min()
        .unwrap()
        .1;
    let anchor = super::extrinsics::Anchor {
        pose: weak,
        world_from_board: cap.poses[weak],
    };
    let input = RigInput {
        anchor: &anchor,
        ..input
    };
    let rig = calibrate_rig(&input, &cap.views, &Settings::default(), &mut |_, _, _| {}).unwrap();
    let moved = rig_errors(&cameras, rig.cameras()).unwrap();
    let worst = |rig: &[Camera]| {
        cameras
            .iter()
            .zip(rig)
            .map(|(t, s)| errors(t, s).rotation_deg)
            .fold(0.0, f64::max)
    };
    eprintln!(
        "anchor on the floor: world turned {:.4} degrees; on the weakest shared instant: {:.4} degrees, a camera {:.4} degrees off",
        shape.world.rotation_deg,
        moved.world.rotation_deg,
        worst(rig.cameras())
    );
    assert!(moved.world.rotation_deg > 0.05, "{moved:?}");
    assert!(worst(rig.cameras()) > 0.1, "{moved:?}");
    for (a, b) in shape.shape.iter().zip(&moved.shape) {
        assert!(
            (a.position_mm - b.position_mm).abs() < 0.5,
            "{shape:?} {moved:?}"
        );
    }
}

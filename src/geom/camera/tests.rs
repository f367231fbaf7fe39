use super::*;

/// The demo rig's second body camera, with mild barrel distortion.
fn side_camera() -> Camera {
    crate::scene::demo_rig()[1]
}

#[test]
fn look_at_projects_the_target_to_the_centre() {
    let cam = Camera::look_at(
        Point3::new(0.0, -3.0, 1.0),
        Point3::new(0.0, 0.0, 1.0),
        Vector3::z(),
        60.0,
        (288, 288),
        Distortion::default(),
    )
    .unwrap();
    let c = cam.project(&Point3::new(0.0, 0.0, 1.0)).unwrap();
    assert!((c.x - 144.0).abs() < 1e-9 && (c.y - 144.0).abs() < 1e-9);
    // World up is image up (smaller v); world +x is image right.
    assert!(cam.project(&Point3::new(0.0, 0.0, 1.5)).unwrap().y < 144.0);
    assert!(cam.project(&Point3::new(0.5, 0.0, 1.0)).unwrap().x > 144.0);
    assert!(cam.project(&Point3::new(0.0, -4.0, 1.0)).is_none());
    assert!(Camera::look_at(
        Point3::origin(),
        Point3::new(0.0, 0.0, 1.0),
        Vector3::z(),
        60.0,
        (8, 8),
        Distortion::default(),
    )
    .is_err());
}

#[test]
fn projection_jacobian_matches_finite_differences() {
    let cam = side_camera();
    let p = Point3::new(0.1, 0.2, 0.3);
    let (_, jac) = cam.project_with_jacobian(&p).unwrap();
    for k in 0..3 {
        let h = 1e-6;
        let mut a = p;
        let mut b = p;
        a[k] += h;
        b[k] -= h;
        let fd = (cam.project(&a).unwrap() - cam.project(&b).unwrap()) / (2.0 * h);
        assert!(
            (fd - jac.column(k)).norm() < 1e-4,
            "column {k}: {fd} vs {}",
            jac.column(k)
        );
    }
}

#[test]
fn the_jacobian_projection_is_the_projection() {
    let cam = side_camera();
    let p = Point3::new(0.2, -0.1, 0.4);
    let (a, b) = (
        cam.project_with_jacobian(&p).unwrap().0,
        cam.project(&p).unwrap(),
    );
    assert!((a - b).norm() < 1e-9, "{a} vs {b}");
    // A non-rotation is refused, naming the field.
    let mut bad = cam;
    bad.rotation *= 2.0;
    assert!(bad.check().unwrap_err().to_string().contains("rotation"));
}

#[test]
fn bad_intrinsics_are_named() {
    let err = Camera::new(
        [0.0, 1.0, 0.0, 0.0],
        (10, 10),
        Distortion::default(),
        Rotation3::identity(),
        Vector3::zeros(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("fx"), "{err}");
}

/// The camera's nine intrinsics in `intrinsics_jacobian`'s column order.
fn intrinsics_of(c: &Camera) -> [f64; 9] {
    let d = c.distortion;
    [c.fx, c.fy, c.cx, c.cy, d.k1, d.k2, d.p1, d.p2, d.k3]
}

fn with_intrinsics(c: &Camera, v: [f64; 9]) -> Camera {
    let mut out = *c;
    [out.fx, out.fy, out.cx, out.cy] = [v[0], v[1], v[2], v[3]];
    out.distortion = Distortion {
        k1: v[4],
        k2: v[5],
        p1: v[6],
        p2: v[7],
        k3: v[8],
    };
    out
}

#[test]
fn intrinsics_jacobian_matches_finite_differences() {
    let mut cam = side_camera();
    cam.distortion.k3 = 0.02;
    let pc = Vector3::new(0.3, -0.25, 1.1);
    let jac = cam.intrinsics_jacobian(&pc).unwrap();
    let (_, jc) = cam.project_camera_with_jacobian(&pc).unwrap();
    for k in 0..9 {
        let h = 1e-6;
        let (mut a, mut b) = (intrinsics_of(&cam), intrinsics_of(&cam));
        a[k] += h;
        b[k] -= h;
        let pa = with_intrinsics(&cam, a).project_camera(&pc).unwrap();
        let pb = with_intrinsics(&cam, b).project_camera(&pc).unwrap();
        let fd = (pa - pb) / (2.0 * h);
        assert!(
            (fd - jac.column(k)).norm() < 1e-5,
            "column {k}: {fd} vs {}",
            jac.column(k)
        );
    }
    for k in 0..3 {
        let h = 1e-7;
        let (mut a, mut b) = (pc, pc);
        a[k] += h;
        b[k] -= h;
        let fd = (cam.project_camera(&a).unwrap() - cam.project_camera(&b).unwrap()) / (2.0 * h);
        assert!((fd - jc.column(k)).norm() < 1e-4, "point column {k}");
    }
    // Negative control: a wrong column (fx's taken as fy's) is told apart.
    assert!((jac.column(0) - jac.column(1)).norm() > 1e-3);
    assert!(cam
        .intrinsics_jacobian(&Vector3::new(0.0, 0.0, -1.0))
        .is_none());
}

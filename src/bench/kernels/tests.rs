use super::*;

#[test]
fn preprocessing_work_follows_the_tensor_size() {
    let w = camera::work(288);
    assert_eq!(w.elements, 288 * 288 * 3);
    assert_eq!(w.int_macs, 288 * 288 * 16);
    assert_eq!(camera::work(432).elements, 432 * 432 * 3);
}

#[test]
fn softmax_and_matmul_work() {
    let w = work::softmax(&[1, 8, 100, 100]);
    assert_eq!((w.elements, w.exps), (80_000, 80_000));
    assert_eq!(work::matmul(1_000).macs, 1_000);
}

#[test]
fn deformable_sampling_work_counts_four_corners_per_point_and_channel() {
    // value (H=16, C=16, 24, 24), grid (16, Lq=100, P=2, 2).
    let w = work::deform_sample(&[16, 16, 24, 24], &[16, 100, 2, 2]);
    assert_eq!(w.macs, 16 * 100 * 2 * 4 * 16);
    assert_eq!(w.elements, 16 * 16 * 100);
    // Projected: weight (H=16, D=256, dh=16): taps over D, then D x dh per query and head.
    let p = work::deform_project(&[16, 256, 16], &[16, 100, 2, 2]);
    assert_eq!(p.macs, 16 * 100 * 2 * 4 * 256 + 16 * 100 * 256 * 16);
    assert_eq!(p.elements, 16 * 16 * 100);
}

#[test]
fn a_row_renders_its_kernel_path_and_figures() {
    let work = camera::work(288);
    let row = Row {
        side: 288,
        kernel: Kernel::Preprocess,
        case: "1280x720 yuyv".into(),
        nodes: 1,
        path: Kernel::Preprocess.path(),
        work,
        measured_ms: 1.25,
        model_ms: CORTEX_A76_PI5.predict_ms(&work),
    };
    let text = render(&[row], &CORTEX_A76_PI5);
    assert!(text.contains("Cortex-A76"), "{text}");
    assert!(text.contains("preprocess"), "{text}");
    assert!(text.contains("1.250"), "{text}");
    assert!(
        text.contains(&format!("[{}]", Kernel::Preprocess.path())),
        "{text}"
    );
    #[cfg(target_arch = "aarch64")]
    assert_eq!(Kernel::Attention.path(), "neon + gemm neon");
    assert_eq!(Kernel::MatMul.path(), "tract-linalg");
}

#[test]
fn the_reduced_decoder_has_every_hot_kernel_with_work_from_its_shapes() {
    let path = crate::fixture("decoder_reduced_288.onnx");
    let rows = table(&[(288, Some(path))], 1).unwrap();
    // Every product of the reduced graph goes to gemm: tract keeps none of them.
    for kernel in Kernel::ALL.into_iter().filter(|&k| k != Kernel::MatMul) {
        assert!(rows.iter().any(|r| r.kernel == kernel), "no {kernel} row");
    }
    let of = |k: Kernel| rows.iter().find(|r| r.kernel == k).unwrap();
    for r in &rows {
        assert!(r.measured_ms > 0.0, "{} measured nothing", r.kernel);
        assert_eq!(r.side, 288);
    }
    assert_eq!(
        rows.iter()
            .filter(|r| r.kernel == Kernel::Preprocess)
            .count(),
        2
    );
    assert!(of(Kernel::Attention).work.macs > 0);
    assert!(of(Kernel::DeformSample).work.macs > 0);
    assert!(of(Kernel::Linear).work.macs > 0);
    assert_eq!(of(Kernel::Other).work, Work::default());
    eprintln!("{}", render(&rows, &CORTEX_A76_PI5));
    for r in &rows {
        eprintln!("{:?} {:?}", r.kernel, r.work);
    }
}

/// The real-width table at 288 and 432 (the figures docs/performance.md quotes for the
/// work counts and the model): `cargo test --lib bench::kernels -- --ignored --nocapture`.
#[test]
#[ignore = "generates and runs the real-width decoder graphs (minutes in a test build)"]
fn real_width_table() {
    let rows = table(&[(288, None), (432, None)], 3).unwrap();
    print!("{}", render(&rows, &CORTEX_A76_PI5));
    for kernel in Kernel::ALL {
        assert_eq!(
            rows.iter().filter(|r| r.kernel == kernel).count(),
            if kernel == Kernel::Preprocess { 4 } else { 2 }
        );
    }
}

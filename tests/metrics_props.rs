//! Property tests: parsers round-trip, the planner is additive, and the op counter turns any
//! bytes into a report or an error, never a panic.

use hailo_edge::metrics::ops::builder::{encode, Dim, GraphBuilder};
use hailo_edge::metrics::ops::{count_bytes, InputShape};
use hailo_edge::metrics::plan::{max_fps, plan, CameraMode, CostModel, Utilisation};
use hailo_edge::metrics::utilisation::Precision;
use proptest::prelude::*;

fn matmul_model(b: usize, m: usize, k: usize, n: usize) -> Vec<u8> {
    let mut g = GraphBuilder::new("mm", 17);
    let a = g.input("a", &[Dim::from(b), m.into(), k.into()]);
    let w = g.filled("w", &[k, n], 0.5);
    let y = g.node("MatMul", "mm", &[&a, &w], &[]);
    g.output(&y);
    encode(&g.finish())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn camera_round_trips(side in 1u32..4000, fps in 1u32..1000, graph in proptest::option::of("[a-z]{1,8}")) {
        let cam = CameraMode { side, fps: f64::from(fps), graph };
        prop_assert_eq!(cam.to_string().parse::<CameraMode>().unwrap(), cam);
    }

    #[test]
    fn input_shape_parses(name in "[a-z_][a-z0-9_.:]{0,12}", dims in proptest::collection::vec(1usize..5000, 1..6)) {
        let text = format!("{name}={}", dims.iter().map(|d| d.to_string()).collect::<Vec<_>>().join("x"));
        let parsed: InputShape = text.parse().unwrap();
        prop_assert_eq!(parsed.name, name);
        prop_assert_eq!(parsed.shape, dims);
    }

    #[test]
    fn batched_matmul_count(b in 1usize..5, m in 1usize..9, k in 1usize..9, n in 1usize..9) {
        let r = count_bytes("mm", &matmul_model(b, m, k, n), &[]).unwrap();
        prop_assert!(r.is_complete());
        prop_assert_eq!(r.total_macs(), (b * m * k * n) as u64);
    }

    #[test]
    fn shares_add_up(a in proptest::collection::vec((1u32..=24, 1u32..240), 1..5),
                     b in proptest::collection::vec((1u32..=24, 1u32..240), 1..5)) {
        let costs = CostModel::rfdetr_backbone();
        let u = Utilisation::assumed(0.3).unwrap();
        let cams = |v: &[(u32, u32)]| v.iter().map(|&(s, f)| CameraMode { side: 24 * s, fps: f64::from(f), graph: None }).collect::<Vec<_>>();
        let (ca, cb) = (cams(&a), cams(&b));
        let both: Vec<CameraMode> = ca.iter().chain(&cb).cloned().collect();
        let (pa, pb, pab) = (plan(&ca, &costs, &u).unwrap(), plan(&cb, &costs, &u).unwrap(), plan(&both, &costs, &u).unwrap());
        for i in 0..2 {
            let sum = pa.precisions[i].share + pb.precisions[i].share;
            prop_assert!((pab.precisions[i].share - sum).abs() <= 1e-9 * sum.max(1.0));
        }
        // One camera at its own max fps fills exactly one part.
        let c = &pa.cameras[0];
        let full = CameraMode { fps: max_fps(c.cost.gmac, 0.3, Precision::Int8), ..c.camera.clone() };
        prop_assert!((plan(&[full], &costs, &u).unwrap().precisions[0].share - 1.0).abs() < 1e-9);
    }

    #[test]
    fn any_bytes_give_a_report_or_an_error(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = count_bytes("random", &bytes, &[]);
    }

    #[test]
    fn truncated_models_never_panic(cut in 0usize..1000) {
        let model = matmul_model(2, 3, 4, 5);
        let cut = cut.min(model.len());
        let _ = count_bytes("truncated", &model[..cut], &[]);
    }

    #[test]
    fn mutated_models_never_panic(flips in proptest::collection::vec((0usize..10_000, any::<u8>()), 1..8)) {
        let mut model = matmul_model(2, 3, 4, 5);
        for (at, byte) in flips {
            let i = at % model.len();
            model[i] = byte;
        }
        let _ = count_bytes("mutated", &model, &[]);
    }
}

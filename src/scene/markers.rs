//! A light test pattern that needs no body model: coloured spheres swinging on smooth
//! periodic paths, for calibration, sync and preprocessing tests.

use nalgebra::Point3;

use super::{GroundTruth, Scene, SceneError};
use crate::geom::Camera;

/// A repeatable test scene: coloured spheres swinging on smooth periodic
/// paths around the origin (a calibration and sync target, not a body model).
#[derive(Debug, Clone)]
pub struct MarkerScene {
    /// Marker centres at rest (world metres, z up).
    pub rest: Vec<[f64; 3]>,
    /// Marker radius, metres.
    pub radius: f64,
    /// Period of the motion, seconds.
    pub period: f64,
}

impl Default for MarkerScene {
    fn default() -> Self {
        // 17 points around a pelvis at the origin: a vertical chain from the
        // feet to the head and two arms, roughly person-sized.
        let mut rest = Vec::new();
        for i in 0..7 {
            rest.push([0.0, 0.0, -0.8 + 0.25 * f64::from(i)]);
        }
        for side in [-1.0, 1.0] {
            for i in 1..=5 {
                rest.push([side * 0.13 * f64::from(i), 0.0, 0.45 - 0.05 * f64::from(i)]);
            }
        }
        Self {
            rest,
            radius: 0.04,
            period: 4.0,
        }
    }
}

impl MarkerScene {
    /// Marker positions at `t` and the pose parameters (sway angle, twist angle).
    pub fn state(&self, t: f64) -> (Vec<[f64; 3]>, [f64; 2]) {
        let w = std::f64::consts::TAU / self.period;
        let sway = 0.3 * (w * t).sin();
        let twist = 0.8 * (0.5 * w * t).sin();
        let (ss, cs) = sway.sin_cos();
        let (st, ct) = twist.sin_cos();
        let pts = self
            .rest
            .iter()
            .map(|&[x, y, z]| {
                // Sway about the x axis through the floor point, then twist about z.
                let (y1, z1) = (y * cs - z * ss, y * ss + z * cs);
                [x * ct - y1 * st, x * st + y1 * ct, z1]
            })
            .collect();
        (pts, [sway, twist])
    }
}

impl Scene for MarkerScene {
    fn name(&self) -> &str {
        "markers"
    }

    fn render(&self, t: f64, camera: &Camera, rgb: &mut [u8]) -> Result<GroundTruth, SceneError> {
        let (w, h) = (camera.width as usize, camera.height as usize);
        rgb.fill(96);
        let (pts, pose) = self.state(t);
        let mut keypoints_2d = Vec::with_capacity(pts.len());
        // Far markers first, so near ones cover them.
        let mut order: Vec<(usize, f64)> = pts
            .iter()
            .enumerate()
            .map(|(i, p)| (i, camera.to_camera(&Point3::from(*p)).z))
            .collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1));
        for &(i, z) in &order {
            let Some(px) = camera.project(&Point3::from(pts[i])) else {
                continue;
            };
            let r = (self.radius * camera.fx / z).max(1.5);
            let colour = palette(i);
            let (cx, cy) = (px.x, px.y);
            let (x0, x1) = (
                (cx - r).floor().max(0.0) as usize,
                ((cx + r).ceil().max(0.0) as usize).min(w),
            );
            let (y0, y1) = (
                (cy - r).floor().max(0.0) as usize,
                ((cy + r).ceil().max(0.0) as usize).min(h),
            );
            for y in y0..y1 {
                for x in x0..x1 {
                    let (dx, dy) = (x as f64 + 0.5 - cx, y as f64 + 0.5 - cy);
                    if dx * dx + dy * dy <= r * r {
                        rgb[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&colour);
                    }
                }
            }
        }
        for p in &pts {
            keypoints_2d.push(
                camera
                    .project(&Point3::from(*p))
                    .map(|q| [q.x as f32, q.y as f32]),
            );
        }
        Ok(GroundTruth {
            keypoints_2d,
            keypoints_3d: pts.iter().map(|p| p.map(|v| v as f32)).collect(),
            pose: pose.iter().map(|&v| v as f32).collect(),
        })
    }
}

fn palette(i: usize) -> [u8; 3] {
    const P: [[u8; 3]; 6] = [
        [230, 60, 50],
        [60, 200, 80],
        [50, 90, 230],
        [240, 220, 60],
        [220, 80, 220],
        [240, 240, 240],
    ];
    P[i % P.len()]
}

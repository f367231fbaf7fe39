//! Rasterising the posed mesh into a calibrated camera view, with ground-truth 2D keypoints.
//!
//! A plain z-buffer rasteriser: vertices are projected through the full camera model
//! (distortion included), triangles are filled with perspective-correct depth, and each
//! pixel is shaded with a Lambert term for a light at the camera. It exists to make synthetic
//! views for tests and the simulated cameras, not to look good.

use image::{Rgb, RgbImage};
use nalgebra::{Point2, Point3, Vector3};

use super::kinematics::Pose;
use super::rest::Rest;
use super::{Model, KEYPOINT_COUNT};
use crate::body::BodyError;
use crate::geom::Camera;

/// Depth margin (metres) within which a keypoint counts as visible: keypoints lie inside the
/// body, up to about a limb's thickness behind the surface that covers them.
pub const VISIBILITY_MARGIN: f64 = 0.12;

const BACKGROUND: Rgb<u8> = Rgb([24, 26, 30]);
const SKIN: [f64; 3] = [222.0, 184.0, 160.0];

/// Ground truth for one keypoint in one view.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ViewKeypoint {
    /// Pixel, `None` when the keypoint is behind the camera.
    pub pixel: Option<Point2<f64>>,
    /// Depth along the camera axis, metres.
    pub depth: f64,
    /// In the image and not hidden by a surface more than [`VISIBILITY_MARGIN`] in front.
    pub visible: bool,
}

/// A rendered view.
#[derive(Debug, Clone)]
pub struct View {
    pub image: RgbImage,
    /// Camera depth of the nearest surface per pixel (`f32::INFINITY` where empty), row-major.
    pub depth: Vec<f32>,
    pub keypoints: [ViewKeypoint; KEYPOINT_COUNT],
}

/// Renders a posed body into a camera.
pub fn render(model: &Model, rest: &Rest, pose: &Pose, camera: &Camera) -> Result<View, BodyError> {
    if camera.width == 0 || camera.height == 0 || camera.width > 8192 || camera.height > 8192 {
        return Err(BodyError::Render(format!(
            "image size {}x{} outside 1..=8192",
            camera.width, camera.height
        )));
    }
    if !(camera.fx > 0.0 && camera.fy > 0.0) {
        return Err(BodyError::Render("focal lengths must be positive".into()));
    }
    let skeleton = model.skeleton(rest, pose)?;
    let mut world = vec![Point3::origin(); model.vertex_count()];
    model.skin_into(rest, &skeleton, &mut world)?;
    let keypoints = rest.keypoints.evaluate(&skeleton);
    Ok(rasterise(model, &world, &keypoints, camera))
}

fn rasterise(
    model: &Model,
    world: &[Point3<f64>],
    keypoints: &[Point3<f64>; KEYPOINT_COUNT],
    camera: &Camera,
) -> View {
    let (w, h) = (camera.width as usize, camera.height as usize);
    let cam: Vec<Vector3<f64>> = world.iter().map(|p| camera.to_camera(p)).collect();
    let pix: Vec<Option<Point2<f64>>> = cam.iter().map(|p| camera.project_camera(p)).collect();
    let mut depth = vec![f32::INFINITY; w * h];
    let mut image = RgbImage::from_pixel(camera.width, camera.height, BACKGROUND);
    for f in model.faces() {
        let [a, b, c] = f.map(|i| i as usize);
        let (Some(pa), Some(pb), Some(pc)) = (pix[a], pix[b], pix[c]) else {
            continue;
        };
        // Lambert shading from the face normal, light at the camera.
        let normal = (cam[b] - cam[a]).cross(&(cam[c] - cam[a]));
        let centre = (cam[a] + cam[b] + cam[c]) / 3.0;
        let n = normal.norm();
        if n == 0.0 {
            continue;
        }
        let lambert = (normal.dot(&centre) / (n * centre.norm())).abs();
        let shade = 0.25 + 0.75 * lambert;
        let colour = Rgb(SKIN.map(|c| (c * shade).round().clamp(0.0, 255.0) as u8));

        let area = edge(&pa, &pb, &pc);
        if area.abs() < 1e-12 {
            continue;
        }
        let (inv_za, inv_zb, inv_zc) = (1.0 / cam[a].z, 1.0 / cam[b].z, 1.0 / cam[c].z);
        let x0 = pa.x.min(pb.x).min(pc.x).floor().max(0.0) as usize;
        let x1 = (pa.x.max(pb.x).max(pc.x).ceil().min(w as f64 - 1.0)).max(-1.0);
        let y0 = pa.y.min(pb.y).min(pc.y).floor().max(0.0) as usize;
        let y1 = (pa.y.max(pb.y).max(pc.y).ceil().min(h as f64 - 1.0)).max(-1.0);
        if x1 < 0.0 || y1 < 0.0 {
            continue;
        }
        for y in y0..=y1 as usize {
            for x in x0..=x1 as usize {
                let p = Point2::new(x as f64 + 0.5, y as f64 + 0.5);
                let (wa, wb, wc) = (
                    edge(&pb, &pc, &p) / area,
                    edge(&pc, &pa, &p) / area,
                    edge(&pa, &pb, &p) / area,
                );
                if wa < 0.0 || wb < 0.0 || wc < 0.0 {
                    continue;
                }
                let z = (1.0 / (wa * inv_za + wb * inv_zb + wc * inv_zc)) as f32;
                let at = y * w + x;
                if z < depth[at] {
                    depth[at] = z;
                    image.put_pixel(x as u32, y as u32, colour);
                }
            }
        }
    }
    let keypoints = keypoints.map(|k| {
        let pc = camera.to_camera(&k);
        let pixel = camera.project_camera(&pc);
        let visible = pixel.is_some_and(|p| {
            camera.contains(&p) && {
                let at = p.y as usize * w + p.x as usize;
                f64::from(depth[at]) + VISIBILITY_MARGIN >= pc.z
            }
        });
        ViewKeypoint {
            pixel,
            depth: pc.z,
            visible,
        }
    });
    View {
        image,
        depth,
        keypoints,
    }
}

/// Twice the signed area of (a, b, p).
fn edge(a: &Point2<f64>, b: &Point2<f64>, p: &Point2<f64>) -> f64 {
    (b.x - a.x) * (p.y - a.y) - (b.y - a.y) * (p.x - a.x)
}

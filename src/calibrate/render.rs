//! The printed AprilGrid rendered through a [`Camera`]: what a camera's frame shows of the
//! board at a pose, with the lens's distortion, blur, sensor noise and the frame's edges
//! cutting the board. The synthetic capture's images, so that the detector's corners (not
//! corners made up with noise) are what the calibration's tests solve from.
//!
//! The board is Kalibr's: tag36h11 tags, tag `i` at column `i % cols` and row `i / cols`
//! from the bottom left, each printed upright (its image's top row towards the board's +y),
//! a black square in every crossing of the gaps between tags, all on white paper with one
//! gap of margin.

use kornia_apriltag::family::TagFamily;
use nalgebra::{Isometry3, Matrix3, Point2, Vector3};
use rand::Rng;
use rand_distr::{Distribution, Normal};

use super::board::AprilGrid;
use crate::geom::Camera;

/// Cells across a tag36h11 tag's black square (its data bits and the black border).
const TAG_CELLS: u32 = 8;

/// How a rendered frame looks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Look {
    /// Grey level of the printed black.
    pub black: f64,
    /// Grey level of the paper.
    pub white: f64,
    /// Grey level of the room behind the board.
    pub background: f64,
    /// Gaussian blur, standard deviation in pixels (focus and motion).
    pub blur_px: f64,
    /// Sensor noise, standard deviation in grey levels.
    pub noise: f64,
}

impl Default for Look {
    fn default() -> Self {
        Self {
            black: 35.0,
            white: 215.0,
            background: 110.0,
            blur_px: 0.6,
            noise: 2.0,
        }
    }
}

/// The board's printed pattern: which of its points are black.
#[derive(Debug, Clone)]
pub struct Pattern {
    board: AprilGrid,
    /// Each tag's 8 x 8 cells, row 0 at the tag's top, `true` for black.
    tags: Vec<[[bool; TAG_CELLS as usize]; TAG_CELLS as usize]>,
}

/// Why a board has no printable pattern.
#[derive(Debug, thiserror::Error)]
pub enum PatternError {
    /// The tag family's tables did not load.
    #[error("tag36h11: {0}")]
    Family(#[from] kornia_apriltag::errors::AprilTagError),
    /// The board has more tags than the family has codes.
    #[error("{board} has {tags} tags; tag36h11 has {codes} codes")]
    TooManyTags {
        board: String,
        tags: u32,
        codes: usize,
    },
}

impl Pattern {
    /// The pattern of `board`, its tags drawn from tag36h11's codes.
    ///
    /// # Errors
    /// A board with more tags than tag36h11 has codes (587).
    pub fn new(board: &AprilGrid) -> Result<Self, PatternError> {
        let family = TagFamily::tag36_h11()?;
        let codes = &family.code_data;
        if board.tags() as usize > codes.len() {
            return Err(PatternError::TooManyTags {
                board: board.to_string(),
                tags: board.tags(),
                codes: codes.len(),
            });
        }
        let tags = (0..board.tags() as usize)
            .map(|id| {
                let mut cells = [[true; TAG_CELLS as usize]; TAG_CELLS as usize];
                for (i, (&x, &y)) in family.bit_x.iter().zip(&family.bit_y).enumerate() {
                    let white = codes[id] >> (family.nbits - 1 - i) & 1 == 1;
                    cells[y as usize][x as usize] = !white;
                }
                cells
            })
            .collect();
        Ok(Self {
            board: *board,
            tags,
        })
    }

    /// Whether the board point `(x, y)` (metres, board frame) is printed black; `None` off
    /// the paper.
    pub fn black_at(&self, x: f64, y: f64) -> Option<bool> {
        let b = &self.board;
        let size = b.tag_size();
        let gap = size * b.spacing();
        let pitch = size + gap;
        let (w, h) = b.extent();
        if x < -gap || y < -gap || x > w + gap || y > h + gap {
            return None;
        }
        // Position within the pitch cell whose tag starts at the cell's origin; the gap
        // before a tag is the previous cell's tail (negative for the first).
        let col = ((x + gap) / pitch).floor();
        let row = ((y + gap) / pitch).floor();
        let (u, v) = (x - col * pitch, y - row * pitch);
        let in_gap_x = u < 0.0 || u >= size;
        let in_gap_y = v < 0.0 || v >= size;
        if in_gap_x || in_gap_y {
            // The squares at the gaps' crossings.
            return Some(in_gap_x && in_gap_y);
        }
        let (col, row) = (col as u32, row as u32);
        if col >= b.cols() || row >= b.rows() {
            return Some(false);
        }
        let tag = &self.tags[(row * b.cols() + col) as usize];
        let cell = |t: f64| ((t / size * f64::from(TAG_CELLS)) as usize).min(7);
        // Row 0 of the tag's image is its top, at the board's larger y.
        Some(tag[7 - cell(v)][cell(u)])
    }
}

/// Renders one camera's frames of the board: the rays of its pixels' sub-samples are
/// undistorted once, so a frame costs one plane intersection per sub-sample.
#[derive(Debug, Clone)]
pub struct Renderer {
    camera: Camera,
    /// Sub-samples per pixel along each side.
    supersample: u32,
    /// Undistorted normalised coordinates of every sub-sample, row by row.
    rays: Vec<[f64; 2]>,
}

impl Renderer {
    /// A renderer for `camera`, `supersample`² samples a pixel (clamped to 1..=8).
    pub fn new(camera: &Camera, supersample: u32) -> Self {
        let s = supersample.clamp(1, 8);
        let (w, h) = (camera.width * s, camera.height * s);
        let step = 1.0 / f64::from(s);
        let mut rays = Vec::with_capacity(w as usize * h as usize);
        for y in 0..h {
            for x in 0..w {
                // Pixel centres at integers: pixel (0, 0) covers [-0.5, 0.5)².
                let px = Point2::new(
                    (f64::from(x) + 0.5) * step - 0.5,
                    (f64::from(y) + 0.5) * step - 0.5,
                );
                let n = camera.normalize(&px);
                rays.push([n.x, n.y]);
            }
        }
        Self {
            camera: *camera,
            supersample: s,
            rays,
        }
    }

    /// The camera it renders for.
    pub fn camera(&self) -> &Camera {
        &self.camera
    }

    /// The camera's grey frame of the board at `world_from_board`, `look` applied, noise drawn
    /// from `rng`.
    pub fn render<R: Rng>(
        &self,
        pattern: &Pattern,
        world_from_board: &Isometry3<f64>,
        look: &Look,
        rng: &mut R,
    ) -> Vec<u8> {
        let cam = &self.camera;
        // Board plane to normalised image: [r1 r2 t] of camera-from-board; its inverse takes
        // a ray to the board point it meets.
        let r = cam.rotation * world_from_board.rotation.to_rotation_matrix().matrix();
        let t = cam.rotation * world_from_board.translation.vector + cam.translation;
        let h = Matrix3::from_columns(&[r.column(0).into(), r.column(1).into(), t]);
        let normal_z = r.column(2).dot(&t);
        let inverse = h.try_inverse();
        let s = self.supersample as usize;
        let (w, hgt) = (cam.width as usize, cam.height as usize);
        let mut sums = vec![0.0f64; w * hgt];
        let sw = w * s;
        for (i, ray) in self.rays.iter().enumerate() {
            let value = match inverse {
                // Only the face of the board towards the camera (the camera on the +z side),
                // and only points in front of the camera.
                Some(inv) if normal_z < 0.0 => {
                    let q = inv * Vector3::new(ray[0], ray[1], 1.0);
                    if q.z > 0.0 {
                        match pattern.black_at(q.x / q.z, q.y / q.z) {
                            Some(true) => look.black,
                            Some(false) => look.white,
                            None => look.background,
                        }
                    } else {
                        look.background
                    }
                }
                _ => look.background,
            };
            let (sx, sy) = (i % sw, i / sw);
            sums[(sy / s) * w + sx / s] += value;
        }
        let per = (s * s) as f64;
        let image: Vec<f64> = sums.into_iter().map(|v| v / per).collect();
        let image = blur(&image, w, hgt, look.blur_px);
        let noise = Normal::new(0.0, look.noise.max(0.0)).ok();
        image
            .into_iter()
            .map(|v| {
                let n = noise.map_or(0.0, |d| d.sample(rng));
                (v + n).round().clamp(0.0, 255.0) as u8
            })
            .collect()
    }
}

/// A separable Gaussian blur of standard deviation `sigma` pixels, edges clamped.
fn blur(image: &[f64], w: usize, h: usize, sigma: f64) -> Vec<f64> {
    if sigma.is_nan() || sigma <= 0.05 {
        return image.to_vec();
    }
    let radius = (3.0 * sigma).ceil() as isize;
    let kernel: Vec<f64> = (-radius..=radius)
        .map(|k| (-(k * k) as f64 / (2.0 * sigma * sigma)).exp())
        .collect();
    let total: f64 = kernel.iter().sum();
    let kernel: Vec<f64> = kernel.into_iter().map(|k| k / total).collect();
    let pass = |src: &[f64], horizontal: bool| {
        let mut out = vec![0.0; src.len()];
        for y in 0..h {
            for x in 0..w {
                let mut acc = 0.0;
                for (k, weight) in kernel.iter().enumerate() {
                    let d = k as isize - radius;
                    let (sx, sy) = if horizontal {
                        ((x as isize + d).clamp(0, w as isize - 1) as usize, y)
                    } else {
                        (x, (y as isize + d).clamp(0, h as isize - 1) as usize)
                    };
                    acc += weight * src[sy * w + sx];
                }
                out[y * w + x] = acc;
            }
        }
        out
    };
    pass(&pass(image, true), false)
}

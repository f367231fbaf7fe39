//! The reprojection error of a calibration, per camera and per view: what a calibration
//! reports beside the files it writes, so a camera or a view that does not fit is seen
//! before the calibration is used.
//!
//! A *view* is one image of a camera used by the calibration (a board pose, or a frame of
//! a body recording); its residuals are the pixel distances between the detected points
//! and the points projected through the calibration.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

/// One view's residuals.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ViewResiduals {
    /// What the view is: a frame number, a timestamp, a board pose's name.
    pub view: String,
    /// Points compared.
    pub points: usize,
    /// Root mean square of the residuals, pixels.
    pub rms_px: f64,
    /// Largest residual, pixels.
    pub max_px: f64,
}

/// One camera's views.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CameraResiduals {
    /// The camera's name.
    pub camera: String,
    /// Its views, in the order they were added.
    pub views: Vec<ViewResiduals>,
}

/// The reprojection error of a calibration, per camera and per view.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReprojectionReport {
    /// The cameras, in the order they were first added.
    pub cameras: Vec<CameraResiduals>,
}

impl ViewResiduals {
    /// A view from its residuals (pixel distances); non-finite residuals count as
    /// infinitely large, so a failed projection never hides in the mean.
    pub fn from_residuals(view: impl Into<String>, residuals_px: &[f64]) -> Self {
        let sq: f64 = residuals_px
            .iter()
            .map(|r| if r.is_finite() { r * r } else { f64::INFINITY })
            .sum();
        let max = residuals_px
            .iter()
            .map(|r| {
                if r.is_finite() {
                    r.abs()
                } else {
                    f64::INFINITY
                }
            })
            .fold(0.0, f64::max);
        let n = residuals_px.len();
        ViewResiduals {
            view: view.into(),
            points: n,
            rms_px: if n == 0 { 0.0 } else { (sq / n as f64).sqrt() },
            max_px: max,
        }
    }
}

impl CameraResiduals {
    /// Points over all views.
    pub fn points(&self) -> usize {
        self.views.iter().map(|v| v.points).sum()
    }

    /// Root mean square over all the camera's points (each view weighted by its points);
    /// `None` without points.
    pub fn rms_px(&self) -> Option<f64> {
        let n = self.points();
        let sq: f64 = self
            .views
            .iter()
            .map(|v| v.rms_px * v.rms_px * v.points as f64)
            .sum();
        (n > 0).then(|| (sq / n as f64).sqrt())
    }

    /// The view with the largest RMS.
    pub fn worst_view(&self) -> Option<&ViewResiduals> {
        self.views
            .iter()
            .max_by(|a, b| a.rms_px.total_cmp(&b.rms_px))
    }
}

impl ReprojectionReport {
    /// Adds a view of `camera` from its residuals (pixel distances).
    pub fn add_view(&mut self, camera: &str, view: impl Into<String>, residuals_px: &[f64]) {
        let v = ViewResiduals::from_residuals(view, residuals_px);
        match self.cameras.iter_mut().find(|c| c.camera == camera) {
            Some(c) => c.views.push(v),
            None => self.cameras.push(CameraResiduals {
                camera: camera.to_string(),
                views: vec![v],
            }),
        }
    }

    /// Root mean square over every camera's points; `None` without points.
    pub fn rms_px(&self) -> Option<f64> {
        let n: usize = self.cameras.iter().map(CameraResiduals::points).sum();
        let sq: f64 = self
            .cameras
            .iter()
            .filter_map(|c| c.rms_px().map(|r| r * r * c.points() as f64))
            .sum();
        (n > 0).then(|| (sq / n as f64).sqrt())
    }

    /// A table per camera (views, points, RMS, largest residual, worst view), then, with
    /// `views`, every view.
    pub fn render(&self, views: bool) -> String {
        let mut out = String::from("reprojection error (measured on the calibration's views)\n");
        let _ = writeln!(
            out,
            "{:<16} {:>6} {:>8} {:>9} {:>9}  worst view",
            "camera", "views", "points", "rms px", "max px"
        );
        let fmt = |v: Option<f64>| v.map_or_else(|| "-".into(), |v| format!("{v:.3}"));
        for c in &self.cameras {
            let max = c
                .views
                .iter()
                .map(|v| v.max_px)
                .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
            let worst = c
                .worst_view()
                .map_or_else(String::new, |w| format!("{} ({:.3} px)", w.view, w.rms_px));
            let _ = writeln!(
                out,
                "{:<16} {:>6} {:>8} {:>9} {:>9}  {worst}",
                c.camera,
                c.views.len(),
                c.points(),
                fmt(c.rms_px()),
                fmt(max),
            );
        }
        let _ = writeln!(out, "all cameras: rms {} px", fmt(self.rms_px()));
        if views {
            for c in &self.cameras {
                let _ = writeln!(out, "\n{}:", c.camera);
                for v in &c.views {
                    let _ = writeln!(
                        out,
                        "  {:<20} {:>6} points  rms {:.3} px  max {:.3} px",
                        v.view, v.points, v.rms_px, v.max_px
                    );
                }
            }
        }
        out
    }
}

//! The boxes `fuse` hears from: which of their cameras it takes (their calibrations must share
//! one world frame), whether each box is present, and how far its clock is from this host's.

use std::collections::{BTreeMap, VecDeque};

use serde::Serialize;

use crate::camera::calib::checks::{check_rig, Unit};
use crate::camera::calib::CalibratedCamera;
use crate::geom::Camera;

/// Seconds of clock samples the skew estimate is the least of.
pub const SKEW_WINDOW_S: f64 = 2.0;

/// Why a box is not fused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("rig `{rig}`: {what}")]
pub struct Refusal {
    pub rig: String,
    pub what: String,
}

/// Why a box's camera cannot join the cameras fused so far.
#[derive(Debug, thiserror::Error)]
pub enum CameraRefused {
    /// The calibration itself is not a camera.
    #[error("camera {camera}: its calibration is refused: {source}")]
    Calibration {
        camera: usize,
        source: crate::geom::CameraError,
    },
    /// Its pose does not stand with the other boxes' cameras in one world frame.
    #[error("its calibration is not in the others' world frame: {source}")]
    WorldFrame {
        source: crate::camera::calib::checks::RigCheckError,
    },
}

/// Whether a box's views are fused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Presence {
    /// Heard from within the absence limit.
    Present,
    /// Silent past the absence limit: the others are fused without it.
    Absent,
    /// Its calibration is not in the others' world frame; never fused.
    Refused,
}

/// One box: its cameras, presence and clock.
#[derive(Debug)]
pub struct RigBox {
    pub name: String,
    /// Camera index in the box → (slot in the fused rig, calibration).
    pub cameras: BTreeMap<usize, (usize, Camera)>,
    pub presence: Presence,
    pub refusal: Option<String>,
    /// Since when its clock has been compared (first heard, or heard again after a gap);
    /// its views are fused only once a whole window is judged within the tolerance.
    judging_since_ns: u64,
    /// Whether its clock was judged within the tolerance on the last whole window.
    clock_ok: bool,
    /// When it was last taken in (its clock judged within), this host's monotonic ns: views
    /// of instants that left before then were never awaited, so they are not late.
    pub fused_since_ns: u64,
    /// This host's monotonic ns when the box was last heard.
    last_heard_ns: u64,
    /// (arrival monotonic ns, arrival wall − sent wall ns) of recent messages.
    delays: VecDeque<(u64, i64)>,
    pub stats: RigStats,
}

/// What `fuse` counted of one box.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RigStats {
    /// Views received.
    pub views: u64,
    /// Views fused into an instant.
    pub fused: u64,
    /// Views that came after their instant had been fused (too late).
    pub late: u64,
    /// Views not fused because the box was refused or its clock was off.
    pub not_fused: u64,
    /// Times the box fell silent past the absence limit.
    pub gaps: u64,
    /// Times it was heard again after a gap.
    pub returns: u64,
    /// Instants fused while the box was absent.
    pub instants_missed: u64,
    /// Seconds it was absent.
    pub absent_s: f64,
    /// The latest clock offset estimate, ms: the least of (this host's wall clock at arrival
    /// less the box's at sending) over the last 2 s. Network delay is in it (a LAN adds well
    /// under a millisecond); a box whose clock is ahead shows a negative figure.
    pub clock_offset_ms: Option<f64>,
    /// The largest |estimate| seen, ms.
    pub clock_offset_max_ms: f64,
    /// Times the estimate went past the tolerance.
    pub skew_detected: u64,
    /// Whether the estimate is past the tolerance now (its views are not fused).
    pub skewed: bool,
}

impl RigBox {
    fn new(name: &str, now_ns: u64) -> Self {
        Self {
            name: name.to_owned(),
            cameras: BTreeMap::new(),
            presence: Presence::Present,
            refusal: None,
            judging_since_ns: now_ns,
            clock_ok: false,
            fused_since_ns: 0,
            last_heard_ns: now_ns,
            delays: VecDeque::new(),
            stats: RigStats::default(),
        }
    }

    /// Whether its views go into instants now.
    pub fn fused(&self) -> bool {
        self.presence == Presence::Present && self.clock_ok
    }

    /// Starts comparing its clock afresh (heard again after a gap: perhaps another machine,
    /// or one whose clock stepped).
    fn judge_afresh(&mut self, now_ns: u64) {
        self.delays.clear();
        self.judging_since_ns = now_ns;
        self.clock_ok = false;
        self.stats.skewed = false;
    }

    /// Takes one clock sample and re-estimates; returns whether the judgement changed.
    fn clock_sample(&mut self, now_ns: u64, delay_ns: i64, tolerance_ns: u64) -> bool {
        self.delays.push_back((now_ns, delay_ns));
        let horizon = now_ns.saturating_sub((SKEW_WINDOW_S * 1e9) as u64);
        while self.delays.front().is_some_and(|&(t, _)| t < horizon) {
            self.delays.pop_front();
        }
        let Some(least) = self.delays.iter().map(|&(_, d)| d).min() else {
            return false;
        };
        let ms = least as f64 / 1e6;
        self.stats.clock_offset_ms = Some(ms);
        // Judged on a whole window: the least delay of a few messages is still the delay of
        // a loaded host, not the clock.
        let judged = now_ns.saturating_sub(self.judging_since_ns) >= (SKEW_WINDOW_S * 1e9) as u64;
        if !judged {
            return false;
        }
        self.stats.clock_offset_max_ms = self.stats.clock_offset_max_ms.max(ms.abs());
        let skewed = least.unsigned_abs() > tolerance_ns;
        let changed = skewed != self.stats.skewed || skewed == self.clock_ok;
        if skewed && !self.stats.skewed {
            self.stats.skew_detected += 1;
        }
        self.stats.skewed = skewed;
        if !skewed && !self.clock_ok {
            self.fused_since_ns = now_ns;
        }
        self.clock_ok = !skewed;
        changed
    }
}

/// How a view was taken in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Into the fused rig, as this slot.
    Slot(usize),
    /// Not fused (counted on the box).
    NotFused,
    /// The view that got its box refused: what the box's other cameras left waiting is to
    /// be taken back from the instants.
    Refused(usize),
}

/// Every box heard from, and the fused rig's camera slots.
#[derive(Debug, Default)]
pub struct Boxes {
    pub boxes: Vec<RigBox>,
    /// Per slot: (box index, camera index in the box).
    pub slots: Vec<(usize, usize)>,
    /// Clock skew past which a box is not fused, ns.
    pub tolerance_ns: u64,
    /// Silence after which a box is absent, ns.
    pub absent_after_ns: u64,
}

impl Boxes {
    /// No box yet.
    pub fn new(tolerance_ns: u64, absent_after_ns: u64) -> Self {
        Self {
            tolerance_ns,
            absent_after_ns,
            ..Self::default()
        }
    }

    /// Takes in one view of `rig`'s `camera`, calibrated as `calibration`, received at
    /// `now_ns` (monotonic) with `delay_ns` between the box's sending and this host's
    /// receiving on the two wall clocks. A camera seen first is checked against the world
    /// frame of the boxes before it; a box that fails is refused for good (logged once).
    pub fn admit(
        &mut self,
        rig: &str,
        camera: usize,
        calibration: &Camera,
        now_ns: u64,
        delay_ns: i64,
    ) -> Admission {
        let b = match self.boxes.iter().position(|b| b.name == rig) {
            Some(i) => i,
            None => {
                self.boxes.push(RigBox::new(rig, now_ns));
                log::info!("rig `{rig}`: first view");
                self.boxes.len() - 1
            }
        };
        let tolerance = self.tolerance_ns;
        let this = &mut self.boxes[b];
        this.stats.views += 1;
        this.last_heard_ns = now_ns;
        if this.presence == Presence::Absent {
            this.presence = Presence::Present;
            this.stats.returns += 1;
            this.judge_afresh(now_ns);
            log::info!(
                "rig `{rig}`: heard again; fused with the others once its clock is judged ({SKEW_WINDOW_S} s)"
            );
        }
        if this.presence == Presence::Refused {
            this.stats.not_fused += 1;
            return Admission::NotFused;
        }
        if this.clock_sample(now_ns, delay_ns, tolerance) {
            let ms = this.stats.clock_offset_ms.unwrap_or(0.0);
            if this.stats.skewed {
                log::warn!(
                    "rig `{rig}`: its clock is {:.1} ms {} this host's (tolerance {:.1} ms); \
                     its views are not fused until it is back within",
                    ms.abs(),
                    if ms < 0.0 { "ahead of" } else { "behind" },
                    tolerance as f64 / 1e6
                );
            } else {
                log::info!("rig `{rig}`: clock within tolerance ({ms:+.2} ms); fused");
            }
        }
        if let Some(&(slot, _)) = self.boxes[b].cameras.get(&camera) {
            return if self.boxes[b].fused() {
                Admission::Slot(slot)
            } else {
                self.boxes[b].stats.not_fused += 1;
                Admission::NotFused
            };
        }
        if let Err(what) = self.check(b, camera, calibration) {
            let refusal = Refusal {
                rig: rig.to_owned(),
                what: what.to_string(),
            };
            log::error!("{refusal}; its views are not fused");
            let this = &mut self.boxes[b];
            this.presence = Presence::Refused;
            this.refusal = Some(refusal.what);
            this.stats.not_fused += 1;
            return Admission::Refused(b);
        }
        let slot = self.slots.len();
        self.slots.push((b, camera));
        self.boxes[b].cameras.insert(camera, (slot, *calibration));
        if self.boxes[b].fused() {
            Admission::Slot(slot)
        } else {
            self.boxes[b].stats.not_fused += 1;
            Admission::NotFused
        }
    }

    /// Whether box `b`'s `camera` can join the cameras taken in so far: one rig's checks
    /// ([`check_rig`]) over the union of every box's cameras, so a box in another world
    /// frame (cameras coinciding with another box's, a scale off by 1000, a view shared with
    /// no other camera) fails with the two cameras named.
    fn check(&self, b: usize, camera: usize, c: &Camera) -> Result<(), CameraRefused> {
        c.check()
            .map_err(|source| CameraRefused::Calibration { camera, source })?;
        let mut all: Vec<CalibratedCamera> = self
            .boxes
            .iter()
            .filter(|ob| ob.presence != Presence::Refused)
            .flat_map(|ob| {
                ob.cameras.iter().map(|(i, (_, cal))| CalibratedCamera {
                    name: format!("{}/cam{i}", ob.name),
                    camera: *cal,
                })
            })
            .collect();
        all.push(CalibratedCamera {
            name: format!("{}/cam{camera}", self.boxes[b].name),
            camera: *c,
        });
        check_rig(&all, Unit::Metre).map_err(|source| CameraRefused::WorldFrame { source })
    }

    /// Marks boxes silent past the limit absent (logged, counted); `now_ns` monotonic.
    pub fn tick(&mut self, now_ns: u64, elapsed_s: f64) {
        for b in &mut self.boxes {
            match b.presence {
                Presence::Present
                    if now_ns.saturating_sub(b.last_heard_ns) > self.absent_after_ns =>
                {
                    b.presence = Presence::Absent;
                    b.stats.gaps += 1;
                    log::warn!(
                        "rig `{}`: nothing for {:.1} s; fusing the others without it",
                        b.name,
                        self.absent_after_ns as f64 / 1e9
                    );
                }
                Presence::Absent => b.stats.absent_s += elapsed_s,
                _ => {}
            }
        }
    }

    /// The slots of the boxes fused now: what a complete instant holds. A box is fused only
    /// after a whole window of clock comparison, so its cameras are all known by then.
    pub fn expected(&self) -> Vec<usize> {
        self.boxes
            .iter()
            .filter(|b| b.fused())
            .flat_map(|b| b.cameras.values().map(|&(s, _)| s))
            .collect()
    }

    /// The calibrations of all slots, in slot order.
    pub fn calibrations(&self) -> Vec<Camera> {
        self.slots
            .iter()
            .map(|&(b, c)| self.boxes[b].cameras[&c].1)
            .collect()
    }

    /// Counts one fused instant on the boxes absent or skewed at the time.
    pub fn count_missed(&mut self) {
        for b in &mut self.boxes {
            if b.presence == Presence::Absent {
                b.stats.instants_missed += 1;
            }
        }
    }
}

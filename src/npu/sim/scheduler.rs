//! The model scheduler, as HailoRT documents it, as a pure decision function.
//!
//! When the device is idle it scans priorities from high to low and round
//! robin within a priority. A model is ready when it has at least one frame
//! and either `threshold` frames are queued or `timeout` has passed since it
//! last ran. The active model keeps the device after a burst unless a model
//! of equal or higher priority is ready. A burst is up to the batch size.
//! Choosing a model other than the active one is a switch.
//!
//! With scheduling NONE only the manually activated model runs.

use std::collections::{BTreeMap, VecDeque};

/// What the scheduler knows about one configured model.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelState {
    pub priority: u8,
    pub threshold: u32,
    pub timeout_ns: u64,
    /// Frames per burst (the configured batch size, at least 1).
    pub batch: u32,
    /// When the model last finished a burst (or was configured).
    pub last_run_end_ns: u64,
    /// Arrival times of the queued frames, oldest first.
    pub arrivals: VecDeque<u64>,
}

impl ModelState {
    /// A model with HailoRT's defaults: priority 16, threshold 0, timeout 0.
    pub fn new(batch: u32, now_ns: u64) -> ModelState {
        ModelState {
            priority: 16,
            threshold: 0,
            timeout_ns: 0,
            batch: batch.max(1),
            last_run_end_ns: now_ns,
            arrivals: VecDeque::new(),
        }
    }

    /// Frames that have arrived by `now`.
    pub fn visible(&self, now: u64) -> usize {
        self.arrivals.iter().take_while(|&&t| t <= now).count()
    }

    /// The readiness rule.
    pub fn ready(&self, now: u64) -> bool {
        let frames = self.visible(now);
        frames >= 1
            && (frames as u64 >= u64::from(self.threshold)
                || now >= self.last_run_end_ns.saturating_add(self.timeout_ns))
    }

    /// The next time this model's state can change without a new arrival.
    fn next_event(&self, now: u64) -> Option<u64> {
        let next_arrival = self.arrivals.iter().copied().find(|&t| t > now);
        let timeout = (self.visible(now) >= 1 && !self.ready(now))
            .then(|| self.last_run_end_ns.saturating_add(self.timeout_ns));
        match (next_arrival, timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

impl AsRef<ModelState> for ModelState {
    fn as_ref(&self) -> &ModelState {
        self
    }
}

/// The scheduler's choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Run `frames` frames of `model`; `switch` when it was not the active one.
    Run {
        model: u64,
        frames: usize,
        switch: bool,
    },
    /// Nothing to run now; state may change at `wake_at` without new frames.
    Idle { wake_at: Option<u64> },
}

/// Scheduler state across decisions: the active model and the round-robin
/// cursor of each priority.
#[derive(Debug, Clone, Default)]
pub struct Scheduler {
    pub active: Option<u64>,
    cursor: BTreeMap<u8, u64>,
}

impl Scheduler {
    /// The round-robin decision at `now` over `models` (by id).
    pub fn decide<M: AsRef<ModelState>>(
        &mut self,
        models: &BTreeMap<u64, M>,
        now: u64,
    ) -> Decision {
        if let Some(active) = self
            .active
            .and_then(|id| models.get(&id).map(|m| (id, m.as_ref())))
        {
            let (id, m) = active;
            let frames = m.visible(now);
            let contender = models
                .iter()
                .map(|(&other, o)| (other, o.as_ref()))
                .any(|(other, o)| other != id && o.priority >= m.priority && o.ready(now));
            if frames >= 1 && !contender {
                return Decision::Run {
                    model: id,
                    frames: frames.min(m.batch as usize),
                    switch: false,
                };
            }
        }
        let mut priorities: Vec<u8> = models.values().map(|m| m.as_ref().priority).collect();
        priorities.sort_unstable_by(|a, b| b.cmp(a));
        priorities.dedup();
        for p in priorities {
            let ids: Vec<u64> = models
                .iter()
                .filter(|(_, m)| m.as_ref().priority == p)
                .map(|(&id, _)| id)
                .collect();
            let start = self
                .cursor
                .get(&p)
                .and_then(|last| ids.iter().position(|id| id > last))
                .unwrap_or(0);
            let order = ids[start..].iter().chain(ids[..start].iter());
            for &id in order {
                let m = models[&id].as_ref();
                if m.ready(now) {
                    self.cursor.insert(p, id);
                    let switch = self.active != Some(id);
                    self.active = Some(id);
                    return Decision::Run {
                        model: id,
                        frames: m.visible(now).min(m.batch as usize),
                        switch,
                    };
                }
            }
        }
        Decision::Idle {
            wake_at: models
                .values()
                .filter_map(|m| m.as_ref().next_event(now))
                .min(),
        }
    }

    /// The decision with scheduling NONE: only `active` runs, in bursts.
    pub fn decide_manual<M: AsRef<ModelState>>(
        models: &BTreeMap<u64, M>,
        active: Option<u64>,
        now: u64,
    ) -> Decision {
        match active.and_then(|id| models.get(&id).map(|m| (id, m.as_ref()))) {
            Some((id, m)) if m.visible(now) >= 1 => Decision::Run {
                model: id,
                frames: m.visible(now).min(m.batch as usize),
                switch: false,
            },
            Some((_, m)) => Decision::Idle {
                wake_at: m.arrivals.iter().copied().find(|&t| t > now),
            },
            None => Decision::Idle { wake_at: None },
        }
    }

    /// Forgets a released model.
    pub fn forget(&mut self, id: u64) {
        if self.active == Some(id) {
            self.active = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(priority: u8, frames: &[u64]) -> ModelState {
        let mut m = ModelState::new(1, 0);
        m.priority = priority;
        m.arrivals = frames.iter().copied().collect();
        m
    }

    #[test]
    fn higher_priority_first_then_round_robin() {
        let mut models = BTreeMap::new();
        models.insert(1, model(16, &[0, 0]));
        models.insert(2, model(16, &[0, 0]));
        models.insert(3, model(20, &[0]));
        let mut s = Scheduler::default();
        let d = s.decide(&models, 0);
        assert_eq!(
            d,
            Decision::Run {
                model: 3,
                frames: 1,
                switch: true
            }
        );
        models.get_mut(&3).unwrap().arrivals.clear();
        // Same priority: 1 then 2 then 1 (round robin), each a switch.
        let mut order = vec![];
        for _ in 0..3 {
            match s.decide(&models, 0) {
                Decision::Run { model, switch, .. } => {
                    assert!(switch);
                    order.push(model);
                    models.get_mut(&model).unwrap().arrivals.pop_front();
                }
                other => panic!("expected a run, got {other:?}"),
            }
        }
        assert_eq!(order, vec![1, 2, 1]);
    }

    #[test]
    fn threshold_waits_for_frames_or_timeout() {
        let mut m = model(16, &[0, 0]);
        m.threshold = 3;
        m.timeout_ns = 100;
        assert!(!m.ready(50));
        assert!(m.ready(100), "timeout since the last run has passed");
        m.arrivals.push_back(60);
        assert!(m.ready(60), "three frames reach the threshold");
        let mut models = BTreeMap::new();
        let mut waiting = model(16, &[0]);
        waiting.threshold = 2;
        waiting.timeout_ns = 100;
        models.insert(7, waiting);
        let mut s = Scheduler::default();
        assert_eq!(s.decide(&models, 10), Decision::Idle { wake_at: Some(100) });
    }

    #[test]
    fn active_model_keeps_the_device_without_contenders() {
        let mut models = BTreeMap::new();
        models.insert(1, model(16, &[0, 0, 0]));
        let mut lower = model(10, &[0]);
        lower.threshold = 0;
        models.insert(2, lower);
        let mut s = Scheduler::default();
        assert!(matches!(
            s.decide(&models, 0),
            Decision::Run {
                model: 1,
                switch: true,
                ..
            }
        ));
        assert_eq!(
            s.decide(&models, 0),
            Decision::Run {
                model: 1,
                frames: 1,
                switch: false
            }
        );
    }

    #[test]
    fn manual_runs_only_the_active_model() {
        let mut models = BTreeMap::new();
        models.insert(1, model(16, &[0]));
        models.insert(2, model(16, &[0]));
        assert_eq!(
            Scheduler::decide_manual(&models, Some(2), 0),
            Decision::Run {
                model: 2,
                frames: 1,
                switch: false
            }
        );
        assert_eq!(
            Scheduler::decide_manual(&models, None, 0),
            Decision::Idle { wake_at: None }
        );
    }
}

//! The async queue of a configured model: how many jobs it takes in flight,
//! and what the simulator does past that, as HailoRT 5.2 does.
//!
//! The queue size is HailoRT's rule for a boundary channel
//! (`ResourcesManager::calc_default_queue_size`, resource_manager.cpp:427-449):
//! 32 MiB of the nn-core's queue divided by the stream's transfer size,
//! clamped to `[2 x batch, max(2 x batch, 32)]` (`MIN_ACTIVE_TRANSFERS_SCALE`
//! 2, `MAX_ACTIVE_TRANSFERS_SCALE` 32 on Linux, hailort_driver.hpp:43-48); the
//! model's queue is the smallest of its streams' (`CoreOp::infer_queue_size`,
//! core_op.cpp:404-419), which is what `get_async_queue_size` answers.
//!
//! One job more and the card's pipeline refuses it with `HAILO_QUEUE_IS_FULL`
//! (async_infer_runner.cpp:318-319), `ConfiguredInferModel::run_async` shuts
//! the card's copy of the model down (infer_model.cpp:597-604), the server
//! answers the request with that status (hrpc/server.cpp:164-167), and the
//! client hands it to the completion callback. Every later job of that model
//! meets the aborted pipeline and fails with `HAILO_STREAM_ABORT`
//! (async_infer_runner.cpp:246-251 and 315-316).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::completion::SimJob;
use super::core::{lock, Core, CoreState, Fail, Pending};
use super::model_spec::ModelSpec;
use super::status::*;

/// Bytes of the nn-core's queue HailoRT sizes a Hailo-10H's channels for.
const NN_CORE_QUEUE_BYTES: usize = 32 * 1024 * 1024;
/// `MIN_ACTIVE_TRANSFERS_SCALE`: frames of a batch the queue holds at least twice.
const MIN_ACTIVE_TRANSFERS_SCALE: usize = 2;
/// `MAX_ACTIVE_TRANSFERS_SCALE` on Linux.
const MAX_ACTIVE_TRANSFERS_SCALE: usize = 32;

/// The async queue size HailoRT gives a model with these streams and batch.
pub(crate) fn async_queue_size(spec: &ModelSpec) -> usize {
    let batch = usize::from(spec.batch.max(1));
    let least = MIN_ACTIVE_TRANSFERS_SCALE * batch;
    let most = least.max(MAX_ACTIVE_TRANSFERS_SCALE);
    spec.inputs
        .iter()
        .chain(&spec.outputs)
        .map(|s| (NN_CORE_QUEUE_BYTES / s.device_frame_size().max(1)).clamp(least, most))
        .min()
        .unwrap_or(least)
}

impl Core {
    /// The async queue size of model `id`.
    pub(crate) fn async_queue_size(&self, id: u64) -> Result<usize, Fail> {
        self.with_model(id, |st| Ok(st.models[&id].queue_size))
    }

    /// Frees a slot of model `id` for each of `jobs` and completes them with `status`.
    pub(super) fn finish(&self, id: u64, jobs: impl IntoIterator<Item = (Arc<SimJob>, u32)>) {
        let jobs: Vec<_> = jobs.into_iter().collect();
        if let Some(m) = lock(&self.state).models.get_mut(&id) {
            m.in_flight = m.in_flight.saturating_sub(jobs.len());
        }
        self.slots.notify_all();
        for (job, status) in jobs {
            job.complete(status);
        }
    }

    /// Waits until model `id` has room for `frames` more jobs
    /// (`ConfiguredInferModel::wait_for_async_ready`: HAILO_TIMEOUT when it
    /// does not within `timeout`, always when `frames` exceeds the queue).
    pub(crate) fn wait_for_slots(
        &self,
        id: u64,
        frames: usize,
        timeout: Duration,
    ) -> Result<(), Fail> {
        let st = lock(&self.state);
        let room = |st: &CoreState| {
            st.models
                .get(&id)
                .map(|m| m.in_flight + frames <= m.queue_size)
        };
        if room(&st).is_none() {
            return Err((
                HAILO_NOT_FOUND,
                format!("configured model {id} is not on device {}", self.id),
            ));
        }
        let (st, _) = self
            .slots
            .wait_timeout_while(st, timeout, |st| room(st) == Some(false))
            .unwrap_or_else(|e| e.into_inner());
        match st.models.get(&id) {
            Some(m) if m.in_flight + frames <= m.queue_size => Ok(()),
            Some(m) => Err((
                HAILO_TIMEOUT,
                format!(
                    "the edge could not receive {frames} transfer-requests within {} ms \
                     ({} in flight, queue {})",
                    timeout.as_millis(),
                    m.in_flight,
                    m.queue_size
                ),
            )),
            None => Err((
                HAILO_NOT_FOUND,
                format!("configured model {id} left device {}", self.id),
            )),
        }
    }

    /// A job past the model's queue, or of a model the card shut down: it
    /// fails in its completion, and an overflow shuts the model down (the
    /// card's behaviour, in this module's documentation).
    pub(super) fn overflow(&self, st: &mut CoreState, id: u64, job: Arc<SimJob>) {
        let Some(model) = st.models.get_mut(&id) else {
            return;
        };
        let status = if model.down {
            HAILO_STREAM_ABORT
        } else {
            log::warn!(
                "'{}': {} jobs in flight, its async queue holds {}: HAILO_QUEUE_IS_FULL, \
                 the model shuts down",
                model.spec.name,
                model.in_flight,
                model.queue_size
            );
            HAILO_QUEUE_IS_FULL
        };
        model.down = true;
        model.sched.arrivals.clear();
        let aborted: Vec<Pending> = model.queue.drain(..).collect();
        st.rejected.push((id, job, status));
        st.rejected
            .extend(aborted.into_iter().map(|p| (id, p.job, HAILO_STREAM_ABORT)));
        self.work.fetch_add(1, Ordering::AcqRel);
        self.cv.notify_all();
    }

    /// Aborts the model's queued jobs (HAILO_STREAM_ABORT, delivered by the
    /// worker as HailoRT delivers them on its callback thread); with
    /// `remove`, forgets the model too.
    pub(crate) fn shutdown_model(&self, id: u64, remove: bool) {
        if remove {
            note_release("a configured model");
        }
        let aborted: Vec<Pending> = {
            let mut st = lock(&self.state);
            let drained: Vec<Pending> = match st.models.get_mut(&id) {
                Some(m) => {
                    m.sched.arrivals.clear();
                    m.queue.drain(..).collect()
                }
                None => Vec::new(),
            };
            if remove {
                st.models.remove(&id);
                st.scheduler.forget(id);
                if st.manual_active == Some(id) {
                    st.manual_active = None;
                }
            }
            if st.stopping {
                drained
            } else {
                st.rejected
                    .extend(drained.into_iter().map(|p| (id, p.job, HAILO_STREAM_ABORT)));
                self.work.fetch_add(1, Ordering::AcqRel);
                self.cv.notify_all();
                Vec::new()
            }
        };
        self.finish(id, aborted.into_iter().map(|p| (p.job, HAILO_STREAM_ABORT)));
    }

    /// Completes the rejected jobs; called by the worker without the lock.
    pub(super) fn deliver_rejected(&self, rejected: Vec<(u64, Arc<SimJob>, u32)>) {
        for (id, job, status) in rejected {
            self.finish(id, [(job, status)]);
        }
    }
}

thread_local! {
    /// Whether this thread is inside a completion callback of the simulator.
    static IN_COMPLETION: Cell<bool> = const { Cell::new(false) };
}

/// Releases of a configured model or a device made inside a completion callback.
static RELEASES_IN_COMPLETION: AtomicU64 = AtomicU64::new(0);

/// Runs `f` (a completion callback) marked as the completion thread.
pub(crate) fn as_completion<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            IN_COMPLETION.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(IN_COMPLETION.with(|c| c.replace(true)));
    f()
}

/// Records a release of `what` when it happens inside a completion callback.
///
/// On the part that is fatal: the callback runs on the hRPC client's message
/// loop (hrpc/client.cpp:75-99), releasing a configured model there sends a
/// blocking request whose reply only that loop could read, and releasing the
/// VDevice joins the loop from itself (hrpc/client.cpp:27-36), which ends in
/// `std::terminate`. The simulator carries on, logs it and counts it.
pub(crate) fn note_release(what: &str) {
    if IN_COMPLETION.with(Cell::get) {
        RELEASES_IN_COMPLETION.fetch_add(1, Ordering::AcqRel);
        log::error!(
            "{what} released inside a completion callback: HailoRT would block its message \
             loop or terminate the process"
        );
    }
}

/// How many configured models and devices were released inside a completion
/// callback in this process (zero when the safe layer keeps its rule).
pub fn releases_in_completion() -> u64 {
    RELEASES_IN_COMPLETION.load(Ordering::Acquire)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn releases_count_only_inside_a_completion() {
        let before = releases_in_completion();
        note_release("outside");
        assert_eq!(releases_in_completion(), before);
        as_completion(|| note_release("inside"));
        assert!(releases_in_completion() > before);
        assert!(
            !IN_COMPLETION.with(Cell::get),
            "the mark ends with the callback"
        );
    }
}

//! Where completions nobody will take are dropped: a thread of this crate,
//! never the backend's completion thread.
//!
//! A completion holds its bindings, which hold the configured model, which
//! holds the device. Dropping the last of those releases the configured
//! model and the VDevice. On a Hailo-10H the completion callback runs on the
//! hRPC client's message loop (HailoRT 5.2.0, hrpc/client.cpp:75-99): a
//! release there sends a blocking request whose reply only that loop could
//! read, and releasing the VDevice joins the loop from itself
//! (hrpc/client.cpp:27-36), which ends in `std::terminate`. So the callback
//! hands every completion it cannot deliver (its job or its model's queue is
//! gone) to this thread instead of dropping it.

use std::sync::LazyLock;

use crossbeam_channel::Sender;

use super::job::Completion;

static REAPER: LazyLock<Option<Sender<Completion>>> = LazyLock::new(|| {
    let (tx, rx) = crossbeam_channel::unbounded::<Completion>();
    let spawned = std::thread::Builder::new()
        .name("npu-reaper".into())
        .spawn(move || {
            for completion in rx {
                drop(completion);
            }
        });
    match spawned {
        Ok(_) => Some(tx),
        Err(err) => {
            log::error!("cannot start the NPU reaper thread: {err}");
            None
        }
    }
});

/// Starts the thread; called before any job runs, so a completion callback
/// never has to.
pub(crate) fn start() {
    LazyLock::force(&REAPER);
}

/// Drops `completion` on the reaper thread. Without that thread it is
/// leaked: a leak is recoverable, a release on the callback thread is not.
pub(crate) fn bury(completion: Completion) {
    match REAPER.as_ref() {
        Some(tx) => {
            if let Err(failed) = tx.send(completion) {
                std::mem::forget(failed.into_inner());
            }
        }
        None => std::mem::forget(completion),
    }
}

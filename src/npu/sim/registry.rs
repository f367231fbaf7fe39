//! Which simulated devices exist (by id) and which are open.
//!
//! The C table can only name a device by its id, so a simulator profile is
//! registered under a fresh id ([`register`]) and `vdevice_create` with that
//! id opens it. The default id is always present.
//!
//! An open device has a holder: the VDevice group id it was opened with and
//! how many VDevices share it. As the Hailo-10H's server does (HailoRT 5.2.0,
//! `hailort_server.cpp`, `VDeviceManager::create_vdevice`), a client of the
//! holder's group shares the device unless that group is "UNIQUE"; a
//! "UNIQUE" client waits for the holder to close, up to a timeout; any other
//! client is refused.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, LazyLock, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::core::Core;
use super::SimProfile;

/// The id of the default simulated Hailo-10H (virtual clock).
pub const DEFAULT_ID: &str = "sim-hailo10h";

static PROFILES: LazyLock<Mutex<BTreeMap<String, SimProfile>>> = LazyLock::new(Default::default);
/// HailoRT's `HAILO_UNIQUE_VDEVICE_GROUP_ID`, also its default group id.
pub const UNIQUE_GROUP: &str = "UNIQUE";

/// The VDevices holding one open device.
struct Holder {
    core: Weak<Core>,
    group: String,
    /// VDevices sharing the device; 0 while the last one closes it.
    clients: usize,
}

static OPEN: LazyLock<Mutex<BTreeMap<String, Holder>>> = LazyLock::new(Default::default);
/// Signalled whenever a device closes, for "UNIQUE" clients waiting on it.
static CLOSED: Condvar = Condvar::new();
static NEXT: AtomicU64 = AtomicU64::new(0);

fn lock<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Registers a profile; returns the device id that opens it.
pub fn register(profile: SimProfile) -> String {
    let id = format!("sim-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    lock(&PROFILES).insert(id.clone(), profile);
    id
}

/// Forgets a registered profile.
pub fn unregister(id: &str) {
    lock(&PROFILES).remove(id);
}

/// The ids a scan finds: the default device and every registered one.
pub fn scan() -> Vec<String> {
    std::iter::once(DEFAULT_ID.to_string())
        .chain(lock(&PROFILES).keys().cloned())
        .collect()
}

/// The profile of a device id.
pub fn profile(id: &str) -> Option<SimProfile> {
    if id == DEFAULT_ID {
        return Some(SimProfile::default());
    }
    lock(&PROFILES).get(id).cloned()
}

/// Why a device could not be opened: who holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Held {
    pub group: String,
    /// How long the client waited for the holder (zero when it did not wait).
    pub waited: Duration,
}

/// Opens device `id` for a VDevice of `group`, starting it with `start`
/// when nobody holds it. A "UNIQUE" client facing a holder waits up to
/// `wait` (`None`: it does not wait) for it to close.
pub(crate) fn claim(
    id: &str,
    group: &str,
    wait: Option<Duration>,
    start: impl FnOnce() -> Arc<Core>,
) -> Result<Arc<Core>, Held> {
    let began = Instant::now();
    let mut open = lock(&OPEN);
    loop {
        let holder = open
            .get_mut(id)
            .filter(|h| h.core.strong_count() > 0)
            .map(|h| (h.group.clone(), h.clients, h.core.upgrade()));
        let Some((held_by, clients, core)) = holder else {
            let core = start();
            let holder = Holder {
                core: Arc::downgrade(&core),
                group: group.to_string(),
                clients: 1,
            };
            open.insert(id.to_string(), holder);
            return Ok(core);
        };
        if group != UNIQUE_GROUP && group == held_by && clients > 0 {
            if let (Some(core), Some(h)) = (core, open.get_mut(id)) {
                h.clients += 1;
                return Ok(core);
            }
        }
        let left = wait
            .filter(|_| group == UNIQUE_GROUP)
            .and_then(|w| w.checked_sub(began.elapsed()))
            .filter(|left| !left.is_zero());
        let Some(left) = left else {
            return Err(Held {
                group: held_by,
                waited: began.elapsed(),
            });
        };
        open = CLOSED
            .wait_timeout(open, left)
            .map(|(g, _)| g)
            .unwrap_or_else(|e| e.into_inner().0);
    }
}

/// One VDevice of device `id` leaves; `true` when it was the last, which
/// then stops the device and calls [`close`].
pub(crate) fn leave(id: &str) -> bool {
    let mut open = lock(&OPEN);
    match open.get_mut(id) {
        Some(h) if h.clients > 1 => {
            h.clients -= 1;
            false
        }
        Some(h) => {
            h.clients = 0;
            true
        }
        None => true,
    }
}

pub(crate) fn close(id: &str) {
    lock(&OPEN).remove(id);
    CLOSED.notify_all();
}

/// The open device `id`, for its statistics.
pub fn core(id: &str) -> Option<Arc<Core>> {
    lock(&OPEN).get(id).and_then(|h| h.core.upgrade())
}

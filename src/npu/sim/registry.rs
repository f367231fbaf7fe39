//! Which simulated devices exist (by id) and which are open.
//!
//! The C table can only name a device by its id, so a simulator profile is
//! registered under a fresh id ([`register`]) and `vdevice_create` with that
//! id opens it. The default id is always present.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};

use super::core::Core;
use super::SimProfile;

/// The id of the default simulated Hailo-10H (virtual clock).
pub const DEFAULT_ID: &str = "sim-hailo10h";

static PROFILES: LazyLock<Mutex<BTreeMap<String, SimProfile>>> = LazyLock::new(Default::default);
static OPEN: LazyLock<Mutex<BTreeMap<String, Weak<Core>>>> = LazyLock::new(Default::default);
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

/// Opens device `id` with `start`, unless it is open already.
pub(crate) fn open(id: &str, start: impl FnOnce() -> Arc<Core>) -> Option<Arc<Core>> {
    let mut open = lock(&OPEN);
    if open.get(id).is_some_and(|c| c.strong_count() > 0) {
        return None;
    }
    let core = start();
    open.insert(id.to_string(), Arc::downgrade(&core));
    Some(core)
}

pub(crate) fn close(id: &str) {
    lock(&OPEN).remove(id);
}

/// The open device `id`, for its statistics.
pub fn core(id: &str) -> Option<Arc<Core>> {
    lock(&OPEN).get(id).and_then(Weak::upgrade)
}

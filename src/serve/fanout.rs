//! One producer, many clients, a bounded queue per client: the producer never
//! waits for any of them.
//!
//! [`Fanout::push`] offers each message to every client's queue with
//! `try_send`. A client whose queue is full loses that message (counted for
//! the client and in total); a client whose queue has stayed full for
//! [`FanoutConfig::evict_after`] is dropped from the fan-out (counted), which
//! closes its queue, so its connection ends once it has sent what it holds
//! (or, stalled, when a send has waited for the server's send timeout).
//! A browser that falls behind therefore sees gaps, and one that never reads
//! is let go, while the producer's cost per message stays a `try_send` per
//! client.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, error::TrySendError};

use crate::rig::stage::live::ConsumerCounts;

/// Queue length and patience per client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FanoutConfig {
    /// Messages a client's queue holds.
    pub queue: usize,
    /// How long a client's queue may stay full before the client is dropped
    /// (`None`: never).
    pub evict_after: Option<Duration>,
}

impl Default for FanoutConfig {
    fn default() -> Self {
        Self {
            queue: 32,
            evict_after: Some(Duration::from_secs(2)),
        }
    }
}

/// What one client got and lost.
#[derive(Debug, Default)]
pub struct ClientCounts {
    /// Messages put into its queue.
    pub queued: AtomicU64,
    /// Messages it lost because its queue was full.
    pub dropped: AtomicU64,
}

/// A client's end of the fan-out.
#[derive(Debug)]
pub struct Subscription<T> {
    pub id: u64,
    /// Its messages; `None` once the fan-out dropped it or closed.
    pub rx: mpsc::Receiver<T>,
    pub counts: Arc<ClientCounts>,
}

struct Slot<T> {
    id: u64,
    tx: mpsc::Sender<T>,
    /// When its queue was first found full, since it last took a message.
    full_since: Option<Instant>,
    counts: Arc<ClientCounts>,
}

/// The fan-out.
pub struct Fanout<T> {
    slots: Mutex<Vec<Slot<T>>>,
    next_id: AtomicU64,
    config: FanoutConfig,
    totals: Arc<ConsumerCounts>,
}

impl<T: Clone> Fanout<T> {
    /// A fan-out counting into `totals`.
    pub fn new(config: FanoutConfig, totals: Arc<ConsumerCounts>) -> Self {
        Self {
            slots: Mutex::new(Vec::new()),
            next_id: AtomicU64::new(1),
            config: FanoutConfig {
                queue: config.queue.max(1),
                ..config
            },
            totals,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Slot<T>>> {
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A new client, counted as served.
    pub fn subscribe(&self) -> Subscription<T> {
        let (tx, rx) = mpsc::channel(self.config.queue);
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let counts = Arc::new(ClientCounts::default());
        self.lock().push(Slot {
            id,
            tx,
            full_since: None,
            counts: Arc::clone(&counts),
        });
        self.totals.clients_served.fetch_add(1, Ordering::Relaxed);
        Subscription { id, rx, counts }
    }

    /// Offers `message` to every client now; returns to how many it went.
    pub fn push(&self, message: T) -> usize {
        self.push_at(message, Instant::now())
    }

    /// [`Fanout::push`] at `now` (the time a full queue is measured from).
    pub fn push_at(&self, message: T, now: Instant) -> usize {
        let mut slots = self.lock();
        let mut delivered = 0;
        let evict_after = self.config.evict_after;
        let totals = &self.totals;
        slots.retain_mut(|slot| match slot.tx.try_send(message.clone()) {
            Ok(()) => {
                slot.full_since = None;
                slot.counts.queued.fetch_add(1, Ordering::Relaxed);
                delivered += 1;
                true
            }
            Err(TrySendError::Full(_)) => {
                slot.counts.dropped.fetch_add(1, Ordering::Relaxed);
                totals.messages_dropped.fetch_add(1, Ordering::Relaxed);
                let since = *slot.full_since.get_or_insert(now);
                let stuck = evict_after.is_some_and(|e| now.duration_since(since) >= e);
                if stuck {
                    totals.clients_dropped.fetch_add(1, Ordering::Relaxed);
                }
                !stuck
            }
            // The client left; its task removes it too.
            Err(TrySendError::Closed(_)) => false,
        });
        delivered
    }

    /// Takes client `id` out of the fan-out: it left (`slow` false), or its
    /// connection stalled (`slow` true: counted as dropped, unless the
    /// fan-out had dropped it already).
    pub fn remove(&self, id: u64, slow: bool) {
        let mut slots = self.lock();
        let before = slots.len();
        slots.retain(|s| s.id != id);
        if slow && slots.len() < before {
            self.totals.clients_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Clients in the fan-out.
    pub fn clients(&self) -> usize {
        self.lock().len()
    }

    /// Drops every client's queue: each connection ends once it has sent
    /// what it holds.
    pub fn close(&self) {
        self.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fanout(evict_after: Option<Duration>) -> (Fanout<u64>, Arc<ConsumerCounts>) {
        let totals = Arc::new(ConsumerCounts::default());
        let f = Fanout::new(
            FanoutConfig {
                queue: 8,
                evict_after,
            },
            Arc::clone(&totals),
        );
        (f, totals)
    }

    /// The bound on 10 000 pushes with a client that never reads: a
    /// producer that waited even 20 us per message would take longer.
    const PUSHES: u64 = 10_000;
    const PUSH_BOUND: Duration = Duration::from_millis(200);

    #[test]
    fn a_client_that_never_reads_is_dropped_and_counted_and_pushing_never_waits() {
        let (f, totals) = fanout(Some(Duration::from_millis(50)));
        let mut fast = f.subscribe();
        let stuck = f.subscribe();
        let t = Instant::now();
        let mut got = Vec::new();
        for i in 0..PUSHES {
            f.push(i);
            // The fast client reads after every message.
            while let Ok(m) = fast.rx.try_recv() {
                got.push(m);
            }
            if i == PUSHES / 2 {
                // Past the patience with the queue full all along.
                std::thread::sleep(Duration::from_millis(60));
            }
        }
        let took = t.elapsed();
        assert!(took < PUSH_BOUND + Duration::from_millis(60), "{took:?}");
        // The fast client got everything, in order.
        assert_eq!(got, (0..PUSHES).collect::<Vec<_>>());
        assert_eq!(fast.counts.dropped.load(Ordering::Relaxed), 0);
        // The stuck one got its queue's worth, lost messages until it was
        // dropped, and then nothing more was counted against it.
        assert_eq!(stuck.counts.queued.load(Ordering::Relaxed), 8);
        let lost = stuck.counts.dropped.load(Ordering::Relaxed);
        assert!(lost > 0 && lost < PUSHES - 8, "{lost}");
        assert_eq!(totals.clients_dropped.load(Ordering::Relaxed), 1);
        assert_eq!(totals.messages_dropped.load(Ordering::Relaxed), lost);
        assert_eq!(totals.clients_served.load(Ordering::Relaxed), 2);
        assert_eq!(f.clients(), 1);
        // Its queue is closed: it drains what it holds, then ends.
        let mut stuck = stuck;
        assert_eq!(std::iter::from_fn(|| stuck.rx.try_recv().ok()).count(), 8);
        assert!(matches!(
            stuck.rx.try_recv(),
            Err(mpsc::error::TryRecvError::Disconnected)
        ));
    }

    #[test]
    fn negative_controls_patience_and_a_waiting_producer() {
        // Without eviction the stuck client stays (and keeps losing messages):
        // the drop above is the patience's doing.
        let (f, totals) = fanout(None);
        let _stuck = f.subscribe();
        let t0 = Instant::now();
        for i in 0..1000 {
            f.push_at(i, t0 + Duration::from_secs(i));
        }
        assert_eq!(totals.clients_dropped.load(Ordering::Relaxed), 0);
        assert_eq!(totals.messages_dropped.load(Ordering::Relaxed), 992);
        assert_eq!(f.clients(), 1);
        // A producer that waits for a full queue (1 ms each, a tenth of the
        // pushes above) breaks the time bound the test above holds.
        let (tx, _rx) = std::sync::mpsc::sync_channel::<u64>(8);
        let t = Instant::now();
        for i in 0..PUSHES / 10 {
            if tx.try_send(i).is_err() {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        assert!(t.elapsed() > PUSH_BOUND, "{:?}", t.elapsed());
    }

    #[test]
    fn a_slow_client_loses_messages_but_is_kept_while_it_reads_and_leaving_is_not_dropping() {
        let (f, totals) = fanout(Some(Duration::from_secs(1)));
        let mut slow = f.subscribe();
        let t0 = Instant::now();
        // It reads one message in four, 100 ms apart: its queue is full at
        // times but never for a second.
        for i in 0..400u64 {
            f.push_at(i, t0 + Duration::from_millis(25 * i));
            if i % 4 == 0 {
                let _ = slow.rx.try_recv();
            }
        }
        assert_eq!(f.clients(), 1);
        assert!(slow.counts.dropped.load(Ordering::Relaxed) > 0);
        assert_eq!(totals.clients_dropped.load(Ordering::Relaxed), 0);
        f.remove(slow.id, false);
        assert_eq!(f.clients(), 0);
        assert_eq!(totals.clients_dropped.load(Ordering::Relaxed), 0);
        // A stalled connection is counted once, whoever notices first.
        let s = f.subscribe();
        f.remove(s.id, true);
        f.remove(s.id, true);
        assert_eq!(totals.clients_dropped.load(Ordering::Relaxed), 1);
    }
}

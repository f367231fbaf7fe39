//! Bounded queues between stages that drop the oldest item when full.
//!
//! Real-time capture must never block a camera thread on a slow consumer, and
//! must never lose a frame silently: when a queue is full the producer evicts
//! the oldest item, and every eviction is counted. Memory stays bounded by the
//! capacity.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, Sender, TryRecvError, TrySendError};

/// Counters shared by both ends of a [`drop_oldest`] queue.
#[derive(Debug, Default)]
pub struct QueueCounters {
    pushed: AtomicU64,
    dropped: AtomicU64,
}

impl QueueCounters {
    /// Items offered to the queue.
    pub fn pushed(&self) -> u64 {
        self.pushed.load(Ordering::Relaxed)
    }

    /// Items evicted because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// The producing end: never blocks, evicts the oldest item when full.
#[derive(Debug)]
pub struct DropOldestSender<T> {
    tx: Sender<T>,
    /// A receiver of our own, used only to evict the oldest item.
    evict: Receiver<T>,
    counters: Arc<QueueCounters>,
}

impl<T> Clone for DropOldestSender<T> {
    fn clone(&self) -> Self {
        Self {
            tx: self.tx.clone(),
            evict: self.evict.clone(),
            counters: self.counters.clone(),
        }
    }
}

/// What became of a pushed item.
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed<T> {
    /// Queued without evicting anything.
    Queued,
    /// Queued after evicting this older item, which the caller may recycle.
    Evicted(T),
}

impl<T> DropOldestSender<T> {
    /// Queues `item`, evicting the oldest queued item if the queue is full.
    ///
    /// The sender keeps a receiver of its own for eviction, so a queue whose
    /// consumer has gone keeps the newest items until the sender is dropped;
    /// stages stop through the pipeline's stop signal, not through the queue.
    pub fn push(&self, mut item: T) -> Pushed<T> {
        self.counters.pushed.fetch_add(1, Ordering::Relaxed);
        let mut evicted = None;
        loop {
            match self.tx.try_send(item) {
                Ok(()) => {
                    return match evicted {
                        Some(old) => Pushed::Evicted(old),
                        None => Pushed::Queued,
                    }
                }
                // Unreachable while `evict` lives; treat it like a full queue.
                Err(TrySendError::Disconnected(back) | TrySendError::Full(back)) => {
                    item = back;
                    match self.evict.try_recv() {
                        Ok(old) => {
                            self.counters.dropped.fetch_add(1, Ordering::Relaxed);
                            // Only the first eviction is handed back; a second
                            // (a racing producer refilled the slot) is dropped here
                            // but still counted.
                            if evicted.is_none() {
                                evicted = Some(old);
                            }
                        }
                        // The consumer emptied a slot meanwhile: just retry.
                        Err(TryRecvError::Empty | TryRecvError::Disconnected) => {}
                    }
                }
            }
        }
    }

    /// The counters of this queue.
    pub fn counters(&self) -> &Arc<QueueCounters> {
        &self.counters
    }

    /// Items waiting in the queue.
    pub fn len(&self) -> usize {
        self.tx.len()
    }

    /// Whether the queue is empty.
    pub fn is_empty(&self) -> bool {
        self.tx.is_empty()
    }
}

/// The consuming end.
#[derive(Debug, Clone)]
pub struct DropOldestReceiver<T> {
    rx: Receiver<T>,
    counters: Arc<QueueCounters>,
}

impl<T> DropOldestReceiver<T> {
    /// Waits up to `timeout` for the next item. `Ok(None)` on timeout, `Err`
    /// when every sender is gone and the queue is drained.
    pub fn recv_timeout(&self, timeout: Duration) -> Result<Option<T>, Disconnected> {
        match self.rx.recv_timeout(timeout) {
            Ok(item) => Ok(Some(item)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(Disconnected),
        }
    }

    /// Takes the next item if there is one.
    pub fn try_recv(&self) -> Result<Option<T>, Disconnected> {
        match self.rx.try_recv() {
            Ok(item) => Ok(Some(item)),
            Err(TryRecvError::Empty) => Ok(None),
            Err(TryRecvError::Disconnected) => Err(Disconnected),
        }
    }

    /// The underlying channel, for `select!`.
    pub fn inner(&self) -> &Receiver<T> {
        &self.rx
    }

    /// The counters of this queue.
    pub fn counters(&self) -> &Arc<QueueCounters> {
        &self.counters
    }
}

/// Every sender of a queue is gone and it is drained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("queue disconnected")]
pub struct Disconnected;

/// A bounded queue of `capacity` items that evicts the oldest item when full.
///
/// # Panics
/// Panics if `capacity` is zero: a zero-capacity queue cannot hold the newest
/// item, so it would drop every frame.
pub fn drop_oldest<T>(capacity: usize) -> (DropOldestSender<T>, DropOldestReceiver<T>) {
    assert!(capacity > 0, "a drop-oldest queue needs room for one item");
    let (tx, rx) = crossbeam_channel::bounded(capacity);
    let counters = Arc::new(QueueCounters::default());
    (
        DropOldestSender {
            tx,
            evict: rx.clone(),
            counters: counters.clone(),
        },
        DropOldestReceiver { rx, counters },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_and_counts_every_eviction() {
        let (tx, rx) = drop_oldest(3);
        for i in 0..10 {
            tx.push(i);
        }
        let got: Vec<i32> = std::iter::from_fn(|| rx.try_recv().unwrap()).collect();
        assert_eq!(got, vec![7, 8, 9]);
        assert_eq!(tx.counters().pushed(), 10);
        assert_eq!(tx.counters().dropped(), 7);
        // Accounting: everything pushed was either delivered or dropped.
        assert_eq!(
            tx.counters().pushed(),
            got.len() as u64 + tx.counters().dropped()
        );
    }

    #[test]
    fn hands_back_the_evicted_item_for_recycling() {
        let (tx, _rx) = drop_oldest(1);
        assert_eq!(tx.push("a"), Pushed::Queued);
        assert_eq!(tx.push("b"), Pushed::Evicted("a"));
    }

    #[test]
    fn no_drop_while_the_consumer_keeps_up() {
        let (tx, rx) = drop_oldest(2);
        for i in 0..100 {
            assert_eq!(tx.push(i), Pushed::Queued);
            assert_eq!(rx.try_recv().unwrap(), Some(i));
        }
        assert_eq!(tx.counters().dropped(), 0);
    }

    #[test]
    fn accounting_holds_under_concurrent_producers() {
        let (tx, rx) = drop_oldest(4);
        let producers: Vec<_> = (0..4)
            .map(|p| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    for i in 0..10_000 {
                        tx.push(p * 100_000 + i);
                    }
                })
            })
            .collect();
        let consumer = std::thread::spawn(move || {
            let mut delivered = 0u64;
            while let Ok(item) = rx.recv_timeout(Duration::from_millis(1)) {
                delivered += u64::from(item.is_some());
            }
            delivered
        });
        for p in producers {
            p.join().unwrap();
        }
        let counters = tx.counters().clone();
        drop(tx);
        let delivered = consumer.join().unwrap();
        assert_eq!(counters.pushed(), 40_000);
        assert_eq!(counters.pushed(), delivered + counters.dropped());
    }
}

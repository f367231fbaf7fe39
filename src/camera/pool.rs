//! Frame buffers recycled through a pool, so steady-state capture never allocates.
//!
//! A [`PooledBuffer`] goes back to its [`BufferPool`] when dropped. The pool
//! counts every fresh allocation, so a test (or the live status) can prove that
//! after warm-up no frame allocates.

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A pool of byte buffers, shared by a source and whoever holds its frames.
#[derive(Clone)]
pub struct BufferPool {
    inner: Arc<PoolInner>,
}

struct PoolInner {
    free: Mutex<Vec<Vec<u8>>>,
    /// Free buffers beyond this are released instead of kept.
    max_free: usize,
    allocations: AtomicU64,
    reuses: AtomicU64,
}

/// Counters of a pool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    /// Buffers allocated (or grown) because the pool had none big enough.
    pub allocations: u64,
    /// Buffers handed out again without allocating.
    pub reuses: u64,
    /// Buffers waiting in the pool now.
    pub free: usize,
}

impl BufferPool {
    /// A pool keeping at most `max_free` idle buffers.
    pub fn new(max_free: usize) -> Self {
        Self {
            inner: Arc::new(PoolInner {
                free: Mutex::new(Vec::with_capacity(max_free)),
                max_free,
                allocations: AtomicU64::new(0),
                reuses: AtomicU64::new(0),
            }),
        }
    }

    /// A buffer holding a copy of `src`.
    pub fn copy_of(&self, src: &[u8]) -> PooledBuffer {
        let mut buf = self.take(src.len());
        buf.extend_from_slice(src);
        self.wrap(buf)
    }

    /// A zeroed buffer of `len` bytes.
    pub fn zeroed(&self, len: usize) -> PooledBuffer {
        let mut buf = self.take(len);
        buf.resize(len, 0);
        self.wrap(buf)
    }

    /// The pool's counters.
    pub fn stats(&self) -> PoolStats {
        PoolStats {
            allocations: self.inner.allocations.load(Ordering::Relaxed),
            reuses: self.inner.reuses.load(Ordering::Relaxed),
            free: self.inner.lock_free().len(),
        }
    }

    /// An empty buffer with capacity for `len` bytes, reused when one fits.
    fn take(&self, len: usize) -> Vec<u8> {
        let reused = {
            let mut free = self.inner.lock_free();
            match free.iter().position(|b| b.capacity() >= len) {
                Some(i) => Some(free.swap_remove(i)),
                None => free.pop(),
            }
        };
        match reused {
            Some(mut buf) if buf.capacity() >= len => {
                self.inner.reuses.fetch_add(1, Ordering::Relaxed);
                buf.clear();
                buf
            }
            Some(mut buf) => {
                self.inner.allocations.fetch_add(1, Ordering::Relaxed);
                buf.clear();
                buf.reserve_exact(len);
                buf
            }
            None => {
                self.inner.allocations.fetch_add(1, Ordering::Relaxed);
                Vec::with_capacity(len)
            }
        }
    }

    fn wrap(&self, buf: Vec<u8>) -> PooledBuffer {
        PooledBuffer {
            buf,
            pool: Some(Arc::clone(&self.inner)),
        }
    }
}

impl fmt::Debug for BufferPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BufferPool")
            .field("stats", &self.stats())
            .finish()
    }
}

impl PoolInner {
    fn lock_free(&self) -> std::sync::MutexGuard<'_, Vec<Vec<u8>>> {
        // A poisoned lock only means another thread panicked while pushing or
        // popping a Vec; the list itself is still valid.
        self.free.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Bytes of one frame; returns to its pool on drop.
pub struct PooledBuffer {
    buf: Vec<u8>,
    pool: Option<Arc<PoolInner>>,
}

impl PooledBuffer {
    /// A buffer that belongs to no pool (tests, one-off frames).
    pub fn detached(buf: Vec<u8>) -> Self {
        Self { buf, pool: None }
    }

    /// Shortens the buffer to `len` bytes (no effect if already shorter).
    pub fn truncate(&mut self, len: usize) {
        self.buf.truncate(len);
    }
}

impl Deref for PooledBuffer {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf
    }
}

impl DerefMut for PooledBuffer {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.buf
    }
}

impl fmt::Debug for PooledBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PooledBuffer({} bytes)", self.buf.len())
    }
}

impl Drop for PooledBuffer {
    fn drop(&mut self) {
        if let Some(pool) = self.pool.take() {
            let mut free = pool.lock_free();
            if free.len() < pool.max_free {
                free.push(std::mem::take(&mut self.buf));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_state_reuses_buffers_without_allocating() {
        let pool = BufferPool::new(4);
        let frame = vec![7u8; 1000];
        // Warm-up: up to three frames in flight at once.
        let mut in_flight = std::collections::VecDeque::new();
        for _ in 0..3 {
            in_flight.push_back(pool.copy_of(&frame));
        }
        let warm = pool.stats().allocations;
        assert_eq!(warm, 3);
        for _ in 0..1000 {
            in_flight.pop_front();
            in_flight.push_back(pool.copy_of(&frame));
        }
        let stats = pool.stats();
        assert_eq!(stats.allocations, warm, "steady state allocated: {stats:?}");
        assert_eq!(stats.reuses, 1000);
        assert_eq!(&in_flight[0][..], &frame[..]);
    }

    #[test]
    fn a_larger_frame_allocates_and_is_counted() {
        let pool = BufferPool::new(2);
        drop(pool.zeroed(10));
        drop(pool.zeroed(10));
        assert_eq!(pool.stats().allocations, 1);
        let big = pool.zeroed(10_000);
        assert_eq!(big.len(), 10_000);
        assert_eq!(pool.stats().allocations, 2);
    }

    #[test]
    fn idle_buffers_beyond_the_limit_are_released() {
        let pool = BufferPool::new(1);
        let a = pool.zeroed(8);
        let b = pool.zeroed(8);
        drop(a);
        drop(b);
        assert_eq!(pool.stats().free, 1);
    }
}

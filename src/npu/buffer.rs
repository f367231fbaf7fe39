//! Page-aligned host buffers and the pool that reuses them.
//!
//! HailoRT maps user buffers for DMA; page alignment lets it do so without a
//! bounce copy. Buffers come from a per-model pool, so a steady stream of
//! jobs allocates nothing.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::Mutex;

/// Alignment of every buffer (the Linux page size on x86-64 and aarch64 4K kernels).
pub const PAGE: usize = 4096;

/// How many idle buffers of one size the pool keeps.
const KEEP_PER_SIZE: usize = 64;

/// A zero-initialised, page-aligned heap buffer owned by one place at a time.
pub struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: PageBuf owns its allocation exclusively (like Box<[u8]>); moving it
// to another thread moves that ownership.
unsafe impl Send for PageBuf {}
// SAFETY: shared references only give `&[u8]`, which is safe to share.
unsafe impl Sync for PageBuf {}

impl PageBuf {
    fn layout(len: usize) -> Layout {
        let size = len.max(1).div_ceil(PAGE) * PAGE;
        Layout::from_size_align(size, PAGE).expect("page-rounded sizes fit a Layout")
    }

    /// A new buffer of `len` bytes, zeroed.
    pub fn new(len: usize) -> PageBuf {
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        PageBuf { ptr, len }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: `ptr` is a live allocation of at least `len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The start of the buffer, for the C table.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }
}

impl Drop for PageBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with the same layout.
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout(self.len)) };
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageBuf").field("len", &self.len).finish()
    }
}

/// Idle buffers by size.
#[derive(Debug, Default)]
pub struct PagePool {
    free: Mutex<HashMap<usize, Vec<PageBuf>>>,
}

impl PagePool {
    /// A buffer of `len` bytes: a reused one when there is one.
    pub fn take(&self, len: usize) -> PageBuf {
        let reused = self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&len)
            .and_then(Vec::pop);
        reused.unwrap_or_else(|| PageBuf::new(len))
    }

    /// Returns a buffer for reuse.
    pub fn give(&self, buf: PageBuf) {
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let list = free.entry(buf.len()).or_default();
        if list.len() < KEEP_PER_SIZE {
            list.push(buf);
        }
    }

    /// Number of idle buffers.
    pub fn idle(&self) -> usize {
        self.free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(Vec::len)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_page_aligned_and_reused() {
        let pool = PagePool::default();
        let mut a = pool.take(10_000);
        assert_eq!(a.as_mut_ptr() as usize % PAGE, 0);
        assert_eq!(a.len(), 10_000);
        a.as_mut_slice()[9_999] = 7;
        let addr = a.as_mut_ptr() as usize;
        pool.give(a);
        assert_eq!(pool.idle(), 1);
        let mut b = pool.take(10_000);
        assert_eq!(b.as_mut_ptr() as usize, addr, "the idle buffer is reused");
        assert_eq!(pool.idle(), 0);
        let mut c = pool.take(10_000);
        assert_ne!(c.as_mut_ptr() as usize, addr);
        assert!(PageBuf::new(0).is_empty());
    }
}

//! Page-aligned host buffers and the pool that reuses them.
//!
//! HailoRT sends a buffer that is not aligned to the host's page size
//! through a bounce copy on every transfer (HailoRT 5.2.0,
//! `hailort/libhailort/src/vdma/pcie_session.cpp`); its alignment is
//! `sysconf(_SC_PAGESIZE)` (`hailort/common/os/posix/os_utils.cpp`,
//! `OsUtils::get_page_size`), 4 KiB on x86-64 and 4 or 16 KiB on aarch64.
//! So every buffer is aligned to, and sized in whole, pages of that size.
//! Buffers come from a per-model pool, so a steady stream of jobs allocates
//! nothing; with a [`DmaMapper`] the pool maps each buffer for DMA once, when
//! it is allocated, and unmaps it before freeing it.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};

use super::error::NpuError;

/// How many idle buffers of one size the pool keeps.
const KEEP_PER_SIZE: usize = 64;

/// The page size used when `sysconf` cannot tell.
const FALLBACK_PAGE: usize = 4096;

/// The host's page size, `sysconf(_SC_PAGESIZE)`, as HailoRT reads it.
pub fn page_size() -> usize {
    static PAGE: OnceLock<usize> = OnceLock::new();
    *PAGE.get_or_init(|| {
        // SAFETY: sysconf has no memory-safety preconditions.
        let raw = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(raw)
            .ok()
            .filter(|p| p.is_power_of_two())
            .unwrap_or(FALLBACK_PAGE)
    })
}

/// A page size the pool was given that it cannot align to.
#[cfg(test)]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("page size {page} is not a power of two of at least 64 bytes (HailoRT's smallest DMA alignment)")]
pub(crate) struct BadPageSize {
    pub page: usize,
}

/// Maps and unmaps host buffers for DMA on one device (`VDevice::dma_map`).
pub trait DmaMapper: Send + Sync {
    /// Maps `len` bytes at `ptr` for transfers in both directions.
    ///
    /// # Errors
    /// The backend's status.
    fn map(&self, ptr: *mut u8, len: usize) -> Result<(), NpuError>;
    /// Undoes [`DmaMapper::map`]; called before the memory is freed.
    fn unmap(&self, ptr: *mut u8, len: usize);
}

/// A zero-initialised, page-aligned heap buffer owned by one place at a time.
pub struct PageBuf {
    ptr: NonNull<u8>,
    len: usize,
    page: usize,
    /// The device the buffer is mapped on, unmapped before the memory goes.
    mapped: Option<Arc<dyn DmaMapper>>,
}

// SAFETY: PageBuf owns its allocation exclusively (like Box<[u8]>); moving it
// to another thread moves that ownership. The mapper is Send + Sync.
unsafe impl Send for PageBuf {}
// SAFETY: shared references only give `&[u8]`, which is safe to share.
unsafe impl Sync for PageBuf {}

impl PageBuf {
    fn layout(len: usize, page: usize) -> Layout {
        let size = len.max(1).div_ceil(page) * page;
        Layout::from_size_align(size, page).expect("page-rounded sizes fit a Layout")
    }

    /// A new buffer of `len` bytes, zeroed, aligned to the host's page size.
    pub fn new(len: usize) -> PageBuf {
        PageBuf::on_pages(len, page_size())
    }

    /// A new buffer of `len` bytes aligned to `page` (a power of two).
    fn on_pages(len: usize, page: usize) -> PageBuf {
        let layout = Self::layout(len, page);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc_zeroed(layout) };
        let ptr = NonNull::new(raw).unwrap_or_else(|| std::alloc::handle_alloc_error(layout));
        PageBuf {
            ptr,
            len,
            page,
            mapped: None,
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes allocated: `len` rounded up to whole pages.
    pub fn capacity(&self) -> usize {
        Self::layout(self.len, self.page).size()
    }

    /// Whether the buffer is mapped for DMA on its device.
    pub fn is_mapped(&self) -> bool {
        self.mapped.is_some()
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
        if let Some(mapper) = self.mapped.take() {
            mapper.unmap(self.ptr.as_ptr(), self.len);
        }
        // SAFETY: allocated in `on_pages` with the same layout; unmapped above.
        unsafe { dealloc(self.ptr.as_ptr(), Self::layout(self.len, self.page)) };
    }
}

impl std::fmt::Debug for PageBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PageBuf")
            .field("len", &self.len)
            .field("page", &self.page)
            .field("mapped", &self.is_mapped())
            .finish()
    }
}

/// Idle buffers by size, on one page size, mapped on one device or none.
pub struct PagePool {
    free: Mutex<HashMap<usize, Vec<PageBuf>>>,
    page: usize,
    mapper: Option<Arc<dyn DmaMapper>>,
}

impl Default for PagePool {
    fn default() -> PagePool {
        PagePool {
            free: Mutex::default(),
            page: page_size(),
            mapper: None,
        }
    }
}

impl std::fmt::Debug for PagePool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PagePool")
            .field("page", &self.page)
            .field("maps", &self.mapper.is_some())
            .field("idle", &self.idle())
            .finish()
    }
}

impl PagePool {
    /// A pool on pages of `page` bytes instead of the host's, so that tests
    /// on a 4 KiB host cover the 16 KiB pages of some ARM hosts.
    ///
    /// # Errors
    /// [`BadPageSize`] unless `page` is a power of two of at least 64.
    #[cfg(test)]
    pub(crate) fn with_page_size(page: usize) -> Result<PagePool, BadPageSize> {
        if !page.is_power_of_two() || page < 64 {
            return Err(BadPageSize { page });
        }
        Ok(PagePool {
            page,
            ..PagePool::default()
        })
    }

    /// The same pool, mapping every buffer it allocates through `mapper`.
    pub fn mapping(mut self, mapper: Arc<dyn DmaMapper>) -> PagePool {
        self.mapper = Some(mapper);
        self
    }

    /// The alignment and size granule of this pool's buffers.
    pub fn page_size(&self) -> usize {
        self.page
    }

    /// A buffer of `len` bytes: a reused one when there is one.
    ///
    /// A new buffer is mapped when the pool maps; a failed mapping leaves it
    /// unmapped (HailoRT then maps it per transfer) and is logged.
    pub fn take(&self, len: usize) -> PageBuf {
        let reused = self
            .free
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_mut(&len)
            .and_then(Vec::pop);
        reused.unwrap_or_else(|| self.allocate(len))
    }

    fn allocate(&self, len: usize) -> PageBuf {
        let mut buf = PageBuf::on_pages(len, self.page);
        if let Some(mapper) = &self.mapper {
            match mapper.map(buf.as_mut_ptr(), len) {
                Ok(()) => buf.mapped = Some(Arc::clone(mapper)),
                Err(err) => {
                    log::warn!("dma_map of a {len}-byte buffer failed; it stays unmapped: {err}")
                }
            }
        }
        buf
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
mod tests;

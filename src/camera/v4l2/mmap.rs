//! A memory mapping that is unmapped exactly once, when dropped.

use std::io;
use std::os::fd::RawFd;
use std::ptr::NonNull;

/// One mapped driver buffer (or an anonymous mapping in tests).
#[derive(Debug)]
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; it is only read
// through `&self` and unmapped through `&mut self` (drop).
unsafe impl Send for Mapping {}

impl Mapping {
    /// Maps `len` bytes of a V4L2 buffer at `offset` of `fd`, shared and read-only.
    pub fn device(fd: RawFd, offset: u32, len: usize) -> io::Result<Self> {
        // SAFETY: a fresh mapping chosen by the kernel; no existing memory is
        // affected. The result is checked for MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                libc::off_t::from(offset),
            )
        };
        Self::from_raw(p, len)
    }

    /// An anonymous private read-write mapping (tests, no device needed).
    pub fn anonymous(len: usize) -> io::Result<Self> {
        // SAFETY: as in `device`, with no file behind it.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        Self::from_raw(p, len)
    }

    fn from_raw(p: *mut libc::c_void, len: usize) -> io::Result<Self> {
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(p.cast::<u8>()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Self { ptr, len })
    }

    /// The first `used` bytes (clamped to the mapping).
    pub fn bytes(&self, used: usize) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes for as long as `self` lives.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), used.min(self.len)) }
    }

    /// Length of the mapping.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the mapping is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[cfg(test)]
    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: anonymous mappings in tests are writable and exclusively owned.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly what mmap returned and this is the only unmap.
        if unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) } != 0 {
            log::warn!("munmap failed: {}", io::Error::last_os_error());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_mapped(addr: *const u8) -> bool {
        let page = 4096usize;
        let base = (addr as usize) & !(page - 1);
        let mut vec = 0u8;
        // SAFETY: mincore only inspects the page tables; ENOMEM means unmapped.
        unsafe { libc::mincore(base as *mut libc::c_void, page, &mut vec) == 0 }
    }

    #[test]
    fn anonymous_mapping_is_readable_and_unmapped_once_on_drop() {
        let mut m = Mapping::anonymous(8192).unwrap();
        m.bytes_mut()[..4].copy_from_slice(b"YUYV");
        assert_eq!(m.bytes(4), b"YUYV");
        assert_eq!(m.bytes(100_000).len(), 8192);
        let addr = m.bytes(1).as_ptr();
        assert!(is_mapped(addr));
        drop(m);
        assert!(!is_mapped(addr), "still mapped after drop");
    }
}

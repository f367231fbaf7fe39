use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

#[test]
fn buffers_are_page_aligned_and_reused() {
    let pool = PagePool::default();
    let page = pool.page_size();
    let mut a = pool.take(10_000);
    assert_eq!(a.as_mut_ptr() as usize % page, 0);
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

#[test]
fn the_host_page_size_is_what_sysconf_says() {
    // SAFETY: sysconf has no memory-safety preconditions.
    let sysconf = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    assert_eq!(page_size() as libc::c_long, sysconf);
    assert_eq!(PagePool::default().page_size(), page_size());
    assert_eq!(PageBuf::new(1).capacity(), page_size());
}

#[test]
fn an_injected_16k_page_size_sets_alignment_and_rounding() {
    let pool = PagePool::with_page_size(16_384).unwrap();
    for len in [1, 10_000, 16_384, 20_000] {
        let mut buf = pool.take(len);
        assert_eq!(buf.as_mut_ptr() as usize % 16_384, 0, "{len} bytes");
        assert_eq!(buf.capacity(), len.div_ceil(16_384) * 16_384, "{len} bytes");
        assert_eq!(buf.len(), len);
        buf.as_mut_slice()[len - 1] = 1;
    }
    // Negative control: on 4 KiB pages the same length rounds differently.
    let small = PagePool::with_page_size(4_096).unwrap();
    assert_eq!(small.take(10_000).capacity(), 12_288);
    assert_eq!(pool.take(10_000).capacity(), 16_384);
}

#[test]
fn page_sizes_that_cannot_align_are_refused() {
    for page in [0, 3, 32, 12_288] {
        let err = PagePool::with_page_size(page).unwrap_err();
        assert_eq!(err, BadPageSize { page });
        assert!(err.to_string().contains(&page.to_string()));
    }
}

/// Counts maps and unmaps, and remembers the unmapped addresses.
#[derive(Default)]
struct Recorder {
    maps: AtomicUsize,
    unmaps: Mutex<Vec<(usize, usize)>>,
    fail: bool,
}

impl DmaMapper for Recorder {
    fn map(&self, _ptr: *mut u8, _len: usize) -> Result<(), NpuError> {
        if self.fail {
            return Err(NpuError::from_status(36, "vdevice_dma_map", "test".into()));
        }
        self.maps.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    fn unmap(&self, ptr: *mut u8, len: usize) {
        self.unmaps.lock().unwrap().push((ptr as usize, len));
    }
}

#[test]
fn a_mapping_pool_maps_once_and_unmaps_when_the_buffer_is_freed() {
    let recorder = Arc::new(Recorder::default());
    let pool = PagePool::default().mapping(Arc::clone(&recorder) as Arc<dyn DmaMapper>);
    let mut a = pool.take(5_000);
    assert!(a.is_mapped());
    let addr = a.as_mut_ptr() as usize;
    pool.give(a);
    let b = pool.take(5_000);
    assert_eq!(
        recorder.maps.load(Ordering::SeqCst),
        1,
        "reuse maps nothing"
    );
    assert!(recorder.unmaps.lock().unwrap().is_empty());
    drop(b);
    assert_eq!(*recorder.unmaps.lock().unwrap(), vec![(addr, 5_000)]);
    // Negative control: a pool without a mapper maps nothing.
    assert!(!PagePool::default().take(5_000).is_mapped());
}

#[test]
fn a_failed_mapping_leaves_the_buffer_unmapped() {
    let recorder = Arc::new(Recorder {
        fail: true,
        ..Recorder::default()
    });
    let pool = PagePool::default().mapping(Arc::clone(&recorder) as Arc<dyn DmaMapper>);
    let buf = pool.take(100);
    assert!(!buf.is_mapped());
    drop(buf);
    assert!(recorder.unmaps.lock().unwrap().is_empty());
}

#[test]
fn a_16k_mapping_pool_maps_each_buffer_once_on_16k_boundaries() {
    let recorder = Arc::new(Recorder::default());
    let pool = PagePool::with_page_size(16_384)
        .unwrap()
        .mapping(Arc::clone(&recorder) as Arc<dyn DmaMapper>);
    let lens = [1usize, 5_000, 16_384, 16_385, 40_000];
    let mut bufs: Vec<PageBuf> = lens.iter().map(|&n| pool.take(n)).collect();
    for (buf, &len) in bufs.iter_mut().zip(&lens) {
        assert!(buf.is_mapped());
        assert_eq!(buf.as_mut_ptr() as usize % 16_384, 0, "{len} bytes");
        assert_eq!(buf.capacity(), len.div_ceil(16_384) * 16_384, "{len} bytes");
    }
    assert_eq!(recorder.maps.load(Ordering::SeqCst), lens.len());
    for buf in bufs {
        pool.give(buf);
    }
    let again: Vec<PageBuf> = lens.iter().map(|&n| pool.take(n)).collect();
    assert_eq!(
        recorder.maps.load(Ordering::SeqCst),
        lens.len(),
        "reused buffers are not mapped again"
    );
    // 16 KiB pages: 1 + 1 + 1 + 2 + 3 pages; 4 KiB pages would give 1 + 2 + 4 + 5 + 10.
    let pages: usize = again.iter().map(|b| b.capacity() / 16_384).sum();
    assert_eq!(pages, 8);
    drop(again);
    let mut unmapped: Vec<usize> = recorder
        .unmaps
        .lock()
        .unwrap()
        .iter()
        .map(|u| u.1)
        .collect();
    unmapped.sort_unstable();
    assert_eq!(
        unmapped, lens,
        "each freed buffer is unmapped once, with its length"
    );
}

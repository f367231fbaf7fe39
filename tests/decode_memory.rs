//! The allocator setting `hailo-edge run` makes for its decoders: freed blocks
//! stay in the process, so a run that frees and reallocates the same buffers
//! touches no fresh pages.
//!
//! One test in its own binary: the setting is process-wide, and the test first
//! measures the process without it.

/// Minor page faults of the calling thread so far.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn minor_faults() -> i64 {
    // SAFETY: all-zero is a valid rusage; getrusage only writes into it.
    let mut r: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_THREAD with a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut r) };
    assert_eq!(rc, 0);
    r.ru_minflt
}

/// Page faults of one "frame": twelve 4 MB buffers allocated, written and freed,
/// as tract does with a run's intermediate tensors.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn faults_per_frame() -> i64 {
    let frame = || {
        let bufs: Vec<Vec<u8>> = (0..12)
            .map(|i| {
                let mut b = Vec::<u8>::with_capacity(4 << 20);
                b.resize(4 << 20, i as u8);
                b
            })
            .collect();
        std::hint::black_box(&bufs);
    };
    frame();
    let before = minor_faults();
    for _ in 0..5 {
        frame();
    }
    (minor_faults() - before) / 5
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn freed_decoder_memory_is_reused_without_page_faults() {
    use hailo_edge::rig::alloc::retain_freed_memory;
    // Without the setting glibc returns the blocks: every frame faults its
    // 48 MB in again (12 288 pages; transparent huge pages may make it fewer).
    let default = faults_per_frame();
    assert!(
        default > 1000,
        "{default} faults per frame with glibc's defaults"
    );
    assert!(retain_freed_memory());
    let retained = faults_per_frame();
    assert!(
        retained < 50,
        "{retained} faults per frame with freed memory retained (defaults: {default})"
    );
}

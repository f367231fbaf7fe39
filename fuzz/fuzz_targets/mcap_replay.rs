//! A recording to replay, on arbitrary bytes: open it, then read every frame of every camera
//! as fast as asked. Every input ends in frames, counted bad frames or an error.
#![no_main]

use std::io::Write;

use hailo_edge::camera::replay::{Pacing, Recording};
use hailo_edge::camera::{Source, SourceError};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut file) = tempfile_in_shm() else {
        return;
    };
    if file.1.write_all(data).is_err() {
        return;
    }
    let recording = match Recording::open(&file.0) {
        Ok(r) => r,
        Err(e) => {
            let _ = e.to_string();
            let _ = std::fs::remove_file(&file.0);
            return;
        }
    };
    for mut source in recording.sources(Pacing::AsFastAsPossible) {
        // A bound on the frames read keeps one input's time finite.
        for _ in 0..64 {
            match source.next_frame() {
                Ok(_) => {}
                Err(SourceError::EndOfStream) => break,
                Err(e) if e.is_recoverable() => {}
                Err(_) => break,
            }
        }
    }
    let _ = std::fs::remove_file(&file.0);
    file.1.flush().ok();
});

/// A fresh file in /dev/shm (or the temporary folder), named by the process and a counter.
fn tempfile_in_shm() -> std::io::Result<(std::path::PathBuf, std::fs::File)> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = if std::path::Path::new("/dev/shm").is_dir() {
        std::path::PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let path = dir.join(format!(
        "hailo-edge-fuzz-{}-{}.mcap",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let file = std::fs::File::create(&path)?;
    Ok((path, file))
}

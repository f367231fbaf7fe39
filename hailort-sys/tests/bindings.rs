//! The committed `src/bindings.rs` must be what bindgen makes of the shim
//! header today. Regenerate with
//! `HAILORT_SYS_BLESS=1 cargo test -p hailort-sys --test bindings`.

#[path = "../build/bindgen_opts.rs"]
mod bindgen_opts;

use std::path::Path;

#[test]
fn committed_bindings_match_the_header() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = root.join("shim/hailo_edge_shim.h");
    let committed_path = root.join("src/bindings.rs");
    let generated = std::panic::catch_unwind(|| {
        bindgen_opts::shim_builder(&header.to_string_lossy())
            .generate()
            .map(|b| b.to_string())
    });
    let generated = match generated {
        Ok(Ok(text)) => text,
        Ok(Err(err)) => panic!("bindgen failed on {}: {err}", header.display()),
        Err(_) => {
            // bindgen panics when it cannot load libclang.
            eprintln!("SKIPPED: libclang is not installed, so the bindings cannot be regenerated");
            return;
        }
    };
    if std::env::var_os("HAILORT_SYS_BLESS").is_some() {
        std::fs::write(&committed_path, &generated).expect("write src/bindings.rs");
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).expect("read src/bindings.rs");
    assert!(
        committed == generated,
        "src/bindings.rs is stale against shim/hailo_edge_shim.h; regenerate with \
         HAILORT_SYS_BLESS=1 cargo test -p hailort-sys --test bindings"
    );
}

//! With the `libjpeg-turbo` feature: compiles the MJPEG shim
//! (`src/preprocess/jpeg/turbo_shim.c`) and links the system libjpeg.
//! Without it, nothing happens (the default build needs no C libraries).
//!
//! `LIBJPEG_TURBO_INCLUDE_DIR` and `LIBJPEG_TURBO_LIB_DIR` point at a
//! libjpeg-turbo outside the compiler's default paths.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "libjpeg-turbo")]
    libjpeg_turbo();
}

#[cfg(feature = "libjpeg-turbo")]
fn libjpeg_turbo() {
    const SHIM: &str = "src/preprocess/jpeg/turbo_shim.c";
    println!("cargo:rerun-if-changed={SHIM}");
    println!("cargo:rerun-if-env-changed=LIBJPEG_TURBO_INCLUDE_DIR");
    println!("cargo:rerun-if-env-changed=LIBJPEG_TURBO_LIB_DIR");
    let include = std::env::var_os("LIBJPEG_TURBO_INCLUDE_DIR");
    let mut build = cc::Build::new();
    build.file(SHIM).opt_level(2).warnings(true);
    if let Some(dir) = &include {
        build.include(dir);
    }
    if let Err(e) = build.try_compile("hailo_edge_jpeg_shim") {
        eprintln!(
            "feature `libjpeg-turbo`: cannot compile {SHIM} against libjpeg-turbo's jpeglib.h \
             ({e}).\nInstall the development package (Debian: libjpeg62-turbo-dev, \
             Ubuntu: libjpeg-turbo8-dev, Fedora: libjpeg-turbo-devel) or set \
             LIBJPEG_TURBO_INCLUDE_DIR to the directory holding jpeglib.h (and \
             LIBJPEG_TURBO_LIB_DIR to the one holding libjpeg.so); or build without the feature."
        );
        std::process::exit(1);
    }
    if let Some(dir) = std::env::var_os("LIBJPEG_TURBO_LIB_DIR") {
        println!(
            "cargo:rustc-link-search=native={}",
            std::path::Path::new(&dir).display()
        );
    }
    println!("cargo:rustc-link-lib=jpeg");
}

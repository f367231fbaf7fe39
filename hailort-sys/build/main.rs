//! Build script of `hailort-sys`.
//!
//! Order: without the `hailort` feature, use the committed bindings of the
//! shim header and link nothing. With it, find HailoRT (`HAILORT_INCLUDE_DIR`
//! / `HAILORT_LIB_DIR`, else `HAILORT_ROOT`, else the standard paths), run
//! bindgen over `hailort.h` and the shim header, compile the C++17 shim and,
//! when `libhailort` is found too, link it and set `cfg(hailort_linked)`.
//! Each outcome is announced with `cargo:warning`.

use std::path::{Path, PathBuf};

mod vars;

#[cfg(feature = "hailort")]
#[path = "bindgen_opts.rs"]
mod bindgen_opts;

const STANDARD_INCLUDE_DIRS: &[&str] = &["/usr/include", "/usr/local/include"];
const STANDARD_LIB_DIRS: &[&str] = &[
    "/usr/lib",
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/local/lib",
    "/usr/lib64",
];

fn main() {
    println!("cargo:rustc-check-cfg=cfg(hailort_linked)");
    println!("cargo:rustc-check-cfg=cfg(hailort_headers)");
    println!("cargo:rerun-if-changed=shim/hailo_edge_shim.h");
    println!("cargo:rerun-if-changed=shim/hailo_edge_shim.cpp");
    println!("cargo:rerun-if-changed=shim/hes_status_text.hpp");
    println!("cargo:rerun-if-changed=build");

    if std::env::var_os("CARGO_FEATURE_HAILORT").is_none() {
        println!(
            "cargo:warning=hailort-sys: feature `hailort` off: committed bindings of the shim \
             header, no HailoRT table, nothing linked (the simulator backs the runtime)"
        );
        return;
    }
    let Some(include_dir) = find_include_dir() else {
        println!(
            "cargo:warning=hailort-sys: feature `hailort` on but hailo/hailort.h not found \
             (set HAILORT_ROOT or HAILORT_INCLUDE_DIR): committed bindings, nothing linked"
        );
        return;
    };
    let lib_dir = find_lib_dir();
    build_with_hailort(&include_dir, lib_dir.as_deref());
}

fn has_header(dir: &Path) -> bool {
    dir.join("hailo").join("hailort.h").is_file()
}

fn has_library(dir: &Path) -> bool {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name == "libhailort.so" || name.starts_with("libhailort.so.")
            })
        })
        .unwrap_or(false)
}

fn find_include_dir() -> Option<PathBuf> {
    find_dir(
        vars::HAILORT_INCLUDE_DIR,
        "include",
        STANDARD_INCLUDE_DIRS,
        has_header,
    )
}

fn find_lib_dir() -> Option<PathBuf> {
    find_dir(vars::HAILORT_LIB_DIR, "lib", STANDARD_LIB_DIRS, has_library)
}

/// The directory that `holds` accepts: the one named by `var` when set, else `sub` under
/// `HAILORT_ROOT` when that is set, else the first of the `standard` ones.
fn find_dir(var: &str, sub: &str, standard: &[&str], holds: fn(&Path) -> bool) -> Option<PathBuf> {
    if let Some(dir) = vars::get(var) {
        return Some(PathBuf::from(dir)).filter(|d| holds(d));
    }
    if let Some(root) = vars::get(vars::HAILORT_ROOT) {
        return Some(Path::new(&root).join(sub)).filter(|d| holds(d));
    }
    standard.iter().map(PathBuf::from).find(|d| holds(d))
}

#[cfg(not(feature = "hailort"))]
fn build_with_hailort(_include_dir: &Path, _lib_dir: Option<&Path>) {
    unreachable!("only called with the `hailort` feature");
}

#[cfg(feature = "hailort")]
fn build_with_hailort(include_dir: &Path, lib_dir: Option<&Path>) {
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let shim_dir =
        PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("shim");

    // bindgen over hailort.h and our header together, so both ABIs come from
    // the installed headers.
    let wrapper = out_dir.join("hailort_wrapper.h");
    std::fs::write(
        &wrapper,
        format!(
            "#include <hailo/hailort.h>\n#include \"{}\"\n",
            shim_dir.join("hailo_edge_shim.h").display()
        ),
    )
    .expect("write the bindgen wrapper header");
    let bindings = bindgen_opts::shim_builder(&wrapper.to_string_lossy())
        .clang_arg(format!("-I{}", include_dir.display()))
        .allowlist_type("hailo_.*")
        .allowlist_function("hailo_.*")
        .allowlist_var("HAILO_.*")
        .generate()
        .expect("bindgen over hailort.h and hailo_edge_shim.h");
    bindings
        .write_to_file(out_dir.join("bindings.rs"))
        .expect("write bindings.rs");
    println!("cargo:rustc-cfg=hailort_headers");

    let mut shim = cc::Build::new();
    shim.cpp(true)
        .std("c++17")
        .file(shim_dir.join("hailo_edge_shim.cpp"))
        .include(&shim_dir)
        .include(include_dir)
        .warnings(true);
    match lib_dir {
        Some(lib_dir) => {
            shim.compile("hailo_edge_shim");
            println!("cargo:rustc-link-search=native={}", lib_dir.display());
            println!("cargo:rustc-link-lib=dylib=hailort");
            println!("cargo:rustc-cfg=hailort_linked");
            println!(
                "cargo:warning=hailort-sys: built against HailoRT ({}, {}): shim compiled and linked",
                include_dir.display(),
                lib_dir.display()
            );
        }
        None => {
            // Headers without the library: still compile the shim and run
            // bindgen, as a check against these headers, but link nothing.
            shim.cargo_metadata(false).compile("hailo_edge_shim");
            println!(
                "cargo:warning=hailort-sys: HailoRT headers at {} but no libhailort.so \
                 (set HAILORT_LIB_DIR): shim and bindings checked, nothing linked",
                include_dir.display()
            );
        }
    }
}

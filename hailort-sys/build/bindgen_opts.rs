// The one bindgen configuration of the shim header, shared by the build
// script (HailoRT builds) and the test that checks the committed bindings.

/// A bindgen builder for the shim header with the project's options.
pub fn shim_builder(header: &str) -> bindgen::Builder {
    bindgen::Builder::default()
        .header(header)
        .allowlist_type("hes_.*")
        .allowlist_var("HES_.*")
        // Declared by hand, only when the C++ shim is linked.
        .blocklist_function("hes_hailort_api")
        .derive_default(true)
        .derive_debug(true)
        .layout_tests(true)
        .use_core()
        .wrap_unsafe_ops(true)
        .generate_comments(true)
        .formatter(bindgen::Formatter::Prettyplease)
}

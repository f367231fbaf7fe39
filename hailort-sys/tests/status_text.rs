//! The shim's status text never reads a NULL name: `shim/hes_status_text.hpp`
//! is compiled with a stand-in for `hailo_get_status_message` that answers
//! NULL from status 98 on (as HailoRT 5.2.0 does) and the program checks the
//! texts. Needs a C++17 compiler (`$CXX`, else `c++`); without one the test
//! prints SKIPPED.

use std::path::Path;
use std::process::Command;

#[test]
fn unknown_statuses_get_a_text_instead_of_a_null_name() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let exe = Path::new(env!("CARGO_TARGET_TMPDIR")).join("hes_status_text_test");
    let compiled = Command::new(&cxx)
        .args(["-std=c++17", "-Wall", "-Wextra", "-Werror", "-o"])
        .arg(&exe)
        .arg("-I")
        .arg(root.join("shim"))
        .arg(root.join("tests/status_text.cpp"))
        .output();
    let compiled = match compiled {
        Ok(out) => out,
        Err(err) => {
            eprintln!("SKIPPED: no C++ compiler '{cxx}': {err}");
            return;
        }
    };
    assert!(
        compiled.status.success(),
        "compiling tests/status_text.cpp failed:\n{}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let run = Command::new(&exe).output().expect("run the compiled test");
    assert!(
        run.status.success(),
        "status texts differ:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

//! The binary works away from its source tree: `run` and `bench` from any folder, with the
//! demo's HEFs built in and written to the cache folder.

mod common;

use common::cli::hailo_edge;
use predicates::str::contains;

/// The binary run from an empty folder, with its cache in a folder of its own and no
/// `HAILO_EDGE_FIXTURES`.
fn elsewhere(cwd: &std::path::Path, cache: &std::path::Path) -> assert_cmd::Command {
    let mut c = hailo_edge();
    c.current_dir(cwd)
        .env("HAILO_EDGE_CACHE", cache)
        .env_remove("HAILO_EDGE_FIXTURES");
    c
}

#[test]
fn run_and_bench_work_from_any_folder() {
    let cwd = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    elsewhere(cwd.path(), cache.path())
        .args([
            "bench",
            "--batch",
            "1",
            "--threshold",
            "0",
            "--timeout-ms",
            "0",
        ])
        .args(["--duration-per-point", "0.1", "--out", "out"])
        .assert()
        .success()
        .stdout(contains("backbone_288"));
    for hef in ["backbone_288.hef", "backbone_432.hef"] {
        assert!(cache.path().join("demo").join(hef).is_file(), "{hef}");
    }
    elsewhere(cwd.path(), cache.path())
        .args(["run", "--duration", "0.5", "-q", "--exit-zero"])
        .assert()
        .success()
        .stderr(contains("demo HEFs from"));
}

#[test]
fn a_fixtures_folder_without_the_demo_hefs_is_named() {
    let cwd = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    elsewhere(cwd.path(), cache.path())
        .env("HAILO_EDGE_FIXTURES", cwd.path())
        .args(["run", "--duration", "0.5", "-q"])
        .assert()
        .failure()
        .stderr(contains("HAILO_EDGE_FIXTURES="))
        .stderr(contains("no backbone_288.hef there"));
}

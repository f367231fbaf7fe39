//! Log output: level from `-v`/`-q` (or `RUST_LOG` when set), printed above
//! the progress bars through `indicatif_log_bridge`, so a log line never
//! leaves a copy of a bar behind it.

use hailo_edge::rig::status::terminal;
use indicatif_log_bridge::LogWrapper;

/// The level `-v`/`-q` ask for: info by default, debug/trace with `-v`/`-vv`,
/// warn/error with `-q`/`-qq`.
pub fn level(verbose: u8, quiet: u8) -> &'static str {
    match (verbose, quiet) {
        (0, 0) => "info",
        (1, _) => "debug",
        (2.., _) => "trace",
        (0, 1) => "warn",
        (0, _) => "error",
    }
}

/// Installs the logger once; `RUST_LOG`, when set, overrides the flags.
pub fn init(verbose: u8, quiet: u8) {
    let logger = env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or(level(verbose, quiet)),
    )
    .build();
    let max = logger.filter();
    if LogWrapper::new(terminal().clone(), logger)
        .try_init()
        .is_ok()
    {
        log::set_max_level(max);
    }
}

#[cfg(test)]
mod tests {
    use super::level;

    #[test]
    fn flags_move_the_level_both_ways() {
        assert_eq!(level(0, 0), "info");
        assert_eq!(level(1, 0), "debug");
        assert_eq!(level(3, 0), "trace");
        assert_eq!(level(0, 1), "warn");
        assert_eq!(level(0, 2), "error");
    }
}

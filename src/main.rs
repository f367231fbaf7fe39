//! The `hailo-edge` command.

mod cli;

fn main() -> std::process::ExitCode {
    // Before anything else runs: a build for CPU features this CPU lacks stops here with their
    // names instead of an illegal instruction later.
    if let Err(err) = hailo_edge::cpu::check() {
        eprintln!("error: {err}");
        return std::process::ExitCode::from(4);
    }
    cli::main()
}

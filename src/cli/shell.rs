//! `completions` and `man`: shell completions and man pages generated from
//! the CLI's own definition, so they never disagree with `--help`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Args, CommandFactory};
use clap_complete::Shell;

use super::Cli;

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to write completions for (to stdout).
    shell: Shell,
}

#[derive(Debug, Args)]
pub struct ManArgs {
    /// Folder for hailo-edge.1 and one page per subcommand (hailo-edge-run.1, ...).
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

/// Writes the completion script for one shell to stdout.
pub fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut cmd = Cli::command();
    clap_complete::generate(args.shell, &mut cmd, "hailo-edge", &mut std::io::stdout());
    Ok(ExitCode::SUCCESS)
}

/// Writes the man pages of the command and every subcommand into `--out`.
pub fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("--out {}: cannot create the folder", args.out.display()))?;
    clap_mangen::generate_to(Cli::command(), &args.out)
        .with_context(|| format!("--out {}: cannot write the man pages", args.out.display()))?;
    println!("man pages written to {}", args.out.display());
    Ok(ExitCode::SUCCESS)
}

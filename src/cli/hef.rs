//! `hailo-edge hef`: inspect and verify HEF files.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;

#[derive(Debug, Subcommand)]
pub enum HefCommand {
    /// Print what a HEF holds, as `hailortcli parse-hef` does.
    Inspect {
        files: Vec<PathBuf>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Check structure and checksum; exit 0 only when every file is sound.
    Verify { files: Vec<PathBuf> },
}

pub fn run(cmd: HefCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        HefCommand::Inspect { .. } | HefCommand::Verify { .. } => {
            anyhow::bail!("the HEF reader is not built yet")
        }
    }
}

//! Writes the committed HEF fixtures into a directory (default `fixtures`).
//!
//! `cargo run -p hef --example make_fixtures -- fixtures`
//!
//! The output is deterministic; the test `fixtures_are_up_to_date` compares
//! a fresh run with the committed files.

use std::path::PathBuf;

/// Writes the HEF fixtures the tests compare against.
#[derive(clap::Parser)]
struct Args {
    /// The folder to write them into (created if missing).
    #[arg(default_value = "fixtures")]
    dir: PathBuf,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { dir } = <Args as clap::Parser>::parse();
    std::fs::create_dir_all(&dir)?;
    for (name, bytes) in hef::samples::fixture_files()? {
        let path = dir.join(name);
        std::fs::write(&path, &bytes)?;
        println!("{} ({} bytes)", path.display(), bytes.len());
    }
    Ok(())
}

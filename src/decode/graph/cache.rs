//! Generated graphs cached on disk, so a real-width graph (tens of MB) is generated once per
//! machine and description.
//!
//! Directory: `$HAILO_EDGE_CACHE`, else `$XDG_CACHE_HOME/hailo-edge`, else
//! `$HOME/.cache/hailo-edge`; graphs go in its `decoders/` folder under
//! [`HostGraph::file_name`]. Beside each graph a `.sha256` file holds the SHA-256 of its
//! bytes. A graph whose digest file is missing or does not match (a truncated or corrupt
//! file) is generated again. Both files are written to a temporary name and renamed, so a
//! reader never sees a partial file under the final name.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::digest::sha256_hex;

use super::{GraphError, HostGraph};

/// The cache directory for decoder graphs (`…/hailo-edge/decoders`).
///
/// # Errors
/// [`GraphError::NoCacheDir`] when none of the variables is set.
pub fn cache_dir() -> Result<PathBuf, GraphError> {
    dir_from(|k| std::env::var_os(k))
}

/// The cache directory from the variables `get` returns.
pub(super) fn dir_from(
    get: impl Fn(&str) -> Option<std::ffi::OsString>,
) -> Result<PathBuf, GraphError> {
    Ok(root_from(get)
        .ok_or(GraphError::NoCacheDir)?
        .join("decoders"))
}

/// The crate's cache root (`$HAILO_EDGE_CACHE`, else `$XDG_CACHE_HOME/hailo-edge`, else
/// `$HOME/.cache/hailo-edge`), or `None` when none of the variables is set.
pub fn cache_root() -> Option<PathBuf> {
    root_from(|k| std::env::var_os(k))
}

fn root_from(get: impl Fn(&str) -> Option<std::ffi::OsString>) -> Option<PathBuf> {
    let var = |k: &str| get(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("HAILO_EDGE_CACHE")
        .or_else(|| var("XDG_CACHE_HOME").map(|p| p.join("hailo-edge")))
        .or_else(|| var("HOME").map(|p| p.join(".cache").join("hailo-edge")))
}

/// The path of `graph` in the cache, generating and writing it when it is absent or does
/// not match its digest.
///
/// # Errors
/// [`GraphError::Side`] for a bad side, [`GraphError::NoCacheDir`], or [`GraphError::Io`]
/// naming the file that could not be written.
pub fn cached(graph: &HostGraph) -> Result<PathBuf, GraphError> {
    cached_in(&cache_dir()?, graph)
}

/// [`cached`] in the directory `dir`.
pub(super) fn cached_in(dir: &Path, graph: &HostGraph) -> Result<PathBuf, GraphError> {
    graph.validate()?;
    fs::create_dir_all(dir).map_err(|source| GraphError::Io {
        path: dir.to_owned(),
        source,
    })?;
    let path = dir.join(graph.file_name());
    let digest_path = digest_path(&path);
    match check(&path, &digest_path) {
        Check::Valid => return Ok(path),
        Check::Absent => log::info!("generating decoder graph {}", path.display()),
        Check::Invalid(why) => {
            log::warn!(
                "decoder graph {}: {why}; generating it again",
                path.display()
            );
        }
    }
    let bytes = graph.encode()?;
    let digest = sha256_hex(&bytes);
    write_atomic(&path, &bytes)?;
    write_atomic(&digest_path, digest.as_bytes())?;
    Ok(path)
}

/// The digest file beside `path`.
fn digest_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".sha256");
    path.with_file_name(name)
}

enum Check {
    Valid,
    Absent,
    Invalid(String),
}

/// Whether the file at `path` matches the digest stored beside it.
fn check(path: &Path, digest_path: &Path) -> Check {
    if !path.exists() {
        return Check::Absent;
    }
    let Ok(want) = fs::read_to_string(digest_path) else {
        return Check::Invalid("no digest file beside it".to_owned());
    };
    let bytes = match fs::read(path) {
        Ok(b) => b,
        Err(e) => return Check::Invalid(format!("unreadable ({e})")),
    };
    let got = sha256_hex(&bytes);
    if got == want.trim() {
        Check::Valid
    } else {
        Check::Invalid(format!(
            "{} bytes whose SHA-256 does not match the digest (truncated or corrupt)",
            bytes.len()
        ))
    }
}

/// Writes `bytes` to a temporary file beside `path`, then renames it onto `path`.
fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), GraphError> {
    replace_file(path, bytes).map_err(|(path, source)| GraphError::Io { path, source })
}

/// Writes `bytes` to a temporary file beside `path`, then renames it onto `path`, so a
/// reader never sees a partial file; on failure, the file that failed and why.
pub(crate) fn replace_file(path: &Path, bytes: &[u8]) -> Result<(), (PathBuf, std::io::Error)> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".tmp{}", std::process::id()));
    let tmp = path.with_file_name(name);
    let write = || -> std::io::Result<()> {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()
    };
    write().map_err(|e| (tmp.clone(), e))?;
    fs::rename(&tmp, path).map_err(|e| (path.to_owned(), e))
}

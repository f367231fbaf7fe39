//! Which key of a rig file a byte offset falls on, so that a value serde
//! refuses is reported with its key (`camera[1].format`) and not only its
//! line and column.

/// A key of a rig file and its line (1-based).
pub(super) struct KeyAt {
    pub key: String,
    pub line: usize,
}

/// The key whose line holds byte `offset` of `text`, qualified by its table:
/// `device.backend`, `camera[1].format`, or the table itself for a header
/// line. Rig files are flat tables of `key = value` lines; a value spanning
/// lines, or an offset before any key, gives `None`.
pub(super) fn key_at(text: &str, offset: usize) -> Option<KeyAt> {
    let mut table: Option<String> = None;
    let mut arrays: Vec<(String, usize)> = Vec::new();
    let mut start = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let end = start + line.len();
        let body = line.trim();
        if let Some(name) = body.strip_prefix("[[").and_then(|b| b.split("]]").next()) {
            let name = name.trim().to_owned();
            let n = match arrays.iter_mut().find(|(a, _)| *a == name) {
                Some((_, count)) => {
                    *count += 1;
                    *count - 1
                }
                None => {
                    arrays.push((name.clone(), 1));
                    0
                }
            };
            table = Some(format!("{name}[{n}]"));
        } else if let Some(name) = body.strip_prefix('[').and_then(|b| b.split(']').next()) {
            table = Some(name.trim().to_owned());
        }
        if (start..end).contains(&offset) {
            let key = match body.split_once('=') {
                Some((key, _)) if !body.starts_with('[') => {
                    let key = key.trim().trim_matches('"');
                    match &table {
                        Some(t) => format!("{t}.{key}"),
                        None => key.to_owned(),
                    }
                }
                _ => table?,
            };
            return Some(KeyAt {
                key,
                line: index + 1,
            });
        }
        start = end;
    }
    None
}

//! The records of a recording's uncompressed chunks, checked against their chunk before
//! mcap's reader walks them.
//!
//! mcap 0.26's linear reader takes a record inside an uncompressed chunk at its word: a record
//! that claims more bytes than its chunk has left underflows the chunk's remaining count (a
//! panic with overflow checks; without them, the reader goes on past the chunk's end and reads
//! the file's next records as the chunk's). Compressed chunks are bounded by their
//! decompressor. So the file is walked first, record by record, and read only up to the first
//! chunk whose records do not fit it; the rest is a recording cut short.

use mcap::records::op;

/// The magic at the start of an MCAP file.
const MAGIC_LEN: usize = 8;
/// An opcode and a little-endian u64 length, ahead of every record.
const RECORD_HEADER: usize = 9;
/// A chunk's start and end times, uncompressed size and CRC, ahead of its compression.
const CHUNK_FIXED: usize = 8 + 8 + 8 + 4;

/// Where the first chunk whose records overrun it starts, and why it is refused; `None` when
/// every uncompressed chunk holds its records. A chunk the file ends inside is checked as far
/// as the file goes (a recording cut short ends so); framing that passes the file's end
/// otherwise is left to mcap's reader, which stops there.
pub(super) fn first_overrun_chunk(bytes: &[u8]) -> Option<(usize, String)> {
    records(bytes)
        .filter(|r| r.opcode == op::CHUNK)
        .find_map(|r| {
            overrun(r.body).map(|why| (r.at, format!("the chunk at byte {}: {why}", r.at)))
        })
}

/// One top-level record of a file.
pub(super) struct Framed<'a> {
    /// Where its opcode is.
    pub at: usize,
    pub opcode: u8,
    /// Its body, or as much of it as the file holds.
    pub body: &'a [u8],
}

/// The file's top-level records after the magic, up to the footer; the last is the one the
/// file ends inside, if any.
pub(super) fn records(bytes: &[u8]) -> impl Iterator<Item = Framed<'_>> {
    let mut next = Some(MAGIC_LEN);
    std::iter::from_fn(move || {
        let at = next?;
        let header = bytes.get(at..at.checked_add(RECORD_HEADER)?)?;
        let opcode = header[0];
        if opcode == op::FOOTER {
            return None;
        }
        let len = u64::from_le_bytes(header[1..].try_into().ok()?);
        let start = at + RECORD_HEADER;
        let held = bytes.len() - start;
        let body = match usize::try_from(len) {
            Ok(n) if n <= held => {
                next = Some(start + n);
                &bytes[start..start + n]
            }
            _ => {
                next = None;
                &bytes[start..]
            }
        };
        Some(Framed { at, opcode, body })
    })
}

/// Why an uncompressed chunk's records do not fit it; `None` for one whose records fit, as
/// far as `chunk` holds them, a compressed one, or a header too short to say (mcap's reader
/// refuses that).
fn overrun(chunk: &[u8]) -> Option<String> {
    let u32_at = |i: usize| Some(u32::from_le_bytes(chunk.get(i..i + 4)?.try_into().ok()?));
    let u64_at = |i: usize| Some(u64::from_le_bytes(chunk.get(i..i + 8)?.try_into().ok()?));
    if u32_at(CHUNK_FIXED)? != 0 {
        return None;
    }
    let records_len = u64_at(CHUNK_FIXED + 4)?;
    let records = chunk.get(CHUNK_FIXED + 4 + 8..)?;
    let header = RECORD_HEADER as u64;
    let mut at = 0u64;
    while at < records_len {
        if records_len - at < header {
            return Some(format!(
                "{} bytes at the end of its records are too few for a record",
                records_len - at
            ));
        }
        // Where the file ends first, the recording is cut short there, not overrun.
        let i = usize::try_from(at).ok()?;
        let record = records.get(i..i + RECORD_HEADER)?;
        let len = u64::from_le_bytes(record[1..].try_into().ok()?);
        let left = records_len - at - header;
        if len > left {
            return Some(format!(
                "a record (opcode {:#04x}) claims {len} bytes where the chunk has {left} left",
                record[0]
            ));
        }
        at += header + len;
    }
    None
}

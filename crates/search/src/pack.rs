//! A segment's files in one file: the *pack* `<segment id>.pack` (see `directory.rs` for when
//! a segment is packed and how its files are found).
//!
//! ```text
//! member bytes, one after the other
//! table:    per member: name_len: u16 LE | name | offset: u64 LE | len: u64 LE
//! trailer:  table_len: u32 LE | check: u64 LE | "SCRPACK1"
//! ```
//!
//! `check` is FNV-1a over the table and `table_len`. The trailer comes last, so a pack cut
//! short (a process killed while writing it) has none and is refused; every member also ends
//! with tantivy's own footer and checksum, which the index checks after a reboot.

use std::collections::BTreeMap;
use std::ops::Range;

const MAGIC: &[u8; 8] = b"SCRPACK1";
const TRAILER: usize = 4 + 8 + 8;
/// The file name suffix of a pack.
pub(crate) const SUFFIX: &str = ".pack";

/// What a pack holds: each member's name and byte range, and the pack's length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Table {
    pub(crate) members: BTreeMap<String, Range<usize>>,
    pub(crate) len: usize,
}

/// The bytes of a pack of `members` (name, content), and its table.
pub(crate) fn encode<'a>(
    members: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> (Vec<u8>, Table) {
    let mut bytes = Vec::new();
    let mut ranges = BTreeMap::new();
    let mut table = Vec::new();
    for (name, content) in members {
        let start = bytes.len();
        bytes.extend_from_slice(content);
        let name_len = u16::try_from(name.len()).expect("a segment file name is short");
        table.extend_from_slice(&name_len.to_le_bytes());
        table.extend_from_slice(name.as_bytes());
        table.extend_from_slice(&(start as u64).to_le_bytes());
        table.extend_from_slice(&(content.len() as u64).to_le_bytes());
        ranges.insert(name.to_owned(), start..bytes.len());
    }
    let table_len = u32::try_from(table.len()).expect("a pack table is small");
    let check = check(&table, table_len);
    bytes.extend_from_slice(&table);
    bytes.extend_from_slice(&table_len.to_le_bytes());
    bytes.extend_from_slice(&check.to_le_bytes());
    bytes.extend_from_slice(MAGIC);
    let len = bytes.len();
    (bytes, Table { members: ranges, len })
}

/// The table of a whole pack, or `None` when it is not one (cut short, damaged, or another
/// file).
pub(crate) fn decode(bytes: &[u8]) -> Option<Table> {
    let len = bytes.len();
    let trailer = bytes.get(len.checked_sub(TRAILER)?..)?;
    if &trailer[12..] != MAGIC {
        return None;
    }
    let table_len = u32::from_le_bytes(trailer[..4].try_into().ok()?);
    let stored = u64::from_le_bytes(trailer[4..12].try_into().ok()?);
    let table_start = (len - TRAILER).checked_sub(usize::try_from(table_len).ok()?)?;
    let table = &bytes[table_start..len - TRAILER];
    if check(table, table_len) != stored {
        return None;
    }
    let mut members = BTreeMap::new();
    let mut at = 0;
    while at < table.len() {
        let name_len = usize::from(u16::from_le_bytes(table.get(at..at + 2)?.try_into().ok()?));
        at += 2;
        let name = std::str::from_utf8(table.get(at..at + name_len)?).ok()?;
        at += name_len;
        let word = |at: usize| -> Option<usize> {
            usize::try_from(u64::from_le_bytes(table.get(at..at + 8)?.try_into().ok()?)).ok()
        };
        let (start, member_len) = (word(at)?, word(at + 8)?);
        at += 16;
        let end = start.checked_add(member_len)?;
        if end > table_start {
            return None;
        }
        members.insert(name.to_owned(), start..end);
    }
    Some(Table { members, len })
}

fn check(table: &[u8], table_len: u32) -> u64 {
    table
        .iter()
        .chain(table_len.to_le_bytes().iter())
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pack_round_trips_and_a_cut_or_damaged_one_is_refused() {
        let members: [(&str, &[u8]); 3] =
            [("a.idx", b"postings"), ("a.pos", b""), ("a.store", b"stored fields")];
        let (bytes, table) = encode(members);
        assert_eq!(decode(&bytes), Some(table.clone()));
        assert_eq!(table.len, bytes.len());
        for (name, content) in members {
            assert_eq!(&bytes[table.members[name].clone()], content, "{name}");
        }
        for cut in 0..bytes.len() {
            assert_eq!(decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let mut damaged = bytes.clone();
        let in_table = bytes.len() - TRAILER - 3;
        damaged[in_table] ^= 1;
        assert_eq!(decode(&damaged), None);
        let (empty, table) = encode([]);
        assert_eq!(decode(&empty), Some(table));
    }
}

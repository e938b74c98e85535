//! The catalog: what validation needs to know of every committed topic file without parsing
//! it ([`Summary`]: block IDs with their lines and refs, defined evidence IDs, line-end IDs,
//! link targets, size, hash), persisted as derived state in `.scriptorium/catalog` so that a
//! new process validates a transaction against the rest of the tree without parsing it.
//!
//! Key decision: entries are keyed by the file's content hash, not by a revision. `begin`
//! takes an entry only for a live file whose hash (from the revision record's stat cache, or
//! read) equals the entry's, and parses every other file; so a catalog left stale by a crash,
//! an outside edit or an older install can only cost parses, never a wrong answer. What the
//! file says is checked again whenever a file is parsed on demand (its parse must give the
//! entry's summary, else the load fails).
//!
//! Format (UTF-8 text, one record per line, fields separated by tabs):
//!
//! ```text
//! scriptorium-catalog/1
//! F <hash> <bytes> <0|1 diagnostics> <path>
//! B <block id> <line> <0|1 is a unit's id> <ref>…      (one per block ID, in file order)
//! E <evidence id>…                                      (when any)
//! L <line-end id>…                                      (when any)
//! K <link target>…                                      (when any)
//! end <files> <FNV-1a 64 of every byte before this line, 16 hex>
//! ```
//!
//! A file with a tab or a newline in any field is left out (it is parsed on every `begin`).
//! Anything that does not parse, or whose trailer does not match, is no catalog: `begin`
//! parses the tree and writes a new one.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

const MAGIC: &str = "scriptorium-catalog/1";

/// What the rest of the tree needs to know of one committed file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Summary {
    /// The path relative to `topics/`.
    pub path: String,
    /// SHA-256 (hex) of its bytes.
    pub hash: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// Whether its strict parse has diagnostics.
    pub diagnostics: bool,
    /// Every block ID it holds, in file order.
    pub block_ids: Vec<String>,
    /// Where each block ID's paragraph starts (1-based line).
    pub lines: HashMap<String, u32>,
    /// The refs each unit's block ID cites.
    pub refs_by_block: HashMap<String, BTreeSet<String>>,
    /// The evidence IDs it defines (sorted, as parsed).
    pub evidence_ids: Vec<String>,
    /// Its line-end `^token`s (sorted, as parsed).
    pub line_end_ids: Vec<String>,
    /// The block IDs its links point at.
    pub link_targets: Vec<String>,
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

fn clean(field: &str) -> bool {
    !field.contains(['\t', '\n', '\r'])
}

fn storable(s: &Summary) -> bool {
    let lists = [&s.block_ids, &s.evidence_ids, &s.line_end_ids, &s.link_targets];
    clean(&s.path)
        && clean(&s.hash)
        && !s.path.is_empty()
        && lists.iter().all(|list| list.iter().all(|f| clean(f) && !f.is_empty()))
        && s.refs_by_block.values().flatten().all(|f| clean(f) && !f.is_empty())
        && s.refs_by_block.keys().all(|id| s.lines.contains_key(id))
        && s.block_ids.len() == s.lines.len()
}

/// The catalog of `summaries` (files that cannot be stored are left out).
pub(super) fn encode<'a>(summaries: impl Iterator<Item = &'a Summary>) -> Vec<u8> {
    let mut out = String::with_capacity(1 << 16);
    out.push_str(MAGIC);
    out.push('\n');
    let mut count = 0usize;
    for s in summaries.filter(|s| storable(s)) {
        count += 1;
        let _ =
            writeln!(out, "F\t{}\t{}\t{}\t{}", s.hash, s.bytes, u8::from(s.diagnostics), s.path);
        for id in &s.block_ids {
            let line = s.lines.get(id).copied().unwrap_or(1);
            let refs = s.refs_by_block.get(id);
            let _ = write!(out, "B\t{id}\t{line}\t{}", u8::from(refs.is_some()));
            for r in refs.into_iter().flatten() {
                out.push('\t');
                out.push_str(r);
            }
            out.push('\n');
        }
        for (tag, list) in [('E', &s.evidence_ids), ('L', &s.line_end_ids), ('K', &s.link_targets)]
        {
            if !list.is_empty() {
                out.push(tag);
                for item in list {
                    out.push('\t');
                    out.push_str(item);
                }
                out.push('\n');
            }
        }
    }
    let hash = fnv1a(out.as_bytes());
    let _ = writeln!(out, "end\t{count}\t{hash:016x}");
    out.into_bytes()
}

/// The summaries of the catalog `bytes`, in file order; `None` when it is no whole catalog.
pub(super) fn decode(bytes: &[u8]) -> Option<Vec<Summary>> {
    let text = std::str::from_utf8(bytes).ok()?;
    let body_end = text.strip_suffix('\n')?.rfind('\n')? + 1;
    let (body, trailer) = text.split_at(body_end);
    let mut trailer = trailer.strip_suffix('\n')?.split('\t');
    let (Some("end"), Some(count), Some(hash), None) =
        (trailer.next(), trailer.next(), trailer.next(), trailer.next())
    else {
        return None;
    };
    if format!("{:016x}", fnv1a(body.as_bytes())) != hash {
        return None;
    }
    let count: usize = count.parse().ok()?;
    let mut lines = body.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let mut out: Vec<Summary> = Vec::with_capacity(count);
    for line in lines {
        let mut fields = line.split('\t');
        let tag = fields.next()?;
        if tag == "F" {
            let hash = fields.next()?.to_owned();
            let bytes = fields.next()?.parse().ok()?;
            let diagnostics = match fields.next()? {
                "0" => false,
                "1" => true,
                _ => return None,
            };
            let path = fields.next()?.to_owned();
            if fields.next().is_some() {
                return None;
            }
            out.push(Summary {
                path,
                hash,
                bytes,
                diagnostics,
                block_ids: Vec::new(),
                lines: HashMap::new(),
                refs_by_block: HashMap::new(),
                evidence_ids: Vec::new(),
                line_end_ids: Vec::new(),
                link_targets: Vec::new(),
            });
            continue;
        }
        let summary = out.last_mut()?;
        match tag {
            "B" => {
                let id = fields.next()?.to_owned();
                let line: u32 = fields.next()?.parse().ok()?;
                let unit = match fields.next()? {
                    "0" => false,
                    "1" => true,
                    _ => return None,
                };
                let refs: BTreeSet<String> = fields.map(str::to_owned).collect();
                if !unit && !refs.is_empty() {
                    return None;
                }
                if summary.lines.insert(id.clone(), line).is_some() {
                    return None;
                }
                if unit {
                    summary.refs_by_block.insert(id.clone(), refs);
                }
                summary.block_ids.push(id);
            }
            "E" | "L" | "K" => {
                let list = match tag {
                    "E" => &mut summary.evidence_ids,
                    "L" => &mut summary.line_end_ids,
                    _ => &mut summary.link_targets,
                };
                if !list.is_empty() {
                    return None;
                }
                list.extend(fields.map(str::to_owned));
            }
            _ => return None,
        }
    }
    (out.len() == count).then_some(out)
}

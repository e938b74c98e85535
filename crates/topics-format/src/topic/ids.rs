//! The block-ID and evidence-ID formulas (see `docs/format.md#block-id` and
//! `docs/format.md#evidence-id`), used by normalization steps 2 and 5.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;

use sha2::{Digest, Sha256};

/// A block ID: one or more ASCII letters, digits and `-` (see `docs/format.md#block-ids`); the
/// IDs the runtime mints are 8 lowercase hex digits ([`block_id_candidate`]). It borrows as a
/// `str`, so maps keyed by it are looked up with a plain `&str`.
///
/// ```
/// use scriptorium_topics_format::BlockId;
///
/// let id = BlockId::parse("6dfc15f1").expect("a block ID");
/// assert_eq!(id, "6dfc15f1");
/// assert!(BlockId::parse("ab_c").is_none() && BlockId::parse("").is_none());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct BlockId(String);

impl BlockId {
    /// `text` as a block ID, or `None` when it is empty or holds another character.
    pub fn parse(text: &str) -> Option<BlockId> {
        let valid =
            !text.is_empty() && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
        valid.then(|| BlockId(text.to_owned()))
    }

    /// The ID as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The ID as an owned `String`.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for BlockId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Borrow<str> for BlockId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for BlockId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for BlockId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for BlockId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for BlockId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl From<BlockId> for String {
    fn from(id: BlockId) -> String {
        id.0
    }
}

/// The first `n` lowercase hex digits of `sha256(value)`.
fn sha256_hex(value: &str, n: usize) -> String {
    let digest = Sha256::digest(value.as_bytes());
    let mut hex = hex::encode(digest);
    hex.truncate(n);
    hex
}

/// One block-ID candidate: `sha256("block|<basename>|<collapsed body>|<counter>")[:8]`.
///
/// ```
/// use scriptorium_topics_format::topic::block_id_candidate;
///
/// let body = "Craig is building a budget tracker in Flask, due 2024-04-15.[^e1]";
/// assert_eq!(block_id_candidate("budget-tracker.md", body, 0), "6dfc15f1");
/// ```
pub fn block_id_candidate(basename: &str, collapsed_body: &str, counter: u64) -> BlockId {
    BlockId(sha256_hex(&format!("block|{basename}|{collapsed_body}|{counter}"), 8))
}

/// One evidence-ID candidate: `"e-" + sha256("evidence|<when>|<seed>|<counter>")[:10]`, where
/// `when` is the time as written (`undated` included) and `seed` the `|`-joined link targets.
///
/// ```
/// use scriptorium_topics_format::topic::evidence_id_candidate;
///
/// assert_eq!(evidence_id_candidate("undated", "openprogram/sess-7f2a/a1", 0), "e-cecd4ddc68");
/// ```
pub fn evidence_id_candidate(when: &str, seed: &str, counter: u64) -> String {
    format!("e-{}", sha256_hex(&format!("evidence|{when}|{seed}|{counter}"), 10))
}

/// The first block-ID candidate (counter 0, 1, …) not in `used`; it is added to `used`.
pub fn mint_block_id(basename: &str, collapsed_body: &str, used: &mut HashSet<String>) -> BlockId {
    BlockId(mint(used, |counter| block_id_candidate(basename, collapsed_body, counter).0))
}

/// The first evidence-ID candidate (counter 0, 1, …) not in `used`; it is added to `used`.
pub fn mint_evidence_id(when: &str, seed: &str, used: &mut HashSet<String>) -> String {
    mint(used, |counter| evidence_id_candidate(when, seed, counter))
}

fn mint(used: &mut HashSet<String>, candidate: impl Fn(u64) -> String) -> String {
    mint_avoiding(used, &|_: &str| false, candidate)
}

/// The first candidate (counter 0, 1, …) neither in `used` nor `taken`; it is added to `used`.
pub(crate) fn mint_avoiding(
    used: &mut HashSet<String>,
    taken: &dyn Fn(&str) -> bool,
    candidate: impl Fn(u64) -> String,
) -> String {
    let mut counter = 0;
    loop {
        let value = candidate(counter);
        if !taken(&value) && used.insert(value.clone()) {
            return value;
        }
        counter += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collisions_bump_the_counter() {
        let mut used = HashSet::new();
        let first = mint_evidence_id("2024", "a/b/c", &mut used);
        let second = mint_evidence_id("2024", "a/b/c", &mut used);
        assert_eq!(first, evidence_id_candidate("2024", "a/b/c", 0));
        assert_eq!(second, evidence_id_candidate("2024", "a/b/c", 1));
    }
}

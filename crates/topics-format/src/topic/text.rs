//! Python string semantics the format depends on: `str.splitlines`, `str.isspace`, `strip`.
//!
//! The Python implementation splits topic files with `str.splitlines()` and trims with
//! `str.strip()`; both recognise more characters than Rust's `lines` and `trim`. Matching them
//! exactly is what makes segmentation agree byte for byte on every input.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;

/// A fast non-cryptographic hasher (FxHash's multiply-rotate) for the parser's short string
/// keys: SipHash's DoS resistance buys nothing for maps that live for one parse.
#[derive(Default, Clone, Copy)]
pub(crate) struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// A `HashMap` with [`FxHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FxHasher>>;
/// A `HashSet` with [`FxHasher`].
pub(crate) type FastSet<K> = HashSet<K, BuildHasherDefault<FxHasher>>;

/// Whether `c` is whitespace for Python (`str.isspace`, and the `\s` of a `str` regex).
pub(crate) use crate::python::is_space as is_py_space;

/// `s.lstrip()` as a byte offset into `s`.
pub(crate) fn lstrip_len(s: &str) -> usize {
    s.len() - s.trim_start_matches(is_py_space).len()
}

/// `s.strip()`.
pub(crate) fn py_strip(s: &str) -> &str {
    s.trim_matches(is_py_space)
}

/// `s.rstrip()`.
pub(crate) fn py_rstrip(s: &str) -> &str {
    s.trim_end_matches(is_py_space)
}

/// `s.strip()` as a byte range of `s`.
pub(crate) fn py_strip_range(s: &str) -> Range<usize> {
    let start = lstrip_len(s);
    let end = py_rstrip(s).len().max(start);
    start..end
}

/// `" ".join(s.split())`: whitespace runs collapsed to one space, ends trimmed.
pub(crate) fn collapse_whitespace(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split(is_py_space).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// One line of a text as `str.splitlines()` sees it: its content and its line break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LineSpan {
    /// Start of the line's content.
    pub(crate) start: usize,
    /// End of the content (start of the line break).
    pub(crate) end: usize,
    /// End of the line break (start of the next line).
    pub(crate) next: usize,
}

/// Bytes that can start a `str.splitlines` line break.
static MAY_BREAK: [bool; 256] = {
    let mut table = [false; 256];
    let starts: [u8; 9] = [b'\n', b'\r', 0x0b, 0x0c, 0x1c, 0x1d, 0x1e, 0xc2, 0xe2];
    let mut k = 0;
    while k < starts.len() {
        table[starts[k] as usize] = true;
        k += 1;
    }
    table
};

/// Splits `text` exactly like Python's `str.splitlines()`, keeping the breaks as byte ranges.
///
/// Breaks: `\n`, `\r\n`, `\r`, `\x0b`, `\x0c`, `\x1c`, `\x1d`, `\x1e`, U+0085, U+2028, U+2029.
/// A final line without a break is a line; an empty text has no lines.
pub(crate) fn split_lines(text: &str) -> Vec<LineSpan> {
    let bytes = text.as_bytes();
    let mut lines = Vec::with_capacity(bytes.len() / 64 + 1);
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Skip ordinary bytes fast: only these can start a line break.
        match bytes[i..].iter().position(|&b| MAY_BREAK[usize::from(b)]) {
            Some(skip) => i += skip,
            None => break,
        }
        let b = bytes[i];
        let brk = match b {
            b'\n' | 0x0b | 0x0c | 0x1c..=0x1e => 1,
            b'\r' => {
                if bytes.get(i + 1) == Some(&b'\n') {
                    2
                } else {
                    1
                }
            }
            0xc2 if bytes.get(i + 1) == Some(&0x85) => 2,
            0xe2 if bytes.get(i + 1) == Some(&0x80)
                && matches!(bytes.get(i + 2), Some(&0xa8) | Some(&0xa9)) =>
            {
                3
            }
            _ => 0,
        };
        if brk == 0 {
            i += 1;
            continue;
        }
        lines.push(LineSpan { start, end: i, next: i + brk });
        i += brk;
        start = i;
    }
    if start < bytes.len() {
        lines.push(LineSpan { start, end: bytes.len(), next: bytes.len() });
    }
    lines
}

/// 1-based (line, column) of byte `offset` in `text`; the column counts characters.
pub(crate) fn line_col(lines: &[LineSpan], text: &str, offset: usize) -> (u32, u32) {
    let index = lines.partition_point(|l| l.next <= offset).min(lines.len().saturating_sub(1));
    match lines.get(index) {
        Some(line) => {
            let from = line.start.min(offset);
            let col = text.get(from..offset).map_or(0, |s| s.chars().count());
            (to_u32(index + 1), to_u32(col + 1))
        }
        None => (1, 1),
    }
}

/// Saturating conversion for line and column numbers.
pub(crate) fn to_u32(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(text: &str) -> Vec<&str> {
        split_lines(text).iter().map(|l| &text[l.start..l.end]).collect()
    }

    #[test]
    fn splitlines_matches_python() {
        assert_eq!(pieces(""), Vec::<&str>::new());
        assert_eq!(pieces("a"), vec!["a"]);
        assert_eq!(pieces("a\n"), vec!["a"]);
        assert_eq!(pieces("a\n\nb"), vec!["a", "", "b"]);
        assert_eq!(pieces("a\r\nb\rc\u{2028}d\u{85}e\x0cf"), vec!["a", "b", "c", "d", "e", "f"]);
        assert_eq!(pieces("\r\n"), vec![""]);
    }

    #[test]
    fn python_whitespace() {
        assert_eq!(py_strip("\u{1f} a\u{a0}"), "a");
        assert_eq!(collapse_whitespace(" a \t b\n c "), "a b c");
    }
}

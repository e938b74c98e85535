//! Session log file names: a portable encoding of any session ID.
//!
//! A session ID is any string (`/`, `..`, NUL, Unicode, upper case included). Its log is named:
//!
//! - `s_<escaped>.log`, where every byte of the UTF-8 ID outside `[a-z0-9_-]` is written `%xx`
//!   (lower-case hex). The name is reversible, holds no `/`, `.` or upper case (so it neither
//!   escapes the directory nor collides on case-insensitive file systems), and is never empty.
//! - `h_<sha256 of the ID, lower-case hex>.log` when the escaped form would be longer than
//!   200 bytes. Such a name cannot be decoded; the log's first line (the `session`
//!   header record) carries the ID.
//!
//! A rewrite (a forget, a rewrite of texts) writes the new log to `<log file name>.tmp` before renaming it over the log; that
//! name is never a log's.

use sha2::{Digest, Sha256};

use crate::SessionId;

/// The longest escaped ID kept readable; longer IDs are hashed (file names are limited to 255
/// bytes on common file systems).
pub(crate) const MAX_ESCAPED: usize = 200;

/// The file extension of a session log.
pub(crate) const LOG_EXTENSION: &str = ".log";

/// The name of the file a rewrite writes `session`'s new log to before renaming it over the log
/// (`<log file name>.tmp`; never a log name, see [`decode_log_file_name`]).
pub(crate) fn temporary_log_file_name(session: &SessionId) -> String {
    format!("{}.tmp", log_file_name(session))
}

/// The log file name of `session`.
pub(crate) fn log_file_name(session: &SessionId) -> String {
    let mut escaped = String::with_capacity(session.0.len() + 2);
    for &byte in session.0.as_bytes() {
        if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_' || byte == b'-' {
            escaped.push(char::from(byte));
        } else {
            escaped.push('%');
            escaped.push(hex_digit(byte >> 4));
            escaped.push(hex_digit(byte & 0x0f));
        }
        if escaped.len() > MAX_ESCAPED {
            let digest = Sha256::digest(session.0.as_bytes());
            return format!("h_{}{LOG_EXTENSION}", hex::encode(digest));
        }
    }
    format!("s_{escaped}{LOG_EXTENSION}")
}

/// What a log file name says about its session.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Decoded {
    /// A readable name: the session ID.
    Id(SessionId),
    /// A hashed name: the ID is only in the log's header line.
    Hashed,
}

/// Decodes a log file name; `None` when it is not a session log name.
pub(crate) fn decode_log_file_name(name: &str) -> Option<Decoded> {
    let stem = name.strip_suffix(LOG_EXTENSION)?;
    if let Some(hash) = stem.strip_prefix("h_") {
        return (hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
            .then_some(Decoded::Hashed);
    }
    let escaped = stem.strip_prefix("s_")?;
    let bytes = escaped.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if byte == b'%' {
            let high = hex_value(*bytes.get(i + 1)?)?;
            let low = hex_value(*bytes.get(i + 2)?)?;
            out.push(high << 4 | low);
            i += 3;
        } else if byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_' || byte == b'-'
        {
            out.push(byte);
            i += 1;
        } else {
            return None;
        }
    }
    let id = String::from_utf8(out).ok()?;
    // Only the canonical spelling is ours: `%61` for `a` would be a second name for one session.
    (log_file_name(&SessionId(id.clone())) == name).then_some(Decoded::Id(SessionId(id)))
}

fn hex_digit(nibble: u8) -> char {
    char::from(b"0123456789abcdef"[usize::from(nibble & 0x0f)])
}

fn hex_value(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(s: &str) -> SessionId {
        SessionId(s.to_owned())
    }

    #[test]
    fn names_are_safe_and_reversible() {
        for raw in
            ["", "abc-123_x", "../etc/passwd", "..", "a/b", "Ünïcödé 会话", "A", "a\0b", "%41"]
        {
            let name = log_file_name(&id(raw));
            assert!(name.starts_with("s_"), "{name}");
            assert!(!name.contains('/') && !name.contains(".."), "{name}");
            assert!(!name.bytes().any(|b| b.is_ascii_uppercase()), "{name}");
            assert_eq!(name.matches('.').count(), 1, "{name}");
            assert_eq!(decode_log_file_name(&name), Some(Decoded::Id(id(raw))), "{name}");
        }
    }

    #[test]
    fn case_differences_give_different_lower_case_free_names() {
        let upper = log_file_name(&id("A"));
        let lower = log_file_name(&id("a"));
        assert_ne!(upper.to_lowercase(), lower.to_lowercase());
    }

    #[test]
    fn long_ids_are_hashed() {
        let long = "x".repeat(MAX_ESCAPED + 1);
        let name = log_file_name(&id(&long));
        assert!(name.starts_with("h_") && name.len() < 100, "{name}");
        assert_eq!(decode_log_file_name(&name), Some(Decoded::Hashed));
        assert_eq!(log_file_name(&id(&"x".repeat(MAX_ESCAPED))).len(), MAX_ESCAPED + 6);
    }

    #[test]
    fn foreign_names_are_not_logs() {
        for name in [
            "registry.jsonl",
            "s_a.tmp",
            "s_a.log.tmp",
            "s_%4.log",
            "s_%61.log",
            "s_A.log",
            "s_%C3%A9.log",
            "h_12.log",
        ] {
            assert_eq!(decode_log_file_name(name), None, "{name}");
        }
    }
}

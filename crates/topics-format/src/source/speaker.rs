//! Speaker identity in v2 frames: the canonical percent-encoding of the `speaker-id` marker,
//! identity-header normalization and the speaker label of a record header (see
//! `docs/format.md#record-header-and-speaker`).

use super::id::quote;
use super::unicode::{collapse_whitespace, is_printable};

/// The longest identity header part, in characters, before it is cut and given a `…`.
pub const IDENTITY_HEADER_PART_MAX_CHARS: usize = 64;

/// The canonical `speaker-id` marker value: URL-quote of the UTF-8 bytes with no safe characters
/// (letters, digits and `_.~` stay literal), then every `-` replaced by `%2D`, so `-->` can never
/// appear (`telegram-user-42` → `telegram%2Duser%2D42`, `owner/local` → `owner%2Flocal`).
pub fn encode_speaker_id(raw: &str) -> String {
    quote(raw, "").replace('-', "%2D")
}

/// Decodes a marker value when it is canonical (`decode` then `encode` gives it back), else
/// `None`: malformed escapes (`%ZZ`), raw `-`, lowercase hex and non-UTF-8 bytes all fail.
/// The empty value is canonical and decodes to the empty id (a display-only identity).
pub fn decode_speaker_id(value: &str) -> Option<String> {
    let decoded = String::from_utf8(unquote_to_bytes(value)).ok()?;
    (encode_speaker_id(&decoded) == value).then_some(decoded)
}

/// Whether a marker value is the canonical encoding of some speaker id.
pub fn is_canonical_speaker_id(value: &str) -> bool {
    decode_speaker_id(value).is_some()
}

/// Python's `urllib.parse.unquote_to_bytes`: `%XX` (either case) becomes the byte, a `%` not
/// followed by two hex digits stays literal.
fn unquote_to_bytes(value: &str) -> Vec<u8> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        let byte = bytes[index];
        if byte == b'%' {
            let high = bytes.get(index + 1).and_then(|b| char::from(*b).to_digit(16));
            let low = bytes.get(index + 2).and_then(|b| char::from(*b).to_digit(16));
            if let (Some(high), Some(low)) = (high, low) {
                // Both digits are below 16, so the value fits a byte.
                out.push(u8::try_from(high * 16 + low).unwrap_or(0));
                index += 3;
                continue;
            }
        }
        out.push(byte);
        index += 1;
    }
    out
}

/// Python's `normalize_identity_header_part` with the default limit: whitespace runs collapse to
/// one space (ends trimmed), non-printable characters are dropped, `[`→`(`, `]`→`)`,
/// `:`→`：` (U+FF1A), and a result longer than 64 characters is cut to 64 plus `…`.
pub fn normalize_identity_header_part(value: &str) -> String {
    normalize_identity_header_part_max(value, IDENTITY_HEADER_PART_MAX_CHARS)
}

/// [`normalize_identity_header_part`] with an explicit character limit.
pub fn normalize_identity_header_part_max(value: &str, max_chars: usize) -> String {
    let collapsed = collapse_whitespace(value);
    let mut out = String::with_capacity(collapsed.len());
    let mut truncated = false;
    for (count, c) in collapsed.chars().filter(|c| is_printable(*c)).enumerate() {
        if count == max_chars {
            truncated = true;
            break;
        }
        out.push(match c {
            '[' => '(',
            ']' => ')',
            ':' => '：',
            other => other,
        });
    }
    if truncated {
        out.push('…');
    }
    out
}

/// The speaker label a record header shows (Python's `SourceRecord.speaker_label`):
/// `"<display> (<id>)"` when both normalized parts are non-empty and differ, else the display,
/// else the id, else the role (not normalized here; the archive normalizes the whole label).
pub fn speaker_label(role: &str, display: Option<&str>, speaker_id: Option<&str>) -> String {
    let display = normalize_identity_header_part(display.unwrap_or(""));
    let speaker_id = normalize_identity_header_part(speaker_id.unwrap_or(""));
    if !display.is_empty() && !speaker_id.is_empty() && display != speaker_id {
        return format!("{display} ({speaker_id})");
    }
    if !display.is_empty() {
        return display;
    }
    if !speaker_id.is_empty() {
        return speaker_id;
    }
    role.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_encoding() {
        assert_eq!(encode_speaker_id("telegram-user-42"), "telegram%2Duser%2D42");
        assert_eq!(encode_speaker_id("owner/local"), "owner%2Flocal");
        assert_eq!(encode_speaker_id("a~b_c.d"), "a~b_c.d");
        assert_eq!(encode_speaker_id("x -->"), "x%20%2D%2D%3E");
        assert_eq!(encode_speaker_id(""), "");
        assert_eq!(encode_speaker_id("é"), "%C3%A9");
    }

    #[test]
    fn decoding_requires_canonical_form() {
        assert_eq!(decode_speaker_id("telegram%2Duser%2D42").as_deref(), Some("telegram-user-42"));
        assert_eq!(decode_speaker_id("").as_deref(), Some(""));
        for bad in ["%ZZ", "a--b", "a-b", "owner%2flocal", "%C3", "%", "a%2", "owner/local", "%41"]
        {
            assert_eq!(decode_speaker_id(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn header_part_normalization() {
        assert_eq!(normalize_identity_header_part("B:\n[admin]\u{1b}"), "B： (admin)");
        assert_eq!(normalize_identity_header_part("u: 456]\0"), "u： 456)");
        assert_eq!(normalize_identity_header_part("  a \t b  "), "a b");
        assert_eq!(normalize_identity_header_part("\0 a"), " a");
        let long = "x".repeat(70);
        assert_eq!(normalize_identity_header_part(&long), format!("{}…", "x".repeat(64)));
        assert_eq!(normalize_identity_header_part(&"y".repeat(64)), "y".repeat(64));
        let once = normalize_identity_header_part(&long);
        assert_eq!(normalize_identity_header_part(&once), once);
    }

    #[test]
    fn labels() {
        assert_eq!(
            speaker_label("user", Some("B:\n[admin]\u{1b}"), Some("u: 456]\0")),
            "B： (admin) (u： 456))"
        );
        assert_eq!(
            speaker_label("user", Some("B"), Some("telegram-user-42")),
            "B (telegram-user-42)"
        );
        assert_eq!(speaker_label("user", Some("Ada"), Some("Ada")), "Ada");
        assert_eq!(speaker_label("user", None, Some("u1")), "u1");
        assert_eq!(speaker_label("assistant", None, None), "assistant");
        assert_eq!(speaker_label("assistant", Some(" \n"), Some("")), "assistant");
    }
}

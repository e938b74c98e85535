//! The Python implementation's small semantics, written once, that the shared on-disk format
//! depends on: `str.isspace`, `os.path.normpath` / `os.path.relpath` on relative POSIX paths,
//! and the string escapes of `json.dumps(..., ensure_ascii=False)`. The topic parser, the
//! archive, the derived views and the session markers all use these (see
//! `docs/format.md#compatibility-with-the-python-implementation`).

/// Whether Python's `str.isspace()` holds for `c`: Unicode `White_Space` plus the information
/// separators U+001C..U+001F. This is also what Python's `re` matches with `\s` and what
/// `str.split()` splits on.
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `os.path.normpath` of a relative POSIX path, as components: `.` and empty components
/// dropped, `a/..` collapsed, leading `..` kept (no IO, no current directory).
pub fn normpath_parts(path: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|last| *last != "..") {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// `os.path.normpath` of a relative POSIX path (`.` for the empty result).
pub fn normpath(path: &str) -> String {
    let parts = normpath_parts(path);
    if parts.is_empty() { ".".to_owned() } else { parts.join("/") }
}

/// `os.path.relpath(target, start)` for two normalized relative paths given as components.
pub fn relpath_parts(target: &[&str], start: &[&str]) -> String {
    let common = target.iter().zip(start).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = Vec::with_capacity(start.len() - common + target.len() - common);
    parts.extend(std::iter::repeat_n("..", start.len() - common));
    parts.extend(&target[common..]);
    if parts.is_empty() { ".".to_owned() } else { parts.join("/") }
}

/// `os.path.relpath(target, start)` for two clean relative POSIX paths below the same root
/// (empty and `.` components ignored).
pub fn relpath(target: &str, start: &str) -> String {
    fn clean(path: &str) -> Vec<&str> {
        path.split('/').filter(|part| !part.is_empty() && *part != ".").collect()
    }
    relpath_parts(&clean(target), &clean(start))
}

/// Appends `value` as a JSON string the way Python's `json.dumps(ensure_ascii=False)` does:
/// `"`, `\` and the controls U+0000..U+001F escaped (`\n`, `\r`, `\t`, `\b`, `\f`, else
/// lower-case `\u00xx`); everything else, non-ASCII included, as it is.
pub fn push_json_string(out: &mut String, value: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in value.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\u{8}' => "\\b",
            '\u{c}' => "\\f",
            c if u32::from(c) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&value[start..i]);
        if escaped.is_empty() {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push_str(escaped);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&value[start..]);
    out.push('"');
}

/// Appends `value` as a JSON string the way Python's `json.dumps` does by default
/// (`ensure_ascii=True`): as [`push_json_string`], and every character outside space..`~`
/// written as `\u` escapes in lower-case hex (a character beyond the BMP as its surrogate pair).
pub fn push_json_string_ascii(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isspace_includes_the_information_separators() {
        for c in [' ', '\t', '\n', '\u{b}', '\u{c}', '\r', '\u{1c}', '\u{1f}', '\u{85}', '\u{3000}']
        {
            assert!(is_space(c), "{c:?}");
        }
        assert!(!is_space('a') && !is_space('\u{200b}') && !is_space('\u{0}'));
    }

    #[test]
    fn paths_behave_like_posixpath() {
        assert_eq!(normpath_parts("topics/a/../../sources/x.md"), ["sources", "x.md"]);
        assert_eq!(normpath("topics/../../x"), "../x");
        assert_eq!(normpath("./a//b/."), "a/b");
        assert_eq!(normpath("a/.."), ".");
        assert_eq!(
            relpath_parts(&["topics", "p", "x.md"], &["timeline", "2024", "01"]),
            "../../../topics/p/x.md"
        );
        assert_eq!(relpath("sources/x.md", ""), "sources/x.md");
        assert_eq!(relpath("topics", "./topics/"), ".");
        assert_eq!(relpath("a/b/c.md", "a/d"), "../b/c.md");
    }

    #[test]
    fn json_strings_are_escaped_as_python_does() {
        let lit = |s: &str| {
            let mut out = String::new();
            push_json_string(&mut out, s);
            out
        };
        assert_eq!(lit("\n\r\t\u{8}\u{c}\u{1}\u{1f}"), r#""\n\r\t\b\f\u0001\u001f""#);
        assert_eq!(lit("a \"q\" \\ é 漢"), r#""a \"q\" \\ é 漢""#);
        // What `python3 -c 'import json; print(json.dumps(...))'` prints for the same text.
        let mut ascii = String::new();
        push_json_string_ascii(&mut ascii, "a\"\\\n\u{7f} é 😀 \u{1}");
        assert_eq!(ascii, r#""a\"\\\n\u007f \u00e9 \ud83d\ude00 \u0001""#);
    }
}

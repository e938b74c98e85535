//! JSON text exactly as Python's `json.dumps` writes it: `", "` and `": "` separators on one
//! line, or `indent=2` layout; strings escaped as with `ensure_ascii=False` (the Python views
//! are written that way: non-ASCII text stays UTF-8, only `"`, `\` and control characters are
//! escaped, in lowercase `\u00xx` form).

use std::fmt::Write as _;

/// Appends `s` as a JSON string literal.
pub(crate) fn string(out: &mut String, s: &str) {
    out.push('"');
    let mut start = 0;
    for (i, c) in s.char_indices() {
        let escaped = match c {
            '"' => "\\\"",
            '\\' => "\\\\",
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            '\x08' => "\\b",
            '\x0c' => "\\f",
            c if (c as u32) < 0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escaped.is_empty() {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push_str(escaped);
        }
        start = i + c.len_utf8();
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// Appends a list of strings on one line: `["a", "b"]`.
pub(crate) fn string_list<'a>(out: &mut String, items: impl IntoIterator<Item = &'a str>) {
    out.push('[');
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        string(out, item);
    }
    out.push(']');
}

/// Appends any JSON value in Python's `indent=2` layout, starting at nesting `level`.
pub(crate) fn indented(out: &mut String, value: &serde_json::Value, level: usize) {
    use serde_json::Value;
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            let _ = write!(out, "{n}");
        }
        Value::String(s) => string(out, s),
        Value::Array(items) if items.is_empty() => out.push_str("[]"),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, level + 1);
                indented(out, item, level + 1);
            }
            newline(out, level);
            out.push(']');
        }
        Value::Object(map) if map.is_empty() => out.push_str("{}"),
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                newline(out, level + 1);
                string(out, key);
                out.push_str(": ");
                indented(out, item, level + 1);
            }
            newline(out, level);
            out.push('}');
        }
    }
}

/// A line break and `2 * level` spaces.
pub(crate) fn newline(out: &mut String, level: usize) {
    out.push('\n');
    for _ in 0..level {
        out.push_str("  ");
    }
}

#[cfg(test)]
mod tests {
    use super::{indented, string};

    fn lit(s: &str) -> String {
        let mut out = String::new();
        string(&mut out, s);
        out
    }

    #[test]
    fn escapes_like_python_without_ensure_ascii() {
        assert_eq!(lit("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(lit("\n\r\t\x08\x0c\x01\x1f"), r#""\n\r\t\b\f\u0001\u001f""#);
        assert_eq!(lit("写入 é \u{2028} \x7f"), "\"写入 é \u{2028} \x7f\"");
    }

    #[test]
    fn indent_layout_matches_python() {
        let value = serde_json::json!({"a": {}, "b": [1, null], "c": {"x": "y"}});
        let mut out = String::new();
        indented(&mut out, &value, 0);
        assert_eq!(
            out,
            "{\n  \"a\": {},\n  \"b\": [\n    1,\n    null\n  ],\n  \"c\": {\n    \"x\": \"y\"\n  }\n}"
        );
    }
}

//! JSON text exactly as Python's `json.dumps` writes it: `", "` and `": "` separators on one
//! line, or `indent=2` layout; strings escaped as with `ensure_ascii=False` (the Python views
//! are written that way: non-ASCII text stays UTF-8, only `"`, `\` and control characters are
//! escaped, in lowercase `\u00xx` form).

/// Appends `s` as a JSON string literal.
pub(crate) fn string(out: &mut String, s: &str) {
    scriptorium_topics_format::python::push_json_string(out, s);
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

#[cfg(test)]
mod tests {
    use super::string;

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
}

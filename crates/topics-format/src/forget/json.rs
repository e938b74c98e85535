//! A JSON value that keeps its objects' key order, read with serde and written the way Python's
//! `json.dumps(…, ensure_ascii=False)` writes one line (`", "` and `": "` separators), which is
//! how `recent_events.jsonl` and `relations.json` are written (see
//! `docs/format.md#derived-views`); and [`map_strings`], which rewrites the strings of any JSON
//! text in place, leaving every other byte as it was.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::python::push_json_string;

/// A JSON value; an object is its entries in file order.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Parses one JSON text; `None` when it is not JSON.
    pub(crate) fn parse(text: &str) -> Option<Json> {
        serde_json::from_str(text).ok()
    }

    /// The value of `key`, when this is an object that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value of `key`, mutably.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        match self {
            Json::Object(entries) => entries.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, when this is one.
    pub(crate) fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// Applies `edit` to every string, object keys included; returns whether one changed.
    pub(crate) fn edit_strings(&mut self, edit: &mut dyn FnMut(&mut String) -> bool) -> bool {
        match self {
            Json::String(s) => edit(s),
            Json::Array(items) => {
                let mut changed = false;
                for item in items {
                    changed |= item.edit_strings(edit);
                }
                changed
            }
            Json::Object(entries) => {
                let mut changed = false;
                for (key, value) in entries {
                    changed |= edit(key);
                    changed |= value.edit_strings(edit);
                }
                changed
            }
            Json::Null | Json::Bool(_) | Json::Number(_) => false,
        }
    }

    /// Writes the value as Python's `json.dumps(value, ensure_ascii=False)` does.
    pub(crate) fn write(&self, out: &mut String) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(true) => out.push_str("true"),
            Json::Bool(false) => out.push_str("false"),
            Json::Number(n) => out.push_str(&n.to_string()),
            Json::String(s) => push_json_string(out, s),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    item.write(out);
                }
                out.push(']');
            }
            Json::Object(entries) => {
                out.push('{');
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    push_json_string(out, key);
                    out.push_str(": ");
                    value.write(out);
                }
                out.push('}');
            }
        }
    }
}

/// Whether `text` is one JSON text (surrounding whitespace allowed).
pub(crate) fn is_json(text: &str) -> bool {
    serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok()
}

/// `text`, which must be one JSON text ([`is_json`]), with every string literal (object keys
/// included) whose decoded value `map` changes written again (as [`push_json_string`] writes
/// one); every other byte (whitespace, numbers, punctuation, the escapes of unchanged strings)
/// stays. `None` when no string changes. A literal that does not decode to a `String` (a lone
/// surrogate escape) is left as it is.
pub(crate) fn map_strings(
    text: &str,
    map: &mut dyn FnMut(&str) -> Option<String>,
) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while let Some(at) = bytes.get(i..).and_then(|rest| rest.iter().position(|&b| b == b'"')) {
        // Outside strings, valid JSON holds `"` only where a string literal starts.
        let start = i + at;
        let mut end = start + 1;
        while let Some(&b) = bytes.get(end) {
            match b {
                b'\\' => end += 2,
                b'"' => break,
                _ => end += 1,
            }
        }
        let literal = text.get(start..=end)?;
        i = end + 1;
        let Ok(value) = serde_json::from_str::<String>(literal) else { continue };
        if let Some(new) = map(&value).filter(|new| *new != value) {
            out.push_str(&text[copied..start]);
            push_json_string(&mut out, &new);
            copied = end + 1;
        }
    }
    if copied == 0 {
        return None;
    }
    out.push_str(&text[copied..]);
    Some(out)
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, value)) = map.next_entry::<String, Json>()? {
            entries.push((key, value));
        }
        Ok(Json::Object(entries))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_lines_are_written_back_byte_for_byte() {
        for line in [
            r#"{"memory_id": "6dfc15f1", "when": null, "whens": [], "content": "a \"q\" é\n", "refs": ["p/t/m"], "created_order": 1}"#,
            r#"{"backlinks": {}, "outbound": {"a": ["b", "c"], "b": []}}"#,
            r#"[true, false, -3, 1.5]"#,
        ] {
            let value = Json::parse(line).expect("JSON");
            let mut out = String::new();
            value.write(&mut out);
            assert_eq!(out, line);
        }
        assert_eq!(Json::parse("{"), None);
    }

    #[test]
    fn strings_are_mapped_in_place() {
        let mut upper = |s: &str| s.contains('a').then(|| s.replace('a', "A\"\n"));
        let text = "{ \"a\" : [1.50, \"b\\u00e9\", \"x\\\"a\\\\\"],\n  \"n\": null }\n";
        assert_eq!(
            map_strings(text, &mut upper).as_deref(),
            Some(
                "{ \"A\\\"\\n\" : [1.50, \"b\\u00e9\", \"x\\\"A\\\"\\n\\\\\"],\n  \"n\": null }\n"
            )
        );
        assert_eq!(map_strings("{\"b\": 1}", &mut upper), None);
        assert!(is_json(text) && !is_json("{\"a\": "));
    }
}

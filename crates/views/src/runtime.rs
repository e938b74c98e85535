//! `.scriptorium/runtime.json`: the creation order and the organizer counters (reference §6.6,
//! §7.5), read leniently and written in the Python layout.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::pyjson;

/// The runtime state file, relative to the memory root.
pub const RUNTIME_JSON: &str = ".scriptorium/runtime.json";

/// The known keys of `runtime.json`. Unknown keys are dropped on save, as in the Python
/// implementation (old `cursors` vanish).
#[derive(Clone, Debug, PartialEq)]
pub struct RuntimeState {
    /// Memory ID → creation number.
    pub creation_order: BTreeMap<String, u64>,
    /// Organizer counter: write commits since the last global organize.
    pub write_commits_since_global: Value,
    /// Organizer counter: local batches.
    pub local_batches: Value,
    /// Organizer counter: local tokens.
    pub local_tokens: Value,
    /// When the last global organize ran (`null` when never).
    pub last_global_at: Value,
}

impl Default for RuntimeState {
    fn default() -> Self {
        RuntimeState {
            creation_order: BTreeMap::new(),
            write_commits_since_global: Value::from(0),
            local_batches: Value::from(0),
            local_tokens: Value::from(0),
            last_global_at: Value::Null,
        }
    }
}

impl RuntimeState {
    /// Parses `runtime.json`; anything unreadable, not an object or not JSON gives the clean
    /// default (reference §6.6). Creation-order entries that are not non-negative integers are
    /// skipped; a missing counter takes its default.
    pub fn parse(text: &str) -> RuntimeState {
        let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
            return RuntimeState::default();
        };
        let mut state = RuntimeState::default();
        if let Some(Value::Object(order)) = map.get("creation_order") {
            state.creation_order =
                order.iter().filter_map(|(k, v)| Some((k.clone(), v.as_u64()?))).collect();
        }
        for (key, slot) in [
            ("write_commits_since_global", &mut state.write_commits_since_global),
            ("local_batches", &mut state.local_batches),
            ("local_tokens", &mut state.local_tokens),
            ("last_global_at", &mut state.last_global_at),
        ] {
            if let Some(value) = map.get(key) {
                *slot = value.clone();
            }
        }
        state
    }

    /// The file text: Python's `json.dumps(…, indent=2)` plus `\n`, keys in the Python order,
    /// the creation order listed by number (the insertion order the Python code produces).
    pub fn render(&self) -> String {
        let mut out = String::from("{\n  \"creation_order\": ");
        if self.creation_order.is_empty() {
            out.push_str("{}");
        } else {
            let mut entries: Vec<(&String, &u64)> = self.creation_order.iter().collect();
            entries.sort_by(|a, b| a.1.cmp(b.1).then_with(|| a.0.cmp(b.0)));
            out.push('{');
            for (i, (id, number)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                pyjson::newline(&mut out, 2);
                pyjson::string(&mut out, id);
                out.push_str(": ");
                out.push_str(&number.to_string());
            }
            pyjson::newline(&mut out, 1);
            out.push('}');
        }
        for (key, value) in [
            ("write_commits_since_global", &self.write_commits_since_global),
            ("local_batches", &self.local_batches),
            ("local_tokens", &self.local_tokens),
            ("last_global_at", &self.last_global_at),
        ] {
            out.push_str(",\n  ");
            pyjson::string(&mut out, key);
            out.push_str(": ");
            pyjson::indented(&mut out, value, 1);
        }
        out.push_str("\n}\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::RuntimeState;

    #[test]
    fn corrupt_state_is_the_default() {
        for text in ["", "[]", "{", "null", "\"x\""] {
            assert_eq!(RuntimeState::parse(text), RuntimeState::default());
        }
    }

    #[test]
    fn round_trips_the_python_layout() {
        let text = "{\n  \"creation_order\": {\n    \"b\": 0,\n    \"a\": 1\n  },\n  \
                    \"write_commits_since_global\": 3,\n  \"local_batches\": 1,\n  \
                    \"local_tokens\": 42,\n  \"last_global_at\": \"2024-01-01T00:00:00\"\n}\n";
        assert_eq!(RuntimeState::parse(text).render(), text);
        assert_eq!(
            RuntimeState::default().render(),
            "{\n  \"creation_order\": {},\n  \"write_commits_since_global\": 0,\n  \
             \"local_batches\": 0,\n  \"local_tokens\": 0,\n  \"last_global_at\": null\n}\n"
        );
    }
}

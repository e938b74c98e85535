//! Nodes to rows and back: the column encodings of `migrations/0001_sessions.sql`.

use std::collections::BTreeMap;

use postgres::Row;
use scriptorium_session_dag::{Error, Node, NodeId, Speaker, Timestamp};

fn corrupt(what: &str, detail: impl std::fmt::Display) -> Error {
    Error::Database {
        message: format!("unreadable {what} in the database: {detail}"),
        retryable: false,
    }
}

/// A string stored as BYTEA.
pub(crate) fn text(bytes: Vec<u8>) -> Result<String, Error> {
    String::from_utf8(bytes).map_err(|e| corrupt("text", e))
}

/// An optional string stored as BYTEA.
pub(crate) fn opt_text(bytes: Option<Vec<u8>>) -> Result<Option<String>, Error> {
    bytes.map(text).transpose()
}

fn parse_name<T: serde::de::DeserializeOwned>(what: &str, name: &str) -> Result<T, Error> {
    serde_json::from_value(serde_json::Value::String(name.to_owned())).map_err(|e| corrupt(what, e))
}

/// A metadata map as stored (JSON text).
pub(crate) fn metadata_text(metadata: &BTreeMap<String, String>) -> String {
    serde_json::to_string(metadata).expect("a map of strings serializes")
}

/// A stored metadata map.
pub(crate) fn metadata_of(stored: &str) -> Result<BTreeMap<String, String>, Error> {
    serde_json::from_str(stored).map_err(|e| corrupt("metadata", e))
}

/// The speaker as stored (JSON text).
pub(crate) fn speaker_text(speaker: Option<&Speaker>) -> Option<String> {
    speaker.map(|s| serde_json::to_string(s).expect("a speaker is two strings"))
}

/// A node from a row selected with the store's `node_columns!()`.
pub(crate) fn node_from_row(row: &Row) -> Result<Node, Error> {
    let role: String = row.get(2);
    let kind: String = row.get(3);
    let speaker: Option<String> = row.get(4);
    let metadata: String = row.get(7);
    Ok(Node {
        id: NodeId(text(row.get(0))?),
        parent: opt_text(row.get(1))?.map(NodeId),
        role: parse_name("role", &role)?,
        kind: parse_name("kind", &kind)?,
        speaker: speaker
            .map(|s| serde_json::from_str(&s).map_err(|e| corrupt("speaker", e)))
            .transpose()?,
        content: text(row.get(5))?,
        created_at: Timestamp(row.get(6)),
        metadata: metadata_of(&metadata)?,
        rewound: row.get(8),
    })
}

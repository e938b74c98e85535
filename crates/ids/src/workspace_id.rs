//! The workspace identity, `w-` followed by 8 lower-case hex digits (`w-4f21c8e0`), kept in
//! `.scriptorium/workspace-id` and in every session marker a write leaves (see
//! `docs/format.md#workspace-id`). One type for the engine, the markers and the faces.

use std::fmt;

/// A workspace ID, `w-` + 8 lower-case hex digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkspaceId(String);

/// A text that is not a workspace ID.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid workspace id {0:?}: expected w- and 8 lower-case hex digits")]
pub struct InvalidWorkspaceId(pub String);

impl WorkspaceId {
    /// Parses a workspace ID (surrounding whitespace, such as a file's final newline, is
    /// ignored).
    pub fn parse(text: &str) -> Result<WorkspaceId, InvalidWorkspaceId> {
        let trimmed = text.trim();
        let valid = trimmed.strip_prefix("w-").is_some_and(|hex| {
            hex.len() == 8 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if valid {
            Ok(WorkspaceId(trimmed.to_owned()))
        } else {
            Err(InvalidWorkspaceId(text.to_owned()))
        }
    }

    /// The ID whose 8 hex digits spell `bits`.
    pub fn from_bits(bits: u32) -> WorkspaceId {
        WorkspaceId(format!("w-{bits:08x}"))
    }

    /// The ID as a string slice.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for WorkspaceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_exactly_w_and_eight_lower_hex_digits() {
        assert_eq!(
            WorkspaceId::parse("w-4f21c8e0\n").map(|id| id.to_string()),
            Ok("w-4f21c8e0".into())
        );
        for bad in ["", "w-", "w-4F21C8E0", "w-4f21c8e", "w-4f21c8e00", "x-4f21c8e0", "w-4f21c8eg"]
        {
            assert_eq!(WorkspaceId::parse(bad), Err(InvalidWorkspaceId(bad.to_owned())), "{bad}");
        }
        assert_eq!(WorkspaceId::from_bits(0xdead_beef).as_str(), "w-deadbeef");
        assert_eq!(WorkspaceId::from_bits(1).as_str(), "w-00000001");
    }
}

//! The owner's `[privacy]` configuration (in `scriptorium.toml`).

use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, Visitor};

/// The owner's configuration: `[privacy]` of `scriptorium.toml`.
///
/// ```toml
/// [privacy]
/// patterns = ['\bACME-[0-9]{6}\b', { id = "employee-id", regex = 'EMP-(\d{5})' }]
/// allow = ['^AKIAIOSFODNN7EXAMPLE$']
/// ```
///
/// Every regex is in the `regex` crate's syntax (Unicode-aware `\w`, `\d`, `\s`, `\b`), and is
/// checked by [`Redactor::new`](crate::Redactor::new).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrivacyConfig {
    /// Extra patterns: each a regex string, or a table `{ id = "…", regex = "…" }`. A bare
    /// string's rule id is `owner-<n>`, `n` its 1-based position in the list. The whole match
    /// is redacted, or the first capture group if the regex has one and it matched. They run on
    /// every text, after `<private>` spans are removed, alongside the built-in rules.
    #[serde(default)]
    pub patterns: Vec<OwnerPattern>,
    /// Allowlist: regexes; a candidate secret (the text any rule, built-in or the owner's, would
    /// redact) that one of them matches is kept. Unanchored, as gitleaks' allowlists are: write
    /// `^…$` to match a whole value. Does not apply to `<private>` spans.
    #[serde(default)]
    pub allow: Vec<String>,
}

/// One of the owner's patterns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OwnerPattern {
    /// A bare regex: its rule id is `owner-<n>`, `n` its 1-based position in the list.
    Regex(String),
    /// A regex with its own rule id (`[A-Za-z0-9][A-Za-z0-9._-]*`, at most 64 characters).
    Named {
        /// The rule id written into the marker and the counts.
        id: String,
        /// The regex.
        regex: String,
    },
}

impl OwnerPattern {
    /// The regex.
    pub fn regex(&self) -> &str {
        match self {
            OwnerPattern::Regex(regex) | OwnerPattern::Named { regex, .. } => regex,
        }
    }

    /// The rule id: its own, or `owner-<position + 1>` for a bare regex.
    pub fn id(&self, position: usize) -> String {
        match self {
            OwnerPattern::Regex(_) => format!("owner-{}", position + 1),
            OwnerPattern::Named { id, .. } => id.clone(),
        }
    }
}

impl<'de> Deserialize<'de> for OwnerPattern {
    fn deserialize<D: de::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct PatternVisitor;

        impl<'de> Visitor<'de> for PatternVisitor {
            type Value = OwnerPattern;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"a regex string, or a table { id = "…", regex = "…" }"#)
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<OwnerPattern, E> {
                Ok(OwnerPattern::Regex(v.to_owned()))
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OwnerPattern, A::Error> {
                let mut id: Option<String> = None;
                let mut regex: Option<String> = None;
                while let Some(key) = map.next_key::<String>()? {
                    match key.as_str() {
                        "id" if id.is_none() => id = Some(map.next_value()?),
                        "regex" if regex.is_none() => regex = Some(map.next_value()?),
                        "id" | "regex" => return Err(de::Error::duplicate_field("id or regex")),
                        other => return Err(de::Error::unknown_field(other, &["id", "regex"])),
                    }
                }
                let id = id.ok_or_else(|| de::Error::missing_field("id"))?;
                let regex = regex.ok_or_else(|| de::Error::missing_field("regex"))?;
                Ok(OwnerPattern::Named { id, regex })
            }
        }

        deserializer.deserialize_any(PatternVisitor)
    }
}

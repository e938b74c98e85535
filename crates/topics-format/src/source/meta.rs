//! The `<!-- source-meta:TOKEN -->` line: trust metadata of a v2 frame as base64url (no
//! padding) of canonical JSON (see `docs/format.md#source-metadata-token` and
//! `docs/format.md#trust`).
//!
//! Canonical JSON is Python's `json.dumps(value, ensure_ascii=False, sort_keys=True,
//! separators=(",", ":"))`: sorted keys, no spaces, non-ASCII literal, and only `"`, `\`, and the
//! controls U+0000..U+001F escaped (`\n`, `\r`, `\t`, `\b`, `\f`, else `\u00xx`). A token is
//! accepted only when re-encoding what it decodes to gives the token back, so every accepted
//! token has exactly one spelling.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::Value;

/// Whether a source may be cited by new prose.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TrustState {
    /// Owner, paired or legacy evidence.
    Trusted,
    /// Unpaired group speech awaiting owner promotion.
    Pending,
}

impl TrustState {
    /// `trusted` or `pending`.
    pub fn as_str(self) -> &'static str {
        match self {
            TrustState::Trusted => "trusted",
            TrustState::Pending => "pending",
        }
    }
}

/// The authority tier of the speaker who produced a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AuthorityTier {
    /// The local owner.
    Owner,
    /// A paired account.
    Paired,
}

impl AuthorityTier {
    /// `owner` or `paired`.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthorityTier::Owner => "owner",
            AuthorityTier::Paired => "paired",
        }
    }
}

/// The trust metadata of one frame, in its normalized (version 1) shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceMeta {
    /// Trusted or pending.
    pub trust_state: TrustState,
    /// `owner`, `assistant`, `human`, … (`unknown` when not known).
    pub speaker_kind: String,
    /// The principal (`unknown` when not known).
    pub principal_id: String,
    /// Owner, paired, or none.
    pub authority_tier: Option<AuthorityTier>,
}

impl SourceMeta {
    /// The canonical JSON of the normalized shape (`authority_tier`, `principal_id`,
    /// `speaker_kind`, `trust_state`, `version`). Empty `speaker_kind`/`principal_id` are
    /// written as `unknown`, as Python's normalizer does.
    pub fn canonical_json(&self) -> String {
        let mut out = String::with_capacity(160);
        out.push_str("{\"authority_tier\":");
        match self.authority_tier {
            Some(tier) => push_json_string(&mut out, tier.as_str()),
            None => out.push_str("null"),
        }
        out.push_str(",\"principal_id\":");
        push_json_string(&mut out, or_unknown(&self.principal_id));
        out.push_str(",\"speaker_kind\":");
        push_json_string(&mut out, or_unknown(&self.speaker_kind));
        out.push_str(",\"trust_state\":");
        push_json_string(&mut out, self.trust_state.as_str());
        out.push_str(",\"version\":1}");
        out
    }

    /// The token: base64url without padding of [`SourceMeta::canonical_json`].
    pub fn token(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.canonical_json())
    }

    /// The whole metadata line, `<!-- source-meta:TOKEN -->`.
    pub fn line(&self) -> String {
        format!("<!-- source-meta:{} -->", self.token())
    }

    /// Decodes a token (the text between `source-meta:` and ` -->`), accepting the normalized
    /// shape and the legacy pre-tier shape; `None` when the token is not canonical.
    pub fn decode(token: &str) -> Option<DecodedMeta> {
        if token.is_empty()
            || !token.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        {
            return None;
        }
        let raw = URL_SAFE_NO_PAD.decode(token).ok()?;
        let value: Value = serde_json::from_slice(&raw).ok()?;
        let object = value.as_object()?;
        if let Some(meta) = normalize(object)
            && meta.token() == token
        {
            return Some(DecodedMeta { meta, legacy_shape: false });
        }
        let meta = normalize_legacy(object)?;
        let canonical = legacy_canonical_json(object)?;
        (URL_SAFE_NO_PAD.encode(canonical) == token)
            .then_some(DecodedMeta { meta, legacy_shape: true })
    }
}

/// A decoded metadata token.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DecodedMeta {
    /// The normalized metadata.
    pub meta: SourceMeta,
    /// Whether the token used the legacy pre-tier shape (`origin_scope`), which is read but never
    /// written.
    pub legacy_shape: bool,
}

fn or_unknown(value: &str) -> &str {
    if value.is_empty() { "unknown" } else { value }
}

/// Python's `normalize_source_metadata`, restricted to payloads whose re-encoding can equal the
/// token: `speaker_kind` and `principal_id` must be strings (any other JSON value re-encodes
/// differently, so the token would be refused anyway).
fn normalize(object: &serde_json::Map<String, Value>) -> Option<SourceMeta> {
    let authority_tier = match object.get("authority_tier") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s == "owner" => Some(AuthorityTier::Owner),
        Some(Value::String(s)) if s == "paired" => Some(AuthorityTier::Paired),
        Some(_) => return None,
    };
    let trust_state = match object.get("trust_state") {
        Some(Value::String(s)) if s == "trusted" => TrustState::Trusted,
        Some(Value::String(s)) if s == "pending" => TrustState::Pending,
        _ => return None,
    };
    let speaker_kind = string_or_unknown(object.get("speaker_kind"))?;
    let principal_id = string_or_unknown(object.get("principal_id"))?;
    Some(SourceMeta { trust_state, speaker_kind, principal_id, authority_tier })
}

fn string_or_unknown(value: Option<&Value>) -> Option<String> {
    match value {
        None | Some(Value::Null) => Some("unknown".to_owned()),
        Some(Value::String(s)) => Some(or_unknown(s).to_owned()),
        Some(_) => None,
    }
}

/// Python's `_normalize_legacy_source_metadata`: exactly the keys `version` (= 1),
/// `trust_state`, `speaker_kind`, `principal_id` and `origin_scope` = `{origin, capabilities}`
/// with `origin` ∈ {`legacy-unknown`, `local-owner`} and `capabilities` a sorted list of unique
/// non-empty strings; `local-owner` reads as tier `owner`.
fn normalize_legacy(object: &serde_json::Map<String, Value>) -> Option<SourceMeta> {
    const KEYS: [&str; 5] =
        ["origin_scope", "principal_id", "speaker_kind", "trust_state", "version"];
    if object.len() != KEYS.len() || !KEYS.iter().all(|key| object.contains_key(*key)) {
        return None;
    }
    if object.get("version")?.as_u64()? != 1 {
        return None;
    }
    let scope = object.get("origin_scope")?.as_object()?;
    if scope.len() != 2 {
        return None;
    }
    let origin = scope.get("origin")?.as_str()?;
    let capabilities = scope.get("capabilities")?.as_array()?;
    let mut previous: Option<&str> = None;
    for capability in capabilities {
        let capability = capability.as_str().filter(|c| !c.is_empty())?;
        if previous.is_some_and(|p| p >= capability) {
            return None;
        }
        previous = Some(capability);
    }
    let authority_tier = match origin {
        "local-owner" => Some(AuthorityTier::Owner),
        "legacy-unknown" => None,
        _ => return None,
    };
    let mut legacy = object.clone();
    legacy.insert(
        "authority_tier".to_owned(),
        authority_tier.map_or(Value::Null, |t| Value::String(t.as_str().to_owned())),
    );
    normalize(&legacy)
}

/// The canonical JSON of a legacy-shape payload (the payload itself, re-encoded), or `None` when
/// a field is not of the one type whose encoding this crate reproduces exactly.
fn legacy_canonical_json(object: &serde_json::Map<String, Value>) -> Option<String> {
    let scope = object.get("origin_scope")?.as_object()?;
    let mut out = String::with_capacity(200);
    out.push_str("{\"origin_scope\":{\"capabilities\":[");
    for (index, capability) in scope.get("capabilities")?.as_array()?.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        push_json_string(&mut out, capability.as_str()?);
    }
    out.push_str("],\"origin\":");
    push_json_string(&mut out, scope.get("origin")?.as_str()?);
    out.push_str("},\"principal_id\":");
    push_json_string(&mut out, object.get("principal_id")?.as_str()?);
    out.push_str(",\"speaker_kind\":");
    push_json_string(&mut out, object.get("speaker_kind")?.as_str()?);
    out.push_str(",\"trust_state\":");
    push_json_string(&mut out, object.get("trust_state")?.as_str()?);
    out.push_str(",\"version\":1}");
    Some(out)
}

use crate::python::push_json_string;

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER_TOKEN: &str = "eyJhdXRob3JpdHlfdGllciI6Im93bmVyIiwicHJpbmNpcGFsX2lkIjoib3duZXIvaW5zdGFsbC9jYzliNzIzYjc1YTM0ZTQ0Iiwic3BlYWtlcl9raW5kIjoib3duZXIiLCJ0cnVzdF9zdGF0ZSI6InRydXN0ZWQiLCJ2ZXJzaW9uIjoxfQ";

    #[test]
    fn reference_token_round_trips() {
        let decoded = SourceMeta::decode(OWNER_TOKEN).expect("reference token");
        assert!(!decoded.legacy_shape);
        assert_eq!(
            decoded.meta,
            SourceMeta {
                trust_state: TrustState::Trusted,
                speaker_kind: "owner".into(),
                principal_id: "owner/install/cc9b723b75a34e44".into(),
                authority_tier: Some(AuthorityTier::Owner),
            }
        );
        assert_eq!(decoded.meta.token(), OWNER_TOKEN);
    }

    #[test]
    fn pending_example_decodes() {
        let meta = SourceMeta {
            trust_state: TrustState::Pending,
            speaker_kind: "human".into(),
            principal_id: "unknown".into(),
            authority_tier: None,
        };
        assert_eq!(
            meta.canonical_json(),
            r#"{"authority_tier":null,"principal_id":"unknown","speaker_kind":"human","trust_state":"pending","version":1}"#
        );
        assert_eq!(SourceMeta::decode(&meta.token()).map(|d| d.meta), Some(meta));
    }

    #[test]
    fn non_ascii_and_escapes_are_canonical() {
        let meta = SourceMeta {
            trust_state: TrustState::Trusted,
            speaker_kind: "\"quoted\"\n\u{1}".into(),
            principal_id: "主人/é".into(),
            authority_tier: Some(AuthorityTier::Paired),
        };
        assert!(meta.canonical_json().contains("主人/é"));
        assert!(meta.canonical_json().contains(r#""\"quoted\"\n\u0001""#));
        assert_eq!(SourceMeta::decode(&meta.token()).map(|d| d.meta), Some(meta));
    }

    #[test]
    fn non_canonical_tokens_are_refused() {
        let spaced = URL_SAFE_NO_PAD.encode(
            r#"{"authority_tier": null,"principal_id":"p","speaker_kind":"k","trust_state":"trusted","version":1}"#,
        );
        let unsorted = URL_SAFE_NO_PAD.encode(
            r#"{"version":1,"authority_tier":null,"principal_id":"p","speaker_kind":"k","trust_state":"trusted"}"#,
        );
        let bad_state = URL_SAFE_NO_PAD.encode(
            r#"{"authority_tier":null,"principal_id":"p","speaker_kind":"k","trust_state":"maybe","version":1}"#,
        );
        let empty_kind = URL_SAFE_NO_PAD.encode(
            r#"{"authority_tier":null,"principal_id":"p","speaker_kind":"","trust_state":"trusted","version":1}"#,
        );
        let escaped = URL_SAFE_NO_PAD.encode(
            r#"{"authority_tier":null,"principal_id":"\u00e9","speaker_kind":"k","trust_state":"trusted","version":1}"#,
        );
        for token in [spaced, unsorted, bad_state, empty_kind, escaped] {
            assert_eq!(SourceMeta::decode(&token), None, "{token}");
        }
        let padded = format!("{OWNER_TOKEN}=");
        for token in ["", "!!", "e", "eyJ", padded.as_str(), "bnVsbA"] {
            assert_eq!(SourceMeta::decode(token), None, "{token}");
        }
    }

    #[test]
    fn legacy_shape_is_read() {
        let json = r#"{"origin_scope":{"capabilities":["memory.read","memory.write"],"origin":"local-owner"},"principal_id":"owner/x","speaker_kind":"owner","trust_state":"trusted","version":1}"#;
        let decoded = SourceMeta::decode(&URL_SAFE_NO_PAD.encode(json)).expect("legacy");
        assert!(decoded.legacy_shape);
        assert_eq!(decoded.meta.authority_tier, Some(AuthorityTier::Owner));
        let unknown = json.replace("local-owner", "legacy-unknown");
        let decoded = SourceMeta::decode(&URL_SAFE_NO_PAD.encode(unknown)).expect("legacy");
        assert_eq!(decoded.meta.authority_tier, None);
        for bad in [
            json.replace("local-owner", "remote"),
            json.replace(r#"["memory.read","memory.write"]"#, r#"["memory.write","memory.read"]"#),
            json.replace(r#"["memory.read","memory.write"]"#, r#"["a","a"]"#),
            json.replace(r#"["memory.read","memory.write"]"#, r#"[""]"#),
            json.replace(r#""version":1"#, r#""version":2"#),
        ] {
            assert_eq!(SourceMeta::decode(&URL_SAFE_NO_PAD.encode(&bad)), None, "{bad}");
        }
    }
}

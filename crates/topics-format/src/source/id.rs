//! Source IDs (`<provider>/<thread>/<message>`), their archive locations and anchors, and the ID
//! formulas of every producer (see `docs/format.md#source-ids` and `docs/format.md#id-formulas`).

use std::fmt;

use sha2::{Digest, Sha256};

use super::unicode::is_printable;

/// The line that opens every v2 archive file.
pub const V2_MARKER: &str = "<!-- openprogram-source-archive:v2 -->";

/// The provider of sources created through the change API by a caller that names no surface:
/// the Python implementation's (a historical constant; see
/// `docs/format.md#change-api-source-ids`). Our own surfaces archive under
/// [`Surface::provider`].
pub const API_SOURCE_PROVIDER: &str = "claude-code";

/// The surface through which a record was added (see `docs/format.md#provenance`): the CLI,
/// the MCP server, the web UI and its REST API, an agent's hook, the session writer, or an
/// import of transcripts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Surface {
    /// `scriptorium update`, `scriptorium note`.
    Cli,
    /// The MCP tools `memory_update`, `memory_note`.
    Mcp,
    /// The web UI and its REST API.
    Web,
    /// An agent's command hook.
    Hook,
    /// The session writer.
    Writer,
    /// `scriptorium import`.
    Import,
}

impl Surface {
    /// Every surface.
    pub const ALL: [Surface; 6] =
        [Surface::Cli, Surface::Mcp, Surface::Web, Surface::Hook, Surface::Writer, Surface::Import];

    /// `cli`, `mcp`, `web`, `hook`, `writer` or `import`.
    pub fn as_str(self) -> &'static str {
        match self {
            Surface::Cli => "cli",
            Surface::Mcp => "mcp",
            Surface::Web => "web",
            Surface::Hook => "hook",
            Surface::Writer => "writer",
            Surface::Import => "import",
        }
    }

    /// The provider of the change-API sources this surface archives: its name (`sources/mcp/_v2/…`
    /// for a source added through MCP).
    pub fn provider(self) -> &'static str {
        self.as_str()
    }

    /// The surface whose change-API provider `provider` is, if any.
    pub fn of_provider(provider: &str) -> Option<Surface> {
        Surface::ALL.into_iter().find(|surface| surface.provider() == provider)
    }
}

impl fmt::Display for Surface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The provider and thread of the source minted when a legacy root `core.md` is migrated.
pub const MIGRATION_PROVIDER: &str = "openprogram-migration";

/// The thread of the legacy-core migration source.
pub const MIGRATION_THREAD: &str = "legacy-core";

/// The separator of the hashed identity seeds (U+001F, INFORMATION SEPARATOR ONE).
pub const SEED_SEPARATOR: char = '\u{1f}';

/// A provider source reference `<provider>/<thread>/<message>`: split on the first two `/` (the
/// message may contain more), all three parts non-empty, the provider neither `.` nor `..`.
///
/// Holding a `SourceId` means the reference has a location; it does not mean it may be written
/// into a v2 header (see [`SourceId::is_v2_emittable`]).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SourceId {
    text: String,
    provider_end: usize,
    thread_end: usize,
}

/// Where a source lives: a workspace-relative file and the anchor inside it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Location {
    /// Workspace-relative path, e.g. `sources/openprogram/_v2/sess-7f2a.md`.
    pub path: String,
    /// The anchor id, `source-` + the first 16 hex digits of sha256(source id).
    pub anchor: String,
}

impl SourceId {
    /// Parses a provider reference; `None` when it has no location.
    pub fn parse(text: &str) -> Option<SourceId> {
        let (provider, thread, _) = split_id(text)?;
        let provider_end = provider.len();
        let thread_end = provider_end + 1 + thread.len();
        Some(SourceId { text: text.to_owned(), provider_end, thread_end })
    }

    /// Builds `<provider>/<thread>/<message>`; `None` when the result does not parse back into
    /// the same three parts (a `/` in the provider or thread, an empty part, provider `.`/`..`).
    pub fn from_parts(provider: &str, thread: &str, message: &str) -> Option<SourceId> {
        let id = SourceId::parse(&format!("{provider}/{thread}/{message}"))?;
        (id.provider() == provider && id.thread() == thread).then_some(id)
    }

    /// The whole reference.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The provider, e.g. `openprogram`.
    pub fn provider(&self) -> &str {
        &self.text[..self.provider_end]
    }

    /// The thread, e.g. a session id.
    pub fn thread(&self) -> &str {
        &self.text[self.provider_end + 1..self.thread_end]
    }

    /// The message, e.g. a session node id (may contain `/`).
    pub fn message(&self) -> &str {
        &self.text[self.thread_end + 1..]
    }

    /// `source-` + sha256(id)\[:16\].
    pub fn anchor(&self) -> String {
        anchor_for(&self.text)
    }

    /// The v2 location: `sources/<quote(provider)>/_v2/<quote(thread)>.md` + the anchor.
    pub fn v2_location(&self) -> Location {
        Location { path: self.v2_path(), anchor: self.anchor() }
    }

    /// The v2 archive path alone (no hashing).
    pub fn v2_path(&self) -> String {
        v2_path_of(self.provider(), self.thread())
    }

    /// The legacy (read-only) location: `sources/<quote(provider)>/<quote(thread)>.md` + anchor.
    pub fn legacy_location(&self) -> Location {
        Location { path: self.legacy_path(), anchor: self.anchor() }
    }

    /// The legacy archive path alone.
    pub fn legacy_path(&self) -> String {
        format!(
            "sources/{}/{}.md",
            quote(self.provider(), PATH_SAFE),
            quote(self.thread(), PATH_SAFE)
        )
    }

    /// Whether the id may be written literally into a v2 `source-id` comment: every character
    /// printable (Python's `str.isprintable`) and none of `[ ] < > CR LF`.
    pub fn is_v2_emittable(&self) -> bool {
        is_emittable_text(&self.text)
    }
}

impl fmt::Display for SourceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl AsRef<str> for SourceId {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// Splits a reference into (provider, thread, message) without allocating, with the rules of
/// [`SourceId::parse`].
pub fn split_id(text: &str) -> Option<(&str, &str, &str)> {
    let (provider, rest) = text.split_once('/')?;
    let (thread, message) = rest.split_once('/')?;
    if provider.is_empty() || thread.is_empty() || message.is_empty() {
        return None;
    }
    if provider == "." || provider == ".." {
        return None;
    }
    Some((provider, thread, message))
}

/// The v2 archive path of a provider and thread: `sources/<quote>/_v2/<quote>.md`.
pub fn v2_path_of(provider: &str, thread: &str) -> String {
    format!("sources/{}/_v2/{}.md", quote(provider, PATH_SAFE), quote(thread, PATH_SAFE))
}

/// The characters Python's `quote(..., safe="-_.")` keeps besides letters and digits: `~` is
/// always safe in `urllib.parse.quote`, so the set is `-_.~`.
const PATH_SAFE: &str = "-_.";

/// `source-` + the first 16 lowercase hex digits of the SHA-256 of `id`'s UTF-8 bytes.
pub fn anchor_for(id: &str) -> String {
    let digest = Sha256::digest(id.as_bytes());
    let mut anchor = String::with_capacity(23);
    anchor.push_str("source-");
    anchor.push_str(&hex::encode(&digest[..8]));
    anchor
}

/// Whether `anchor` is the anchor of `id`, without allocating.
pub(crate) fn anchor_matches(id: &str, anchor: &str) -> bool {
    let Some(hex_part) = anchor.strip_prefix("source-") else {
        return false;
    };
    if hex_part.len() != 16 {
        return false;
    }
    let digest = Sha256::digest(id.as_bytes());
    let mut buf = [0u8; 16];
    if hex::encode_to_slice(&digest[..8], &mut buf).is_err() {
        return false;
    }
    buf == hex_part.as_bytes()
}

/// The first `n` lowercase hex digits of sha256(`data`) (`n` ≤ 64).
pub fn sha256_hex(data: &[u8], n: usize) -> String {
    let mut text = hex::encode(Sha256::digest(data));
    text.truncate(n);
    text
}

/// Whether `id` is a v2-emittable source reference: it has a location ([`SourceId::parse`]) and
/// every character is printable and not one of `[ ] < > CR LF`.
pub fn is_v2_emittable(id: &str) -> bool {
    split_id(id).is_some() && is_emittable_text(id)
}

fn is_emittable_text(text: &str) -> bool {
    if text.is_ascii() {
        // ASCII is printable exactly from space to tilde.
        return text
            .bytes()
            .all(|b| (0x20..0x7F).contains(&b) && !matches!(b, b'[' | b']' | b'<' | b'>'));
    }
    text.chars().all(|c| is_printable(c) && !matches!(c, '[' | ']' | '<' | '>' | '\r' | '\n'))
}

/// Whether a workspace-relative path names a v2 archive: after dropping a leading `sources/`,
/// at least three components and the second-to-last is `_v2`. Empty and `.` components are
/// ignored, as Python's `Path.parts` ignores them.
pub fn is_v2_source_path(rel: &str) -> bool {
    let mut parts: Vec<&str> = path_parts(rel).collect();
    if parts.first() == Some(&"sources") {
        parts.remove(0);
    }
    parts.len() >= 3 && parts[parts.len() - 2] == "_v2"
}

/// The components of a `/`-separated path as Python's `PurePosixPath.parts` sees them (empty
/// and `.` components dropped; a leading `/` is not reported).
pub(crate) fn path_parts(rel: &str) -> impl Iterator<Item = &str> {
    rel.split('/').filter(|part| !part.is_empty() && *part != ".")
}

/// The longest [`bounded_handle_part`], in bytes: an archive's file name is its thread part
/// quoted (up to three times longer), and a file name holds at most 255 bytes.
pub const MAX_HANDLE_PART: usize = 80;

/// [`handle_part`], bounded: a part longer than [`MAX_HANDLE_PART`] bytes becomes its first 48
/// bytes (cut at a whole character and never inside a `%XX` escape), `-h`, and the first 16 hex
/// digits of the SHA-256 of the whole ID, so that no transcript's IDs (a 5 000-character
/// session ID, a 1 MB message ID) can make an archive path or a frame header too long.
pub fn bounded_handle_part(id: &str, allow_slash: bool) -> String {
    let part = handle_part(id, allow_slash);
    if part.len() <= MAX_HANDLE_PART {
        return part;
    }
    let mut cut = 48;
    while !part.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut prefix = &part[..cut];
    // An escape cut short: `%` or `%X` at the end.
    if let Some(at) = prefix.get(prefix.len().saturating_sub(2)..).and_then(|tail| tail.find('%')) {
        prefix = &prefix[..prefix.len() - 2 + at];
    }
    let digest = hex::encode(Sha256::digest(id.as_bytes()));
    format!("{prefix}-h{}", &digest[..16])
}

/// One part of a source ID made from a runtime identifier (a session or a node ID): kept as it
/// is when it can stand in a Markdown link target as a plain handle, otherwise each offending
/// character percent-encoded as its UTF-8 bytes. Offending: what a link target cannot carry
/// (whitespace, `#`, `?`, brackets, parentheses, quotes, `%` itself), anything not printable
/// (controls, U+2028), and `/` unless `allow_slash` — a thread must not hold one, so the ID
/// splits back into the same parts (a message may; see `docs/format.md#session-source-ids`).
pub fn handle_part(id: &str, allow_slash: bool) -> String {
    let mut out = String::with_capacity(id.len());
    let mut buf = [0u8; 4];
    for c in id.chars() {
        let offending = match c {
            '/' => !allow_slash,
            ' ' | '"' | '#' | '%' | '(' | ')' | '<' | '>' | '?' | '[' | '\\' | ']' | '^' | '`'
            | '{' | '|' | '}' => true,
            c => !super::unicode::is_printable(c),
        };
        if offending {
            for &byte in c.encode_utf8(&mut buf).as_bytes() {
                out.push('%');
                out.push(HEX_UPPER[usize::from(byte >> 4)]);
                out.push(HEX_UPPER[usize::from(byte & 0xF)]);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Python's `urllib.parse.quote(text, safe=safe)`: UTF-8 bytes; ASCII letters, digits, `_.-~`
/// and the characters of `safe` stay literal; everything else becomes uppercase `%XX`.
pub fn quote(text: &str, safe: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for &byte in text.as_bytes() {
        let c = char::from(byte);
        if byte.is_ascii_alphanumeric()
            || matches!(byte, b'_' | b'.' | b'-' | b'~')
            || (byte.is_ascii() && safe.contains(c))
        {
            out.push(c);
        } else {
            out.push('%');
            out.push(HEX_UPPER[usize::from(byte >> 4)]);
            out.push(HEX_UPPER[usize::from(byte & 0xF)]);
        }
    }
    out
}

const HEX_UPPER: [char; 16] =
    ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 'A', 'B', 'C', 'D', 'E', 'F'];

/// A LoCoMo-style legacy handle `D<n>:<t>` (see `docs/format.md#source-link-targets`; Python's
/// `re.fullmatch(r"D\d+:\d+")`, where `\d` is any Unicode decimal digit). Returns the digit strings
/// `(n, t)` verbatim.
pub fn parse_d_handle(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix('D')?;
    let (n, t) = rest.split_once(':')?;
    (is_digits(n) && is_digits(t)).then_some((n, t))
}

pub(crate) fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| super::unicode::decimal_value(c).is_some())
}

/// The persisted authority a source created through the change API carries (see
/// `docs/format.md#change-api-source-ids`).
/// The display name is deliberately not part of the identity: a rename mints no new IDs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiProvenance {
    /// The principal the runtime persisted for the turn.
    pub principal_id: String,
    /// `owner`, `human`, …
    pub speaker_kind: String,
    /// The stable speaker id.
    pub speaker_id: String,
    /// The authority tier as persisted (`owner`, `paired`).
    pub authority_tier: String,
    /// `<session>/<turn>` for the tool, `owner-rest/memory-changes` for REST.
    pub origin_id: String,
}

impl ApiProvenance {
    /// `principal␟speaker_kind␟speaker_id␟tier␟origin_id`.
    pub fn identity_seed(&self) -> String {
        [
            self.principal_id.as_str(),
            &self.speaker_kind,
            &self.speaker_id,
            &self.authority_tier,
            &self.origin_id,
        ]
        .join("\u{1f}")
    }
}

/// One API-supplied source: role, content and the normalized `observed_at` (if any).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiSource {
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// The content, verbatim.
    pub content: String,
    /// The ISO-8601 observation time after normalization, or `None`.
    pub observed_at: Option<String>,
}

/// The source IDs of a batch of API-supplied sources (see `docs/format.md#change-api-source-ids`),
/// in input order, under the Python implementation's provider `claude-code`
/// ([`api_source_ids_under`] names another).
pub fn api_source_ids(provenance: &ApiProvenance, sources: &[ApiSource]) -> Vec<SourceId> {
    api_source_ids_under(API_SOURCE_PROVIDER, provenance, sources)
}

/// The source IDs of a batch of API-supplied sources under `provider`, in input order: thread = sha256(seed + `\n` + the items joined by `\n`,
/// each `role␟content␟observed`)\[:16\], message *i* (from 1) =
/// sha256(`seed␟thread␟i␟role␟content␟observed`)\[:16\]. Empty input → no IDs. The provider is
/// not part of the hashes: the same request gives the same thread and messages under any
/// provider.
pub fn api_source_ids_under(
    provider: &str,
    provenance: &ApiProvenance,
    sources: &[ApiSource],
) -> Vec<SourceId> {
    if sources.is_empty() {
        return Vec::new();
    }
    let seed = provenance.identity_seed();
    let mut canonical = seed.clone();
    for item in sources {
        canonical.push('\n');
        canonical.push_str(&item.role);
        canonical.push(SEED_SEPARATOR);
        canonical.push_str(&item.content);
        canonical.push(SEED_SEPARATOR);
        canonical.push_str(item.observed_at.as_deref().unwrap_or(""));
    }
    let thread = sha256_hex(canonical.as_bytes(), 16);
    sources
        .iter()
        .enumerate()
        .map(|(index, item)| {
            let seed = format!(
                "{seed}\u{1f}{thread}\u{1f}{ordinal}\u{1f}{role}\u{1f}{content}\u{1f}{observed}",
                ordinal = index + 1,
                role = item.role,
                content = item.content,
                observed = item.observed_at.as_deref().unwrap_or(""),
            );
            hex_source_id(provider, &thread, &sha256_hex(seed.as_bytes(), 16))
        })
        .collect()
}

/// The identity of one unpaired group message (see
/// `docs/format.md#unpaired-and-migration-source-ids`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnpairedMessage<'a> {
    /// The channel, e.g. `telegram`.
    pub channel: &'a str,
    /// The bot account.
    pub account: &'a str,
    /// The chat.
    pub chat: &'a str,
    /// The platform's message id.
    pub native_id: &'a str,
    /// The platform's user id.
    pub user_id: &'a str,
    /// `str(ts)` as Python renders the timestamp (see [`python_float_str`] for a float).
    pub ts: &'a str,
    /// The message text.
    pub text: &'a str,
}

/// The source id of an unpaired group message: provider `channel-` + quote(channel, `-_.`),
/// thread quote(`<account>:<chat>`, `-_.`), message
/// sha256(`channel␟account␟chat␟native_id␟user_id␟ts␟text`)\[:24\].
pub fn unpaired_source_id(message: &UnpairedMessage<'_>) -> SourceId {
    let provider = format!("channel-{}", quote(message.channel, PATH_SAFE));
    let thread = quote(&format!("{}:{}", message.account, message.chat), PATH_SAFE);
    let seed = [
        message.channel,
        message.account,
        message.chat,
        message.native_id,
        message.user_id,
        message.ts,
        message.text,
    ]
    .join("\u{1f}");
    hex_source_id(&provider, &thread, &sha256_hex(seed.as_bytes(), 24))
}

/// The source id minted for a legacy root `core.md` during migration:
/// `openprogram-migration/legacy-core/` + sha256(raw bytes)\[:24\].
pub fn migration_source_id(raw_core: &[u8]) -> SourceId {
    hex_source_id(MIGRATION_PROVIDER, MIGRATION_THREAD, &sha256_hex(raw_core, 24))
}

/// A source id whose three parts are known to be non-empty and `/`-free (quoted or hex).
fn hex_source_id(provider: &str, thread: &str, message: &str) -> SourceId {
    let text = format!("{provider}/{thread}/{message}");
    SourceId { provider_end: provider.len(), thread_end: provider.len() + 1 + thread.len(), text }
}

/// Python's `str(float)` (`repr`): the shortest round-tripping digits, `.0` on integral values,
/// scientific notation when the decimal exponent is below -4 or at least 16 (`1e+16`, `1e-05`),
/// and `inf`, `-inf`, `nan`.
pub fn python_float_str(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    // `{:e}` gives the shortest round-tripping digits as `d.ddde±x`.
    let sci = format!("{value:e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((sci.as_str(), "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if negative { "-" } else { "" };
    if !(-4..16).contains(&exponent) {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() { String::new() } else { format!(".{rest}") };
        let exp_sign = if exponent < 0 { '-' } else { '+' };
        return format!("{sign}{first}{fraction}e{exp_sign}{:02}", exponent.unsigned_abs());
    }
    let point = exponent + 1; // digits before the decimal point
    if point <= 0 {
        let zeros = "0".repeat(point.unsigned_abs() as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = point as usize;
    if digits.len() <= point {
        let zeros = "0".repeat(point - digits.len());
        format!("{sign}{digits}{zeros}.0")
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_splits_on_the_first_two_slashes() {
        let id = SourceId::parse("openprogram/sess-7f2a/u1/with/slashes").expect("valid");
        assert_eq!(id.provider(), "openprogram");
        assert_eq!(id.thread(), "sess-7f2a");
        assert_eq!(id.message(), "u1/with/slashes");
        for bad in ["", "a", "a/b", "a/b/", "/b/c", "a//c", "./b/c", "../b/c"] {
            assert!(SourceId::parse(bad).is_none(), "{bad:?}");
        }
        assert!(SourceId::parse(".../b/c").is_some());
        assert!(SourceId::from_parts("a/x", "b", "c").is_none());
        assert_eq!(
            SourceId::from_parts("a", "b", "c/d").map(|id| id.to_string()),
            Some("a/b/c/d".into())
        );
    }

    #[test]
    fn reference_locations_and_anchors() {
        let id = SourceId::parse("channel-telegram/main%3Ac1/abc").expect("valid");
        assert_eq!(id.v2_location().path, "sources/channel-telegram/_v2/main%253Ac1.md");
        assert_eq!(id.anchor(), "source-682258ed6b278804");
        assert_eq!(id.legacy_location().path, "sources/channel-telegram/main%253Ac1.md");
        assert_eq!(anchor_for("openprogram/sess-7f2a/u1"), "source-d7e6772098d6b0d9");
        assert_eq!(anchor_for("openprogram/sess-7f2a/a1"), "source-0640c5fc0b1951db");
        let encoded = SourceId::parse("openprogram/encoded id/m1").expect("valid");
        assert_eq!(encoded.v2_path(), "sources/openprogram/_v2/encoded%20id.md");
        let v2_provider = SourceId::parse("_v2/thread/m").expect("valid");
        assert_eq!(v2_provider.v2_path(), "sources/_v2/_v2/thread.md");
        assert!(anchor_matches("openprogram/sess-7f2a/u1", "source-d7e6772098d6b0d9"));
        assert!(!anchor_matches("openprogram/sess-7f2a/u1", "source-d7e6772098d6b0d8"));
        assert!(!anchor_matches("openprogram/sess-7f2a/u1", "source-D7E6772098D6B0D9"));
    }

    #[test]
    fn quote_matches_urllib() {
        assert_eq!(quote("a b/c:d~e_f.g-h", "-_."), "a%20b%2Fc%3Ad~e_f.g-h");
        assert_eq!(quote("é", ""), "%C3%A9");
        assert_eq!(quote("a/b", "/"), "a/b");
        assert_eq!(quote("100%", ""), "100%25");
    }

    #[test]
    fn emittable_rule() {
        assert!(is_v2_emittable("openprogram/sess-7f2a/u1"));
        assert!(is_v2_emittable("a b/c d/e f"));
        for bad in ["a/b/c]", "a/b/<c", "a/b/c\r", "a/b/c\u{200b}", "a/b/c\u{a0}", "a/b"] {
            assert!(!is_v2_emittable(bad), "{bad:?}");
        }
    }

    #[test]
    fn long_parts_are_bounded_and_stay_distinct() {
        assert_eq!(bounded_handle_part("a b", false), "a%20b");
        let long = "s".repeat(5_000);
        let bounded = bounded_handle_part(&long, false);
        assert!(bounded.len() <= MAX_HANDLE_PART, "{bounded}");
        assert_eq!(bounded, bounded_handle_part(&long, false), "deterministic");
        assert_ne!(bounded, bounded_handle_part(&"s".repeat(5_001), false));
        assert!(bounded.starts_with(&"s".repeat(48)) && bounded.contains("-h"), "{bounded}");
        // Never cut inside an escape or a character.
        for text in ["a b".repeat(40), "中".repeat(40), format!("{}%", "x".repeat(47)).repeat(3)] {
            let bounded = bounded_handle_part(&text, false);
            let prefix = bounded.rsplit_once("-h").expect("hashed").0;
            let escapes_whole = prefix.match_indices('%').all(|(at, _)| {
                prefix.get(at + 1..at + 3).is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
            });
            assert!(escapes_whole, "{bounded}");
            assert!(bounded.len() <= MAX_HANDLE_PART, "{bounded}");
        }
    }

    #[test]
    fn v2_paths() {
        assert!(is_v2_source_path("sources/openprogram/_v2/x.md"));
        assert!(is_v2_source_path("openprogram/_v2/x.md"));
        assert!(is_v2_source_path("sources/_v2/_v2/x.md"));
        assert!(is_v2_source_path("sources//openprogram/./_v2/x.md"));
        assert!(!is_v2_source_path("sources/openprogram/x.md"));
        assert!(!is_v2_source_path("sources/_v2/x.md"));
        assert!(!is_v2_source_path("sources/D1.md"));
    }

    #[test]
    fn d_handles() {
        assert_eq!(parse_d_handle("D18:11"), Some(("18", "11")));
        assert_eq!(parse_d_handle("D1:٣"), Some(("1", "٣")));
        for bad in ["D:1", "D1:", "d1:1", "D1:1 ", "D1-1"] {
            assert_eq!(parse_d_handle(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn api_source_formula() {
        let provenance = ApiProvenance {
            principal_id: "owner/install/abc".into(),
            speaker_kind: "owner".into(),
            speaker_id: "owner/local".into(),
            authority_tier: "owner".into(),
            origin_id: "owner-rest/memory-changes".into(),
        };
        let sources = vec![
            ApiSource { role: "user".into(), content: "I like tea.".into(), observed_at: None },
            ApiSource {
                role: "assistant".into(),
                content: "Noted.".into(),
                observed_at: Some("2024-03-15T10:00:00+08:00".into()),
            },
        ];
        let seed = "owner/install/abc\u{1f}owner\u{1f}owner/local\u{1f}owner\u{1f}owner-rest/memory-changes";
        assert_eq!(provenance.identity_seed(), seed);
        let canonical = format!(
            "{seed}\nuser\u{1f}I like tea.\u{1f}\nassistant\u{1f}Noted.\u{1f}2024-03-15T10:00:00+08:00"
        );
        let thread = sha256_hex(canonical.as_bytes(), 16);
        let ids = api_source_ids(&provenance, &sources);
        assert_eq!(ids.len(), 2);
        assert_eq!(ids[0].provider(), "claude-code");
        assert_eq!(ids[0].thread(), thread);
        let m2 = sha256_hex(
            format!("{seed}\u{1f}{thread}\u{1f}2\u{1f}assistant\u{1f}Noted.\u{1f}2024-03-15T10:00:00+08:00")
                .as_bytes(),
            16,
        );
        assert_eq!(ids[1].message(), m2);
        // Values cross-checked with Python's hashlib for this exact input.
        assert_eq!(ids[0].as_str(), "claude-code/b62acadceac7d78a/7b24b1c84d3a4a1a");
        assert!(api_source_ids(&provenance, &[]).is_empty());
        let mut renamed = provenance.clone();
        renamed.speaker_kind = "human".into();
        assert_ne!(api_source_ids(&renamed, &sources), ids);
        // A surface's provider changes the provider only.
        let mcp = api_source_ids_under(Surface::Mcp.provider(), &provenance, &sources);
        assert_eq!(mcp[0].as_str(), "mcp/b62acadceac7d78a/7b24b1c84d3a4a1a");
        assert_eq!(mcp[1].message(), ids[1].message());
    }

    #[test]
    fn surfaces_name_their_providers() {
        let names: Vec<&str> = Surface::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(names, ["cli", "mcp", "web", "hook", "writer", "import"]);
        for surface in Surface::ALL {
            assert_eq!(Surface::of_provider(surface.provider()), Some(surface));
        }
        assert_eq!(Surface::of_provider(API_SOURCE_PROVIDER), None);
        assert_eq!(Surface::of_provider("openprogram"), None);
    }

    #[test]
    fn unpaired_and_migration_formulas() {
        let message = UnpairedMessage {
            channel: "telegram",
            account: "main",
            chat: "c1",
            native_id: "42",
            user_id: "u7",
            ts: "1700000000.5",
            text: "hi",
        };
        let id = unpaired_source_id(&message);
        assert_eq!(id.provider(), "channel-telegram");
        assert_eq!(id.thread(), "main%3Ac1");
        assert_eq!(id.message().len(), 24);
        assert_eq!(
            id.message(),
            sha256_hex(
                "telegram\u{1f}main\u{1f}c1\u{1f}42\u{1f}u7\u{1f}1700000000.5\u{1f}hi".as_bytes(),
                24
            )
        );
        assert_eq!(id.v2_path(), "sources/channel-telegram/_v2/main%253Ac1.md");
        let migration = migration_source_id(b"# Core\n");
        assert_eq!(migration.provider(), "openprogram-migration");
        assert_eq!(migration.thread(), "legacy-core");
        assert_eq!(migration.message(), sha256_hex(b"# Core\n", 24));
    }

    #[test]
    fn python_float_repr() {
        for (value, text) in [
            (1_700_000_000.0, "1700000000.0"),
            (1_700_000_000.5, "1700000000.5"),
            (0.1, "0.1"),
            (1e16, "1e+16"),
            (1.5e16, "1.5e+16"),
            (9_999_999_999_999_998.0, "9999999999999998.0"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (0.0, "0.0"),
            (-2.5, "-2.5"),
            (123_456_789_012_345_680.0, "1.2345678901234568e+17"),
        ] {
            assert_eq!(python_float_str(value), text, "{value}");
        }
    }
}

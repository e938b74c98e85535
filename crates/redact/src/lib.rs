//! Redaction: `<private>` spans and secrets taken out of message text before anything is stored
//! or sent, replaced by `[REDACTED:<rule-id>]`, with counts by rule (never the values).
//!
//! Key decision: the secrets are gitleaks' curated rule set, embedded unmodified
//! (`rules/gitleaks.toml`, MIT) and run with gitleaks' semantics (keyword prefilter, secret
//! group, Shannon entropy threshold, allowlists on the secret, the match or the line, stopwords,
//! AND/OR conditions, the global allowlist), plus a small layer of ours in the same schema
//! (`rules/scriptorium.toml`: rule families message text needs and gitleaks lacks, with their
//! allowlists; the place where a false positive of an upstream rule is fixed). A well-kept rule
//! set beats a dozen home-made regexes; keeping gitleaks' schema lets the file be updated from
//! upstream.
//! Construction is cheap: the rule files are parsed and one Aho-Corasick automaton of the
//! keywords is built; a rule's regex is compiled the first time a text holds one of its
//! keywords, so a hook process that redacts one message pays for the few rules it runs. Speed
//! on long text comes from searching the rules whose regexes start with gitleaks' lazy
//! identifier prefix without it, and the generic rule only around its keywords, both with
//! exactly gitleaks' matches (see `engine`).
//!
//! What one call does, in order:
//!
//! 1. `<private>…</private>` spans are removed, tags included (the claude-mem convention): tags
//!    match ASCII case-insensitively and nest, an unclosed span runs to the end of the text, a
//!    stray `</private>` is kept as text; counted under `private`.
//! 2. Secrets are found in what is left by the built-in rules and the owner's
//!    [`PrivacyConfig::patterns`]; a candidate the owner's [`PrivacyConfig::allow`] matches is
//!    kept. Overlapping findings are redacted as their union, one marker counted once under the
//!    rule that comes first in this order: the owner's patterns (in their order), gitleaks'
//!    rules then ours (in file order), and last the generic rules (an id containing `generic`,
//!    which gitleaks also lets a specific rule override).
//! 3. Text already shaped like a marker (`[REDACTED:<id>]`) is never redacted again (a finding
//!    that covers one is cut around it), and the call repeats 1–2 on its own output until
//!    nothing changes (a removal can join text into a new tag or secret), so
//!    `redact(redact(x).text) == redact(x).text`. The repetition is bounded (16 passes, and 16
//!    rounds of tag removal, after which everything from the first remaining `<private>` on
//!    goes): only a text built to defeat it needs more, and a second redaction of such a text
//!    can only redact more.
//!
//! The result is deterministic: the same text and configuration give the same output and
//! counts, so re-importing a transcript stays idempotent. The marker holds no newline, `^`,
//! backtick or `[^`, and a rule id is `[A-Za-z0-9._-]`, so it cannot break the topic grammar
//! or the source archive's frames.
//!
//! # Limitations
//!
//! - Only what a rule knows is found: a password said in words, a value no rule has a shape or
//!   a keyword for, a secret split across two messages, or one encoded (base64, percent) is
//!   kept.
//! - gitleaks' generic rule redacts high-entropy values assigned to names like `token`,
//!   `secret`, `password` or `api_key`; some of those are not secrets (a hash, an ID), and
//!   redacting them is the safe error.
//! - The rules scoped to file paths (`path = …`) do not run: a message has no path. They are
//!   listed, with the reasons, by a unit test of `rules`. The `gitleaks:allow` comment is not
//!   honoured.
//! - A rule id says which family a secret belongs to (`aws-access-token`), never any of its
//!   characters; a `<private>` span leaves no trace in the text.
//! - What is redacted is gitleaks' *secret* (its capture group), so the name it was assigned to
//!   stays (`password = "[REDACTED:generic-api-key]"`), and for a few rules the secret holds a
//!   delimiter (`curl -u "user:pass"` loses its quotes with the credential).
//! - The keyword prefilter is ASCII case-insensitive (gitleaks lower-cases with Unicode); a text
//!   holding `K` (Kelvin) or `ſ` runs every rule, so this never loses a match.
//!
//! # Example
//!
//! ```
//! use scriptorium_redact::{PrivacyConfig, OwnerPattern, Redactor};
//!
//! let redactor = Redactor::builtin();
//! let text = "run `export GITHUB_TOKEN=ghp_R7mXq2LpV9sKd4TnW8yZb3HcJ6fGa1EuQo5N` first. \
//!             <private>My home address is 12 Elm St.</private>Then push.";
//! let out = redactor.redact(text);
//! assert_eq!(out.text, "run `export GITHUB_TOKEN=[REDACTED:github-pat]` first. Then push.");
//! assert_eq!(out.counts.0["github-pat"], 1);
//! assert_eq!(out.counts.0["private"], 1);
//!
//! // Nothing to redact: the text is borrowed, not copied.
//! assert!(matches!(redactor.redact("plain words").text, std::borrow::Cow::Borrowed(_)));
//!
//! // The owner's own patterns and allowlist.
//! let config = PrivacyConfig {
//!     patterns: vec![OwnerPattern::Named { id: "ticket".into(), regex: r"\bACME-\d{4}\b".into() }],
//!     allow: vec![],
//! };
//! let mine = Redactor::new(&config)?;
//! assert_eq!(mine.redact("see ACME-1234").text, "see [REDACTED:ticket]");
//! # Ok::<(), scriptorium_redact::Error>(())
//! ```

mod config;
mod engine;
mod goregex;
mod private;
mod rules;

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use regex::{Regex, RegexSet};

pub use config::{OwnerPattern, PrivacyConfig};
use engine::{Builtin, Finding};

/// How every marker starts: `[REDACTED:<rule-id>]`.
pub(crate) const MARKER_PREFIX: &str = "[REDACTED:";

/// The rule id counting removed `<private>` spans.
pub const PRIVATE_ID: &str = "private";

/// The longest rule id.
const MAX_ID_LEN: usize = 64;

/// How many passes [`Redactor::redact`] makes at most. A pass finds what the previous one's
/// replacements exposed (a secret right after a redacted one now has a word boundary); real text
/// needs one or two, and the bound keeps a constructed text of thousands of glued secrets from
/// costing a pass each.
const MAX_PASSES: usize = 16;

/// Errors of this crate.
#[non_exhaustive]
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An entry of the owner's `[privacy]` configuration is invalid.
    #[error("{entry}: {message}")]
    InvalidConfig {
        /// The entry: `privacy.patterns[2]`, `privacy.allow[0]`.
        entry: String,
        /// What is wrong with it.
        message: String,
    },
}

/// The stable codes of [`Error`].
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// [`Error::InvalidConfig`].
    InvalidConfig,
}

impl ErrorCode {
    /// The stable SCREAMING_SNAKE_CASE name.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidConfig => "INVALID_CONFIG",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Error {
    /// The stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidConfig { .. } => ErrorCode::InvalidConfig,
        }
    }

    /// Whether retrying can help: never (the configuration must change).
    pub fn is_retryable(&self) -> bool {
        false
    }
}

/// How many redactions each rule made (`private` for `<private>` spans). Never the values.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts(pub BTreeMap<String, usize>);

impl Counts {
    /// Adds `other`'s counts to these.
    pub fn add(&mut self, other: &Counts) {
        for (id, n) in &other.0 {
            *self.0.entry(id.clone()).or_default() += n;
        }
    }

    /// The number of redactions, all rules together.
    pub fn total(&self) -> usize {
        self.0.values().sum()
    }

    /// Whether nothing was redacted.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }

    fn bump(&mut self, id: &str, n: usize) {
        match self.0.get_mut(id) {
            Some(count) => *count += n,
            None => {
                self.0.insert(id.to_owned(), n);
            }
        }
    }
}

/// The result of [`Redactor::redact`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Redaction<'a> {
    /// The redacted text; borrowed when nothing changed.
    pub text: Cow<'a, str>,
    /// The redactions by rule.
    pub counts: Counts,
}

/// One redaction listed by [`Redactor::review`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reviewed {
    /// The rule id (`private` for a `<private>` span).
    pub rule: String,
    /// The text that was taken out: the secret itself, or the whole private span.
    pub text: String,
}

/// The redactor: the built-in rules and the owner's configuration. `Send + Sync`, and cheap to
/// clone and share (an `Arc` inside; the built-in rules, and the regexes compiled so far, are
/// shared by every redactor of the process).
#[derive(Clone)]
pub struct Redactor {
    inner: Arc<Inner>,
}

struct Inner {
    builtin: Arc<Builtin>,
    owner: Vec<OwnerRule>,
    allow: Option<RegexSet>,
}

struct OwnerRule {
    id: String,
    regex: Regex,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Redactor")
            .field("builtin_rules", &self.inner.builtin.set.rules.len())
            .field("owner_rules", &self.inner.owner.iter().map(|r| &r.id).collect::<Vec<_>>())
            .field("allow", &self.inner.allow.as_ref().map_or(0, RegexSet::len))
            .finish()
    }
}

impl Default for Redactor {
    fn default() -> Redactor {
        Redactor::builtin()
    }
}

/// The built-in rules, loaded once per process and shared by every redactor.
fn builtin_engine() -> Arc<Builtin> {
    static ENGINE: OnceLock<Arc<Builtin>> = OnceLock::new();
    ENGINE.get_or_init(|| Arc::new(load_builtin())).clone()
}

fn load_builtin() -> Builtin {
    let set = rules::RuleSet::load(rules::GITLEAKS_TOML, rules::SCRIPTORIUM_TOML)
        .expect("the embedded rule files load (tested)");
    Builtin::new(set)
}

/// Whether `id` is a valid rule id: `[A-Za-z0-9][A-Za-z0-9._-]*`, at most 64 bytes.
fn valid_id(id: &str) -> bool {
    id.len() <= MAX_ID_LEN
        && id.bytes().next().is_some_and(|b| b.is_ascii_alphanumeric())
        && id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

impl Redactor {
    /// A redactor with the built-in rules and the owner's configuration. Every entry is
    /// checked: a regex that does not compile or matches the empty string, an invalid or
    /// duplicate id, or one a built-in rule already has, is [`Error::InvalidConfig`] naming the
    /// entry (`privacy.patterns[2]: …`).
    pub fn new(config: &PrivacyConfig) -> Result<Redactor, Error> {
        Redactor::with_rules(builtin_engine(), config)
    }

    /// [`Redactor::builtin`] built afresh, bypassing the process's cache: what the first
    /// redactor of a process costs to build (the construction benchmark), with no regex compiled
    /// yet.
    #[doc(hidden)]
    pub fn builtin_uncached() -> Redactor {
        Redactor::with_rules(Arc::new(load_builtin()), &PrivacyConfig::default())
            .expect("the default configuration is valid")
    }

    fn with_rules(builtin: Arc<Builtin>, config: &PrivacyConfig) -> Result<Redactor, Error> {
        let mut owner: Vec<OwnerRule> = Vec::with_capacity(config.patterns.len());
        for (i, pattern) in config.patterns.iter().enumerate() {
            let entry = || format!("privacy.patterns[{i}]");
            let invalid = |message: String| Error::InvalidConfig { entry: entry(), message };
            let id = pattern.id(i);
            if !valid_id(&id) {
                return Err(invalid(format!(
                    "invalid id {id:?}: use ASCII letters, digits, '.', '_' and '-' (starting \
                     with a letter or digit), at most {MAX_ID_LEN} characters"
                )));
            }
            if id == PRIVATE_ID || builtin.has_id(&id) {
                return Err(invalid(format!("id {id:?} is a built-in rule's id")));
            }
            if owner.iter().any(|r| r.id == id) {
                return Err(invalid(format!("id {id:?} is used twice")));
            }
            let regex =
                Regex::new(pattern.regex()).map_err(|e| invalid(format!("invalid regex: {e}")))?;
            if regex.is_match("") {
                return Err(invalid(format!(
                    "the regex {:?} matches the empty string",
                    pattern.regex()
                )));
            }
            owner.push(OwnerRule { id, regex });
        }
        for (i, allow) in config.allow.iter().enumerate() {
            Regex::new(allow).map_err(|e| Error::InvalidConfig {
                entry: format!("privacy.allow[{i}]"),
                message: format!("invalid regex: {e}"),
            })?;
        }
        let allow = if config.allow.is_empty() {
            None
        } else {
            Some(RegexSet::new(&config.allow).map_err(|e| Error::InvalidConfig {
                entry: "privacy.allow".to_owned(),
                message: format!("invalid regexes: {e}"),
            })?)
        };
        Ok(Redactor { inner: Arc::new(Inner { builtin, owner, allow }) })
    }

    /// The redactor with the built-in rules only (`new(&PrivacyConfig::default())`), built once
    /// per process.
    pub fn builtin() -> Redactor {
        static BUILTIN: OnceLock<Redactor> = OnceLock::new();
        BUILTIN
            .get_or_init(|| Redactor {
                inner: Arc::new(Inner {
                    builtin: builtin_engine(),
                    owner: Vec::new(),
                    allow: None,
                }),
            })
            .clone()
    }

    /// Redacts `text`: `<private>` spans removed, secrets replaced by `[REDACTED:<rule-id>]`
    /// (see the crate documentation for the order and the rules). Borrows `text` when nothing
    /// changed.
    pub fn redact<'a>(&self, text: &'a str) -> Redaction<'a> {
        self.run(text, None)
    }

    /// [`redact`](Self::redact), also listing every redaction with the text it took out: for
    /// reviewing what the rules match on test data (the precision suite), never for a report
    /// that is stored or leaves the machine, since [`Reviewed::text`] holds the secret itself.
    pub fn review<'a>(&self, text: &'a str) -> (Redaction<'a>, Vec<Reviewed>) {
        let mut reviewed = Vec::new();
        let redaction = self.run(text, Some(&mut reviewed));
        (redaction, reviewed)
    }

    fn run<'a>(&self, text: &'a str, mut review: Option<&mut Vec<Reviewed>>) -> Redaction<'a> {
        let mut counts = Counts::default();
        let mut current: Cow<'a, str> = Cow::Borrowed(text);
        for _ in 0..MAX_PASSES {
            match self.pass(&current, &mut counts, review.as_deref_mut()) {
                Some(next) => current = Cow::Owned(next),
                None => break,
            }
        }
        Redaction { text: current, counts }
    }

    /// One pass: private spans, then secrets. `None` when it changed nothing.
    fn pass(
        &self,
        text: &str,
        counts: &mut Counts,
        mut review: Option<&mut Vec<Reviewed>>,
    ) -> Option<String> {
        let inner = &*self.inner;
        let builtin = &*inner.builtin;
        let mut scan = builtin.scan(text);
        let mut without_private = None;
        if scan.private {
            let mut removed = Vec::new();
            let keep_removed = review.is_some();
            if let Some((rest, spans)) = private::strip(text, keep_removed.then_some(&mut removed))
            {
                counts.bump(PRIVATE_ID, spans);
                if let Some(review) = review.as_deref_mut() {
                    let rule = || PRIVATE_ID.to_owned();
                    review.extend(removed.into_iter().map(|text| Reviewed { rule: rule(), text }));
                }
                scan = builtin.scan(&rest);
                without_private = Some(rest);
            }
        }
        let text = without_private.as_deref().unwrap_or(text);
        let mut findings = Vec::new();
        for (rank, rule) in inner.owner.iter().enumerate() {
            let rank = rank as u32;
            if rule.regex.captures_len() > 1 {
                for caps in rule.regex.captures_iter(text) {
                    let Some(m) = caps.get(1).or_else(|| caps.get(0)) else { continue };
                    if !m.is_empty() {
                        findings.push(Finding { start: m.start(), end: m.end(), rank });
                    }
                }
            } else {
                for m in rule.regex.find_iter(text) {
                    if !m.is_empty() {
                        findings.push(Finding { start: m.start(), end: m.end(), rank });
                    }
                }
            }
        }
        builtin.detect(text, &scan, inner.owner.len() as u32, &mut findings);
        if let Some(allow) = &inner.allow {
            findings.retain(|f| !allow.is_match(&text[f.start..f.end]));
        }
        if scan.marker && !findings.is_empty() {
            findings = outside_markers(text, findings);
        }
        if findings.is_empty() {
            return without_private;
        }
        Some(self.apply(text, findings, counts, review))
    }

    /// Replaces the union of the findings by markers.
    fn apply(
        &self,
        text: &str,
        mut findings: Vec<Finding>,
        counts: &mut Counts,
        mut review: Option<&mut Vec<Reviewed>>,
    ) -> String {
        findings.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut kept_from = 0;
        let mut i = 0;
        while i < findings.len() {
            let Finding { start, mut end, mut rank } = findings[i];
            i += 1;
            while i < findings.len() && findings[i].start < end {
                end = end.max(findings[i].end);
                rank = rank.min(findings[i].rank);
                i += 1;
            }
            let id = self.id_of(rank);
            out.push_str(&text[kept_from..start]);
            out.push_str(MARKER_PREFIX);
            out.push_str(id);
            out.push(']');
            counts.bump(id, 1);
            if let Some(review) = review.as_deref_mut() {
                review.push(Reviewed { rule: id.to_owned(), text: text[start..end].to_owned() });
            }
            kept_from = end;
        }
        out.push_str(&text[kept_from..]);
        out
    }

    fn id_of(&self, rank: u32) -> &str {
        let owners = self.inner.owner.len();
        match self.inner.owner.get(rank as usize) {
            Some(rule) => &rule.id,
            None => self.inner.builtin.id_by_rank(rank as usize - owners),
        }
    }
}

/// The findings with every marker already in `text` cut out of them: a marker is never
/// redacted again, but a secret beside one still is. A piece with no letter or digit is
/// dropped (quotes and separators between markers are no secret).
fn outside_markers(text: &str, findings: Vec<Finding>) -> Vec<Finding> {
    let markers = markers(text);
    let mut out = Vec::with_capacity(findings.len());
    for finding in findings {
        let mut start = finding.start;
        for &(s, e) in markers.iter().filter(|&&(s, e)| finding.start < e && s < finding.end) {
            if start < s {
                out.push(Finding { start, end: s, rank: finding.rank });
            }
            start = start.max(e);
        }
        if start < finding.end {
            out.push(Finding { start, end: finding.end, rank: finding.rank });
        }
    }
    out.retain(|f| text[f.start..f.end].chars().any(char::is_alphanumeric));
    out
}

/// The byte ranges of the markers already in `text`, in order.
fn markers(text: &str) -> Vec<(usize, usize)> {
    static MARKER: OnceLock<Regex> = OnceLock::new();
    let marker = MARKER.get_or_init(|| {
        Regex::new(r"\[REDACTED:[A-Za-z0-9][A-Za-z0-9._-]{0,63}\]").expect("a fixed regex")
    });
    marker.find_iter(text).map(|m| (m.start(), m.end())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redactor_is_send_and_sync() {
        fn check<T: Send + Sync + Clone>() {}
        check::<Redactor>();
    }

    /// `[REDACTED:<id>]` is never matched by a rule, alone or where a secret would be: every
    /// marker survives, and redacting the result again changes nothing.
    #[test]
    fn a_marker_is_never_redacted_again() {
        let redactor = Redactor::builtin();
        let engine = builtin_engine();
        let contexts = [
            "{m}",
            "password = \"{m}\"",
            "api_key: {m}\n",
            "export SECRET_TOKEN={m}",
            "curl -H \"Authorization: Bearer {m}\" https://x",
            "curl -u \"{m}:{m}\" https://x",
            "postgres://app:{m}@db/app",
            "Server=db;Password={m};Database=app",
            "https://h/?sig={m}&password={m}",
            "-----BEGIN RSA PRIVATE KEY-----\n{m}{m}{m}\n-----END RSA PRIVATE KEY-----",
        ];
        for rule in &engine.set.rules {
            let marker = format!("{MARKER_PREFIX}{}]", rule.id);
            for context in contexts {
                let text = context.replace("{m}", &marker);
                let out = redactor.redact(&text);
                let kept = out.text.matches(marker.as_str()).count();
                let had = text.matches(marker.as_str()).count();
                assert!(kept >= had, "{}: {:?}", rule.id, out.text);
                let again = redactor.redact(&out.text);
                assert_eq!(again.text, out.text, "{}", rule.id);
                assert!(again.counts.is_empty(), "{}: {:?}", rule.id, again.counts);
                if !context.contains("PRIVATE KEY") && !context.contains("curl -u") {
                    assert_eq!(out.text, text, "{}", rule.id);
                }
            }
        }
    }

    #[test]
    fn a_secret_beside_a_marker_is_still_redacted() {
        let text = "curl -u \"[REDACTED:jwt]:Zq8Lm2Xv9Pq4Rt7W\" https://x";
        let out = Redactor::builtin().redact(text);
        // gitleaks' secret for `curl -u "user:password"` is the quoted credential, quotes
        // included: the closing quote goes with it.
        assert_eq!(out.text, "curl -u \"[REDACTED:jwt][REDACTED:curl-auth-user] https://x");
        assert_eq!(Redactor::builtin().redact(&out.text).text, out.text);
    }

    #[test]
    fn ids() {
        assert!(valid_id("owner-1"));
        assert!(valid_id("a.b_c-D9"));
        assert!(!valid_id(""));
        assert!(!valid_id("-x"));
        assert!(!valid_id("a]b"));
        assert!(!valid_id("a b"));
        assert!(!valid_id(&"a".repeat(65)));
    }
}

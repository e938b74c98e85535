//! What the writer's model runs cost: the token usage (and the price, when the agent reports
//! one) of each run, read from what the agent CLIs print, summed per batch and per write, and
//! kept in a small ledger of runs that `status`, the budget and the Sessions page read.
//!
//! Key decision: the ledger (`<memory>/.scriptorium/writer-usage.jsonl`) is derived and
//! append-only: one JSON line per model run, written with a single `write` on an `O_APPEND`
//! descriptor, so parallel writes never interleave and a crash can at most leave one torn last
//! line, which every reader skips. It is per machine (under `.scriptorium/`, never synced): it
//! counts what this machine's agent login spent.
//!
//! Key decision: `input_tokens` counts every prompt token the provider billed, cached or not
//! (Claude Code reports cache writes and reads apart from `input_tokens`; they are added here),
//! so `total_tokens` is what the budget (`[memory.writer] max_tokens_per_day`) is measured in.

use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The ledger's path under the memory workspace.
pub const LEDGER: &str = ".scriptorium/writer-usage.jsonl";

/// Token usage (and cost) of one or more model runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    /// Prompt tokens, cached or not.
    pub input_tokens: u64,
    /// Completion tokens (reasoning included).
    pub output_tokens: u64,
    /// `input_tokens + output_tokens`.
    pub total_tokens: u64,
    /// The price in millionths of a US dollar, when every run summed here reported one; shown
    /// as `cost_usd` (dollars, `null` when unknown).
    #[serde(rename = "cost_usd", with = "dollars")]
    pub cost_micro_usd: Option<u64>,
}

impl TokenUsage {
    /// A usage of `input` and `output` tokens, with the cost if known.
    pub fn new(input: u64, output: u64, cost_micro_usd: Option<u64>) -> TokenUsage {
        TokenUsage {
            input_tokens: input,
            output_tokens: output,
            total_tokens: input.saturating_add(output),
            cost_micro_usd,
        }
    }

    /// Adds `other`. The cost stays known only while every part's is (a sum with an unknown
    /// part would understate it), except that an empty usage (no run) costs nothing.
    pub fn add(&mut self, other: &TokenUsage) {
        let empty = |u: &TokenUsage| u.total_tokens == 0 && u.cost_micro_usd.is_none();
        self.cost_micro_usd = match (empty(self), empty(other)) {
            (true, _) => other.cost_micro_usd,
            (_, true) => self.cost_micro_usd,
            _ => self.cost_micro_usd.zip(other.cost_micro_usd).map(|(a, b)| a.saturating_add(b)),
        };
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.total_tokens = self.total_tokens.saturating_add(other.total_tokens);
    }

    /// Whether no token was counted.
    pub fn is_empty(&self) -> bool {
        self.total_tokens == 0 && self.cost_micro_usd.unwrap_or(0) == 0
    }

    /// `1 234 tokens (1 000 in, 234 out), $0.0123` (the cost when known).
    pub fn describe(&self) -> String {
        let cost = self
            .cost_micro_usd
            .map(|micros| format!(", ${:.4}", micros as f64 / 1e6))
            .unwrap_or_default();
        format!(
            "{} tokens ({} in, {} out){cost}",
            self.total_tokens, self.input_tokens, self.output_tokens
        )
    }
}

/// A price in dollars (`f64`) from a count of millionths.
pub fn micro_usd(dollars: f64) -> Option<u64> {
    (dollars.is_finite() && dollars >= 0.0).then(|| (dollars * 1e6).round() as u64)
}

mod dollars {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(value: &Option<u64>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(micros) => s.serialize_f64(*micros as f64 / 1e6),
            None => s.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.and_then(super::micro_usd))
    }
}

/// What an agent CLI's output says about its run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentOutput {
    /// The usage it reported (`None`: its output held none).
    pub usage: Option<TokenUsage>,
    /// The run failed by the agent's own account (Claude Code's `is_error`, a Codex
    /// `turn.failed` or `error` event), with its message.
    pub error: Option<String>,
    /// The HTTP status of the API error, when the agent says.
    pub status: Option<u16>,
    /// The agent's final text, when it printed one.
    pub result: Option<String>,
}

/// Reads what `claude -p --output-format json` (one result object) or `codex exec --json`
/// (JSON lines of events) printed; anything else (plain text) says nothing.
pub fn parse_agent_output(stdout: &str) -> AgentOutput {
    let trimmed = stdout.trim();
    if let Ok(result @ serde_json::Value::Object(_)) = serde_json::from_str(trimmed)
        && (result["type"] == "result" || result.get("is_error").is_some())
    {
        return claude_result(&result);
    }
    // A stream: Claude Code's `stream-json` ends with the same result object; Codex's
    // events carry a usage per completed turn.
    let mut out = AgentOutput::default();
    for line in trimmed.lines() {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line.trim()) else { continue };
        match event["type"].as_str() {
            Some("result") => return claude_result(&event),
            Some("turn.completed") => {
                let usage = &event["usage"];
                let input = usage["input_tokens"].as_u64().unwrap_or(0);
                let output = usage["output_tokens"].as_u64().unwrap_or(0);
                out.usage
                    .get_or_insert_with(TokenUsage::default)
                    .add(&TokenUsage::new(input, output, None));
            }
            Some("turn.failed") => {
                let message = event["error"]["message"].as_str().unwrap_or("the turn failed");
                out.error = Some(message.to_owned());
            }
            Some("error") if out.error.is_none() => {
                out.error = event["message"].as_str().map(str::to_owned);
            }
            Some("item.completed") if event["item"]["type"] == "agent_message" => {
                out.result = event["item"]["text"].as_str().map(str::to_owned);
            }
            _ => {}
        }
    }
    if out.status.is_none() {
        out.status = out.error.as_deref().and_then(status_in);
    }
    out
}

/// Claude Code's result object.
fn claude_result(result: &serde_json::Value) -> AgentOutput {
    let usage = &result["usage"];
    let tokens = |key: &str| usage[key].as_u64().unwrap_or(0);
    let input = tokens("input_tokens")
        .saturating_add(tokens("cache_creation_input_tokens"))
        .saturating_add(tokens("cache_read_input_tokens"));
    let cost = result["total_cost_usd"].as_f64().and_then(micro_usd);
    let reported = usage.is_object() || cost.is_some();
    let text = result["result"].as_str().map(str::to_owned);
    let failed = result["is_error"] == true
        || result["subtype"].as_str().is_some_and(|s| s.starts_with("error"));
    AgentOutput {
        usage: reported.then(|| TokenUsage::new(input, tokens("output_tokens"), cost)),
        error: failed.then(|| text.clone().unwrap_or_else(|| "the run failed".to_owned())),
        status: result["api_error_status"]
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .or_else(|| if failed { text.as_deref().and_then(status_in) } else { None }),
        result: text,
    }
}

/// An HTTP status named in an error message (`unexpected status 401 Unauthorized`,
/// `last status: 429 Too Many Requests`, `Request rejected (429)`).
fn status_in(message: &str) -> Option<u16> {
    let bytes = message.as_bytes();
    (0..bytes.len().saturating_sub(2)).find_map(|i| {
        let digits = bytes.get(i..i + 3)?;
        let bounded = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let after = bytes.get(i + 3).is_none_or(|b| !b.is_ascii_alphanumeric());
        if !(bounded && after && digits.iter().all(u8::is_ascii_digit)) {
            return None;
        }
        let status: u16 = std::str::from_utf8(digits).ok()?.parse().ok()?;
        (400..600).contains(&status).then_some(status)
    })
}

/// One line of the ledger: one model run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LedgerEntry {
    /// When the run ended (RFC 3339, UTC).
    pub at: String,
    /// The model (`command:claude`, `anthropic:claude-haiku-4-5`, …).
    pub model: String,
    /// What the run was for (`write`, `organize`, …).
    pub stage: String,
    /// What it used.
    #[serde(flatten)]
    pub usage: TokenUsage,
}

/// Usage summed over a day and a month (UTC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UsageTotals {
    /// Since 00:00 UTC today.
    pub today: TokenUsage,
    /// Since the first of this month, 00:00 UTC.
    pub month: TokenUsage,
    /// Model runs today.
    pub runs_today: u64,
}

/// The ledger of a memory workspace.
#[derive(Clone, Debug)]
pub struct Ledger {
    path: PathBuf,
}

impl Ledger {
    /// The ledger of the workspace at `memory_root`.
    pub fn of(memory_root: &Path) -> Ledger {
        Ledger { path: memory_root.join(LEDGER) }
    }

    /// Its file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends `entry` (best effort: a ledger that cannot be written must not fail a write
    /// that installed; the next run's entry is appended as usual).
    pub fn append(&self, entry: &LedgerEntry) -> std::io::Result<()> {
        let mut line = serde_json::to_string(entry).map_err(std::io::Error::other)?;
        line.push('\n');
        let mut options = std::fs::OpenOptions::new();
        options.create(true).read(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(&self.path)?;
        // A line a crash tore ends here, not in this one.
        let len = file.metadata()?.len();
        #[cfg(unix)]
        if len > 0 {
            let mut last = [0u8; 1];
            std::os::unix::fs::FileExt::read_at(&file, &mut last, len - 1)?;
            if last[0] != b'\n' {
                line.insert(0, '\n');
            }
        }
        // One write: lines of parallel writers never interleave.
        file.write_all(line.as_bytes())
    }

    /// The sums for the day and month of `now` (UTC); a missing ledger is all zeros, a torn
    /// or foreign line is skipped.
    pub fn totals(&self, now: OffsetDateTime) -> UsageTotals {
        let now = now.to_offset(time::UtcOffset::UTC);
        let mut totals = UsageTotals::default();
        let Ok(file) = std::fs::File::open(&self.path) else { return totals };
        // Split on bytes: a line torn inside a multi-byte character is skipped like any other
        // torn line, and the runs after it still count.
        for line in std::io::BufReader::new(file).split(b'\n') {
            let Ok(line) = line else { break };
            let Ok(entry) = serde_json::from_slice::<LedgerEntry>(&line) else { continue };
            let Ok(at) = OffsetDateTime::parse(&entry.at, &Rfc3339) else { continue };
            let at = at.to_offset(time::UtcOffset::UTC);
            if (at.year(), at.month()) != (now.year(), now.month()) {
                continue;
            }
            totals.month.add(&entry.usage);
            if at.date() == now.date() {
                totals.today.add(&entry.usage);
                totals.runs_today += 1;
            }
        }
        totals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `claude -p --output-format json` 2.1 printed for a run against a mock of the
    /// Messages API (trimmed of fields this reader ignores).
    const CLAUDE_OK: &str = r#"{"type":"result","subtype":"success","is_error":false,
        "duration_api_ms":23,"stop_reason":"end_turn","total_cost_usd":0.00016649999999999998,
        "usage":{"input_tokens":1000,"cache_creation_input_tokens":300,
        "cache_read_input_tokens":400,"output_tokens":50,
        "output_tokens_details":{"thinking_tokens":0},"service_tier":"standard"},
        "modelUsage":{"claude-haiku-5-5":{"inputTokens":1000,"outputTokens":50,
        "costUSD":0.00016649999999999998}},"permission_denials":[],"num_turns":1,
        "api_error_status":null,"result":"ok"}"#;

    #[test]
    fn claude_codes_result_object_gives_tokens_with_the_cache_and_the_cost() {
        let out = parse_agent_output(CLAUDE_OK);
        let usage = out.usage.expect("usage");
        assert_eq!((usage.input_tokens, usage.output_tokens, usage.total_tokens), (1700, 50, 1750));
        assert_eq!(usage.cost_micro_usd, Some(166), "0.00016649… dollars, rounded");
        assert_eq!(out.error, None);
        assert_eq!(out.result.as_deref(), Some("ok"));
        let json = serde_json::to_value(usage).expect("json");
        assert_eq!(json["cost_usd"], 0.000166);
        assert_eq!(json["total_tokens"], 1750);
    }

    #[test]
    fn claude_codes_api_errors_carry_their_status() {
        let failed = |status: &str, result: &str| {
            format!(
                r#"{{"type":"result","subtype":"success","is_error":true,"total_cost_usd":0,
                "usage":{{"input_tokens":0,"output_tokens":0}},"api_error_status":{status},
                "terminal_reason":"api_error","result":"{result}"}}"#
            )
        };
        let out = parse_agent_output(&failed("401", "Invalid API key · Fix external API key"));
        assert_eq!(
            (out.status, out.error.as_deref()),
            (Some(401), Some("Invalid API key · Fix external API key"))
        );
        let out = parse_agent_output(&failed(
            "429",
            "API Error: Request rejected (429) · Number of request tokens has exceeded your \
             per-minute rate limit",
        ));
        assert_eq!(out.status, Some(429));
        let out = parse_agent_output(&failed("null", "Not logged in · Please run /login"));
        assert_eq!(
            (out.status, out.error.as_deref()),
            (None, Some("Not logged in · Please run /login"))
        );
        assert_eq!(out.usage.map(|u| u.total_tokens), Some(0));
    }

    #[test]
    fn codex_events_sum_the_turns_and_carry_the_failure() {
        let ok = r#"{"type":"thread.started","thread_id":"01a249ad"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"agent_message","text":"ok"}}
{"type":"turn.completed","usage":{"input_tokens":1200,"cached_input_tokens":200,"cache_write_input_tokens":0,"output_tokens":34,"reasoning_output_tokens":5}}
{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":6}}
"#;
        let out = parse_agent_output(ok);
        let usage = out.usage.expect("usage");
        assert_eq!((usage.input_tokens, usage.output_tokens, usage.total_tokens), (1300, 40, 1340));
        assert_eq!(usage.cost_micro_usd, None, "Codex reports no price");
        assert_eq!(out.result.as_deref(), Some("ok"));
        let failed = r#"{"type":"thread.started","thread_id":"x"}
{"type":"turn.started"}
{"type":"error","message":"exceeded retry limit, last status: 429 Too Many Requests"}
{"type":"turn.failed","error":{"message":"exceeded retry limit, last status: 429 Too Many Requests"}}
"#;
        let out = parse_agent_output(failed);
        assert_eq!(out.status, Some(429));
        assert!(out.error.is_some_and(|e| e.contains("429")));
        let unauthorized = r#"{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Incorrect API key provided, url: http://127.0.0.1:1/v1/responses"}}"#;
        assert_eq!(parse_agent_output(unauthorized).status, Some(401));
        // Plain text says nothing.
        assert_eq!(parse_agent_output("Done. I wrote the topic."), AgentOutput::default());
    }

    #[test]
    fn sums_keep_the_cost_only_while_every_part_has_one() {
        let mut sum = TokenUsage::default();
        sum.add(&TokenUsage::new(10, 5, Some(100)));
        sum.add(&TokenUsage::new(20, 5, Some(50)));
        assert_eq!((sum.total_tokens, sum.cost_micro_usd), (40, Some(150)));
        sum.add(&TokenUsage::new(1, 1, None));
        assert_eq!((sum.total_tokens, sum.cost_micro_usd), (42, None));
        assert_eq!(sum.describe(), "42 tokens (31 in, 11 out)");
    }

    #[test]
    fn the_ledger_sums_today_and_this_month_and_skips_a_torn_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join(".scriptorium")).expect("mkdir");
        let ledger = Ledger::of(dir.path());
        let entry = |at: &str, tokens: u64| LedgerEntry {
            at: at.to_owned(),
            model: "command:claude".into(),
            stage: "write".into(),
            usage: TokenUsage::new(tokens, 0, None),
        };
        ledger.append(&entry("2026-12-06T01:00:00Z", 100)).expect("append");
        ledger.append(&entry("2026-12-01T23:00:00Z", 20)).expect("append");
        ledger.append(&entry("2026-11-30T23:00:00Z", 7)).expect("append");
        // A crash mid-append leaves a torn last line.
        let mut file = std::fs::OpenOptions::new().append(true).open(ledger.path()).expect("open");
        file.write_all(b"{\"at\":\"2026-12-06T02:").expect("torn");
        drop(file);
        ledger.append(&entry("2026-12-06T03:00:00Z", 1)).expect("append after the torn line");
        let now = OffsetDateTime::parse("2026-12-06T12:00:00Z", &Rfc3339).expect("now");
        let totals = ledger.totals(now);
        assert_eq!(totals.today.total_tokens, 101);
        assert_eq!(totals.month.total_tokens, 121);
        assert_eq!(totals.runs_today, 2);
    }
}

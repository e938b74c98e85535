//! `cargo xtask writer-eval --model <journal|scripted|command:…|openai:…|anthropic:…|
//! config:…>`: how well a writer turns conversations into memory, measured the same way for any
//! model.
//!
//! The harness drives the built `scriptorium` binary as a user would (xtask depends on no crate
//! of ours): a scratch home under `target/writer-eval/home-<model>/`, the LoCoMo dev split's
//! conversations imported as generic JSONL (`locomo.rs`), then one `scriptorium write --session
//! <id> --force --json` per session, in order, with the writer asked for. It then reads what the
//! writer left and reports, as a table on stdout and as JSON in
//! `target/writer-eval/<unix>-<model>.json` (and `latest.json`):
//!
//! - **batches**: accepted (installed at the first commit), repaired (installed after the one
//!   repair run), rejected (`COMMIT_REJECTED`: refused twice, the turns stay pending) and failed
//!   (any other failure, by reason code). A session's write is one batch per threshold of turns
//!   (16 000 tokens; a LoCoMo session is one batch).
//! - **per batch**: the batch's conversation tokens (the writer's own count), the model's tokens
//!   (`usage.total_tokens` of the write result, where the writer reports it; absent is unknown,
//!   never 0) and cost, and the wall time of the write (the process, model included).
//! - **topics**: topic files and blocks, and both per 1 000 conversation turns written.
//! - **core**: the tokens of the whole core master rendered (`scriptorium core --json` with an
//!   unbounded budget) and its blocks.
//! - **near-duplicates**: pairs of blocks whose word 3-shingle sets have a Jaccard similarity of
//!   at least 0.8 (lower-cased, punctuation a word break; `metrics.rs`), anywhere in the topics —
//!   the same fact filed twice, in two topics or in a topic and the core.
//! - **noise**: blocks whose reader text (citations and link targets removed) carries transcript
//!   markup (`<command-name>`, `<local-command-stdout>`, `<system-reminder>`, interrupt notices:
//!   *wrapper*), tool chatter (tool results, test runner summaries, tracebacks, compiler errors:
//!   *tool*) or the writer narrating its own work (its tool names, workspace paths, block IDs:
//!   *writer*). The patterns are `metrics::PATTERNS`.
//! - **evidence recall**: for each answerable LoCoMo question (categories 1–4) whose evidence
//!   turns all lie in the slice, `scriptorium search --topics-only --top-k 5 --json <question>`
//!   (the topics alone, not the archive): *any* when the hits' cited sources (`refs`) hold one of
//!   its evidence turns, *all* when they hold every one.
//!
//! The `scripted` model is the harness's own writer: a recorded script per session
//! (`locomo::harness_script`) that files every turn as one cited block under
//! `topics/people/<speaker>.md`, pins each conversation's first turn to the core (a known
//! near-duplicate), files one planted tool-chatter block (known noise), and fails on purpose:
//! the second session written is repaired once, the third rejected. So its report is known in
//! advance, and `--check` (what `cargo xtask ci` runs, on the small slice) fails when the
//! harness stops seeing any of it.
//!
//! `--slice small` is the first 3 sessions of the first 2 conversations (fast: CI);
//! `--slice full` (the default) is the whole split: 5 conversations, 128 sessions, 2 760 turns.

mod locomo;
mod metrics;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use serde_json::{Value, json};

use locomo::{Conversation, Plan, Slice};

/// Results per search (the recall figure is recall@5).
const TOP_K: usize = 5;

/// A budget large enough for the whole core master to render (`scriptorium core --budget`).
const WHOLE_CORE_BUDGET: &str = "1000000";

/// The writer under evaluation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ModelSpec {
    /// The journal writer (no model).
    Journal,
    /// The harness's recorded scripts.
    Scripted,
    /// An external agent: program and arguments.
    Command(Vec<String>),
    /// An OpenAI-compatible endpoint with this model name.
    Openai(String),
    /// The Anthropic Messages API with this model name.
    Anthropic(String),
    /// The `[model]` and `[memory.writer]` sections of this `scriptorium.toml` (what `setup`
    /// wrote: the agent itself as the writer, its command line, its budget).
    Config(PathBuf),
}

impl ModelSpec {
    /// `journal`, `scripted`, `command:<program> [args…]`, `openai:<name>`, `anthropic:<name>`,
    /// `config:<scriptorium.toml>`.
    pub(crate) fn parse(text: &str) -> anyhow::Result<ModelSpec> {
        let spec = match text.split_once(':') {
            None if text == "journal" => ModelSpec::Journal,
            None if text == "scripted" => ModelSpec::Scripted,
            Some(("command", rest)) => {
                let words: Vec<String> = rest.split_whitespace().map(str::to_owned).collect();
                if words.is_empty() {
                    bail!("--model command: needs the program, e.g. `command:claude -p`");
                }
                ModelSpec::Command(words)
            }
            Some(("openai", name)) if !name.trim().is_empty() => {
                ModelSpec::Openai(name.trim().to_owned())
            }
            Some(("anthropic", name)) if !name.trim().is_empty() => {
                ModelSpec::Anthropic(name.trim().to_owned())
            }
            Some(("config", path)) if !path.trim().is_empty() => {
                ModelSpec::Config(PathBuf::from(path.trim()))
            }
            _ => bail!(
                "--model must be journal, scripted, command:<program> [args…], openai:<name>, \
                 anthropic:<name> or config:<scriptorium.toml> (got {text:?})"
            ),
        };
        Ok(spec)
    }

    /// A short name for file names and the report (`command-claude`, `openai-gpt-4.1-mini`).
    pub(crate) fn slug(&self) -> String {
        let raw = match self {
            ModelSpec::Journal => "journal".to_owned(),
            ModelSpec::Scripted => "scripted".to_owned(),
            ModelSpec::Command(words) => {
                let program = Path::new(&words[0])
                    .file_name()
                    .map_or_else(|| words[0].clone(), |name| name.to_string_lossy().into_owned());
                format!("command-{program}")
            }
            ModelSpec::Openai(name) => format!("openai-{name}"),
            ModelSpec::Anthropic(name) => format!("anthropic-{name}"),
            ModelSpec::Config(_) => "config".to_owned(),
        };
        raw.chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '-' })
            .collect()
    }

    /// The model flags of `scriptorium write` (`script`: the session's script, for `scripted`).
    fn write_args(&self, script: Option<&Path>) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        let mut push = |words: &[&str]| args.extend(words.iter().map(|w| (*w).to_owned()));
        match self {
            ModelSpec::Journal => push(&["--model", "journal"]),
            ModelSpec::Scripted => {
                push(&["--model", "scripted", "--script"]);
                args.push(script.map(|p| p.to_string_lossy().into_owned()).unwrap_or_default());
            }
            ModelSpec::Command(words) => {
                push(&["--model", "command", "--command", &words[0]]);
                for word in &words[1..] {
                    args.push(format!("--command-arg={word}"));
                }
            }
            ModelSpec::Openai(name) => push(&["--model", "openai", "--model-name", name]),
            ModelSpec::Anthropic(name) => push(&["--model", "anthropic", "--model-name", name]),
            // The scratch home's own `scriptorium.toml` says who writes.
            ModelSpec::Config(_) => {}
        }
        args
    }
}

/// What the command line asked for.
#[derive(Debug)]
struct Options {
    model: ModelSpec,
    slice_name: &'static str,
    slice: Slice,
    binary: BinaryChoice,
    check: bool,
    /// Extra arguments of every `scriptorium write` (after `--`).
    write_extra: Vec<String>,
}

/// Which `scriptorium` runs.
#[derive(Debug)]
enum BinaryChoice {
    /// Built now with `cargo build` (debug, or release).
    Build { release: bool },
    /// This binary, as it is.
    Given(PathBuf),
}

const USAGE: &str = "usage: cargo xtask writer-eval --model <journal|scripted|command:<program> \
                     [args…]|openai:<name>|anthropic:<name>|config:<scriptorium.toml>> [--slice \
                     small|full] [--release | --bin PATH] [--check] [-- <extra scriptorium write \
                     args>]";

fn parse_options(args: &[String]) -> anyhow::Result<Options> {
    let mut model = None;
    let mut slice_name = "full";
    let mut release = false;
    let mut bin = None;
    let mut check = false;
    let mut write_extra = Vec::new();
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| {
            it.next().cloned().with_context(|| format!("{flag} needs a value\n{USAGE}"))
        };
        match arg.as_str() {
            "--model" => model = Some(ModelSpec::parse(&value("--model")?)?),
            "--slice" => {
                slice_name = match value("--slice")?.as_str() {
                    "small" => "small",
                    "full" => "full",
                    other => bail!("--slice is small or full (got {other:?})"),
                }
            }
            "--release" => release = true,
            "--bin" => bin = Some(PathBuf::from(value("--bin")?)),
            "--check" => check = true,
            "--" => {
                write_extra = it.by_ref().cloned().collect();
            }
            other => bail!("unknown argument {other:?}\n{USAGE}"),
        }
    }
    let Some(model) = model else { bail!("--model is required\n{USAGE}") };
    if release && bin.is_some() {
        bail!("--release and --bin exclude each other\n{USAGE}");
    }
    let slice = slice_of(slice_name);
    let binary = match bin {
        Some(path) => BinaryChoice::Given(path),
        None => BinaryChoice::Build { release },
    };
    Ok(Options { model, slice_name, slice, binary, check, write_extra })
}

/// The named slice: `small` is 3 sessions (every batch outcome of the scripted plans) of 2
/// conversations; `full` is everything.
fn slice_of(name: &str) -> Slice {
    match name {
        "small" => Slice { conversations: Some(2), sessions: Some(3) },
        _ => Slice::default(),
    }
}

/// `cargo xtask writer-eval …`.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let options = parse_options(args)?;
    let binary = match &options.binary {
        BinaryChoice::Given(path) => {
            std::path::absolute(path).with_context(|| format!("resolving {}", path.display()))?
        }
        BinaryChoice::Build { release } => build(*release)?,
    };
    evaluate(&binary, &options)
}

/// The CI step: the scripted writer on the small slice with `--check`, through `binary` (the
/// debug binary the tests just built).
pub(crate) fn ci_check(binary: &Path) -> anyhow::Result<()> {
    let args: Vec<String> =
        ["--model", "scripted", "--slice", "small", "--check"].map(str::to_owned).into();
    let options = parse_options(&args)?;
    evaluate(binary, &options)
}

fn build(release: bool) -> anyhow::Result<PathBuf> {
    let mut cmd = crate::cargo();
    cmd.args(["build", "--locked", "-p", "scriptorium-cli"]);
    if release {
        cmd.arg("--release");
    }
    crate::run_step("cargo build -p scriptorium-cli", cmd)?;
    let profile = if release { "release" } else { "debug" };
    Ok(crate::bench::target_dir(&crate::repo_root()).join(profile).join("scriptorium"))
}

fn evaluate(binary: &Path, options: &Options) -> anyhow::Result<()> {
    if !binary.is_file() {
        bail!("no scriptorium binary at {}", binary.display());
    }
    let data = crate::data_dir()?;
    let conversations = locomo::load(&data, options.slice)?;
    let out_dir = crate::bench::target_dir(&crate::repo_root()).join("writer-eval");
    // One scratch directory per model, so evaluations of two writers can run side by side.
    let scratch = out_dir.join(format!("home-{}", options.model.slug()));
    if scratch.exists() {
        std::fs::remove_dir_all(&scratch)
            .with_context(|| format!("removing the last run's {}", scratch.display()))?;
    }
    std::fs::create_dir_all(&scratch)?;
    let cli = Cli { binary: binary.to_path_buf(), home: scratch.join("home") };
    eprintln!(
        "==> writer-eval: {} on the {} slice ({} conversations, {} turns), home {}",
        options.model.slug(),
        options.slice_name,
        conversations.len(),
        conversations.iter().map(Conversation::turns).sum::<usize>(),
        cli.home.display()
    );
    if let ModelSpec::Config(path) = &options.model {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        std::fs::create_dir_all(&cli.home)?;
        std::fs::write(cli.home.join("scriptorium.toml"), writer_sections(&text))?;
    }
    cli.run_ok(&["init"])?;
    let mut transcripts = Vec::new();
    for conversation in &conversations {
        let path = scratch.join(format!("{}.jsonl", conversation.sample_id));
        std::fs::write(&path, locomo::transcript(conversation))?;
        transcripts.push(path.to_string_lossy().into_owned());
    }
    let mut import = vec!["import", "jsonl"];
    import.extend(transcripts.iter().map(String::as_str));
    cli.run_ok(&import)?;

    let runs = write_all(&cli, &scratch, &conversations, options)?;
    let memory = cli.home.join("memory");
    let (blocks, topic_files) = metrics::read_blocks(&memory)?;
    let core = cli.json(&["core", "--json", "--budget", WHOLE_CORE_BUDGET])?;
    let recall = recall(&cli, &conversations)?;
    let report = Report { runs, blocks, topic_files, core, recall };
    #[expect(clippy::disallowed_methods, reason = "names the report file of this run")]
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let value = report.to_json(&options.model, options.slice_name, &conversations, stamp);
    print_table(&value);
    let text = serde_json::to_string_pretty(&value)?;
    let file = out_dir.join(format!("{stamp}-{}.json", options.model.slug()));
    std::fs::write(&file, &text)?;
    std::fs::write(out_dir.join("latest.json"), &text)?;
    println!("report: {}", file.display());
    if options.check {
        check(&value, &options.model)?;
        println!("writer-eval check: ok");
    }
    Ok(())
}

/// The sections of a `scriptorium.toml` that say who writes and how (`[model]`,
/// `[memory.writer]`), and nothing else: a session store, a sync remote or a privacy rule of the
/// caller's home must not reach the scratch home.
fn writer_sections(toml: &str) -> String {
    let mut out = String::new();
    let mut keep = false;
    for line in toml.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            keep = matches!(trimmed, "[model]" | "[memory.writer]");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The binary, run against the scratch home.
struct Cli {
    binary: PathBuf,
    home: PathBuf,
}

impl Cli {
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.binary);
        cmd.arg("--home").arg(&self.home).args(args);
        // The scratch home is the whole world: no store, remote or model from the caller's
        // environment.
        for var in [
            "SCRIPTORIUM_HOME",
            "SCRIPTORIUM_MODEL",
            "SCRIPTORIUM_SESSIONS_STORE",
            "SCRIPTORIUM_SYNC_REMOTE",
            "SCRIPTORIUM_MEMORY_BACKEND",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Runs and requires exit 0.
    fn run_ok(&self, args: &[&str]) -> anyhow::Result<std::process::Output> {
        let out = self
            .command(args)
            .output()
            .with_context(|| format!("starting {}", self.binary.display()))?;
        if !out.status.success() {
            bail!(
                "`scriptorium {}` failed ({}): {}",
                args.first().copied().unwrap_or_default(),
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out)
    }

    /// Runs (exit 0 required) and parses stdout as JSON.
    fn json(&self, args: &[&str]) -> anyhow::Result<Value> {
        let out = self.run_ok(args)?;
        serde_json::from_slice(&out.stdout)
            .with_context(|| format!("`scriptorium {}` printed no JSON", args.join(" ")))
    }
}

/// One `scriptorium write --session` run.
#[derive(Debug)]
struct SessionRun {
    session: String,
    turns: usize,
    seconds: f64,
    /// The installed batches: (conversation tokens, repaired).
    batches: Vec<(u64, bool)>,
    /// The failure's reason code.
    failure: Option<String>,
    usage: Usage,
}

/// What the model used, as far as the write result says.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Usage {
    total_tokens: Option<u64>,
    cost_usd: Option<f64>,
}

impl Usage {
    /// `usage` of a write result's object: `{total_tokens, cost_usd, …}`.
    /// A model run uses tokens: 0 is a writer that reported none (journal, scripted, a command
    /// without a usage report), unknown rather than free.
    fn of(value: &Value) -> Usage {
        let usage = &value["usage"];
        let total_tokens = usage["total_tokens"].as_u64().filter(|t| *t > 0);
        Usage { total_tokens, cost_usd: total_tokens.and(usage["cost_usd"].as_f64()) }
    }

    /// Both known: the sum; one known: unknown (a part of a figure is no figure).
    fn add(self, other: Usage) -> Usage {
        let sum_u = |a: Option<u64>, b: Option<u64>| Some(a? + b?);
        let sum_f = |a: Option<f64>, b: Option<f64>| Some(a? + b?);
        Usage {
            total_tokens: sum_u(self.total_tokens, other.total_tokens),
            cost_usd: sum_f(self.cost_usd, other.cost_usd),
        }
    }
}

/// The usage of one session's write (`doc`: the whole `write --json`, `session`: its entry):
/// the write's own (every model run, a failed session's included; the harness writes one
/// session per process), else the session's, else the batches' when every one reports it, else
/// unknown.
fn session_usage(doc: &Value, session: &Value) -> Usage {
    for usage in [Usage::of(doc), Usage::of(session)] {
        if usage.total_tokens.is_some() {
            return usage;
        }
    }
    let batches = session["batches"].as_array().map(Vec::as_slice).unwrap_or_default();
    let per_batch: Vec<Usage> = batches.iter().map(Usage::of).collect();
    if !per_batch.is_empty() && per_batch.iter().all(|u| u.total_tokens.is_some()) {
        let first = per_batch[0];
        return per_batch[1..].iter().fold(first, |acc, u| acc.add(*u));
    }
    Usage::default()
}

/// Reads one session's entry of `write --json`.
fn session_run(
    session: &str,
    turns: usize,
    seconds: f64,
    doc: &Value,
) -> anyhow::Result<SessionRun> {
    let entry = doc["sessions"]
        .as_array()
        .and_then(|all| all.iter().find(|s| s["session"] == session))
        .with_context(|| format!("`write --json` has no entry for {session}: {doc}"))?;
    let batches = entry["batches"]
        .as_array()
        .map(|all| {
            all.iter()
                .filter(|b| b["recovered"] != true)
                .map(|b| (b["tokens"].as_u64().unwrap_or(0), b["repaired"] == true))
                .collect()
        })
        .unwrap_or_default();
    let failure = (entry["ok"] != true)
        .then(|| entry["error"]["reason_code"].as_str().unwrap_or("UNKNOWN_FAILURE").to_owned());
    Ok(SessionRun {
        session: session.to_owned(),
        turns,
        seconds,
        batches,
        failure,
        usage: session_usage(doc, entry),
    })
}

fn write_all(
    cli: &Cli,
    scratch: &Path,
    conversations: &[Conversation],
    options: &Options,
) -> anyhow::Result<Vec<SessionRun>> {
    let mut runs = Vec::new();
    let mut index = 0;
    for conversation in conversations {
        for (n, session) in conversation.sessions.iter().enumerate() {
            let script = match options.model {
                ModelSpec::Scripted => {
                    let steps = locomo::harness_script(session, n == 0, Plan::of(index));
                    let path = scratch.join(format!("{}.script.json", session.id));
                    std::fs::write(&path, serde_json::to_string(&steps)?)?;
                    Some(path)
                }
                _ => None,
            };
            let mut args: Vec<String> =
                ["write", "--session", &session.id, "--force", "--json"].map(str::to_owned).into();
            args.extend(options.model.write_args(script.as_deref()));
            args.extend(options.write_extra.iter().cloned());
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            let started = Instant::now();
            let out = cli.command(&refs).output().context("starting scriptorium write")?;
            let seconds = started.elapsed().as_secs_f64();
            let doc: Value = serde_json::from_slice(&out.stdout).with_context(|| {
                format!(
                    "`scriptorium write --session {}` ({}) printed no JSON: {}",
                    session.id,
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                )
            })?;
            let run = session_run(&session.id, session.turns.len(), seconds, &doc)?;
            eprintln!(
                "  {}: {} batch(es){} in {seconds:.1} s",
                run.session,
                run.batches.len(),
                run.failure.as_deref().map(|c| format!(", failed {c}")).unwrap_or_default()
            );
            runs.push(run);
            index += 1;
        }
    }
    Ok(runs)
}

/// Evidence recall over the slice's questions.
#[derive(Debug, Default)]
struct Recall {
    questions: usize,
    skipped: usize,
    any: usize,
    all: usize,
}

fn recall(cli: &Cli, conversations: &[Conversation]) -> anyhow::Result<Recall> {
    let mut recall = Recall::default();
    let top_k = TOP_K.to_string();
    for conversation in conversations {
        recall.skipped += conversation.questions_skipped;
        for question in &conversation.questions {
            let doc = cli.json(&[
                "search",
                "--topics-only",
                "--top-k",
                &top_k,
                "--json",
                "--",
                &question.text,
            ])?;
            let cited: BTreeSet<&str> = doc["hits"]
                .as_array()
                .into_iter()
                .flatten()
                .flat_map(|hit| hit["refs"].as_array().into_iter().flatten())
                .filter_map(Value::as_str)
                .collect();
            let found = question.evidence.iter().filter(|e| cited.contains(e.as_str())).count();
            recall.questions += 1;
            recall.any += usize::from(found > 0);
            recall.all += usize::from(found == question.evidence.len());
        }
    }
    Ok(recall)
}

/// Everything measured, before it is summarised.
struct Report {
    runs: Vec<SessionRun>,
    blocks: Vec<metrics::Block>,
    topic_files: usize,
    core: Value,
    recall: Recall,
}

fn round(value: Option<f64>, places: i32) -> Value {
    let scale = 10f64.powi(places);
    value.filter(|v| v.is_finite()).map_or(Value::Null, |v| json!((v * scale).round() / scale))
}

impl Report {
    fn to_json(
        &self,
        model: &ModelSpec,
        slice: &str,
        conversations: &[Conversation],
        stamp: u64,
    ) -> Value {
        let turns: usize = conversations.iter().map(Conversation::turns).sum();
        let per_1k = |n: usize| round(metrics::share(n * 1000, turns), 1);
        let installed: Vec<(u64, bool)> =
            self.runs.iter().flat_map(|r| r.batches.iter().copied()).collect();
        let repaired = installed.iter().filter(|(_, r)| *r).count();
        let mut failures: BTreeMap<String, usize> = BTreeMap::new();
        for code in self.runs.iter().filter_map(|r| r.failure.as_ref()) {
            *failures.entry(code.clone()).or_default() += 1;
        }
        let rejected = failures.get("COMMIT_REJECTED").copied().unwrap_or(0);
        let failed: usize = failures.values().sum::<usize>() - rejected;
        // A batch attempt: each installed batch, and each failed write (one batch refused).
        let attempts: Vec<(f64, f64)> = self
            .runs
            .iter()
            .flat_map(|r| {
                let n = r.batches.len() + usize::from(r.failure.is_some());
                std::iter::repeat_n((r.seconds / n.max(1) as f64, n as f64), n)
            })
            .collect();
        let seconds: Vec<f64> = attempts.iter().map(|(s, _)| *s).collect();
        let input_tokens: Vec<f64> = installed.iter().map(|(t, _)| *t as f64).collect();
        // Model tokens per batch: over the writes that reported usage, per attempt.
        let mut model_tokens = Vec::new();
        let mut cost = Some(0.0);
        let mut usage_known = 0;
        for run in &self.runs {
            let n = run.batches.len() + usize::from(run.failure.is_some());
            if let Some(total) = run.usage.total_tokens {
                usage_known += 1;
                model_tokens.extend(std::iter::repeat_n(total as f64 / n.max(1) as f64, n));
            }
            cost = match (cost, run.usage.cost_usd) {
                (Some(sum), Some(c)) => Some(sum + c),
                _ => None,
            };
        }
        if self.runs.is_empty() {
            cost = None;
        }
        let pairs = metrics::near_duplicates(&self.blocks);
        let dup_blocks: BTreeSet<usize> = pairs.iter().flat_map(|(a, b)| [*a, *b]).collect();
        let mut noise_by_kind: BTreeMap<&str, usize> =
            [metrics::NoiseKind::Wrapper, metrics::NoiseKind::Tool, metrics::NoiseKind::Writer]
                .iter()
                .map(|k| (k.key(), 0))
                .collect();
        let mut noisy = 0;
        let mut noise_examples = Vec::new();
        for block in &self.blocks {
            let kinds = metrics::noise_in(&block.text);
            if kinds.is_empty() {
                continue;
            }
            noisy += 1;
            for kind in &kinds {
                *noise_by_kind.entry(kind.key()).or_default() += 1;
            }
            if noise_examples.len() < 5 {
                let excerpt: String = block.text.chars().take(120).collect();
                noise_examples.push(json!({
                    "block": format!("{}#^{}", block.path, block.id),
                    "kinds": kinds.iter().map(|k| k.key()).collect::<Vec<_>>(),
                    "text": excerpt,
                }));
            }
        }
        let dup_examples: Vec<Value> = pairs
            .iter()
            .take(5)
            .map(|(a, b)| {
                let name = |i: usize| format!("{}#^{}", self.blocks[i].path, self.blocks[i].id);
                json!([name(*a), name(*b)])
            })
            .collect();
        let core_blocks = self.core["rendered_block_ids"].as_array().map_or(0, Vec::len);
        let questions = self.recall.questions;
        json!({
            "unix_time": stamp,
            "model": model.slug(),
            "slice": slice,
            "conversations": conversations.len(),
            "sessions": self.runs.len(),
            "turns": turns,
            "batches": {
                "accepted": installed.len() - repaired,
                "repaired": repaired,
                "rejected": rejected,
                "failed": failed,
                "failures": failures,
            },
            "per_batch": {
                "input_tokens_mean": round(metrics::mean(&input_tokens), 0),
                "model_tokens_mean": round(metrics::mean(&model_tokens), 0),
                "model_tokens_p50": round(metrics::quantile(&model_tokens, 0.5), 0),
                "writes_with_usage": usage_known,
                "seconds_mean": round(metrics::mean(&seconds), 2),
                "seconds_p50": round(metrics::quantile(&seconds, 0.5), 2),
                "seconds_max": round(metrics::quantile(&seconds, 1.0), 2),
            },
            "cost_usd": round(cost, 4),
            "topics": {
                "files": self.topic_files,
                "blocks": self.blocks.len(),
                "files_per_1k_turns": per_1k(self.topic_files),
                "blocks_per_1k_turns": per_1k(self.blocks.len()),
            },
            "core": {
                "tokens": self.core["rendered_tokens"].as_u64().unwrap_or(0),
                "blocks": core_blocks,
            },
            "near_duplicates": {
                "measure": format!(
                    "Jaccard of word {}-shingles >= {}",
                    metrics::SHINGLE_WORDS,
                    metrics::NEAR_DUPLICATE
                ),
                "pairs": pairs.len(),
                "blocks": dup_blocks.len(),
                "share_of_blocks": round(metrics::share(dup_blocks.len(), self.blocks.len()), 4),
                "examples": dup_examples,
            },
            "noise": {
                "blocks": noisy,
                "share_of_blocks": round(metrics::share(noisy, self.blocks.len()), 4),
                "by_kind": noise_by_kind,
                "examples": noise_examples,
            },
            "recall": {
                "top_k": TOP_K,
                "questions": questions,
                "skipped_outside_slice": self.recall.skipped,
                "any": round(metrics::share(self.recall.any, questions), 4),
                "all": round(metrics::share(self.recall.all, questions), 4),
            },
            "writes": self.runs.iter().map(|r| json!({
                "session": r.session,
                "turns": r.turns,
                "seconds": round(Some(r.seconds), 2),
                "batches": r.batches.len(),
                "repaired": r.batches.iter().filter(|(_, rep)| *rep).count(),
                "failure": r.failure,
                "model_tokens": r.usage.total_tokens,
                "cost_usd": r.usage.cost_usd,
            })).collect::<Vec<_>>(),
        })
    }
}

/// A figure for the table: the number, or `?` when unknown.
fn cell(value: &Value) -> String {
    match value {
        Value::Null => "?".to_owned(),
        Value::Number(n) => n.to_string(),
        other => other.to_string(),
    }
}

fn print_table(report: &Value) {
    let share =
        |v: &Value| v.as_f64().map_or_else(|| "?".to_owned(), |s| format!("{:.1} %", s * 100.0));
    let b = &report["batches"];
    let p = &report["per_batch"];
    let t = &report["topics"];
    let d = &report["near_duplicates"];
    let n = &report["noise"];
    let r = &report["recall"];
    let rows: Vec<(&str, String)> = vec![
        ("model", cell(&report["model"]).trim_matches('"').to_owned()),
        (
            "slice",
            format!(
                "{} ({} conversations, {} sessions, {} turns)",
                report["slice"].as_str().unwrap_or_default(),
                report["conversations"],
                report["sessions"],
                report["turns"]
            ),
        ),
        (
            "batches accepted / repaired / rejected / failed",
            format!("{} / {} / {} / {}", b["accepted"], b["repaired"], b["rejected"], b["failed"]),
        ),
        ("conversation tokens per batch (mean)", cell(&p["input_tokens_mean"])),
        (
            "model tokens per batch (mean / p50)",
            format!("{} / {}", cell(&p["model_tokens_mean"]), cell(&p["model_tokens_p50"])),
        ),
        (
            "seconds per batch (mean / p50 / max)",
            format!(
                "{} / {} / {}",
                cell(&p["seconds_mean"]),
                cell(&p["seconds_p50"]),
                cell(&p["seconds_max"])
            ),
        ),
        ("cost (USD)", cell(&report["cost_usd"])),
        (
            "topic files (per 1 000 turns)",
            format!("{} ({})", t["files"], cell(&t["files_per_1k_turns"])),
        ),
        (
            "blocks (per 1 000 turns)",
            format!("{} ({})", t["blocks"], cell(&t["blocks_per_1k_turns"])),
        ),
        (
            "core tokens (blocks)",
            format!("{} ({})", report["core"]["tokens"], report["core"]["blocks"]),
        ),
        (
            "near-duplicate pairs (blocks in one)",
            format!("{} ({}, {})", d["pairs"], d["blocks"], share(&d["share_of_blocks"])),
        ),
        (
            "noise blocks (wrapper / tool / writer)",
            format!(
                "{} ({}; {} / {} / {})",
                n["blocks"],
                share(&n["share_of_blocks"]),
                n["by_kind"]["wrapper"],
                n["by_kind"]["tool"],
                n["by_kind"]["writer"]
            ),
        ),
        (
            "evidence recall@5, topics only (any / all)",
            format!("{} / {} of {} questions", share(&r["any"]), share(&r["all"]), r["questions"]),
        ),
    ];
    for (name, value) in rows {
        println!("{name:<48} {value}");
    }
}

/// The harness's self-check: the report has every figure, something was written, and — for the
/// scripted writer — exactly what its scripts plant was seen.
fn check(report: &Value, model: &ModelSpec) -> anyhow::Result<()> {
    let mut problems = Vec::new();
    for pointer in [
        "/batches/accepted",
        "/batches/repaired",
        "/batches/rejected",
        "/batches/failed",
        "/per_batch/seconds_mean",
        "/topics/files",
        "/topics/blocks",
        "/topics/blocks_per_1k_turns",
        "/core/tokens",
        "/near_duplicates/pairs",
        "/noise/blocks",
        "/recall/questions",
        "/recall/any",
        "/recall/all",
    ] {
        if report.pointer(pointer).is_none_or(Value::is_null) {
            problems.push(format!("{pointer} is missing"));
        }
    }
    let int = |pointer: &str| report.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let installed = int("/batches/accepted") + int("/batches/repaired");
    if installed == 0 {
        problems.push("no batch was installed".to_owned());
    }
    if int("/topics/blocks") == 0 {
        problems.push("no block in the topics".to_owned());
    }
    if int("/recall/questions") == 0 {
        problems.push("no question to recall".to_owned());
    }
    if *model == ModelSpec::Scripted {
        let conversations = int("/conversations");
        let expect = [
            ("/batches/repaired", 1),
            ("/batches/rejected", 1),
            ("/batches/failed", 0),
            // One planted chatter block per conversation (the rejected session is not the
            // first of one).
            ("/noise/blocks", conversations),
            ("/noise/by_kind/tool", conversations),
            ("/core/blocks", conversations),
        ];
        for (pointer, want) in expect {
            if int(pointer) != want {
                problems.push(format!("{pointer} is {}, the scripts plant {want}", int(pointer)));
            }
        }
        // Each core pin repeats its conversation's first turn verbatim.
        if int("/near_duplicates/pairs") < conversations {
            problems.push(format!(
                "{} near-duplicate pairs, the scripts plant at least {conversations}",
                int("/near_duplicates/pairs")
            ));
        }
        if report.pointer("/recall/any").and_then(Value::as_f64).is_none_or(|r| r <= 0.0) {
            problems.push("no evidence recalled from turns filed verbatim".to_owned());
        }
    }
    if !problems.is_empty() {
        bail!("writer-eval check failed:\n  {}", problems.join("\n  "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_specs_parse_and_become_write_flags() {
        assert_eq!(ModelSpec::parse("journal").unwrap(), ModelSpec::Journal);
        let command = ModelSpec::parse("command:claude -p --model haiku").unwrap();
        assert_eq!(command.slug(), "command-claude");
        assert_eq!(
            command.write_args(None),
            [
                "--model",
                "command",
                "--command",
                "claude",
                "--command-arg=-p",
                "--command-arg=--model",
                "--command-arg=haiku"
            ]
        );
        let openai = ModelSpec::parse("openai:gpt-4.1-mini").unwrap();
        assert_eq!(openai.slug(), "openai-gpt-4.1-mini");
        assert_eq!(openai.write_args(None), ["--model", "openai", "--model-name", "gpt-4.1-mini"]);
        assert_eq!(
            ModelSpec::Scripted.write_args(Some(Path::new("s.json"))),
            ["--model", "scripted", "--script", "s.json"]
        );
        for bad in ["", "gpt", "command:", "openai:", "openai: ", "ollama:llama3"] {
            assert!(ModelSpec::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_config_lends_only_its_writer_sections() {
        let toml = "[memory]\nbackend = \"local\"\n[memory.writer]\nmax_tokens_per_day = 5\n\
                    [model]\nkind = \"command\"\nname = \"haiku\"\n[sessions]\n\
                    store = \"postgres://x\"\n[sync]\nremote = \"git@h:m.git\"\n";
        assert_eq!(
            writer_sections(toml),
            "[memory.writer]\nmax_tokens_per_day = 5\n[model]\nkind = \"command\"\nname = \"haiku\"\n"
        );
        let spec = ModelSpec::parse("config:home/scriptorium.toml").unwrap();
        assert_eq!(spec, ModelSpec::Config(PathBuf::from("home/scriptorium.toml")));
        assert!(spec.write_args(None).is_empty(), "the home's own configuration decides");
        assert!(ModelSpec::parse("config:").is_err());
    }

    #[test]
    fn options_need_a_model_and_a_known_slice() {
        let args = |s: &[&str]| s.iter().map(|a| (*a).to_owned()).collect::<Vec<_>>();
        let options = parse_options(&args(&[
            "--model",
            "journal",
            "--slice",
            "small",
            "--",
            "--timeout",
            "9",
        ]))
        .unwrap();
        assert_eq!(options.slice, Slice { conversations: Some(2), sessions: Some(3) });
        assert_eq!(options.write_extra, ["--timeout", "9"]);
        assert!(parse_options(&args(&["--slice", "small"])).is_err());
        assert!(parse_options(&args(&["--model", "journal", "--slice", "tiny"])).is_err());
        assert!(parse_options(&args(&["--model", "journal", "--release", "--bin", "x"])).is_err());
        assert!(parse_options(&args(&["--model"])).is_err());
    }

    #[test]
    fn usage_is_unknown_unless_reported() {
        let none = json!({});
        let session = json!({"session": "s", "ok": true, "batches": [{"tokens": 10}]});
        assert_eq!(session_usage(&none, &session), Usage::default());
        // A writer without a model reports zeros: unknown, not free.
        let zeros = json!({"usage": {"total_tokens": 0, "cost_usd": null}});
        assert_eq!(session_usage(&zeros, &zeros), Usage::default());
        let per_batch = json!({"batches": [
            {"usage": {"total_tokens": 100, "cost_usd": 0.5}},
            {"usage": {"total_tokens": 50}},
        ]});
        assert_eq!(
            session_usage(&none, &per_batch),
            Usage { total_tokens: Some(150), cost_usd: None }
        );
        let on_session = json!({"batches": [{}], "usage": {"total_tokens": 7, "cost_usd": 0.01}});
        assert_eq!(
            session_usage(&none, &on_session),
            Usage { total_tokens: Some(7), cost_usd: Some(0.01) }
        );
        // The whole write's usage counts the failed runs the session entry cannot show.
        let doc = json!({"usage": {"total_tokens": 900, "cost_usd": 0.02}});
        let failed =
            json!({"session": "s", "ok": false, "error": {"reason_code": "COMMIT_REJECTED"}});
        assert_eq!(
            session_usage(&doc, &failed),
            Usage { total_tokens: Some(900), cost_usd: Some(0.02) }
        );
    }

    #[test]
    fn a_write_result_reads_as_batches_and_failures() {
        let doc = json!({"ok": false, "sessions": [
            {"session": "a", "ok": true, "batches": [
                {"tokens": 900, "repaired": false, "recovered": false},
                {"tokens": 300, "repaired": true, "recovered": false},
                {"tokens": 5, "repaired": false, "recovered": true},
            ]},
            {"session": "b", "ok": false, "error": {"reason_code": "COMMIT_REJECTED"}},
        ]});
        let a = session_run("a", 20, 2.0, &doc).unwrap();
        assert_eq!(a.batches, [(900, false), (300, true)], "a recovered batch was not written now");
        assert_eq!(a.failure, None);
        let b = session_run("b", 10, 1.0, &doc).unwrap();
        assert_eq!(b.failure.as_deref(), Some("COMMIT_REJECTED"));
        assert!(session_run("c", 1, 1.0, &doc).is_err());
    }

    fn report(runs: Vec<SessionRun>) -> Value {
        let block = |id: &str, text: &str| metrics::Block {
            path: "topics/people/a.md".into(),
            id: id.into(),
            text: text.into(),
        };
        let report = Report {
            runs,
            blocks: vec![
                block("a1", "Ana adopted a dog named Rex in May 2023 after a long search."),
                block("a2", "Ana adopted a dog named Rex in May 2023 after a long search!"),
                block("a3", "Tool result: 1 passed in 0.01s"),
                block("a4", "Bo paints landscapes on weekends."),
            ],
            topic_files: 2,
            core: json!({"rendered_tokens": 12, "rendered_block_ids": ["a1"]}),
            recall: Recall { questions: 4, skipped: 1, any: 3, all: 2 },
        };
        let conversation = Conversation {
            sample_id: "c".into(),
            sessions: vec![locomo::Session {
                id: "c-s1".into(),
                time: None,
                turns: (0..500)
                    .map(|i| locomo::Turn {
                        dia_id: format!("D1:{i}"),
                        speaker: "Ana".into(),
                        text: "hi".into(),
                    })
                    .collect(),
            }],
            questions: Vec::new(),
            questions_skipped: 0,
        };
        report.to_json(&ModelSpec::Scripted, "small", &[conversation], 1)
    }

    fn run(failure: Option<&str>, batches: &[(u64, bool)], total: Option<u64>) -> SessionRun {
        SessionRun {
            session: "s".into(),
            turns: 10,
            seconds: 4.0,
            batches: batches.to_vec(),
            failure: failure.map(str::to_owned),
            usage: Usage { total_tokens: total, cost_usd: None },
        }
    }

    #[test]
    fn the_report_counts_what_it_was_given() {
        let value = report(vec![
            run(None, &[(1000, false), (400, true)], Some(800)),
            run(Some("COMMIT_REJECTED"), &[], None),
            run(Some("MODEL_TIMEOUT"), &[], Some(100)),
        ]);
        assert_eq!(value["batches"]["accepted"], 1);
        assert_eq!(value["batches"]["repaired"], 1);
        assert_eq!(value["batches"]["rejected"], 1);
        assert_eq!(value["batches"]["failed"], 1);
        assert_eq!(value["batches"]["failures"]["MODEL_TIMEOUT"], 1);
        // Two batches in 4 s, then two failed writes of 4 s each.
        assert_eq!(value["per_batch"]["seconds_mean"], json!(3.0));
        assert_eq!(value["per_batch"]["seconds_max"], json!(4.0));
        assert_eq!(value["per_batch"]["input_tokens_mean"], json!(700.0));
        // 800 over two batches, 100 over one failed write; the rejected one is unknown.
        assert_eq!(value["per_batch"]["model_tokens_mean"], json!(300.0));
        assert_eq!(value["per_batch"]["writes_with_usage"], 2);
        assert_eq!(value["cost_usd"], Value::Null);
        assert_eq!(value["topics"]["blocks_per_1k_turns"], json!(8.0));
        assert_eq!(value["topics"]["files_per_1k_turns"], json!(4.0));
        assert_eq!(value["near_duplicates"]["pairs"], 1);
        assert_eq!(value["noise"]["blocks"], 1);
        assert_eq!(value["noise"]["by_kind"]["tool"], 1);
        assert_eq!(value["recall"]["any"], json!(0.75));
        assert_eq!(value["recall"]["all"], json!(0.5));
        assert_eq!(value["core"]["blocks"], 1);
    }

    #[test]
    fn the_check_fails_on_a_broken_harness() {
        let good = report(vec![
            run(None, &[(1000, false)], None),
            run(None, &[(1000, true)], None),
            run(Some("COMMIT_REJECTED"), &[], None),
        ]);
        check(&good, &ModelSpec::Scripted).unwrap();
        check(&good, &ModelSpec::Journal).unwrap();
        // Nothing written at all.
        let empty = report(vec![run(Some("COMMIT_REJECTED"), &[], None)]);
        let err = check(&empty, &ModelSpec::Journal).unwrap_err().to_string();
        assert!(err.contains("no batch was installed"), "{err}");
        // The scripted plan's repair was not seen.
        let unrepaired = report(vec![
            run(None, &[(1000, false)], None),
            run(Some("COMMIT_REJECTED"), &[], None),
        ]);
        let err = check(&unrepaired, &ModelSpec::Scripted).unwrap_err().to_string();
        assert!(err.contains("/batches/repaired is 0"), "{err}");
        let mut missing = good.clone();
        missing["recall"]["any"] = Value::Null;
        let err = check(&missing, &ModelSpec::Journal).unwrap_err().to_string();
        assert!(err.contains("/recall/any is missing"), "{err}");
    }
}

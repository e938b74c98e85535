//! The `journal` and `command` models through the real pipeline.

use std::sync::Arc;
use std::time::Duration;

use scriptorium_session_dag::{SessionId, SessionStore as _};
use scriptorium_writer::model::command::{Command, CommandConfig};
use scriptorium_writer::model::journal::Journal;
use scriptorium_writer::{FailureCode, Model, WriterConfig};

use super::{Fixture, eager, source, topic};

fn session(fx: &Fixture) {
    let long =
        format!("I keep a long diary. {}", "Today I planted beans and tomatoes. ".repeat(20));
    fx.turns(
        "s1",
        None,
        &["u1", "a1", "u2", "a2"],
        &["# I'm Dana [^x] and I live in Lyon.\n\n- really", "Hello Dana.", &long, "Lovely."],
    );
}

#[test]
fn journal_files_user_turns_deterministically() {
    let write = || {
        let fx = Fixture::new();
        session(&fx);
        let report = fx
            .writer(Arc::new(Journal), eager())
            .write(&SessionId("s1".into()), true)
            .expect("written");
        assert_eq!(report.batches.len(), 1);
        assert_eq!(report.batches[0].changed_files, ["topics/journal/2024/03-15.md"]);
        assert!(fx.pending_ids("s1", None).is_empty());
        fx.live("topics/journal/2024/03-15.md").expect("journal")
    };
    let first = write();
    assert_eq!(first, write(), "same turns, same bytes");
    assert!(first.starts_with("# Journal 2024-03-15\n\nOwner said: # I'm Dana \\[\\^x\\] and I live in Lyon. - really[^e-"), "{first}");
    assert!(
        first.contains("Today I planted beans and tomatoes. …[^e-"),
        "condensed at a sentence: {first}"
    );
    assert_eq!(
        first.matches("[^e-").count(),
        4,
        "two paragraphs, each citation and definition: {first}"
    );
    assert!(!first.contains("Hello Dana"), "assistant turns are not filed");
}

fn command(script: &str, timeout: Duration) -> Arc<dyn Model> {
    Arc::new(Command::new(CommandConfig {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        timeout,
    }))
}

#[test]
fn a_command_agent_edits_the_stage_and_is_validated_like_any_model() {
    let fx = Fixture::new();
    session(&fx);
    let note = topic("Dana", &[("Dana lives in Lyon.", &source("s1", "u1"))]);
    // The agent reads the task on stdin (checking it names the turn) and writes a topic.
    let script = format!(
        "grep -q 'openprogram/s1/u1' && mkdir -p topics/people && printf '%s' '{}' > topics/people/dana.md",
        note.replace('\'', "'\\''")
    );
    let report = fx
        .writer(command(&script, Duration::from_secs(30)), eager())
        .write(&SessionId("s1".into()), true)
        .expect("written");
    assert_eq!(report.batches[0].changed_files, ["topics/people/dana.md"]);
    assert!(fx.live("topics/people/dana.md").expect("topic").contains("Dana lives in Lyon.[^e-"));
}

#[test]
fn a_command_that_times_out_is_retryable_and_one_that_fails_is_not() {
    let fx = Fixture::new();
    session(&fx);
    let slow = fx.writer(command("sleep 5", Duration::from_millis(300)), eager());
    let failure = slow.write(&SessionId("s1".into()), true).expect_err("timeout");
    assert_eq!(failure.code, FailureCode::ModelTimeout);
    assert!(failure.is_retryable());
    let broken = fx.writer(command("echo nope >&2; exit 3", Duration::from_secs(30)), eager());
    let failure = broken.write(&SessionId("s1".into()), true).expect_err("exit 3");
    assert_eq!(failure.code, FailureCode::ModelFailureUnknown);
    assert!(!failure.is_retryable());
    assert!(failure.reason.contains("nope"), "{failure}");
    // An agent that writes something other than a topic file is rejected twice: nothing
    // installed or marked.
    let stray = fx.writer(
        command("mkdir -p topics && echo x > topics/notes.txt", Duration::from_secs(30)),
        eager(),
    );
    let failure = stray.write(&SessionId("s1".into()), true).expect_err("rejected");
    assert_eq!(failure.code, FailureCode::CommitRejected);
    assert_eq!(fx.pending_ids("s1", None), ["u1", "a1", "u2", "a2"]);
}

#[test]
fn a_command_agents_usage_is_counted_per_batch_in_the_ledger_and_against_the_budget() {
    let fx = Fixture::new();
    session(&fx);
    let note = topic("Dana", &[("Dana lives in Lyon.", &source("s1", "u1"))]);
    // Claude Code's result object, as `--output-format json` prints it.
    let result = r#"{"type":"result","subtype":"success","is_error":false,"result":"Done.",
        "total_cost_usd":0.0125,"usage":{"input_tokens":700,"cache_read_input_tokens":300,
        "cache_creation_input_tokens":0,"output_tokens":200}}"#;
    let script = format!(
        "cat > /dev/null && mkdir -p topics/people && printf '%s' '{}' > topics/people/dana.md \
         && printf '%s' '{}'",
        note.replace('\'', "'\\''"),
        result.replace('\n', " ")
    );
    let config = WriterConfig { max_tokens_per_day: Some(1_000), ..eager() };
    let writer = fx.writer(command(&script, Duration::from_secs(30)), config);
    let report = writer.write(&SessionId("s1".into()), true).expect("written");
    let usage = report.batches[0].usage;
    assert_eq!((usage.input_tokens, usage.output_tokens, usage.total_tokens), (1_000, 200, 1_200));
    assert_eq!(usage.cost_micro_usd, Some(12_500));
    assert_eq!(writer.spent(), usage);
    // The ledger holds the run; today's total is over the budget of 1 000.
    // (The fixture's clock: a day after the turns.)
    let now = time::OffsetDateTime::from_unix_timestamp(1_710_493_200 + 86_400).expect("time");
    let totals = writer.ledger().totals(now);
    assert_eq!(totals.today.total_tokens, 1_200);
    // So the next write of new turns is refused before anything runs, retryably.
    fx.turns("s1", Some("a2"), &["u3"], &["Dana sowed the beans."]);
    let failure = writer.write(&SessionId("s1".into()), true).expect_err("over the budget");
    assert_eq!(failure.code, FailureCode::WriterBudgetReached);
    assert!(failure.is_retryable());
    assert_eq!(fx.pending_ids("s1", None), ["u3"], "the turn stays pending");
    assert_eq!(writer.spent(), usage, "no model ran");
}

#[test]
fn a_command_agent_that_edits_nothing_is_writer_no_edits() {
    let fx = Fixture::new();
    session(&fx);
    let idle = fx.writer(
        command("cat > /dev/null; echo 'Nothing to do.'", Duration::from_secs(30)),
        eager(),
    );
    let failure = idle.write(&SessionId("s1".into()), true).expect_err("no edits");
    assert_eq!(failure.code, FailureCode::WriterNoEdits);
    assert!(!failure.is_retryable());
    assert!(failure.reason.contains("Nothing to do."), "what it said: {failure}");
    assert_eq!(fx.pending_ids("s1", None), ["u1", "a1", "u2", "a2"]);
    // Claude Code not logged in: its result object says so.
    let out = r#"{"type":"result","is_error":true,"api_error_status":null,"result":"Not logged in · Please run /login","usage":{"input_tokens":0,"output_tokens":0}}"#;
    let script = format!("cat > /dev/null; printf '%s' '{out}'; exit 1");
    let failure = fx
        .writer(command(&script, Duration::from_secs(30)), eager())
        .write(&SessionId("s1".into()), true)
        .expect_err("not logged in");
    assert_eq!(failure.code, FailureCode::WriterNotLoggedIn, "{failure}");
    let missing = fx.writer(
        Arc::new(Command::new(CommandConfig {
            program: "scriptorium-no-such-agent".into(),
            args: Vec::new(),
            timeout: Duration::from_secs(30),
        })),
        eager(),
    );
    let failure = missing.write(&SessionId("s1".into()), true).expect_err("missing");
    assert_eq!(failure.code, FailureCode::WriterCliMissing, "{failure}");
}

#[test]
fn journal_files_a_batch_larger_than_one_change_request() {
    let fx = Fixture::new();
    // 70 user turns: two `memory_changes` calls (64 + 6), the second replaying the first.
    let ids: Vec<String> = (0..140).map(|i| format!("m{i:03}")).collect();
    let texts: Vec<String> =
        (0..140).map(|i| format!("Fact number {i} about the garden.")).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    fx.turns("s1", None, &ids, &texts);
    let report = fx
        .writer(Arc::new(Journal), eager())
        .write(&SessionId("s1".into()), true)
        .expect("written");
    assert_eq!(report.batches.len(), 1);
    assert_eq!(report.batches[0].block_ids.len(), 70);
    let journal = fx.live("topics/journal/2024/03-15.md").expect("journal");
    assert!(journal.contains("Owner said: Fact number 138 about the garden."), "{journal}");
    assert!(fx.pending_ids("s1", None).is_empty());
}

/// A session with a project files under the project's journal, and a day that would pass the
/// file budget rolls over to the day's next part instead of failing on size.
#[test]
fn journal_files_per_project_and_rolls_a_busy_day_over() {
    let fx = Fixture::new();
    let session = SessionId("s1".into());
    // 400 user turns and their replies, a minute apart, all on 2024-03-15: ~290 000 bytes of
    // journal.
    let (mut ids, mut texts) = (Vec::new(), Vec::new());
    for turn in 0..400 {
        ids.push(format!("u{turn:03}"));
        texts.push(format!(
            "Turn {turn}: {}",
            "we weighed the raised beds against the plot. ".repeat(6)
        ));
        ids.push(format!("a{turn:03}"));
        texts.push(format!("Reply to turn {turn}."));
    }
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    fx.turns("s1", None, &ids, &texts);
    fx.store.set_project(&session, Some("/srv/code/Garden App".into())).expect("project");
    let config = WriterConfig { threshold_tokens: 1_000_000, ..eager() };
    let report = fx.writer(Arc::new(Journal), config).write(&session, true).expect("written");
    let mut files: Vec<String> =
        report.batches.iter().flat_map(|b| b.changed_files.clone()).collect();
    files.sort();
    files.dedup();
    let first = "topics/projects/garden-app/journal/2024/03-15.md";
    let second = "topics/projects/garden-app/journal/2024/03-15-2.md";
    assert_eq!(files, [second, first], "sorted");
    let (a, b) = (fx.live(first).expect("part 1"), fx.live(second).expect("part 2"));
    assert!(a.len() <= 256_000 && b.len() <= 256_000, "{} and {} bytes", a.len(), b.len());
    assert!(a.starts_with("# Garden App journal 2024-03-15\n"), "{a}");
    assert!(b.starts_with("# Garden App journal 2024-03-15 (2)\n"), "{b}");
    assert!(a.contains("Owner said: Turn 0: ") && b.contains("Owner said: Turn 399: "));
    assert!(fx.pending_ids("s1", None).is_empty());
}

/// Regression (issue 34): every project's journal was titled `Journal <day>`, so the page
/// listed them alike. A project journal names its project; a day's file titled before that
/// keeps its title (entries go under it, the file stays one section).
#[test]
fn journal_titles_project_journals_and_keeps_an_existing_title() {
    let fx = Fixture::new();
    let session = SessionId("s1".into());
    fx.turns("s1", None, &["u1", "a1"], &["We chose raised beds.", "Good choice."]);
    fx.store.set_project(&session, Some("/srv/code/Garden App".into())).expect("project");
    let writer = fx.writer(Arc::new(Journal), eager());
    writer.write(&session, true).expect("written");
    let path = "topics/projects/garden-app/journal/2024/03-15.md";
    let text = fx.live(path).expect("journal");
    assert!(text.starts_with("# Garden App journal 2024-03-15\n"), "{text}");

    let old = text.replacen("# Garden App journal", "# Journal", 1);
    std::fs::write(fx.root().join(path), old).expect("a journal titled the old way");
    fx.turns("s1", Some("a1"), &["u2"], &["We will add a compost bin."]);
    writer.write(&session, true).expect("written");
    let text = fx.live(path).expect("journal");
    assert!(text.starts_with("# Journal 2024-03-15\n"), "{text}");
    assert_eq!(text.matches("# ").count(), 1, "one heading: {text}");
    assert!(text.contains("Owner said: We will add a compost bin."), "{text}");
}

/// Identifiers no transcript should have but some do: a 5 000-character session ID and a 1 MB
/// node ID are written like any other (their source IDs are bounded), never a permanent failure.
#[test]
fn journal_writes_huge_session_and_node_ids() {
    let fx = Fixture::new();
    let session = "s".repeat(5_000);
    let node = "n".repeat(1024 * 1024);
    let reply = format!("{node}-reply");
    fx.turns(
        &session,
        None,
        &[node.as_str(), reply.as_str()],
        &["My plot is by the river.", "Noted."],
    );
    let report = fx
        .writer(Arc::new(Journal), eager())
        .write(&SessionId(session.clone()), true)
        .expect("written");
    assert_eq!(report.batches.len(), 1, "{report:?}");
    assert!(fx.pending_ids(&session, None).is_empty());
}

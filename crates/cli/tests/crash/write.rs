//! The `write` supervisor: an interrupted `scriptorium write` must neither duplicate memory nor
//! lose a marker.
//!
//! Once: a real Claude Code project (`claude-code-log/real_projects` of the test data) is
//! imported into a home and `scriptorium init` run there (the pristine home); a copy of it gets
//! one uninterrupted `scriptorium write --all --force --threshold 8000` (the journal writer, no
//! model), the reference, whose duration calibrates the kill delays.
//!
//! Then kill chains until the budget is spent: a fresh copy of the pristine home, the same
//! write, killed after a random delay (uniform over 0–120 % of the duration of a full run:
//! the reference's, adjusted by every chain that finishes without a kill, so kills land early,
//! in the middle and near the end whatever the load; SIGKILL, SIGTERM or SIGINT, which `write`
//! does not handle, unless this process ignores it), run again, and so on until a write exits
//! 0.
//!
//! After a kill, `scriptorium status --json` recovers (for one kill in eight it is itself
//! SIGKILLed at a random point first; one kill in eight is left to the next write, whose own
//! open recovers, and checked after it), and then [`check_recovered`] holds, and nothing is
//! duplicated even for a moment: every topic paragraph and every archive frame is one the
//! reference has, at most as often. The effects keep their order (archive → install → mark):
//! every turn of an installed batch is archived, and the pending turns are those of the
//! pristine home minus the installed batches', plus at most the last batch's (installed but not
//! marked: the kill fell between the two, and the next write must mark it without writing it
//! again).
//!
//! When a write finishes, every file of the memory workspace but `.git` and `.scriptorium`
//! (topics, sources, views) equals the reference byte for byte, and so do the markers: the
//! pending turns of `scriptorium status --json` and `sessions branches --json` of every
//! session. So does recall: `scriptorium search` finds what the reference finds (see
//! [`probes`]).
//!
//! `SCRIPTORIUM_CRASH_WRITE_PROJECT` names another Claude Code project of the test data.
//! `SCRIPTORIUM_CRASH_WRITE_ITERATIONS` (else `SCRIPTORIUM_CRASH_ITERATIONS`, else
//! [`DEFAULT_ITERATIONS`]) kill attempts; a chain left unfinished when the budget is spent is
//! finished without a kill and compared too.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, kill_process};
use serde_json::{Value, json};

use crate::{Outcome, Rng, check_recovered, env_number, scriptorium};

/// The Claude Code project imported, under the test data directory (another one with
/// `SCRIPTORIUM_CRASH_WRITE_PROJECT`, e.g. `codemie-code/claude`, whose long session takes
/// several batches).
const PROJECT: &str = "claude-code-log/real_projects";

/// The command from the bug report (interrupted, it used to duplicate memory).
const WRITE: [&str; 5] = ["write", "--all", "--force", "--threshold", "8000"];

/// Kill attempts when no iteration count is set (keeps the debug-build test short).
const DEFAULT_ITERATIONS: u64 = 12;

/// Runs the supervisor with the kill schedule of `seed`; not run without the test data.
pub(crate) fn run(seed: u64) -> Outcome {
    let Some(data) = scriptorium_testkit::data_dir() else {
        let why = format!(
            "test data not found at {} (set {})",
            scriptorium_testkit::data_dir_setting().display(),
            scriptorium_testkit::DATA_ENV
        );
        return if scriptorium_testkit::data_required() {
            Outcome::Failed(why)
        } else {
            Outcome::NotRun(why)
        };
    };
    let name = std::env::var("SCRIPTORIUM_CRASH_WRITE_PROJECT")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| PROJECT.to_owned());
    let project = data.join(&name);
    if !project.is_dir() {
        return Outcome::Failed(format!("{name} is missing from the test data"));
    }
    let work = match tempfile::tempdir() {
        Ok(work) => work,
        Err(e) => return Outcome::Failed(e.to_string()),
    };
    match supervise(&project, work.path(), (seed ^ 0x9e37_79b9_7f4a_7c15) | 1) {
        Ok(summary) => Outcome::Passed(summary),
        Err(err) => {
            let kept = work.keep();
            Outcome::Failed(format!("{err}\n(homes kept in {})", kept.display()))
        }
    }
}

/// What an uninterrupted write leaves.
struct Reference {
    /// Every file of the memory workspace but `.git` and `.scriptorium*`, by relative path.
    files: BTreeMap<String, Vec<u8>>,
    /// Per topic file, its paragraphs (with block IDs) and how often each occurs.
    paragraphs: BTreeMap<String, BTreeMap<String, usize>>,
    /// Per archive, its frames' source IDs.
    frames: BTreeMap<String, BTreeSet<String>>,
    /// `status --json` pending turns and `sessions branches --json` per session.
    markers: Value,
    /// What the reference recalls (see [`probes`]).
    probes: Vec<Probe>,
}

/// A recall probe: the first words of a paragraph or frame, and its ID (a block or source ID),
/// which the reference's `scriptorium search` ranks among its first three hits.
struct Probe {
    query: String,
    id: String,
}

/// The kill signals, chosen at random per kill.
const SIGNALS: [(Signal, &str); 3] =
    [(Signal::KILL, "SIGKILL"), (Signal::TERM, "SIGTERM"), (Signal::INT, "SIGINT")];

fn supervise(project: &Path, work: &Path, seed: u64) -> Result<String, String> {
    let iterations = env_number("SCRIPTORIUM_CRASH_WRITE_ITERATIONS")
        .or_else(|| env_number("SCRIPTORIUM_CRASH_ITERATIONS"))
        .unwrap_or(DEFAULT_ITERATIONS);
    let mut rng = Rng(seed);

    let pristine = work.join("pristine");
    let import =
        scriptorium(&pristine).args(["import", "claude-code"]).arg(project).output().map_err(io)?;
    if !import.status.success() {
        return Err(format!("import failed: {}", String::from_utf8_lossy(&import.stderr)));
    }
    let init = scriptorium(&pristine).arg("init").output().map_err(io)?;
    if !init.status.success() {
        return Err(format!("init failed: {}", String::from_utf8_lossy(&init.stderr)));
    }
    let before = check_recovered(&pristine).map_err(|e| format!("the pristine home: {e}"))?;

    let home = work.join("reference");
    copy_tree(&pristine, &home)?;
    let log = work.join("reference.log");
    let start = Instant::now();
    let status = write(&home, &log)?.wait().map_err(io)?;
    let duration = start.elapsed();
    if !status.success() {
        return Err(format!("the reference write failed ({status}):\n{}", read_log(&log)));
    }
    let batches = read_log(&log).lines().filter(|l| l.starts_with("  batch of ")).count();
    let reference = reference(&home)?;
    if batches < 2 || reference.markers["pending_turns"] == before["pending_turns"] {
        return Err(format!(
            "the reference write wrote {batches} batch(es) and left {} of {} turns pending",
            reference.markers["pending_turns"], before["pending_turns"]
        ));
    }

    // How long an uninterrupted write takes here: the reference's time, then adjusted by every
    // chain that finished without a kill (the load of the machine changes).
    let mut typical = duration;
    // A signal this process ignores is ignored by its children too (a shell ignores SIGINT
    // in the commands it runs in the background): it would not interrupt anything.
    let ignored = ignored_signals();
    let sendable: Vec<usize> =
        (0..SIGNALS.len()).filter(|&i| ignored & (1 << (SIGNALS[i].0.as_raw() - 1)) == 0).collect();
    let mut by_signal = [0usize; 3];
    let mut by_third = [0usize; 4];
    let mut by_state = [0usize; 3];
    let (mut left_to_next, mut recoveries_killed) = (0, 0);
    // How long the checks after a kill take (recovery is the first of them).
    let mut check_time = Duration::from_millis(50);
    let (mut chains, mut kills_in_chain, mut finished_after_kill) = (0, 0, 0);
    let mut chain_home = None;
    for attempt in 0..iterations {
        let home = match &chain_home {
            Some(home) => PathBuf::clone(home),
            None => {
                let home = work.join(format!("chain-{chains}"));
                copy_tree(&pristine, &home)?;
                chain_home = Some(home.clone());
                kills_in_chain = 0;
                home
            }
        };
        let log = home.join("write.log");
        let delay = Duration::from_micros(rng.below(typical.as_micros() as u64 * 6 / 5));
        let which = sendable[rng.below(sendable.len() as u64 - 1) as usize];
        let (signal, signal_name) = SIGNALS[which];
        let at = format!(
            "chain {chains}, attempt {attempt}: {signal_name} after {} ms of a full run's {} ms",
            delay.as_millis(),
            typical.as_millis()
        );
        let start = Instant::now();
        let mut child = write(&home, &log)?;
        std::thread::sleep(delay);
        // The child is not reaped before `wait`, so its PID cannot have been reused.
        kill_process(Pid::from_child(&child), signal).map_err(|e| format!("{at}: kill: {e}"))?;
        let status = child.wait().map_err(io)?;
        let elapsed = start.elapsed();
        // Killed by the signal, or (should `write` ever handle SIGTERM or SIGINT) exited by
        // the convention for it, 128 + the signal's number.
        let interrupted = status.signal().is_some()
            || (which > 0 && status.code() == Some(128 + signal.as_raw()));
        if interrupted {
            by_signal[which] += 1;
            by_third[(delay.as_micros() * 3 / typical.as_micros().max(1)).min(3) as usize] += 1;
            kills_in_chain += 1;
        }
        // Who recovers from the kill: mostly the check's `status --json`; one kill in eight
        // first gets a `status --json` that is killed itself (recovery interrupted), and one
        // in eight is left to the next write (its own open recovers; checked after it).
        let recovery = rng.below(7);
        if interrupted && recovery == 7 {
            left_to_next += 1;
            continue;
        }
        let at = if interrupted && recovery == 6 {
            let killed_after = kill_recovery(&home, rng.below(check_time.as_micros() as u64))?;
            recoveries_killed += 1;
            format!("{at}, then recovery killed after {} ms", killed_after.as_millis())
        } else {
            at
        };
        let checking = Instant::now();
        let recovered = check_recovered(&home).map_err(|e| format!("{at}: {e}"))?;
        check_time = (check_time + checking.elapsed()) / 2;
        let now = snapshot(&home.join("memory"))?;
        check_no_duplicates(&now, &reference).map_err(|e| format!("{at}: {e}"))?;
        let state = effects(&home.join("memory"), &now, &recovered, &before)
            .map_err(|e| format!("{at}: {e}"))?;
        if interrupted {
            by_state[state as usize] += 1;
            continue;
        }
        if !status.success() {
            return Err(format!("{at}: the write failed ({status}):\n{}", read_log(&log)));
        }
        compare(&home, &now, &recovered, &reference)
            .map_err(|e| format!("{at}: after {kills_in_chain} kill(s): {e}"))?;
        if kills_in_chain > 0 {
            finished_after_kill += 1;
        } else {
            typical = (typical + elapsed) / 2;
        }
        chains += 1;
        chain_home = None;
        std::fs::remove_dir_all(&home).map_err(io)?;
    }
    if let Some(home) = chain_home {
        // The budget ran out mid-chain: finish it uninterrupted.
        let log = home.join("write.log");
        let status = write(&home, &log)?.wait().map_err(io)?;
        if !status.success() {
            return Err(format!(
                "chain {chains}, the last write failed ({status}):\n{}",
                read_log(&log)
            ));
        }
        let recovered =
            check_recovered(&home).map_err(|e| format!("chain {chains}, the last write: {e}"))?;
        let now = snapshot(&home.join("memory"))?;
        compare(&home, &now, &recovered, &reference)
            .map_err(|e| format!("chain {chains}, after {kills_in_chain} kill(s): {e}"))?;
        if kills_in_chain > 0 {
            finished_after_kill += 1;
        }
        chains += 1;
    }
    let kills: usize = by_signal.iter().sum();
    let not_sent: Vec<&str> =
        (0..SIGNALS.len()).filter(|i| !sendable.contains(i)).map(|i| SIGNALS[i].1).collect();
    let not_sent = if not_sent.is_empty() {
        String::new()
    } else {
        format!(" ({} not sent: ignored by this process)", not_sent.join(", "))
    };
    Ok(format!(
        "{kills} kills in {iterations} attempts ({} SIGKILL, {} SIGTERM, {} SIGINT{not_sent}; \
         {}/{}/{} in the first/second/last third of a full run, {} past it; of the kills \
         checked at once {} left the effects between batches, {} with a batch archived but not \
         installed, {} installed but not marked; {recoveries_killed} recoveries killed, \
         {left_to_next} kills left to the next write to recover) over {chains} chains, \
         {finished_after_kill} finished after kills; the reference wrote {batches} batches, {} \
         topic files, {} frames, {} recall probes in {} ms (a full run at the end: {} ms)",
        by_signal[0],
        by_signal[1],
        by_signal[2],
        by_third[0],
        by_third[1],
        by_third[2],
        by_third[3],
        by_state[State::Between as usize],
        by_state[State::Archived as usize],
        by_state[State::Unmarked as usize],
        reference.paragraphs.len(),
        reference.frames.values().map(BTreeSet::len).sum::<usize>(),
        reference.probes.len(),
        duration.as_millis(),
        typical.as_millis(),
    ))
}

fn io(e: std::io::Error) -> String {
    e.to_string()
}

/// The signals this process ignores (the `SigIgn` mask of `/proc/self/status`; bit n-1 is
/// signal n).
fn ignored_signals() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
            u64::from_str_radix(mask.trim(), 16).ok()
        })
        .unwrap_or(0)
}

/// Kills a `scriptorium status --json` (which recovers and catches git up) on `home` after
/// `delay_us` microseconds, unless it finished before; returns how long it ran.
fn kill_recovery(home: &Path, delay_us: u64) -> Result<Duration, String> {
    let start = Instant::now();
    let mut child = scriptorium(home)
        .args(["status", "--json"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("spawn status: {e}"))?;
    std::thread::sleep(Duration::from_micros(delay_us));
    kill_process(Pid::from_child(&child), Signal::KILL).map_err(|e| format!("kill: {e}"))?;
    child.wait().map_err(io)?;
    Ok(start.elapsed())
}

/// Starts the write on `home`, its stdout and stderr into `log` (a file, so a full pipe never
/// stalls it).
fn write(home: &Path, log: &Path) -> Result<std::process::Child, String> {
    let out = File::create(log).map_err(io)?;
    let err = out.try_clone().map_err(io)?;
    scriptorium(home)
        .args(WRITE)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .map_err(|e| format!("spawn write: {e}"))
}

fn read_log(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// Copies a home (directories and regular files; anything else is an error).
fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(io)?;
    for entry in std::fs::read_dir(from).map_err(io)? {
        let entry = entry.map_err(io)?;
        let kind = entry.file_type().map_err(io)?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).map_err(io)?;
        } else {
            return Err(format!("unexpected file kind at {}", entry.path().display()));
        }
    }
    Ok(())
}

/// Every file of the memory workspace but the internal ones (`.git`, `.scriptorium*`,
/// `.nativemem*` at the top), by relative path.
fn snapshot(memory: &Path) -> Result<BTreeMap<String, Vec<u8>>, String> {
    fn walk(dir: &Path, rel: &str, out: &mut BTreeMap<String, Vec<u8>>) -> Result<(), String> {
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let entry = entry.map_err(io)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if rel.is_empty()
                && (name == ".git"
                    || name.starts_with(".scriptorium")
                    || name.starts_with(".nativemem"))
            {
                continue;
            }
            let path = if rel.is_empty() { name } else { format!("{rel}/{name}") };
            let kind = entry.file_type().map_err(io)?;
            if kind.is_dir() {
                walk(&entry.path(), &path, out)?;
            } else {
                out.insert(path, std::fs::read(entry.path()).map_err(io)?);
            }
        }
        Ok(())
    }
    let mut out = BTreeMap::new();
    walk(memory, "", &mut out)?;
    Ok(out)
}

/// The paragraphs of a topic file (lines ending in a block ID) and how often each occurs.
fn paragraphs(text: &str) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let is_block = line.rsplit_once(" ^").is_some_and(|(_, id)| {
            id.len() == 8 && id.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        });
        if is_block {
            *out.entry(line.to_owned()).or_insert(0) += 1;
        }
    }
    out
}

/// The source IDs of an archive's frames, in order (a frame is an anchor line followed by its
/// `source-id` line).
fn frame_ids(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_anchor = false;
    for line in text.lines() {
        if after_anchor
            && let Some(id) =
                line.strip_prefix("<!-- source-id:").and_then(|l| l.strip_suffix(" -->"))
        {
            out.push(id.to_owned());
        }
        after_anchor = line.starts_with("<a id=\"source-");
    }
    out
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The pending turns and every session's branches with their pending counts.
fn markers(home: &Path, status: &Value) -> Result<Value, String> {
    let json = |args: &[&str]| -> Result<Value, String> {
        let out = scriptorium(home).args(args).output().map_err(io)?;
        if !out.status.success() {
            return Err(format!("{args:?} failed: {}", String::from_utf8_lossy(&out.stderr)));
        }
        serde_json::from_slice(&out.stdout).map_err(|e| format!("{args:?}: {e}"))
    };
    let list = json(&["sessions", "--json", "list"])?;
    let mut sessions = BTreeMap::new();
    for session in list["sessions"].as_array().into_iter().flatten() {
        let id = session["id"].as_str().unwrap_or_default();
        sessions.insert(id.to_owned(), json(&["sessions", "--json", "branches", id])?);
    }
    Ok(json!({ "pending_turns": status["pending_turns"], "sessions": sessions }))
}

fn reference(home: &Path) -> Result<Reference, String> {
    let status = check_recovered(home).map_err(|e| format!("the reference: {e}"))?;
    let files = snapshot(&home.join("memory"))?;
    let mut paragraphs_by_file = BTreeMap::new();
    let mut frames = BTreeMap::new();
    for (path, bytes) in &files {
        if path.starts_with("topics/") {
            paragraphs_by_file.insert(path.clone(), paragraphs(&text(bytes)));
        } else if path.starts_with("sources/") {
            let ids = frame_ids(&text(bytes));
            let set: BTreeSet<String> = ids.iter().cloned().collect();
            if set.len() != ids.len() {
                return Err(format!("the reference archive {path} repeats a frame"));
            }
            frames.insert(path.clone(), set);
        }
    }
    let markers = markers(home, &status)?;
    let mut kept = Vec::new();
    for probe in probes(&files) {
        if recalled(home, &probe.query)?.iter().take(3).any(|id| *id == probe.id) {
            kept.push(probe);
        }
    }
    // At least one probe per archive, or the recall check would be void.
    if kept.len() < frames.len() {
        return Err(format!("the reference recalls only {} of its probes", kept.len()));
    }
    Ok(Reference { files, paragraphs: paragraphs_by_file, frames, markers, probes: kept })
}

/// Recall probes: the first and the last frame of every archive and the first and the last
/// paragraph of every topic file, each queried by its first twelve words. Recall is compared
/// only when a chain finishes: a search after a kill would bring the index up to date itself
/// and hide what the next write leaves.
fn probes(files: &BTreeMap<String, Vec<u8>>) -> Vec<Probe> {
    let words = |text: &str| text.split_whitespace().take(12).collect::<Vec<_>>().join(" ");
    let mut out = Vec::new();
    for (path, bytes) in files {
        let text = text(bytes);
        let found: Vec<(String, String)> = if path.starts_with("sources/") {
            frame_bodies(&text)
        } else if path.starts_with("topics/") {
            text.lines()
                .filter_map(|line| {
                    let (body, id) = line.rsplit_once(" ^")?;
                    let body: String =
                        body.split("[^").map(|p| p.split_once(']').map_or(p, |(_, r)| r)).collect();
                    (id.len() == 8).then(|| (id.to_owned(), body))
                })
                .collect()
        } else {
            continue;
        };
        for (id, body) in found.first().into_iter().chain(found.last().filter(|_| found.len() > 1))
        {
            out.push(Probe { query: words(body), id: id.clone() });
        }
    }
    out
}

/// Each frame's source ID and the first line of its record, after the speaker label.
fn frame_bodies(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let (mut id, mut next_is_body) = (None, false);
    for line in text.lines() {
        if next_is_body {
            let body = line.split_once("): ").map_or(line, |(_, body)| body);
            if let Some(id) = id.take() {
                out.push((id, body.to_owned()));
            }
            next_is_body = false;
        } else if let Some(found) =
            line.strip_prefix("<!-- source-id:").and_then(|l| l.strip_suffix(" -->"))
        {
            id = Some(found.to_owned());
        } else {
            next_is_body = line.starts_with("<!-- record-lines:");
        }
    }
    out
}

/// The IDs `scriptorium search --json --top-k 10` returns for `query`, best first.
fn recalled(home: &Path, query: &str) -> Result<Vec<String>, String> {
    let out = scriptorium(home)
        .args(["search", "--json", "--top-k", "10", "--"])
        .arg(query)
        .output()
        .map_err(io)?;
    if !out.status.success() {
        return Err(format!("search {query:?} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    let hits: Value =
        serde_json::from_slice(&out.stdout).map_err(|e| format!("search {query:?}: {e}"))?;
    Ok(hits["hits"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|hit| hit["id"].as_str().map(str::to_owned))
        .collect())
}

/// Where a kill left the write's effects (archive → install → mark).
#[derive(Clone, Copy)]
enum State {
    /// Every installed batch is marked, and no frame is archived beyond them.
    Between,
    /// A batch is archived but not installed (the next write installs it).
    Archived,
    /// The last installed batch is not marked (the next write marks it only).
    Unmarked,
}

/// Checks that the effects keep their order and says where the kill left them. The installed
/// batches come from the revision record (`.scriptorium/revision`, `batches`: see `crates/txn`).
fn effects(
    memory: &Path,
    files: &BTreeMap<String, Vec<u8>>,
    status: &Value,
    pristine: &Value,
) -> Result<State, String> {
    let record = std::fs::read(memory.join(".scriptorium/revision")).map_err(io)?;
    let record: Value =
        serde_json::from_slice(&record).map_err(|e| format!("the revision record: {e}"))?;
    let counts: Vec<u64> = record["batches"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|b| b["count"].as_u64().unwrap_or_default())
        .collect();
    let installed: u64 = counts.iter().sum();
    let last = counts.last().copied().unwrap_or(0);
    let frames = files
        .iter()
        .filter(|(path, _)| path.starts_with("sources/"))
        .map(|(_, bytes)| frame_ids(&text(bytes)).len() as u64)
        .sum::<u64>();
    let (Some(pending), Some(before)) =
        (status["pending_turns"].as_u64(), pristine["pending_turns"].as_u64())
    else {
        return Err(format!("no pending turns in the status: {status}"));
    };
    if frames < installed {
        return Err(format!("{installed} turns installed, only {frames} archived"));
    }
    if pending + installed == before {
        Ok(if frames > installed { State::Archived } else { State::Between })
    } else if last > 0 && pending + installed == before + last {
        Ok(State::Unmarked)
    } else {
        Err(format!(
            "{pending} of {before} turns pending with {installed} installed (the last batch \
             {last}): a turn marked but not installed, or more than one batch unmarked"
        ))
    }
}

/// Nothing is ever duplicated, not even mid-chain: every paragraph of a topic file occurs at
/// most as often as in the reference, every frame is one of the reference's archive and occurs
/// once.
fn check_no_duplicates(
    files: &BTreeMap<String, Vec<u8>>,
    reference: &Reference,
) -> Result<(), String> {
    for (path, bytes) in files {
        if path.starts_with("topics/") {
            let empty = BTreeMap::new();
            let allowed = reference.paragraphs.get(path).unwrap_or(&empty);
            for (paragraph, n) in paragraphs(&text(bytes)) {
                let max = allowed.get(&paragraph).copied().unwrap_or(0);
                if n > max {
                    return Err(format!(
                        "{path} holds {n} time(s) a paragraph the reference holds {max} time(s): \
                         {paragraph}"
                    ));
                }
            }
        } else if path.starts_with("sources/") {
            let mut seen = BTreeSet::new();
            let empty = BTreeSet::new();
            let allowed = reference.frames.get(path).unwrap_or(&empty);
            for id in frame_ids(&text(bytes)) {
                if !allowed.contains(&id) {
                    return Err(format!("{path} archives a frame the reference has not: {id}"));
                }
                if !seen.insert(id.clone()) {
                    return Err(format!("{path} archives a frame twice: {id}"));
                }
            }
        }
    }
    Ok(())
}

/// A finished chain equals the reference: every file byte for byte, and the markers.
fn compare(
    home: &Path,
    files: &BTreeMap<String, Vec<u8>>,
    status: &Value,
    reference: &Reference,
) -> Result<(), String> {
    let mut problems = Vec::new();
    for path in reference.files.keys().filter(|p| !files.contains_key(*p)) {
        problems.push(format!("{path}: missing"));
    }
    for (path, bytes) in files {
        let Some(expected) = reference.files.get(path) else {
            problems.push(format!("{path}: not in the reference"));
            continue;
        };
        if bytes == expected {
            continue;
        }
        let (got, want) = (text(bytes), text(expected));
        let line = got
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| got.lines().count().min(want.lines().count()))
            + 1;
        let detail = if path.starts_with("topics/") {
            let count = |t: &str| paragraphs(t).values().sum::<usize>();
            format!("{} paragraphs, the reference {}", count(&got), count(&want))
        } else if path.starts_with("sources/") {
            format!("{} frames, the reference {}", frame_ids(&got).len(), frame_ids(&want).len())
        } else {
            format!("{} bytes, the reference {}", bytes.len(), expected.len())
        };
        problems.push(format!("{path}: differs from line {line} on: {detail}"));
    }
    let markers = markers(home, status)?;
    if markers != reference.markers {
        problems
            .push(format!("markers differ: {markers:#}\nthe reference's: {:#}", reference.markers));
    }
    for probe in &reference.probes {
        if !recalled(home, &probe.query)?.contains(&probe.id) {
            problems.push(format!(
                "{} is not recalled for {:?} (the reference ranks it in its first three)",
                probe.id, probe.query
            ));
        }
    }
    if problems.is_empty() { Ok(()) } else { Err(problems.join("\n")) }
}

//! What the process benches share: running the `scriptorium` binary and its hooks, and the CPU
//! time and peak memory of a child process.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

/// Runs `scriptorium --home home args…`; it must succeed.
pub(crate) fn scriptorium(home: &Path, args: &[&str]) -> Output {
    let out =
        clean(Command::new(env!("CARGO_BIN_EXE_scriptorium")).arg("--home").arg(home).args(args))
            .output()
            .expect("the scriptorium binary runs");
    assert!(out.status.success(), "scriptorium {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

/// Runs `scriptorium hook claude-code <event>` with `payload` on stdin; it must succeed and
/// print nothing on stderr.
pub(crate) fn hook(home: &Path, event: &str, payload: &[u8]) -> Output {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_scriptorium"))
        .arg("--home")
        .arg(home)
        .args(["hook", "claude-code", event])
        .env_remove("SCRIPTORIUM_HOME")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the scriptorium binary runs");
    child.stdin.take().expect("stdin").write_all(payload).expect("the payload is sent");
    let out = child.wait_with_output().expect("the hook ends");
    assert!(out.status.success() && out.stderr.is_empty(), "hook {event}: {out:?}");
    out
}

/// Runs the `UserPromptSubmit` hook (the per-turn recall an agent waits for) with `prompt`;
/// it must inject a recall.
pub(crate) fn prompt_submit(home: &Path, prompt: &str) -> Output {
    let payload = serde_json::json!({
        "session_id": "bench", "hook_event_name": "UserPromptSubmit", "prompt": prompt,
    })
    .to_string();
    let out = hook(home, "UserPromptSubmit", payload.as_bytes());
    assert!(!out.stdout.is_empty(), "a recall was injected");
    out
}

/// `scriptorium`'s environment cleared of the variables Scriptorium reads from the caller's.
fn clean(command: &mut Command) -> &mut Command {
    command.env_remove("SCRIPTORIUM_HOME").env_remove("XDG_DATA_HOME").env_remove("SCRIPTORIUM_LOG")
}

/// CPU time (user + system) of every waited-for child so far.
pub(crate) fn children_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let time = |t: nix::sys::time::TimeVal| {
        Duration::from_secs(t.tv_sec() as u64) + Duration::from_micros(t.tv_usec() as u64)
    };
    time(usage.user_time()) + time(usage.system_time())
}

/// The environment variable that turns a bench binary into a probe (see [`probed`]).
const PROBE: &str = "SCRIPTORIUM_BENCH_PROBE";

/// What one probed child cost.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Cost {
    /// User + system CPU time.
    pub(crate) cpu: Duration,
    /// Peak resident set size, in bytes.
    pub(crate) peak_rss: u64,
}

/// Call first in a bench's `main`: when this process was started by [`probed`], runs the
/// command it was given as its only child, writes that child's CPU time and peak RSS to the
/// file [`PROBE`] names, exits with the child's code and never returns.
///
/// Why a probe process: `getrusage(RUSAGE_CHILDREN)`'s `ru_maxrss` is the largest of *all*
/// children a process waited for, so a bench that also ran a `rebuild` would report that; a
/// fresh process whose only child is the measured command reports that command alone.
pub(crate) fn serve_probe() {
    let Some(report) = std::env::var_os(PROBE) else { return };
    let mut args = std::env::args_os().skip(1);
    let program = args.next().expect("a probed program");
    let status = Command::new(program).args(args).env_remove(PROBE).status().expect("it runs");
    use nix::sys::resource::{UsageWho, getrusage};
    let usage = getrusage(UsageWho::RUSAGE_CHILDREN).expect("getrusage");
    let time = |t: nix::sys::time::TimeVal| t.tv_sec() as u128 * 1_000_000 + t.tv_usec() as u128;
    let cpu_us = time(usage.user_time()) + time(usage.system_time());
    // Linux reports kilobytes.
    let rss = usage.max_rss() as u64 * 1024;
    std::fs::write(report, format!("{cpu_us} {rss}\n")).expect("write the probe's report");
    std::process::exit(status.code().unwrap_or(1));
}

/// Runs `scriptorium --home home args…` as the only child of a probe (this bench binary
/// started again; its `main` must call [`serve_probe`] first) and returns its output and its
/// cost; it must succeed.
pub(crate) fn probed(home: &Path, args: &[&str]) -> (Output, Cost) {
    let report = home.with_extension("probe");
    let mut probe = Command::new(std::env::current_exe().expect("this bench's binary"));
    probe.env(PROBE, &report).arg(env!("CARGO_BIN_EXE_scriptorium")).arg("--home").arg(home);
    let out = clean(probe.args(args)).output().expect("the probe runs");
    assert!(out.status.success(), "scriptorium {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    let text = std::fs::read_to_string(&report).expect("the probe's report");
    let mut fields = text.split_whitespace().map(|f| f.parse::<u64>().expect("a number"));
    let cpu = Duration::from_micros(fields.next().expect("cpu"));
    let peak_rss = fields.next().expect("rss");
    (out, Cost { cpu, peak_rss })
}

/// Figures criterion does not measure (peak memory), for `cargo xtask bench`.
///
/// The file format (read by `xtask/src/bench.rs`, `extra_figures`): when `cargo xtask bench`
/// runs the suites it sets `SCRIPTORIUM_BENCH_FIGURES` to a directory; a bench writes one file
/// `<name>.json` there holding `{"figures": [{"id": "<group>/<name>", "unit": "bytes",
/// "values": [<number>, …]}]}`, every value one measurement. Without the variable (a plain
/// `cargo bench`) the figures are only printed.
#[derive(Default)]
pub(crate) struct ExtraFigures {
    figures: Vec<(String, &'static str, Vec<u64>)>,
}

impl ExtraFigures {
    /// Records one measurement of `id` in `unit`.
    pub(crate) fn record(&mut self, id: &str, unit: &'static str, value: u64) {
        match self.figures.iter_mut().find(|(known, _, _)| known == id) {
            Some((_, _, values)) => values.push(value),
            None => self.figures.push((id.to_owned(), unit, vec![value])),
        }
    }

    /// Prints the figures and writes them as `<name>.json` (see the type's docs).
    pub(crate) fn save(&self, name: &str) {
        let mut figures = Vec::new();
        for (id, unit, values) in &self.figures {
            let mut sorted = values.clone();
            sorted.sort_unstable();
            let median = sorted.get(sorted.len() / 2).copied().unwrap_or_default();
            eprintln!("{id}: median {median} {unit} over {} measurements", values.len());
            figures.push(serde_json::json!({"id": id, "unit": unit, "values": values}));
        }
        if let Some(dir) = std::env::var_os("SCRIPTORIUM_BENCH_FIGURES") {
            let dir = std::path::PathBuf::from(dir);
            std::fs::create_dir_all(&dir).expect("the figures directory");
            let text = serde_json::json!({ "figures": figures }).to_string();
            std::fs::write(dir.join(format!("{name}.json")), text).expect("write the figures");
        }
    }
}

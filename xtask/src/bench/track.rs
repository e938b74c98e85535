//! Benchmark tracking: each `cargo xtask bench` compares its summary with the previous one of the
//! same machine; `--compare A B` compares two saved summaries; `--history PREFIX` prints, per
//! benchmark whose id starts with PREFIX, its median run after run.
//!
//! Key decision — what counts as a regression. A summary keeps, per benchmark, criterion's 95 %
//! confidence interval of the median (`median_ci_ns`, from its bootstrap). A benchmark regressed
//! when both hold: the intervals of the two runs are disjoint, the new one above the old
//! (criterion's own measure of noise: the difference is not explained by the samples' spread),
//! and the medians' ratio is at least [`MIN_CHANGE`] (a floor: on a shared, loaded 2-core
//! machine, run-to-run drift of a few percent is real but not the code's doing, and the
//! within-run interval does not see it). An improvement is the mirror image. A summary written
//! before the interval was kept (or a figure criterion does not measure, such as peak memory)
//! falls back to the spread the summary has: the new median beyond the old run's p99 (its
//! `max`, for those figures) and the same floor. Regressions are flagged, never fatal: only a
//! budget miss fails the run.
//!
//! The machine is identified by its host name, CPU model and core count
//! ([`Machine::current`]); summaries of another machine are never compared automatically
//! (`--compare` says when the two differ).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use super::human_ns;

/// The smallest change of the median flagged, as a ratio (5 %).
pub(crate) const MIN_CHANGE: f64 = 1.05;

/// What identifies a machine: figures of two machines are not comparable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Machine {
    pub(crate) hostname: String,
    pub(crate) cpu: String,
    pub(crate) cores: usize,
}

impl Machine {
    /// This machine: the kernel's host name, `/proc/cpuinfo`'s first `model name` and the
    /// available parallelism (unknown parts read `unknown`, 0).
    pub(crate) fn current() -> Machine {
        let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .or_else(|_| std::fs::read_to_string("/etc/hostname"))
            .map(|h| h.trim().to_owned())
            .ok()
            .filter(|h| !h.is_empty())
            .or_else(|| std::env::var("HOSTNAME").ok())
            .unwrap_or_else(|| "unknown".to_owned());
        let cpu = std::fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|info| cpu_model(&info))
            .unwrap_or_else(|| "unknown".to_owned());
        let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
        Machine { hostname, cpu, cores }
    }

    /// The summary's `machine` object.
    pub(crate) fn to_json(&self) -> Value {
        json!({"hostname": self.hostname, "cpu": self.cpu, "cores": self.cores})
    }

    fn from_json(value: &Value) -> Option<Machine> {
        Some(Machine {
            hostname: value["hostname"].as_str()?.to_owned(),
            cpu: value["cpu"].as_str()?.to_owned(),
            cores: usize::try_from(value["cores"].as_u64()?).ok()?,
        })
    }

    fn label(&self) -> String {
        format!("{} ({}, {} cores)", self.hostname, self.cpu, self.cores)
    }
}

/// The first `model name` (x86) or `Model`/`CPU part` line's value of `/proc/cpuinfo`.
fn cpu_model(info: &str) -> Option<String> {
    ["model name", "Model", "cpu model", "CPU part"].iter().find_map(|key| {
        info.lines().find_map(|line| {
            let (name, value) = line.split_once(':')?;
            (name.trim() == *key && !value.trim().is_empty()).then(|| value.trim().to_owned())
        })
    })
}

/// One benchmark of a summary, as the comparison reads it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Row {
    pub(crate) id: String,
    /// The median (nanoseconds; a figure criterion does not measure: in its own unit).
    pub(crate) median: f64,
    /// The spread's upper end: p99 of the per-sample means (or the largest value).
    pub(crate) high: f64,
    /// Criterion's 95 % confidence interval of the median.
    pub(crate) ci: Option<(f64, f64)>,
    /// The unit: `ns`, or the figure's own (`bytes`).
    pub(crate) unit: String,
    /// The budget verdict recorded in the summary.
    pub(crate) within_budget: Option<bool>,
}

/// A saved summary (`target/bench-summary/<unix>.json`).
#[derive(Clone, Debug)]
pub(crate) struct Summary {
    pub(crate) unix_time: u64,
    pub(crate) machine: Option<Machine>,
    pub(crate) rows: Vec<Row>,
}

impl Summary {
    /// Reads a summary's JSON (`benchmarks` and `extra`).
    pub(crate) fn from_json(value: &Value) -> Summary {
        let mut rows = Vec::new();
        for b in value["benchmarks"].as_array().into_iter().flatten() {
            let (Some(id), Some(median)) = (b["id"].as_str(), b["median_ns"].as_f64()) else {
                continue;
            };
            let ci = match b["median_ci_ns"].as_array().map(Vec::as_slice) {
                Some([lo, hi]) => lo.as_f64().zip(hi.as_f64()),
                _ => None,
            };
            rows.push(Row {
                id: id.to_owned(),
                median,
                high: b["p99_ns"].as_f64().unwrap_or(f64::NAN),
                ci,
                unit: "ns".to_owned(),
                within_budget: b["within_budget"].as_bool(),
            });
        }
        for e in value["extra"].as_array().into_iter().flatten() {
            let (Some(id), Some(median)) = (e["id"].as_str(), e["median"].as_f64()) else {
                continue;
            };
            rows.push(Row {
                id: id.to_owned(),
                median,
                high: e["max"].as_f64().unwrap_or(f64::NAN),
                ci: None,
                unit: e["unit"].as_str().unwrap_or("").to_owned(),
                within_budget: e["within_budget"].as_bool(),
            });
        }
        Summary {
            unix_time: value["unix_time"].as_u64().unwrap_or(0),
            machine: Machine::from_json(&value["machine"]),
            rows,
        }
    }

    fn read(path: &Path) -> anyhow::Result<Summary> {
        Ok(Summary::from_json(&super::read_json(path)?))
    }
}

/// How one benchmark changed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Slower beyond the noise.
    Regression,
    /// Faster beyond the noise.
    Improvement,
    /// Within the noise.
    Same,
    /// No figure to judge (a median that is not a positive number).
    Unknown,
}

/// Judges `new` against `old` (see the module docs).
pub(crate) fn judge(old: &Row, new: &Row) -> (Option<f64>, Verdict) {
    let ratio = new.median / old.median;
    if !ratio.is_finite() || old.median <= 0.0 || new.median <= 0.0 {
        return (None, Verdict::Unknown);
    }
    let (slower, faster) = match (old.ci, new.ci) {
        (Some((old_lo, old_hi)), Some((new_lo, new_hi))) => (new_lo > old_hi, new_hi < old_lo),
        // The spread each summary has: the new median outside the other run's p99 (or max).
        _ => (new.median > old.high, old.median > new.high),
    };
    let verdict = if slower && ratio >= MIN_CHANGE {
        Verdict::Regression
    } else if faster && ratio <= 1.0 / MIN_CHANGE {
        Verdict::Improvement
    } else {
        Verdict::Same
    };
    (Some(ratio), verdict)
}

/// One line of a comparison.
#[derive(Clone, Debug)]
pub(crate) struct Change {
    pub(crate) id: String,
    pub(crate) old: Row,
    pub(crate) new: Row,
    pub(crate) ratio: Option<f64>,
    pub(crate) verdict: Verdict,
}

/// The benchmarks both summaries have, judged, in id order.
pub(crate) fn compare(old: &Summary, new: &Summary) -> Vec<Change> {
    let mut changes: Vec<Change> = new
        .rows
        .iter()
        .filter_map(|n| {
            let o = old.rows.iter().find(|o| o.id == n.id && o.unit == n.unit)?;
            let (ratio, verdict) = judge(o, n);
            Some(Change { id: n.id.clone(), old: o.clone(), new: n.clone(), ratio, verdict })
        })
        .collect();
    changes.sort_by(|a, b| a.id.cmp(&b.id));
    changes
}

fn value_in(unit: &str, value: f64) -> String {
    match unit {
        "ns" => human_ns(value),
        "bytes" => format!("{:.1} MiB", value / (1024.0 * 1024.0)),
        other => format!("{value:.0} {other}"),
    }
}

/// Prints a comparison; returns the regressed ids.
pub(crate) fn print_comparison(old: &Summary, new: &Summary) -> Vec<String> {
    let changes = compare(old, new);
    println!(
        "{:<48} {:>12} {:>12} {:>8}  change (old {}, new {})",
        "benchmark",
        "old p50",
        "new p50",
        "new/old",
        stamp_label(old.unix_time),
        stamp_label(new.unix_time)
    );
    let mut regressed = Vec::new();
    for c in &changes {
        let flag = match c.verdict {
            Verdict::Regression => {
                regressed.push(c.id.clone());
                "REGRESSION"
            }
            Verdict::Improvement => "improved",
            Verdict::Same => "~ (within noise)",
            Verdict::Unknown => "?",
        };
        let ratio = c.ratio.map_or_else(|| "?".to_owned(), |r| format!("{r:.3}"));
        println!(
            "{:<48} {:>12} {:>12} {:>8}  {flag}",
            c.id,
            value_in(&c.old.unit, c.old.median),
            value_in(&c.new.unit, c.new.median),
            ratio
        );
    }
    let only_new = new.rows.iter().filter(|n| !changes.iter().any(|c| c.id == n.id)).count();
    if only_new > 0 {
        println!("({only_new} benchmark(s) of the new run have no figure in the old one)");
    }
    regressed
}

/// The summaries saved in `dir` (not `latest.json`), oldest first.
pub(crate) fn saved(dir: &Path) -> anyhow::Result<Vec<(PathBuf, Summary)>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(out) };
    for entry in entries.flatten() {
        let path = entry.path();
        let is_stamp = path
            .file_stem()
            .and_then(|s| s.to_str())
            .is_some_and(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()));
        if is_stamp && path.extension().is_some_and(|e| e == "json") {
            let summary = Summary::read(&path)?;
            out.push((path, summary));
        }
    }
    out.sort_by_key(|(_, s)| s.unix_time);
    Ok(out)
}

/// The newest summary before `current` taken on the same machine.
pub(crate) fn previous<'a>(
    all: &'a [(PathBuf, Summary)],
    current: &Summary,
) -> Option<&'a (PathBuf, Summary)> {
    let machine = current.machine.as_ref()?;
    all.iter()
        .filter(|(_, s)| s.unix_time < current.unix_time && s.machine.as_ref() == Some(machine))
        .max_by_key(|(_, s)| s.unix_time)
}

/// After a run: compares `current` with the previous summary of this machine in `dir`.
pub(crate) fn against_previous(dir: &Path, current: &Summary) -> anyhow::Result<()> {
    let all = saved(dir)?;
    let Some((path, old)) = previous(&all, current) else {
        println!("no earlier summary of this machine to compare with");
        return Ok(());
    };
    println!("\ncompared with the previous run on this machine ({}):", path.display());
    let regressed = print_comparison(old, current);
    if !regressed.is_empty() {
        eprintln!(
            "note: {} regression(s) beyond the measured noise: {}",
            regressed.len(),
            regressed.join(", ")
        );
    }
    Ok(())
}

/// A summary named by a path, a unix stamp (`target/bench-summary/<stamp>.json`) or `latest`.
fn resolve(dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = if name == "latest" || name.bytes().all(|b| b.is_ascii_digit()) {
        dir.join(format!("{name}.json"))
    } else {
        PathBuf::from(name)
    };
    if !path.is_file() {
        bail!("no bench summary {name:?} (looked for {})", path.display());
    }
    Ok(path)
}

/// `cargo xtask bench --compare A B`.
pub(crate) fn compare_command(dir: &Path, args: &[String]) -> anyhow::Result<()> {
    let [a, b] = args else {
        bail!("usage: cargo xtask bench --compare <A> <B> (summary paths, unix stamps or latest)");
    };
    let (old_path, new_path) = (resolve(dir, a)?, resolve(dir, b)?);
    let old = Summary::read(&old_path).with_context(|| format!("reading {a}"))?;
    let new = Summary::read(&new_path).with_context(|| format!("reading {b}"))?;
    match (&old.machine, &new.machine) {
        (Some(x), Some(y)) if x == y => println!("both on {}", x.label()),
        (x, y) => println!(
            "note: different or unknown machines ({} vs {}): the ratios mix machine and code",
            x.as_ref().map_or_else(|| "unknown".to_owned(), Machine::label),
            y.as_ref().map_or_else(|| "unknown".to_owned(), Machine::label)
        ),
    }
    print_comparison(&old, &new);
    Ok(())
}

/// The history rows of one benchmark: (time, machine, median, verdict against the previous
/// run of the same machine).
pub(crate) fn history(all: &[(PathBuf, Summary)], id: &str) -> Vec<(u64, String, Row, Verdict)> {
    let mut out: Vec<(u64, String, Row, Verdict)> = Vec::new();
    for (n, (_, summary)) in all.iter().enumerate() {
        let Some(row) = summary.rows.iter().find(|r| r.id == id) else { continue };
        let earlier = all[..n].iter().rev().find_map(|(_, s)| {
            (s.machine == summary.machine && summary.machine.is_some())
                .then(|| s.rows.iter().find(|r| r.id == id))
                .flatten()
        });
        let verdict = earlier.map_or(Verdict::Unknown, |old| judge(old, row).1);
        let host = summary.machine.as_ref().map_or("unknown", |m| m.hostname.as_str());
        out.push((summary.unix_time, host.to_owned(), row.clone(), verdict));
    }
    out
}

/// `cargo xtask bench --history PREFIX`: per benchmark whose id starts with PREFIX, one line
/// per saved run: when, where, the median, a bar of the median against the time budget, and
/// the change from the previous run of that machine.
pub(crate) fn history_command(dir: &Path, args: &[String]) -> anyhow::Result<()> {
    let [prefix] = args else { bail!("usage: cargo xtask bench --history <benchmark id prefix>") };
    let all = saved(dir)?;
    let mut ids: Vec<&str> = all
        .iter()
        .flat_map(|(_, s)| s.rows.iter().map(|r| r.id.as_str()))
        .filter(|id| id.starts_with(prefix.as_str()))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    if ids.is_empty() {
        bail!("no saved summary in {} has a benchmark starting with {prefix:?}", dir.display());
    }
    for id in ids {
        let declared = super::BUDGETS.iter().find(|(b, _)| *b == id).map(|(_, b)| *b);
        // Only a time budget is drawn as a bar; the others are named.
        let (budget, budget_label) = match declared {
            Some(super::Budget::MaxNanos(max)) => {
                (Some(max), format!("budget ≤ {}", human_ns(max)))
            }
            Some(super::Budget::MinMegabytesPerSec(min)) => (None, format!("budget ≥ {min} MB/s")),
            Some(super::Budget::MaxRatioTo(base, max)) => {
                (None, format!("budget ≤ {max} × {base}"))
            }
            None => (None, "no budget".to_owned()),
        };
        println!("\n{id} ({budget_label})");
        for (time, host, row, verdict) in history(&all, id) {
            let bar = budget.map_or_else(String::new, |b| bar(row.median / b));
            let change = match verdict {
                Verdict::Regression => "REGRESSION",
                Verdict::Improvement => "improved",
                Verdict::Same => "~",
                Verdict::Unknown => "",
            };
            let over = if row.within_budget == Some(false) { " OVER" } else { "" };
            println!(
                "  {}  {:<16} {:>12} {bar}{over} {change}",
                stamp_label(time),
                host,
                value_in(&row.unit, row.median)
            );
        }
    }
    Ok(())
}

/// Twenty cells, filled in proportion to `share` of the budget (`|` marks the budget; beyond
/// it the bar overflows with `!`).
fn bar(share: f64) -> String {
    if !share.is_finite() || share < 0.0 {
        return String::new();
    }
    const CELLS: usize = 20;
    let filled = ((share * CELLS as f64).round() as usize).min(CELLS);
    let mut out = "#".repeat(filled) + &".".repeat(CELLS - filled) + "|";
    if share > 1.0 {
        out.push_str(
            &"!".repeat((((share - 1.0) * CELLS as f64).round() as usize).clamp(1, CELLS)),
        );
    }
    out.push_str(&format!(" {:>4.0} %", share * 100.0));
    out
}

/// `2026-12-06 04:41 UTC` for a unix time (0: unknown).
pub(crate) fn stamp_label(unix: u64) -> String {
    if unix == 0 {
        return "unknown time".to_owned();
    }
    let days = i64::try_from(unix / 86_400).unwrap_or(0);
    let secs = unix % 86_400;
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02} UTC", secs / 3600, secs % 3600 / 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, median: f64, ci: Option<(f64, f64)>, high: f64) -> Row {
        Row { id: id.into(), median, high, ci, unit: "ns".into(), within_budget: None }
    }

    #[test]
    fn a_regression_needs_disjoint_intervals_and_five_percent() {
        let old = row("a", 100.0, Some((98.0, 102.0)), 130.0);
        // 10 % slower, intervals apart: a regression.
        let slower = row("a", 110.0, Some((108.0, 112.0)), 140.0);
        assert_eq!(judge(&old, &slower), (Some(1.1), Verdict::Regression));
        // 10 % slower but the intervals overlap (a noisy run): within noise.
        let noisy = row("a", 110.0, Some((101.0, 125.0)), 140.0);
        assert_eq!(judge(&old, &noisy).1, Verdict::Same);
        // Intervals apart but only 3 %: below the floor.
        let drift = row("a", 103.0, Some((102.5, 103.5)), 110.0);
        assert_eq!(judge(&old, &drift).1, Verdict::Same);
        // The mirror image.
        let faster = row("a", 90.0, Some((89.0, 91.0)), 95.0);
        assert_eq!(judge(&old, &faster).1, Verdict::Improvement);
        let nan = row("a", f64::NAN, None, f64::NAN);
        assert_eq!(judge(&old, &nan), (None, Verdict::Unknown));
        assert_eq!(judge(&row("a", 0.0, None, 0.0), &slower).1, Verdict::Unknown);
    }

    #[test]
    fn without_intervals_the_spread_is_the_other_runs_p99() {
        let old = row("a", 100.0, None, 120.0);
        assert_eq!(judge(&old, &row("a", 115.0, None, 130.0)).1, Verdict::Same);
        assert_eq!(judge(&old, &row("a", 125.0, None, 130.0)).1, Verdict::Regression);
        // Only one of the two has an interval: the spread decides.
        assert_eq!(
            judge(&old, &row("a", 125.0, Some((124.0, 126.0)), 130.0)).1,
            Verdict::Regression
        );
        assert_eq!(judge(&row("a", 125.0, None, 126.0), &old).1, Verdict::Improvement);
    }

    fn summary(unix_time: u64, host: &str, rows: Vec<Row>) -> Summary {
        let machine = Machine { hostname: host.into(), cpu: "cpu".into(), cores: 2 };
        Summary { unix_time, machine: Some(machine), rows }
    }

    #[test]
    fn the_previous_run_is_the_newest_earlier_one_of_the_same_machine() {
        let all: Vec<(PathBuf, Summary)> = vec![
            ("1.json".into(), summary(1, "a", vec![])),
            ("2.json".into(), summary(2, "a", vec![])),
            ("3.json".into(), summary(3, "b", vec![])),
            ("5.json".into(), summary(5, "a", vec![])),
        ];
        let current = summary(4, "a", vec![]);
        assert_eq!(previous(&all, &current).map(|(p, _)| p.clone()), Some("2.json".into()));
        assert!(previous(&all, &summary(4, "c", vec![])).is_none());
        let unknown = Summary { unix_time: 9, machine: None, rows: vec![] };
        assert!(previous(&all, &unknown).is_none(), "an unknown machine matches none");
    }

    #[test]
    fn a_comparison_pairs_the_benchmarks_both_runs_have() {
        let old = summary(
            1,
            "a",
            vec![row("s/b", 100.0, Some((99.0, 101.0)), 110.0), row("s/gone", 5.0, None, 6.0)],
        );
        let new = summary(
            2,
            "a",
            vec![row("s/new", 1.0, None, 1.0), row("s/b", 120.0, Some((119.0, 121.0)), 130.0)],
        );
        let changes = compare(&old, &new);
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].id, "s/b");
        assert_eq!(changes[0].ratio, Some(1.2));
        assert_eq!(changes[0].verdict, Verdict::Regression);
        assert_eq!(print_comparison(&old, &new), ["s/b"]);
    }

    #[test]
    fn a_summary_reads_its_benchmarks_extras_and_machine() {
        let value = json!({
            "unix_time": 1_796_530_000u64,
            "machine": {"hostname": "h", "cpu": "c", "cores": 2},
            "benchmarks": [
                {"id": "search/warm_search", "median_ns": 80.0, "p99_ns": 95.0,
                 "median_ci_ns": [79.0, 81.0], "within_budget": true},
                {"id": "old/format", "median_ns": 10.0, "p99_ns": 12.0},
                {"id": "broken"},
            ],
            "extra": [{"id": "scale/rss", "unit": "bytes", "median": 1e6, "max": 2e6}],
        });
        let s = Summary::from_json(&value);
        assert_eq!(s.machine, Some(Machine { hostname: "h".into(), cpu: "c".into(), cores: 2 }));
        assert_eq!(s.rows.len(), 3);
        assert_eq!(s.rows[0].ci, Some((79.0, 81.0)));
        assert_eq!(s.rows[0].within_budget, Some(true));
        assert_eq!(s.rows[1].ci, None);
        assert_eq!(s.rows[2].unit, "bytes");
        assert_eq!(s.rows[2].high, 2e6);
        assert!(Summary::from_json(&json!({})).machine.is_none());
    }

    #[test]
    fn history_judges_each_run_against_the_previous_one_of_its_machine() {
        let id = "search/warm_search";
        let all: Vec<(PathBuf, Summary)> = vec![
            ("1.json".into(), summary(1, "a", vec![row(id, 100.0, Some((99.0, 101.0)), 110.0)])),
            ("2.json".into(), summary(2, "b", vec![row(id, 300.0, Some((299.0, 301.0)), 310.0)])),
            ("3.json".into(), summary(3, "a", vec![row("other", 1.0, None, 1.0)])),
            ("4.json".into(), summary(4, "a", vec![row(id, 120.0, Some((119.0, 121.0)), 130.0)])),
        ];
        let rows = history(&all, id);
        let seen: Vec<(u64, &str, Verdict)> =
            rows.iter().map(|(t, h, _, v)| (*t, h.as_str(), *v)).collect();
        // Run 4 is judged against run 1 (same machine), not run 2 (another one).
        assert_eq!(
            seen,
            [(1, "a", Verdict::Unknown), (2, "b", Verdict::Unknown), (4, "a", Verdict::Regression)]
        );
    }

    #[test]
    fn machines_stamps_and_bars_read_plainly() {
        let info = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7B13\n";
        assert_eq!(cpu_model(info).as_deref(), Some("AMD EPYC 7B13"));
        assert_eq!(cpu_model("Model\t\t: Raspberry Pi 4\n").as_deref(), Some("Raspberry Pi 4"));
        assert_eq!(cpu_model("nothing here"), None);
        assert_eq!(stamp_label(0), "unknown time");
        assert_eq!(stamp_label(1_700_000_000), "2023-11-14 22:13 UTC");
        assert_eq!(stamp_label(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(bar(0.5), "##########..........|   50 %");
        assert_eq!(bar(1.1), "####################|!!  110 %");
        assert_eq!(bar(f64::NAN), "");
    }

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-track-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn criterion_s_interval_reaches_the_summary_and_the_next_run_finds_it() {
        let dir = scratch("criterion");
        let new = dir.join("criterion/search/warm_search/new");
        std::fs::create_dir_all(&new).unwrap();
        std::fs::write(new.join("benchmark.json"), r#"{"full_id": "search/warm_search"}"#).unwrap();
        std::fs::write(
            new.join("estimates.json"),
            r#"{"mean": {"point_estimate": 82.0},
                "median": {"point_estimate": 80.0,
                           "confidence_interval": {"lower_bound": 79.0, "upper_bound": 81.5}}}"#,
        )
        .unwrap();
        std::fs::write(new.join("sample.json"), r#"{"iters": [1, 2], "times": [80.0, 170.0]}"#)
            .unwrap();
        let figures = crate::bench::figures(&dir.join("criterion")).unwrap();
        assert_eq!(figures.len(), 1);
        assert_eq!(figures[0].median_ci_ns, Some((79.0, 81.5)));
        // Two saved runs of this machine: the second finds the first as its previous one.
        let summaries = dir.join("bench-summary");
        std::fs::create_dir_all(&summaries).unwrap();
        let machine = Machine::current();
        for (stamp, median) in [(10u64, 80.0), (20, 100.0)] {
            let value = json!({
                "unix_time": stamp,
                "machine": machine.to_json(),
                "benchmarks": [{"id": "search/warm_search", "median_ns": median,
                                "p99_ns": median * 1.1,
                                "median_ci_ns": [median - 1.0, median + 1.0]}],
            });
            std::fs::write(summaries.join(format!("{stamp}.json")), value.to_string()).unwrap();
        }
        let all = saved(&summaries).unwrap();
        let (path, old) = previous(&all, &all[1].1).unwrap();
        assert_eq!(path, &summaries.join("10.json"));
        assert_eq!(compare(old, &all[1].1)[0].verdict, Verdict::Regression);
        against_previous(&summaries, &all[1].1).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_summary_is_named_by_path_stamp_or_latest() {
        let dir = std::env::temp_dir().join(format!("xtask-track-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("17.json"), "{}").unwrap();
        std::fs::write(dir.join("latest.json"), "{}").unwrap();
        assert_eq!(resolve(&dir, "17").unwrap(), dir.join("17.json"));
        assert_eq!(resolve(&dir, "latest").unwrap(), dir.join("latest.json"));
        let by_path = dir.join("17.json").to_string_lossy().into_owned();
        assert_eq!(resolve(&dir, &by_path).unwrap(), dir.join("17.json"));
        assert!(resolve(&dir, "18").is_err());
        let listed: Vec<u64> = saved(&dir).unwrap().iter().map(|(_, s)| s.unix_time).collect();
        assert_eq!(listed, [0], "latest.json is not a run of its own");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

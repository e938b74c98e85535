//! `cargo xtask bench`: runs every criterion suite, then checks the figures against the budgets
//! (`BUDGETS` below), and writes a JSON summary per run to
//! `target/bench-summary/<unix-seconds>.json` (and `latest.json`).
//!
//! Budgets are judged on the median (p50) of criterion's samples; p99 is the 99th percentile of
//! the per-sample means, reported alongside. A budget is a time, a throughput, or a ratio to
//! another benchmark's median (`Budget::MaxRatioTo`: what a feature may add to a path measured
//! without it in the same run, whatever the machine's speed); a ratio whose baseline has no
//! figure is over budget. A benchmark without a budget is reported, not judged.
//!
//! Tracking (`bench/track.rs`): a summary records the machine (host name, CPU model, cores) and
//! criterion's 95 % confidence interval of each median; each run is compared with the previous
//! summary of the same machine, per benchmark as a ratio new/old, regressions beyond the measured
//! noise flagged. `cargo xtask bench --compare A B` compares two saved summaries (paths, unix
//! stamps or `latest`); `cargo xtask bench --history PREFIX` prints each matching benchmark's
//! median run after run, against its budget.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

mod track;

/// A budget for one benchmark, by criterion's full id (`group/function`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Budget {
    /// The median time per iteration must not exceed this many nanoseconds.
    MaxNanos(f64),
    /// The median throughput must be at least this many megabytes (10^6 bytes) per second.
    MinMegabytesPerSec(f64),
    /// The median time must be at most this multiple of the median of the benchmark named
    /// (criterion full id; normally one of the same group, measured in the same run).
    MaxRatioTo(&'static str, f64),
}

const MS: f64 = 1e6;
const US: f64 = 1e3;

/// The budgets, keyed by criterion full id.
pub(crate) const BUDGETS: &[(&str, Budget)] = &[
    ("topics_format/parse_validate_10k_blocks", Budget::MaxNanos(50.0 * MS)),
    ("topics_format/scan_50k_frames", Budget::MaxNanos(50.0 * MS)),
    ("session_dag/import_largest_transcript", Budget::MinMegabytesPerSec(50.0)),
    ("markers/pending_marked_tip_100k", Budget::MaxNanos(10.0 * US)),
    ("markers/pending_100_unwritten_100k", Budget::MaxNanos(100.0 * US)),
    ("transaction/one_paragraph_edit_git_1k_blocks", Budget::MaxNanos(30.0 * MS)),
    ("transaction/one_paragraph_edit_git_10k_blocks", Budget::MaxNanos(150.0 * MS)),
    ("transaction/one_paragraph_edit_full_1k_blocks", Budget::MaxNanos(10.0 * MS)),
    ("transaction/memory_changes_10_ops_10k_blocks", Budget::MaxNanos(150.0 * MS)),
    ("transaction/one_paragraph_edit_full_10k_blocks", Budget::MaxNanos(50.0 * MS)),
    // Whole processes on a 10 000-block workspace in the Python implementation's layout
    // (`crates/cli/benches/process.rs`): wall time, but CPU time for the search.
    ("process/first_command_10k_blocks", Budget::MaxNanos(300.0 * MS)),
    ("process/update_memory_changes_10k_blocks", Budget::MaxNanos(150.0 * MS)),
    ("process/search_cpu_10k_blocks", Budget::MaxNanos(5.0 * MS)),
    ("process/hook_user_prompt_submit_cpu_10k_blocks", Budget::MaxNanos(10.0 * MS)),
    ("process/hook_user_prompt_submit_wall_10k_blocks", Budget::MaxNanos(15.0 * MS)),
    ("process/hook_session_start_10k_blocks", Budget::MaxNanos(25.0 * MS)),
    ("process/hook_stop_10k_blocks", Budget::MaxNanos(20.0 * MS)),
    ("process/doctor_10k_blocks", Budget::MaxNanos(1000.0 * MS)),
    // The render reads only `topics/core.md`; the budget applies to a realistic master (the
    // reference measured an 11 883-token one). `views/core_render_10k` (a 10 000-paragraph
    // master) is reported without a budget.
    ("views/core_render_12k_tokens", Budget::MaxNanos(1.0 * MS)),
    ("views/rebuild_10k_blocks", Budget::MaxNanos(50.0 * MS)),
    ("search/warm_search", Budget::MaxNanos(100.0 * US)),
    ("backend/search_fenced_10k_blocks", Budget::MaxNanos(100.0 * US)),
    ("backend/system_prompt_10k_blocks", Budget::MaxNanos(50.0 * US)),
    ("web/get_core_10k_blocks", Budget::MaxNanos(5.0 * MS)),
    ("web/get_topic_with_html_10k_blocks", Budget::MaxNanos(5.0 * MS)),
    ("search/open_and_first_search", Budget::MaxNanos(50.0 * MS)),
    ("search/incremental_update_one_paragraph", Budget::MaxNanos(20.0 * MS)),
    // Redaction may add at most 20 % to `import`: judged end to end on a 150 MB folder of real
    // transcripts imported through the `Intake` with and without it
    // (`crates/backend/benches/intake.rs`). The redactor's own throughput is the figure behind
    // it (at 250 MB/s it adds 20 % to an import at 50 MB/s); a hook pays construction once.
    // `redact/first_prompt_in_a_fresh_process` (construction plus the regexes a prompt needs)
    // is reported without a budget.
    ("intake/import_150mb_redacted", Budget::MaxRatioTo("intake/import_150mb_plain", 1.2)),
    ("redact/transcripts_20mb", Budget::MinMegabytesPerSec(250.0)),
    ("redact/builtin_construction", Budget::MaxNanos(5.0 * MS)),
    ("redact/prompt_2kb_no_secret", Budget::MaxNanos(20.0 * US)),
    // Issue 39's table: whole processes on generated workspaces of 10 000, 100 000 and (with
    // `SCRIPTORIUM_BENCH_1M=1`) 1 000 000 blocks (`crates/cli/benches/scale.rs`). Peak RSS is in
    // `MEMORY_BUDGETS`.
    ("scale/update_cpu_10k_blocks", Budget::MaxNanos(60.0 * MS)),
    ("scale/update_cpu_100k_blocks", Budget::MaxNanos(80.0 * MS)),
    ("scale/update_cpu_1m_blocks", Budget::MaxNanos(150.0 * MS)),
    ("scale/update_noop_cpu_10k_blocks", Budget::MaxNanos(20.0 * MS)),
    ("scale/update_noop_cpu_100k_blocks", Budget::MaxNanos(20.0 * MS)),
    ("scale/update_noop_cpu_1m_blocks", Budget::MaxNanos(30.0 * MS)),
    ("scale/search_cpu_10k_blocks", Budget::MaxNanos(5.0 * MS)),
    ("scale/search_cpu_100k_blocks", Budget::MaxNanos(6.0 * MS)),
    ("scale/search_cpu_1m_blocks", Budget::MaxNanos(10.0 * MS)),
    ("scale/hook_user_prompt_submit_wall_10k_blocks", Budget::MaxNanos(15.0 * MS)),
    ("scale/hook_user_prompt_submit_wall_100k_blocks", Budget::MaxNanos(15.0 * MS)),
    ("scale/hook_user_prompt_submit_wall_1m_blocks", Budget::MaxNanos(25.0 * MS)),
    ("scale/check_wall_10k_blocks", Budget::MaxNanos(1000.0 * MS)),
    ("scale/check_wall_100k_blocks", Budget::MaxNanos(5000.0 * MS)),
    ("scale/check_wall_1m_blocks", Budget::MaxNanos(60000.0 * MS)),
];

const MIB: f64 = 1024.0 * 1024.0;

/// Budgets of figures criterion does not measure, judged on the median of their values: the
/// largest value allowed, in the figure's unit (bytes for `unit: "bytes"`). The benches write
/// these figures into the directory `SCRIPTORIUM_BENCH_FIGURES` names (format in
/// `crates/cli/benches/support/mod.rs`, `ExtraFigures`; read by [`extra_figures`]).
pub(crate) const EXTRA_BUDGETS: &[(&str, f64)] = &[
    ("scale/update_peak_rss_10k_blocks", 64.0 * MIB),
    ("scale/update_peak_rss_100k_blocks", 64.0 * MIB),
    ("scale/update_peak_rss_1m_blocks", 128.0 * MIB),
];

/// One figure a bench wrote beside criterion's (see [`EXTRA_BUDGETS`]).
#[derive(Debug)]
pub(crate) struct ExtraFigure {
    pub(crate) id: String,
    pub(crate) unit: String,
    pub(crate) median: f64,
    pub(crate) max: f64,
    pub(crate) count: usize,
}

impl ExtraFigure {
    /// `Some(true)` within budget, `Some(false)` over, `None` without a budget.
    fn within_budget(&self) -> Option<(bool, f64)> {
        let (_, max) = EXTRA_BUDGETS.iter().find(|(id, _)| *id == self.id)?;
        Some((self.median <= *max, *max))
    }
}

/// Reads every `*.json` of `dir` the benches wrote: `{"figures": [{"id", "unit", "values":
/// [..]}]}`. A missing directory holds none.
pub(crate) fn extra_figures(dir: &Path) -> anyhow::Result<Vec<ExtraFigure>> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(out) };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let json = read_json(&path)?;
        for figure in json["figures"].as_array().into_iter().flatten() {
            let mut values: Vec<f64> = figure["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(serde_json::Value::as_f64)
                .collect();
            values.sort_by(f64::total_cmp);
            out.push(ExtraFigure {
                id: figure["id"].as_str().unwrap_or_default().to_owned(),
                unit: figure["unit"].as_str().unwrap_or_default().to_owned(),
                median: percentile(&values, 0.5),
                max: values.last().copied().unwrap_or(f64::NAN),
                count: values.len(),
            });
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(out)
}

/// One measured benchmark.
#[derive(Debug)]
pub(crate) struct Figure {
    pub(crate) id: String,
    pub(crate) median_ns: f64,
    pub(crate) mean_ns: f64,
    pub(crate) p99_ns: f64,
    pub(crate) bytes: Option<f64>,
    /// Criterion's 95 % confidence interval of the median (what tracking judges noise by).
    pub(crate) median_ci_ns: Option<(f64, f64)>,
}

impl Figure {
    fn megabytes_per_sec(&self) -> Option<f64> {
        self.bytes.map(|b| b / (self.median_ns / 1e9) / 1e6)
    }

    fn budget(&self) -> Option<Budget> {
        BUDGETS.iter().find(|(id, _)| *id == self.id).map(|(_, budget)| *budget)
    }

    /// For a ratio budget, this median over the baseline's (`None` when the baseline is not
    /// among `all` or the ratio is not a number).
    fn ratio(&self, all: &[Figure]) -> Option<f64> {
        let Some(Budget::MaxRatioTo(baseline, _)) = self.budget() else { return None };
        let base = all.iter().find(|f| f.id == baseline)?;
        let ratio = self.median_ns / base.median_ns;
        ratio.is_finite().then_some(ratio)
    }

    /// `Some(true)` within budget, `Some(false)` over, `None` without a budget; a ratio is taken
    /// to the baseline's figure among `all`.
    fn verdict(&self, all: &[Figure]) -> Option<(bool, String)> {
        Some(match self.budget()? {
            Budget::MaxNanos(max) => (self.median_ns <= max, format!("≤ {}", human_ns(max))),
            Budget::MinMegabytesPerSec(min) => {
                (self.megabytes_per_sec().is_some_and(|v| v >= min), format!("≥ {min} MB/s"))
            }
            Budget::MaxRatioTo(baseline, max) => {
                (self.ratio(all).is_some_and(|r| r <= max), format!("≤ {max} × {baseline}"))
            }
        })
    }
}

fn human_ns(ns: f64) -> String {
    if ns >= MS {
        format!("{:.2} ms", ns / MS)
    } else if ns >= US {
        format!("{:.2} µs", ns / US)
    } else {
        format!("{ns:.0} ns")
    }
}

pub(crate) fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target"))
}

fn read_json(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "new") && path.join("benchmark.json").is_file()
            {
                out.push(path);
            } else {
                collect(&path, out);
            }
        }
    }
}

/// Reads every benchmark criterion left under `target/criterion`.
pub(crate) fn figures(criterion_dir: &Path) -> anyhow::Result<Vec<Figure>> {
    let mut dirs = Vec::new();
    collect(criterion_dir, &mut dirs);
    let mut figures = Vec::new();
    for dir in dirs {
        let bench = read_json(&dir.join("benchmark.json"))?;
        let estimates = read_json(&dir.join("estimates.json"))?;
        let sample = read_json(&dir.join("sample.json"))?;
        let id = bench["full_id"].as_str().unwrap_or_default().to_owned();
        let median_ns = estimates["median"]["point_estimate"].as_f64().unwrap_or(f64::NAN);
        let mean_ns = estimates["mean"]["point_estimate"].as_f64().unwrap_or(f64::NAN);
        let iters = sample["iters"].as_array().cloned().unwrap_or_default();
        let times = sample["times"].as_array().cloned().unwrap_or_default();
        let mut per_iter: Vec<f64> =
            iters.iter().zip(&times).filter_map(|(n, t)| Some(t.as_f64()? / n.as_f64()?)).collect();
        per_iter.sort_by(f64::total_cmp);
        let p99_ns = percentile(&per_iter, 0.99);
        let bytes = bench["throughput"]["Bytes"].as_f64();
        let ci = &estimates["median"]["confidence_interval"];
        let median_ci_ns = ci["lower_bound"].as_f64().zip(ci["upper_bound"].as_f64());
        figures.push(Figure { id, median_ns, mean_ns, p99_ns, bytes, median_ci_ns });
    }
    figures.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(figures)
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = (q * (sorted.len() - 1) as f64).round() as usize;
    sorted[rank.min(sorted.len() - 1)]
}

/// Runs the suites (extra arguments go to criterion as a filter), then judges and summarises.
pub(crate) fn run(root: &Path, extra: &[String]) -> anyhow::Result<()> {
    let summaries = target_dir(root).join("bench-summary");
    match extra.first().map(String::as_str) {
        Some("--compare") => return track::compare_command(&summaries, &extra[1..]),
        Some("--history") => return track::history_command(&summaries, &extra[1..]),
        _ => {}
    }
    let mut cmd = crate::cargo();
    // `--bench '*'` runs only the criterion targets; the libraries' own libtest harnesses would
    // reject criterion's options.
    cmd.args(["bench", "--workspace", "--bench", "*", "--locked"]);
    let extra = extra.strip_prefix(&["--".to_owned()][..]).unwrap_or(extra);
    if !extra.is_empty() {
        cmd.arg("--").args(extra);
    }
    // Figures criterion does not measure (peak memory) come back through this directory; a
    // figure of an earlier run must not be judged as this one's.
    let figures_dir = target_dir(root).join("bench-figures");
    if figures_dir.exists() {
        std::fs::remove_dir_all(&figures_dir)
            .with_context(|| format!("clearing {}", figures_dir.display()))?;
    }
    cmd.env("SCRIPTORIUM_BENCH_FIGURES", &figures_dir);
    eprintln!("==> cargo bench");
    let status = cmd.status().context("could not start cargo bench")?;
    if !status.success() {
        bail!("cargo bench failed ({status})");
    }
    let target = target_dir(root);
    let figures = figures(&target.join("criterion"))?;
    let mut over = Vec::new();
    let mut rows = Vec::new();
    println!("{:<48} {:>12} {:>12} {:>12}  budget", "benchmark", "p50", "mean", "p99");
    for fig in &figures {
        let verdict = fig.verdict(&figures);
        let ratio = fig.ratio(&figures);
        let mut rate =
            fig.megabytes_per_sec().map(|r| format!(" ({r:.1} MB/s)")).unwrap_or_default();
        if let Some(r) = ratio {
            rate.push_str(&format!(" (ratio {r:.3})"));
        }
        let budget = match &verdict {
            Some((true, b)) => format!("{b} ok"),
            Some((false, b)) => format!("{b} OVER"),
            None => "-".to_owned(),
        };
        println!(
            "{:<48} {:>12} {:>12} {:>12}  {budget}{rate}",
            fig.id,
            human_ns(fig.median_ns),
            human_ns(fig.mean_ns),
            human_ns(fig.p99_ns)
        );
        if let Some((false, _)) = verdict {
            over.push(fig.id.clone());
        }
        rows.push(serde_json::json!({
            "id": fig.id,
            "median_ns": fig.median_ns,
            "mean_ns": fig.mean_ns,
            "p99_ns": fig.p99_ns,
            "median_ci_ns": fig.median_ci_ns.map(|(lo, hi)| [lo, hi]),
            "megabytes_per_sec": fig.megabytes_per_sec(),
            "ratio": ratio,
            "budget": verdict.as_ref().map(|(_, b)| b.clone()),
            "within_budget": verdict.as_ref().map(|(ok, _)| *ok),
        }));
    }
    let extras = extra_figures(&figures_dir)?;
    let mut extra_rows = Vec::new();
    for fig in &extras {
        let verdict = fig.within_budget();
        let budget = match verdict {
            Some((true, max)) => format!("≤ {max:.0} {} ok", fig.unit),
            Some((false, max)) => format!("≤ {max:.0} {} OVER", fig.unit),
            None => "-".to_owned(),
        };
        println!(
            "{:<48} {:>12} {:>12} {:>12}  {budget}",
            fig.id,
            format!("{:.0}", fig.median),
            format!("max {:.0}", fig.max),
            format!("n {}", fig.count)
        );
        if let Some((false, _)) = verdict {
            over.push(fig.id.clone());
        }
        extra_rows.push(serde_json::json!({
            "id": fig.id,
            "unit": fig.unit,
            "median": fig.median,
            "max": fig.max,
            "count": fig.count,
            "budget": verdict.map(|(_, max)| max),
            "within_budget": verdict.map(|(ok, _)| ok),
        }));
    }
    #[expect(clippy::disallowed_methods, reason = "names the summary file of this run")]
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let summary_dir = target.join("bench-summary");
    std::fs::create_dir_all(&summary_dir)?;
    let summary = serde_json::json!({
        "unix_time": stamp,
        "machine": track::Machine::current().to_json(),
        "benchmarks": rows,
        "extra": extra_rows,
    });
    let text = serde_json::to_string_pretty(&summary)?;
    std::fs::write(summary_dir.join(format!("{stamp}.json")), &text)?;
    std::fs::write(summary_dir.join("latest.json"), &text)?;
    println!("summary: {}", summary_dir.join(format!("{stamp}.json")).display());
    track::against_previous(&summary_dir, &track::Summary::from_json(&summary))?;
    if !over.is_empty() {
        bail!("over budget: {}", over.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_follow_the_budgets() {
        let fig = |id: &str, median_ns: f64, bytes: Option<f64>| Figure {
            id: id.into(),
            median_ns,
            mean_ns: median_ns,
            p99_ns: median_ns,
            bytes,
            median_ci_ns: None,
        };
        assert_eq!(
            fig("topics_format/scan_50k_frames", 49.0 * MS, None).verdict(&[]).map(|v| v.0),
            Some(true)
        );
        assert_eq!(
            fig("topics_format/scan_50k_frames", 51.0 * MS, None).verdict(&[]).map(|v| v.0),
            Some(false)
        );
        // 2.6 MB in 40 ms is 65 MB/s; in 60 ms it is 43 MB/s.
        let id = "session_dag/import_largest_transcript";
        assert_eq!(fig(id, 40.0 * MS, Some(2.6e6)).verdict(&[]).map(|v| v.0), Some(true));
        assert_eq!(fig(id, 60.0 * MS, Some(2.6e6)).verdict(&[]).map(|v| v.0), Some(false));
        assert!(fig("unknown/bench", 1.0, None).verdict(&[]).is_none());
    }

    #[test]
    fn a_ratio_is_judged_on_the_medians_of_both() {
        let fig = |id: &str, median_ns: f64, mean_ns: f64| Figure {
            id: id.into(),
            median_ns,
            mean_ns,
            p99_ns: mean_ns,
            bytes: Some(150e6),
            median_ci_ns: None,
        };
        let plain = "intake/import_150mb_plain";
        let redacted = "intake/import_150mb_redacted";
        // Only the medians count: the means say 1.5 here and 1.0 below.
        let all = [fig(plain, 4000.0 * MS, 2000.0 * MS), fig(redacted, 4600.0 * MS, 3000.0 * MS)];
        assert_eq!(all[1].verdict(&all).map(|v| v.0), Some(true));
        assert_eq!(all[1].ratio(&all), Some(1.15));
        let all = [fig(plain, 4000.0 * MS, 4000.0 * MS), fig(redacted, 5000.0 * MS, 4000.0 * MS)];
        assert_eq!(all[1].verdict(&all).map(|v| v.0), Some(false));
        // The baseline itself has no budget; without its figure the ratio is over budget.
        assert!(all[0].verdict(&all).is_none());
        assert_eq!(all[1].verdict(&all[1..]).map(|v| v.0), Some(false));
        assert_eq!(all[1].ratio(&all[1..]), None);
        let nan = [fig(plain, f64::NAN, 1.0), fig(redacted, 4000.0 * MS, 1.0)];
        assert_eq!(nan[1].verdict(&nan).map(|v| v.0), Some(false));
    }

    #[test]
    fn every_ratio_names_another_benchmark() {
        for (id, budget) in BUDGETS {
            if let Budget::MaxRatioTo(baseline, max) = budget {
                assert_ne!(id, baseline, "{id} is its own baseline");
                assert!(*max > 0.0, "{id}: ratio {max}");
            }
        }
    }

    #[test]
    fn extra_figures_are_read_and_judged_on_their_median() {
        let dir = std::env::temp_dir().join(format!("xtask-extra-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a directory");
        let id = "scale/update_peak_rss_10k_blocks";
        let text = serde_json::json!({"figures": [
            {"id": id, "unit": "bytes", "values": [70.0 * MIB, 10.0 * MIB, 20.0 * MIB]},
            {"id": "scale/unbudgeted", "unit": "bytes", "values": []},
        ]});
        std::fs::write(dir.join("scale.json"), text.to_string()).expect("write");
        std::fs::write(dir.join("notes.txt"), "not a figure").expect("write");
        let figures = extra_figures(&dir).expect("read");
        assert_eq!(figures.len(), 2);
        let rss = figures.iter().find(|f| f.id == id).expect("the rss figure");
        assert_eq!((rss.median, rss.max, rss.count), (20.0 * MIB, 70.0 * MIB, 3));
        assert_eq!(rss.within_budget().map(|v| v.0), Some(true));
        let over = ExtraFigure {
            id: id.into(),
            unit: "bytes".into(),
            median: 65.0 * MIB,
            max: 65.0 * MIB,
            count: 1,
        };
        assert_eq!(over.within_budget().map(|v| v.0), Some(false));
        assert!(extra_figures(&dir.join("missing")).expect("none").is_empty());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn percentile_picks_the_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), 51.0);
        assert_eq!(percentile(&v, 0.99), 99.0);
        assert!(percentile(&[], 0.5).is_nan());
    }
}

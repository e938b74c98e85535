//! The nightly reorganize (see `ARCHITECTURE.md#cratesbackend`): once a day at a local hour
//! (03:00 by default) the organizer is run over every topic file.
//!
//! Key decision: the schedule is computed in one fixed UTC offset given at start
//! ([`local_offset`] reads it), because the `time` crate cannot read the local offset once a
//! process runs several threads, as a tokio runtime does. The reorganize runs on a blocking
//! thread; its outcome (an [`OrganizeReport`], never an error) is logged.
//!
//! # Limitations
//!
//! - A daylight-saving change shifts the run by an hour until the service is restarted.
//! - A shutdown during a reorganize returns at once; the reorganize in flight finishes on its
//!   blocking thread (or dies with the process: its transaction installs atomically or not at
//!   all).

use std::sync::Arc;
use std::time::Duration;

use scriptorium_writer::OrganizeReport;
use time::{OffsetDateTime, Time, UtcOffset};
use tokio::sync::watch;

use super::watcher::{shutdown_signalled, sleep_or_shutdown};

/// The default local hour of the nightly reorganize.
pub const DEFAULT_HOUR: u8 = 3;

/// The local UTC offset, or UTC when it cannot be read. Call it before any thread is started
/// (before building the tokio runtime): afterwards the `time` crate refuses to read it.
pub fn local_offset() -> UtcOffset {
    UtcOffset::current_local_offset().unwrap_or(UtcOffset::UTC)
}

/// The next `hour`:00 strictly after `now`, in `now`'s offset (hours above 23 read as 23).
pub fn next_run(now: OffsetDateTime, hour: u8) -> OffsetDateTime {
    let at = Time::from_hms(hour.min(23), 0, 0).unwrap_or(Time::MIDNIGHT);
    let today = now.replace_time(at);
    if today > now { today } else { today.checked_add(time::Duration::DAY).unwrap_or(today) }
}

/// The nightly loop: sleeps until the next `hour`:00 at `offset`, runs `reorganize` on a
/// blocking thread, logs its report, and starts over, until `shutdown` becomes `true` (or its
/// sender is dropped).
pub async fn run_nightly(
    hour: u8,
    offset: UtcOffset,
    reorganize: impl Fn() -> OrganizeReport + Send + Sync + 'static,
    shutdown: watch::Receiver<bool>,
) {
    let delay = move || {
        let now = crate::memory::wall_clock().to_offset(offset);
        let wait = next_run(now, hour) - now;
        Duration::try_from(wait).unwrap_or(Duration::ZERO)
    };
    run_schedule(delay, reorganize, shutdown).await;
}

/// Runs `task` after each `delay()` until shutdown.
async fn run_schedule(
    delay: impl Fn() -> Duration,
    task: impl Fn() -> OrganizeReport + Send + Sync + 'static,
    mut shutdown: watch::Receiver<bool>,
) {
    let task = Arc::new(task);
    while !sleep_or_shutdown(delay(), &mut shutdown).await {
        let run = Arc::clone(&task);
        let handle = tokio::task::spawn_blocking(move || run());
        tokio::select! {
            result = handle => log_report(result),
            () = shutdown_signalled(&mut shutdown) => return,
        }
    }
}

fn log_report(result: Result<OrganizeReport, tokio::task::JoinError>) {
    match result {
        Ok(report) if report.status == "failed" => tracing::warn!(
            topics = report.topics,
            error = report.error.as_ref().map(|e| e.to_string()).unwrap_or_default(),
            "memory.reorganize: failed"
        ),
        Ok(report) => tracing::info!(
            status = report.status,
            topics = report.topics,
            changed_files = report.changed_files.len(),
            "memory.reorganize: finished"
        ),
        Err(e) => tracing::error!(error = %e, "memory.reorganize: panicked"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use time::macros::{datetime, offset};

    fn report() -> OrganizeReport {
        OrganizeReport { status: "ok".into(), topics: 1, changed_files: Vec::new(), error: None }
    }

    #[test]
    fn next_run_is_later_today_or_tomorrow_never_now() {
        let before = datetime!(2026-03-14 01:30:00 +01:00);
        assert_eq!(next_run(before, 3), datetime!(2026-03-14 03:00:00 +01:00));
        let after = datetime!(2026-03-14 03:00:01 +01:00);
        assert_eq!(next_run(after, 3), datetime!(2026-03-15 03:00:00 +01:00));
        let exactly = datetime!(2026-03-14 03:00:00 +01:00);
        assert_eq!(next_run(exactly, 3), datetime!(2026-03-15 03:00:00 +01:00));
    }

    #[test]
    fn next_run_crosses_month_and_year_boundaries_and_clamps_the_hour() {
        let eve = datetime!(2026-12-31 23:59:59 -05:00);
        assert_eq!(next_run(eve, 3), datetime!(2027-01-01 03:00:00 -05:00));
        assert_eq!(next_run(eve, 99), datetime!(2027-01-01 23:00:00 -05:00));
        let leap = datetime!(2028-02-28 04:00:00 UTC);
        assert_eq!(next_run(leap, 3), datetime!(2028-02-29 03:00:00 UTC));
    }

    #[test]
    fn the_offset_of_now_is_kept() {
        let now = datetime!(2026-06-01 02:00:00 UTC).to_offset(offset!(+09:00));
        let next = next_run(now, 3);
        assert_eq!(next, datetime!(2026-06-02 03:00:00 +09:00));
        assert_eq!(next.offset(), offset!(+09:00));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_schedule_runs_the_task_repeatedly_and_stops_on_shutdown() {
        let runs = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = watch::channel(false);
        let counter = Arc::clone(&runs);
        let task = move || {
            counter.fetch_add(1, Ordering::SeqCst);
            report()
        };
        let handle = tokio::spawn(run_schedule(|| Duration::from_millis(10), task, rx));
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while runs.load(Ordering::SeqCst) < 2 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(runs.load(Ordering::SeqCst) >= 2);
        tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(1), handle).await.unwrap().unwrap();
        let settled = runs.load(Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(runs.load(Ordering::SeqCst), settled, "no run after shutdown");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn run_nightly_stops_within_a_second_while_waiting_for_the_hour() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&runs);
        let (tx, rx) = watch::channel(false);
        #[expect(clippy::disallowed_methods, reason = "a test sets times relative to the real now")]
        let now = OffsetDateTime::now_utc();
        // One hour from now at the earliest, so the run cannot be due during the test.
        let hour = (now + time::Duration::hours(2)).hour();
        let task = move || {
            counter.fetch_add(1, Ordering::SeqCst);
            report()
        };
        let handle = tokio::spawn(run_nightly(hour, UtcOffset::UTC, task, rx));
        tokio::time::sleep(Duration::from_millis(50)).await;
        tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(1), handle).await.unwrap().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shutdown_during_a_long_reorganize_returns_at_once() {
        let (tx, rx) = watch::channel(false);
        let (started_tx, started_rx) = std::sync::mpsc::channel();
        let task = move || {
            let _ = started_tx.send(());
            std::thread::sleep(Duration::from_millis(1500));
            report()
        };
        let handle = tokio::spawn(run_schedule(|| Duration::ZERO, task, rx));
        tokio::task::spawn_blocking(move || started_rx.recv()).await.unwrap().unwrap();
        tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(1), handle).await.unwrap().unwrap();
    }
}

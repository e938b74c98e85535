//! `scriptorium watch`: the runtime services in one process — the idle-session watcher (a
//! session idle for `watch.idle_secs` is written at its boundary), the nightly reorganize at
//! `watch.nightly_hour` local time, and optionally the import of transcript folders on every
//! poll so a running watch keeps memory current. SIGINT or SIGTERM stops it cleanly: the
//! session in progress finishes and is recorded, nothing is left half-written.

use std::path::PathBuf;
use std::process::ExitCode;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use scriptorium_backend::runtime::{
    SessionWriter, Watcher, WatcherConfig, local_offset, run_nightly, run_watcher,
};
use scriptorium_backend::{LocalBackend, models};
use scriptorium_session_dag::SessionStore;
use scriptorium_session_dag::import::{Format, discover};
use tokio::sync::watch;

use crate::home::Home;

/// Arguments of `scriptorium watch`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Import a transcript folder (or file) on every poll, e.g. `claude-code=~/.claude/projects`
    /// (formats: claude-code, codex, pi, jsonl); repeatable.
    #[arg(long = "import", value_name = "FORMAT=PATH")]
    imports: Vec<String>,
    /// Seconds between polls (default `watch.poll_secs`, 300).
    #[arg(long, value_name = "SECS")]
    poll: Option<u64>,
    /// Seconds a session must be idle before it is written (default `watch.idle_secs`, 1800).
    #[arg(long, value_name = "SECS")]
    idle: Option<u64>,
}

fn parse_import(text: &str) -> anyhow::Result<(Format, PathBuf)> {
    let Some((format, path)) = text.split_once('=') else {
        bail!("--import takes FORMAT=PATH, got {text:?}");
    };
    let format = Format::from_str(format).map_err(|e| anyhow::anyhow!("--import {text}: {e}"))?;
    Ok((format, PathBuf::from(path)))
}

/// Runs until SIGINT or SIGTERM.
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
    let config = crate::config(home)?;
    let imports: Vec<(Format, PathBuf)> =
        args.imports.iter().map(|i| parse_import(i)).collect::<anyhow::Result<_>>()?;
    // Colours only on a terminal: a log redirected to a file stays plain text.
    tracing_subscriber::fmt()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SCRIPTORIUM_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    // The local offset must be read before any other thread exists.
    let offset = local_offset();
    let model = models::build(&config.model, home.root())?;
    let backend = LocalBackend::open(home.root(), config.clone(), model)?;
    let poll = Duration::from_secs(args.poll.unwrap_or(config.watch.poll_secs).max(1));
    let idle = Duration::from_secs(args.idle.unwrap_or(config.watch.idle_secs));
    let watcher = Watcher::open(home.memory())?.with_config(WatcherConfig {
        poll,
        idle,
        ..WatcherConfig::default()
    });
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let sync =
        config.sync.remote.as_deref().filter(|_| config.sync.interval_secs > 0).map(|remote| {
            let remote = crate::sync::absolute_remote(remote, home.root());
            (remote, Duration::from_secs(config.sync.interval_secs))
        });
    runtime.block_on(serve(
        backend,
        watcher,
        imports,
        poll,
        config.watch.nightly_hour,
        offset,
        sync,
    ))?;
    Ok(ExitCode::SUCCESS)
}

async fn serve(
    backend: LocalBackend,
    watcher: Watcher,
    imports: Vec<(Format, PathBuf)>,
    poll: Duration,
    hour: u8,
    offset: time::UtcOffset,
    sync: Option<(String, Duration)>,
) -> anyhow::Result<()> {
    let (stop, stopped) = watch::channel(false);
    let store: Arc<dyn SessionStore + Send + Sync> = backend.store().shared();
    let writer: Arc<dyn SessionWriter> = Arc::new(backend.writer().clone());
    tracing::info!(home = %backend.home().display(), poll_secs = poll.as_secs(), nightly_hour = hour, "watch started");
    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(run_watcher(watcher, store, writer, stopped.clone()));
    let organizer = backend.writer().clone();
    tasks.spawn(run_nightly(hour, offset, move || organizer.reorganize(), stopped.clone()));
    if !imports.is_empty() {
        tasks.spawn(import_loop(backend.clone(), imports, poll, stopped.clone()));
    }
    if let Some((remote, interval)) = sync {
        tasks.spawn(sync_loop(backend.clone(), remote, interval, stopped.clone()));
    }
    shutdown_signal().await?;
    tracing::info!("stopping: finishing the session in progress");
    let _ = stop.send(true);
    while tasks.join_next().await.is_some() {}
    tracing::info!("watch stopped");
    Ok(())
}

/// SIGINT or SIGTERM.
async fn shutdown_signal() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("waiting for SIGINT"),
        _ = term.recv() => Ok(()),
    }
}

/// Syncs the memory with the remote now and then every `interval` (see `docs/sync.md`). A
/// conflict or an unreachable remote is logged and tried again at the next tick; nothing is
/// installed by a sync that fails.
async fn sync_loop(
    backend: LocalBackend,
    remote: String,
    interval: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let (memory, request) = (
            backend.clone(),
            scriptorium_backend::sync::SyncRequest {
                remote: remote.clone(),
                prefer: None,
                store: Some(backend.store().shared()),
            },
        );
        match tokio::task::spawn_blocking(move || memory.memory().sync(&request)).await {
            Ok(Ok(report)) => tracing::info!(
                remote = %report.remote,
                action = %report.action,
                commit = %report.commit,
                topics_changed = report.topics_changed.len(),
                "synced"
            ),
            Ok(Err(error)) => tracing::warn!(
                remote = %remote,
                code = %error.code,
                "sync failed, trying again in {} s: {}",
                interval.as_secs(),
                error.message
            ),
            Err(error) => tracing::error!(%error, "the sync task failed"),
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = stopped.changed() => return,
        }
        if *stopped.borrow() {
            return;
        }
    }
}

/// Imports every configured folder now and after every poll (imports are idempotent: only new
/// nodes are appended).
async fn import_loop(
    backend: LocalBackend,
    imports: Vec<(Format, PathBuf)>,
    poll: Duration,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let store = backend.store().shared();
        let batch = imports.clone();
        let intake = backend.intake();
        let result = tokio::task::spawn_blocking(move || {
            let mut new = 0;
            for (format, path) in &batch {
                let (units, errors) = discover(*format, std::slice::from_ref(path));
                for error in errors {
                    tracing::warn!(%error, "import: cannot read");
                }
                for unit in &units {
                    match intake.import_unit(store.as_ref(), unit) {
                        Ok(summary) => new += summary.new_nodes(),
                        Err(error) => tracing::warn!(%error, "import failed"),
                    }
                }
            }
            new
        })
        .await;
        if let Ok(new) = result
            && new > 0
        {
            tracing::info!(new_nodes = new, "imported");
        }
        tokio::select! {
            () = tokio::time::sleep(poll) => {}
            _ = stopped.changed() => return,
        }
        if *stopped.borrow() {
            return;
        }
    }
}

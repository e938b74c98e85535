//! `scriptorium serve`: the web UI and the REST API on loopback, until SIGINT or SIGTERM.
//!
//! Prints `Scriptorium at http://127.0.0.1:7878/#token=…`: the token (in `<home>/server-token`,
//! created on the first serve) travels in the URL fragment, which the browser keeps to itself;
//! every API request carries it. A non-loopback `--addr` is refused unless `--allow-remote` is
//! given.

use std::net::SocketAddr;
use std::process::ExitCode;

use anyhow::Context;
use scriptorium_server::web::{Listening, ServeOptions, serve_with};

use crate::home::Home;
use crate::output::outln;

/// Arguments of `scriptorium serve`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// The address to listen on (loopback unless --allow-remote; port 0 picks a free port).
    #[arg(long, default_value = scriptorium_server::web::DEFAULT_ADDR)]
    addr: SocketAddr,
    /// Allow a non-loopback address: the page and the API become reachable from the network
    /// over plain HTTP, guarded by the token alone.
    #[arg(long)]
    allow_remote: bool,
}

impl Args {
    /// Loopback on `addr` (the demo's serve).
    pub(crate) fn loopback(addr: SocketAddr) -> Args {
        Args { addr, allow_remote: false }
    }
}

/// Serves until SIGINT or SIGTERM.
pub(crate) fn run(home: &Home, args: &Args) -> anyhow::Result<ExitCode> {
    crate::config(home)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let options = ServeOptions { allow_remote: args.allow_remote, ..ServeOptions::default() };
    let ready = |listening: &Listening| {
        outln!("Scriptorium at {}", listening.url);
        eprintln!("press Ctrl-C to stop");
    };
    runtime.block_on(async {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("installing the SIGTERM handler")?;
        let shutdown = async move {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        };
        serve_with(home.root().to_path_buf(), args.addr, options, ready, shutdown).await
    })?;
    Ok(ExitCode::SUCCESS)
}

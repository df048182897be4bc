//! `burrow serve`: the HTTP API and MCP over streamable HTTP on one listener, until SIGTERM or
//! SIGINT.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};

use crate::app::App;
use crate::mcp::{McpServer, Profile, ShutdownSignal};

/// How often expired workspaces are looked for.
const REAP_EVERY: Duration = Duration::from_secs(30);
/// How long requests still running at shutdown get to finish.
const DRAIN: Duration = Duration::from_secs(10);

/// Refuses to listen beyond loopback unless asked to: the API runs commands for whoever holds
/// a token, and a token sent in clear over a network is a token given away.
pub fn check_listen(address: SocketAddr, allow_non_loopback: bool) -> Result<(), String> {
    if address.ip().is_loopback() || allow_non_loopback {
        Ok(())
    } else {
        Err(format!(
            "{address} is not a loopback address: burrow serve speaks plain HTTP, so tokens would \
             cross the network in clear; put it behind a TLS proxy and pass --allow-non-loopback"
        ))
    }
}

/// Serves `app` on `listener` until SIGTERM or SIGINT, then lets running requests finish (for
/// up to ten seconds) and returns.
pub async fn serve(app: App, listener: TcpListener, allow_any_host: bool) -> io::Result<()> {
    // Installed before anything is served, so that a signal is never the default (fatal) one.
    let mut terminate = signal(SignalKind::terminate())?;
    let mut interrupt = signal(SignalKind::interrupt())?;
    let shutdown = ShutdownSignal::default();
    let mcp =
        McpServer::new(app.clone(), Profile::Full, None).http_router(allow_any_host, &shutdown);
    let router = crate::rest::router(app.clone(), mcp);
    let reaper = tokio::spawn(reap_periodically(app));

    let (stopping_tx, stopping_rx) = tokio::sync::oneshot::channel::<()>();
    let stop = {
        let shutdown = shutdown.clone();
        async move {
            tokio::select! {
                _ = terminate.recv() => {}
                _ = interrupt.recv() => {}
            }
            tracing::info!("shutting down");
            // Open MCP event streams would hold the drain open; end them first.
            shutdown.fire();
            let _ = stopping_tx.send(());
        }
    };
    let server = axum::serve(listener, router).with_graceful_shutdown(stop);
    let deadline = async {
        if stopping_rx.await.is_ok() {
            tokio::time::sleep(DRAIN).await;
        } else {
            std::future::pending::<()>().await;
        }
    };
    let result = tokio::select! {
        served = server => served,
        () = deadline => {
            tracing::warn!("requests still running after {DRAIN:?}; stopping anyway");
            Ok(())
        }
    };
    reaper.abort();
    result
}

async fn reap_periodically(app: App) {
    let mut ticks = tokio::time::interval(REAP_EVERY);
    ticks.tick().await; // the first tick is now, and start-up has just reaped
    loop {
        ticks.tick().await;
        match app.blocking(|api| api.reap_expired()).await {
            Ok(reaped) => {
                for name in reaped {
                    tracing::info!(workspace = %name, "expired workspace deleted");
                }
            }
            Err(error) => tracing::warn!("reaping expired workspaces failed: {error}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_unless_allowed() {
        let loopback: SocketAddr = "127.0.0.1:7878".parse().unwrap();
        let v6: SocketAddr = "[::1]:7878".parse().unwrap();
        let any: SocketAddr = "0.0.0.0:7878".parse().unwrap();
        assert!(check_listen(loopback, false).is_ok());
        assert!(check_listen(v6, false).is_ok());
        let refused = check_listen(any, false).unwrap_err();
        assert!(refused.contains("--allow-non-loopback"), "{refused}");
        assert!(check_listen(any, true).is_ok());
    }
}

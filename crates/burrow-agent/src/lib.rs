//! The agent: PID 1 of a workspace's cell, serving burrow over a unix socket.
//!
//! burrow's cell set-up (namespaces, mounts with the workspace at /workspace, Landlock,
//! seccomp, no capabilities) happens first, in the cell's init, which then execs burrow's own
//! binary as `burrow agent` with the listening socket as descriptor 3. The agent runs commands
//! ([`exec`]), reads and writes files confined to the workspace ([`files`]), reaps every orphan
//! of the cell ([`reaper`]), and exits (ending the cell) when told to or after an idle timeout.
//! It speaks [`burrow_proto`]; the host trusts nothing it says.
#![deny(missing_docs)]

pub mod agent;
mod connection;
pub mod exec;
pub mod files;
mod idle;
mod probes;
pub mod reaper;
mod requests;
mod ring;
mod secrets;
pub mod services;
pub mod sessions;
pub mod shells;
mod spawn;
mod tunnel;
mod unknown;

use std::os::fd::{FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, SystemTime};

use tokio::net::UnixListener;

use crate::agent::Agent;
use crate::files::Workspace;

/// How the agent was started.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    /// The listening socket, inherited.
    pub listener_fd: RawFd,
    /// The workspace's root.
    pub root: PathBuf,
    /// Exit after this long with no connection and no command.
    pub idle_timeout: Option<Duration>,
    /// Largest file one write may carry.
    pub max_write: u64,
    /// Exit at this time (the workspace's time to live ends).
    pub expires_at: Option<SystemTime>,
}

/// Why the agent stopped.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// The workspace, the socket or the runtime could not be set up.
    #[error("the agent cannot start: {0}")]
    Start(#[from] std::io::Error),
}

/// Runs the agent until it is told to stop or goes idle.
pub fn run(config: AgentConfig) -> Result<(), AgentError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, serve(config))
}

async fn serve(config: AgentConfig) -> Result<(), AgentError> {
    // SAFETY: the cell's init passed the listening socket as this descriptor, and nothing else
    // in this process owns it.
    let listener = unsafe { OwnedFd::from_raw_fd(config.listener_fd) };
    // Inherited without close-on-exec (it had to survive the exec into the agent); commands
    // must not inherit it, or they could accept the host's connections.
    rustix::io::fcntl_setfd(&listener, rustix::io::FdFlags::CLOEXEC)
        .map_err(std::io::Error::from)?;
    let listener = std::os::unix::net::UnixListener::from(listener);
    listener.set_nonblocking(true)?;
    let listener = UnixListener::from_std(listener)?;
    let workspace = Workspace::open(&config.root)?;
    let filter = burrow_sandbox::CommandFilter::new()
        .map_err(|error| std::io::Error::other(error.to_string()))?;
    let null = rustix::fs::open(
        "/dev/null",
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::CLOEXEC,
        rustix::fs::Mode::empty(),
    )
    .map_err(std::io::Error::from)?;
    let agent = Rc::new(Agent::new(workspace, config.max_write, filter, null));

    tokio::task::spawn_local(Rc::clone(&agent.reaper).run());
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    let mut idle_check = tokio::time::interval(Duration::from_secs(1));
    // When memory was last given back; again only after activity since.
    let mut trimmed_at: Option<std::time::Instant> = None;
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::task::spawn_local(connection::serve(Rc::clone(&agent), stream));
                }
            }
            _ = terminate.recv() => break,
            _ = idle_check.tick() => {
                // A running service is work in progress: its cell is not idle.
                let idle = !agent.services.any_running()
                    && matches!(
                        (config.idle_timeout, agent.activity.idle_for()),
                        (Some(limit), Some(idle)) if idle >= limit
                    );
                let expired = config.expires_at.is_some_and(|at| SystemTime::now() >= at);
                if idle || expired {
                    break;
                }
                if let Some(since) = agent.activity.quiet_since()
                    && since.elapsed() >= idle::TRIM_AFTER
                    && trimmed_at.is_none_or(|at| at < since)
                {
                    idle::trim();
                    trimmed_at = Some(std::time::Instant::now());
                }
            }
        }
    }
    agent.kill_all();
    Ok(())
}

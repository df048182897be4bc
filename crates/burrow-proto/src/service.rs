//! Services: long-running programs in the cell (dev servers, databases) with a readiness
//! probe, a restart policy and a bounded log.

use serde::{Deserialize, Serialize};

/// When a service counts as ready.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Readiness {
    /// A file exists (path in the workspace).
    File {
        /// The path.
        path: String,
    },
    /// A TCP connection succeeds.
    Tcp {
        /// Host (in the cell).
        host: String,
        /// Port.
        port: u16,
    },
    /// An HTTP GET answers with a status below 400.
    Http {
        /// The URL (http:// only).
        url: String,
    },
    /// A command (run with `sh -c`) exits 0.
    Command {
        /// The command line.
        command: String,
    },
}

impl Readiness {
    /// A TCP probe of `HOST:PORT` (an IPv6 host in brackets); `None` if `address` is not one.
    pub fn tcp(address: &str) -> Option<Readiness> {
        let (host, port) = address.rsplit_once(':')?;
        Some(Readiness::Tcp {
            host: host
                .trim_start_matches('[')
                .trim_end_matches(']')
                .to_owned(),
            port: port.parse().ok()?,
        })
    }
}

/// What happens when a service exits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RestartPolicy {
    /// Nothing.
    No,
    /// Start it again when it exits with a failure (not when stopped).
    OnFailure,
}

/// Where a service is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServiceState {
    /// Started, not ready yet.
    Starting,
    /// Ready.
    Ready,
    /// Never became ready.
    Failed,
    /// Exited on its own after it was ready.
    Exited,
    /// Stopped on request.
    Stopped,
}

/// A service, as reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServiceInfo {
    /// Its name.
    pub name: String,
    /// Its state.
    pub state: ServiceState,
    /// Why it failed (`exited_before_ready`, `readiness_timeout`) or how it was stopped
    /// (`sigterm`, `sigkill`).
    pub reason: Option<String>,
    /// Its exit code, once it exited.
    pub exit_code: Option<i32>,
    /// The signal that ended it, if one did.
    pub signal: Option<i32>,
    /// Its pid in the cell, while it runs.
    pub pid: Option<u32>,
    /// How many times it was restarted.
    pub restarts: u32,
    /// The command.
    pub argv: Vec<String>,
    /// Log bytes produced so far.
    pub log_end: u64,
}

/// Service requests (host to agent) and their answers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum ServiceMessage {
    /// Start a service and answer once it is ready or has failed: `Status`.
    Start {
        /// Request id.
        id: u64,
        /// Its name (unique in the workspace while it runs).
        name: String,
        /// The command.
        argv: Vec<String>,
        /// Working directory in the workspace.
        cwd: String,
        /// The whole environment.
        env: Vec<(String, String)>,
        /// The readiness probe; none: ready once started.
        ready: Option<Readiness>,
        /// How long readiness may take.
        ready_timeout_ms: u64,
        /// Time between probes.
        interval_ms: u64,
        /// The restart policy.
        restart: RestartPolicy,
    },
    /// Stop a service: SIGTERM to its process group, SIGKILL after `grace_ms`. Answered by
    /// `Status`.
    Stop {
        /// Request id.
        id: u64,
        /// The service.
        name: String,
        /// Grace period.
        grace_ms: u64,
    },
    /// One service's status: `Status`.
    Query {
        /// Request id.
        id: u64,
        /// The service.
        name: String,
    },
    /// Every service: `List`.
    ListAll {
        /// Request id.
        id: u64,
    },
    /// Log bytes from `cursor` (stdout and stderr together, as produced): `Log` and one data
    /// chunk.
    Logs {
        /// Request id.
        id: u64,
        /// The service.
        name: String,
        /// Absolute position to read from.
        cursor: u64,
        /// At most this many bytes.
        max_bytes: u64,
        /// Wait up to this long for bytes past `cursor` (following a log).
        wait_ms: u64,
    },

    // ---- agent to host ----
    /// A service's status.
    Status {
        /// The request.
        id: u64,
        /// The service.
        service: ServiceInfo,
    },
    /// The services.
    List {
        /// The `ListAll` request.
        id: u64,
        /// One entry each.
        services: Vec<ServiceInfo>,
    },
    /// Log bytes; `len` bytes follow as one data chunk.
    Log {
        /// The `Logs` request.
        id: u64,
        /// Absolute position of the first byte returned.
        start: u64,
        /// Length of the data chunk that follows.
        len: u64,
        /// Bytes between the cursor asked for and `start` no longer kept.
        lost: u64,
        /// Everything logged so far.
        end: u64,
        /// The service's state.
        state: ServiceState,
    },
}

/// How a service is started, on both sides of the protocol (the agent keeps it for restarts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceSpec {
    /// Its name.
    pub name: String,
    /// The command.
    pub argv: Vec<String>,
    /// Working directory in the workspace.
    pub cwd: String,
    /// The whole environment.
    pub env: Vec<(String, String)>,
    /// The readiness probe.
    pub ready: Option<Readiness>,
    /// How long readiness may take.
    pub ready_timeout: std::time::Duration,
    /// Time between probes.
    pub interval: std::time::Duration,
    /// The restart policy.
    pub restart: RestartPolicy,
}

impl ServiceSpec {
    /// The request that starts it.
    pub fn into_message(self, id: u64) -> ServiceMessage {
        ServiceMessage::Start {
            id,
            name: self.name,
            argv: self.argv,
            cwd: self.cwd,
            env: self.env,
            ready: self.ready,
            ready_timeout_ms: self.ready_timeout.as_millis() as u64,
            interval_ms: self.interval.as_millis() as u64,
            restart: self.restart,
        }
    }
}

impl ServiceMessage {
    /// The request id.
    pub fn id(&self) -> u64 {
        match self {
            ServiceMessage::Start { id, .. }
            | ServiceMessage::Stop { id, .. }
            | ServiceMessage::Query { id, .. }
            | ServiceMessage::ListAll { id }
            | ServiceMessage::Logs { id, .. }
            | ServiceMessage::Status { id, .. }
            | ServiceMessage::List { id, .. }
            | ServiceMessage::Log { id, .. } => *id,
        }
    }
}

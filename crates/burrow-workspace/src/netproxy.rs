//! The network proxy of a workspace in `allow` mode: a small host process (`burrow netproxy`,
//! started detached with the cell) serving the port the cell opened on its loopback, for as
//! long as the cell lives. A `burrow run` cell's proxy runs in burrow itself instead; this is
//! for cells that outlive the command that started them.
//!
//! Every refused attempt goes to the workspace's audit log and to `network-denied.jsonl`,
//! from which `exec` reports the ones made while its command ran.

use std::io::Write;
use std::net::TcpListener;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use burrow_policy::NetworkRules;
use burrow_proxy::{Denial, DenialSink, Proxy, Resolver};

use crate::error::{Result, WorkspaceError};
use crate::layout::WorkspaceDir;
use crate::store::CellRecord;

/// How often the proxy checks that its cell still lives.
const WATCH_INTERVAL: Duration = Duration::from_millis(500);

/// The file of refused attempts, one JSON [`Denial`] per line.
fn denials_file(dir: &WorkspaceDir) -> PathBuf {
    dir.root().join("network-denied.jsonl")
}

/// Starts the proxy process for a cell just started, handing it the cell's listening socket.
pub fn spawn(
    dir: &WorkspaceDir,
    rules: &NetworkRules,
    listener: &TcpListener,
    cell: &CellRecord,
) -> Result<()> {
    let rules = serde_json::to_string(rules).map_err(|error| {
        WorkspaceError::Invalid(format!("cannot encode the allowlist: {error}"))
    })?;
    let binary = std::env::current_exe().map_err(WorkspaceError::io("/proc/self/exe"))?;
    let mut command = std::process::Command::new(binary);
    command
        .arg("netproxy")
        .arg("--dir")
        .arg(dir.root())
        .args(["--cell-pid", &cell.pid.to_string()])
        .args(["--cell-start", &cell.start_time.to_string()])
        .args(["--rules", &rules, "--listen-fd", "3"]);
    crate::detach::spawn_with_socket(command, listener.as_fd())
        .map_err(WorkspaceError::io("burrow netproxy"))?;
    Ok(())
}

/// `burrow netproxy`: serves `listener` for the cell `cell_pid` (started at `cell_start`) and
/// returns when the cell is gone.
pub fn serve(
    dir: &Path,
    rules: NetworkRules,
    listener: TcpListener,
    cell_pid: u32,
    cell_start: u64,
) -> Result<()> {
    let dir = WorkspaceDir::new(dir);
    let sink = Arc::new(FileSink {
        dir,
        lock: Mutex::new(()),
    });
    Proxy::new(rules, Resolver::from_env(), sink)
        .spawn(listener)
        .map_err(WorkspaceError::io("serve the network proxy"))?;
    while crate::cell::start_time(cell_pid) == Some(cell_start) {
        std::thread::sleep(WATCH_INTERVAL);
    }
    Ok(())
}

/// The attempts refused between `from_ms` and `to_ms` (Unix milliseconds), in order.
pub fn denials_between(dir: &WorkspaceDir, from_ms: u64, to_ms: u64) -> Vec<Denial> {
    let Ok(text) = std::fs::read_to_string(denials_file(dir)) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<Denial>(line).ok())
        .filter(|denial| (from_ms..=to_ms).contains(&denial.at_ms))
        .collect()
}

/// Appends each denial to the workspace's file and audit log.
struct FileSink {
    dir: WorkspaceDir,
    /// One line at a time, from the proxy's connection threads.
    lock: Mutex<()>,
}

impl DenialSink for FileSink {
    fn denied(&self, denial: &Denial) {
        let _guard = self.lock.lock();
        if let Ok(mut line) = serde_json::to_string(denial) {
            line.push('\n');
            let appended = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(denials_file(&self.dir))
                .and_then(|mut file| file.write_all(line.as_bytes()));
            if let Err(error) = appended {
                tracing::warn!("cannot record a refused connection: {error}");
            }
        }
        let record = crate::journal::record(
            "network.denied",
            format!("{}:{} ({})", denial.host, denial.port, denial.reason),
        );
        if let Err(error) = crate::journal::append(&self.dir.journal(), &record) {
            tracing::warn!("cannot audit a refused connection: {error}");
        }
    }
}

//! A workspace's cell: starting it with the agent as PID 1, telling whether it still runs, and
//! stopping it.
//!
//! The cell is its own process tree, not a child of any long-lived burrow process: `burrow ws
//! start` (or the first `burrow exec`) starts it and returns. What identifies it afterwards is
//! its pid together with its start time from /proc (so a reused pid is never mistaken for it),
//! recorded in the database.

use std::ffi::OsString;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use burrow_policy::{PathContext, Policy};
use burrow_sandbox::{
    AgentLaunch, Cell, CellSpec, Degradation, Stdin, WORKSPACE_DIR, WorkspaceMount,
};
use rustix::fs::{Mode, OFlags};

use crate::error::{Result, WorkspaceError};
use crate::layout::{StateDir, WorkspaceDir};
use crate::store::{CellRecord, StorageMode, WorkspaceRecord};

/// How long a stopping agent gets to end its commands before it is killed.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The longest socket path `sockaddr_un` holds, with its terminating NUL.
const SUN_PATH_MAX: usize = 107;

/// What [`start`] made.
#[derive(Debug)]
pub struct Started {
    /// The record to store.
    pub cell: CellRecord,
    /// Layers the cell runs without.
    pub degraded: Vec<Degradation>,
}

/// Starts a workspace's cell. The caller holds the workspace's lock, has made sure no cell
/// runs, and must be single-threaded.
pub fn start(state: &StateDir, record: &WorkspaceRecord, policy: &Policy) -> Result<Started> {
    let dir = state.workspace(&record.id);
    let mount = prepare_files(&dir, record)?;
    let socket = dir.socket();
    remove_if_present(&socket)?;
    let listener = bind(&dir)?;
    let log = rustix::fs::open(
        dir.log(),
        OFlags::WRONLY | OFlags::CREATE | OFlags::TRUNC | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o600),
    )
    .map_err(|e| WorkspaceError::Io {
        path: dir.log(),
        error: e.into(),
    })?;

    let spec = cell_spec(state, policy, mount)?;
    let launch = AgentLaunch {
        args: agent_args(record, policy),
        env: vec![("PATH".to_owned(), burrow_policy::DEFAULT_PATH.to_owned())],
        listener: listener.as_fd(),
        log: log.as_fd(),
    };
    let agent = match Cell::spawn_agent(&spec, &launch) {
        Ok(agent) => agent,
        Err(error) => {
            let _ = std::fs::remove_file(&socket);
            return Err(error.into());
        }
    };
    let start_time = start_time(agent.pid).unwrap_or(0);
    let cell = CellRecord {
        pid: agent.pid,
        start_time,
        cgroup_dirs: agent.cgroup_dirs,
    };
    if let Some(listener) = &agent.proxy_listener
        && let Err(error) = crate::netproxy::spawn(&dir, &policy.network_rules, listener, &cell)
    {
        // A cell in `allow` mode without its proxy would have no network at all.
        stop(&dir, &cell);
        let _ = std::fs::remove_file(&socket);
        return Err(error);
    }
    Ok(Started {
        cell,
        degraded: agent.degraded,
    })
}

/// Makes sure the workspace's directories are in place and clears what a killed agent left
/// behind, then says how to mount the workspace.
fn prepare_files(dir: &WorkspaceDir, record: &WorkspaceRecord) -> Result<WorkspaceMount> {
    match record.mode {
        StorageMode::Overlay => {
            for path in [dir.upper(), dir.work()] {
                ensure_dir(&path)?;
            }
            crate::tree::sweep_files_with_prefix(&dir.upper(), burrow_proto::WRITE_TEMP_PREFIX)?;
            let mut lower: Vec<PathBuf> =
                record.chain.iter().rev().map(|id| dir.layer(id)).collect();
            lower.push(dir.layer(crate::layout::SEED_LAYER));
            Ok(WorkspaceMount::Overlay {
                lower,
                upper: dir.upper(),
                work: dir.work(),
            })
        }
        StorageMode::Copy => {
            crate::tree::sweep_files_with_prefix(&dir.tree(), burrow_proto::WRITE_TEMP_PREFIX)?;
            Ok(WorkspaceMount::Directory(dir.tree()))
        }
    }
}

fn ensure_dir(path: &Path) -> Result<()> {
    match std::fs::create_dir(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(error) => Err(WorkspaceError::Io {
            path: path.to_owned(),
            error,
        }),
    }
}

fn cell_spec(state: &StateDir, policy: &Policy, mount: WorkspaceMount) -> Result<CellSpec> {
    let home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    let context = PathContext {
        cwd: PathBuf::from(WORKSPACE_DIR),
        home,
        // Hidden from the cell: every workspace's files and agent sockets are in it.
        state_dir: Some(state.root().to_path_buf()),
    };
    let mut spec = CellSpec::from_policy(
        policy,
        &context,
        Vec::new(),
        std::iter::empty::<(OsString, OsString)>(),
    )?;
    spec.cwd = PathBuf::from(WORKSPACE_DIR);
    spec.stdin = Stdin::Null;
    spec.workspace = Some(mount);
    spec.hostname = "burrow".to_owned();
    Ok(spec)
}

fn agent_args(record: &WorkspaceRecord, policy: &Policy) -> Vec<String> {
    let mut args = vec![
        "agent".to_owned(),
        "--listen-fd".to_owned(),
        "3".to_owned(),
        "--root".to_owned(),
        WORKSPACE_DIR.to_owned(),
        "--max-write".to_owned(),
        policy.workspace.max_file_write.bytes().to_string(),
    ];
    if let Some(idle) = policy.workspace.idle_timeout {
        args.extend(["--idle-timeout".to_owned(), idle.as_secs().to_string()]);
    }
    if let Some(at) = record.expires_at {
        args.extend(["--expires-at".to_owned(), at.to_string()]);
    }
    args
}

/// Binds the agent's socket, owner-only. A state directory deep enough to overflow
/// `sockaddr_un` is reached through /proc/self/fd instead.
fn bind(dir: &WorkspaceDir) -> Result<UnixListener> {
    let socket = dir.socket();
    let (_dir_fd, address) = socket_address(dir)?;
    // The socket is created with the process's umask; the state directory is owner-only
    // anyway, and the mode is narrowed right after.
    let listener = UnixListener::bind(&address).map_err(WorkspaceError::io(&socket))?;
    std::fs::set_permissions(&socket, std::os::unix::fs::PermissionsExt::from_mode(0o600))
        .map_err(WorkspaceError::io(&socket))?;
    Ok(listener)
}

/// Connects to a workspace's agent socket.
pub fn connect(dir: &WorkspaceDir) -> std::io::Result<UnixStream> {
    let (_dir_fd, address) =
        socket_address(dir).map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    UnixStream::connect(address)
}

/// The path to bind or connect to, and the descriptor that keeps a /proc/self/fd path valid.
fn socket_address(dir: &WorkspaceDir) -> Result<(Option<OwnedFd>, PathBuf)> {
    let socket = dir.socket();
    if socket.as_os_str().len() < SUN_PATH_MAX {
        return Ok((None, socket));
    }
    let fd = rustix::fs::open(
        dir.root(),
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| WorkspaceError::Io {
        path: dir.root().to_owned(),
        error: e.into(),
    })?;
    let address = PathBuf::from(format!(
        "/proc/self/fd/{}/agent.sock",
        std::os::fd::AsRawFd::as_raw_fd(&fd)
    ));
    Ok((Some(fd), address))
}

fn remove_if_present(path: &Path) -> Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(WorkspaceError::Io {
            path: path.to_owned(),
            error,
        }),
    }
}

/// A process's start time (clock ticks since boot), from /proc/PID/stat; `None` if it is gone
/// or a zombie.
pub fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses; the fields after its last
    // ')' are plain: state is field 3, start time field 22.
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_whitespace();
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    fields.nth(18)?.parse().ok()
}

/// Whether the recorded cell is still running.
pub fn is_alive(cell: &CellRecord) -> bool {
    start_time(cell.pid).is_some_and(|now| now == cell.start_time)
}

/// Stops a cell: SIGTERM to the agent (which kills every command and exits, ending the cell),
/// SIGKILL if it has not gone after a grace period, then removes its cgroups and socket.
pub fn stop(dir: &WorkspaceDir, cell: &CellRecord) {
    if let Some(pidfd) = open_verified(cell) {
        let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::TERM);
        if !wait_exit(&pidfd, STOP_GRACE) {
            let _ = rustix::process::pidfd_send_signal(&pidfd, rustix::process::Signal::KILL);
            let _ = wait_exit(&pidfd, STOP_GRACE);
        }
        // Reaps it when this process happens to be its parent (a server that started it).
        let _ = rustix::process::waitid(
            rustix::process::WaitId::PidFd(pidfd.as_fd()),
            rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOHANG,
        );
    }
    clean_up(dir, cell);
}

/// Removes what a stopped (or dead) cell leaves: its cgroups and socket.
pub fn clean_up(dir: &WorkspaceDir, cell: &CellRecord) {
    burrow_sandbox::remove_cgroup_dirs(&cell.cgroup_dirs);
    let _ = std::fs::remove_file(dir.socket());
}

/// A pidfd for the recorded cell, if that process still runs. The start time is checked after
/// the pidfd is open, so the descriptor cannot refer to a process that reused the pid.
fn open_verified(cell: &CellRecord) -> Option<OwnedFd> {
    let pid = rustix::process::Pid::from_raw(i32::try_from(cell.pid).ok()?)?;
    let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()?;
    is_alive(cell).then_some(pidfd)
}

/// Waits until the process behind `pidfd` exits; false on timeout.
fn wait_exit(pidfd: &OwnedFd, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        let mut fds = [rustix::event::PollFd::new(
            pidfd,
            rustix::event::PollFlags::IN,
        )];
        let timeout = rustix::event::Timespec {
            tv_sec: left.as_secs() as i64,
            tv_nsec: i64::from(left.subsec_nanos()),
        };
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) if !fds[0].revents().is_empty() => return true,
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return false,
        }
    }
}

//! Starting a command: in a new cell, or on the host backend.
//!
//! Everything that can be prepared before the clone is (paths, argv, the seccomp program, the
//! cgroup), so the child does only what must happen inside the new namespaces.

use std::ffi::CString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::time::Duration;
use std::time::Instant;

use burrow_policy::{Backend, NetworkMode};
use rustix::pipe::PipeFlags;

use crate::cgroup::CellCgroup;
use crate::child::{self, ChildFds, ChildPlan};
use crate::command::PreparedCommand;
use crate::error::SandboxError;
use crate::limits::{self, LimitPlan, ProcessLimit};
use crate::mounts::MountPlan;
use crate::outcome::{Degradation, LimitEnforcement};
use crate::report::Report;
use crate::seccomp::SeccompProgram;
use crate::spec::CellSpec;
use crate::sys::{self, Forked};

/// Pipe buffers for the command's output: larger buffers mean fewer wake-ups per megabyte.
const OUTPUT_PIPE_SIZE: usize = 1024 * 1024;

/// How burrow stops what it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// A cell: signals go to its init, which forwards them; SIGKILL to the init ends the cell.
    Cell,
    /// A host process group led by the command.
    HostGroup(libc::pid_t),
}

/// A started command. Call [`Cell::wait`](crate::Cell::wait) to collect its output and status;
/// dropping it unwaited kills it.
#[derive(Debug)]
pub struct Cell {
    pub(crate) target: Target,
    pub(crate) pidfd: OwnedFd,
    pub(crate) stdout: OwnedFd,
    pub(crate) stderr: OwnedFd,
    pub(crate) report: OwnedFd,
    pub(crate) cgroup: Option<CellCgroup>,
    pub(crate) started: Instant,
    pub(crate) degraded: Vec<Degradation>,
    pub(crate) limits: LimitEnforcement,
    pub(crate) reaped: bool,
    /// In `allow` mode, burrow's end of the channel the init sends the proxy's port on.
    pub(crate) proxy: Option<OwnedFd>,
}

impl Cell {
    /// Starts `spec`'s command under its backend.
    ///
    /// The sandbox backend clones the calling process, so the caller must be single-threaded.
    pub fn spawn(spec: &CellSpec) -> Result<Cell, SandboxError> {
        match spec.backend {
            Backend::Sandbox => spawn_cell(spec, None).map(|(cell, _)| cell),
            Backend::Host => crate::host::spawn(spec),
        }
    }

    /// In `allow` mode, the socket listening on the cell's loopback for burrow's proxy to
    /// serve (see `proxy_port`); `None` in the other modes, or once taken. Blocks until the
    /// cell has set up its network; if the set-up failed, `None`, and the cell's report says
    /// why.
    pub fn take_proxy_listener(&mut self) -> Result<Option<std::net::TcpListener>, SandboxError> {
        let Some(channel) = self.proxy.take() else {
            return Ok(None);
        };
        Ok(crate::proxy_port::receive(channel.as_fd())?.map(std::net::TcpListener::from))
    }

    /// Sends SIGKILL to everything the command runs as.
    pub(crate) fn kill(&self) {
        match self.target {
            Target::Cell => {
                let _ =
                    rustix::process::pidfd_send_signal(&self.pidfd, rustix::process::Signal::KILL);
            }
            Target::HostGroup(group) => {
                // SAFETY: kill(2) on a process group we created; no memory involved.
                unsafe { libc::kill(-group, libc::SIGKILL) };
            }
        }
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        if !self.reaped {
            self.kill();
            let _ = rustix::process::waitid(
                rustix::process::WaitId::PidFd(self.pidfd.as_fd()),
                rustix::process::WaitIdOptions::EXITED,
            );
        }
    }
}

/// Pipes between burrow and a new process: burrow's ends and the child's.
pub(crate) struct Pipes {
    pub(crate) stdout: (OwnedFd, OwnedFd),
    pub(crate) stderr: (OwnedFd, OwnedFd),
    pub(crate) report: (OwnedFd, OwnedFd),
}

impl Pipes {
    pub(crate) fn new() -> Result<Pipes, SandboxError> {
        let pipe = || {
            rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(SandboxError::errno("create pipes"))
        };
        let pipes = Pipes {
            stdout: pipe()?,
            stderr: pipe()?,
            report: pipe()?,
        };
        for (read, write) in [&pipes.stdout, &pipes.stderr] {
            // Best effort: the system's pipe-max-size may be lower.
            let _ = rustix::pipe::fcntl_setpipe_size(write, OUTPUT_PIPE_SIZE);
            set_nonblocking(read)?;
        }
        set_nonblocking(&pipes.report.0)?;
        Ok(pipes)
    }
}

fn set_nonblocking(fd: &OwnedFd) -> Result<(), SandboxError> {
    let flags = rustix::fs::fcntl_getfl(fd).map_err(SandboxError::errno("configure a pipe"))?;
    rustix::fs::fcntl_setfl(fd, flags | rustix::fs::OFlags::NONBLOCK)
        .map_err(SandboxError::errno("configure a pipe"))
}

/// How to start the agent in a workspace's cell: [`Cell::spawn_agent`].
#[derive(Debug)]
pub struct AgentLaunch<'a> {
    /// Arguments after the program name (`agent --listen-fd 3 ...`).
    pub args: Vec<String>,
    /// The agent's environment.
    pub env: Vec<(String, String)>,
    /// The listening socket, passed to the agent as descriptor 3.
    pub listener: BorrowedFd<'a>,
    /// Where the agent's stderr goes.
    pub log: BorrowedFd<'a>,
}

/// A workspace's cell, started and left running: it outlives the process that started it.
#[derive(Debug)]
pub struct AgentCell {
    /// The cell's init (the agent), as the host sees it.
    pub pid: u32,
    /// Cgroup directories the cell runs in, to remove once it has stopped.
    pub cgroup_dirs: Vec<PathBuf>,
    /// How the limits were enforced.
    pub limits: LimitEnforcement,
    /// Layers the cell runs without.
    pub degraded: Vec<Degradation>,
    /// In `allow` mode, the socket on the cell's loopback that a proxy must serve for as long
    /// as the cell lives (see [`Cell::take_proxy_listener`]).
    pub proxy_listener: Option<std::net::TcpListener>,
}

/// How long an agent's cell may take to set itself up.
const AGENT_SETUP_TIMEOUT: Duration = Duration::from_secs(30);

impl Cell {
    /// Starts a workspace's cell whose init becomes burrow's agent, and returns once the cell is
    /// set up (or refuses with the step that failed). The cell is not killed when the caller
    /// exits. The caller must be single-threaded.
    pub fn spawn_agent(
        spec: &CellSpec,
        launch: &AgentLaunch<'_>,
    ) -> Result<AgentCell, SandboxError> {
        let (mut cell, pid) = spawn_cell(spec, Some(launch))?;
        // The report pipe closes when the agent is exec'd (close-on-exec); before that, only a
        // failure is written to it.
        let deadline = Instant::now() + AGENT_SETUP_TIMEOUT;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(SandboxError::Io {
                    doing: "set up the workspace's cell",
                    error: std::io::Error::from(std::io::ErrorKind::TimedOut),
                });
            }
            let mut fds = [rustix::event::PollFd::new(
                &cell.report,
                rustix::event::PollFlags::IN,
            )];
            let timeout = rustix::event::Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            match rustix::event::poll(&mut fds, Some(&timeout)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(error) => {
                    return Err(SandboxError::errno("wait for the workspace's cell")(error));
                }
            }
            if fds[0].revents().contains(rustix::event::PollFlags::HUP) {
                break;
            }
        }
        for report in Report::read_all(crate::supervise::ReportReader(cell.report.as_fd())) {
            match report {
                Report::SetupFailed {
                    step,
                    errno,
                    detail,
                } => return Err(SandboxError::from_setup(step, errno, detail)),
                Report::ExecFailed { errno, program } => {
                    return Err(SandboxError::Io {
                        doing: "start the agent",
                        error: std::io::Error::other(format!(
                            "{program}: {}",
                            std::io::Error::from_raw_os_error(errno)
                        )),
                    });
                }
                Report::Degraded { step, detail } => cell.degraded.push(Degradation {
                    layer: step.describe().to_owned(),
                    reason: detail,
                }),
                Report::Exited { .. } => {}
            }
        }
        // The port was sent before the agent was exec'd: it is waiting in the channel.
        let proxy_listener = cell.take_proxy_listener()?;
        // From here on the cell lives on its own: neither killed nor reaped by this process.
        cell.reaped = true;
        let cgroup_dirs = cell
            .cgroup
            .take()
            .map(CellCgroup::detach)
            .unwrap_or_default();
        Ok(AgentCell {
            pid: pid as u32,
            cgroup_dirs,
            limits: cell.limits,
            degraded: std::mem::take(&mut cell.degraded),
            proxy_listener,
        })
    }
}

fn spawn_cell(
    spec: &CellSpec,
    agent: Option<&AgentLaunch<'_>>,
) -> Result<(Cell, libc::pid_t), SandboxError> {
    let started = Instant::now();
    let threads = sys::thread_count().map_err(SandboxError::io("count this process's threads"))?;
    if threads > 1 {
        return Err(SandboxError::MultiThreaded { threads });
    }

    let mounts = MountPlan::prepare(spec)?;
    let command = match agent {
        None => Some(PreparedCommand::new(&spec.argv, &spec.env)?),
        Some(_) => None,
    };
    let agent_strings = agent.map(AgentStrings::new).transpose()?;
    // burrow's own binary, bound into an agent's cell and exec'd there.
    let binary = match agent {
        Some(_) => Some(
            rustix::fs::open(
                "/proc/self/exe",
                rustix::fs::OFlags::PATH | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .map_err(SandboxError::errno("open burrow's own binary"))?,
        ),
        None => None,
    };
    let seccomp = match agent {
        None => SeccompProgram::for_network(spec.network),
        Some(_) => SeccompProgram::for_agent(spec.network),
    }
    .map_err(|error| SandboxError::Seccomp(error.to_string()))?;
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let root = rustix::process::geteuid().is_root();

    // The cell's init counts as one process besides the command's.
    let processes = limits::cell_process_limit(root, spec.limits.pids.saturating_add(1));
    let LimitPlan {
        cgroup,
        rlimits,
        degraded,
        enforcement,
    } = limits::plan(spec, processes, 1, true)?;

    let pipes = Pipes::new()?;
    let (go_read, go_write) =
        rustix::pipe::pipe_with(PipeFlags::CLOEXEC).map_err(SandboxError::errno("create pipes"))?;
    let proxy = match spec.network {
        NetworkMode::Allow => Some(crate::proxy_port::channel()?),
        NetworkMode::None | NetworkMode::Loopback | NetworkMode::Host => None,
    };
    let (proxy_parent, proxy_child) = match proxy {
        Some((parent, child)) => (Some(parent), Some(child)),
        None => (None, None),
    };

    // No CLONE_NEWNET: the cell's init creates its network namespace in parallel with the rest
    // of its set-up (see netns.rs).
    let flags = libc::CLONE_NEWUSER
        | libc::CLONE_NEWNS
        | libc::CLONE_NEWPID
        | libc::CLONE_NEWIPC
        | libc::CLONE_NEWUTS
        | libc::CLONE_NEWCGROUP;
    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        writable = mounts.writable.len(),
        hidden = mounts.hidden.len(),
        "cell planned; cloning it"
    );

    let forked = sys::clone_into_namespaces(flags as u64)
        .map_err(|error| SandboxError::Namespaces { error })?;
    let (pid, pidfd) = match forked {
        Forked::Child => {
            let Pipes {
                stdout,
                stderr,
                report,
            } = pipes;
            drop((stdout.0, stderr.0, report.0, go_write, proxy_parent));
            let plan = ChildPlan {
                started,
                spec,
                mounts: &mounts,
                seccomp: &seccomp,
                rlimits: &rlimits,
                command: command.as_ref(),
                agent: match (agent, &agent_strings, &binary) {
                    (Some(launch), Some(strings), Some(binary)) => Some(child::AgentExec {
                        binary: binary.as_fd(),
                        listener: launch.listener,
                        log: launch.log,
                        argv: &strings.argv,
                        envp: &strings.envp,
                    }),
                    _ => None,
                },
                pid_max: match processes {
                    ProcessLimit::PidMax(value) => Some(value),
                    ProcessLimit::Rlimit | ProcessLimit::Cgroup { .. } => None,
                },
                uid,
                gid,
            };
            child::run(
                &plan,
                ChildFds {
                    stdout: stdout.1,
                    stderr: stderr.1,
                    report: report.1,
                    go: go_read,
                    proxy: proxy_child,
                },
            )
        }
        Forked::Parent { pid, pidfd } => (pid, pidfd),
    };
    drop((go_read, proxy_child));
    let Pipes {
        stdout,
        stderr,
        report,
    } = pipes;
    drop((stdout.1, stderr.1, report.1));

    let mut cell = Cell {
        target: Target::Cell,
        pidfd,
        stdout: stdout.0,
        stderr: stderr.0,
        report: report.0,
        cgroup,
        started,
        degraded,
        limits: enforcement,
        reaped: false,
        proxy: proxy_parent,
    };
    if let Some(cgroup) = &cell.cgroup
        && let Err(error) = cgroup.add(pid)
    {
        // Dropping the cell kills and reaps it.
        cell.cgroup = None;
        return Err(SandboxError::Cgroup(format!(
            "cannot move the cell into it: {error}"
        )));
    }
    tracing::debug!(
        elapsed_us = started.elapsed().as_micros() as u64,
        "cell cloned and placed"
    );
    // The child may already have failed and exited; its report says why, so EPIPE is fine.
    let _ = rustix::io::write(&go_write, &[1]);
    drop(go_write);
    Ok((cell, pid))
}

/// An agent's argv and environment as C strings, made before the clone.
struct AgentStrings {
    argv: Vec<CString>,
    envp: Vec<CString>,
}

impl AgentStrings {
    fn new(launch: &AgentLaunch<'_>) -> Result<AgentStrings, SandboxError> {
        let c_string = |text: String| {
            CString::new(text).map_err(|_| {
                SandboxError::InvalidCommand("an agent argument contains a NUL byte".to_owned())
            })
        };
        let argv = std::iter::once("burrow".to_owned())
            .chain(launch.args.iter().cloned())
            .map(c_string)
            .collect::<Result<_, _>>()?;
        let envp = launch
            .env
            .iter()
            .map(|(name, value)| c_string(format!("{name}={value}")))
            .collect::<Result<_, _>>()?;
        Ok(AgentStrings { argv, envp })
    }
}

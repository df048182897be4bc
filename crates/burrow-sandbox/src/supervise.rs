//! Waiting for a command: its output, its timeout, the signals burrow receives meanwhile, and
//! how it ended.
//!
//! Output is read as fast as the command writes it, whatever the sink keeps, so a command never
//! blocks on a full pipe. When the command ends, burrow reads what is left in the pipes; output
//! still arriving after that comes from a process that escaped the cell's accounting (which a
//! cell prevents, and the host backend cannot), so reading stops after a short grace period.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::{Duration, Instant};

use burrow_output::{OutputSink, Stream};
use rustix::event::{PollFd, PollFlags};

use crate::error::SandboxError;
use crate::outcome::{ExecError, Outcome, Termination};
use crate::report::Report;
use crate::spawn::{Cell, Target};
use crate::sys::{self, SignalSet};

/// How long output may still arrive once the command has ended.
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Bytes read per read(2): large enough that a fast writer costs few system calls.
const READ_CHUNK: usize = 256 * 1024;

/// Signals burrow passes on to the command while it waits.
const FORWARDED: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// How to wait.
#[derive(Debug, Clone, Default)]
pub struct WaitOptions {
    /// Kill the command after this long.
    pub timeout: Option<Duration>,
    /// Pass SIGINT, SIGTERM, SIGHUP and SIGQUIT that burrow receives on to the command, instead
    /// of dying of them. Changes this thread's signal mask while waiting.
    pub forward_signals: bool,
}

impl Cell {
    /// Reads the command's output into `sink` until it ends, and returns how it ended.
    pub fn wait(
        mut self,
        sink: &mut dyn OutputSink,
        options: &WaitOptions,
    ) -> Result<Outcome, SandboxError> {
        let forwarder = if options.forward_signals {
            Some(SignalForwarder::install()?)
        } else {
            None
        };
        let deadline = options.timeout.map(|timeout| self.started + timeout);
        let mut buffer = vec![0u8; READ_CHUNK];
        let mut stdout_open = true;
        let mut stderr_open = true;
        let mut status: Option<rustix::process::WaitIdStatus> = None;
        let mut timed_out = false;
        let mut drain_until: Option<Instant> = None;

        while status.is_none() || stdout_open || stderr_open {
            let now = Instant::now();
            if let Some(limit) = drain_until
                && now >= limit
            {
                break;
            }
            if let Some(deadline) = deadline
                && !timed_out
                && status.is_none()
                && now >= deadline
            {
                self.kill();
                timed_out = true;
            }
            let wake_at = [
                deadline.filter(|_| !timed_out && status.is_none()),
                drain_until,
            ]
            .into_iter()
            .flatten()
            .min();

            let mut fds = Vec::with_capacity(4);
            let mut roles = Vec::with_capacity(4);
            if stdout_open {
                fds.push(PollFd::new(&self.stdout, PollFlags::IN));
                roles.push(Role::Stdout);
            }
            if stderr_open {
                fds.push(PollFd::new(&self.stderr, PollFlags::IN));
                roles.push(Role::Stderr);
            }
            if status.is_none() {
                fds.push(PollFd::new(&self.pidfd, PollFlags::IN));
                roles.push(Role::Exit);
            }
            if let Some(forwarder) = &forwarder {
                fds.push(PollFd::new(&forwarder.fd, PollFlags::IN));
                roles.push(Role::Signal);
            }
            let timeout = wake_at.map(|at| {
                let left = at.saturating_duration_since(now);
                rustix::event::Timespec {
                    tv_sec: left.as_secs() as i64,
                    tv_nsec: i64::from(left.subsec_nanos()),
                }
            });
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(error) => return Err(SandboxError::io("wait for the command")(error.into())),
            }
            let ready: Vec<(Role, PollFlags)> = roles
                .iter()
                .zip(&fds)
                .map(|(role, fd)| (*role, fd.revents()))
                .filter(|(_, revents)| !revents.is_empty())
                .collect();
            drop(fds);

            for (role, _) in ready {
                match role {
                    Role::Stdout => {
                        stdout_open = pump(self.stdout.as_fd(), Stream::Stdout, &mut buffer, sink)?;
                    }
                    Role::Stderr => {
                        stderr_open = pump(self.stderr.as_fd(), Stream::Stderr, &mut buffer, sink)?;
                    }
                    Role::Exit => {
                        status = reap(&self.pidfd)?;
                        if status.is_some() {
                            self.reaped = true;
                            if let Target::HostGroup(_) = self.target {
                                // What the command left running in its group goes with it.
                                self.kill();
                            }
                            drain_until = Some(Instant::now() + DRAIN_GRACE);
                        }
                    }
                    Role::Signal => {
                        if let Some(forwarder) = &forwarder {
                            forwarder.forward(&self);
                        }
                    }
                }
            }
        }
        let duration = self.started.elapsed();
        drop(forwarder);

        let Some(init_status) = status else {
            return Err(SandboxError::io("wait for the command")(io::Error::other(
                "the output pipes closed but the command did not end",
            )));
        };
        let reports = Report::read_all(ReportReader(self.report.as_fd()));
        let mut exec_error = None;
        let mut command_status = None;
        let mut degraded = std::mem::take(&mut self.degraded);
        for report in reports {
            match report {
                Report::SetupFailed {
                    step,
                    errno,
                    detail,
                } => return Err(SandboxError::from_setup(step, errno, detail)),
                Report::Degraded { step, detail } => degraded.push(crate::outcome::Degradation {
                    layer: step.describe().to_owned(),
                    reason: detail,
                }),
                Report::ExecFailed { errno, program } => {
                    exec_error = Some(ExecError { errno, program });
                }
                Report::Exited { wait_status } => command_status = Some(wait_status),
            }
        }

        let termination = match (self.target, command_status) {
            // The init reported the command's own status.
            (Target::Cell, Some(raw)) => termination_of(raw),
            // The init itself died (a timeout, the OOM killer, an outside SIGKILL), or this is
            // the host backend, whose status is the command's.
            _ => termination_of_waitid(&init_status),
        };
        let oom_killed = self
            .cgroup
            .as_ref()
            .is_some_and(|cgroup| cgroup.oom_killed());
        Ok(Outcome {
            termination,
            timed_out,
            oom_killed,
            exec_error,
            duration,
            degraded,
            limits: self.limits,
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Role {
    Stdout,
    Stderr,
    Exit,
    Signal,
}

/// Reads what a pipe has (bounded per call, so one busy stream cannot starve the other);
/// returns whether the pipe is still open.
fn pump(
    fd: BorrowedFd<'_>,
    stream: Stream,
    buffer: &mut [u8],
    sink: &mut dyn OutputSink,
) -> Result<bool, SandboxError> {
    for _ in 0..16 {
        match rustix::io::read(fd, &mut *buffer) {
            Ok(0) => return Ok(false),
            Ok(n) => sink.write(stream, &buffer[..n]),
            Err(rustix::io::Errno::AGAIN) => return Ok(true),
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(SandboxError::io("read the command's output")(error.into())),
        }
    }
    Ok(true)
}

fn reap(pidfd: &OwnedFd) -> Result<Option<rustix::process::WaitIdStatus>, SandboxError> {
    match rustix::process::waitid(
        rustix::process::WaitId::PidFd(pidfd.as_fd()),
        rustix::process::WaitIdOptions::EXITED | rustix::process::WaitIdOptions::NOHANG,
    ) {
        Ok(status) => Ok(status),
        Err(rustix::io::Errno::INTR) => Ok(None),
        Err(error) => Err(SandboxError::io("collect the command's status")(
            error.into(),
        )),
    }
}

fn termination_of(raw: i32) -> Termination {
    if libc::WIFSIGNALED(raw) {
        Termination::Signaled(libc::WTERMSIG(raw))
    } else {
        Termination::Exited(libc::WEXITSTATUS(raw))
    }
}

fn termination_of_waitid(status: &rustix::process::WaitIdStatus) -> Termination {
    match (status.exit_status(), status.terminating_signal()) {
        (_, Some(signal)) => Termination::Signaled(signal),
        (Some(code), None) => Termination::Exited(code),
        (None, None) => Termination::Exited(125),
    }
}

/// Reads a non-blocking pipe until it is empty.
pub(crate) struct ReportReader<'a>(pub(crate) BorrowedFd<'a>);

impl io::Read for ReportReader<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        match rustix::io::read(self.0, buffer) {
            Ok(n) => Ok(n),
            Err(rustix::io::Errno::AGAIN) => Ok(0),
            Err(error) => Err(error.into()),
        }
    }
}

/// Blocks the signals burrow passes on to a command (SIGINT, SIGTERM, SIGHUP, SIGQUIT) in this
/// thread and receives them through a signalfd instead; the previous mask is restored on drop.
pub struct SignalForwarder {
    fd: OwnedFd,
    previous: SignalSet,
}

impl SignalForwarder {
    /// Starts receiving the forwarded signals.
    pub fn install() -> Result<SignalForwarder, SandboxError> {
        let set = SignalSet::of(&FORWARDED);
        let previous = sys::set_signal_mask(libc::SIG_BLOCK, &set)
            .map_err(SandboxError::io("block signals"))?;
        let fd = sys::signalfd(&set, true).map_err(SandboxError::io("receive signals"))?;
        Ok(SignalForwarder { fd, previous })
    }

    /// The signals received since the last call.
    pub fn pending(&self) -> Vec<i32> {
        let mut signals = Vec::new();
        while let Ok(Some((signal, _))) = sys::read_signal(self.fd.as_fd()) {
            signals.push(signal);
        }
        signals
    }

    fn forward(&self, cell: &Cell) {
        while let Ok(Some((signal, _))) = sys::read_signal(self.fd.as_fd()) {
            match cell.target {
                Target::Cell => {
                    if let Some(signal) = rustix::process::Signal::from_named_raw(signal) {
                        let _ = rustix::process::pidfd_send_signal(&cell.pidfd, signal);
                    }
                }
                Target::HostGroup(group) => {
                    // SAFETY: kill(2) on the command's process group; no memory involved.
                    unsafe { libc::kill(-group, signal) };
                }
            }
        }
    }
}

impl std::fmt::Debug for SignalForwarder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SignalForwarder")
            .field("fd", &self.fd)
            .finish_non_exhaustive()
    }
}

impl AsFd for SignalForwarder {
    /// Readable while signals are pending.
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl Drop for SignalForwarder {
    fn drop(&mut self) {
        // A signal that arrives after the command ended was for the command; consume it rather
        // than die of it when the mask is restored.
        while let Ok(Some(_)) = sys::read_signal(self.fd.as_fd()) {}
        let _ = sys::set_signal_mask(libc::SIG_SETMASK, &self.previous);
    }
}

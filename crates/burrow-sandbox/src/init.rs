//! PID 1 of a cell: starts the command, forwards burrow's signals to it, reaps every orphan,
//! and reports how the command ended. When the command exits the init exits too, and the kernel
//! kills whatever the command left behind in the namespace.

use std::ffi::{CString, OsStr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::Stdio;

use crate::command::PreparedCommand;
use crate::error::Step;
use crate::report::Report;
use crate::spec::Stdin;
use crate::sys::{self, SignalSet};

/// Signals that burrow may send to the cell, forwarded to the command's process group.
const FORWARDED: [libc::c_int; 7] = [
    libc::SIGINT,
    libc::SIGTERM,
    libc::SIGHUP,
    libc::SIGQUIT,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGWINCH,
];

/// Descriptors the command needs.
pub(crate) struct CommandFds {
    pub(crate) stdout: OwnedFd,
    pub(crate) stderr: OwnedFd,
    pub(crate) report: OwnedFd,
}

/// Starts the command and supervises it. Never returns.
pub(crate) fn run(
    command: &PreparedCommand,
    fds: CommandFds,
    stdin: Stdin,
    umask: rustix::fs::Mode,
) -> ! {
    let report = fds.report.as_fd();
    let fail = |step: Step, error: std::io::Error| -> ! {
        Report::SetupFailed {
            step,
            errno: error.raw_os_error().unwrap_or(libc::EIO),
            detail: String::new(),
        }
        .send(report);
        sys::exit_now(125)
    };

    // The command starts with an empty signal mask (posix_spawn passes the caller's on), so
    // the init blocks nothing until the command runs; meanwhile its handlers record what
    // arrives, to be forwarded below. (posix_spawn resets handled signals in the command.)
    if let Err(error) = sys::set_signal_mask(libc::SIG_SETMASK, &SignalSet::empty()) {
        fail(Step::Signals, error);
    }
    for &signal in &FORWARDED {
        if let Err(error) = sys::install_recording_handler(signal) {
            fail(Step::Signals, error);
        }
    }

    // Looked up here, inside the cell, in its own view of the filesystem.
    let program = match command.resolve() {
        Ok(program) => program,
        Err(errno) => exec_failed(report, errno, command),
    };
    // The command gets the caller's umask, and nothing burrow's caller left open: every
    // descriptor above stderr is closed on exec (the ones it needs are dup'ed onto 0-2).
    rustix::process::umask(umask);
    if let Err(error) = sys::cloexec_from(3) {
        fail(Step::Fork, error);
    }
    let child = match spawn(command, &program, &fds.stdout, &fds.stderr, stdin) {
        Ok(pid) => pid,
        Err(error) => exec_failed(report, error.raw_os_error().unwrap_or(libc::EIO), command),
    };
    drop((fds.stdout, fds.stderr));

    // From here on, signals are blocked and read from a signalfd (the handlers above keep the
    // init of a pid namespace receiving them at all).
    let mut watched = FORWARDED.to_vec();
    watched.push(libc::SIGCHLD);
    let set = SignalSet::of(&watched);
    if let Err(error) = sys::set_signal_mask(libc::SIG_BLOCK, &set) {
        fail(Step::Signals, error);
    }
    let signals = match sys::signalfd(&set, false) {
        Ok(fd) => fd,
        Err(error) => fail(Step::Signals, error),
    };
    // Signals that arrived before the signalfd existed.
    for signal in sys::take_caught_signals() {
        // SAFETY: kill(2) on the command's process group; no memory involved.
        unsafe { libc::kill(-child, signal) };
    }
    // A command that ended before SIGCHLD was blocked left no signal behind: reap it now.
    let status = reap(child).unwrap_or_else(|| supervise(child, signals.as_fd()));
    Report::Exited {
        wait_status: status,
    }
    .send(report);
    sys::exit_now(exit_code(status))
}

/// Starts the command with posix_spawn, which std uses when nothing has to run between fork and
/// exec: a vfork-style child that shares the init's memory until it execs, so starting the
/// command copies no page tables. The command leads its own process group, so that forwarded
/// signals reach everything it starts; std gives it default SIGPIPE, and it inherits the init's
/// (empty) signal mask.
fn spawn(
    command: &PreparedCommand,
    program: &CString,
    stdout: &OwnedFd,
    stderr: &OwnedFd,
    stdin: Stdin,
) -> std::io::Result<libc::pid_t> {
    let program = OsStr::from_bytes(program.as_bytes());
    let build = |script: bool| -> std::io::Result<std::process::Command> {
        let mut child = if script {
            // A script without a #! line runs with the shell, as execvp does.
            let mut shell = std::process::Command::new("/bin/sh");
            shell.arg0("sh").arg(program);
            shell
        } else {
            let mut direct = std::process::Command::new(program);
            direct.arg0(command.name());
            direct
        };
        child
            .args(command.args())
            .env_clear()
            .envs(command.env())
            .process_group(0)
            .stdin(match stdin {
                Stdin::Inherit => Stdio::inherit(),
                Stdin::Null => Stdio::null(),
            })
            .stdout(stdout.try_clone()?)
            .stderr(stderr.try_clone()?);
        Ok(child)
    };
    let spawned = match build(false)?.spawn() {
        Err(error) if error.raw_os_error() == Some(libc::ENOEXEC) => build(true)?.spawn(),
        other => other,
    }?;
    Ok(spawned.id() as libc::pid_t)
}

fn exec_failed(report: BorrowedFd<'_>, errno: i32, command: &PreparedCommand) -> ! {
    Report::ExecFailed {
        errno,
        program: command.name().to_string_lossy().into_owned(),
    }
    .send(report);
    sys::exit_now(if errno == libc::ENOENT { 127 } else { 126 })
}

/// Waits for the command, forwarding signals and reaping orphans; returns its wait status.
fn supervise(child: libc::pid_t, signals: BorrowedFd<'_>) -> i32 {
    loop {
        let Ok(Some((signal, sender))) = sys::read_signal(signals) else {
            continue;
        };
        if signal == libc::SIGCHLD {
            if let Some(status) = reap(child) {
                return status;
            }
        } else if sender == 0 {
            // A sender pid of 0 means the signal came from outside the namespace: from burrow.
            // Signals the command's own processes send to PID 1 are ignored.
            // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
            unsafe { libc::kill(-child, signal) };
        }
    }
}

/// Reaps every exited child; returns the command's status once it is among them.
fn reap(command: libc::pid_t) -> Option<i32> {
    let mut command_status = None;
    loop {
        let mut status = 0;
        // SAFETY: waitpid writes the status into a local integer.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid <= 0 {
            return command_status;
        }
        if pid == command {
            command_status = Some(status);
        }
    }
}

/// The exit code of a wait status, the shell's way: 128+N for a signal.
pub(crate) fn exit_code(status: i32) -> i32 {
    if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else if libc::WIFSIGNALED(status) {
        128 + libc::WTERMSIG(status)
    } else {
        125
    }
}

//! The host backend: no isolation, for commands the caller trusts. The command gets its own
//! process group (so a timeout can kill what it started), the same rlimits as a cell, the same
//! environment rules, timeout and output handling.

use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

use crate::command::PreparedCommand;
use crate::error::SandboxError;
use crate::limits::{self, LimitPlan, ProcessLimit};
use crate::report::Report;
use crate::rlimit::RlimitPlan;
use crate::spawn::{Cell, Pipes, Target};
use crate::spec::{CellSpec, Stdin};
use crate::sys::{self, SignalSet};

pub(crate) fn spawn(spec: &CellSpec) -> Result<Cell, SandboxError> {
    let started = Instant::now();
    let command = PreparedCommand::new(&spec.argv, &spec.env)?;
    // Resolved before the fork, in the host's view (which is also the command's).
    let program = command.resolve();

    // Memory and CPU for the whole process tree need a cgroup; without one, the memory limit
    // falls back to a per-process address-space limit. RLIMIT_NPROC would count every process
    // of the user on the host, so the process limit needs a cgroup too.
    let LimitPlan {
        cgroup,
        rlimits,
        degraded,
        enforcement,
    } = limits::plan(spec, ProcessLimit::Cgroup { required: false }, 0, false)?;

    let pipes = Pipes::new()?;
    // Built before the fork so the child does not allocate.
    let (argv, envp) = command.pointers();
    let child = sys::fork().map_err(SandboxError::io("fork"))?;
    let Some(pid) = child else {
        exec_on_host(
            &command, program, &argv, &envp, &pipes, &rlimits, spec.stdin,
        )
    };
    let Pipes {
        stdout,
        stderr,
        report,
    } = pipes;
    drop((stdout.1, stderr.1, report.1));
    let pidfd = rustix::process::pidfd_open(
        rustix::process::Pid::from_raw(pid).ok_or_else(|| SandboxError::Io {
            doing: "open a pidfd",
            error: std::io::Error::from_raw_os_error(libc::ESRCH),
        })?,
        rustix::process::PidfdFlags::empty(),
    )
    .map_err(SandboxError::errno("open a pidfd"))?;
    let cell = Cell {
        target: Target::HostGroup(pid),
        pidfd,
        stdout: stdout.0,
        stderr: stderr.0,
        report: report.0,
        cgroup,
        started,
        degraded,
        limits: enforcement,
        reaped: false,
        proxy: None,
    };
    if let Some(cgroup) = &cell.cgroup {
        // The child blocks nothing on this, so it may run briefly outside the cgroup; its
        // children, started after exec, are inside.
        cgroup.add(pid).map_err(|error| {
            SandboxError::Cgroup(format!("cannot move the command into it: {error}"))
        })?;
    }
    Ok(cell)
}

fn exec_on_host(
    command: &PreparedCommand,
    program: Result<std::ffi::CString, i32>,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    pipes: &Pipes,
    rlimits: &RlimitPlan,
    stdin: Stdin,
) -> ! {
    let report = pipes.report.1.as_raw_fd();
    let fail = |fd: std::os::fd::RawFd, errno: i32| -> ! {
        // SAFETY: `fd` is the report pipe, open until exec or exit.
        let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        Report::ExecFailed {
            errno,
            program: command.name().to_string_lossy().into_owned(),
        }
        .send(fd);
        sys::exit_now(if errno == libc::ENOENT { 127 } else { 126 })
    };
    let _ = rustix::process::setpgid(None, None);
    let _ = sys::set_signal_mask(libc::SIG_SETMASK, &SignalSet::empty());
    sys::default_sigpipe();
    if rlimits.apply().is_err() {
        fail(report, libc::EPERM);
    }
    let program = match program {
        Ok(program) => program,
        Err(errno) => fail(report, errno),
    };
    let arranged = (|| -> std::io::Result<()> {
        if stdin == Stdin::Null {
            let null: OwnedFd = rustix::fs::open(
                "/dev/null",
                rustix::fs::OFlags::RDONLY,
                rustix::fs::Mode::empty(),
            )?;
            sys::dup_onto(null.as_raw_fd(), 0)?;
        }
        sys::dup_onto(pipes.stdout.1.as_raw_fd(), 1)?;
        sys::dup_onto(pipes.stderr.1.as_raw_fd(), 2)?;
        // The report pipe moves to 3 (close-on-exec); nothing else of burrow's reaches the
        // command.
        sys::dup_onto_cloexec(report, 3)?;
        sys::close_from(4)
    })();
    if let Err(error) = arranged {
        fail(report, error.raw_os_error().unwrap_or(libc::EIO));
    }
    let mut error = sys::execve(&program, argv, envp);
    if error.raw_os_error() == Some(libc::ENOEXEC) {
        error = sys::execve(c"/bin/sh", &command.as_shell_script(&program), envp);
    }
    fail(3, error.raw_os_error().unwrap_or(libc::EIO))
}

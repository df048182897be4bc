//! Starting a workspace command from the agent: vfork-style, with the command's seccomp
//! addition installed between the clone and the exec.
//!
//! The agent must add [`CommandFilter`] to every command (its own filter lets it use openat2,
//! which commands may not). std's `Command::pre_exec` would do that, but only by forking the
//! whole agent; this does what posix_spawn does instead — `clone(CLONE_VM | CLONE_VFORK)` onto
//! a small stack of its own, the parent suspended until the child has exec'd — and installs
//! the filter on the way. The child only makes system calls: it shares the parent's memory and
//! must not allocate, lock or unwind.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};

use crate::seccomp::CommandFilter;

/// Bytes of stack for the child between the clone and the exec; it runs a handful of system
/// calls.
const CHILD_STACK: usize = 64 * 1024;

/// A command to start.
#[derive(Debug)]
pub struct CommandSpawn<'a> {
    /// The program's path.
    pub program: &'a CStr,
    /// argv, `argv[0]` included.
    pub argv: &'a [CString],
    /// The whole environment, as `NAME=value`.
    pub envp: &'a [CString],
    /// The working directory.
    pub cwd: &'a CStr,
    /// Descriptors for 0, 1 and 2.
    pub stdio: [BorrowedFd<'a>; 3],
    /// Added to the command's seccomp filter.
    pub filter: &'a CommandFilter,
    /// Which process group or session the command leads.
    pub grouping: Grouping,
}

/// Where a spawned command stands among the cell's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grouping {
    /// A process group of its own (a command: killed as a group when it ends).
    ProcessGroup,
    /// A session of its own (a service: detached from the agent's group).
    Session,
    /// A session of its own whose controlling terminal is its standard input (a shell on a
    /// pseudo-terminal: job control, ^C, window size).
    SessionWithTerminal,
}

/// Signals whose disposition the agent changes.
const HANDLED_BY_THE_AGENT: [libc::c_int; 7] = [
    libc::SIGCHLD,
    libc::SIGTERM,
    libc::SIGINT,
    libc::SIGHUP,
    libc::SIGPIPE,
    libc::SIGSEGV,
    libc::SIGBUS,
];

/// What the child needs, prepared by the parent: pointers only, nothing to allocate.
struct ChildPlan {
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    cwd: *const libc::c_char,
    stdio: [RawFd; 3],
    filter: *const CommandFilter,
    grouping: Grouping,
    /// Written by the child when it fails before or at exec: the errno.
    errno: libc::c_int,
}

impl CommandSpawn<'_> {
    /// Starts the command (in a group or session of its own); returns its pid. The error is
    /// the errno of the step that failed (ENOENT, EACCES, ENOEXEC from the exec, say).
    pub fn spawn(&self) -> io::Result<u32> {
        let argv: Vec<*const libc::c_char> = self
            .argv
            .iter()
            .map(|arg| arg.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let envp: Vec<*const libc::c_char> = self
            .envp
            .iter()
            .map(|var| var.as_ptr())
            .chain(std::iter::once(std::ptr::null()))
            .collect();
        let mut plan = ChildPlan {
            program: self.program.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            cwd: self.cwd.as_ptr(),
            stdio: self.stdio.map(|fd| fd.as_raw_fd()),
            filter: self.filter,
            grouping: self.grouping,
            errno: 0,
        };
        // Only the child writes the stack, and nothing reads it back: it need not be zeroed.
        let mut stack: Vec<std::mem::MaybeUninit<u8>> = Vec::with_capacity(CHILD_STACK);
        // The stack grows down: the child starts at the (16-byte aligned) top.
        let top = (stack.as_mut_ptr() as usize + CHILD_STACK) & !15;
        // No signal handler of the agent may run in the child, on the agent's memory, before
        // the child has reset them: everything is blocked across the clone.
        let all = crate::sys::SignalSet::full();
        let previous = crate::sys::set_signal_mask(libc::SIG_SETMASK, &all)?;
        // SAFETY: `child_main` only makes system calls on `plan`, whose pointers (into `argv`,
        // `envp`, the spawn's strings and the filter) outlive the call: with CLONE_VFORK this
        // thread is suspended until the child has exec'd or exited, and `plan` and `stack` are
        // dropped only after. The child has its own stack at `top` and shares nothing else
        // mutable but `plan.errno`, written before the parent resumes.
        let pid = unsafe {
            libc::clone(
                child_main,
                top as *mut libc::c_void,
                libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
                (&raw mut plan).cast(),
            )
        };
        let clone_error = io::Error::last_os_error();
        let _ = crate::sys::set_signal_mask(libc::SIG_SETMASK, &previous);
        drop(stack);
        if pid < 0 {
            return Err(clone_error);
        }
        if plan.errno != 0 {
            // The child exited with 127; collect it before saying why.
            let mut status = 0;
            // SAFETY: waitpid on our own child, status into a local.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            return Err(io::Error::from_raw_os_error(plan.errno));
        }
        Ok(pid as u32)
    }
}

/// The child: its own group or session, stdio in place, default SIGPIPE, working directory, the
/// filter, exec. Any failure is reported through `plan.errno`.
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    // SAFETY: `arg` is the parent's `ChildPlan`, alive and not touched by the suspended parent
    // until this child execs or exits.
    let plan = unsafe { &mut *arg.cast::<ChildPlan>() };
    let fail = |plan: &mut ChildPlan| -> libc::c_int {
        // SAFETY: reading errno right after the failed call, as libc sets it.
        plan.errno = unsafe { *libc::__errno_location() }.max(1);
        // SAFETY: _exit ends the child without touching the shared memory's state.
        unsafe { libc::_exit(127) }
    };
    // SAFETY: each call below is a plain system call on integers and on the NUL-terminated
    // strings and NULL-terminated arrays the parent prepared.
    unsafe {
        let grouped = match plan.grouping {
            Grouping::ProcessGroup => libc::setpgid(0, 0),
            Grouping::Session | Grouping::SessionWithTerminal => libc::setsid(),
        };
        if grouped < 0 {
            return fail(plan);
        }
        for (target, &source) in plan.stdio.iter().enumerate() {
            // dup2 onto itself would keep close-on-exec set; the parent's pipes are never 0-2
            // (the agent's own 0-2 are open), but be exact anyway.
            if source == target as RawFd {
                if libc::fcntl(source, libc::F_SETFD, 0) != 0 {
                    return fail(plan);
                }
            } else if libc::dup2(source, target as RawFd) < 0 {
                return fail(plan);
            }
        }
        if plan.grouping == Grouping::SessionWithTerminal && libc::ioctl(0, libc::TIOCSCTTY, 0) != 0
        {
            return fail(plan);
        }
        // The agent's handlers (SIGCHLD and SIGTERM for its runtime, SIGSEGV and SIGBUS for
        // Rust's stack guard) must not run here, and Rust ignores SIGPIPE, which a command
        // expects at its default: all back to default before the signals are unblocked.
        for signal in HANDLED_BY_THE_AGENT {
            libc::signal(signal, libc::SIG_DFL);
        }
        let empty: libc::sigset_t = std::mem::zeroed();
        libc::sigprocmask(libc::SIG_SETMASK, &empty, std::ptr::null_mut());
        if libc::chdir(plan.cwd) != 0 {
            return fail(plan);
        }
        if (*plan.filter).install().is_err() {
            return fail(plan);
        }
        libc::execve(plan.program, plan.argv, plan.envp);
    }
    fail(plan)
}

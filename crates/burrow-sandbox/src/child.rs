//! The cell's set-up, run by its init (PID 1 of the new namespaces) right after the clone.
//!
//! One ordered sequence, each step commented with why it sits where it does. Any failure is
//! reported to burrow with the step that failed, and the init exits with 125.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use burrow_policy::NetworkMode;
use rustix::process::DumpableBehavior;

use crate::command::PreparedCommand;
use crate::error::Step;
use crate::init::{self, CommandFds};
use crate::landlock::Enforcement;
use crate::mounts::{self, MountPlan};
use crate::report::{AtStep, Report, StepError};
use crate::rlimit::RlimitPlan;
use crate::seccomp::SeccompProgram;
use crate::spec::CellSpec;
use crate::sys;

/// What the parent prepared for the child, before the clone.
pub(crate) struct ChildPlan<'a> {
    /// When spawning began, for the debug log's timings.
    pub(crate) started: std::time::Instant,
    pub(crate) spec: &'a CellSpec,
    pub(crate) mounts: &'a MountPlan,
    pub(crate) seccomp: &'a SeccompProgram,
    pub(crate) rlimits: &'a RlimitPlan,
    /// The command, for a cell that runs one (not for an agent's).
    pub(crate) command: Option<&'a PreparedCommand>,
    /// The cell's pid_max, when it bounds the number of processes.
    pub(crate) pid_max: Option<u64>,
    /// Set for a workspace's cell: the init becomes the agent instead of running a command.
    pub(crate) agent: Option<AgentExec<'a>>,
    pub(crate) uid: u32,
    pub(crate) gid: u32,
}

/// How an agent's cell ends its set-up: by becoming the agent.
pub(crate) struct AgentExec<'a> {
    /// burrow's own executable, opened before the clone.
    pub(crate) binary: BorrowedFd<'a>,
    /// The listening socket, passed on as descriptor 3.
    pub(crate) listener: BorrowedFd<'a>,
    /// The agent's log, passed on as its stderr.
    pub(crate) log: BorrowedFd<'a>,
    /// argv, argv[0] included.
    pub(crate) argv: &'a [CString],
    /// The agent's environment as `NAME=value`.
    pub(crate) envp: &'a [CString],
}

/// The child's ends of the pipes to burrow.
pub(crate) struct ChildFds {
    pub(crate) stdout: OwnedFd,
    pub(crate) stderr: OwnedFd,
    pub(crate) report: OwnedFd,
    pub(crate) go: OwnedFd,
    /// In `allow` mode, where the proxy's listening socket is sent to burrow.
    pub(crate) proxy: Option<OwnedFd>,
}

/// Runs in the cloned child: sets the cell up, then becomes its init. Never returns.
pub(crate) fn run(plan: &ChildPlan<'_>, fds: ChildFds) -> ! {
    let report = fds.report.as_raw_fd();
    // A panic must not unwind into the parent's code, of which the child holds a copy.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let umask = set_up(plan, &fds)?;
        Ok::<_, StepError>(umask)
    }));
    match outcome {
        Ok(Ok(umask)) if plan.agent.is_some() => match &plan.agent {
            Some(agent) => exec_agent(agent, &fds, umask),
            None => sys::exit_now(125),
        },
        Ok(Ok(umask)) => match plan.command {
            Some(command) => init::run(
                command,
                CommandFds {
                    stdout: fds.stdout,
                    stderr: fds.stderr,
                    report: fds.report,
                },
                plan.spec.stdin,
                umask,
            ),
            None => sys::exit_now(125),
        },
        Ok(Err(error)) => {
            // SAFETY: `report` is the child's report pipe, open for the life of this process.
            error
                .report()
                .send(unsafe { std::os::fd::BorrowedFd::borrow_raw(report) });
            sys::exit_now(125)
        }
        Err(_) => sys::exit_now(125),
    }
}

/// The set-up sequence. Returns the caller's umask, for the command.
fn set_up(plan: &ChildPlan<'_>, fds: &ChildFds) -> Result<rustix::fs::Mode, StepError> {
    // 1. Die with burrow: when the thread that cloned this process exits, the kernel sends
    //    SIGKILL here, and the death of a pid namespace's init kills everything in it. An
    //    agent's cell outlives the command that started it.
    if plan.agent.is_none() {
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
            .at(Step::ParentDeathSignal)?;
    }

    // 2. Start creating the network namespace on another CPU (see netns.rs): it is the slowest
    //    step, and nothing needs it until step 11.
    let network = match plan.spec.network {
        NetworkMode::Host => None,
        NetworkMode::None | NetworkMode::Loopback | NetworkMode::Allow => {
            Some(crate::netns::NetnsHelper::start().at(Step::Loopback)?)
        }
    };

    // 3. Map the caller's uid and gid: until then the new user namespace has no ids at all.
    crate::userns::map_caller(plan.uid, plan.gid)?;
    log_step(plan, "user namespace mapped");

    // 4. Create files with exactly the modes asked for while building; the command gets the
    //    caller's umask back.
    let caller_umask = rustix::process::umask(rustix::fs::Mode::empty());

    // 5. Build the root and pivot into it; the host's tree is detached for good.
    let new_root = mounts::build_root(plan.mounts, plan.pid_max)?;
    mounts::enter_root(new_root, &plan.mounts.cwd)?;
    log_step(plan, "root built and entered");

    // 6. Name the host (needs CAP_SYS_ADMIN here).
    rustix::system::sethostname(plan.spec.hostname.as_bytes()).at(Step::Hostname)?;

    // 7. Wait until burrow has moved this process into the cell's cgroup, so that the command
    //    starts inside it. End of file means burrow died: stop here.
    wait_for_parent(fds.go.as_fd())?;
    log_step(plan, "placed in cgroup");

    // 8. Resource limits, inherited by the command; hard limits cannot be raised again.
    plan.rlimits.apply()?;

    // 9. A new session with no controlling terminal (a sandboxed process cannot inject input
    //    into the caller's terminal), and no core dumps or /proc access to this init's memory
    //    and descriptors (the command must not reach the report pipe through /proc/1/fd).
    rustix::process::setsid().at(Step::NewSession)?;
    rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable).at(Step::NewSession)?;

    // 10. Landlock. It needs no_new_privs (or CAP_SYS_ADMIN), and it does not restrict what
    //     the next step does, so it runs while the network namespace may still be in the
    //     making.
    rustix::thread::set_no_new_privs(true).at(Step::NoNewPrivs)?;
    let mut writable = plan.mounts.writable.clone();
    if plan.mounts.workspace.is_some() {
        writable.push(std::path::PathBuf::from(crate::spec::WORKSPACE_DIR));
    }
    match crate::landlock::apply(
        &writable,
        plan.spec.network,
        plan.agent.as_ref().map(|agent| agent.binary),
    )? {
        Enforcement::Full | Enforcement::Partial => {}
        Enforcement::None if plan.spec.allow_degraded => Report::Degraded {
            step: Step::Landlock,
            detail: "the kernel does not enforce Landlock".to_owned(),
        }
        .send(fds.report.as_fd()),
        Enforcement::None => {
            return Err(std::io::Error::other(
                "the kernel does not enforce Landlock; run `burrow doctor`, or pass \
                 --allow-degraded to run without it",
            ))
            .at(Step::Landlock);
        }
    }
    log_step(plan, "landlock applied");

    // 11. Join the private network and bring its loopback up: setns needs CAP_SYS_ADMIN and
    //     the interface CAP_NET_ADMIN, so this is the last step before the capabilities go.
    if let Some(helper) = network {
        helper.join().at(Step::Loopback)?;
        sys::bring_loopback_up().at(Step::Loopback)?;
    }
    // 11b. In `allow` mode, the proxy's port: bound here, before the command exists, so no
    //      process of the cell can take it; served by burrow on the host side.
    if let Some(channel) = &fds.proxy {
        crate::proxy_port::open_and_hand_over(channel.as_fd()).at(Step::ProxyPort)?;
    }
    log_step(plan, "network joined");

    // 12. Capabilities: the bounding set and securebits need CAP_SETPCAP, so they go before
    //     the sets themselves are cleared.
    crate::caps::drop_all()?;

    // 13. Seccomp last, so that the filter applies to everything after it (it refuses setns
    //     and mount, which earlier steps needed).
    plan.seccomp.install().at(Step::Seccomp)?;
    log_step(plan, "seccomp applied");

    // 14. Credential changes clear the parent-death signal; none happened, but re-arming it is
    //     cheap insurance for the rest of the cell's life.
    if plan.agent.is_none() {
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))
            .at(Step::ParentDeathSignal)?;
    }
    Ok(caller_umask)
}

/// `BURROW_LOG=debug` shows each step of the set-up and when it finished.
fn log_step(plan: &ChildPlan<'_>, step: &str) {
    tracing::debug!(
        step,
        elapsed_us = plan.started.elapsed().as_micros() as u64,
        "cell set-up"
    );
}

/// Becomes the agent, as PID 1 of the cell: /dev/null for stdin and stdout, the log for
/// stderr, the listening socket as descriptor 3, nothing else. burrow's binary is executed
/// from the descriptor opened on the host (execveat): it need not appear in the cell at all.
fn exec_agent(agent: &AgentExec<'_>, fds: &ChildFds, umask: rustix::fs::Mode) -> ! {
    use std::os::fd::AsRawFd;
    let failed = |report: std::os::fd::RawFd, errno: i32| -> ! {
        // SAFETY: `report` is this process's report pipe, open until exec.
        Report::ExecFailed {
            errno,
            program: "burrow agent".to_owned(),
        }
        .send(unsafe { std::os::fd::BorrowedFd::borrow_raw(report) });
        sys::exit_now(125)
    };
    rustix::process::umask(umask);
    let _ = sys::set_signal_mask(libc::SIG_SETMASK, &sys::SignalSet::empty());
    let arranged = (|| -> std::io::Result<()> {
        let null = rustix::fs::open(
            "/dev/null",
            rustix::fs::OFlags::RDWR | rustix::fs::OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?;
        // Every source is first copied above the numbers being filled, so that placing one
        // cannot overwrite another that happens to sit on its target.
        let lift = |fd: std::os::fd::RawFd| sys::dup_above(fd, AGENT_BINARY_FD + 1);
        let report = lift(fds.report.as_raw_fd())?;
        let log = lift(agent.log.as_raw_fd())?;
        let listener = lift(agent.listener.as_raw_fd())?;
        let binary = lift(agent.binary.as_raw_fd())?;
        let null = {
            let lifted = lift(null.as_raw_fd())?;
            // Closed here, before close_from takes every other descriptor: an OwnedFd must
            // not outlive its descriptor.
            drop(null);
            lifted
        };
        sys::dup_onto_cloexec(report, 4)?;
        sys::dup_onto(null, 0)?;
        sys::dup_onto(null, 1)?;
        sys::dup_onto(log, 2)?;
        sys::dup_onto(listener, 3)?;
        sys::dup_onto_cloexec(binary, AGENT_BINARY_FD)?;
        sys::close_from(AGENT_BINARY_FD + 1)
    })();
    if let Err(error) = arranged {
        failed(
            fds.report.as_raw_fd(),
            error.raw_os_error().unwrap_or(libc::EIO),
        );
    }
    let argv: Vec<*const libc::c_char> = agent
        .argv
        .iter()
        .map(|arg| arg.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let envp: Vec<*const libc::c_char> = agent
        .envp
        .iter()
        .map(|var| var.as_ptr())
        .chain(std::iter::once(std::ptr::null()))
        .collect();
    let error = sys::execve_fd(AGENT_BINARY_FD, &argv, &envp);
    failed(4, error.raw_os_error().unwrap_or(libc::EIO))
}

/// Where burrow's binary waits for the exec, after the report pipe (4).
const AGENT_BINARY_FD: std::os::fd::RawFd = 5;

fn wait_for_parent(go: std::os::fd::BorrowedFd<'_>) -> Result<(), StepError> {
    let mut byte = [0u8; 1];
    loop {
        match rustix::io::read(go, &mut byte) {
            Ok(1) => return Ok(()),
            Ok(_) => sys::exit_now(125),
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(error).at(Step::WaitForParent),
        }
    }
}

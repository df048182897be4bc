//! Raw system calls that neither rustix nor std offers, each behind a small safe wrapper.
//!
//! Every call goes through [`check`], which turns the C convention (-1 and `errno`) into an
//! [`io::Error`]. Nothing here allocates, so the wrappers are usable between `clone` and `exec`.

use std::ffi::CStr;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

/// Converts a raw syscall return value into a `Result`.
fn check(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

// ---------------------------------------------------------------------------------------------
// Processes

/// `struct clone_args` of clone3(2), in the kernel's layout.
#[repr(C)]
#[derive(Default)]
struct CloneArgs {
    flags: u64,
    pidfd: u64,
    child_tid: u64,
    parent_tid: u64,
    exit_signal: u64,
    stack: u64,
    stack_size: u64,
    tls: u64,
    set_tid: u64,
    set_tid_size: u64,
    cgroup: u64,
}

/// Which side of a fork-like call we are on.
pub(crate) enum Forked {
    /// In the parent: the child's pid and a pidfd for it.
    Parent { pid: libc::pid_t, pidfd: OwnedFd },
    /// In the child.
    Child,
}

/// clone3(2) without `CLONE_VM`: fork semantics, into the namespaces in `flags`, with a pidfd.
///
/// The caller must be single-threaded (see [`thread_count`]): the child gets a copy of this
/// thread only, and glibc's fork-time bookkeeping (malloc locks, the cached thread id) is not
/// run. The child therefore only makes raw syscalls, allocates, and calls glibc's own `fork`
/// before it execs; it never returns into the caller's code (it ends in `_exit`).
pub(crate) fn clone_into_namespaces(flags: u64) -> io::Result<Forked> {
    let mut pidfd: libc::c_int = -1;
    let args = CloneArgs {
        flags: flags | libc::CLONE_PIDFD as u64,
        pidfd: &raw mut pidfd as u64,
        exit_signal: libc::SIGCHLD as u64,
        ..CloneArgs::default()
    };
    // SAFETY: `args` is a valid clone_args of the size passed; without CLONE_VM the child runs
    // on a copy of this address space, so sharing the stack is fine. `pidfd` outlives the call.
    let ret = check(unsafe {
        libc::syscall(
            libc::SYS_clone3,
            &raw const args,
            std::mem::size_of::<CloneArgs>(),
        )
    })?;
    if ret == 0 {
        return Ok(Forked::Child);
    }
    // SAFETY: with CLONE_PIDFD the kernel stored a new file descriptor that we now own.
    let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd) };
    Ok(Forked::Parent {
        pid: ret as libc::pid_t,
        pidfd,
    })
}

/// fork(2) through glibc, which keeps its own state (thread id, malloc) right in the child.
pub(crate) fn fork() -> io::Result<Option<libc::pid_t>> {
    // SAFETY: callers are single-threaded (the cell's init, or a single-threaded parent), and
    // the child only execs or `_exit`s.
    let pid = check(unsafe { libc::fork() }.into())?;
    Ok(if pid == 0 {
        None
    } else {
        Some(pid as libc::pid_t)
    })
}

/// execve(2); returns only on failure.
pub(crate) fn execve(
    path: &CStr,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> io::Error {
    debug_assert!(argv.last().is_some_and(|p| p.is_null()));
    debug_assert!(envp.last().is_some_and(|p| p.is_null()));
    // SAFETY: `path` is NUL-terminated; `argv` and `envp` are NULL-terminated arrays of pointers
    // to NUL-terminated strings that the caller keeps alive across the call.
    unsafe { libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr()) };
    io::Error::last_os_error()
}

/// execveat(2) of the file open at `fd` (`AT_EMPTY_PATH`, as fexecve(3) does); returns only on
/// failure. The descriptor may be `O_PATH` and close-on-exec (the file is an ELF binary, not a
/// script that would need to reopen it).
pub(crate) fn execve_fd(
    fd: RawFd,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
) -> io::Error {
    debug_assert!(argv.last().is_some_and(|p| p.is_null()));
    debug_assert!(envp.last().is_some_and(|p| p.is_null()));
    // SAFETY: the path is an empty NUL-terminated string; `argv` and `envp` are NULL-terminated
    // arrays of pointers to NUL-terminated strings that the caller keeps alive across the call.
    unsafe {
        libc::syscall(
            libc::SYS_execveat,
            fd,
            c"".as_ptr(),
            argv.as_ptr(),
            envp.as_ptr(),
            libc::AT_EMPTY_PATH,
        )
    };
    io::Error::last_os_error()
}

/// `_exit(2)`: ends the process at once, without running Rust or C destructors or atexit
/// handlers (which belong to the parent's copy of the state).
pub(crate) fn exit_now(code: i32) -> ! {
    // SAFETY: _exit never returns and touches no Rust state.
    unsafe { libc::_exit(code) }
}

/// Whether the running kernel is at least `major.minor`, from uname(2).
pub(crate) fn kernel_at_least(major: u32, minor: u32) -> bool {
    let uname = rustix::system::uname();
    let release = uname.release().to_string_lossy();
    let mut numbers = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|part| part.parse::<u32>().ok());
    match (numbers.next(), numbers.next()) {
        (Some(have_major), Some(have_minor)) => (have_major, have_minor) >= (major, minor),
        _ => false,
    }
}

/// Number of threads in this process, from /proc/self/stat.
pub(crate) fn thread_count() -> io::Result<u64> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // Field 20 (num_threads), counting from the end of the parenthesised command name, which
    // may itself contain spaces and parentheses.
    let after_name = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after_name
        .split_whitespace()
        .nth(17)
        .and_then(|field| field.parse().ok())
        .ok_or_else(|| io::Error::other("cannot parse /proc/self/stat"))
}

/// close_range(2): closes every descriptor from `first` up.
pub(crate) fn close_from(first: RawFd) -> io::Result<()> {
    // SAFETY: closing descriptors has no memory-safety effect; callers own all of them.
    check(unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            0,
        )
    })
    .map(drop)
}

/// close_range(2) with CLOSE_RANGE_CLOEXEC: every descriptor from `first` up is closed on exec.
pub(crate) fn cloexec_from(first: RawFd) -> io::Result<()> {
    const CLOSE_RANGE_CLOEXEC: libc::c_uint = 1 << 2;
    // SAFETY: only descriptor flags change; no descriptor is closed.
    check(unsafe {
        libc::syscall(
            libc::SYS_close_range,
            first as libc::c_uint,
            libc::c_uint::MAX,
            CLOSE_RANGE_CLOEXEC,
        )
    })
    .map(drop)
}

/// dup2(2) that also works when `from == to` (then only clears close-on-exec).
pub(crate) fn dup_onto(from: RawFd, to: RawFd) -> io::Result<()> {
    if from == to {
        // SAFETY: F_SETFD on a descriptor we own.
        return check(unsafe { libc::fcntl(from, libc::F_SETFD, 0) }.into()).map(drop);
    }
    // SAFETY: dup2 on descriptors we own; `to` is replaced atomically.
    check(unsafe { libc::dup2(from, to) }.into()).map(drop)
}

/// fcntl(F_DUPFD_CLOEXEC): a close-on-exec copy of `fd` numbered `lowest` or above. The copy is
/// left to `close_from` or exec to close.
pub(crate) fn dup_above(fd: RawFd, lowest: RawFd) -> io::Result<RawFd> {
    // SAFETY: duplicating a descriptor we own; the new number is returned, not owned by Rust.
    check(unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, lowest) }.into()).map(|fd| fd as RawFd)
}

/// dup3(2) with close-on-exec: moves a descriptor to a fixed number.
pub(crate) fn dup_onto_cloexec(from: RawFd, to: RawFd) -> io::Result<()> {
    if from == to {
        return Ok(());
    }
    // SAFETY: dup3 on descriptors we own.
    check(unsafe { libc::dup3(from, to, libc::O_CLOEXEC) }.into()).map(drop)
}

// ---------------------------------------------------------------------------------------------
// Signals

/// A set of signals.
pub(crate) struct SignalSet(libc::sigset_t);

impl SignalSet {
    pub(crate) fn of(signals: &[libc::c_int]) -> SignalSet {
        // SAFETY: sigset_t is plain data; sigemptyset initialises it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t; the signal numbers are valid.
        unsafe {
            libc::sigemptyset(&mut set);
            for &signal in signals {
                libc::sigaddset(&mut set, signal);
            }
        }
        SignalSet(set)
    }

    pub(crate) fn full() -> SignalSet {
        // SAFETY: sigset_t is plain data; sigfillset initialises it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid sigset_t.
        unsafe { libc::sigfillset(&mut set) };
        SignalSet(set)
    }

    pub(crate) fn empty() -> SignalSet {
        SignalSet::of(&[])
    }
}

/// Replaces this thread's signal mask, returning the previous one.
pub(crate) fn set_signal_mask(how: libc::c_int, set: &SignalSet) -> io::Result<SignalSet> {
    let mut old = SignalSet::empty();
    // SAFETY: both pointers are valid sigset_t values.
    let ret = unsafe { libc::pthread_sigmask(how, &set.0, &mut old.0) };
    if ret != 0 {
        return Err(io::Error::from_raw_os_error(ret));
    }
    Ok(old)
}

/// signalfd(2) for a set of (blocked) signals.
pub(crate) fn signalfd(set: &SignalSet, nonblocking: bool) -> io::Result<OwnedFd> {
    let mut flags = libc::SFD_CLOEXEC;
    if nonblocking {
        flags |= libc::SFD_NONBLOCK;
    }
    // SAFETY: a valid sigset; the kernel returns a new descriptor we then own.
    let fd = check(unsafe { libc::signalfd(-1, &set.0, flags) }.into())?;
    // SAFETY: `fd` was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Reads one pending signal from a signalfd: (signal number, sending pid).
pub(crate) fn read_signal(fd: BorrowedFd<'_>) -> io::Result<Option<(libc::c_int, u32)>> {
    // SAFETY: signalfd_siginfo is plain data.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: reading at most `size` bytes into `info`.
    let n = unsafe { libc::read(fd.as_raw_fd(), (&raw mut info).cast(), size) };
    if n < 0 {
        let error = io::Error::last_os_error();
        return match error.kind() {
            io::ErrorKind::WouldBlock => Ok(None),
            _ => Err(error),
        };
    }
    if n as usize != size {
        return Ok(None);
    }
    Ok(Some((info.ssi_signo as libc::c_int, info.ssi_pid)))
}

/// Signals caught by [`install_recording_handler`]'s handler, one bit per signal number.
static CAUGHT_SIGNALS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

extern "C" fn record_signal(signal: libc::c_int) {
    // Async-signal-safe: one atomic operation on a static.
    if (1..64).contains(&signal) {
        CAUGHT_SIGNALS.fetch_or(1 << signal, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Installs a handler for `signal` that only records that it arrived ([`take_caught_signals`]).
///
/// The init of a pid namespace only receives signals it has a handler for; anything else sent
/// from outside is dropped. The handler makes sure a signal sent while the init cannot yet read
/// its signalfd is kept, to be forwarded later; once the signal is blocked, it goes to the
/// signalfd instead.
pub(crate) fn install_recording_handler(signal: libc::c_int) -> io::Result<()> {
    // SAFETY: sigaction is plain data; we fill every field we use.
    let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
    action.sa_sigaction = record_signal as *const () as libc::sighandler_t;
    action.sa_flags = libc::SA_RESTART;
    // SAFETY: a valid sigaction for a valid signal number; the handler is async-signal-safe.
    check(unsafe { libc::sigaction(signal, &action, std::ptr::null_mut()) }.into()).map(drop)
}

/// The signals recorded since the last call, lowest first.
pub(crate) fn take_caught_signals() -> Vec<libc::c_int> {
    let bits = CAUGHT_SIGNALS.swap(0, std::sync::atomic::Ordering::Relaxed);
    (1..64).filter(|signal| bits & (1 << signal) != 0).collect()
}

/// Restores the default SIGPIPE for a child about to exec: the Rust runtime ignores SIGPIPE,
/// and an ignored signal stays ignored across exec (so `yes | head` would never end).
pub(crate) fn default_sigpipe() {
    // SAFETY: SIG_DFL is always a valid disposition for SIGPIPE.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
}

// ---------------------------------------------------------------------------------------------
// Mounts

/// `struct mount_attr` of mount_setattr(2).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// mount_setattr(2) on the mount (and with `recursive`, every mount below) that `fd` refers to.
pub(crate) fn mount_setattr(
    fd: BorrowedFd<'_>,
    recursive: bool,
    set: u64,
    clear: u64,
) -> io::Result<()> {
    let attr = MountAttr {
        attr_set: set,
        attr_clr: clear,
        propagation: 0,
        userns_fd: 0,
    };
    let mut flags = libc::AT_EMPTY_PATH as libc::c_uint;
    if recursive {
        flags |= libc::AT_RECURSIVE as libc::c_uint;
    }
    // SAFETY: `attr` is a valid mount_attr of the size passed; the path is the empty string.
    check(unsafe {
        libc::syscall(
            libc::SYS_mount_setattr,
            fd.as_raw_fd(),
            c"".as_ptr(),
            flags,
            &raw const attr,
            std::mem::size_of::<MountAttr>(),
        )
    })
    .map(drop)
}

pub(crate) const MOUNT_ATTR_RDONLY: u64 = 0x0000_0001;
pub(crate) const MOUNT_ATTR_NOSUID: u64 = 0x0000_0002;
pub(crate) const MOUNT_ATTR_NODEV: u64 = 0x0000_0004;

// ---------------------------------------------------------------------------------------------
// Security modules

/// The Landlock ABI version the kernel offers, or 0 when Landlock is off.
pub(crate) fn landlock_abi_version() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: with a NULL attr, size 0 and the VERSION flag, the call only returns a number.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<libc::c_void>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    ret.max(0) as i32
}

/// Installs a seccomp-bpf filter on this thread (no_new_privs must already be set).
pub(crate) fn install_seccomp_filter(program: &[libc::sock_filter]) -> io::Result<()> {
    let fprog = libc::sock_fprog {
        len: u16::try_from(program.len()).map_err(|_| io::Error::from_raw_os_error(libc::E2BIG))?,
        filter: program.as_ptr().cast_mut(),
    };
    // SAFETY: `fprog` points at `program`, which outlives the call; the kernel copies it.
    check(unsafe {
        libc::syscall(
            libc::SYS_seccomp,
            libc::SECCOMP_SET_MODE_FILTER,
            0 as libc::c_uint,
            &raw const fprog,
        )
    })
    .map(drop)
}

/// prctl(PR_CAPBSET_DROP): removes one capability from the bounding set.
pub(crate) fn drop_bounding_capability(capability: u32) -> io::Result<()> {
    // SAFETY: PR_CAPBSET_DROP takes an integer capability number.
    check(
        unsafe { libc::prctl(libc::PR_CAPBSET_DROP, capability as libc::c_ulong, 0, 0, 0) }.into(),
    )
    .map(drop)
}

// ---------------------------------------------------------------------------------------------
// Network

/// Brings the loopback interface of this network namespace up.
pub(crate) fn bring_loopback_up() -> io::Result<()> {
    // SAFETY: a plain socket(2) call; the result is owned below.
    let fd = check(
        unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) }.into(),
    )?;
    // SAFETY: `fd` was just created.
    let socket = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
    // SAFETY: ifreq is plain data.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (dst, src) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *dst = *src as libc::c_char;
    }
    // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write `request`, a valid ifreq naming "lo".
    unsafe {
        check(libc::ioctl(socket.as_raw_fd(), libc::SIOCGIFFLAGS, &mut request).into())?;
        request.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        check(libc::ioctl(socket.as_raw_fd(), libc::SIOCSIFFLAGS, &request).into())?;
    }
    Ok(())
}

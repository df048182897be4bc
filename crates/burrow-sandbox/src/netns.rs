//! The cell's network namespace, created beside the rest of the set-up.
//!
//! Creating a network namespace is the slowest part of a cell by far (about half a millisecond
//! of kernel work on a small machine, more than everything else together). Nothing needs it
//! until the mounts are built, so the init starts a helper that creates it on another CPU and
//! joins it later by pidfd.
//!
//! The helper shares the init's memory (`CLONE_VM`, on a stack of its own), so starting it costs
//! neither a copy of the page tables nor copy-on-write faults afterwards. In exchange it may only
//! make raw system calls: rustix's linux_raw backend touches neither `errno` nor any other
//! thread-local state, and the helper allocates nothing.

use std::ffi::c_void;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use rustix::mm::{MapFlags, ProtFlags};
use rustix::pipe::PipeFlags;
use rustix::thread::{ThreadNameSpaceType, UnshareFlags};

/// The helper's stack: it only makes a few system calls.
const STACK_SIZE: usize = 64 * 1024;

/// What the helper reads from the init's memory.
struct HelperArgs {
    /// Where it reports the result of unshare(2): 0, or an errno.
    ready: RawFd,
    /// It waits here until the init has joined the namespace (end of file).
    release: RawFd,
    /// The init's ends of both pipes, which the helper's copy of the descriptor table must not
    /// keep open.
    close: [RawFd; 2],
}

/// A helper creating a network namespace; [`NetnsHelper::join`] moves the caller into it.
pub(crate) struct NetnsHelper {
    pidfd: OwnedFd,
    ready: OwnedFd,
    release: Option<OwnedFd>,
    stack: *mut c_void,
    // Read by the helper through a raw pointer until it exits.
    _args: Box<HelperArgs>,
}

extern "C" fn helper_main(arg: *mut c_void) -> libc::c_int {
    // SAFETY: `arg` is the HelperArgs boxed in the NetnsHelper, which the init keeps alive until
    // it has reaped this process.
    let args = unsafe { &*(arg as *const HelperArgs) };
    for fd in args.close {
        // SAFETY: these numbers are open in this process's own copy of the descriptor table.
        drop(unsafe { OwnedFd::from_raw_fd(fd) });
    }
    // SAFETY: only the network namespace is unshared; no descriptor table is involved.
    let status: i32 = match unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNET) } {
        Ok(()) => 0,
        Err(error) => error.raw_os_error(),
    };
    // SAFETY: `ready` and `release` are open in this process's descriptor table.
    let (ready, release) = unsafe {
        (
            BorrowedFd::borrow_raw(args.ready),
            BorrowedFd::borrow_raw(args.release),
        )
    };
    let _ = rustix::io::write(ready, &status.to_ne_bytes());
    // Stay alive, so that the init can join the namespace through this process's pidfd.
    let mut byte = [0u8; 1];
    while rustix::io::read(release, &mut byte) == Err(rustix::io::Errno::INTR) {}
    0
}

impl NetnsHelper {
    /// Starts the helper; the namespace is being created when this returns.
    pub(crate) fn start() -> std::io::Result<NetnsHelper> {
        let (ready_read, ready_write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
        let (release_read, release_write) = rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?;
        let args = Box::new(HelperArgs {
            ready: ready_write.as_raw_fd(),
            release: release_read.as_raw_fd(),
            close: [ready_read.as_raw_fd(), release_write.as_raw_fd()],
        });
        // SAFETY: a fresh anonymous private mapping, unmapped in Drop.
        let stack = unsafe {
            rustix::mm::mmap_anonymous(
                std::ptr::null_mut(),
                STACK_SIZE,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE | MapFlags::STACK,
            )?
        };
        let mut pidfd: libc::c_int = -1;
        // SAFETY: the child runs `helper_main` on its own stack (the top of the mapping; stacks
        // grow down) in this address space, making raw system calls only; `args` and the stack
        // outlive it (see Drop). CLONE_PIDFD stores a descriptor in `pidfd`.
        let pid = unsafe {
            libc::clone(
                helper_main,
                stack.cast::<u8>().add(STACK_SIZE).cast(),
                libc::CLONE_VM | libc::CLONE_PIDFD | libc::SIGCHLD,
                (&raw const *args).cast_mut().cast(),
                &raw mut pidfd,
            )
        };
        if pid < 0 {
            let error = std::io::Error::last_os_error();
            // SAFETY: the mapping made above, which no process uses.
            let _ = unsafe { rustix::mm::munmap(stack, STACK_SIZE) };
            return Err(error);
        }
        drop((ready_write, release_read));
        Ok(NetnsHelper {
            // SAFETY: CLONE_PIDFD gave us this descriptor.
            pidfd: unsafe { OwnedFd::from_raw_fd(pidfd) },
            ready: ready_read,
            release: Some(release_write),
            stack,
            _args: args,
        })
    }

    /// Waits for the namespace and moves the calling process into it.
    pub(crate) fn join(self) -> std::io::Result<()> {
        let mut status = [0u8; 4];
        let mut filled = 0;
        while filled < status.len() {
            match rustix::io::read(&self.ready, &mut status[filled..]) {
                Ok(0) => return Err(std::io::Error::other("the network helper died")),
                Ok(n) => filled += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(error) => return Err(error.into()),
            }
        }
        match i32::from_ne_bytes(status) {
            0 => {}
            errno => return Err(std::io::Error::from_raw_os_error(errno)),
        }
        rustix::thread::move_into_thread_name_spaces(
            self.pidfd.as_fd(),
            ThreadNameSpaceType::NETWORK,
        )?;
        Ok(())
    }
}

impl Drop for NetnsHelper {
    fn drop(&mut self) {
        // Closing the release pipe lets the helper exit; it must be gone before its stack and
        // arguments are freed.
        drop(self.release.take());
        let _ = rustix::process::waitid(
            rustix::process::WaitId::PidFd(self.pidfd.as_fd()),
            rustix::process::WaitIdOptions::EXITED,
        );
        // SAFETY: the helper has exited, so nothing runs on this stack any more.
        let _ = unsafe { rustix::mm::munmap(self.stack, STACK_SIZE) };
    }
}

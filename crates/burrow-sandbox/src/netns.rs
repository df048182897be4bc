//! The cell's network namespace, created beside the rest of the set-up.
//!
//! Creating a network namespace is the slowest part of a cell by far (about half a millisecond
//! of kernel work on a small machine, more than everything else together). Nothing needs it
//! until just before the capabilities are dropped, so the init starts a helper that creates it
//! on another CPU, and joins it at the end.
//!
//! The helper shares the init's memory and descriptor table (`CLONE_VM | CLONE_FILES`, on a
//! stack of its own): starting it copies no page tables and causes no copy-on-write faults,
//! and the descriptor of the namespace it opens is the init's at once. Joining through that
//! descriptor (not the helper's pidfd) matters: by then the init is in a Landlock domain, which
//! denies it ptrace-level access to the helper outside it. In exchange the helper may only make
//! raw system calls: rustix's linux_raw backend touches neither `errno` nor any other
//! thread-local state, and the helper allocates nothing.

use std::ffi::c_void;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};

use rustix::fs::{Mode, OFlags};
use rustix::mm::{MapFlags, ProtFlags};
use rustix::pipe::PipeFlags;
use rustix::thread::{LinkNameSpaceType, UnshareFlags};

/// The helper's stack: it only makes a few system calls.
const STACK_SIZE: usize = 64 * 1024;

/// What the helper and the init share.
struct HelperArgs {
    /// Where the helper reports: 0 once the namespace exists and `namespace` is set, or an
    /// errno.
    ready: RawFd,
    /// The helper waits here until the init is done with it (end of file).
    release: RawFd,
    /// The descriptor of the new namespace, opened by the helper in the shared table.
    namespace: AtomicI32,
}

/// A helper creating a network namespace; [`NetnsHelper::join`] moves the caller into it.
pub(crate) struct NetnsHelper {
    pidfd: OwnedFd,
    // All four ends live in the one descriptor table the helper shares: each is closed once,
    // by the init, when the helper no longer needs it.
    ready_read: OwnedFd,
    ready_write: Option<OwnedFd>,
    release_read: Option<OwnedFd>,
    release_write: Option<OwnedFd>,
    stack: *mut c_void,
    // Read by the helper through a raw pointer until it exits.
    args: Box<HelperArgs>,
}

extern "C" fn helper_main(arg: *mut c_void) -> libc::c_int {
    // SAFETY: `arg` is the HelperArgs boxed in the NetnsHelper, which the init keeps alive until
    // it has reaped this process.
    let args = unsafe { &*(arg as *const HelperArgs) };
    // SAFETY: unshare(2) of the network namespace only; the descriptor table stays shared.
    let status: i32 = match unsafe { rustix::thread::unshare_unsafe(UnshareFlags::NEWNET) } {
        Err(error) => error.raw_os_error(),
        // The helper still sees the host's /proc, where /proc/self is this process.
        Ok(()) => match rustix::fs::open(
            "/proc/self/ns/net",
            OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => {
                // Ownership passes to the init through the shared table.
                args.namespace
                    .store(std::os::fd::IntoRawFd::into_raw_fd(fd), Ordering::Release);
                0
            }
            Err(error) => error.raw_os_error(),
        },
    };
    // SAFETY: both descriptors stay open until the init has reaped this process.
    let (ready, release) = unsafe {
        (
            BorrowedFd::borrow_raw(args.ready),
            BorrowedFd::borrow_raw(args.release),
        )
    };
    let _ = rustix::io::write(ready, &status.to_ne_bytes());
    // Keep the namespace's creator alive until the init has joined it.
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
            namespace: AtomicI32::new(-1),
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
        // grow down) in this address space and descriptor table, making raw system calls only;
        // `args`, the stack and the pipes outlive it (see Drop). CLONE_PIDFD stores a
        // descriptor in `pidfd`.
        let pid = unsafe {
            libc::clone(
                helper_main,
                stack.cast::<u8>().add(STACK_SIZE).cast(),
                libc::CLONE_VM | libc::CLONE_FILES | libc::CLONE_PIDFD | libc::SIGCHLD,
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
        Ok(NetnsHelper {
            // SAFETY: CLONE_PIDFD gave us this descriptor.
            pidfd: unsafe { OwnedFd::from_raw_fd(pidfd) },
            ready_read,
            ready_write: Some(ready_write),
            release_read: Some(release_read),
            release_write: Some(release_write),
            stack,
            args,
        })
    }

    /// Waits for the namespace and moves the calling process into it.
    pub(crate) fn join(self) -> std::io::Result<()> {
        let mut status = [0u8; 4];
        let mut filled = 0;
        while filled < status.len() {
            match rustix::io::read(&self.ready_read, &mut status[filled..]) {
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
        let raw = self.args.namespace.load(Ordering::Acquire);
        // SAFETY: the helper opened this descriptor in the table we share and gave it up.
        let namespace = unsafe { OwnedFd::from_raw_fd(raw) };
        rustix::thread::move_into_link_name_space(
            namespace.as_fd(),
            Some(LinkNameSpaceType::Network),
        )?;
        Ok(())
    }
}

impl Drop for NetnsHelper {
    fn drop(&mut self) {
        // Closing the release pipe's write end lets the helper exit; its stack, arguments and
        // pipe ends may go only once it is gone.
        drop(self.release_write.take());
        let _ = rustix::process::waitid(
            rustix::process::WaitId::PidFd(self.pidfd.as_fd()),
            rustix::process::WaitIdOptions::EXITED,
        );
        drop((self.ready_write.take(), self.release_read.take()));
        // SAFETY: the helper has exited, so nothing runs on this stack any more.
        let _ = unsafe { rustix::mm::munmap(self.stack, STACK_SIZE) };
    }
}

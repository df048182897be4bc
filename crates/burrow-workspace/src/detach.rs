//! Starting the small host processes that outlive the command starting them (a workspace's
//! network proxy, a published port's forwarder), each handed one listening socket.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// Starts `command` in a session of its own (no terminal's hang-up reaches it), with `socket`
/// as its descriptor 3 and nothing on its standard streams.
pub fn spawn_with_socket(mut command: Command, socket: BorrowedFd<'_>) -> std::io::Result<Child> {
    let fd = socket.as_raw_fd();
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: between fork and exec the closure only makes async-signal-safe system calls
    // (setsid, dup2, fcntl) on integers; `socket` is open in the parent, so in the child too.
    unsafe {
        command.pre_exec(move || {
            // Descriptor 3 without close-on-exec (dup2 onto itself would keep the flag).
            let placed = if fd == 3 {
                libc::fcntl(3, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, 3)
            };
            if libc::setsid() < 0 || placed < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

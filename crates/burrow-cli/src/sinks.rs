//! Where a command's output goes: straight to burrow's own stdout and stderr as it arrives, or
//! into capped captures for `--json`.

use std::os::fd::BorrowedFd;

use burrow_output::{Capture, CaptureLimits, Captured, OutputSink, Stream};

/// Bytes of stderr kept while streaming, to look for sandbox denials to explain.
const HINT_WINDOW: usize = 64 * 1024;

/// Streams output to the terminal (or whatever burrow's stdout and stderr are), unbuffered, and
/// keeps the head and tail of stderr for hints.
pub struct TerminalSink {
    stdout_open: bool,
    stderr_open: bool,
    stderr_tail: Capture,
}

impl TerminalSink {
    pub fn new() -> TerminalSink {
        TerminalSink {
            stdout_open: true,
            stderr_open: true,
            stderr_tail: Capture::new(CaptureLimits {
                max_bytes: HINT_WINDOW,
                max_lines: None,
            }),
        }
    }

    /// What was kept of stderr.
    pub fn finish(self) -> Captured {
        self.stderr_tail.finish()
    }
}

impl OutputSink for TerminalSink {
    fn write(&mut self, stream: Stream, chunk: &[u8]) {
        let (fd, open) = match stream {
            Stream::Stdout => (1, &mut self.stdout_open),
            Stream::Stderr => {
                self.stderr_tail.push(chunk);
                (2, &mut self.stderr_open)
            }
        };
        // A reader that went away (EPIPE) stops the forwarding of that stream, not the command:
        // the sandbox keeps draining its pipe.
        if *open && write_all(fd, chunk).is_err() {
            *open = false;
        }
    }
}

fn write_all(fd: i32, mut bytes: &[u8]) -> rustix::io::Result<()> {
    // SAFETY: descriptors 1 and 2 stay open for the life of the process (main makes sure they
    // exist at start-up), and borrowing them does not close them.
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    while !bytes.is_empty() {
        match rustix::io::write(fd, bytes) {
            Ok(n) => bytes = &bytes[n..],
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(())
}

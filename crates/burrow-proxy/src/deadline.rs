//! Reads from a client that must finish by a deadline: a socket timeout alone would let a client
//! that sends one byte at a time hold its connection forever.

use std::io::{self, Read};
use std::net::TcpStream;
use std::time::{Duration, Instant};

/// The moment a client must have finished saying what it wants.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline(Instant);

impl Deadline {
    pub(crate) fn after(duration: Duration) -> Deadline {
        Deadline(Instant::now() + duration)
    }

    /// Reads some bytes (0 at the end of the stream); `TimedOut` once the deadline has passed.
    pub(crate) fn read(self, mut stream: &TcpStream, buffer: &mut [u8]) -> io::Result<usize> {
        loop {
            self.arm(stream)?;
            match stream.read(buffer) {
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                result => return result.map_err(timed_out_as_such),
            }
        }
    }

    /// Fills `buffer`; `UnexpectedEof` if the stream ends first.
    pub(crate) fn read_exact(self, stream: &TcpStream, buffer: &mut [u8]) -> io::Result<()> {
        let mut filled = 0;
        while filled < buffer.len() {
            match self.read(stream, &mut buffer[filled..])? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                read => filled += read,
            }
        }
        Ok(())
    }

    /// Looks at the first bytes without consuming them (0 at the end of the stream).
    pub(crate) fn peek(self, stream: &TcpStream, buffer: &mut [u8]) -> io::Result<usize> {
        loop {
            self.arm(stream)?;
            match stream.peek(buffer) {
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                result => return result.map_err(timed_out_as_such),
            }
        }
    }

    /// Sets the socket's read timeout to the time left.
    fn arm(self, stream: &TcpStream) -> io::Result<()> {
        let left = self.0.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        stream.set_read_timeout(Some(left))
    }
}

/// A socket read timeout shows as `WouldBlock` on Linux.
fn timed_out_as_such(error: io::Error) -> io::Error {
    if error.kind() == io::ErrorKind::WouldBlock {
        io::ErrorKind::TimedOut.into()
    } else {
        error
    }
}

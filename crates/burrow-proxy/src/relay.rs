//! Relaying bytes between a client and its server, one thread per direction, with `splice(2)`
//! through a pipe so that the bytes move between socket buffers inside the kernel.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::OwnedFd;
use std::thread;

use rustix::io::Errno;
use rustix::pipe::{
    PipeFlags, SpliceFlags, fcntl_getpipe_size, fcntl_setpipe_size, pipe_with, splice,
};
use tracing::debug;

/// The pipe size asked for: four times the default, so that one `splice` moves more per call,
/// small enough that many connections stay under the per-user pipe allowance
/// (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB), past which new pipes get two pages.
const PIPE_SIZE: usize = 256 * 1024;

/// Relays both ways until both directions have ended, then closes both sockets. A direction ends
/// at the end of its stream, which is passed on as a half-close so that the other direction
/// can still answer; an error in either direction ends both.
pub(crate) fn relay(client: TcpStream, server: TcpStream) -> io::Result<()> {
    for stream in [&client, &server] {
        // Small writes (a TLS handshake, an interactive protocol) go out at once.
        stream.set_nodelay(true)?;
        // splice blocks like read does; a timeout left from the handshake would end the relay.
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(None)?;
    }
    let upload_from = client.try_clone()?;
    let upload_to = server.try_clone()?;
    let upload = thread::Builder::new()
        .name("burrow-proxy-up".to_owned())
        .spawn(move || pump(&upload_from, &upload_to))?;
    let downloaded = pump(&server, &client);
    let uploaded = upload
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("the relay thread panicked")));
    debug!(?uploaded, ?downloaded, "relay ended");
    // Both directions are over: the sockets close now, not whenever the caller lets them go.
    drop(client);
    drop(server);
    uploaded.and(downloaded).map(|_| ())
}

/// Moves bytes from `from` to `to` until `from` ends, and returns how many.
fn pump(from: &TcpStream, to: &TcpStream) -> io::Result<u64> {
    let moved = match Pipe::new() {
        Ok(pipe) => pipe.splice_all(from, to),
        Err(error) => {
            debug!(%error, "no pipe for splice; copying instead");
            copy_all(from, to, 0)
        }
    };
    match moved {
        // The other side learns that nothing more will come, and may still answer.
        Ok(_) => ignore_not_connected(to.shutdown(Shutdown::Write)),
        // Wakes the other direction's thread, which would otherwise wait on a peer that may
        // never speak again.
        Err(_) => {
            for stream in [from, to] {
                ignore_not_connected(stream.shutdown(Shutdown::Both));
            }
        }
    }
    moved
}

/// A pipe that `splice(2)` moves bytes through.
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    capacity: usize,
}

impl Pipe {
    fn new() -> io::Result<Pipe> {
        let (read, write) = pipe_with(PipeFlags::CLOEXEC)?;
        // A smaller pipe works too, only with more calls: a refusal is no reason to fail.
        let capacity =
            fcntl_setpipe_size(&write, PIPE_SIZE).or_else(|_| fcntl_getpipe_size(&write))?;
        Ok(Pipe {
            read,
            write,
            capacity,
        })
    }

    /// Splices `from` into the pipe and the pipe into `to` until `from` ends; falls back to
    /// copying through user space where a socket does not support `splice` (`EINVAL`).
    fn splice_all(&self, from: &TcpStream, to: &TcpStream) -> io::Result<u64> {
        let mut total: u64 = 0;
        loop {
            let filled = match splice(
                from,
                None,
                &self.write,
                None,
                self.capacity,
                SpliceFlags::MOVE,
            ) {
                Ok(0) => return Ok(total),
                Ok(filled) => filled,
                Err(Errno::INTR) => continue,
                // The pipe is empty here: nothing is lost by switching.
                Err(Errno::INVAL) => return copy_all(from, to, total),
                Err(error) => return Err(error.into()),
            };
            let mut left = filled;
            while left > 0 {
                match splice(&self.read, None, to, None, left, SpliceFlags::MOVE) {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(drained) => left -= drained,
                    Err(Errno::INTR) => {}
                    Err(Errno::INVAL) => {
                        self.copy_out(to, left)?;
                        return copy_all(from, to, total + filled as u64);
                    }
                    Err(error) => return Err(error.into()),
                }
            }
            total += filled as u64;
        }
    }

    /// Writes the `left` bytes still in the pipe to `to` through user space.
    fn copy_out(&self, mut to: &TcpStream, mut left: usize) -> io::Result<()> {
        let mut buffer = vec![0; left.min(64 * 1024)];
        let mut pipe = std::fs::File::from(self.read.try_clone()?);
        while left > 0 {
            let wanted = left.min(buffer.len());
            pipe.read_exact(&mut buffer[..wanted])?;
            to.write_all(&buffer[..wanted])?;
            left -= wanted;
        }
        Ok(())
    }
}

/// Copies `from` to `to` through user space until `from` ends; returns `already` plus what
/// was copied.
fn copy_all(mut from: &TcpStream, mut to: &TcpStream, already: u64) -> io::Result<u64> {
    io::copy(&mut from, &mut to).map(|copied| already + copied)
}

/// A peer that has already gone makes `shutdown` fail with `ENOTCONN`: there is nothing left to
/// tell it, and nothing to do about it.
fn ignore_not_connected(result: io::Result<()>) {
    if let Err(error) = result
        && error.kind() != io::ErrorKind::NotConnected
    {
        debug!(%error, "shutdown failed");
    }
}

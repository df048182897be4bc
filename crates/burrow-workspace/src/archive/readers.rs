//! Small `Read` adapters: reading at an offset, capping a stream, and yielding an exact size.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;

use super::checks::show;

pub(super) struct ReadAt<'f> {
    pub(super) file: &'f File,
    pub(super) pos: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// Fails the stream once more than `cap` bytes have been read from it.
pub(super) struct Capped<R> {
    inner: R,
    pub(super) read: u64,
    cap: u64,
}

impl<R> Capped<R> {
    pub(super) fn new(inner: R, cap: u64) -> Capped<R> {
        Capped {
            inner,
            read: 0,
            cap,
        }
    }
}

impl<R: Read> Read for Capped<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let room = self.cap.saturating_sub(self.read);
        if room == 0 {
            // At the cap: the stream may end exactly here, which is fine.
            let mut probe = [0u8; 1];
            return match self.inner.read(&mut probe)? {
                0 => Ok(0),
                _ => Err(io::Error::other(format!(
                    "its tar stream is longer than the {} bytes the limits allow",
                    self.cap
                ))),
            };
        }
        let want = buf.len().min(usize::try_from(room).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        self.read += n as u64;
        Ok(n)
    }
}

/// Yields exactly `left` bytes of `inner`: fewer is an error (the source shrank), and any
/// more are never read (it grew).
pub(super) struct Exact<'p, R> {
    inner: R,
    left: u64,
    path: &'p str,
}

impl<'p, R> Exact<'p, R> {
    pub(super) fn new(inner: R, size: u64, path: &'p str) -> Exact<'p, R> {
        Exact {
            inner,
            left: size,
            path,
        }
    }
}

impl<R: Read> Read for Exact<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!(
                    "import entry `{}` ended before its checked size; the source changed while it was read",
                    show(self.path.as_bytes())
                ),
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

//! Where output chunks go as a sandboxed command's streams are read.

use crate::capture::Capture;
use crate::captured::Captured;
use crate::limits::CaptureLimits;

/// Which stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Receives output chunks as they are read, in order, per stream.
pub trait OutputSink {
    /// Takes the next chunk of `stream`. It must not block or fail: the reader
    /// keeps draining the pipes whatever the sink does with the bytes.
    fn write(&mut self, stream: Stream, chunk: &[u8]);
}

/// Captures stdout and stderr, each with its own [`Capture`].
#[derive(Debug)]
pub struct CaptureSink {
    stdout: Capture,
    stderr: Capture,
}

impl CaptureSink {
    /// Both streams capped by the same `limits`, separately.
    pub fn new(limits: CaptureLimits) -> CaptureSink {
        CaptureSink {
            stdout: Capture::new(limits),
            stderr: Capture::new(limits),
        }
    }

    /// Ends both streams: `(stdout, stderr)`.
    pub fn finish(self) -> (Captured, Captured) {
        (self.stdout.finish(), self.stderr.finish())
    }
}

impl OutputSink for CaptureSink {
    fn write(&mut self, stream: Stream, chunk: &[u8]) {
        match stream {
            Stream::Stdout => self.stdout.push(chunk),
            Stream::Stderr => self.stderr.push(chunk),
        }
    }
}

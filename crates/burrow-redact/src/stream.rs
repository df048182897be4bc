//! [`RedactStream`]: redaction of output that arrives in chunks.

use crate::engine::{Scratch, VecSink};
use crate::redactor::{BLOCK_BUFFER_LIMIT, Redactor, TOO_LARGE_NOTICE, blocked_notice};

/// Redacts one output stream chunk by chunk. The concatenation of what
/// [`push`](Self::push) and [`finish`](Self::finish) return is exactly what
/// [`Redactor::redact_all`] returns for the concatenated input, wherever the
/// chunks were cut and however long the pauses between them (two
/// exceptions, below: block output over 16 MiB, and custom regexes with no
/// maximum length).
///
/// ```
/// use burrow_redact::{Redactor, Secret};
///
/// let redactor = Redactor::new(&[Secret::new("PW", "hunter2!")], &[])?;
/// let mut stream = redactor.stream();
/// assert_eq!(stream.push(b"Password: "), b"Password: "); // shown at once
/// assert_eq!(stream.push(b"hunt"), b""); // may be the secret's start
/// assert_eq!(stream.push(b"er2!\n"), b"[REDACTED:PW]\n");
/// assert_eq!(stream.consumed(), 19);
/// assert!(stream.finish().is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// To get there, `push` withholds the smallest tail that may still change:
/// the longest suffix that is a proper prefix of a secret pattern (so an
/// idle `Password: ` prompt is shown at once unless a secret starts that
/// way), and the bytes from the first position where a PII match may still
/// start or grow. At most [`Redactor::hold_back`] bytes stay pending. A
/// match is never split between two outputs.
///
/// Block rules: when one is configured ([`Redactor::blocks`]) the whole
/// output is withheld (`push` returns nothing) and checked at `finish`,
/// which returns either only the block notice or the redacted output. At
/// most 16 MiB are buffered; past that `finish` returns a notice that the
/// output was too large to be checked (fail closed).
///
/// A custom regex with no maximum length (`re:key=.*`) is waited for at
/// most 4096 bytes back from the end of the data; a longer match split
/// across chunks may be missed or cut.
///
/// A stream owns a clone of its [`Redactor`] (an `Arc`), so it can be kept
/// anywhere, e.g. in a struct next to that redactor; it is `Send`.
pub struct RedactStream {
    redactor: Redactor,
    scratch: Option<Scratch>,
    /// Bytes not yet emitted, after `context` bytes of look-behind.
    pending: Vec<u8>,
    context: usize,
    /// Input bytes emitted (or replaced) so far: the absolute position of
    /// `pending[context]`.
    consumed: u64,
    /// Absolute position before which PII positions are known decided.
    decided: u64,
    /// Block mode: the buffer outgrew the limit and was dropped.
    overflowed: bool,
}

/// Shows counts only: the pending bytes are unredacted.
impl std::fmt::Debug for RedactStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedactStream")
            .field("consumed", &self.consumed)
            .field("pending", &self.pending_len())
            .field("overflowed", &self.overflowed)
            .finish_non_exhaustive()
    }
}

impl RedactStream {
    pub(crate) fn new(redactor: Redactor) -> RedactStream {
        let scratch = (!redactor.is_empty()).then(|| redactor.inner.take_scratch());
        RedactStream {
            redactor,
            scratch,
            pending: Vec::new(),
            context: 0,
            consumed: 0,
            decided: 0,
            overflowed: false,
        }
    }

    /// Feeds a chunk; returns the bytes that are now safe to emit, already
    /// redacted.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.push_into(chunk, &mut out);
        out
    }

    /// [`push`](Self::push), appending to `out` (no allocation of its own
    /// once the stream is warm).
    pub fn push_into(&mut self, chunk: &[u8], out: &mut Vec<u8>) {
        if self.redactor.is_empty() {
            out.extend_from_slice(chunk);
            self.consumed += chunk.len() as u64;
            return;
        }
        if self.redactor.blocks() {
            if self.overflowed {
                return;
            }
            if self.pending.len() + chunk.len() > BLOCK_BUFFER_LIMIT {
                self.overflowed = true;
                self.pending = Vec::new();
            } else {
                self.pending.extend_from_slice(chunk);
            }
            return;
        }
        // A big chunk is not copied into `pending`: its head goes in with
        // the pending bytes until what is withheld lies inside the chunk;
        // the rest is run in place and only its withheld tail is copied.
        let mut offset = 0;
        if !self.pending.is_empty() || chunk.len() <= self.redactor.hold_back() + 2 {
            offset = chunk.len().min(self.redactor.hold_back() + 2);
            self.pending.extend_from_slice(&chunk[..offset]);
            self.process(false, out);
            if offset == chunk.len() {
                return;
            }
            if self.pending.len() > offset {
                // Cannot happen (at most hold_back bytes are withheld), but
                // stay correct if it does.
                self.pending.extend_from_slice(&chunk[offset..]);
                self.process(false, out);
                return;
            }
        }
        // `pending` is now the last bytes of `chunk[..offset]`.
        let buf = &chunk[offset - self.pending.len()..];
        let keep = self.run(buf, false, out);
        self.pending.clear();
        self.pending.extend_from_slice(&buf[keep..]);
    }

    /// Ends the stream: returns everything left, redacted. With a block rule
    /// configured this is the whole output, or only the block notice if a
    /// block rule matched, or the too-large notice past 16 MiB.
    pub fn finish(mut self) -> Vec<u8> {
        let mut out = Vec::new();
        self.finish_inner(&mut out);
        out
    }

    /// [`finish`](Self::finish), appending to `out`.
    pub fn finish_into(mut self, out: &mut Vec<u8>) {
        self.finish_inner(out);
    }

    /// How many input bytes have been consumed into emitted output so far
    /// (for callers that keep a cursor into the raw input).
    pub fn consumed(&self) -> u64 {
        self.consumed
    }

    /// The bytes withheld so far (input not yet consumed).
    pub fn pending_len(&self) -> usize {
        self.pending.len() - self.context
    }

    fn finish_inner(&mut self, out: &mut Vec<u8>) {
        if self.redactor.is_empty() {
            return;
        }
        if self.redactor.blocks() {
            if self.overflowed {
                out.extend_from_slice(TOO_LARGE_NOTICE.as_bytes());
            } else if let Some(scratch) = self.scratch.as_mut() {
                match self.redactor.inner.first_blocked(scratch, &self.pending) {
                    Some(kind) => out.extend_from_slice(&blocked_notice(kind)),
                    None => {
                        let inner = &self.redactor.inner;
                        inner.run(scratch, &self.pending, 0, 0, true, &mut VecSink(out));
                    }
                }
                self.consumed += self.pending.len() as u64;
                self.pending.clear();
            }
            return;
        }
        self.process(true, out);
    }

    /// Runs the pending bytes and keeps what is still withheld.
    fn process(&mut self, is_final: bool, out: &mut Vec<u8>) {
        let pending = std::mem::take(&mut self.pending);
        let keep = self.run(&pending, is_final, out);
        self.pending = pending;
        self.pending.drain(..keep);
    }

    /// Runs `buf`, which starts with `self.context` bytes of look-behind
    /// followed by the first byte not yet consumed. Returns the index from
    /// which `buf` must be kept (look-behind included).
    fn run(&mut self, buf: &[u8], is_final: bool, out: &mut Vec<u8>) -> usize {
        let Some(scratch) = self.scratch.as_mut() else {
            return buf.len();
        };
        let context = self.context;
        let decided = context + (self.decided.saturating_sub(self.consumed)) as usize;
        let progress =
            self.redactor
                .inner
                .run(scratch, buf, context, decided, is_final, &mut VecSink(out));
        self.consumed += (progress.emitted - context) as u64;
        self.decided =
            self.consumed + (progress.decided.max(progress.emitted) - progress.emitted) as u64;
        // Keep the last emitted byte as look-behind if the gap goes on.
        let keep = if progress.gap_start < progress.emitted {
            progress.emitted - 1
        } else {
            progress.emitted
        };
        self.context = progress.emitted - keep;
        keep
    }
}

impl Drop for RedactStream {
    fn drop(&mut self) {
        if let Some(scratch) = self.scratch.take() {
            self.redactor.inner.return_scratch(scratch);
        }
    }
}

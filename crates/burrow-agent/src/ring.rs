//! A bounded output buffer addressed by absolute byte positions, for shells and service logs:
//! readers keep a cursor, ask for what follows it, and learn how much the buffer dropped when
//! their cursor fell behind.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// The buffer and what waits on it.
#[derive(Debug)]
pub struct OutputRing {
    inner: RefCell<Inner>,
    changed: Notify,
}

#[derive(Debug)]
struct Inner {
    bytes: VecDeque<u8>,
    /// Absolute position of `bytes[0]`.
    start: u64,
    capacity: usize,
    last_output: Instant,
    /// No more output will come (the producer ended).
    closed: bool,
}

/// What a read returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// Absolute position of the first byte.
    pub start: u64,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Bytes between the cursor asked for and `start` that were dropped.
    pub lost: u64,
    /// Everything produced so far.
    pub end: u64,
}

impl OutputRing {
    /// An empty buffer keeping at most `capacity` bytes.
    pub fn new(capacity: usize) -> Rc<OutputRing> {
        Rc::new(OutputRing {
            inner: RefCell::new(Inner {
                bytes: VecDeque::new(),
                start: 0,
                capacity,
                last_output: Instant::now(),
                closed: false,
            }),
            changed: Notify::new(),
        })
    }

    /// Appends output, dropping the oldest bytes beyond the capacity.
    pub fn push(&self, bytes: &[u8]) {
        {
            let mut inner = self.inner.borrow_mut();
            inner.bytes.extend(bytes);
            let excess = inner.bytes.len().saturating_sub(inner.capacity);
            if excess > 0 {
                inner.bytes.drain(..excess);
                inner.start += excess as u64;
            }
            inner.last_output = Instant::now();
        }
        self.changed.notify_waiters();
    }

    /// Marks the end of output.
    pub fn close(&self) {
        self.inner.borrow_mut().closed = true;
        self.changed.notify_waiters();
    }

    /// Everything produced so far.
    pub fn end(&self) -> u64 {
        let inner = self.inner.borrow();
        inner.start + inner.bytes.len() as u64
    }

    /// Up to `max` bytes from `cursor`.
    pub fn read(&self, cursor: u64, max: u64) -> Slice {
        let inner = self.inner.borrow();
        let end = inner.start + inner.bytes.len() as u64;
        let from = cursor.clamp(inner.start, end);
        let lost = inner.start.saturating_sub(cursor);
        let offset = (from - inner.start) as usize;
        let len = (end - from).min(max) as usize;
        let bytes = inner.bytes.range(offset..offset + len).copied().collect();
        Slice {
            start: from,
            bytes,
            lost,
            end,
        }
    }

    /// Waits until there is output past `cursor`, the output ends, or `limit` passes.
    pub async fn wait_for_data(&self, cursor: u64, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            {
                let inner = self.inner.borrow();
                if inner.closed || inner.start + inner.bytes.len() as u64 > cursor {
                    return;
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return;
            }
        }
    }

    /// Waits until nothing has been produced for `quiet`, the output ends, or `limit` passes.
    pub async fn wait_for_quiet(&self, quiet: Duration, limit: Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let (since, closed) = {
                let inner = self.inner.borrow();
                (inner.last_output.elapsed(), inner.closed)
            };
            if closed || since >= quiet {
                return;
            }
            let wake = (tokio::time::Instant::now() + (quiet - since)).min(deadline);
            if wake >= deadline {
                tokio::time::sleep_until(deadline).await;
                return;
            }
            tokio::time::sleep_until(wake).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_follow_cursors_and_report_what_was_dropped() {
        let ring = OutputRing::new(8);
        ring.push(b"hello ");
        assert_eq!(ring.read(0, 100).bytes, b"hello ");
        ring.push(b"world");
        // 11 bytes produced, 8 kept: "lo world".
        let slice = ring.read(0, 100);
        assert_eq!((slice.start, slice.lost, slice.end), (3, 3, 11));
        assert_eq!(slice.bytes, b"lo world");
        let slice = ring.read(6, 3);
        assert_eq!((slice.start, slice.bytes.as_slice()), (6, &b"wor"[..]));
        assert_eq!(ring.read(11, 10).bytes, b"");
        assert_eq!(ring.read(99, 10).start, 11);
    }
}

//! Capping one stream: what is kept while reading, and the cut made at the end.

use std::fmt;

use crate::bounded::reserve_within;
use crate::captured::{Captured, Omitted};
use crate::limits::CaptureLimits;
use crate::tail_ring::TailRing;
use crate::text::{
    count_newlines, cut_char_at_end, cut_char_at_start, prefix_of_lines, suffix_start_of_lines,
};

/// A capped capture of one stream.
///
/// [`push`](Capture::push) never refuses bytes and costs O(chunk); memory
/// stays O(`max_bytes`) however long the stream. The line cap and the UTF-8
/// boundaries are applied once, by [`finish`](Capture::finish).
pub struct Capture {
    limits: CaptureLimits,
    /// The first `head_bytes` bytes of the stream, whatever the line cap: the
    /// cut is only decided at the end, once it is known whether the stream
    /// fits.
    head: Vec<u8>,
    /// The last `tail_bytes + 1` bytes of the stream. The extra byte tells
    /// whether the tail starts a line, which the omitted line count needs.
    tail: TailRing,
    total_bytes: u64,
    newlines: u64,
    last_byte: Option<u8>,
}

impl Capture {
    /// An empty capture keeping at most what `limits` allow.
    pub fn new(limits: CaptureLimits) -> Capture {
        Capture {
            limits,
            head: Vec::new(),
            tail: TailRing::new(limits.tail_bytes().saturating_add(1)),
            total_bytes: 0,
            newlines: 0,
            last_byte: None,
        }
    }

    /// Appends the next bytes of the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        let Some(&last_byte) = chunk.last() else {
            return;
        };
        let head_budget = self.limits.head_bytes();
        let head_room = head_budget - self.head.len();
        if head_room > 0 {
            let taken = &chunk[..head_room.min(chunk.len())];
            reserve_within(&mut self.head, taken.len(), head_budget);
            self.head.extend_from_slice(taken);
        }
        self.tail.push(chunk);
        self.newlines += count_newlines(chunk);
        self.total_bytes += chunk.len() as u64;
        self.last_byte = Some(last_byte);
    }

    /// Bytes pushed so far.
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// Ends the stream and makes the cut.
    pub fn finish(self) -> Captured {
        let total_lines = self.newlines + u64::from(self.last_byte.is_some_and(|b| b != b'\n'));
        let fits = self.total_bytes <= self.limits.max_bytes as u64
            && self
                .limits
                .max_lines
                .is_none_or(|n| total_lines <= n as u64);
        let window = self.tail.into_vec();
        let window_start = self.total_bytes - window.len() as u64;
        let (head, tail, omitted) = if fits {
            let (head, tail) = whole(self.head, window, window_start);
            (head, tail, None)
        } else {
            let (head, tail, omitted) =
                cut(&self.limits, self.head, window, window_start, self.newlines);
            (head, tail, Some(omitted))
        };
        Captured {
            head,
            tail,
            omitted,
            total_bytes: self.total_bytes,
            total_lines,
        }
    }
}

/// The stream fits: head and tail together are the stream. `window` holds its
/// bytes from `window_start` on, which is at most where the head ends.
fn whole(head: Vec<u8>, mut window: Vec<u8>, window_start: u64) -> (Vec<u8>, Vec<u8>) {
    let overlap = (head.len() as u64).saturating_sub(window_start) as usize;
    window.drain(..overlap.min(window.len()));
    (head, window)
}

/// The stream does not fit: cut the head at its budgets, the tail at its own,
/// both at character boundaries, and count what falls in between.
fn cut(
    limits: &CaptureLimits,
    mut head: Vec<u8>,
    mut window: Vec<u8>,
    window_start: u64,
    newlines: u64,
) -> (Vec<u8>, Vec<u8>, Omitted) {
    let total_bytes = window_start + window.len() as u64;

    let mut head_end = head.len();
    if let Some(lines) = limits.head_lines() {
        head_end = head_end.min(prefix_of_lines(&head, lines));
    }
    head_end -= cut_char_at_end(&head[..head_end]);
    // Whole lines read better than a line cut in two: end the head after its last newline,
    // when it has one.
    if head_end > 0
        && head[head_end - 1] != b'\n'
        && let Some(newline) = memchr::memrchr(b'\n', &head[..head_end])
    {
        head_end = newline + 1;
    }
    head.truncate(head_end);

    let mut tail_start = window.len().saturating_sub(limits.tail_bytes());
    if let Some(lines) = limits.tail_lines() {
        tail_start = tail_start.max(suffix_start_of_lines(&window, lines));
    }
    // The tail never reaches back into the head (only a guard: the budgets
    // already leave a gap whenever something is omitted).
    let head_end_in_window = (head_end as u64).saturating_sub(window_start) as usize;
    tail_start = tail_start.max(head_end_in_window).min(window.len());
    tail_start += cut_char_at_start(&window[tail_start..]);
    // Likewise, start the tail at the next line when the cut falls inside one and another
    // line follows.
    if tail_start > 0
        && tail_start < window.len()
        && window[tail_start - 1] != b'\n'
        && let Some(newline) = memchr::memchr(b'\n', &window[tail_start..window.len() - 1])
    {
        tail_start += newline + 1;
    }
    let gap_ends_line = tail_start.checked_sub(1).and_then(|at| window.get(at)) == Some(&b'\n');
    window.drain(..tail_start);
    let tail = window;

    let kept = (head.len() + tail.len()) as u64;
    let omitted_bytes = total_bytes.saturating_sub(kept);
    let omitted_newlines = newlines.saturating_sub(count_newlines(&head) + count_newlines(&tail));
    // Each omitted newline ends an omitted line; a gap not ending on a newline
    // also holds part of one more line (the one the tail finishes, or the
    // last line of the stream).
    let omitted_lines = omitted_newlines + u64::from(omitted_bytes > 0 && !gap_ends_line);
    let omitted = Omitted {
        bytes: omitted_bytes,
        lines: omitted_lines,
    };
    (head, tail, omitted)
}

impl fmt::Debug for Capture {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Capture")
            .field("limits", &self.limits)
            .field("total_bytes", &self.total_bytes)
            .field("newlines", &self.newlines)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::{Capture, CaptureLimits};

    /// Buffers allocated by a capture, whatever it has been fed.
    fn allocated(capture: &Capture) -> usize {
        capture.head.capacity() + capture.tail.allocated()
    }

    #[test]
    fn memory_stays_bounded_on_a_large_stream() {
        let max_bytes = 1024 * 1024;
        let mut capture = Capture::new(CaptureLimits {
            max_bytes,
            max_lines: Some(1000),
        });
        let chunk: Vec<u8> = b"some output line, not very long\n"
            .iter()
            .copied()
            .cycle()
            .take(64 * 1024)
            .collect();
        let chunks = 200 * 1024 * 1024 / chunk.len();
        for _ in 0..chunks {
            capture.push(&chunk);
            assert!(
                allocated(&capture) <= max_bytes + 1,
                "allocated {}",
                allocated(&capture)
            );
        }
        assert_eq!(capture.total_bytes(), (chunks * chunk.len()) as u64);
        let captured = capture.finish();
        assert!(captured.head.len() + captured.tail.len() <= max_bytes);
        assert!(captured.omitted.is_some());
    }

    #[test]
    fn memory_stays_bounded_with_chunks_larger_than_the_cap() {
        for max_bytes in [0, 1, 2, 3, 100, 1001] {
            let mut capture = Capture::new(CaptureLimits {
                max_bytes,
                max_lines: None,
            });
            let chunk = vec![b'x'; 5000];
            for _ in 0..50 {
                capture.push(&chunk);
                assert!(
                    allocated(&capture) <= max_bytes + 1,
                    "max_bytes {max_bytes}"
                );
            }
        }
    }

    #[test]
    fn small_output_does_not_allocate_the_whole_budget() {
        let mut capture = Capture::new(CaptureLimits::DEFAULT);
        capture.push(b"ok\n");
        assert!(allocated(&capture) < 64);
    }
}

//! The last bytes of a stream, in memory bounded by their count.

use crate::bounded::reserve_within;

/// Keeps the last `capacity` bytes pushed into it.
///
/// Storage grows on demand up to `capacity` and is then overwritten in place,
/// oldest first, so a stream of any length costs at most `capacity` bytes.
pub(crate) struct TailRing {
    buf: Vec<u8>,
    capacity: usize,
    /// Where the oldest byte sits once `buf` is full (always 0 before that).
    oldest: usize,
}

impl TailRing {
    pub(crate) fn new(capacity: usize) -> TailRing {
        TailRing {
            buf: Vec::new(),
            capacity,
            oldest: 0,
        }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        // Only the last `capacity` bytes of a chunk can survive it.
        let mut chunk = &chunk[chunk.len().saturating_sub(self.capacity)..];
        if self.buf.len() < self.capacity {
            let (fill, rest) = chunk.split_at(chunk.len().min(self.capacity - self.buf.len()));
            reserve_within(&mut self.buf, fill.len(), self.capacity);
            self.buf.extend_from_slice(fill);
            chunk = rest;
        }
        if chunk.is_empty() {
            return;
        }
        // Full: overwrite from the oldest byte on, wrapping at most once since
        // the chunk is no longer than the buffer.
        let (to_end, wrapped) = chunk.split_at(chunk.len().min(self.capacity - self.oldest));
        self.buf[self.oldest..self.oldest + to_end.len()].copy_from_slice(to_end);
        self.buf[..wrapped.len()].copy_from_slice(wrapped);
        self.oldest = (self.oldest + chunk.len()) % self.capacity;
    }

    /// The kept bytes, oldest first.
    pub(crate) fn into_vec(self) -> Vec<u8> {
        let mut buf = self.buf;
        buf.rotate_left(self.oldest);
        buf
    }

    #[cfg(test)]
    pub(crate) fn allocated(&self) -> usize {
        self.buf.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::TailRing;

    #[test]
    fn keeps_the_last_bytes_across_wraps() {
        let stream: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for capacity in [0, 1, 2, 7, 64, 999, 1000, 1001] {
            for chunk_len in [1, 3, 7, 64, 500, 2000] {
                let mut ring = TailRing::new(capacity);
                for chunk in stream.chunks(chunk_len) {
                    ring.push(chunk);
                }
                let expected = &stream[stream.len().saturating_sub(capacity)..];
                assert_eq!(
                    ring.into_vec(),
                    expected,
                    "capacity {capacity}, chunks {chunk_len}"
                );
            }
        }
    }
}

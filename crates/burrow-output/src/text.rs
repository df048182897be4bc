//! Line and UTF-8 boundary arithmetic on byte slices.

use memchr::{memchr_iter, memrchr_iter};

/// SIMD newline count: this runs on every byte of every stream.
pub(crate) fn count_newlines(bytes: &[u8]) -> u64 {
    memchr_iter(b'\n', bytes).count() as u64
}

/// Length of the prefix holding the first `lines` lines: it ends right after
/// the `lines`-th newline, or is the whole slice if there are fewer.
pub(crate) fn prefix_of_lines(bytes: &[u8], lines: usize) -> usize {
    match lines.checked_sub(1) {
        None => 0,
        Some(nth) => memchr_iter(b'\n', bytes)
            .nth(nth)
            .map_or(bytes.len(), |at| at + 1),
    }
}

/// Start of the suffix holding at most `lines` lines of `bytes`, which must end
/// where the stream ends. The suffix starts right after a newline, or is the
/// whole slice if it already holds few enough lines (a partial first line
/// counting as one).
pub(crate) fn suffix_start_of_lines(bytes: &[u8], lines: usize) -> usize {
    if lines == 0 {
        return bytes.len();
    }
    // A newline closing the last line does not separate it from anything.
    let nth = lines - 1 + usize::from(bytes.last() == Some(&b'\n'));
    memrchr_iter(b'\n', bytes).nth(nth).map_or(0, |at| at + 1)
}

fn is_continuation(byte: u8) -> bool {
    byte & 0xC0 == 0x80
}

/// Length a UTF-8 sequence announces in its first byte.
fn sequence_len(lead: u8) -> usize {
    match lead {
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF7 => 4,
        _ => 1,
    }
}

/// How many bytes at the end of `bytes` are the start of a character that the
/// end cuts short: a lead byte followed by fewer continuation bytes than it
/// announces. Always at most 3.
pub(crate) fn cut_char_at_end(bytes: &[u8]) -> usize {
    for (back, &byte) in bytes.iter().rev().take(3).enumerate() {
        if !is_continuation(byte) {
            let present = back + 1;
            return if sequence_len(byte) > present {
                present
            } else {
                0
            };
        }
    }
    0
}

/// How many continuation bytes open `bytes` (at most 3): the end of a
/// character whose start lies before the slice.
pub(crate) fn cut_char_at_start(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|&&byte| is_continuation(byte))
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_prefixes_and_suffixes() {
        assert_eq!(prefix_of_lines(b"a\nb\nc", 0), 0);
        assert_eq!(prefix_of_lines(b"a\nb\nc", 2), 4);
        assert_eq!(prefix_of_lines(b"a\nb\nc", 3), 5);
        assert_eq!(suffix_start_of_lines(b"a\nb\nc\n", 1), 4);
        assert_eq!(suffix_start_of_lines(b"a\nb\nc", 1), 4);
        assert_eq!(suffix_start_of_lines(b"a\nb\nc", 2), 2);
        assert_eq!(suffix_start_of_lines(b"a\nb\nc", 3), 0);
        assert_eq!(suffix_start_of_lines(b"a\nb\nc", 0), 5);
        assert_eq!(suffix_start_of_lines(b"", 1), 0);
    }

    #[test]
    fn utf8_cuts() {
        let euro = "€".as_bytes();
        assert_eq!(cut_char_at_end(&euro[..1]), 1);
        assert_eq!(cut_char_at_end(&euro[..2]), 2);
        assert_eq!(cut_char_at_end(euro), 0);
        assert_eq!(cut_char_at_end(b"ab\n"), 0);
        assert_eq!(cut_char_at_start(&euro[1..]), 2);
        assert_eq!(cut_char_at_start(&euro[2..]), 1);
        assert_eq!(cut_char_at_start(euro), 0);
        assert_eq!(cut_char_at_start(&[0x80; 8]), 3);
    }
}

//! Terminal text: escape sequences stripped for readers that are not terminals, and where a
//! chunk of terminal output may be cut without splitting a character or a sequence.
//!
//! The stripper is a small state machine over the sequences terminals and shells actually emit
//! (CSI, OSC, two-byte escapes): a full VT parser would be a dependency for no gain.

/// Text with escape sequences removed and CR LF turned into LF. `raw` should end at a point
/// where no sequence is cut short (see [`complete_prefix`]).
pub fn strip_escapes(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut index = 0;
    while index < raw.len() {
        match raw[index] {
            0x1b => index = sequence_end(raw, index).unwrap_or(raw.len()),
            b'\r' if raw.get(index + 1) == Some(&b'\n') => index += 1,
            // Other control characters but newline and tab are terminal business too.
            byte if byte < 0x20 && byte != b'\n' && byte != b'\t' => index += 1,
            byte => {
                out.push(byte);
                index += 1;
            }
        }
    }
    out
}

/// The length of the longest prefix of `raw` that does not end inside an escape sequence.
pub fn complete_prefix(raw: &[u8]) -> usize {
    // A sequence longer than this is not one (an OSC title, say, is short): look no further.
    let from = raw.len().saturating_sub(256);
    let mut index = from;
    let mut complete = raw.len();
    while index < raw.len() {
        if raw[index] == 0x1b {
            match sequence_end(raw, index) {
                Some(end) => index = end,
                None => {
                    complete = index;
                    break;
                }
            }
        } else {
            index += 1;
        }
    }
    complete
}

/// Where the escape sequence starting at `start` (an ESC) ends; `None` if `raw` ends first.
fn sequence_end(raw: &[u8], start: usize) -> Option<usize> {
    match raw.get(start + 1)? {
        // CSI: parameters and intermediates, then a final byte in @..~.
        b'[' => raw[start + 2..]
            .iter()
            .position(|b| (0x40..=0x7e).contains(b))
            .map(|at| start + 2 + at + 1),
        // OSC (and DCS, PM, APC): up to BEL or ESC \.
        b']' | b'P' | b'^' | b'_' => {
            let body = &raw[start + 2..];
            body.iter().enumerate().find_map(|(at, &b)| match b {
                0x07 => Some(start + 2 + at + 1),
                0x1b if body.get(at + 1) == Some(&b'\\') => Some(start + 2 + at + 2),
                _ => None,
            })
        }
        // Character set selections take one more byte.
        b'(' | b')' | b'*' | b'+' => raw.get(start + 2).map(|_| start + 3),
        _ => Some(start + 2),
    }
}

/// The length of the longest prefix of `bytes` that does not end inside a UTF-8 character.
pub fn utf8_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(error) if error.error_len().is_none() => error.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

/// The byte length of the first `chars` characters of `bytes` (invalid bytes count as one).
pub fn char_prefix(bytes: &[u8], chars: usize) -> usize {
    let mut index = 0;
    let mut counted = 0;
    while index < bytes.len() && counted < chars {
        let width = match bytes[index] {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        index = (index + width).min(bytes.len());
        counted += 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_go_and_text_stays() {
        let raw = b"\x1b[1;32mgreen\x1b[0m \x1b]0;title\x07x\x1b(By\r\nz\x1b=";
        assert_eq!(strip_escapes(raw), b"green xy\nz");
    }

    #[test]
    fn a_cut_sequence_is_left_for_the_next_read() {
        assert_eq!(complete_prefix(b"ab\x1b[1;3"), 2);
        assert_eq!(complete_prefix(b"ab\x1b]0;ti"), 2);
        assert_eq!(complete_prefix(b"ab\x1b"), 2);
        assert_eq!(complete_prefix(b"ab\x1b[0mc"), 7);
    }

    #[test]
    fn characters_are_counted_not_bytes() {
        assert_eq!(char_prefix("héllo".as_bytes(), 2), 3);
        assert_eq!(utf8_prefix(&"é".as_bytes()[..1]), 0);
        assert_eq!(utf8_prefix(b"ab"), 2);
    }
}

//! A prefilter for the built-in PII patterns: it finds the few regions of a
//! text where a match can start, so the regex runs only there (anchored at
//! each position a lazy DFA lets through). Where the regions cover much of
//! the text (dense runs of dotted hex, say), one unanchored pass of the
//! regex is cheaper, and `PiiMatcher::scan` falls back to it.
//!
//! Each check is a *necessary* condition for a match of the pattern as
//! written in `pii/patterns.rs` (before validation), so skipping the rest of
//! the text changes nothing; the tests compare every result with a search
//! that uses no prefilter.
//!
//! Two kinds of scan:
//!
//! - Rare bytes, found with `memchr`: `@` for emails, `/` for URLs (`://`
//!   after `http`/`https`, or a host with a dot before a path), `www.`.
//! - Dense bytes (`.`, `:`, `-`, digits: every log line's timestamp has
//!   them), counted 8 bytes at a time. A pattern needs many of them close
//!   together, so only where the counts allow it are the bytes looked at
//!   one by one:
//!
//! | pattern | every match has | so, over aligned 8-byte words |
//! | --- | --- | --- |
//! | IPv4 | 3 dots within 9 bytes | 2 consecutive words hold 3 dots |
//! | MAC | separators (`:`/`-`) at `i`, `i+3`, `i+6` | such a triple starts in a word (and ends in the next) |
//! | IPv6 | `::`, or 7 colons within 39 bytes, or an IPv4 tail | `::` in or across words, or 6 consecutive words hold 7 colons, or the IPv4 condition |
//! | card | 4 digits, at most one separator, 4 digits | such a sequence starts in a word (and ends in the next) |
//!
//! Where a condition holds, each `.`, `:` or `-` there is looked at: the
//! run of `[0-9A-Fa-f:.-]` around it is a region if it has 3 dots, `::`,
//! 6 colons or 5 separators; and each run of 4 or more digits (a card's
//! `\b` and first group) starts a region if 16 digits with single
//! separators follow within 19 bytes.

use memchr::{memchr2_iter, memmem};

/// Longest host of a bare URL with a path: a label of 63 bytes and 16 more
/// of 64 with their dots (`LABEL` and `URL_MAX_LABELS` in
/// `pii/patterns.rs`).
const MAX_HOST: usize = 63 + 16 * 64;
/// Longest email local part.
const MAX_LOCAL: usize = 64;

/// Which built-in patterns are searched.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Prefilter {
    pub(crate) email: bool,
    pub(crate) url: bool,
    pub(crate) ip: bool,
    pub(crate) mac: bool,
    pub(crate) card: bool,
}

fn is_local(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'%' | b'+' | b'-')
}

fn is_domain(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-')
}

fn is_hexish(b: u8) -> bool {
    b.is_ascii_hexdigit() || matches!(b, b':' | b'.' | b'-')
}

/// `\s` without Unicode, plus `-`: what may separate a card's groups.
fn is_card_separator(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | b'\x0B' | b'\x0C' | b'\r' | b' ' | b'-')
}

/// The maximal run of bytes in `class` around `pos` (which is in it).
fn run_around(hay: &[u8], pos: usize, class: impl Fn(u8) -> bool) -> (usize, usize) {
    let mut start = pos;
    while start > 0 && class(hay[start - 1]) {
        start -= 1;
    }
    let mut end = pos + 1;
    while end < hay.len() && class(hay[end]) {
        end += 1;
    }
    (start, end)
}

impl Prefilter {
    /// Replaces `regions` with sorted `(start, end)` ranges that hold every
    /// position at or after `at` where a pattern can start a match in `hay`.
    /// Ranges may overlap.
    pub(crate) fn regions(&self, hay: &[u8], at: usize, regions: &mut Vec<(usize, usize)>) {
        regions.clear();
        if self.url {
            for t in memmem::find_iter(&hay[at..], b"www.") {
                regions.push((at + t, at + t + 1));
            }
        }
        if self.email || self.url {
            self.at_and_slash(hay, at, regions);
        }
        if self.ip || self.mac || self.card {
            self.dense(hay, at, regions);
        }
        regions.retain_mut(|(start, end)| {
            *start = (*start).max(at);
            start < end
        });
        regions.sort_unstable();
    }

    /// `@` (email) and `/` (URLs).
    fn at_and_slash(&self, hay: &[u8], at: usize, regions: &mut Vec<(usize, usize)>) {
        for offset in memchr2_iter(b'@', b'/', &hay[at..]) {
            let t = at + offset;
            if hay[t] == b'@' {
                if !self.email || !hay.get(t + 1).copied().is_some_and(is_domain) {
                    continue;
                }
                let floor = t.saturating_sub(MAX_LOCAL);
                let mut start = t;
                while start > floor && is_local(hay[start - 1]) {
                    start -= 1;
                }
                if start < t {
                    regions.push((start, t));
                }
                continue;
            }
            if !self.url || t == 0 {
                continue;
            }
            // "http://" and "https://": the first slash of "://".
            if hay[t - 1] == b':' && hay.get(t + 1) == Some(&b'/') {
                if t >= 5 && &hay[t - 5..t - 1] == b"http" {
                    regions.push((t - 5, t - 4));
                }
                if t >= 6 && &hay[t - 6..t - 1] == b"https" {
                    regions.push((t - 6, t - 5));
                }
                continue;
            }
            // A bare URL's host ends with an alphanumeric and has a dot.
            if hay[t - 1].is_ascii_alphanumeric() {
                let floor = t.saturating_sub(MAX_HOST + 1);
                let mut start = t - 1;
                let mut dot = false;
                while start > floor && is_domain(hay[start - 1]) {
                    start -= 1;
                    dot |= hay[start] == b'.';
                }
                if dot {
                    regions.push((start, t));
                }
            }
        }
    }

    /// IPv4, IPv6, MAC and cards: bit masks and counts per 8-byte word,
    /// then a closer look where they allow a match.
    fn dense(&self, hay: &[u8], at: usize, regions: &mut Vec<(usize, usize)>) {
        let (mut previous_dots, mut previous_colons, mut previous_separators, mut previous_digits) =
            (0, 0, 0, 0);
        // Colon counts of the last words (by word index modulo 8), and the
        // sum over the last 6.
        let mut colon_counts = [0u32; 8];
        let mut colon_sum = 0;
        // Bytes before these have had their closer look.
        let mut punctuation_done = at;
        let mut cards_done = at;
        let mut pos = at - at % 8;
        while pos < hay.len() {
            let word = load_padded(hay, pos);
            let end = (pos + 8).min(hay.len());
            let word_start = pos.saturating_sub(8);
            let mut from = None;
            if self.ip || self.mac {
                let colons = byte_mask(word, b':');
                if self.ip {
                    let dots = byte_mask(word, b'.');
                    // IPv4: 3 dots within 9 bytes, so within 2 words.
                    let ipv4 = (previous_dots | dots) != 0
                        && lane_count(previous_dots) + lane_count(dots) >= 3;
                    previous_dots = dots;
                    // IPv6: "::", in a word or across two.
                    let double = colons & (colons >> 8) != 0
                        || (previous_colons >> 63) & (colons >> 7) & 1 != 0;
                    // IPv6 in full: 7 colons within 39 bytes, so 6 words.
                    let slot = (pos / 8) & 7;
                    let count = lane_count(colons);
                    // Slot `slot + 2` holds the word 6 back, leaving the 6.
                    colon_sum = colon_sum + count - colon_counts[(slot + 2) & 7];
                    colon_counts[slot] = count;
                    if colon_sum >= 7 {
                        from = Some(pos.saturating_sub(40));
                    } else if ipv4 || double {
                        from = Some(word_start);
                    }
                }
                if self.mac {
                    // A MAC's first 3 separators, 3 bytes apart, start in
                    // one word and end in the next.
                    let separators = colons | byte_mask(word, b'-');
                    let ahead = |bytes: u32| lanes_ahead(previous_separators, separators, bytes);
                    if previous_separators & ahead(3) & ahead(6) != 0 {
                        from = Some(from.map_or(word_start, |from: usize| from.min(word_start)));
                    }
                    previous_separators = separators;
                }
                previous_colons = colons;
            }
            if let Some(from) = from {
                punctuation_done = self.punctuation(hay, from.max(punctuation_done), end, regions);
            }
            if self.card {
                // A card's first two groups ("dddd dddd", 9 bytes at most)
                // start in one word and end in the next.
                let digits = digit_mask(word);
                // Four digits from each byte of the previous word, and from
                // each of this word (looking no further).
                let ahead = |bytes: u32| lanes_ahead(previous_digits, digits, bytes);
                let fours = previous_digits & ahead(1) & ahead(2) & ahead(3);
                let fours_here = digits & (digits >> 8) & (digits >> 16) & (digits >> 24);
                let ahead = |bytes: u32| lanes_ahead(fours, fours_here, bytes);
                if fours & (ahead(4) | ahead(5)) != 0 {
                    cards_done = cards(hay, word_start.max(cards_done), end, regions);
                }
                previous_digits = digits;
            }
            pos += 8;
        }
    }

    /// The closer look at `hay[from..to]` for IPv4, IPv6 and MAC: the run
    /// of `[0-9A-Fa-f:.-]` around each `.`, `:` and `-` is a region if it
    /// has 3 dots, `::` or 6 colons (IP), or 5 separators (MAC). Returns how
    /// far it looked (runs may end after `to`).
    fn punctuation(
        &self,
        hay: &[u8],
        from: usize,
        to: usize,
        regions: &mut Vec<(usize, usize)>,
    ) -> usize {
        let mut pos = from;
        while pos < to {
            if !matches!(hay[pos], b'.' | b':' | b'-') {
                pos += 1;
                continue;
            }
            let (start, end) = run_around(hay, pos, is_hexish);
            let (mut colons, mut separators, mut dots, mut double_colon) = (0, 0, 0, false);
            let mut previous = 0;
            for &b in &hay[start..end] {
                match b {
                    b':' => {
                        colons += 1;
                        separators += 1;
                        double_colon |= previous == b':';
                    }
                    b'-' => separators += 1,
                    b'.' => dots += 1,
                    _ => {}
                }
                previous = b;
            }
            let ip = self.ip && (dots >= 3 || double_colon || colons >= 6);
            if ip || (self.mac && separators >= 5) {
                regions.push((start, end));
            }
            pos = end;
        }
        pos.max(to)
    }
}

/// The closer look at `hay[from..to]` for cards: a match starts at the
/// first digit of a run of at least 4 (`\b` then 4 digits), and its 16
/// digits and at most 3 single separators follow within 19 bytes. Returns
/// how far it looked.
fn cards(hay: &[u8], from: usize, to: usize, regions: &mut Vec<(usize, usize)>) -> usize {
    let mut pos = from;
    while pos < to {
        if !hay[pos].is_ascii_digit() {
            pos += 1;
            continue;
        }
        // `pos` starts a run of digits unless it began before `from`.
        let start = pos;
        let mut end = pos + 1;
        while end < hay.len() && hay[end].is_ascii_digit() {
            end += 1;
        }
        if end - start >= 4 && (start == 0 || !hay[start - 1].is_ascii_digit()) {
            let mut count = 0;
            let mut previous_separator = true;
            for &b in hay[start..].iter().take(19) {
                if b.is_ascii_digit() {
                    count += 1;
                    previous_separator = false;
                } else if is_card_separator(b) && !previous_separator {
                    previous_separator = true;
                } else {
                    break;
                }
            }
            if count >= 16 {
                regions.push((start, start + 1));
            }
        }
        pos = end;
    }
    pos.max(to)
}

const LOW7: u64 = 0x7F7F_7F7F_7F7F_7F7F;
const HIGH: u64 = 0x8080_8080_8080_8080;
const ONES: u64 = 0x0101_0101_0101_0101;

/// The 8 bytes at `pos`, zeros past the end.
fn load_padded(hay: &[u8], pos: usize) -> u64 {
    if let Some(bytes) = hay
        .get(pos..pos + 8)
        .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
    {
        return u64::from_le_bytes(bytes);
    }
    let mut bytes = [0u8; 8];
    let end = (pos + 8).min(hay.len());
    bytes[..end - pos].copy_from_slice(&hay[pos..end]);
    u64::from_le_bytes(bytes)
}

/// Bit 7 of each byte of `word` set where that byte is `byte` (exact: no
/// carries between bytes).
fn byte_mask(word: u64, byte: u8) -> u64 {
    let diff = word ^ (ONES * u64::from(byte));
    !(((diff & LOW7) + LOW7) | diff) & HIGH
}

/// The mask of the bytes `bytes` (1 to 7) further on, for the bytes of the
/// word of `previous`, taking the rest from the next word's `next`.
fn lanes_ahead(previous: u64, next: u64, bytes: u32) -> u64 {
    (previous >> (8 * bytes)) | (next << (64 - 8 * bytes))
}

/// How many bytes a mask from [`byte_mask`] or [`digit_mask`] marks
/// (without the `popcnt` instruction, which the baseline x86-64 target
/// lacks): each marked byte becomes 1 and the multiplication sums them into
/// the top byte.
fn lane_count(mask: u64) -> u32 {
    ((mask >> 7).wrapping_mul(ONES) >> 56) as u32
}

/// Bit 7 of each byte of `word` set where that byte is an ASCII digit.
fn digit_mask(word: u64) -> u64 {
    let low = word & LOW7;
    // No carries between bytes: every byte of `low` is at most 0x7F.
    let at_least_0 = low + 0x5050_5050_5050_5050; // byte >= 0x30
    let above_9 = low + 0x4646_4646_4646_4646; // byte >= 0x3A
    at_least_0 & !above_9 & !word & HIGH
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    fn lanes_where(lanes: [u8; 8], keep: impl Fn(u8) -> bool) -> u64 {
        lanes
            .iter()
            .enumerate()
            .map(|(lane, &b)| if keep(b) { 0x80u64 << (8 * lane) } else { 0 })
            .sum()
    }

    #[test]
    fn digit_mask_is_exact() {
        for byte in 0..=255u8 {
            let lanes = [b'a', byte, 0xFF, byte, b'0', b'9', b'/', b':'];
            assert_eq!(
                digit_mask(u64::from_le_bytes(lanes)),
                lanes_where(lanes, |b| b.is_ascii_digit()),
                "{byte:#x}"
            );
        }
    }

    #[test]
    fn byte_mask_is_exact() {
        for byte in 0..=255u8 {
            for target in [0u8, b'.', b':', 0x80, 0xFF] {
                let lanes = [byte, target, 0, byte, 0xFF, 1, target.wrapping_add(1), byte];
                let mask = byte_mask(u64::from_le_bytes(lanes), target);
                assert_eq!(
                    mask,
                    lanes_where(lanes, |b| b == target),
                    "{byte:#x} {target:#x}"
                );
            }
        }
    }

    #[test]
    fn lane_count_counts_marked_bytes() {
        for bits in 0..=255u32 {
            let mask: u64 = (0..8)
                .filter(|lane| bits & (1 << lane) != 0)
                .map(|lane| 0x80u64 << (8 * lane))
                .sum();
            assert_eq!(lane_count(mask), bits.count_ones());
        }
    }

    #[test]
    fn padded_load_stops_at_the_end() {
        assert_eq!(
            load_padded(b"abc", 1),
            u64::from_le_bytes([b'b', b'c', 0, 0, 0, 0, 0, 0])
        );
        assert_eq!(
            load_padded(b"abcdefghij", 0),
            u64::from_le_bytes(*b"abcdefgh")
        );
    }

    /// Every alignment of each pattern's densest form is seen.
    #[test]
    fn dense_matches_are_found_at_every_alignment() {
        let all = Prefilter {
            email: true,
            url: true,
            ip: true,
            mac: true,
            card: true,
        };
        for sample in [
            "1.1.1.1",
            "aa:bb:cc:dd:ee:ff",
            "aa-bb-cc-dd-ee-ff",
            "::1",
            "1:2:3:4:5:6:7:8",
            "4111111111111111",
            "4111 1111 1111 1111",
        ] {
            for pad in 0..16 {
                let hay = format!("{}{sample}{}", "x".repeat(pad), "y".repeat(pad % 5));
                let mut regions = Vec::new();
                all.regions(hay.as_bytes(), 0, &mut regions);
                assert!(
                    regions
                        .iter()
                        .any(|&(start, end)| start <= pad && pad < end),
                    "{hay:?}: {regions:?}"
                );
            }
        }
    }
}

//! Registered secrets: the byte patterns that give each value away (the value
//! itself and its base64 forms) and the automaton that finds them.

use aho_corasick::{AhoCorasick, MatchKind};
use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};

use crate::error::RedactError;

/// Shortest secret value accepted: shorter ones would match all over
/// ordinary output.
pub const MIN_SECRET_LEN: usize = 4;

/// Base64 text found inside a longer blob is only looked for when at least
/// this many characters depend on the secret alone; shorter runs would match
/// by chance.
const MIN_INNER_BASE64_LEN: usize = 8;

/// A value to redact wherever it appears, with the name that replaces it
/// (`[REDACTED:NAME]`). Its `Debug` output shows the name and the length,
/// never the value.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    /// Shown in the replacement, so it should not itself be secret.
    pub name: String,
    /// The value, any bytes, at least 4 of them.
    pub value: Vec<u8>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Secret")
            .field("name", &self.name)
            .field("value", &format_args!("<{} bytes>", self.value.len()))
            .finish()
    }
}

impl Secret {
    /// A secret named `name` with value `value`.
    pub fn new(name: impl Into<String>, value: impl Into<Vec<u8>>) -> Secret {
        Secret {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Every byte string that gives `value` away:
///
/// - the value itself;
/// - its base64 encoding, standard and URL-safe alphabets, with and without
///   `=` padding;
/// - for the value inside a larger base64 blob, starting at byte 0, 1 or 2
///   of a 3-byte group: the characters of `encode(k zero bytes + value)`
///   that depend on the value's bits alone (the ones at the edges mix in
///   neighbouring bytes), kept when at least 8 long.
pub(crate) fn secret_patterns(value: &[u8]) -> Vec<Vec<u8>> {
    let mut patterns = vec![value.to_vec()];
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        patterns.push(engine.encode(value).into_bytes());
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for offset in 0..3usize {
            let mut shifted = vec![0u8; offset];
            shifted.extend_from_slice(value);
            let encoded = engine.encode(&shifted).into_bytes();
            // Character i holds bits [6i, 6i + 6); the value's bits are
            // [8 * offset, 8 * (offset + len)).
            let first = (8 * offset).div_ceil(6);
            let end = (8 * (offset + value.len())) / 6;
            if end >= first + MIN_INNER_BASE64_LEN {
                patterns.push(encoded[first..end].to_vec());
            }
        }
    }
    let mut unique: Vec<Vec<u8>> = Vec::with_capacity(patterns.len());
    for pattern in patterns {
        if !unique.contains(&pattern) {
            unique.push(pattern);
        }
    }
    unique
}

/// Finds secret patterns (leftmost-longest) and says how much of a stream's
/// tail might be the start of one. `Debug` shows no pattern.
pub(crate) struct SecretMatcher {
    automaton: AhoCorasick,
    /// Teddy, aho-corasick's SIMD searcher for a few dozen patterns, when it can be built: its
    /// automaton's own prefilter (rare bytes) lets too much through for secrets, whose
    /// patterns (base64 at every alignment) use most of the alphabet.
    packed: Option<aho_corasick::packed::Searcher>,
    /// `[REDACTED:NAME]` for each pattern, by pattern index.
    replacements: Vec<Box<[u8]>>,
    patterns: Vec<Vec<u8>>,
    /// Pattern indices by first byte, for the tail check.
    by_first_byte: Vec<Vec<u32>>,
    longest: usize,
}

impl std::fmt::Debug for SecretMatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretMatcher")
            .field("patterns", &self.patterns.len())
            .field("longest", &self.longest)
            .finish_non_exhaustive()
    }
}

impl SecretMatcher {
    pub(crate) fn new(secrets: &[Secret]) -> Result<Option<SecretMatcher>, RedactError> {
        let mut patterns: Vec<Vec<u8>> = Vec::new();
        let mut replacements = Vec::new();
        for secret in secrets {
            if secret.value.len() < MIN_SECRET_LEN {
                return Err(RedactError::SecretTooShort {
                    name: secret.name.clone(),
                    len: secret.value.len(),
                    min: MIN_SECRET_LEN,
                });
            }
            let replacement = format!("[REDACTED:{}]", secret.name)
                .into_bytes()
                .into_boxed_slice();
            for pattern in secret_patterns(&secret.value) {
                // The same bytes for two secrets: the first one names it.
                if !patterns.contains(&pattern) {
                    patterns.push(pattern);
                    replacements.push(replacement.clone());
                }
            }
        }
        if patterns.is_empty() {
            return Ok(None);
        }
        // The automaton kind is left to aho-corasick (a DFA for few
        // patterns); searches mostly run in its SIMD prefilter anyway.
        let automaton = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&patterns)
            .map_err(|err| RedactError::Build(err.to_string()))?;
        let packed = aho_corasick::packed::Config::new()
            .match_kind(aho_corasick::packed::MatchKind::LeftmostLongest)
            .builder()
            .extend(&patterns)
            .build();
        let mut by_first_byte = vec![Vec::new(); 256];
        for (index, pattern) in patterns.iter().enumerate() {
            by_first_byte[usize::from(pattern[0])].push(index as u32);
        }
        let longest = patterns.iter().map(Vec::len).max().unwrap_or(0);
        Ok(Some(SecretMatcher {
            automaton,
            packed,
            replacements,
            patterns,
            by_first_byte,
            longest,
        }))
    }

    /// Every match in `hay[span]`, leftmost-longest, left to right.
    pub(crate) fn find_iter<'a>(
        &'a self,
        hay: &'a [u8],
        span: std::ops::Range<usize>,
    ) -> impl Iterator<Item = aho_corasick::Match> + 'a {
        let mut at = span.start;
        let end = span.end;
        std::iter::from_fn(move || {
            if at >= end {
                return None;
            }
            let found = match &self.packed {
                Some(packed) => packed.find_in(hay, aho_corasick::Span { start: at, end }),
                None => self
                    .automaton
                    .find(aho_corasick::Input::new(hay).span(at..end)),
            }?;
            // Patterns are never empty, so the search always moves on.
            at = found.end().max(at + 1);
            Some(found)
        })
    }

    pub(crate) fn replacement(&self, pattern: usize) -> &[u8] {
        &self.replacements[pattern]
    }

    /// The longest pattern's length.
    pub(crate) fn longest(&self) -> usize {
        self.longest
    }

    /// The length of the longest suffix of `tail` that is a proper prefix of
    /// some pattern: the bytes that must be withheld because the rest of a
    /// secret may follow.
    pub(crate) fn partial_suffix_len(&self, tail: &[u8]) -> usize {
        let most = tail.len().min(self.longest.saturating_sub(1));
        for len in (1..=most).rev() {
            let suffix = &tail[tail.len() - len..];
            for &index in &self.by_first_byte[usize::from(suffix[0])] {
                let pattern = &self.patterns[index as usize];
                if pattern.len() > len && pattern.starts_with(suffix) {
                    return len;
                }
            }
        }
        0
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn patterns_cover_raw_and_every_base64_form() {
        let patterns = secret_patterns(b"hunter2?>");
        for expected in [
            &b"hunter2?>"[..],
            STANDARD.encode("hunter2?>").as_bytes(),
            URL_SAFE.encode("hunter2?>").as_bytes(),
        ] {
            assert!(
                patterns.iter().any(|p| p == expected),
                "{:?}",
                String::from_utf8_lossy(expected)
            );
        }
        // 9 bytes: no padding, so padded and unpadded coincide; the URL-safe
        // form differs ("?>" encodes to "/j" vs "_j").
        assert_eq!(STANDARD.encode("hunter2?>"), "aHVudGVyMj8+");
        assert!(patterns.iter().any(|p| p == b"aHVudGVyMj8-"));
    }

    #[test]
    fn inner_forms_are_found_in_any_alignment() {
        let secret = b"s3cr3t-v4lue";
        let patterns = secret_patterns(secret);
        for prefix in ["", "a", "ab", "abc", "user:", "user:x"] {
            for suffix in ["", "z", ":rest", ":rest!"] {
                let blob = format!("{prefix}{}{suffix}", std::str::from_utf8(secret).unwrap());
                for engine in [&STANDARD, &URL_SAFE_NO_PAD] {
                    let encoded = engine.encode(&blob).into_bytes();
                    let found = patterns
                        .iter()
                        .any(|p| p.len() >= 8 && encoded.windows(p.len()).any(|w| w == &p[..]));
                    assert!(found, "{blob:?} -> {:?}", String::from_utf8_lossy(&encoded));
                }
            }
        }
    }

    #[test]
    fn short_values_are_refused() {
        let err = SecretMatcher::new(&[Secret::new("PIN", "123")]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "secret \"PIN\" is too short to redact reliably (3 bytes; at least 4 are needed)"
        );
        assert!(
            SecretMatcher::new(&[Secret::new("PIN", "1234")])
                .unwrap()
                .is_some()
        );
    }

    #[test]
    fn partial_suffix_is_exact() {
        let matcher = SecretMatcher::new(&[Secret::new("PW", "Password: hunter2")])
            .unwrap()
            .unwrap();
        assert_eq!(matcher.partial_suffix_len(b"xx Password: hun"), 13);
        assert_eq!(matcher.partial_suffix_len(b"Password: "), 10);
        let other = SecretMatcher::new(&[Secret::new("PW", "hunter2")])
            .unwrap()
            .unwrap();
        assert_eq!(other.partial_suffix_len(b"Password: "), 0);
        assert_eq!(other.partial_suffix_len(b"Password: h"), 1);
        // A whole pattern is not a proper prefix.
        assert_eq!(other.partial_suffix_len(b"hunter2"), 0);
    }
}

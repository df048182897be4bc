//! Checks a candidate must pass to count as a match: Luhn for cards, parsing for IP addresses.

use std::net::{Ipv4Addr, Ipv6Addr};

use regex_automata::Match;

use super::PiiMatcher;
use super::patterns::Sub;

impl PiiMatcher {
    pub(super) fn valid(&self, hay: &[u8], found: &Match) -> bool {
        let value = &hay[found.range()];
        match self.patterns[found.pattern().as_usize()].sub {
            Sub::Email | Sub::Mac | Sub::UrlBare | Sub::Custom => true,
            Sub::Card => passes_luhn(value),
            Sub::Ipv4 => {
                std::str::from_utf8(value).is_ok_and(|text| text.parse::<Ipv4Addr>().is_ok())
            }
            Sub::Ipv6 => {
                let before = found.start().checked_sub(1).map(|i| hay[i]);
                let after = hay.get(found.end()).copied();
                let joined = |byte: Option<u8>| {
                    byte.is_some_and(|b| b == b':' || b.is_ascii_alphanumeric() || b == b'_')
                };
                !joined(before)
                    && !joined(after)
                    && value.iter().any(u8::is_ascii_hexdigit)
                    && std::str::from_utf8(value).is_ok_and(|text| text.parse::<Ipv6Addr>().is_ok())
            }
            // urlparse's netloc is what follows "//" up to '/', '?' or '#'.
            Sub::UrlScheme => {
                let rest = value
                    .strip_prefix(b"https://")
                    .or_else(|| value.strip_prefix(b"http://"));
                rest.and_then(|rest| rest.first())
                    .is_some_and(|b| !matches!(b, b'/' | b'?' | b'#'))
            }
        }
    }
}

/// LangChain's `_passes_luhn`: 13 to 19 digits with a valid check digit.
fn passes_luhn(value: &[u8]) -> bool {
    let digits: Vec<u32> = value
        .iter()
        .filter(|b| b.is_ascii_digit())
        .map(|b| u32::from(b - b'0'))
        .collect();
    if !(13..=19).contains(&digits.len()) {
        return false;
    }
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(index, &digit)| {
            if index % 2 == 1 {
                let doubled = digit * 2;
                if doubled > 9 { doubled - 9 } else { doubled }
            } else {
                digit
            }
        })
        .sum();
    sum.is_multiple_of(10)
}

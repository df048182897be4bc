//! What a match is replaced with, by its rule's strategy: a tag, a short hash, or a mask.

use std::fmt::Write as _;

use sha2::{Digest, Sha256};

use super::patterns::Sub;
use super::{PiiMatch, PiiMatcher};
use crate::rule::Strategy;

impl PiiMatcher {
    /// Writes the replacement for `found` (whose text is `value`) to `out`.
    pub(crate) fn write_replacement(&self, found: &PiiMatch, value: &[u8], out: &mut Vec<u8>) {
        let info = &self.patterns[found.pattern.as_usize()];
        match info.strategy {
            Strategy::Redact | Strategy::Block => {
                out.extend_from_slice(b"[REDACTED_");
                out.extend(info.kind.bytes().map(|b| b.to_ascii_uppercase()));
                out.push(b']');
            }
            Strategy::Hash => {
                let digest = Sha256::digest(value);
                let mut text = format!("<{}_hash:", info.kind);
                for byte in &digest[..4] {
                    let _ = write!(text, "{byte:02x}");
                }
                text.push('>');
                out.extend_from_slice(text.as_bytes());
            }
            Strategy::Mask => mask(info.sub, value, out),
        }
    }
}

/// LangChain's `_apply_mask_strategy`, case by case.
fn mask(sub: Sub, value: &[u8], out: &mut Vec<u8>) {
    match sub {
        Sub::Email => {
            let parts: Vec<&[u8]> = value.split(|&b| b == b'@').collect();
            if let [local, domain] = parts[..] {
                out.extend_from_slice(local);
                out.extend_from_slice(b"@****");
                let labels: Vec<&[u8]> = domain.split(|&b| b == b'.').collect();
                if labels.len() > 1 {
                    out.push(b'.');
                    out.extend_from_slice(labels[labels.len() - 1]);
                }
            } else {
                out.extend_from_slice(b"****");
            }
        }
        Sub::Card => {
            let digits: Vec<u8> = value.iter().copied().filter(u8::is_ascii_digit).collect();
            let last4 = &digits[digits.len().saturating_sub(4)..];
            let separator = if value.contains(&b'-') {
                Some(b'-')
            } else if value.contains(&b' ') {
                Some(b' ')
            } else {
                None
            };
            match separator {
                Some(sep) => {
                    for _ in 0..3 {
                        out.extend_from_slice(b"****");
                        out.push(sep);
                    }
                }
                None => out.extend_from_slice(b"************"),
            }
            out.extend_from_slice(last4);
        }
        Sub::Ipv4 | Sub::Ipv6 => {
            let octets: Vec<&[u8]> = value.split(|&b| b == b'.').collect();
            if octets.len() == 4 {
                out.extend_from_slice(b"*.*.*.");
                out.extend_from_slice(octets[3]);
            } else {
                out.extend_from_slice(b"****");
            }
        }
        Sub::Mac => {
            let sep = if value.contains(&b':') { b':' } else { b'-' };
            for _ in 0..5 {
                out.extend_from_slice(b"**");
                out.push(sep);
            }
            out.extend_from_slice(&value[value.len().saturating_sub(2)..]);
        }
        Sub::UrlScheme | Sub::UrlBare => out.extend_from_slice(b"[MASKED_URL]"),
        Sub::Custom => {
            out.extend_from_slice(b"****");
            // Python counts characters; so do we when the match is text.
            match std::str::from_utf8(value) {
                Ok(text) => {
                    let count = text.chars().count();
                    if count > 4 {
                        let tail: String = text.chars().skip(count - 4).collect();
                        out.extend_from_slice(tail.as_bytes());
                    }
                }
                Err(_) if value.len() > 4 => out.extend_from_slice(&value[value.len() - 4..]),
                Err(_) => {}
            }
        }
    }
}

//! The built-in detectors as regex text: bounded for the search, unbounded for the grow DFA.

use crate::rule::PiiKind;

// One IPv4 octet as Python's `ipaddress` accepts it: 0-255, no leading zero.
const OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const HEX16: &str = "[0-9A-Fa-f]{1,4}";
/// Longest URL path (or URL after the scheme) matched.
const URL_MAX: usize = 2048;
/// Most dot-separated labels after the first in a bare URL's host.
const URL_MAX_LABELS: usize = 16;

/// One searchable pattern of a rule; a rule has one or two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sub {
    Email,
    Card,
    Ipv4,
    Ipv6,
    Mac,
    UrlScheme,
    UrlBare,
    Custom,
}

/// The patterns of a rule. With `bounded` false, the long repetitions are
/// unbounded: a superset, with no counters, for the lazy DFA that tells
/// whether a match may still grow (see [`PiiMatcher::undecided_at`]).
///
/// [`PiiMatcher::undecided_at`]: super::PiiMatcher::undecided_at
pub(super) fn builtin_patterns(kind: &PiiKind, bounded: bool) -> Vec<(Sub, String)> {
    // `{min,max}`, or `{min,}` unbounded.
    let up_to = |min: usize, max: usize| {
        if bounded {
            format!("{{{min},{max}}}")
        } else {
            format!("{{{min},}}")
        }
    };
    let ipv4 = format!("(?:{OCTET}\\.){{3}}{OCTET}");
    let label = format!("[a-zA-Z0-9](?:[a-zA-Z0-9-]{}[a-zA-Z0-9])?", up_to(0, 61));
    match kind {
        // LangChain: \b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{2,}\b
        // (the `|` in the TLD class is LangChain's, kept for parity).
        PiiKind::Email => vec![(
            Sub::Email,
            format!(
                r"(?-u)\b[A-Za-z0-9._%+-]{}@[A-Za-z0-9.-]{}\.[A-Z|a-z]{}\b",
                up_to(1, 64),
                up_to(1, 253),
                up_to(2, 63)
            ),
        )],
        // LangChain: \b\d{4}[\s-]?\d{4}[\s-]?\d{4}[\s-]?\d{4}\b, then Luhn.
        PiiKind::CreditCard => {
            vec![(
                Sub::Card,
                r"(?-u)\b[0-9]{4}[\s-]?[0-9]{4}[\s-]?[0-9]{4}[\s-]?[0-9]{4}\b".into(),
            )]
        }
        // LangChain: \b(?:[0-9]{1,3}\.){3}[0-9]{1,3}\b, then ipaddress; the
        // octet pattern does ipaddress's check in the regex. IPv6 is
        // burrow's: the full form, or one `::`, optionally ending in an IPv4
        // address, then checked by `Ipv6Addr` (see `valid`).
        PiiKind::Ip => {
            let h = HEX16;
            let v6 = [
                format!(r"\b{h}(?::{h}){{5}}:{ipv4}\b"),
                format!(r"(?:\b{h}(?::{h}){{0,5}}|\B)::(?:{h}:){{0,5}}{ipv4}\b"),
                format!(r"\b{h}(?::{h}){{7}}\b"),
                format!(r"\b{h}(?::{h}){{0,6}}::(?:{h}(?::{h}){{0,6}}\b)?"),
                // "::" alone (or "::::") is not an address: hex must follow.
                format!(r"\B::{h}(?::{h}){{0,6}}\b"),
            ]
            .join("|");
            vec![
                (Sub::Ipv4, format!(r"(?-u)\b{ipv4}\b")),
                (Sub::Ipv6, format!("(?-u)(?:{v6})")),
            ]
        }
        // LangChain: \b([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\b
        PiiKind::MacAddress => vec![(
            Sub::Mac,
            r"(?-u)\b(?:[0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}\b".into(),
        )],
        // LangChain: https?://[^\s<>"{}|\\^`\[\]]+ with a non-empty netloc,
        // and \b(?:www\.)?LABEL(?:\.LABEL)+(?:/[^\s]*)? kept only when it
        // starts with "www." or has a path; here that condition is part of
        // the regex, so a rejected candidate never hides another match.
        PiiKind::Url => vec![
            (
                Sub::UrlScheme,
                format!(
                    r#"(?-u)https?://[^\s<>"{{}}|\\^`\[\]]{}"#,
                    up_to(1, URL_MAX)
                ),
            ),
            (
                Sub::UrlBare,
                format!(
                    r"(?-u)\b(?:www\.{label}(?:\.{label}){labels0}(?:/\S{path})?|{label}(?:\.{label}){labels1}/\S{path})",
                    labels0 = up_to(0, URL_MAX_LABELS),
                    labels1 = up_to(1, URL_MAX_LABELS),
                    path = up_to(0, URL_MAX),
                ),
            ),
        ],
        PiiKind::Custom(pattern) => vec![(Sub::Custom, pattern.clone())],
    }
}

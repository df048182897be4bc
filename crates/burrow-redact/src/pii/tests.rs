//! Tests of the matcher: the prefilter against the plain search, and validation fallbacks.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use super::*;

fn matcher(rules: &[&str]) -> PiiMatcher {
    let rules: Vec<RuleSpec> = rules.iter().map(|r| r.parse().unwrap()).collect();
    let refs: Vec<&RuleSpec> = rules.iter().collect();
    PiiMatcher::new(&refs).unwrap().unwrap()
}

fn all_matches(pii: &PiiMatcher, hay: &[u8], filtered: bool) -> Vec<(usize, usize, usize)> {
    all_matches_with(pii, &mut pii.create_cache(), hay, filtered)
}

fn all_matches_with(
    pii: &PiiMatcher,
    caches: &mut PiiCaches,
    hay: &[u8],
    filtered: bool,
) -> Vec<(usize, usize, usize)> {
    let mut regions = Vec::new();
    let mut scan = pii.scan_with(hay, 0, &mut regions, false);
    let mut at = 0;
    let mut out = Vec::new();
    loop {
        let found = if filtered {
            scan.find(caches, at)
        } else {
            pii.find_unfiltered(&mut caches.regex, hay, at)
        };
        let Some(found) = found else { break };
        out.push((found.start, found.end, found.pattern.as_usize()));
        at = found.end;
    }
    out
}

/// The prefilter must never lose a match: compare with the plain search
/// on token soup built to sit on every edge of its checks.
#[test]
fn prefilter_finds_exactly_what_the_plain_search_finds() {
    let tokens: &[&[u8]] = &[
        b"alice@example.com",
        b"a.b@c.d.ef",
        b"x@y",
        b"@",
        b"b@x.c|m",
        b"4111 1111 1111 1111",
        b"4111-1111-1111-1111",
        b"4111111111111111",
        b"5500 0000 0000 0004",
        b"1234",
        b"5678",
        b"192.168.1.1",
        b"10.0.0.256",
        b"1.2.3.4.5",
        b"00:1A:2B:3C:4D:5E",
        b"00-1a-2b-3c-4d-5e",
        b"aa:bb",
        b"::1",
        b"fe80::",
        b"::ffff:1.2.3.4",
        b"2001:db8::1",
        b"1:2:3:4:5:6:7:8",
        b"http://x.com/a",
        b"https://a.b",
        b"http:///x",
        b"www.",
        b"www.example.com",
        b"example.com/path",
        b"a.b/c",
        b"src/main.rs",
        b"12:34:56",
        b"-",
        b".",
        b":",
        b"::",
        b"/",
        b"@",
        b" ",
        b"\t",
        b"\n",
        b"x",
        b"42",
        b"ab",
        b"_",
        b"%",
        b"+",
        b"(",
        b"<",
        b"\"",
        b"\xff",
        b"\xc3\xa9",
        b"0",
        b"9",
        b"f",
        b"h",
        b"http",
        b"s://",
        b"w",
        b"ww.",
    ];
    let rule_sets: &[&[&str]] = &[
        &["email", "credit_card", "ip", "mac", "url"],
        &["url", "ip", "mac", "credit_card", "email"],
        &["email"],
        &["credit_card"],
        &["ip"],
        &["mac"],
        &["url"],
        &["ip", "mac"],
    ];
    let matchers: Vec<PiiMatcher> = rule_sets.iter().map(|rules| matcher(rules)).collect();
    let mut caches: Vec<PiiCaches> = matchers.iter().map(PiiMatcher::create_cache).collect();
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..20_000 {
        let mut hay = Vec::new();
        for _ in 0..1 + next() % 12 {
            hay.extend_from_slice(tokens[(next() % tokens.len() as u64) as usize]);
        }
        let pii = &matchers[round % matchers.len()];
        let cache = &mut caches[round % matchers.len()];
        assert!(pii.prefilter.is_some());
        assert_eq!(
            all_matches_with(pii, cache, &hay, true),
            all_matches_with(pii, cache, &hay, false),
            "rules {:?} on {:?}",
            rule_sets[round % rule_sets.len()],
            String::from_utf8_lossy(&hay)
        );
    }
}

#[test]
fn custom_regex_turns_the_prefilter_off() {
    assert!(matcher(&["email", "re:[0-9]{6}"]).prefilter.is_none());
}

#[test]
fn a_candidate_that_fails_validation_gives_later_rules_their_turn() {
    // Not a valid card (Luhn), but the custom rule after it matches.
    let pii = matcher(&["credit_card", "re:[0-9]{4} [0-9]{4} [0-9]{4} [0-9]{4}"]);
    let hay = b"x 4111 1111 1111 1112 y";
    assert_eq!(all_matches(&pii, hay, false), vec![(2, 21, 1)]);
    // A valid card is the card rule's.
    assert_eq!(
        all_matches(&pii, b"x 4111 1111 1111 1111 y", false),
        vec![(2, 21, 0)]
    );
}

//! PII detection: LangChain's detectors as byte regexes with bounded
//! repetition, searched as one multi-pattern regex, then validated (Luhn,
//! IP parsing) and replaced according to each rule's strategy.

use std::fmt::Write as _;
use std::net::{Ipv4Addr, Ipv6Addr};

use regex_automata::hybrid::dfa::{Cache as DfaCache, DFA};
use regex_automata::meta::{Cache as MetaCache, Regex};
use regex_automata::util::start;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, Match, MatchKind, PatternID};
use sha2::{Digest, Sha256};

use crate::error::{ParseRuleError, RedactError};
use crate::prefilter::Prefilter;
use crate::rule::{PiiKind, RuleSpec, Strategy};

/// How far back from the end of the data a custom regex with no maximum
/// length (`a.*b`) is still waited for; a longer match split across chunks
/// may be missed.
pub const UNBOUNDED_CUSTOM_WINDOW: usize = 4096;

/// The syntax every pattern is compiled with: `regex::bytes` semantics
/// (Unicode on, but patterns may match invalid UTF-8). The built-in patterns
/// turn Unicode off with `(?-u)`, so their `\b` is ASCII and the lazy DFA
/// never gives up on non-ASCII bytes.
pub(crate) fn syntax_config() -> syntax::Config {
    syntax::Config::new().utf8(false)
}

// One IPv4 octet as Python's `ipaddress` accepts it: 0-255, no leading zero.
const OCTET: &str = "(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])";
const HEX16: &str = "[0-9A-Fa-f]{1,4}";
/// Longest URL path (or URL after the scheme) matched.
const URL_MAX: usize = 2048;
/// Most dot-separated labels after the first in a bare URL's host.
const URL_MAX_LABELS: usize = 16;

/// One searchable pattern of a rule; a rule has one or two.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sub {
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
fn builtin_patterns(kind: &PiiKind, bounded: bool) -> Vec<(Sub, String)> {
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

#[derive(Debug, Clone)]
struct PatternInfo {
    sub: Sub,
    kind: &'static str,
    strategy: Strategy,
}

/// A rule's match in a haystack.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PiiMatch {
    pub(crate) start: usize,
    pub(crate) end: usize,
    pattern: PatternID,
}

/// The rules of one group (the redacting ones, or the blocking ones) as one
/// multi-pattern regex, plus a lazy DFA of the same patterns used to tell
/// whether a match could still start at a position when more data comes.
#[derive(Debug)]
pub(crate) struct PiiMatcher {
    regex: Regex,
    /// The patterns as a lazy DFA (leftmost-first, like the regex), to tell
    /// cheaply whether anything matches at a position. `None` if the
    /// patterns are beyond it.
    dfa: Option<DFA>,
    /// A lazy DFA of an unbounded superset of the patterns, to tell whether
    /// a match may still start or grow at a position (see
    /// [`PiiMatcher::undecided_at`]). `None` if the patterns are beyond it
    /// (then the whole window is held back).
    grow: Option<DFA>,
    patterns: Vec<PatternInfo>,
    /// One more than the longest possible match: how far back from the end
    /// a match can still be growing.
    window: usize,
    /// `first_bytes[class][byte]`: whether a match can start with `byte`
    /// after a byte of look-behind class `class` (see [`lookbehind_class`]).
    first_bytes: Option<Box<[[bool; 256]; LOOKBEHIND_CLASSES]>>,
    /// `None` when a custom regex is among the patterns.
    prefilter: Option<Prefilter>,
}

/// The mutable state of a [`PiiMatcher`]'s searches.
#[derive(Debug)]
pub(crate) struct PiiCaches {
    regex: MetaCache,
    dfa: Option<DfaCache>,
    grow: Option<DfaCache>,
}

impl PiiCaches {
    /// The cache of the lazy DFA for [`PiiMatcher::undecided_at`].
    pub(crate) fn grow(&mut self) -> Option<&mut DfaCache> {
        self.grow.as_mut()
    }
}

/// A search of one haystack, match after match.
pub(crate) struct PiiScan<'a> {
    pii: &'a PiiMatcher,
    hay: &'a [u8],
    /// Where matches can start (from the prefilter), if it is used.
    regions: Option<&'a [(usize, usize)]>,
    /// The first region not yet passed.
    next: usize,
}

impl PiiScan<'_> {
    /// The leftmost valid match starting at or after `at`; calls must not
    /// go back (`at` never decreases).
    pub(crate) fn find(&mut self, caches: &mut PiiCaches, mut at: usize) -> Option<PiiMatch> {
        let Some(regions) = self.regions else {
            return self.pii.find_unfiltered(&mut caches.regex, self.hay, at);
        };
        while let Some(&(start, end)) = regions.get(self.next) {
            if end > at {
                for pos in start.max(at)..end {
                    // The lazy DFA says cheaply whether anything matches
                    // here; only then does the regex find what.
                    if self.pii.may_start(self.hay, pos)
                        && self.pii.matches_at(caches.dfa.as_mut(), self.hay, pos)
                        && let Some(found) = self.pii.find_at(&mut caches.regex, self.hay, pos)
                    {
                        return Some(found);
                    }
                }
                at = end;
            }
            self.next += 1;
        }
        None
    }
}

/// How many bytes sorted, possibly overlapping `regions` cover.
fn covered(regions: &[(usize, usize)]) -> usize {
    let mut total = 0;
    let mut done = 0;
    for &(start, end) in regions {
        let start = start.max(done);
        if end > start {
            total += end - start;
            done = end;
        }
    }
    total
}

const LOOKBEHIND_CLASSES: usize = 5;

/// The look-behind classes the DFA's start state depends on, each with a
/// representative byte: start of text, `\n`, `\r`, an ASCII word byte, any
/// other ASCII byte. `None` for non-ASCII bytes, which are not classified
/// (a Unicode word boundary in a custom regex may treat them specially).
fn lookbehind_class(byte: Option<u8>) -> Option<usize> {
    match byte {
        None => Some(0),
        Some(b'\n') => Some(1),
        Some(b'\r') => Some(2),
        Some(b) if b.is_ascii_alphanumeric() || b == b'_' => Some(3),
        Some(b) if b.is_ascii() => Some(4),
        Some(_) => None,
    }
}

const LOOKBEHIND_REPRESENTATIVES: [Option<u8>; LOOKBEHIND_CLASSES] =
    [None, Some(b'\n'), Some(b'\r'), Some(b'a'), Some(b' ')];

/// For each look-behind class and byte, whether the anchored DFA survives
/// that first byte. Unknown (errors, quits) counts as yes.
fn first_byte_table(dfa: &DFA) -> Box<[[bool; 256]; LOOKBEHIND_CLASSES]> {
    let mut cache = DfaCache::new(dfa);
    let mut table = Box::new([[true; 256]; LOOKBEHIND_CLASSES]);
    for (class, lookbehind) in LOOKBEHIND_REPRESENTATIVES.iter().enumerate() {
        let config = start::Config::new()
            .anchored(Anchored::Yes)
            .look_behind(*lookbehind);
        let Ok(start) = dfa.start_state(&mut cache, &config) else {
            continue;
        };
        for byte in 0..=255u8 {
            if let Ok(next) = dfa.next_state(&mut cache, start, byte) {
                table[class][usize::from(byte)] = !next.is_dead();
            }
        }
    }
    table
}

impl PiiMatcher {
    pub(crate) fn new(rules: &[&RuleSpec]) -> Result<Option<PiiMatcher>, RedactError> {
        let mut sources = Vec::new();
        let mut patterns = Vec::new();
        let mut window = 0usize;
        for rule in rules {
            rule.check().map_err(|reason| ParseRuleError {
                value: rule.to_string(),
                reason,
            })?;
            for (sub, source) in builtin_patterns(&rule.kind, true) {
                let hir = syntax::parse_with(&source, &syntax_config()).map_err(|err| {
                    ParseRuleError {
                        value: rule.to_string(),
                        reason: crate::error::one_line(&err.to_string()),
                    }
                })?;
                let longest = hir
                    .properties()
                    .maximum_len()
                    .unwrap_or(UNBOUNDED_CUSTOM_WINDOW);
                window = window.max(longest + 1);
                patterns.push(PatternInfo {
                    sub,
                    kind: rule.kind.name(),
                    strategy: rule.strategy,
                });
                sources.push(source);
            }
        }
        if sources.is_empty() {
            return Ok(None);
        }
        let regex = Regex::builder()
            .syntax(syntax_config())
            .configure(
                Regex::config()
                    .match_kind(MatchKind::LeftmostFirst)
                    .utf8_empty(false),
            )
            .build_many(&sources)
            .map_err(|err| RedactError::Build(crate::error::one_line(&err.to_string())))?;
        let dfa = DFA::builder()
            .syntax(syntax_config())
            .configure(
                DFA::config()
                    .match_kind(MatchKind::LeftmostFirst)
                    .unicode_word_boundary(true),
            )
            .build_many(&sources)
            .ok();
        // For "may a match still start or grow here": the unbounded superset
        // of the patterns, with every pattern followed to its end (`All`:
        // leftmost-first stops following a pattern once an earlier one
        // matched). A superset is safe (dead there means dead for the
        // patterns), and without the long bounded repetitions it has few
        // states: on long runs of URL or email bytes, their counters
        // multiply into more states than the lazy DFA's cache holds.
        let unbounded: Vec<String> = rules
            .iter()
            .flat_map(|rule| builtin_patterns(&rule.kind, false))
            .map(|(_, source)| source)
            .collect();
        let grow = DFA::builder()
            .syntax(syntax_config())
            .configure(
                DFA::config()
                    .match_kind(MatchKind::All)
                    .unicode_word_boundary(true),
            )
            .build_many(&unbounded)
            .ok();
        let first_bytes = dfa.as_ref().map(first_byte_table);
        let mut prefilter = Some(Prefilter::default());
        for info in &patterns {
            match (info.sub, prefilter.as_mut()) {
                (_, None) => {}
                (Sub::Custom, Some(_)) => prefilter = None,
                (Sub::Email, Some(p)) => p.email = true,
                (Sub::Card, Some(p)) => p.card = true,
                (Sub::Ipv4 | Sub::Ipv6, Some(p)) => p.ip = true,
                (Sub::Mac, Some(p)) => p.mac = true,
                (Sub::UrlScheme | Sub::UrlBare, Some(p)) => p.url = true,
            }
        }
        Ok(Some(PiiMatcher {
            regex,
            dfa,
            grow,
            patterns,
            window,
            first_bytes,
            prefilter,
        }))
    }

    pub(crate) fn window(&self) -> usize {
        self.window
    }

    pub(crate) fn create_cache(&self) -> PiiCaches {
        PiiCaches {
            regex: self.regex.create_cache(),
            dfa: self.dfa.as_ref().map(DfaCache::new),
            grow: self.grow.as_ref().map(DfaCache::new),
        }
    }

    pub(crate) fn kind_name(&self, found: &PiiMatch) -> &'static str {
        self.patterns[found.pattern.as_usize()].kind
    }

    /// Starts a search of `hay` from `at`, with the end of `hay` as the end
    /// of the text. `regions` is scratch space for the prefilter.
    pub(crate) fn scan<'a>(
        &'a self,
        hay: &'a [u8],
        at: usize,
        regions: &'a mut Vec<(usize, usize)>,
    ) -> PiiScan<'a> {
        self.scan_with(hay, at, regions, true)
    }

    /// [`scan`](Self::scan); with `adaptive`, text where the prefilter
    /// leaves more than an eighth of the bytes to look at is searched
    /// without it. There, trying each position of the regions costs more
    /// than one pass of the regex over everything (runs of dotted hex
    /// words, say, where each position starts a possible email).
    fn scan_with<'a>(
        &'a self,
        hay: &'a [u8],
        at: usize,
        regions: &'a mut Vec<(usize, usize)>,
        adaptive: bool,
    ) -> PiiScan<'a> {
        let mut use_regions = false;
        if let Some(prefilter) = &self.prefilter {
            prefilter.regions(hay, at, regions);
            use_regions = !adaptive || covered(regions) * 8 <= hay.len() - at;
        }
        PiiScan {
            pii: self,
            hay,
            regions: use_regions.then_some(regions.as_slice()),
            next: 0,
        }
    }

    /// The leftmost valid match in `hay` starting at or after `at`, without
    /// the prefilter. At one position the rules' patterns are tried in
    /// order; a candidate that fails validation (Luhn, IP parsing) gives the
    /// later patterns their turn there.
    fn find_unfiltered(
        &self,
        cache: &mut MetaCache,
        hay: &[u8],
        mut at: usize,
    ) -> Option<PiiMatch> {
        while at < hay.len() {
            let found = self
                .regex
                .search_with(cache, &Input::new(hay).span(at..hay.len()))?;
            if let Some(found) = self.validate_or_next(cache, hay, found) {
                return Some(found);
            }
            at = found.start() + 1;
        }
        None
    }

    /// The match at exactly `pos`, if any, by the same rules.
    fn find_at(&self, cache: &mut MetaCache, hay: &[u8], pos: usize) -> Option<PiiMatch> {
        let end = hay.len().min(pos + self.window);
        let found = self.regex.search_with(
            cache,
            &Input::new(hay).span(pos..end).anchored(Anchored::Yes),
        )?;
        self.validate_or_next(cache, hay, found)
    }

    /// `found` if it is valid, else the first valid match of a later pattern
    /// at the same position.
    fn validate_or_next(
        &self,
        cache: &mut MetaCache,
        hay: &[u8],
        found: Match,
    ) -> Option<PiiMatch> {
        if self.valid(hay, &found) {
            return Some(PiiMatch {
                start: found.start(),
                end: found.end(),
                pattern: found.pattern(),
            });
        }
        let end = hay.len().min(found.start() + self.window);
        for next in found.pattern().as_usize() + 1..self.patterns.len() {
            let Ok(pattern) = PatternID::new(next) else {
                break;
            };
            let input = Input::new(hay)
                .span(found.start()..end)
                .anchored(Anchored::Pattern(pattern));
            if let Some(other) = self.regex.search_with(cache, &input)
                && self.valid(hay, &other)
            {
                return Some(PiiMatch {
                    start: other.start(),
                    end: other.end(),
                    pattern: other.pattern(),
                });
            }
        }
        None
    }

    /// Whether some pattern matches at `pos` (before validation), by running
    /// the lazy DFA anchored there until it dies or matches. Unknown counts
    /// as yes.
    fn matches_at(&self, cache: Option<&mut DfaCache>, hay: &[u8], pos: usize) -> bool {
        let (Some(dfa), Some(cache)) = (&self.dfa, cache) else {
            return true;
        };
        let config = start::Config::new()
            .anchored(Anchored::Yes)
            .look_behind(pos.checked_sub(1).map(|i| hay[i]));
        let Ok(mut state) = dfa.start_state(cache, &config) else {
            return true;
        };
        for &byte in &hay[pos..hay.len().min(pos + self.window)] {
            state = match dfa.next_state(cache, state, byte) {
                Ok(next) => next,
                Err(_) => return true,
            };
            // Matches show one byte late, so a match state here means a
            // match ended before this byte.
            if state.is_match() || state.is_quit() {
                return true;
            }
            if state.is_dead() {
                return false;
            }
        }
        // The end of the text (or of the window, after which no match can
        // go on): one more transition shows a match ending there.
        match hay.get(pos + self.window) {
            Some(&byte) => dfa.next_state(cache, state, byte),
            None => dfa.next_eoi_state(cache, state),
        }
        .map_or(true, |last| last.is_match() || last.is_quit())
    }

    /// Whether a match may start at `pos` as far as its first byte (and the
    /// byte before) tell.
    fn may_start(&self, hay: &[u8], pos: usize) -> bool {
        let lookbehind = pos.checked_sub(1).map(|i| hay[i]);
        match (
            &self.first_bytes,
            lookbehind_class(lookbehind),
            hay.get(pos),
        ) {
            (Some(table), Some(class), Some(&first)) => table[class][usize::from(first)],
            _ => true,
        }
    }

    fn valid(&self, hay: &[u8], found: &Match) -> bool {
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

    /// No position before this can be undecided at the end of `hay`: none
    /// more than the window back, and for the built-in patterns none before
    /// the last whitespace, since their matches hold none (except a card's
    /// single separators, within its 19 bytes).
    pub(crate) fn undecided_floor(&self, hay: &[u8]) -> usize {
        let len = hay.len();
        let mut floor = len.saturating_sub(self.window);
        if self.prefilter.is_some()
            && len >= 2
            && let Some(space) = memchr::memrchr3(b' ', b'\n', b'\t', &hay[..len - 1])
        {
            floor = floor.max((space + 1).min(len.saturating_sub(20)));
        }
        floor
    }

    /// Whether a match could still start at `pos` once more data follows
    /// `hay`: the lazy DFA, anchored at `pos`, is not dead at the end.
    pub(crate) fn undecided_at(
        &self,
        cache: Option<&mut DfaCache>,
        hay: &[u8],
        pos: usize,
    ) -> bool {
        let (Some(dfa), Some(cache)) = (&self.grow, cache) else {
            return true;
        };
        if !self.may_start(hay, pos) {
            return false;
        }
        let lookbehind = pos.checked_sub(1).map(|i| hay[i]);
        let config = start::Config::new()
            .anchored(Anchored::Yes)
            .look_behind(lookbehind);
        let Ok(mut state) = dfa.start_state(cache, &config) else {
            return true;
        };
        for &byte in &hay[pos..] {
            state = match dfa.next_state(cache, state, byte) {
                Ok(next) => next,
                Err(_) => return true,
            };
            if state.is_dead() {
                return false;
            }
            if state.is_quit() {
                return true;
            }
        }
        true
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

#[cfg(test)]
mod tests {
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
}

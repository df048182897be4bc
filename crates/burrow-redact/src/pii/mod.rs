//! PII detection: LangChain's detectors as byte regexes with bounded
//! repetition, searched as one multi-pattern regex, then validated (Luhn,
//! IP parsing) and replaced according to each rule's strategy.

mod lookbehind;
mod patterns;
mod replace;
#[cfg(test)]
mod tests;
mod validate;

use regex_automata::hybrid::dfa::{Cache as DfaCache, DFA};
use regex_automata::meta::{Cache as MetaCache, Regex};
use regex_automata::util::start;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, Match, MatchKind, PatternID};

use crate::error::{ParseRuleError, RedactError};
use crate::prefilter::Prefilter;
use crate::rule::{RuleSpec, Strategy};
use lookbehind::{LOOKBEHIND_CLASSES, first_byte_table, lookbehind_class};
use patterns::{Sub, builtin_patterns};

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

//! The core: cut a buffer into plain text, secret matches and PII matches,
//! and hand each piece to a [`Sink`]. Used for whole buffers (final) and for
//! the pending data of a stream (not final: withhold what may still change).
//!
//! Order of work on one buffer:
//!
//! 1. Secrets first. When more data may follow, the longest suffix that is a
//!    proper prefix of a secret pattern is set aside (`secret_hold`): a
//!    secret may be completing there. Secret matches starting before it are
//!    final (leftmost-longest cannot change for them).
//! 2. PII rules run on each gap between secret matches as a text of its own.
//!    A gap that ends at a secret match is complete. The last gap ends at
//!    `secret_hold` and is not: there a position is *undecided* if a lazy
//!    DFA of the patterns (an unbounded superset of them, in fact),
//!    anchored at it, is still alive at the end of the data: a match may
//!    start there, or grow. Everything from the first undecided position on
//!    is withheld. Matches starting before it are final, even if they end
//!    after it. Positions already found decided stay so (`decided`), so a
//!    stream looks at each once.

use std::sync::Mutex;

use regex_automata::hybrid::dfa::Cache as DfaCache;

use crate::pii::{PiiCaches, PiiMatch, PiiMatcher};
use crate::secret::SecretMatcher;

/// Receives the pieces of the output in order. Positions are indices into
/// the buffer being run.
pub(crate) trait Sink {
    /// `buf[start..end]` passes unchanged.
    fn plain(&mut self, buf: &[u8], start: usize, end: usize);
    /// `buf[start..end]` is replaced by `replacement`.
    fn replaced(&mut self, start: usize, end: usize, replacement: &[u8]);
}

/// Appends everything to a vector.
pub(crate) struct VecSink<'a>(pub(crate) &'a mut Vec<u8>);

impl Sink for VecSink<'_> {
    fn plain(&mut self, buf: &[u8], start: usize, end: usize) {
        self.0.extend_from_slice(&buf[start..end]);
    }

    fn replaced(&mut self, _start: usize, _end: usize, replacement: &[u8]) {
        self.0.extend_from_slice(replacement);
    }
}

/// Appends only what lies at or after `from`; a replaced piece that covers
/// `from` is emitted whole, so a secret straddling the cursor is never half
/// shown.
pub(crate) struct WindowSink<'a> {
    pub(crate) out: &'a mut Vec<u8>,
    pub(crate) from: usize,
}

impl Sink for WindowSink<'_> {
    fn plain(&mut self, buf: &[u8], start: usize, end: usize) {
        let start = start.max(self.from);
        if start < end {
            self.out.extend_from_slice(&buf[start..end]);
        }
    }

    fn replaced(&mut self, _start: usize, end: usize, replacement: &[u8]) {
        if end > self.from {
            self.out.extend_from_slice(replacement);
        }
    }
}

/// Where a non-final run stopped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Progress {
    /// Everything before this index was handed to the sink.
    pub(crate) emitted: usize,
    /// Start of the gap (text between secret matches) that `emitted` is in.
    pub(crate) gap_start: usize,
    /// PII positions from `emitted` up to this index are decided.
    pub(crate) decided: usize,
}

/// Mutable search state: regex caches and a buffer for replacements.
#[derive(Debug)]
pub(crate) struct Scratch {
    redact: Option<PiiCaches>,
    block: Option<PiiCaches>,
    replacement: Vec<u8>,
    regions: Vec<(usize, usize)>,
}

/// Everything a [`Redactor`](crate::Redactor) holds. `Debug` shows no
/// secret and no scratch buffer.
pub(crate) struct Inner {
    pub(crate) secrets: Option<SecretMatcher>,
    /// The rules with strategy redact, mask or hash.
    pub(crate) redact: Option<PiiMatcher>,
    /// The rules with strategy block.
    pub(crate) block: Option<PiiMatcher>,
    pub(crate) hold_back: usize,
    pool: Mutex<Vec<Scratch>>,
}

impl std::fmt::Debug for Inner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Redactor")
            .field("secrets", &self.secrets)
            .field("redact", &self.redact)
            .field("block", &self.block)
            .field("hold_back", &self.hold_back)
            .finish_non_exhaustive()
    }
}

/// Scratch spaces kept for reuse; more are made when needed.
const POOL_SIZE: usize = 16;

impl Inner {
    pub(crate) fn new(
        secrets: Option<SecretMatcher>,
        redact: Option<PiiMatcher>,
        block: Option<PiiMatcher>,
    ) -> Inner {
        let secret_len = secrets.as_ref().map_or(0, SecretMatcher::longest);
        let pii_window = redact.as_ref().map_or(0, PiiMatcher::window);
        Inner {
            secrets,
            redact,
            block,
            hold_back: secret_len + pii_window,
            pool: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn take_scratch(&self) -> Scratch {
        let pooled = self
            .pool
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop();
        pooled.unwrap_or_else(|| Scratch {
            redact: self.redact.as_ref().map(PiiMatcher::create_cache),
            block: self.block.as_ref().map(PiiMatcher::create_cache),
            replacement: Vec::new(),
            regions: Vec::new(),
        })
    }

    pub(crate) fn return_scratch(&self, scratch: Scratch) {
        let mut pool = self
            .pool
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if pool.len() < POOL_SIZE {
            pool.push(scratch);
        }
    }

    /// Cuts `buf[from..]` into pieces for `sink`. `buf[..from]` is context
    /// (at most a byte, in practice): it belongs to the same gap and is the
    /// look-behind for word boundaries. PII positions in `from..decided`
    /// are already known to be decided. When `is_final` is false, what may
    /// still change is withheld and the returned progress says where that
    /// starts.
    pub(crate) fn run(
        &self,
        scratch: &mut Scratch,
        buf: &[u8],
        from: usize,
        decided: usize,
        is_final: bool,
        sink: &mut dyn Sink,
    ) -> Progress {
        let len = buf.len();
        let mut pos = from;
        let mut gap = 0;
        let mut secret_hold = len;
        if let Some(secrets) = &self.secrets {
            if !is_final {
                secret_hold = len - secrets.partial_suffix_len(&buf[from..]);
            }
            for found in secrets.find_iter(buf, from..len) {
                if found.start() >= secret_hold {
                    break;
                }
                self.pii_complete(scratch, buf, gap, pos, found.start(), sink);
                sink.replaced(
                    found.start(),
                    found.end(),
                    secrets.replacement(found.pattern().as_usize()),
                );
                pos = found.end();
                gap = pos;
            }
        }
        if is_final {
            self.pii_complete(scratch, buf, gap, pos, len, sink);
            return Progress {
                emitted: len,
                gap_start: gap,
                decided: len,
            };
        }
        let end = secret_hold.max(pos);
        let (emitted, decided) =
            self.pii_partial(scratch, buf, gap, pos, end, decided.max(pos), sink);
        Progress {
            emitted,
            gap_start: gap,
            decided,
        }
    }

    /// Redacts `buf[pos..end]`, a gap (from `gap` on) that ends at `end`.
    fn pii_complete(
        &self,
        scratch: &mut Scratch,
        buf: &[u8],
        gap: usize,
        pos: usize,
        end: usize,
        sink: &mut dyn Sink,
    ) {
        let mut at = pos;
        if let (Some(pii), Some(caches)) = (&self.redact, &mut scratch.redact) {
            let hay = &buf[gap..end];
            let mut scan = pii.scan(hay, at - gap, &mut scratch.regions);
            while let Some(found) = scan.find(caches, at - gap) {
                sink.plain(buf, at, gap + found.start);
                replace_match(pii, &found, hay, gap, &mut scratch.replacement, sink);
                at = gap + found.end;
            }
        }
        sink.plain(buf, at, end);
    }

    /// Redacts the decided part of `buf[pos..end]`, a gap (from `gap` on)
    /// that more data may extend. Returns how far it emitted and how far
    /// positions are decided.
    #[allow(clippy::too_many_arguments)]
    fn pii_partial(
        &self,
        scratch: &mut Scratch,
        buf: &[u8],
        gap: usize,
        pos: usize,
        end: usize,
        decided: usize,
        sink: &mut dyn Sink,
    ) -> (usize, usize) {
        let (Some(pii), Some(caches)) = (&self.redact, &mut scratch.redact) else {
            sink.plain(buf, pos, end);
            return (end, end);
        };
        let hay = &buf[gap..end];
        let mut at = pos - gap;
        let mut decided = decided.clamp(pos, end) - gap;
        let mut hold = first_undecided(pii, caches.grow(), hay, at, &mut decided);
        let mut scan = pii.scan(hay, at, &mut scratch.regions);
        while at < hold {
            let Some(found) = scan.find(caches, at).filter(|found| found.start < hold) else {
                break;
            };
            sink.plain(buf, gap + at, gap + found.start);
            replace_match(pii, &found, hay, gap, &mut scratch.replacement, sink);
            at = found.end;
            if at > hold {
                hold = first_undecided(pii, caches.grow(), hay, at, &mut decided);
            }
        }
        if at < hold {
            sink.plain(buf, gap + at, gap + hold);
            at = hold;
        }
        (gap + at, gap + decided.max(at))
    }

    /// The kind of the first blocking match in `input` (secret matches cut
    /// the text into gaps, as for redaction), if any.
    pub(crate) fn first_blocked(
        &self,
        scratch: &mut Scratch,
        input: &[u8],
    ) -> Option<&'static str> {
        let (Some(block), Some(caches)) = (&self.block, &mut scratch.block) else {
            return None;
        };
        let mut gaps = Vec::new();
        let mut gap = 0;
        if let Some(secrets) = &self.secrets {
            for found in secrets.find_iter(input, 0..input.len()) {
                gaps.push(gap..found.start());
                gap = found.end();
            }
        }
        gaps.push(gap..input.len());
        gaps.into_iter().find_map(|range| {
            let hay = &input[range];
            block
                .scan(hay, 0, &mut scratch.regions)
                .find(caches, 0)
                .map(|hit| block.kind_name(&hit))
        })
    }
}

/// The first position at or after `at` where a match may start or grow
/// once more data follows `hay`. Positions before `decided` are known to be
/// decided, and so are those more than the matcher's window from the end
/// (only a custom regex with no maximum length can match that far).
fn first_undecided(
    pii: &PiiMatcher,
    mut cache: Option<&mut DfaCache>,
    hay: &[u8],
    at: usize,
    decided: &mut usize,
) -> usize {
    let mut pos = at.max(*decided).max(pii.undecided_floor(hay));
    while pos < hay.len() && !pii.undecided_at(cache.as_deref_mut(), hay, pos) {
        pos += 1;
    }
    *decided = pos;
    pos
}

/// Hands `sink` what replaces the PII match `found` of `hay`, a slice that starts at `gap` in
/// the buffer being redacted; `replacement` is scratch space.
fn replace_match(
    pii: &PiiMatcher,
    found: &PiiMatch,
    hay: &[u8],
    gap: usize,
    replacement: &mut Vec<u8>,
    sink: &mut dyn Sink,
) {
    replacement.clear();
    pii.write_replacement(found, &hay[found.start..found.end], replacement);
    sink.replaced(gap + found.start, gap + found.end, replacement);
}

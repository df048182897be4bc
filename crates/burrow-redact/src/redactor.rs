//! [`Redactor`]: built once from secrets and rules, shared by every output
//! path.

use std::sync::Arc;

use crate::engine::{Inner, VecSink, WindowSink};
use crate::error::RedactError;
use crate::pii::PiiMatcher;
use crate::rule::{RuleSpec, Strategy};
use crate::secret::{Secret, SecretMatcher};
use crate::stream::RedactStream;

/// Most output a stream buffers while a block rule is configured; past it
/// the output is replaced by [`TOO_LARGE_NOTICE`].
pub const BLOCK_BUFFER_LIMIT: usize = 16 << 20;

/// What replaces an output that was too large to be checked for blocked
/// content (fail closed).
pub const TOO_LARGE_NOTICE: &str =
    "Output blocked: more than 16 MiB of output, too large to be checked for blocked content.";

/// `Output blocked: detected {kind}.`, LangChain's message.
pub(crate) fn blocked_notice(kind: &str) -> Vec<u8> {
    format!("Output blocked: detected {kind}.").into_bytes()
}

/// Redacts registered secrets and PII from output. Immutable and cheap to
/// clone (an `Arc` inside), so one is built per workspace or call and shared
/// by every output path, thread and stream.
#[derive(Debug, Clone)]
pub struct Redactor {
    pub(crate) inner: Arc<Inner>,
}

impl Default for Redactor {
    /// [`Redactor::empty`].
    fn default() -> Redactor {
        Redactor::empty()
    }
}

impl Redactor {
    /// Builds a redactor for `secrets` and `rules`.
    ///
    /// Fails if a secret is shorter than 4 bytes, if a custom regex is
    /// invalid or matches the empty string, or if one type is given twice
    /// with different strategies (exact duplicates are dropped).
    pub fn new(secrets: &[Secret], rules: &[RuleSpec]) -> Result<Redactor, RedactError> {
        let mut unique: Vec<&RuleSpec> = Vec::new();
        for rule in rules {
            if let Some(first) = unique.iter().find(|seen| seen.kind == rule.kind) {
                if first.strategy != rule.strategy {
                    return Err(RedactError::DuplicateRule {
                        first: first.to_string(),
                        second: rule.to_string(),
                    });
                }
                continue;
            }
            unique.push(rule);
        }
        let (block, redact): (Vec<&RuleSpec>, Vec<&RuleSpec>) = unique
            .into_iter()
            .partition(|rule| rule.strategy == Strategy::Block);
        let secrets = SecretMatcher::new(secrets)?;
        let redact = PiiMatcher::new(&redact)?;
        let block = PiiMatcher::new(&block)?;
        Ok(Redactor {
            inner: Arc::new(Inner::new(secrets, redact, block)),
        })
    }

    /// A redactor with nothing to do.
    pub fn empty() -> Redactor {
        Redactor {
            inner: Arc::new(Inner::new(None, None, None)),
        }
    }

    /// True when there is nothing to redact: callers can skip all work (the
    /// methods here then return their input unchanged, cheaply).
    pub fn is_empty(&self) -> bool {
        self.inner.secrets.is_none() && self.inner.redact.is_none() && self.inner.block.is_none()
    }

    /// True when a block rule is configured: streams then withhold all
    /// output until [`RedactStream::finish`].
    pub fn blocks(&self) -> bool {
        self.inner.block.is_some()
    }

    /// The most bytes a stream withholds at the end of its pending data
    /// while waiting to see whether a secret or PII match completes there:
    /// the longest secret pattern plus one more than the longest PII match
    /// (a custom regex with no maximum counts as 4096). Block rules aside,
    /// a stream never keeps more than this pending.
    pub fn hold_back(&self) -> usize {
        self.inner.hold_back
    }

    /// Redacts a whole output. If a block rule matches anywhere, the result
    /// is only `Output blocked: detected {type}.` (however long the input:
    /// the 16 MiB limit applies to streams, which must buffer).
    pub fn redact_all(&self, input: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(input.len());
        self.redact_all_into(input, &mut out);
        out
    }

    /// [`redact_all`](Self::redact_all), appending to `out`.
    pub fn redact_all_into(&self, input: &[u8], out: &mut Vec<u8>) {
        if self.is_empty() {
            out.extend_from_slice(input);
            return;
        }
        let mut scratch = self.inner.take_scratch();
        if let Some(kind) = self.inner.first_blocked(&mut scratch, input) {
            out.extend_from_slice(&blocked_notice(kind));
        } else {
            self.inner
                .run(&mut scratch, input, 0, 0, true, &mut VecSink(out));
        }
        self.inner.return_scratch(scratch);
    }

    /// A stream redactor for one output stream (one per stream; it owns a
    /// clone of this redactor, so it can live anywhere).
    pub fn stream(&self) -> RedactStream {
        RedactStream::new(self.clone())
    }

    /// Redacts part of a buffer read from a cursor, without stream state:
    /// `data` holds the raw bytes from absolute position `data_start` on,
    /// and the caller wants the output for what begins at `from`
    /// (`data_start <= from`). The bytes before `from` are context, so that
    /// a secret or PII match straddling `from` is recognised: the output
    /// then starts with that match's replacement instead of half of it.
    /// Give at least [`hold_back`](Self::hold_back) bytes of context when
    /// there are that many.
    ///
    /// When `complete` is false more data may follow, and a tail that may
    /// still become (or grow) a match is withheld. Returns the output and
    /// the absolute position up to which input was consumed: the next
    /// cursor (never less than `from`).
    ///
    /// With a block rule, nothing is returned until `complete`; then the
    /// whole `data` is checked and, if blocked, only the notice is returned.
    pub fn redact_window(
        &self,
        data: &[u8],
        data_start: u64,
        from: u64,
        complete: bool,
    ) -> (Vec<u8>, u64) {
        let data_end = data_start + data.len() as u64;
        let from = from.clamp(data_start, data_end);
        let from_index = (from - data_start) as usize;
        if self.is_empty() {
            return (data[from_index..].to_vec(), data_end);
        }
        let mut out = Vec::new();
        let mut scratch = self.inner.take_scratch();
        if self.blocks() {
            if !complete {
                self.inner.return_scratch(scratch);
                return (out, from);
            }
            if let Some(kind) = self.inner.first_blocked(&mut scratch, data) {
                self.inner.return_scratch(scratch);
                return (blocked_notice(kind), data_end);
            }
        }
        // Start far enough back that any match covering `from` starts inside
        // the window, with one more byte as look-behind.
        let window_start = from_index.saturating_sub(self.inner.hold_back);
        let context = usize::from(window_start > 0);
        let buf = &data[window_start - context..];
        let mut sink = WindowSink {
            out: &mut out,
            from: from_index - (window_start - context),
        };
        let progress = self
            .inner
            .run(&mut scratch, buf, context, context, complete, &mut sink);
        self.inner.return_scratch(scratch);
        let consumed = data_start + (window_start - context + progress.emitted) as u64;
        (out, consumed.max(from))
    }
}

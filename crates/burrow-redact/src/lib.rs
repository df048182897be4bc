//! Redaction of everything that leaves burrow: command output, shell reads,
//! service logs, diffs, file reads, exports.
//!
//! Two things are replaced:
//!
//! - **Secrets** the user registered ([`Secret`]: a name and a value),
//!   wherever their value appears raw or base64-encoded (standard or
//!   URL-safe alphabet, padded or not, alone or inside a longer base64
//!   blob at any alignment), by `[REDACTED:NAME]`.
//! - **PII** found by rules ([`RuleSpec`], written `--redact TYPE[:STRATEGY]`):
//!   emails, credit cards, IP addresses, MAC addresses, URLs and custom
//!   regexes, handled as LangChain's PII middleware does (`redact`, `mask`,
//!   `hash` or `block`, with its formats).
//!
//! Secrets are found first (leftmost-longest); PII rules run on the text
//! between secret matches. At one position the rules are tried in the order
//! given, and the leftmost match wins.
//!
//! A [`Redactor`] is built once and shared. [`Redactor::redact_all`] does a
//! whole buffer; [`Redactor::stream`] gives a [`RedactStream`] for output
//! that arrives in chunks, which withholds any tail that may be the start
//! of a secret or a PII match, so that a secret split across chunks is
//! still redacted; [`Redactor::redact_window`] serves readers that keep a
//! cursor into a raw buffer.
//!
//! ```
//! use burrow_redact::{Redactor, RuleSpec, Secret};
//!
//! let redactor = Redactor::new(
//!     &[Secret::new("GITHUB_TOKEN", "ghp_abc123XYZ")],
//!     &["email:mask".parse::<RuleSpec>()?, "ip".parse()?],
//! )?;
//! assert_eq!(
//!     redactor.redact_all(b"token=ghp_abc123XYZ by alice@example.com from 10.0.0.7"),
//!     b"token=[REDACTED:GITHUB_TOKEN] by alice@****.com from [REDACTED_IP]",
//! );
//!
//! let mut stream = redactor.stream();
//! let mut out = stream.push(b"token=ghp_abc");
//! assert_eq!(out, b"token="); // "ghp_abc" may be the start of the secret
//! out.extend(stream.push(b"123XYZ\n"));
//! out.extend(stream.finish());
//! assert_eq!(out, b"token=[REDACTED:GITHUB_TOKEN]\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The PII patterns are `regex` byte patterns with ASCII word boundaries and
//! every repetition bounded (an email's local part at 64 bytes, its domain
//! at 253, a URL at 2048 after the scheme or the host), so that every match
//! has a known maximum length and a stream needs to hold back only that
//! much. They run as one multi-pattern regex (`regex-automata`, the engine
//! of `regex`), and only where a prefilter finds the bytes a match needs
//! (`@`, `://`, three dots close together, …). Custom regexes are compiled
//! as given (and turn the prefilter off); one with no maximum length is
//! only waited for 4096 bytes back, so a longer match split across chunks
//! may be missed.
//!
//! Where this differs from LangChain's middleware:
//!
//! - Bytes, not Unicode text: `\d`, `\s` and `\b` are ASCII, and invalid
//!   UTF-8 passes through.
//! - Rules are searched together: the leftmost match wins, and at one
//!   position the rule listed first (LangChain applies rules one after the
//!   other over the whole text). A candidate that fails validation (Luhn,
//!   IP parsing) does not hide a later match inside it.
//! - `ip` also finds IPv6 addresses.
//! - Very long matches are cut at the bounds above.
#![deny(missing_docs)]

mod engine;
mod error;
mod pii;
mod prefilter;
mod redactor;
mod rule;
mod secret;
mod stream;

pub use error::{ParseRuleError, RedactError};
pub use pii::UNBOUNDED_CUSTOM_WINDOW;
pub use redactor::{BLOCK_BUFFER_LIMIT, Redactor, TOO_LARGE_NOTICE};
pub use rule::{PiiKind, RuleSpec, Strategy};
pub use secret::{MIN_SECRET_LEN, Secret};
pub use stream::RedactStream;

#[cfg(test)]
mod tests;

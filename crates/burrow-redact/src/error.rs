//! The two error types: reading a rule, and building a [`Redactor`](crate::Redactor).

use thiserror::Error;

/// Why a `--redact` value (or a stored rule) could not be read. The message is
/// one line and names the bad value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("invalid redaction rule {}: {reason}", quoted(.value))]
pub struct ParseRuleError {
    /// The value as given.
    pub value: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Why a [`Redactor`](crate::Redactor) could not be built. Every message is
/// one line.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RedactError {
    /// A secret value so short that redacting it would mangle ordinary output
    /// and still not hide it reliably.
    #[error(
        "secret {} is too short to redact reliably ({len} bytes; at least {min} are needed)",
        quoted(.name)
    )]
    SecretTooShort {
        /// The secret's name.
        name: String,
        /// Its length in bytes.
        len: usize,
        /// The shortest length accepted.
        min: usize,
    },
    /// A rule that is not valid (an invalid custom regex, say).
    #[error(transparent)]
    Rule(#[from] ParseRuleError),
    /// The same built-in type was given twice (with different strategies,
    /// since exact duplicates are dropped).
    #[error("redaction rules {first} and {second} are for the same type; keep one")]
    DuplicateRule {
        /// The first rule, in flag syntax.
        first: String,
        /// The second rule, in flag syntax.
        second: String,
    },
    /// The matchers could not be compiled (a custom regex too large, say).
    #[error("cannot build the redaction matcher: {0}")]
    Build(String),
}

/// `value` in double quotes with control characters escaped, so that a
/// message stays on one line whatever the value holds.
pub(crate) fn quoted(value: &str) -> String {
    format!("{value:?}")
}

/// The last line of a (possibly multi-line) error message, which for regex
/// syntax errors is the `error: ...` line saying what is wrong.
pub(crate) fn one_line(message: &str) -> String {
    let line = message
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("");
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}

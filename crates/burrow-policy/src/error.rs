//! Policy errors: one line each, naming the key at fault.

use std::path::PathBuf;

/// Why a policy was refused.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    /// The file could not be read.
    #[error("cannot read policy file {path}: {error}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        error: std::io::Error,
    },
    /// The TOML did not parse, a key is unknown, or a value has the wrong type.
    #[error("{origin}{line}: {key}{message}", line = line.map(|l| format!(":{l}")).unwrap_or_default(), key = key.as_ref().filter(|k| !k.is_empty() && k.as_str() != ".").map(|k| format!("{k}: ")).unwrap_or_default())]
    Syntax {
        /// The file name or `--flag` the text came from.
        origin: String,
        /// 1-based line of the fault, when known.
        line: Option<usize>,
        /// Dotted key path of the fault, when known.
        key: Option<String>,
        /// What is wrong.
        message: String,
    },
    /// A value is out of range or malformed.
    #[error("{key}: {message}")]
    Invalid {
        /// Dotted key path.
        key: String,
        /// What is wrong and what would be right.
        message: String,
    },
    /// Two settings contradict each other.
    #[error("{key}: {message}")]
    Conflict {
        /// Dotted key path of the second setting.
        key: String,
        /// What it contradicts.
        message: String,
    },
}

impl PolicyError {
    pub(crate) fn syntax(
        origin: &str,
        text: &str,
        error: &toml::de::Error,
        key: Option<String>,
    ) -> PolicyError {
        let line = error
            .span()
            .map(|span| text[..span.start.min(text.len())].matches('\n').count() + 1);
        PolicyError::Syntax {
            origin: origin.to_owned(),
            line,
            key,
            message: one_line(error.message()),
        }
    }

    pub(crate) fn invalid(key: &str, message: impl Into<String>) -> PolicyError {
        PolicyError::Invalid {
            key: key.to_owned(),
            message: message.into(),
        }
    }

    pub(crate) fn conflict(key: &str, message: impl Into<String>) -> PolicyError {
        PolicyError::Conflict {
            key: key.to_owned(),
            message: message.into(),
        }
    }
}

/// Error texts from parsers may span lines; a user-facing error is one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

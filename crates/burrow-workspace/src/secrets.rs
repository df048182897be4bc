//! A workspace's secrets: kept in its directory of burrow's state (never in /workspace, never in
//! the database or the audit log), owner-only, handed to the cell as files under /run/secrets
//! and, on request, as environment variables; and redacted from everything burrow prints.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::error::{Result, WorkspaceError};
use crate::layout::WorkspaceDir;

/// The shortest secret burrow accepts: anything shorter would be found everywhere.
pub const MIN_SECRET: usize = 4;

/// The longest secret.
pub const MAX_SECRET: usize = 64 * 1024;

/// A workspace's secrets, by name.
pub type SecretMap = BTreeMap<String, Vec<u8>>;

/// Checks a secret's name: it is also a file name and, by default, a variable name.
pub fn validate_secret_name(name: &str) -> Result<()> {
    let bytes = name.as_bytes();
    let valid = !bytes.is_empty()
        && bytes.len() <= 64
        && (bytes[0].is_ascii_alphabetic() || bytes[0] == b'_')
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || *b == b'_');
    if valid {
        Ok(())
    } else {
        Err(WorkspaceError::Invalid(format!(
            "`{name}` is not a valid secret name: use letters, digits and `_`, starting with a letter or `_` (up to 64)"
        )))
    }
}

/// Checks a secret's value.
pub fn validate_secret_value(name: &str, value: &[u8]) -> Result<()> {
    if value.len() < MIN_SECRET {
        return Err(WorkspaceError::Invalid(format!(
            "secret {name} is shorter than {MIN_SECRET} bytes, too short to redact reliably"
        )));
    }
    if value.len() > MAX_SECRET {
        return Err(WorkspaceError::Invalid(format!(
            "secret {name} is longer than {MAX_SECRET} bytes"
        )));
    }
    Ok(())
}

/// Reads a workspace's secrets (none when it has none).
pub fn load(dir: &WorkspaceDir) -> Result<SecretMap> {
    let path = dir.secrets();
    let text = match std::fs::read(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(SecretMap::new()),
        Err(error) => return Err(WorkspaceError::Io { path, error }),
    };
    let encoded: BTreeMap<String, String> = serde_json::from_slice(&text)
        .map_err(|error| WorkspaceError::Invalid(format!("{}: {error}", path.display())))?;
    encoded
        .into_iter()
        .map(|(name, value)| {
            STANDARD
                .decode(value)
                .map(|value| (name, value))
                .map_err(|error| WorkspaceError::Invalid(format!("{}: {error}", path.display())))
        })
        .collect()
}

/// Replaces a workspace's secrets (atomically, owner-only).
pub fn save(dir: &WorkspaceDir, secrets: &SecretMap) -> Result<()> {
    let path = dir.secrets();
    let temp = dir.root().join(".secrets.json.new");
    let encoded: BTreeMap<&String, String> = secrets
        .iter()
        .map(|(name, value)| (name, STANDARD.encode(value)))
        .collect();
    let text = serde_json::to_vec(&encoded)
        .map_err(|error| WorkspaceError::Invalid(format!("cannot encode secrets: {error}")))?;
    let _ = std::fs::remove_file(&temp);
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&temp)
        .map_err(WorkspaceError::io(&temp))?;
    file.write_all(&text).map_err(WorkspaceError::io(&temp))?;
    file.sync_all().map_err(WorkspaceError::io(&temp))?;
    std::fs::rename(&temp, &path).map_err(WorkspaceError::io(&path))
}

/// The secrets as the redactor takes them.
pub fn for_redaction(secrets: &SecretMap) -> Vec<burrow_redact::Secret> {
    secrets
        .iter()
        .map(|(name, value)| burrow_redact::Secret {
            name: name.clone(),
            value: value.clone(),
        })
        .collect()
}

/// `NAME[=VAR]` requests for secrets as environment variables, resolved against the
/// workspace's secrets: (variable, value). Values that are not UTF-8 cannot be variables.
pub fn as_env(secrets: &SecretMap, requests: &[String]) -> Result<Vec<(String, String)>> {
    requests
        .iter()
        .map(|request| {
            let (name, variable) = request.split_once('=').unwrap_or((request, request));
            let value = secrets.get(name).ok_or_else(|| {
                WorkspaceError::Invalid(format!(
                    "the workspace has no secret named {name}; see `burrow secret list`"
                ))
            })?;
            let value = String::from_utf8(value.clone()).map_err(|_| {
                WorkspaceError::Invalid(format!(
                    "secret {name} is not UTF-8 text; read it from /run/secrets/{name}"
                ))
            })?;
            if variable.is_empty() {
                return Err(WorkspaceError::Invalid(format!(
                    "--secret-env {request}: name the variable"
                )));
            }
            Ok((variable.to_owned(), value))
        })
        .collect()
}

//! What a burrow cell is allowed to do.
//!
//! A policy comes from a TOML file, command-line flags, or both: each is a [`PolicyFile`] in which
//! every field is optional. Files are laid over each other with [`PolicyFile::overlay`] and then
//! validated once by [`Policy::from_file`], which fills defaults and refuses unknown keys,
//! out-of-range values and contradictions with a one-line error naming the key.
//!
//! ```
//! use burrow_policy::{NetworkMode, Policy, PolicyFile};
//!
//! let file = PolicyFile::from_toml("[network]\nmode = \"host\"\n[limits]\nmemory = \"256M\"", "p.toml")?;
//! let policy = Policy::from_file(file)?;
//! assert_eq!(policy.network, NetworkMode::Host);
//! assert_eq!(policy.limits.pids, 512); // the default
//! # Ok::<(), burrow_policy::PolicyError>(())
//! ```
//!
//! Paths stay as written until [`Policy::resolve_filesystem`] expands `~` and relative paths
//! against a [`PathContext`]; following symlinks and checking existence is left to the sandbox,
//! which does it race-free inside the cell.
#![deny(missing_docs)]

mod credentials;
mod env;
mod error;
mod file;
mod model;
mod network;
mod size;

pub use credentials::{CREDENTIAL_PATHS, DEFAULT_PROTECTED};
pub use env::{
    BASE_VARIABLES, DEFAULT_PATH, EnvPolicy, SANDBOX_MARKER, find_program, looks_secret,
};
pub use error::PolicyError;
pub use file::{
    EnvSection, FilesystemSection, LimitsSection, NetworkSection, OutputSection, PolicyFile,
    SandboxSection, WorkspaceSection,
};
pub use model::{
    Backend, DEFAULT_MAX_OUTPUT, DEFAULT_PIDS, DEFAULT_TIMEOUT, DEFAULT_TMP_SIZE, FilesystemPolicy,
    Limits, NetworkMode, OutputPolicy, PathContext, Policy, ResolvedFilesystem, normalize,
};
pub use network::{HostPattern, NetworkRules, PROXY_PORT, PROXY_URL, Refusal, proxy_variables};
pub use size::{ByteSize, ParseSizeError};

impl Policy {
    /// Reads, parses and validates a policy file.
    pub fn load(path: &std::path::Path) -> Result<Policy, PolicyError> {
        Policy::from_file(PolicyFile::read(path)?)
    }
}

impl PolicyFile {
    /// Reads and parses a policy file without validating it (so it can be overlaid first).
    pub fn read(path: &std::path::Path) -> Result<PolicyFile, PolicyError> {
        let text = std::fs::read_to_string(path).map_err(|error| PolicyError::Read {
            path: path.to_owned(),
            error,
        })?;
        PolicyFile::from_toml(&text, &path.display().to_string())
    }
}

//! Work that clones a cell, done by a short-lived `burrow` child process: the server is
//! multi-threaded, and a cell may only be cloned from a single-threaded process.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::error::{ApiError, ApiResult, ErrorCode};

/// Variables a child gets from the server: where the state is, and what the sandbox needs to
/// hide the server user's credentials (`HOME`). Nothing else of the server's environment.
const PASSED: &[&str] = &[
    "HOME",
    "PATH",
    "LANG",
    "XDG_RUNTIME_DIR",
    burrow_workspace::manager::STORAGE_ENV,
    // The proxy's test-only name overrides: the operator's setting, like the others.
    "BURROW_PROXY_RESOLVE",
];

/// Runs `burrow` subcommands against one state directory.
#[derive(Debug, Clone)]
pub(super) struct Launcher {
    root: PathBuf,
    burrow: PathBuf,
}

impl Launcher {
    pub(super) fn new(root: &Path, burrow: PathBuf) -> Launcher {
        Launcher {
            root: root.to_path_buf(),
            burrow,
        }
    }

    /// Starts a stopped workspace's cell.
    pub(super) fn start(&self, id: &str) -> ApiResult<()> {
        self.succeed(&["ws", "start", id])
    }

    /// Resets a workspace (restarting its cell if it runs).
    pub(super) fn reset(&self, id: &str, to: Option<&str>) -> ApiResult<()> {
        match to {
            Some(snapshot) => self.succeed(&["reset", id, "--to", snapshot]),
            None => self.succeed(&["reset", id]),
        }
    }

    /// Snapshots a workspace (restarting its cell if it runs).
    pub(super) fn snapshot(&self, id: &str, name: &str) -> ApiResult<()> {
        self.succeed(&["snapshot", "create", id, name])
    }

    /// Runs `burrow` with `args` and returns what it printed; its exit status is the caller's
    /// business.
    pub(super) fn output(&self, args: &[OsString]) -> ApiResult<Output> {
        let mut command = Command::new(&self.burrow);
        command
            .args(args)
            .env_clear()
            .env("BURROW_HOME", &self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for name in PASSED {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.output().map_err(|error| {
            ApiError::internal(format!("cannot run {}: {error}", self.burrow.display()))
        })
    }

    fn succeed(&self, args: &[&str]) -> ApiResult<()> {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let output = self.output(&args)?;
        if output.status.success() {
            return Ok(());
        }
        Err(child_error(&output.stderr))
    }
}

/// The error a failed `burrow` child reported: its last line on stderr, which is burrow's
/// one-line message.
pub(super) fn child_error(stderr: &[u8]) -> ApiError {
    let text = String::from_utf8_lossy(stderr);
    let line = text
        .lines()
        .rev()
        .map(str::trim)
        .find(|line| !line.is_empty())
        .unwrap_or("burrow failed without saying why");
    let message = line.strip_prefix("burrow: ").unwrap_or(line);
    let code = if message.starts_with("no workspace named") {
        ErrorCode::NotFound
    } else {
        ErrorCode::Internal
    };
    ApiError::new(code, message)
}

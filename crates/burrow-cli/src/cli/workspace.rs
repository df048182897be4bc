//! Workspaces and their contents: `ws`, `exec`, `file`, `snapshot` and `secret`, and the secret
//! and redaction flags other commands flatten in.

use std::path::PathBuf;

use burrow_policy::ByteSize;
use clap::{Args, Subcommand};

use super::PolicyArgs;
use super::run::parse_assignment;

/// Secrets given to a command, and redaction rules for its output.
#[derive(Debug, Args, Default, Clone)]
pub struct SecretArgs {
    /// Give the workspace's secret NAME to the command as variable VAR (default NAME)
    /// (repeatable).
    #[arg(long = "secret-env", value_name = "NAME[=VAR]")]
    pub secret_env: Vec<String>,
}

/// Redaction rules for one call, besides the workspace's own.
#[derive(Debug, Args, Default, Clone)]
pub struct RedactArgs {
    /// Also redact TYPE (email, credit_card, ip, mac, url, or re:REGEX), with STRATEGY
    /// (redact, mask, hash, block) (repeatable).
    #[arg(long = "redact", value_name = "TYPE[:STRATEGY]")]
    pub redact: Vec<burrow_redact::RuleSpec>,
}

#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Add or replace a secret (from --value, --from-file, or stdin).
    Set {
        /// The workspace (name or id).
        workspace: String,
        /// The secret's name.
        name: String,
        /// The value.
        #[arg(long, conflicts_with = "from_file")]
        value: Option<String>,
        /// Read the value from this host file.
        #[arg(long, value_name = "PATH")]
        from_file: Option<PathBuf>,
    },
    /// Remove a secret.
    Rm {
        /// The workspace (name or id).
        workspace: String,
        /// The secret's name.
        name: String,
    },
    /// List a workspace's secrets (names only).
    List {
        /// The workspace (name or id).
        workspace: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum WsCommand {
    /// Create a workspace (stopped; the first exec starts it) and print its id.
    Create(Box<CreateArgs>),
    /// List your workspaces (not those `burrow serve`'s tenants made; see --all).
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also list the tenants' workspaces, named TENANT~NAME (this is how the CLI refers
        /// to them).
        #[arg(long)]
        all: bool,
    },
    /// Show a workspace.
    Status {
        /// The workspace (name or id).
        workspace: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start a workspace's cell; it keeps running after this command returns.
    Start {
        /// The workspace (name or id).
        workspace: String,
    },
    /// Stop a workspace's cell and every command in it (files stay).
    Stop {
        /// The workspace (name or id).
        workspace: String,
    },
    /// Delete a workspace and its files.
    Delete {
        /// The workspace (name or id).
        workspace: String,
    },
    /// Delete every workspace whose time to live has passed.
    Reap,
}

#[derive(Debug, Args)]
pub struct CreateArgs {
    /// A name to use instead of the id.
    #[arg(long)]
    pub name: Option<String>,
    /// Start from a copy of this host directory or tarball (.tar, .tar.gz, .tgz).
    #[arg(long, value_name = "DIR|TARBALL")]
    pub seed: Option<PathBuf>,
    /// Delete the workspace this many seconds after creation.
    #[arg(long, value_name = "SECS")]
    pub ttl: Option<u64>,
    /// Attach a label (repeatable).
    #[arg(long = "label", value_name = "K=V", value_parser = parse_assignment)]
    pub labels: Vec<(String, String)>,
    /// Stop the cell after this many seconds without commands or connections (0: never).
    #[arg(long, value_name = "SECS")]
    pub idle_timeout: Option<u64>,
    /// Largest file one write may carry, e.g. 16M.
    #[arg(long, value_name = "SIZE")]
    pub max_file_write: Option<ByteSize>,
    /// A secret NAME=VALUE (repeatable); see `burrow secret`.
    #[arg(long = "secret", value_name = "NAME=VALUE", value_parser = parse_assignment)]
    pub secrets: Vec<(String, String)>,
    /// A secret read from a host file (repeatable).
    #[arg(long = "secret-file", value_name = "NAME=PATH", value_parser = parse_assignment)]
    pub secret_files: Vec<(String, String)>,
    /// Redact TYPE (email, credit_card, ip, mac, url, or re:REGEX) from everything this
    /// workspace's commands print, with STRATEGY (redact, mask, hash, block) (repeatable).
    #[arg(long = "redact", value_name = "TYPE[:STRATEGY]")]
    pub redact: Vec<burrow_redact::RuleSpec>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub policy: PolicyArgs,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The workspace (name or id).
    pub workspace: String,
    /// Working directory, relative to /workspace.
    #[arg(long, value_name = "PATH")]
    pub cwd: Option<String>,
    /// Set an environment variable (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = parse_assignment)]
    pub env: Vec<(String, String)>,
    /// Kill the command after SECS seconds (default: the workspace's policy; 0 for none).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,
    /// Print one JSON object instead of streaming the output (as `burrow run --json`).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub secrets: SecretArgs,
    #[command(flatten)]
    pub redact: RedactArgs,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum FileCommand {
    /// List a directory.
    Ls {
        /// The workspace (name or id).
        workspace: String,
        /// The directory (default: the top).
        #[arg(default_value = ".")]
        path: String,
        /// Include everything beneath.
        #[arg(long, short)]
        recursive: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a file (64 KiB at a time by default; page on with --offset).
    Read {
        /// The workspace (name or id).
        workspace: String,
        /// The file.
        path: String,
        /// Start at this byte.
        #[arg(long, default_value_t = 0)]
        offset: u64,
        /// Print at most this many bytes.
        #[arg(long, value_name = "N", default_value_t = 65536)]
        max_bytes: u64,
        #[command(flatten)]
        redact: RedactArgs,
    },
    /// Write a file atomically, from --text, --from or standard input.
    Write {
        /// The workspace (name or id).
        workspace: String,
        /// The file.
        path: String,
        /// The content.
        #[arg(long, conflicts_with = "from")]
        text: Option<String>,
        /// Copy the content of this host file.
        #[arg(long, value_name = "HOST_FILE")]
        from: Option<PathBuf>,
        /// Permission bits in octal, e.g. 755.
        #[arg(long, value_parser = parse_mode)]
        mode: Option<u32>,
    },
    /// Remove a file (or, with -r, a directory and everything in it).
    Rm {
        /// The workspace (name or id).
        workspace: String,
        /// The path.
        path: String,
        /// Remove directories and their contents.
        #[arg(long, short)]
        recursive: bool,
    },
    /// Create a directory.
    Mkdir {
        /// The workspace (name or id).
        workspace: String,
        /// The directory.
        path: String,
        /// Create missing parents; an existing directory is fine.
        #[arg(long, short)]
        parents: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Save the workspace's current state under a name (a running cell is restarted).
    Create {
        /// The workspace (name or id).
        workspace: String,
        /// The snapshot's name.
        name: String,
    },
    /// List a workspace's snapshots.
    List {
        /// The workspace (name or id).
        workspace: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Delete a snapshot the workspace does not build on.
    Delete {
        /// The workspace (name or id).
        workspace: String,
        /// The snapshot's name.
        name: String,
    },
}

fn parse_mode(text: &str) -> Result<u32, String> {
    match u32::from_str_radix(text, 8) {
        Ok(mode) if mode <= 0o777 => Ok(mode),
        _ => Err(format!("`{text}` is not a mode like 644 or 755")),
    }
}

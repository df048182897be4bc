//! The command line, defined once: parsing, help and validation all come from these types.

use std::ffi::OsString;
use std::path::PathBuf;

use burrow_policy::{Backend, ByteSize, NetworkMode};
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Run the commands AI agents write in a fast, contained Linux sandbox.
#[derive(Debug, Parser)]
#[command(name = "burrow", version, about, max_term_width = 100)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one command in a fresh sandbox.
    ///
    /// The host's files are visible read-only, the current directory is writable, credentials
    /// in your home directory are hidden, the network is off, and the command is limited in
    /// time, processes and output. Exit status: the command's own; 128+N for signal N; 124 on
    /// timeout; 127 when the command does not exist; 125 when burrow itself fails.
    Run(Box<RunArgs>),
    /// Validate a policy file and print the effective policy.
    Policy {
        #[command(subcommand)]
        command: PolicyCommand,
    },
    /// Report which isolation features this host offers and what is missing.
    Doctor {
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Manage workspaces: persistent sandboxes with files that outlive each command.
    #[command(subcommand)]
    Ws(WsCommand),
    /// Run a command in a workspace (starting its cell if it is stopped).
    ///
    /// The command runs in /workspace (or --cwd, relative to it) under the workspace's policy.
    /// Output, limits and exit status are as for `burrow run`.
    Exec(ExecArgs),
    /// Read and change files in a workspace (paths are relative to /workspace).
    #[command(subcommand)]
    File(FileCommand),
    /// Apply a unified diff (as git produces it) to a workspace, all or nothing.
    Patch {
        /// The workspace (name or id).
        workspace: String,
        /// Read the patch from this file instead of standard input.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show what changed in a workspace since its baseline.
    Diff {
        /// The workspace (name or id).
        workspace: String,
        /// One line per file with counts of changed lines.
        #[arg(long)]
        stat: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy a workspace's files (or those under PATH) to a host directory or .tar file.
    Export {
        /// The workspace (name or id).
        workspace: String,
        /// A path inside the workspace.
        path: Option<String>,
        /// Where to write: a new directory, or a file ending in .tar.
        #[arg(long, short, value_name = "HOST_PATH")]
        output: PathBuf,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Copy a host directory or tarball into a workspace, all or nothing.
    Import {
        /// The workspace (name or id).
        workspace: String,
        /// A directory, .tar, .tar.gz or .tgz on the host.
        source: PathBuf,
        /// Where in the workspace (default: its top).
        #[arg(long, value_name = "PATH", default_value = ".")]
        dest: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Discard a workspace's changes: back to its baseline, or to a snapshot.
    ///
    /// A running cell is restarted, which stops its commands.
    Reset {
        /// The workspace (name or id).
        workspace: String,
        /// The snapshot to go back to.
        #[arg(long, value_name = "SNAPSHOT")]
        to: Option<String>,
    },
    /// Save and restore named states of a workspace.
    #[command(subcommand)]
    Snapshot(SnapshotCommand),
    /// Show what was done in a workspace: commands, writes, patches, imports, resets.
    Audit {
        /// The workspace (name or id).
        workspace: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// The agent inside a workspace's cell (started by burrow, not by hand).
    #[command(hide = true)]
    Agent(AgentArgs),
}

#[derive(Debug, Subcommand)]
pub enum WsCommand {
    /// Create a workspace (stopped; the first exec starts it) and print its id.
    Create(Box<CreateArgs>),
    /// List workspaces.
    List {
        /// Print JSON.
        #[arg(long)]
        json: bool,
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

#[derive(Debug, Args)]
pub struct AgentArgs {
    /// The inherited listening socket.
    #[arg(long)]
    pub listen_fd: i32,
    /// The workspace's root.
    #[arg(long)]
    pub root: PathBuf,
    /// Exit after this many seconds of inactivity.
    #[arg(long)]
    pub idle_timeout: Option<u64>,
    /// Largest file one write may carry, in bytes.
    #[arg(long)]
    pub max_write: u64,
    /// Exit at this time (Unix seconds).
    #[arg(long)]
    pub expires_at: Option<i64>,
}

#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// Check a policy file; print the policy with every default filled in.
    Check {
        /// The TOML policy file.
        file: PathBuf,
        /// Print JSON instead of TOML.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct RunArgs {
    #[command(flatten)]
    pub policy: PolicyArgs,

    /// Run in this directory instead of the current one.
    #[arg(long, value_name = "PATH")]
    pub cwd: Option<PathBuf>,

    /// Print one JSON object (exit_code, signal, timed_out, duration_ms, stdout, stderr,
    /// truncated, hints) instead of streaming the output.
    #[arg(long)]
    pub json: bool,

    /// Give the command end-of-file on standard input instead of burrow's own.
    #[arg(long)]
    pub no_stdin: bool,

    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<OsString>,
}

/// Flags that make up a policy; they override the `--policy` file, and lists add to it.
#[derive(Debug, Args, Default)]
pub struct PolicyArgs {
    /// Read the policy from this TOML file (flags override it).
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,

    /// Make PATH writable too (repeatable).
    #[arg(long = "write", value_name = "PATH")]
    pub write: Vec<PathBuf>,

    /// Do not make the current directory writable.
    #[arg(long)]
    pub no_write_cwd: bool,

    /// Make PATH absent from the sandbox (repeatable).
    #[arg(long = "hide", value_name = "PATH")]
    pub hide: Vec<PathBuf>,

    /// Keep PATH (relative to each writable root) read-only, besides .git/hooks and
    /// .git/config (repeatable; end it with / for a directory).
    #[arg(long = "protect", value_name = "PATH")]
    pub protect: Vec<PathBuf>,

    /// none: no network at all; loopback: a private loopback only; host: the host's network.
    #[arg(long, value_enum, value_name = "MODE")]
    pub network: Option<NetworkArg>,

    /// Kill the command after SECS seconds (default 30; 0 for no limit).
    #[arg(long, value_name = "SECS")]
    pub timeout: Option<u64>,

    /// Memory limit for the whole sandbox, e.g. 512M.
    #[arg(long, value_name = "SIZE")]
    pub memory: Option<ByteSize>,

    /// Most processes and threads the command may have (default 512).
    #[arg(long, value_name = "N")]
    pub pids: Option<u64>,

    /// CPU seconds each process may use.
    #[arg(long, value_name = "SECS")]
    pub cpu_time: Option<u64>,

    /// CPU bandwidth, in cores (e.g. 0.5).
    #[arg(long, value_name = "N")]
    pub cpus: Option<f64>,

    /// Largest file the command may write, e.g. 100M.
    #[arg(long, value_name = "SIZE")]
    pub max_file_size: Option<ByteSize>,

    /// Most open files per process.
    #[arg(long, value_name = "N")]
    pub nofile: Option<u64>,

    /// Size of the private /tmp (default 512M).
    #[arg(long, value_name = "SIZE")]
    pub tmp_size: Option<ByteSize>,

    /// Bytes of each output stream kept with --json: head and tail (default 1M).
    #[arg(long, value_name = "SIZE")]
    pub max_output_bytes: Option<ByteSize>,

    /// Lines of each output stream kept with --json: head and tail.
    #[arg(long, value_name = "N")]
    pub max_output_lines: Option<u64>,

    /// Set an environment variable (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = parse_assignment)]
    pub env: Vec<(String, String)>,

    /// Pass a variable from burrow's environment (repeatable; `*` matches any run of characters,
    /// but secret-looking names pass only when named exactly).
    #[arg(long = "inherit-env", value_name = "NAME")]
    pub inherit_env: Vec<String>,

    /// sandbox (default), or host: no isolation, only limits, timeout and output handling.
    #[arg(long, value_enum, value_name = "BACKEND")]
    pub backend: Option<BackendArg>,

    /// Run even when an isolation layer cannot be set up, and say which.
    #[arg(long)]
    pub allow_degraded: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum NetworkArg {
    None,
    Loopback,
    Host,
}

impl From<NetworkArg> for NetworkMode {
    fn from(arg: NetworkArg) -> NetworkMode {
        match arg {
            NetworkArg::None => NetworkMode::None,
            NetworkArg::Loopback => NetworkMode::Loopback,
            NetworkArg::Host => NetworkMode::Host,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum BackendArg {
    Sandbox,
    Host,
}

impl From<BackendArg> for Backend {
    fn from(arg: BackendArg) -> Backend {
        match arg {
            BackendArg::Sandbox => Backend::Sandbox,
            BackendArg::Host => Backend::Host,
        }
    }
}

fn parse_mode(text: &str) -> Result<u32, String> {
    match u32::from_str_radix(text, 8) {
        Ok(mode) if mode <= 0o777 => Ok(mode),
        _ => Err(format!("`{text}` is not a mode like 644 or 755")),
    }
}

fn parse_assignment(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not NAME=VALUE")),
    }
}

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
        #[command(flatten)]
        redact: RedactArgs,
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
        #[command(flatten)]
        redact: RedactArgs,
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
    /// Interactive shells on a terminal, living in a workspace's cell between calls.
    #[command(subcommand)]
    Shell(ShellCommand),
    /// Persistent command sessions: cwd, environment and functions carry between commands.
    #[command(subcommand)]
    Session(SessionCommand),
    /// Long-running programs in a workspace (dev servers, databases) with readiness probes.
    #[command(subcommand)]
    Service(ServiceCommand),
    /// A workspace's secrets: given to commands on request, redacted from all output.
    #[command(subcommand)]
    Secret(SecretCommand),
    /// Serve burrow's tools over MCP on stdin and stdout, for the local user.
    ///
    /// Workspaces made here are the CLI's, and the other way round.
    Mcp {
        /// Which tools to offer: `run` (run_command), `core` (workspaces, files, patches,
        /// diff) or `full` (also snapshots, shells, sessions, services, secrets).
        #[arg(long, value_enum, default_value = "core")]
        profile: ProfileArg,
    },
    /// Serve the HTTP API (/v1), MCP over streamable HTTP (/mcp) and /openapi.json.
    ///
    /// Every request but /healthz and /openapi.json needs a bearer token made with `burrow
    /// token create`. Stops cleanly on SIGTERM or SIGINT.
    Serve(ServeArgs),
    /// Bearer tokens for `burrow serve`, one tenant each.
    #[command(subcommand)]
    Token(TokenCommand),
    /// The agent inside a workspace's cell (started by burrow, not by hand).
    #[command(hide = true)]
    Agent(AgentArgs),
    /// Forwards a host port into a workspace's cell (started by `service start --publish`).
    #[command(hide = true)]
    Publish(PublishArgs),
    /// Serves a workspace cell's network allowlist (started with a cell in `allow` mode).
    #[command(hide = true)]
    Netproxy(NetproxyArgs),
}

/// `burrow mcp --profile`.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ProfileArg {
    Run,
    Core,
    Full,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address and port to listen on.
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:7878")]
    pub listen: std::net::SocketAddr,
    /// Listen on an address other than loopback (put a TLS proxy in front: tokens travel in
    /// every request).
    #[arg(long)]
    pub allow_non_loopback: bool,
    /// Most operations running at once; more wait their turn.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub max_in_flight: usize,
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token for TENANT and print it (it is stored hashed: this is the only time it is
    /// shown).
    Create {
        #[arg(long)]
        tenant: String,
        /// Print {"id", "tenant", "token", "created_at"}.
        #[arg(long)]
        json: bool,
    },
    /// List the tokens (ids and tenants, never the tokens themselves).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a token: requests carrying it are refused from now on.
    Revoke { id: String },
}

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
pub enum ShellCommand {
    /// Start a shell; prints its id.
    Open {
        /// The workspace (name or id).
        workspace: String,
        /// Working directory, relative to /workspace.
        #[arg(long, default_value = ".")]
        cwd: String,
        /// Terminal width.
        #[arg(long, default_value_t = 120)]
        cols: u16,
        /// Terminal height.
        #[arg(long, default_value_t = 30)]
        rows: u16,
        /// Set an environment variable (repeatable).
        #[arg(long = "env", value_name = "K=V", value_parser = parse_assignment)]
        env: Vec<(String, String)>,
        #[command(flatten)]
        secrets: SecretArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a shell's output from a cursor; the next cursor goes to stderr (or in --json).
    Read {
        /// The workspace (name or id).
        workspace: String,
        /// The shell.
        shell: String,
        /// Where to start (0: the beginning of what is kept).
        #[arg(long, default_value_t = 0)]
        cursor: u64,
        /// At most this many characters.
        #[arg(long, value_name = "N", default_value_t = 65536)]
        max_chars: usize,
        /// First wait until the shell has been quiet this long (at most 60 s).
        #[arg(long, value_name = "N")]
        wait_idle_ms: Option<u64>,
        /// Strip terminal escape sequences.
        #[arg(long)]
        plain: bool,
        #[command(flatten)]
        redact: RedactArgs,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Type into a shell (a newline is added unless --no-newline).
    Write {
        /// The workspace (name or id).
        workspace: String,
        /// The shell.
        shell: String,
        /// What to type.
        text: String,
        /// Do not add a newline.
        #[arg(long)]
        no_newline: bool,
    },
    /// Send a signal to the shell's foreground job.
    Signal {
        /// The workspace (name or id).
        workspace: String,
        /// The shell.
        shell: String,
        /// INT, TERM, HUP, KILL or QUIT.
        signal: SignalArg,
    },
    /// Change a shell's terminal size.
    Resize {
        /// The workspace (name or id).
        workspace: String,
        /// The shell.
        shell: String,
        /// Columns.
        cols: u16,
        /// Rows.
        rows: u16,
    },
    /// End a shell.
    Close {
        /// The workspace (name or id).
        workspace: String,
        /// The shell.
        shell: String,
    },
    /// List a workspace's shells.
    List {
        /// The workspace (name or id).
        workspace: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Attach this terminal to a shell (a new one if none is named); Ctrl-] detaches.
    Attach {
        /// The workspace (name or id).
        workspace: String,
        /// The shell.
        shell: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SignalArg {
    Int,
    Term,
    Hup,
    Kill,
    Quit,
}

impl SignalArg {
    pub fn number(self) -> i32 {
        match self {
            SignalArg::Int => libc::SIGINT,
            SignalArg::Term => libc::SIGTERM,
            SignalArg::Hup => libc::SIGHUP,
            SignalArg::Kill => libc::SIGKILL,
            SignalArg::Quit => libc::SIGQUIT,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Start a session; prints its id.
    Open(SessionOpenArgs),
    /// Run a command line in a session.
    Exec {
        /// The workspace (name or id).
        workspace: String,
        /// The session.
        session: String,
        /// Kill what the command started after SECS seconds (default: the workspace's
        /// policy; 0 for none).
        #[arg(long, value_name = "SECS")]
        timeout: Option<u64>,
        /// Print one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        redact: RedactArgs,
        /// The command line (run by the session's shell).
        #[arg(required = true, last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// End a session.
    Close {
        /// The workspace (name or id).
        workspace: String,
        /// The session.
        session: String,
    },
    /// List a workspace's sessions.
    List {
        /// The workspace (name or id).
        workspace: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Open a session and serve it on stdin and stdout: one JSON request per line
    /// ({"command": "...", "timeout": SECS}), one JSON result per line.
    Serve(SessionOpenArgs),
}

#[derive(Debug, Args)]
pub struct SessionOpenArgs {
    /// The workspace (name or id).
    pub workspace: String,
    /// Working directory, relative to /workspace.
    #[arg(long, default_value = ".")]
    pub cwd: String,
    /// Set an environment variable (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = parse_assignment)]
    pub env: Vec<(String, String)>,
    #[command(flatten)]
    pub secrets: SecretArgs,
    #[command(flatten)]
    pub redact: RedactArgs,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Start a service; returns once it is ready (exit 0) or has failed (exit 1).
    Start(Box<ServiceStartArgs>),
    /// List a workspace's services.
    List {
        /// The workspace (name or id).
        workspace: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one service.
    Status {
        /// The workspace (name or id).
        workspace: String,
        /// The service.
        name: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Print a service's log (stdout and stderr, in order).
    Logs {
        /// The workspace (name or id).
        workspace: String,
        /// The service.
        name: String,
        /// The last N lines.
        #[arg(long, value_name = "N", default_value_t = 200, conflicts_with = "all")]
        tail: usize,
        /// Everything kept.
        #[arg(long)]
        all: bool,
        /// Keep printing as the service logs, until it stops or Ctrl-C.
        #[arg(long)]
        follow: bool,
        #[command(flatten)]
        redact: RedactArgs,
    },
    /// Stop a service: SIGTERM, then SIGKILL after the grace period.
    Stop {
        /// The workspace (name or id).
        workspace: String,
        /// The service.
        name: String,
        /// Seconds between SIGTERM and SIGKILL.
        #[arg(long, value_name = "SECS", default_value_t = 10)]
        grace: u64,
    },
}

#[derive(Debug, Args)]
pub struct ServiceStartArgs {
    /// The workspace (name or id).
    pub workspace: String,
    /// The service's name.
    pub name: String,
    /// Working directory, relative to /workspace.
    #[arg(long, default_value = ".")]
    pub cwd: String,
    /// Set an environment variable (repeatable).
    #[arg(long = "env", value_name = "K=V", value_parser = parse_assignment)]
    pub env: Vec<(String, String)>,
    #[command(flatten)]
    pub secrets: SecretArgs,
    /// Ready once this file exists (a path in the workspace).
    #[arg(long, value_name = "PATH", group = "readiness")]
    pub ready_file: Option<String>,
    /// Ready once a TCP connection to HOST:PORT succeeds.
    #[arg(long, value_name = "HOST:PORT", group = "readiness")]
    pub ready_tcp: Option<String>,
    /// Ready once GET URL answers with a status below 400.
    #[arg(long, value_name = "URL", group = "readiness")]
    pub ready_http: Option<String>,
    /// Ready once CMD (run with sh -c) exits 0.
    #[arg(long, value_name = "CMD", group = "readiness")]
    pub ready_cmd: Option<String>,
    /// How long readiness may take.
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub ready_timeout: u64,
    /// Time between readiness probes.
    #[arg(long, value_name = "N", default_value_t = 500)]
    pub ready_interval_ms: u64,
    /// Restart the service when it exits with a failure.
    #[arg(long, value_enum, default_value = "no")]
    pub restart: RestartArg,
    /// Forward 127.0.0.1:HOST_PORT on the host to PORT in the cell (needs --network loopback).
    #[arg(long, value_name = "HOST_PORT:PORT")]
    pub publish: Vec<String>,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
    /// The command and its arguments.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum RestartArg {
    No,
    OnFailure,
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

#[derive(Debug, Args)]
pub struct PublishArgs {
    /// burrow's state directory.
    #[arg(long)]
    pub state: PathBuf,
    /// The workspace's id.
    #[arg(long)]
    pub workspace: String,
    /// The service whose life bounds the forwarding.
    #[arg(long)]
    pub service: String,
    /// The port in the cell.
    #[arg(long)]
    pub port: u16,
    /// The inherited listening socket.
    #[arg(long)]
    pub listen_fd: i32,
}

#[derive(Debug, Args)]
pub struct NetproxyArgs {
    /// The workspace's directory (its denials and audit journal are written there).
    #[arg(long)]
    pub dir: PathBuf,
    /// The cell's init, whose end ends the proxy.
    #[arg(long)]
    pub cell_pid: u32,
    /// Its start time, to tell it from a reused pid.
    #[arg(long)]
    pub cell_start: u64,
    /// The allowlist, as JSON.
    #[arg(long)]
    pub rules: String,
    /// The inherited listening socket (in the cell's network namespace).
    #[arg(long)]
    pub listen_fd: i32,
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

    /// none: no network at all; loopback: a private loopback only; allow:HOST[,HOST...]: a
    /// private loopback, and through burrow's proxy only these hosts (example.com,
    /// *.example.com, example.com:443); host: the host's network.
    #[arg(long, value_name = "MODE", value_parser = parse_network)]
    pub network: Option<NetworkArg>,

    /// With --network allow:...: refuse HOST even when an allowed pattern matches
    /// (repeatable).
    #[arg(long = "network-deny", value_name = "HOST")]
    pub network_deny: Vec<burrow_policy::HostPattern>,

    /// With --network allow:...: let allowed names resolve to loopback, private, link-local
    /// or metadata addresses (refused by default, against DNS rebinding).
    #[arg(long = "network-allow-private")]
    pub network_allow_private: bool,

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

/// `--network MODE`: a mode, with its allowlist for `allow:`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkArg {
    pub mode: NetworkMode,
    pub allow: Vec<burrow_policy::HostPattern>,
}

fn parse_network(text: &str) -> Result<NetworkArg, String> {
    let plain = |mode| {
        Ok(NetworkArg {
            mode,
            allow: Vec::new(),
        })
    };
    match text {
        "none" => plain(NetworkMode::None),
        "loopback" => plain(NetworkMode::Loopback),
        "host" => plain(NetworkMode::Host),
        _ => {
            let Some(hosts) = text.strip_prefix("allow:") else {
                return Err("expected none, loopback, host or allow:HOST[,HOST...]".to_owned());
            };
            let allow = hosts
                .split(',')
                .map(str::trim)
                .filter(|host| !host.is_empty())
                .map(str::parse)
                .collect::<Result<Vec<_>, _>>()?;
            if allow.is_empty() {
                return Err(
                    "allow: needs at least one host, e.g. allow:pypi.org,*.pythonhosted.org"
                        .to_owned(),
                );
            }
            Ok(NetworkArg {
                mode: NetworkMode::Allow,
                allow,
            })
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

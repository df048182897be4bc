//! What lives on in a workspace's cell between calls: `shell`, `session` and `service`.

use clap::{Args, Subcommand, ValueEnum};

use super::run::parse_assignment;
use super::{RedactArgs, SecretArgs};

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

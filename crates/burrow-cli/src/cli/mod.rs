//! The command line, defined once: parsing, help and validation all come from these types.

mod interactive;
mod run;
mod serve;
mod workspace;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use interactive::{
    RestartArg, ServiceCommand, ServiceStartArgs, SessionCommand, SessionOpenArgs, ShellCommand,
};
pub use run::{PolicyArgs, PolicyCommand, RunArgs};
pub use serve::{AgentArgs, NetproxyArgs, ProfileArg, PublishArgs, ServeArgs, TokenCommand};
pub use workspace::{
    CreateArgs, ExecArgs, FileCommand, RedactArgs, SecretArgs, SecretCommand, SnapshotCommand,
    WsCommand,
};

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

//! Serving burrow: `mcp`, `serve` and `token`, and the hidden commands burrow starts itself.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

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

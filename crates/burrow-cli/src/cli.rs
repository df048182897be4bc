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

fn parse_assignment(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not NAME=VALUE")),
    }
}

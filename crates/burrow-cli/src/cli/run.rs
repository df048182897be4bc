//! `burrow run` and `burrow policy`: the flags that make up a policy, and the parsers they use.

use std::ffi::OsString;
use std::path::PathBuf;

use burrow_policy::{Backend, ByteSize, NetworkMode};
use clap::{Args, Subcommand, ValueEnum};

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

pub(super) fn parse_assignment(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, value)) if !name.is_empty() => Ok((name.to_owned(), value.to_owned())),
        _ => Err(format!("`{text}` is not NAME=VALUE")),
    }
}

//! Commands: one in a fresh sandbox (`run`), or one in a workspace's running cell (`exec`).

use std::ffi::OsString;
use std::time::Duration;

use burrow_output::{CaptureSink, Omitted};
use burrow_workspace::handle::ExecRequest;
use burrow_workspace::pages;
use serde::{Deserialize, Serialize};

use super::error::{ApiError, ApiResult};
use super::inputs::{ExecInput, RunInput};
use super::launcher::child_error;
use super::workspaces::{MAX_TIMEOUT, checked_timeout, network_policy, parse_rules, parse_size};
use super::{Api, Caller};

/// How a command ended and what it printed, as `burrow run --json` reports it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CommandOutput {
    /// Its exit code; 128 + N when signal N killed it, 124 after a timeout.
    pub exit_code: i32,
    /// The signal that killed it.
    pub signal: Option<i32>,
    /// Whether its timeout killed it.
    pub timed_out: bool,
    /// Whether the memory limit killed it.
    #[serde(default)]
    pub oom_killed: bool,
    /// Wall-clock time.
    pub duration_ms: u64,
    /// Its standard output, head and tail kept.
    pub stdout: String,
    /// Its standard error, head and tail kept.
    pub stderr: String,
    /// What the output caps left out of each stream.
    pub truncated: Truncated,
    /// Why it did not run or did not finish, in one line.
    #[serde(default)]
    pub error: Option<String>,
    /// What a failure that looks like a sandbox denial probably means.
    #[serde(default)]
    pub hints: Vec<String>,
    /// Connections the network allowlist refused while it ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub network_denied: Vec<burrow_proxy::Denial>,
}

/// What the caps left out, per stream (`null` when nothing).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Truncated {
    /// Of stdout.
    pub stdout: Option<Omitted>,
    /// Of stderr.
    pub stderr: Option<Omitted>,
}

/// How `burrow run --json` reports a failure of burrow itself.
#[derive(Deserialize)]
struct Failure {
    error: String,
}

impl Api {
    /// Runs one command in a fresh sandbox, thrown away afterwards: nothing it writes is
    /// kept, and it sees no workspace.
    pub fn run(&self, input: &RunInput) -> ApiResult<CommandOutput> {
        let argv = input.command.argv()?;
        let timeout = checked_timeout(input.timeout.unwrap_or(30))?;
        let network = match network_policy(input.network, &input.allow)? {
            (burrow_policy::NetworkMode::Loopback, _) => "loopback".to_owned(),
            (burrow_policy::NetworkMode::Allow, hosts) => {
                let hosts: Vec<String> = hosts.iter().map(ToString::to_string).collect();
                format!("allow:{}", hosts.join(","))
            }
            _ => "none".to_owned(),
        };
        let mut args: Vec<OsString> = [
            "run",
            "--json",
            "--no-stdin",
            "--cwd",
            "/",
            "--no-write-cwd",
        ]
        .iter()
        .map(OsString::from)
        .collect();
        args.extend(["--network".into(), network.into()]);
        args.extend(["--timeout".into(), timeout.to_string().into()]);
        if let Some(memory) = &input.memory {
            parse_size(memory)?;
            args.extend(["--memory".into(), OsString::from(memory)]);
        }
        for (name, value) in &input.env {
            if name.is_empty() || name.contains('=') || name.contains('\0') || value.contains('\0')
            {
                return Err(ApiError::invalid(format!(
                    "env {name}: a variable's name may not be empty or hold `=`"
                )));
            }
            args.extend(["--env".into(), OsString::from(format!("{name}={value}"))]);
        }
        args.push("--".into());
        args.extend(argv.into_iter().map(OsString::from));
        let output = self.launcher.output(&args)?;
        let last_line = output
            .stdout
            .split(|&b| b == b'\n')
            .rev()
            .find(|line| !line.is_empty())
            .unwrap_or_default();
        if let Ok(result) = serde_json::from_slice::<CommandOutput>(last_line) {
            return Ok(result);
        }
        match serde_json::from_slice::<Failure>(last_line) {
            Ok(failure) => Err(ApiError::internal(failure.error)),
            Err(_) => Err(child_error(&output.stderr)),
        }
    }

    /// Runs a command in a workspace's cell (started if stopped), in /workspace or `cwd`.
    pub fn exec(&self, caller: &Caller, input: ExecInput) -> ApiResult<CommandOutput> {
        let argv = input.command.argv()?;
        let timeout = command_timeout(caller, input.timeout)?;
        let rules = parse_rules(&input.redact)?;
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let policy = handle.policy()?;
        let request = ExecRequest {
            argv,
            cwd: input.cwd,
            env: input.env.into_iter().collect(),
            timeout,
            caller_env: caller.environment(),
            secret_env: input.secret_env,
        };
        let redactor = handle.redactor(&rules)?;
        let mut sink = CaptureSink::new(pages::capture_limits(&policy));
        let began_ms = burrow_workspace::journal::now_ms();
        let report = handle.exec(&mut client, &request, &mut sink, None, &redactor)?;
        let outcome = report.outcome();
        let (stdout, stderr) = sink.finish();
        let error = if outcome.timed_out {
            let seconds = report.timeout.map_or(0, |t| t.as_secs());
            Some(format!(
                "timed out after {seconds}s; every process of the command was killed"
            ))
        } else {
            outcome.exec_error.as_ref().map(|error| error.message())
        };
        Ok(CommandOutput {
            exit_code: outcome.exit_code(),
            signal: outcome.signal(),
            timed_out: outcome.timed_out,
            oom_killed: outcome.oom_killed,
            duration_ms: u64::try_from(report.duration.as_millis()).unwrap_or(u64::MAX),
            stdout: stdout.to_string_lossy(),
            stderr: stderr.to_string_lossy(),
            truncated: Truncated {
                stdout: stdout.omitted,
                stderr: stderr.omitted,
            },
            error,
            hints: Vec::new(),
            network_denied: handle.network_denied_since(&policy, began_ms),
        })
    }
}

/// A command's timeout: the workspace's when none is given; 0 (none) only for the local user,
/// since a tenant's commands must end.
pub(super) fn command_timeout(
    caller: &Caller,
    seconds: Option<u64>,
) -> ApiResult<Option<Duration>> {
    match seconds {
        None => Ok(None),
        Some(0) if caller.tenant_name().is_none() => Ok(Some(Duration::ZERO)),
        Some(0) => Err(ApiError::invalid(format!(
            "timeout 0: a command must end; give 1 to {MAX_TIMEOUT} seconds"
        ))),
        Some(seconds) => Ok(Some(Duration::from_secs(checked_timeout(seconds)?))),
    }
}

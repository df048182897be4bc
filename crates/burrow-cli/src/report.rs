//! How a finished command is reported, the same for `burrow run` and `burrow exec`: a JSON
//! object with `--json`, otherwise burrow's remarks on stderr after the command's own output.

use std::process::ExitCode;

use burrow_output::{Captured, Omitted};
use burrow_policy::{Backend, Policy, ResolvedFilesystem};
use burrow_sandbox::Outcome;
use serde::Serialize;

use crate::exit;
use crate::hints::{HintContext, hints};

/// The `--json` result of a command.
#[derive(Debug, Serialize)]
pub struct RunReport {
    pub exit_code: i32,
    pub signal: Option<i32>,
    pub timed_out: bool,
    pub oom_killed: bool,
    pub duration_ms: u64,
    pub stdout: String,
    pub stderr: String,
    pub truncated: Truncated,
    pub error: Option<String>,
    pub hints: Vec<String>,
    pub degraded: Vec<burrow_sandbox::Degradation>,
    pub limits: burrow_sandbox::LimitEnforcement,
    /// Connections the network allowlist refused while the command ran.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub network_denied: Vec<burrow_proxy::Denial>,
}

/// What the output caps left out, per stream (`null` when nothing).
#[derive(Debug, Serialize)]
pub struct Truncated {
    pub stdout: Option<Omitted>,
    pub stderr: Option<Omitted>,
}

/// A failure of burrow itself, as `--json` reports it.
#[derive(Debug, Serialize)]
struct FailureReport {
    exit_code: u8,
    error: String,
}

/// What the command ran under, for messages and hints.
pub struct Setting<'a> {
    pub policy: &'a Policy,
    pub filesystem: &'a ResolvedFilesystem,
}

impl RunReport {
    pub fn new(
        setting: &Setting<'_>,
        outcome: &Outcome,
        stdout: &Captured,
        stderr: &Captured,
    ) -> RunReport {
        let stderr_text = stderr.to_string_lossy();
        RunReport {
            exit_code: outcome.exit_code(),
            signal: outcome.signal(),
            timed_out: outcome.timed_out,
            oom_killed: outcome.oom_killed,
            duration_ms: outcome.duration.as_millis() as u64,
            stdout: stdout.to_string_lossy(),
            hints: hints(&hint_context(setting, outcome, &stderr_text)),
            stderr: stderr_text,
            truncated: Truncated {
                stdout: stdout.omitted,
                stderr: stderr.omitted,
            },
            error: outcome_error(setting.policy, outcome),
            degraded: outcome.degraded.clone(),
            limits: outcome.limits,
            network_denied: Vec::new(),
        }
    }
}

/// In streaming mode, burrow's own remarks follow the command's output on stderr.
pub fn explain(setting: &Setting<'_>, outcome: &Outcome, stderr: &str) {
    for degradation in &outcome.degraded {
        eprintln!(
            "burrow: warning: ran without {}: {}",
            degradation.layer,
            exit::one_line(&degradation.reason)
        );
    }
    if let Some(error) = outcome_error(setting.policy, outcome) {
        eprintln!("burrow: {error}");
    }
    for hint in hints(&hint_context(setting, outcome, stderr)) {
        eprintln!("burrow: hint: {hint}");
    }
}

/// One line per refused host (not per attempt: a client retrying would repeat itself).
pub fn explain_denials(denials: &[burrow_proxy::Denial]) {
    let mut told: Vec<(&str, u16)> = Vec::new();
    for denial in denials {
        if told.contains(&(denial.host.as_str(), denial.port)) {
            continue;
        }
        told.push((&denial.host, denial.port));
        eprintln!(
            "burrow: blocked a connection to {}:{}: {}",
            denial.host,
            denial.port,
            exit::one_line(&denial.reason)
        );
    }
}

fn outcome_error(policy: &Policy, outcome: &Outcome) -> Option<String> {
    if outcome.timed_out {
        let seconds = policy.limits.timeout.map_or(0, |t| t.as_secs());
        return Some(format!(
            "timed out after {seconds}s; every process of the command was killed"
        ));
    }
    outcome.exec_error.as_ref().map(|error| error.message())
}

fn hint_context<'a>(
    setting: &'a Setting<'a>,
    outcome: &'a Outcome,
    stderr: &'a str,
) -> HintContext<'a> {
    HintContext {
        outcome,
        stderr,
        filesystem: setting.filesystem,
        network: setting.policy.network,
        memory_limit: setting.policy.limits.memory,
        sandboxed: setting.policy.backend == Backend::Sandbox,
    }
}

/// Reports a failure of burrow itself (on stdout too, as JSON, with `--json`).
pub fn burrow_failed(json: bool, error: &anyhow::Error) -> ExitCode {
    let message = exit::one_line(&format!("{error:#}"));
    if json {
        print_json(&FailureReport {
            exit_code: exit::BURROW_FAILED,
            error: message.clone(),
        });
    }
    exit::fail(&message)
}

/// Prints one JSON line on stdout.
pub fn print_json(value: &impl Serialize) {
    match serde_json::to_string(value) {
        Ok(text) => println!("{text}"),
        Err(error) => eprintln!("burrow: cannot encode the result: {error}"),
    }
}

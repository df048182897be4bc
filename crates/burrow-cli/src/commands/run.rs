//! `burrow run`: one command in a fresh sandbox.

use std::process::ExitCode;

use anyhow::Context;
use burrow_output::{CaptureLimits, CaptureSink, Captured, Omitted};
use burrow_policy::{Backend, Policy};
use burrow_sandbox::{Cell, CellSpec, Outcome, Stdin, WaitOptions};
use serde::Serialize;

use crate::cli::RunArgs;
use crate::context::path_context;
use crate::exit;
use crate::hints::{HintContext, hints};
use crate::sinks::TerminalSink;

/// The `--json` result of a run.
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

pub fn run(args: &RunArgs) -> ExitCode {
    match prepare(args) {
        Ok((policy, spec)) => execute(args, &policy, &spec),
        Err(error) => burrow_failed(args.json, &error),
    }
}

fn prepare(args: &RunArgs) -> anyhow::Result<(Policy, CellSpec)> {
    let policy = args.policy.to_policy()?;
    let context = path_context(args.cwd.as_deref())?;
    let mut spec =
        CellSpec::from_policy(&policy, &context, args.command.clone(), std::env::vars_os())
            .context("invalid policy")?;
    if args.no_stdin {
        spec.stdin = Stdin::Null;
    }
    Ok((policy, spec))
}

fn execute(args: &RunArgs, policy: &Policy, spec: &CellSpec) -> ExitCode {
    let cell = match Cell::spawn(spec) {
        Ok(cell) => cell,
        Err(error) => return burrow_failed(args.json, &error.into()),
    };
    let options = WaitOptions {
        timeout: policy.limits.timeout,
        forward_signals: true,
    };
    if args.json {
        let limits = CaptureLimits {
            max_bytes: usize::try_from(policy.output.max_bytes.bytes()).unwrap_or(usize::MAX),
            max_lines: policy
                .output
                .max_lines
                .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        };
        let mut sink = CaptureSink::new(limits);
        let outcome = match cell.wait(&mut sink, &options) {
            Ok(outcome) => outcome,
            Err(error) => return burrow_failed(true, &error.into()),
        };
        let (stdout, stderr) = sink.finish();
        let report = report(policy, spec, &outcome, &stdout, &stderr);
        print_json(&report);
        exit::code(outcome.exit_code())
    } else {
        let mut sink = TerminalSink::new();
        let outcome = match cell.wait(&mut sink, &options) {
            Ok(outcome) => outcome,
            Err(error) => return burrow_failed(false, &error.into()),
        };
        let stderr = sink.finish().to_string_lossy();
        explain(policy, spec, &outcome, &stderr);
        exit::code(outcome.exit_code())
    }
}

fn report(
    policy: &Policy,
    spec: &CellSpec,
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
        hints: hints(&hint_context(policy, spec, outcome, &stderr_text)),
        stderr: stderr_text,
        truncated: Truncated {
            stdout: stdout.omitted,
            stderr: stderr.omitted,
        },
        error: outcome_error(policy, outcome),
        degraded: outcome.degraded.clone(),
        limits: outcome.limits,
    }
}

/// In streaming mode, burrow's own remarks follow the command's output on stderr.
fn explain(policy: &Policy, spec: &CellSpec, outcome: &Outcome, stderr: &str) {
    for degradation in &outcome.degraded {
        eprintln!(
            "burrow: warning: ran without {}: {}",
            degradation.layer,
            exit::one_line(&degradation.reason)
        );
    }
    if let Some(error) = outcome_error(policy, outcome) {
        eprintln!("burrow: {error}");
    }
    for hint in hints(&hint_context(policy, spec, outcome, stderr)) {
        eprintln!("burrow: hint: {hint}");
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
    policy: &'a Policy,
    spec: &'a CellSpec,
    outcome: &'a Outcome,
    stderr: &'a str,
) -> HintContext<'a> {
    HintContext {
        outcome,
        stderr,
        filesystem: &spec.filesystem,
        network: policy.network,
        memory_limit: policy.limits.memory,
        sandboxed: policy.backend == Backend::Sandbox,
    }
}

fn burrow_failed(json: bool, error: &anyhow::Error) -> ExitCode {
    let message = exit::one_line(&format!("{error:#}"));
    if json {
        print_json(&FailureReport {
            exit_code: exit::BURROW_FAILED,
            error: message.clone(),
        });
    }
    exit::fail(&message)
}

fn print_json(value: &impl Serialize) {
    match serde_json::to_string(value) {
        Ok(text) => println!("{text}"),
        Err(error) => eprintln!("burrow: cannot encode the result: {error}"),
    }
}

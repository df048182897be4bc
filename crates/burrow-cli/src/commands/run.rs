//! `burrow run`: one command in a fresh sandbox.

use std::process::ExitCode;

use anyhow::Context;
use burrow_output::CaptureSink;
use burrow_policy::Policy;
use burrow_sandbox::{Cell, CellSpec, Stdin, WaitOptions};

use crate::cli::RunArgs;
use crate::context::path_context;
use crate::exit;
use crate::report::{RunReport, Setting, burrow_failed, explain, explain_denials, print_json};
use crate::sinks::TerminalSink;

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
    let mut cell = match Cell::spawn(spec) {
        Ok(cell) => cell,
        Err(error) => return burrow_failed(args.json, &error.into()),
    };
    // From here on this process may have threads: the cell is cloned.
    let denials = match crate::network::serve_allowlist(&mut cell, policy) {
        Ok(denials) => denials,
        Err(error) => return burrow_failed(args.json, &error),
    };
    let options = WaitOptions {
        timeout: policy.limits.timeout,
        forward_signals: true,
    };
    let setting = Setting {
        policy,
        filesystem: &spec.filesystem,
    };
    if args.json {
        let mut sink = CaptureSink::new(burrow_workspace::pages::capture_limits(policy));
        let outcome = match cell.wait(&mut sink, &options) {
            Ok(outcome) => outcome,
            Err(error) => return burrow_failed(true, &error.into()),
        };
        let (stdout, stderr) = sink.finish();
        let mut report = RunReport::new(&setting, &outcome, &stdout, &stderr);
        report.network_denied = denials.take();
        print_json(&report);
        exit::code(outcome.exit_code())
    } else {
        let mut sink = TerminalSink::new();
        let outcome = match cell.wait(&mut sink, &options) {
            Ok(outcome) => outcome,
            Err(error) => return burrow_failed(false, &error.into()),
        };
        let stderr = sink.finish().to_string_lossy();
        explain(&setting, &outcome, &stderr);
        explain_denials(&denials.take());
        exit::code(outcome.exit_code())
    }
}

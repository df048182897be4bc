//! `burrow exec`: a command in a workspace's running cell.
//!
//! The fast path reads two small files and connects to the agent's socket; only when the cell
//! is not running does burrow open the state database and start it.

use std::process::ExitCode;
use std::time::Duration;

use burrow_output::CaptureSink;
use burrow_policy::{Policy, ResolvedFilesystem};
use burrow_sandbox::{SignalForwarder, WORKSPACE_DIR};
use burrow_workspace::client::{AgentClient, SignalSource};
use burrow_workspace::handle::{ExecRequest, Handle};
use burrow_workspace::layout::StateDir;
use burrow_workspace::manager::Workspaces;

use crate::cli::ExecArgs;
use crate::commands::workspaces::state_root;
use crate::exit;
use crate::report::{RunReport, Setting, burrow_failed, explain, explain_denials, print_json};
use crate::sinks::TerminalSink;

pub fn exec(args: &ExecArgs) -> ExitCode {
    let (handle, mut client) = match reach(&args.workspace) {
        Ok(found) => found,
        Err(error) => return burrow_failed(args.json, &error),
    };
    let mut policy = match handle.policy() {
        Ok(policy) => policy,
        Err(error) => return burrow_failed(args.json, &error.into()),
    };
    let request = ExecRequest {
        argv: args.command.clone(),
        cwd: args.cwd.clone(),
        env: args.env.clone(),
        timeout: args.timeout.map(Duration::from_secs),
        caller_env: std::env::vars_os().collect(),
        secret_env: args.secrets.secret_env.clone(),
    };
    let redactor = match handle.redactor(&args.redact.redact) {
        Ok(redactor) => redactor,
        Err(error) => return burrow_failed(args.json, &error.into()),
    };
    // Ctrl-C and friends go to the command, as with `burrow run`.
    let forwarder = SignalForwarder::install().ok();
    let signals = forwarder.as_ref().map(|f| f as &dyn SignalSource);
    let filesystem = workspace_filesystem(&policy);
    let began_ms = burrow_workspace::journal::now_ms();
    if args.json {
        let mut sink = CaptureSink::new(burrow_workspace::pages::capture_limits(&policy));
        let report = match handle.exec(&mut client, &request, &mut sink, signals, &redactor) {
            Ok(report) => report,
            Err(error) => return burrow_failed(true, &error.into()),
        };
        policy.limits.timeout = report.timeout;
        let outcome = report.outcome();
        let (stdout, stderr) = sink.finish();
        let setting = Setting {
            policy: &policy,
            filesystem: &filesystem,
        };
        let mut json = RunReport::new(&setting, &outcome, &stdout, &stderr);
        json.network_denied = handle.network_denied_since(&policy, began_ms);
        print_json(&json);
        exit::code(outcome.exit_code())
    } else {
        let mut sink = TerminalSink::new();
        let report = match handle.exec(&mut client, &request, &mut sink, signals, &redactor) {
            Ok(report) => report,
            Err(error) => return burrow_failed(false, &error.into()),
        };
        policy.limits.timeout = report.timeout;
        let outcome = report.outcome();
        let stderr = sink.finish().to_string_lossy();
        let setting = Setting {
            policy: &policy,
            filesystem: &filesystem,
        };
        explain(&setting, &outcome, &stderr);
        explain_denials(&handle.network_denied_since(&policy, began_ms));
        exit::code(outcome.exit_code())
    }
}

/// The workspace's running cell: straight to its socket when it runs, else through the state
/// database, which starts it.
pub fn reach(workspace: &str) -> anyhow::Result<(Handle, AgentClient)> {
    let root = state_root()?;
    if let Some(found) = Handle::fast(&StateDir::new(&root), workspace) {
        return Ok(found);
    }
    let mut workspaces = Workspaces::open(&root)?;
    Ok(workspaces.handle(workspace)?)
}

/// What is writable and hidden in a workspace's cell, for hints.
fn workspace_filesystem(policy: &Policy) -> ResolvedFilesystem {
    let mut writable = vec![std::path::PathBuf::from(WORKSPACE_DIR)];
    writable.extend(policy.filesystem.write.iter().cloned());
    ResolvedFilesystem {
        writable,
        hidden: policy.filesystem.hide.clone(),
        protected: policy.filesystem.protected.clone(),
        tmp_size: policy.filesystem.tmp_size,
    }
}

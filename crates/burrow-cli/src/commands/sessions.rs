//! `burrow session ...`: persistent command sessions, one command line at a time, and
//! `session serve`, the same over standard input and output for harnesses.

use std::io::{BufRead, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Context;
use burrow_output::Stream;
use burrow_workspace::client::AgentClient;
use burrow_workspace::handle::{Handle, workspace_cwd};
use burrow_workspace::journal;
use burrow_workspace::pages;
use serde::Deserialize;

use crate::cli::{SessionCommand, SessionOpenArgs};
use crate::commands::exec::reach;
use crate::commands::workspaces::finish;
use crate::exit;
use crate::report::print_json;

pub fn session(command: SessionCommand) -> ExitCode {
    match command {
        SessionCommand::Open(args) => finish(open(&args)),
        SessionCommand::Exec {
            workspace,
            session,
            timeout,
            json,
            redact,
            command,
        } => exec(
            &workspace,
            &session,
            timeout,
            json,
            &redact.redact,
            &command.join(" "),
        ),
        SessionCommand::Close { workspace, session } => {
            finish(reach(&workspace).and_then(|(handle, mut client)| {
                client.session_close(&session)?;
                Ok(handle.audit(&journal::record("session.close", session))?)
            }))
        }
        SessionCommand::List { workspace, json } => finish(list(&workspace, json)),
        SessionCommand::Serve(args) => finish(serve(&args)),
    }
}

/// Starts a session for `open` and `serve`.
fn start(
    handle: &Handle,
    client: &mut AgentClient,
    args: &SessionOpenArgs,
) -> anyhow::Result<String> {
    let policy = handle.policy()?;
    let caller: Vec<_> = std::env::vars_os().collect();
    let env = handle.command_env(&policy, &caller, &args.env, &args.secrets.secret_env)?;
    let cwd = workspace_cwd(Some(&args.cwd))?;
    let (session, _) = client.session_open(&cwd, env)?;
    handle.audit(&journal::record(
        "session.open",
        format!("{session} in {cwd}"),
    ))?;
    Ok(session)
}

fn open(args: &SessionOpenArgs) -> anyhow::Result<()> {
    let (handle, mut client) = reach(&args.workspace)?;
    let session = start(&handle, &mut client, args)?;
    if args.json {
        print_json(&serde_json::json!({ "session": session }));
    } else {
        println!("{session}");
    }
    Ok(())
}

fn list(workspace: &str, json: bool) -> anyhow::Result<()> {
    let (_, mut client) = reach(workspace)?;
    let sessions = client.session_list()?;
    if json {
        print_json(&sessions);
        return Ok(());
    }
    println!(
        "{:<8}  {:>7}  {:>8}  {:<10}  CWD",
        "SESSION", "PID", "COMMANDS", "STATE"
    );
    for session in &sessions {
        let state = match session.ended {
            Some(end) => format!(
                "ended {}",
                end.code
                    .map_or_else(|| "by a signal".to_owned(), |c| c.to_string())
            ),
            None => "open".to_owned(),
        };
        println!(
            "{:<8}  {:>7}  {:>8}  {:<10}  {}",
            session.session, session.pid, session.commands, state, session.cwd
        );
    }
    Ok(())
}

/// The timeout of a session command: the flag's, else the workspace policy's (0: none).
fn timeout_of(handle: &Handle, seconds: Option<u64>) -> anyhow::Result<Option<Duration>> {
    Ok(match seconds {
        Some(0) => None,
        Some(seconds) => Some(Duration::from_secs(seconds)),
        None => handle.policy()?.limits.timeout,
    })
}

fn exec(
    workspace: &str,
    session: &str,
    timeout: Option<u64>,
    json: bool,
    redact: &[burrow_redact::RuleSpec],
    command: &str,
) -> ExitCode {
    let result = (|| -> anyhow::Result<ExitCode> {
        let (handle, mut client) = reach(workspace)?;
        let redactor = handle.redactor(redact)?;
        let timeout = timeout_of(&handle, timeout)?;
        if json {
            let limits = pages::capture_limits(&handle.policy()?);
            let result = pages::run_session_command(
                &handle,
                &mut client,
                session,
                command,
                timeout,
                &redactor,
                limits,
            )?;
            print_json(&result);
            return Ok(exit::code(
                result.exit_code.unwrap_or(exit::BURROW_FAILED.into()),
            ));
        }
        // Streamed: each stream to burrow's own, redacted on the way.
        let started = Instant::now();
        let mut out_redact = redactor.stream();
        let mut err_redact = redactor.stream();
        let mut stdout = std::io::stdout();
        let mut stderr = std::io::stderr();
        let end = client.session_exec(session, command, timeout, &mut |stream, bytes| {
            let _ = match stream {
                Stream::Stdout => stdout
                    .write_all(&out_redact.push(bytes))
                    .and_then(|()| stdout.flush()),
                Stream::Stderr => stderr.write_all(&err_redact.push(bytes)),
            };
        })?;
        let _ = stdout.write_all(&out_redact.finish());
        let _ = stderr.write_all(&err_redact.finish());
        let mut record = journal::record("session.exec", format!("{session}: {command}"));
        record.exit_code = end.exit_code;
        record.duration_ms = Some(started.elapsed().as_millis() as u64);
        handle.audit_with(&record, &redactor)?;
        if end.timed_out {
            eprintln!(
                "burrow: timed out; what the command started was killed{}",
                if end.restarted {
                    ", and the session's shell was replaced (its variables and functions are gone)"
                } else {
                    ""
                }
            );
            return Ok(exit::code(124));
        }
        if let Some(ended) = end.ended {
            eprintln!("burrow: the session's shell ended; open a new session");
            return Ok(exit::code(
                ended.code.unwrap_or(128 + ended.signal.unwrap_or(0)),
            ));
        }
        Ok(exit::code(end.exit_code.unwrap_or(0)))
    })();
    result.unwrap_or_else(|error| exit::fail(&format!("{error:#}")))
}

/// A `session serve` request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    /// Echoed in the answer.
    #[serde(default)]
    id: Option<serde_json::Value>,
    /// The command line.
    command: String,
    /// Seconds (default: the workspace policy's timeout; 0 for none).
    #[serde(default)]
    timeout: Option<u64>,
}

/// Serves one session: a JSON request per line on stdin, a JSON result per line on stdout,
/// until stdin ends (then the session is closed).
fn serve(args: &SessionOpenArgs) -> anyhow::Result<()> {
    let (handle, mut client) = reach(&args.workspace)?;
    let session = start(&handle, &mut client, args)?;
    let redactor = handle.redactor(&args.redact.redact)?;
    let limits = pages::capture_limits(&handle.policy()?);
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let line = line.context("cannot read a request")?;
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Request>(&line) {
            Ok(request) => {
                let timeout = timeout_of(&handle, request.timeout)?;
                match pages::run_session_command(
                    &handle,
                    &mut client,
                    &session,
                    &request.command,
                    timeout,
                    &redactor,
                    limits,
                ) {
                    Ok(mut result) => {
                        result.id = request.id;
                        serde_json::to_value(&result)?
                    }
                    Err(error) => {
                        serde_json::json!({ "id": request.id, "error": exit::one_line(&format!("{error:#}")) })
                    }
                }
            }
            Err(error) => serde_json::json!({ "error": format!("not a request: {error}") }),
        };
        serde_json::to_writer(&mut out, &answer)?;
        out.write_all(b"\n")?;
        out.flush()?;
    }
    client.session_close(&session)?;
    Ok(())
}

//! `burrow service ...`: long-running programs in a workspace's cell.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use burrow_proto::service::ServiceSpec;
use burrow_proto::service::{Readiness, RestartPolicy, ServiceInfo, ServiceState};
use burrow_workspace::handle::workspace_cwd;
use burrow_workspace::{journal, pages};

use crate::cli::{RestartArg, ServiceCommand, ServiceStartArgs};
use crate::commands::exec::reach;
use crate::commands::workspaces::finish;
use crate::exit;
use crate::report::print_json;

/// Log bytes fetched per request.
const LOG_CHUNK: u64 = 1 << 20;

pub fn service(command: ServiceCommand) -> ExitCode {
    match command {
        ServiceCommand::Start(args) => {
            start(&args).unwrap_or_else(|error| exit::fail(&format!("{error:#}")))
        }
        ServiceCommand::List { workspace, json } => finish(list(&workspace, json)),
        ServiceCommand::Status {
            workspace,
            name,
            json,
        } => finish(reach(&workspace).and_then(|(_, mut client)| {
            let info = client.service_query(&name)?;
            print_status(&info, json);
            Ok(())
        })),
        ServiceCommand::Logs {
            workspace,
            name,
            tail,
            all,
            follow,
            redact,
        } => finish(logs(
            &workspace,
            &name,
            (!all).then_some(tail),
            follow,
            &redact.redact,
        )),
        ServiceCommand::Stop {
            workspace,
            name,
            grace,
        } => finish(reach(&workspace).and_then(|(handle, mut client)| {
            let info = client.service_stop(&name, Duration::from_secs(grace))?;
            super::publish::stop_forwarders(handle.dir(), &name);
            handle.audit(&journal::record("service.stop", name))?;
            print_status(&info, false);
            Ok(())
        })),
    }
}

/// The readiness probe the flags ask for.
fn readiness(args: &ServiceStartArgs) -> anyhow::Result<Option<Readiness>> {
    if let Some(path) = &args.ready_file {
        return Ok(Some(Readiness::File { path: path.clone() }));
    }
    if let Some(address) = &args.ready_tcp {
        return Readiness::tcp(address)
            .map(Some)
            .with_context(|| format!("--ready-tcp {address}: give HOST:PORT"));
    }
    if let Some(url) = &args.ready_http {
        if !url.starts_with("http://") {
            bail!("--ready-http {url}: give an http:// URL");
        }
        return Ok(Some(Readiness::Http { url: url.clone() }));
    }
    Ok(args.ready_cmd.as_ref().map(|command| Readiness::Command {
        command: command.clone(),
    }))
}

fn start(args: &ServiceStartArgs) -> anyhow::Result<ExitCode> {
    burrow_workspace::names::validate_name(&args.name).context("service name")?;
    let ready = readiness(args)?;
    let publish = args
        .publish
        .iter()
        .map(|spec| super::publish::parse(spec))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let (handle, mut client) = reach(&args.workspace)?;
    // Host ports are taken before the service starts: a port in use is an error up front.
    let listeners = publish
        .iter()
        .map(|&(host_port, port)| {
            super::publish::listen(host_port).map(|listener| (listener, port))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let policy = handle.policy()?;
    let caller: Vec<_> = std::env::vars_os().collect();
    let env = handle.command_env(&policy, &caller, &args.env, &args.secrets.secret_env)?;
    let info = client.service_start(ServiceSpec {
        name: args.name.clone(),
        argv: args.command.clone(),
        cwd: workspace_cwd(Some(&args.cwd))?,
        env,
        ready,
        ready_timeout: Duration::from_secs(args.ready_timeout),
        interval: Duration::from_millis(args.ready_interval_ms),
        restart: match args.restart {
            RestartArg::No => RestartPolicy::No,
            RestartArg::OnFailure => RestartPolicy::OnFailure,
        },
    })?;
    handle.audit(&journal::record(
        "service.start",
        format!(
            "{}: {}",
            args.name,
            burrow_workspace::handle::shell_words(&args.command)
        ),
    ))?;
    if info.state == ServiceState::Ready {
        for (listener, port) in listeners {
            super::publish::spawn_forwarder(
                handle.dir(),
                handle.id(),
                &args.name,
                &listener,
                port,
            )?;
        }
    }
    print_status(&info, args.json);
    if info.state == ServiceState::Ready {
        return Ok(ExitCode::SUCCESS);
    }
    // Why it failed is usually in its last lines.
    let redactor = handle.redactor(&[])?;
    let log = pages::service_log(&mut client, &args.name)?;
    let redacted = redactor.redact_all(&log);
    let tail = pages::last_lines(&redacted, 20);
    if !args.json && !tail.is_empty() {
        eprintln!("burrow: the last lines of its log:");
        let _ = std::io::stderr().write_all(tail);
    }
    Ok(ExitCode::FAILURE)
}

fn print_status(info: &ServiceInfo, json: bool) {
    if json {
        print_json(info);
        return;
    }
    let state = serde_json::to_value(info.state)
        .ok()
        .and_then(|v| v.as_str().map(str::to_owned))
        .unwrap_or_default();
    let mut line = format!("{}: {state}", info.name);
    if let Some(reason) = &info.reason {
        line.push_str(&format!(" ({reason})"));
    }
    if let Some(code) = info.exit_code {
        line.push_str(&format!(", exit {code}"));
    }
    if let Some(signal) = info.signal {
        line.push_str(&format!(", signal {signal}"));
    }
    if let Some(pid) = info.pid {
        line.push_str(&format!(", pid {pid}"));
    }
    if info.restarts > 0 {
        line.push_str(&format!(", restarted {} times", info.restarts));
    }
    println!("{line}");
}

fn list(workspace: &str, json: bool) -> anyhow::Result<()> {
    let (_, mut client) = reach(workspace)?;
    let services = client.service_list()?;
    if json {
        print_json(&services);
        return Ok(());
    }
    for info in &services {
        print_status(info, false);
    }
    Ok(())
}

fn logs(
    workspace: &str,
    name: &str,
    tail: Option<usize>,
    follow: bool,
    redact: &[burrow_redact::RuleSpec],
) -> anyhow::Result<()> {
    let (handle, mut client) = reach(workspace)?;
    let redactor = handle.redactor(redact)?;
    let log = pages::service_log(&mut client, name)?;
    let mut cursor = client.service_logs(name, 0, 0, Duration::ZERO)?.end;
    let mut out = std::io::stdout().lock();
    let mut stream = redactor.stream();
    let shown = stream.push(&log);
    out.write_all(match tail {
        Some(count) => pages::last_lines(&shown, count),
        None => &shown,
    })?;
    out.flush()?;
    if !follow {
        out.write_all(&stream.finish())?;
        return Ok(());
    }
    loop {
        let chunk = client.service_logs(name, cursor, LOG_CHUNK, Duration::from_secs(1))?;
        cursor = chunk.start + chunk.bytes.len() as u64;
        out.write_all(&stream.push(&chunk.bytes))?;
        out.flush()?;
        let running = matches!(chunk.state, ServiceState::Starting | ServiceState::Ready);
        if !running && cursor >= chunk.end {
            out.write_all(&stream.finish())?;
            return Ok(());
        }
    }
}

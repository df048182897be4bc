//! Published ports: `service start --publish HOST_PORT:PORT` forwards 127.0.0.1:HOST_PORT on
//! the host to PORT on the cell's own loopback.
//!
//! The forwarder is a small host process (`burrow publish`, started detached) that accepts on
//! the host port and, for each connection, asks the workspace's agent to connect to the port in
//! the cell and turn that agent connection into a byte pipe. It needs no privilege and no
//! entry into the cell's namespaces. It lives as long as the service runs, and exits within a
//! second or two of the service or the cell stopping.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use burrow_proto::service::ServiceState;
use burrow_workspace::client::AgentClient;
use burrow_workspace::layout::{StateDir, WorkspaceDir};

use crate::cli::PublishArgs;

/// How often the forwarder checks that its service still runs.
const WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// `HOST_PORT:PORT`.
pub fn parse(spec: &str) -> anyhow::Result<(u16, u16)> {
    let parsed = spec
        .split_once(':')
        .and_then(|(host, cell)| Some((host.parse().ok()?, cell.parse().ok()?)))
        .filter(|&(host, cell): &(u16, u16)| host > 0 && cell > 0);
    parsed.with_context(|| format!("--publish {spec}: give HOST_PORT:PORT, e.g. 8080:8000"))
}

/// Takes the host port on the loopback.
pub fn listen(host_port: u16) -> anyhow::Result<TcpListener> {
    TcpListener::bind(("127.0.0.1", host_port))
        .with_context(|| format!("cannot listen on 127.0.0.1:{host_port}"))
}

/// Where a forwarder records its pid and start time.
fn pid_file(dir: &WorkspaceDir, service: &str, host_port: u16) -> PathBuf {
    dir.root()
        .join(format!("publish-{service}-{host_port}.pid"))
}

/// Starts the forwarder for one port, detached, handing it the listening socket.
pub fn spawn_forwarder(
    dir: &WorkspaceDir,
    workspace_id: &str,
    service: &str,
    listener: &TcpListener,
    port: u16,
) -> anyhow::Result<()> {
    let host_port = listener.local_addr()?.port();
    let state = dir
        .root()
        .parent()
        .and_then(std::path::Path::parent)
        .context("the workspace's directory has no state directory above it")?
        .to_path_buf();
    let mut command = std::process::Command::new(std::env::current_exe()?);
    command
        .args(["publish", "--state"])
        .arg(&state)
        .args(["--workspace", workspace_id, "--service", service])
        .args(["--port", &port.to_string(), "--listen-fd", "3"]);
    let child = burrow_workspace::detach::spawn_with_socket(command, listener.as_fd())
        .context("cannot start the port forwarder")?;
    let start_time = burrow_workspace::cell::start_time(child.id()).unwrap_or(0);
    std::fs::write(
        pid_file(dir, service, host_port),
        format!("{} {start_time}\n", child.id()),
    )?;
    Ok(())
}

/// Stops a service's forwarders (the service was stopped).
pub fn stop_forwarders(dir: &WorkspaceDir, service: &str) {
    let prefix = format!("publish-{service}-");
    let Ok(entries) = std::fs::read_dir(dir.root()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if !name.to_string_lossy().starts_with(&prefix) {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(entry.path())
            && let Some((pid, start)) = text.trim().split_once(' ')
            && let (Ok(pid), Ok(start)) = (pid.parse::<u32>(), start.parse::<u64>())
            && burrow_workspace::cell::start_time(pid) == Some(start)
        {
            // SAFETY: kill(2) on the forwarder this workspace recorded (pid and start time
            // checked); no memory involved.
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
        }
        let _ = std::fs::remove_file(entry.path());
    }
}

/// `burrow publish`: the forwarder itself.
pub fn publish(args: &PublishArgs) -> ExitCode {
    match forward(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

fn forward(args: &PublishArgs) -> anyhow::Result<()> {
    if args.listen_fd < 3 {
        bail!("--listen-fd must be an inherited descriptor");
    }
    // SAFETY: the process that started this one passed its listening socket as this descriptor,
    // and nothing else here owns it.
    let listener = TcpListener::from(unsafe { OwnedFd::from_raw_fd(args.listen_fd) });
    let dir = StateDir::new(&args.state).workspace(&args.workspace);
    // Accepting wakes up at least every interval to see whether the service still runs.
    listener.set_nonblocking(true)?;
    let mut checked = std::time::Instant::now();
    loop {
        if checked.elapsed() >= WATCH_INTERVAL {
            if !still_running(&dir, &args.service) {
                return Ok(());
            }
            checked = std::time::Instant::now();
        }
        match listener.accept() {
            Ok((connection, _)) => {
                connection.set_nonblocking(false)?;
                let dir = dir.clone();
                let port = args.port;
                std::thread::spawn(move || {
                    let _ = tunnel(&dir, port, connection);
                });
            }
            Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {
                let mut fds = [rustix::event::PollFd::new(
                    &listener,
                    rustix::event::PollFlags::IN,
                )];
                let tick = rustix::event::Timespec {
                    tv_sec: 0,
                    tv_nsec: 200_000_000,
                };
                let _ = rustix::event::poll(&mut fds, Some(&tick));
            }
            Err(_) => {}
        }
    }
}

/// Whether the service is still starting or ready (false once the cell is gone).
fn still_running(dir: &WorkspaceDir, service: &str) -> bool {
    let Ok(stream) = burrow_workspace::cell::connect(dir) else {
        return false;
    };
    AgentClient::over(stream)
        .and_then(|mut client| client.service_query(service))
        .is_ok_and(|info| matches!(info.state, ServiceState::Starting | ServiceState::Ready))
}

/// Joins one host connection to the port in the cell.
fn tunnel(dir: &WorkspaceDir, port: u16, host: TcpStream) -> anyhow::Result<()> {
    let stream = burrow_workspace::cell::connect(dir)?;
    let (cell, early) = AgentClient::over(stream)?.tcp_connect(port)?;
    let mut to_host = host.try_clone()?;
    to_host.write_all(&early)?;
    let mut from_cell = cell.try_clone()?;
    let copier = std::thread::spawn(move || {
        let _ = copy(&mut from_cell, &mut to_host);
        let _ = to_host.shutdown(Shutdown::Write);
    });
    let mut from_host = host;
    let mut to_cell: UnixStream = cell;
    let _ = copy(&mut from_host, &mut to_cell);
    let _ = to_cell.shutdown(Shutdown::Write);
    let _ = copier.join();
    Ok(())
}

fn copy(from: &mut impl Read, to: &mut impl Write) -> std::io::Result<u64> {
    std::io::copy(from, to)
}

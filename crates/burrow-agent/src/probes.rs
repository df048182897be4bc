//! Readiness probes of services, run by the agent inside the cell (so `localhost` is the
//! cell's own loopback).

use std::os::fd::AsFd;
use std::rc::Rc;
use std::time::Duration;

use burrow_proto::service::Readiness;
use burrow_sandbox::Grouping;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::agent::Agent;
use crate::services::ServiceSpec;
use crate::spawn::{Program, spawn};

/// How long one network probe may take.
const NETWORK_PROBE: Duration = Duration::from_secs(2);

/// How long a probe command may run.
const COMMAND_PROBE: Duration = Duration::from_secs(10);

/// Whether the probe passes now.
pub async fn check(agent: &Rc<Agent>, probe: &Readiness, spec: &ServiceSpec) -> bool {
    match probe {
        Readiness::File { path } => agent.workspace.stat(path).is_ok(),
        Readiness::Tcp { host, port } => tokio::time::timeout(
            NETWORK_PROBE,
            tokio::net::TcpStream::connect((host.as_str(), *port)),
        )
        .await
        .is_ok_and(|connected| connected.is_ok()),
        Readiness::Http { url } => tokio::time::timeout(NETWORK_PROBE, http_ok(url))
            .await
            .unwrap_or(false),
        Readiness::Command { command } => run_probe(agent, command, spec).await,
    }
}

/// The parts of an `http://host[:port][/path]` URL.
pub fn parse_http_url(url: &str) -> Option<(String, u16, String)> {
    let rest = url.strip_prefix("http://")?;
    let (authority, path) = match rest.find('/') {
        Some(at) => (&rest[..at], &rest[at..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => {
            (host, port.parse().ok()?)
        }
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return None;
    }
    Some((host.to_owned(), port, path.to_owned()))
}

/// A GET that answers with a status below 400.
async fn http_ok(url: &str) -> bool {
    let Some((host, port, path)) = parse_http_url(url) else {
        return false;
    };
    let Ok(mut stream) = tokio::net::TcpStream::connect((host.as_str(), port)).await else {
        return false;
    };
    let request = format!("GET {path} HTTP/1.0\r\nHost: {host}\r\nUser-Agent: burrow\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut head = [0u8; 64];
    let mut filled = 0;
    // The status line's first 12 bytes: "HTTP/1.1 200".
    while filled < 12 {
        match stream.read(&mut head[filled..]).await {
            Ok(0) | Err(_) => return false,
            Ok(n) => filled += n,
        }
    }
    let line = String::from_utf8_lossy(&head[..filled]);
    line.starts_with("HTTP/")
        && line
            .split_whitespace()
            .nth(1)
            .and_then(|code| code.parse::<u16>().ok())
            .is_some_and(|code| (100..400).contains(&code))
}

/// `sh -c COMMAND` in the service's directory and environment exits 0.
async fn run_probe(agent: &Rc<Agent>, command: &str, spec: &ServiceSpec) -> bool {
    let argv = ["/bin/sh".to_owned(), "-c".to_owned(), command.to_owned()];
    let program = Program {
        argv: &argv,
        env: &spec.env,
        cwd: &spec.cwd,
    };
    let null = agent.null.as_fd();
    let Ok(pid) = spawn(agent, &program, [null, null, null], Grouping::ProcessGroup) else {
        return false;
    };
    let exited = agent.reaper.watch(pid as i32);
    match tokio::time::timeout(COMMAND_PROBE, exited).await {
        Ok(Ok(status)) => status.code() == Some(0),
        _ => {
            crate::exec::kill_group(pid as i32, libc::SIGKILL);
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::parse_http_url;

    #[test]
    fn http_urls_are_split() {
        assert_eq!(
            parse_http_url("http://localhost:8000/health"),
            Some(("localhost".into(), 8000, "/health".into()))
        );
        assert_eq!(
            parse_http_url("http://127.0.0.1"),
            Some(("127.0.0.1".into(), 80, "/".into()))
        );
        assert_eq!(
            parse_http_url("http://[::1]:9000/"),
            Some(("::1".into(), 9000, "/".into()))
        );
        assert_eq!(parse_http_url("https://x/"), None);
        assert_eq!(parse_http_url("http://:80/"), None);
    }
}

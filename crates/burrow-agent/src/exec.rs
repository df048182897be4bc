//! Running commands for the host: started with posix_spawn in their own process group, output
//! streamed back as it comes, a timeout, signals, and stdin on request.
//!
//! When a command's main process exits, what it left running in its process group is killed:
//! an exec is one transaction, as `burrow run` is. (A process that leaves the group with setsid
//! keeps running until the cell stops; long-lived programs belong in services.)

use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::rc::Rc;
use std::time::Duration;

use burrow_proto::{Channel, Frame, Message};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

use crate::agent::Agent;

/// How long output may still arrive after a command's process group was killed, from a process
/// that left the group (it holds the pipe, not the command).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Bytes read from a command's output per chunk.
const OUTPUT_CHUNK: usize = 256 * 1024;

/// A command to run, as the host asked.
#[derive(Debug)]
pub struct ExecRequest {
    /// Request id.
    pub id: u64,
    /// Command and arguments.
    pub argv: Vec<String>,
    /// Complete environment.
    pub env: Vec<(String, String)>,
    /// Working directory in the workspace.
    pub cwd: String,
    /// Kill after this long.
    pub timeout: Option<Duration>,
    /// Whether stdin chunks will come.
    pub stdin: bool,
}

/// A started command, as its connection tracks it.
#[derive(Debug)]
pub struct RunningExec {
    /// Its process group (= its pid).
    pub group: i32,
    /// Where its stdin chunks go, while stdin is open.
    pub stdin: Option<mpsc::Sender<Vec<u8>>>,
}

/// Starts a command. On failure, the errno of the lookup or the exec.
pub fn start(
    agent: &Rc<Agent>,
    request: &ExecRequest,
    out: mpsc::Sender<Frame>,
) -> Result<(RunningExec, u32), i32> {
    let Some(name) = request.argv.first() else {
        return Err(libc::ENOENT);
    };
    let cwd = agent
        .workspace
        .relative(&request.cwd)
        .map_err(|_| libc::ENOENT)?;
    let cwd = agent.workspace.root_path().join(cwd);
    let search_path = request
        .env
        .iter()
        .find(|(key, _)| key == "PATH")
        .map(|(_, value)| std::ffi::OsStr::new(value.as_str()));
    let program = burrow_policy::find_program(std::ffi::OsStr::new(name), search_path)?;

    let build = |script: bool| {
        let mut command = if script {
            // A script without a #! line runs with the shell, as execvp does.
            let mut shell = std::process::Command::new("/bin/sh");
            shell.arg0("sh").arg(&program);
            shell
        } else {
            let mut direct = std::process::Command::new(&program);
            direct.arg0(name);
            direct
        };
        let filter = std::sync::Arc::clone(&agent.command_filter);
        // SAFETY: the closure only makes the seccomp(2) system call with a program compiled
        // before the fork: no allocation, no lock, nothing that is unsafe between fork and exec.
        unsafe {
            command.pre_exec(move || filter.install());
        }
        command
            .args(&request.argv[1..])
            .env_clear()
            .envs(request.env.iter().map(|(k, v)| (k, v)))
            .current_dir(&cwd)
            .process_group(0)
            .stdin(if request.stdin {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };
    let mut child = match build(false).spawn() {
        Err(error) if error.raw_os_error() == Some(libc::ENOEXEC) => build(true).spawn(),
        other => other,
    }
    .map_err(|error| error.raw_os_error().unwrap_or(libc::EIO))?;

    let pid = child.id();
    let group = pid as i32;
    // Registered before any await: its SIGCHLD cannot be handled first.
    let exited = agent.reaper.watch(group);
    agent.track_group(group);

    let stdout = child.stdout.take().map(OwnedFd::from);
    let stderr = child.stderr.take().map(OwnedFd::from);
    let stdin = child.stdin.take().map(OwnedFd::from);
    // The reaper collects the child; std's handle has nothing more to do.
    drop(child);

    let stdin_sender = stdin.and_then(|fd| {
        let writer = pipe::Sender::from_owned_fd(fd).ok()?;
        let (sender, receiver) = mpsc::channel(16);
        tokio::task::spawn_local(feed_stdin(writer, receiver));
        Some(sender)
    });
    let id = request.id;
    let timeout = request.timeout;
    let agent = Rc::clone(agent);
    tokio::task::spawn_local(async move {
        let _active = agent.activity.begin();
        let outputs = [(stdout, Channel::Stdout), (stderr, Channel::Stderr)]
            .into_iter()
            .filter_map(|(fd, channel)| {
                let receiver = pipe::Receiver::from_owned_fd(fd?).ok()?;
                Some(tokio::task::spawn_local(forward(
                    receiver,
                    id,
                    channel,
                    out.clone(),
                )))
            })
            .collect::<Vec<_>>();

        let (status, timed_out) = match timeout {
            Some(limit) => match tokio::time::timeout(limit, exited).await {
                Ok(status) => (status.ok(), false),
                Err(_) => {
                    kill_group(group, libc::SIGKILL);
                    (None, true)
                }
            },
            None => (exited.await.ok(), false),
        };
        // What the command left running in its group ends with it.
        kill_group(group, libc::SIGKILL);
        agent.untrack_group(group);
        let drained = tokio::time::timeout(DRAIN_GRACE, async {
            for output in outputs {
                let _ = output.await;
            }
        });
        let _ = drained.await;
        let (code, signal) = match status {
            Some(status) => (status.code(), status.signal()),
            // Killed for its timeout: the agent sent SIGKILL.
            None => (None, Some(libc::SIGKILL)),
        };
        let _ = out
            .send(Frame::Message(Message::Exited {
                id,
                code,
                signal,
                timed_out,
            }))
            .await;
    });
    Ok((
        RunningExec {
            group,
            stdin: stdin_sender,
        },
        pid,
    ))
}

/// Sends a signal to a command's process group.
pub fn kill_group(group: i32, signal: i32) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory involved.
    unsafe { libc::kill(-group, signal) };
}

async fn forward(
    mut receiver: pipe::Receiver,
    id: u64,
    channel: Channel,
    out: mpsc::Sender<Frame>,
) {
    let mut buffer = vec![0u8; OUTPUT_CHUNK];
    loop {
        match receiver.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                let frame = Frame::Data {
                    id,
                    channel,
                    bytes: buffer[..n].to_vec(),
                };
                // The host stopped listening: keep reading, so the command does not block on
                // a full pipe, but drop the output.
                let _ = out.send(frame).await;
            }
        }
    }
}

async fn feed_stdin(mut writer: pipe::Sender, mut chunks: mpsc::Receiver<Vec<u8>>) {
    while let Some(chunk) = chunks.recv().await {
        if writer.write_all(&chunk).await.is_err() {
            return;
        }
    }
}

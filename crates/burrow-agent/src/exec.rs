//! Running commands for the host: started vfork-style in their own process group (with the
//! command's seccomp addition, see `burrow_sandbox::CommandSpawn`), output streamed back as it
//! comes, a timeout, signals, and stdin on request.
//!
//! When a command's main process exits, what it left running in its process group is killed:
//! an exec is one transaction, as `burrow run` is. (A process that leaves the group with setsid
//! keeps running until the cell stops; long-lived programs belong in services.)

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::rc::Rc;

use burrow_sandbox::Grouping;
use std::time::Duration;

use burrow_proto::{Channel, Frame, Message};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::unix::pipe;
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::spawn::{Program, nonblocking, pipe, spawn};

/// How long output may still arrive after a command's process group was killed, from a process
/// that left the group (it holds the pipe, not the command).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Bytes read from a command's output per chunk.
const OUTPUT_CHUNK: usize = 64 * 1024;

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
    let pipes =
        Pipes::new(request.stdin).map_err(|error| error.raw_os_error().unwrap_or(libc::EIO))?;
    let program = Program {
        argv: &request.argv,
        env: &request.env,
        cwd: &request.cwd,
    };
    let pid = spawn(
        agent,
        &program,
        pipes.child_ends(&agent.null),
        Grouping::ProcessGroup,
    )?;
    let group = pid as i32;
    // Registered before any await: its SIGCHLD cannot be handled first.
    let exited = agent.reaper.watch(group);
    agent.track_group(group);
    let (stdin, stdout, stderr) = pipes.into_parent_ends();

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

/// The pipes of one command: the child's ends go to its 0, 1 and 2, the agent keeps the others.
struct Pipes {
    stdin: Option<(OwnedFd, OwnedFd)>,
    stdout: (OwnedFd, OwnedFd),
    stderr: (OwnedFd, OwnedFd),
}

impl Pipes {
    fn new(with_stdin: bool) -> std::io::Result<Pipes> {
        Ok(Pipes {
            stdin: if with_stdin { Some(pipe()?) } else { None },
            stdout: pipe()?,
            stderr: pipe()?,
        })
    }

    fn child_ends<'a>(&'a self, null: &'a OwnedFd) -> [BorrowedFd<'a>; 3] {
        [
            self.stdin
                .as_ref()
                .map_or(null.as_fd(), |(read, _)| read.as_fd()),
            self.stdout.1.as_fd(),
            self.stderr.1.as_fd(),
        ]
    }

    /// The agent's ends, non-blocking for the runtime; the child's ends close here.
    fn into_parent_ends(self) -> (Option<OwnedFd>, Option<OwnedFd>, Option<OwnedFd>) {
        (
            self.stdin.and_then(|(_, write)| nonblocking(write).ok()),
            nonblocking(self.stdout.0).ok(),
            nonblocking(self.stderr.0).ok(),
        )
    }
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

//! Persistent command sessions: one long-lived shell per session, fed command lines on its
//! stdin. Each command runs in the shell itself (`eval`), so `cd`, variables and functions
//! carry over; its stdin is /dev/null; its end is a marker with a random nonce that the shell
//! prints on stdout (with `$?` and `$PWD`) and on stderr, so the agent knows when both streams
//! of that command are complete — no fixed wait, and output without a final newline is fine.
//!
//! The two streams are read by a thread of the session's own, in the order the kernel reports
//! them ready, and passed on as tagged chunks in that order.

mod markers;
mod reader;

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::os::fd::AsFd;
use std::rc::Rc;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use burrow_proto::session::SessionInfo;
use burrow_proto::shell::ExitStatus;
use burrow_sandbox::Grouping;
use tokio::io::AsyncWriteExt;
use tokio::net::unix::pipe;
use tokio::sync::{Notify, oneshot};

use crate::agent::Agent;
use crate::reaper::WaitStatus;
use crate::spawn::{Program, nonblocking, pipe, spawn};
use crate::unknown::Unknown;

use markers::{Collected, Markers, nonce, wrap};
use reader::read_in_order;

/// How long a timed-out command gets after SIGINT, and then after SIGKILL to what it started,
/// before the shell itself is replaced.
const INTERRUPT_GRACE: Duration = Duration::from_millis(1000);
const SURVIVAL_GRACE: Duration = Duration::from_millis(500);

/// Which stream a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Chunks read by a session's reader thread, in the order read.
#[derive(Debug, Default)]
struct Queue {
    chunks: VecDeque<(Stream, Vec<u8>)>,
    /// Both streams reached end-of-file: the shell (and everything holding its pipes) is gone.
    closed: bool,
}

/// The reader thread's side and the agent's side of a session's output.
#[derive(Debug, Default)]
struct Output {
    queue: Mutex<Queue>,
    arrived: Notify,
}

impl Output {
    fn take(&self) -> (Vec<(Stream, Vec<u8>)>, bool) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        (queue.chunks.drain(..).collect(), queue.closed)
    }
}

/// One running shell of a session.
#[derive(Debug)]
struct Process {
    pid: u32,
    stdin: pipe::Sender,
    output: Arc<Output>,
    exited: Option<oneshot::Receiver<WaitStatus>>,
}

/// One session.
#[derive(Debug)]
pub struct Session {
    process: RefCell<Option<Process>>,
    env: Vec<(String, String)>,
    /// Where it started, for a restart when its last directory is gone.
    start_cwd: String,
    cwd: RefCell<String>,
    commands: Cell<u64>,
    ended: Cell<Option<ExitStatus>>,
    busy: Cell<bool>,
}

/// How a command in a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommandEnd {
    /// `$?`, when the shell reported it.
    pub exit_code: Option<i32>,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Set when the shell itself ended.
    pub ended: Option<ExitStatus>,
    /// Whether the shell was replaced.
    pub restarted: bool,
}

/// The agent's sessions.
#[derive(Debug, Default)]
pub struct Sessions {
    sessions: RefCell<BTreeMap<String, Rc<Session>>>,
    opened: Cell<u64>,
}

/// Why a session request failed.
pub type SessionResult<T> = Result<T, String>;

impl Sessions {
    /// Starts a session's shell.
    pub fn open(
        &self,
        agent: &Rc<Agent>,
        cwd: &str,
        env: &[(String, String)],
    ) -> SessionResult<(String, u32)> {
        let process = start_shell(agent, cwd, env)?;
        let pid = process.pid;
        let session = Rc::new(Session {
            process: RefCell::new(Some(process)),
            env: env.to_vec(),
            start_cwd: cwd.to_owned(),
            cwd: RefCell::new(cwd.to_owned()),
            commands: Cell::new(0),
            ended: Cell::new(None),
            busy: Cell::new(false),
        });
        let number = self.opened.get() + 1;
        self.opened.set(number);
        let name = format!("s-{number}");
        self.sessions.borrow_mut().insert(name.clone(), session);
        Ok((name, pid))
    }

    /// A session by name.
    pub fn get(&self, name: &str) -> Result<Rc<Session>, Unknown> {
        self.sessions
            .borrow()
            .get(name)
            .cloned()
            .ok_or_else(|| Unknown::new("session", name))
    }

    /// Ends a session and everything its shell started.
    pub fn close(&self, name: &str) -> Result<(), Unknown> {
        let session = self
            .sessions
            .borrow_mut()
            .remove(name)
            .ok_or_else(|| Unknown::new("session", name))?;
        if let Some(process) = session.process.borrow_mut().take() {
            crate::exec::kill_group(process.pid as i32, libc::SIGKILL);
        }
        Ok(())
    }

    /// Every session.
    pub fn list(&self) -> Vec<SessionInfo> {
        self.sessions
            .borrow()
            .iter()
            .map(|(name, session)| SessionInfo {
                session: name.clone(),
                pid: session.process.borrow().as_ref().map_or(0, |p| p.pid),
                cwd: session.cwd.borrow().clone(),
                commands: session.commands.get(),
                ended: session.ended.get(),
            })
            .collect()
    }

    /// Kills every session's shell (the agent is exiting).
    pub fn kill_all(&self) {
        for session in self.sessions.borrow().values() {
            if let Some(process) = session.process.borrow().as_ref() {
                crate::exec::kill_group(process.pid as i32, libc::SIGKILL);
            }
        }
    }
}

impl Session {
    /// Runs one command line; `chunk` receives its output in order. Only one command runs at a
    /// time.
    pub async fn exec(
        &self,
        agent: &Rc<Agent>,
        command: &str,
        timeout: Option<Duration>,
        chunk: &mut dyn FnMut(Stream, Vec<u8>),
    ) -> SessionResult<CommandEnd> {
        if let Some(status) = self.ended.get() {
            return Err(format!(
                "the session's shell has ended ({}); open a new session",
                describe(status)
            ));
        }
        if command.contains('\0') {
            return Err("a command may not contain a NUL byte".to_owned());
        }
        if self.busy.replace(true) {
            return Err("the session is running another command".to_owned());
        }
        let result = self.run(agent, command, timeout, chunk).await;
        self.busy.set(false);
        result
    }

    async fn run(
        &self,
        agent: &Rc<Agent>,
        command: &str,
        timeout: Option<Duration>,
        chunk: &mut dyn FnMut(Stream, Vec<u8>),
    ) -> SessionResult<CommandEnd> {
        let nonce = nonce();
        let script = wrap(command, &nonce);
        let (output, pid) = {
            let mut process = self.process.borrow_mut();
            let process = process.as_mut().ok_or("the session has no shell")?;
            (Arc::clone(&process.output), process.pid)
        };
        self.write_stdin(script.as_bytes()).await?;
        self.commands.set(self.commands.get() + 1);
        let mut markers = Markers::new(&nonce);
        let collected = match timeout {
            None => Some(markers.collect(&output, chunk).await),
            Some(limit) => tokio::time::timeout(limit, markers.collect(&output, chunk))
                .await
                .ok(),
        };
        let mut timed_out = false;
        let outcome = match collected {
            Some(outcome) => outcome,
            None => {
                timed_out = true;
                // SIGINT to the session's process group: the command's processes end, and the
                // shell's trap returns from the command (see `wrap`), skipping the rest of it.
                crate::exec::kill_group(pid as i32, libc::SIGINT);
                let interrupted =
                    tokio::time::timeout(INTERRUPT_GRACE, markers.collect(&output, chunk)).await;
                let survived = match interrupted {
                    Ok(outcome) => Ok(outcome),
                    Err(_) => {
                        // Something ignored SIGINT: what the command started is killed.
                        kill_descendants(pid);
                        tokio::time::timeout(SURVIVAL_GRACE, markers.collect(&output, chunk)).await
                    }
                };
                match survived {
                    Ok(outcome) => outcome,
                    Err(_) => {
                        // The command is the shell itself (a builtin loop, say): replace it.
                        crate::exec::kill_group(pid as i32, libc::SIGKILL);
                        self.restart(agent)?;
                        return Ok(CommandEnd {
                            exit_code: None,
                            timed_out: true,
                            ended: None,
                            restarted: true,
                        });
                    }
                }
            }
        };
        match outcome {
            Collected::Done { status, cwd } => {
                *self.cwd.borrow_mut() = cwd;
                Ok(CommandEnd {
                    exit_code: Some(status),
                    timed_out,
                    ended: None,
                    restarted: false,
                })
            }
            Collected::ShellEnded => {
                let status = self.wait_shell().await;
                self.ended.set(Some(status));
                Ok(CommandEnd {
                    exit_code: status.code,
                    timed_out,
                    ended: Some(status),
                    restarted: false,
                })
            }
        }
    }

    async fn write_stdin(&self, bytes: &[u8]) -> SessionResult<()> {
        // The sender is taken out for the write (no RefCell borrow across an await) and put
        // back.
        let mut process = self
            .process
            .borrow_mut()
            .take()
            .ok_or("the session has no shell")?;
        let written = process.stdin.write_all(bytes).await;
        *self.process.borrow_mut() = Some(process);
        written.map_err(|error| format!("the session's shell stopped reading: {error}"))
    }

    async fn wait_shell(&self) -> ExitStatus {
        let exited = self
            .process
            .borrow_mut()
            .as_mut()
            .and_then(|p| p.exited.take());
        match exited {
            Some(receiver) => match receiver.await {
                Ok(status) => ExitStatus {
                    code: status.code(),
                    signal: status.signal(),
                },
                Err(_) => ExitStatus {
                    code: None,
                    signal: None,
                },
            },
            None => ExitStatus {
                code: None,
                signal: None,
            },
        }
    }

    /// Replaces the shell, in the last working directory if it is still in the workspace.
    fn restart(&self, agent: &Rc<Agent>) -> SessionResult<()> {
        self.process.borrow_mut().take();
        let cwd = self.cwd.borrow().clone();
        let process = start_shell(agent, &cwd, &self.env)
            .or_else(|_| start_shell(agent, &self.start_cwd, &self.env))?;
        *self.process.borrow_mut() = Some(process);
        Ok(())
    }
}

/// Starts a session's shell with its three pipes and its reader thread.
fn start_shell(agent: &Rc<Agent>, cwd: &str, env: &[(String, String)]) -> SessionResult<Process> {
    let failed = |error: std::io::Error| format!("cannot start the session's shell: {error}");
    let (stdin_read, stdin_write) = pipe().map_err(failed)?;
    let (stdout_read, stdout_write) = pipe().map_err(failed)?;
    let (stderr_read, stderr_write) = pipe().map_err(failed)?;
    let argv = if std::path::Path::new("/bin/bash").exists() {
        vec![
            "/bin/bash".to_owned(),
            "--noprofile".to_owned(),
            "--norc".to_owned(),
        ]
    } else {
        vec!["/bin/sh".to_owned()]
    };
    let program = Program {
        argv: &argv,
        env,
        cwd,
    };
    let pid = spawn(
        agent,
        &program,
        [
            stdin_read.as_fd(),
            stdout_write.as_fd(),
            stderr_write.as_fd(),
        ],
        Grouping::Session,
    )
    .map_err(|errno| failed(std::io::Error::from_raw_os_error(errno)))?;
    let exited = agent.reaper.watch(pid as i32);
    drop((stdin_read, stdout_write, stderr_write));
    let stdin = nonblocking(stdin_write)
        .and_then(pipe::Sender::from_owned_fd)
        .map_err(failed)?;
    let output = Arc::new(Output::default());
    let reader_output = Arc::clone(&output);
    std::thread::Builder::new()
        .name(format!("session-{pid}"))
        .spawn(move || read_in_order(&stdout_read, &stderr_read, &reader_output))
        .map_err(failed)?;
    Ok(Process {
        pid,
        stdin,
        output,
        exited: Some(exited),
    })
}

/// Kills every descendant of `pid` (what a session's command started), leaving `pid`.
fn kill_descendants(pid: u32) {
    let mut parents: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                continue;
            };
            let parent = stat
                .rfind(')')
                .and_then(|end| stat[end + 1..].split_whitespace().nth(1))
                .and_then(|ppid| ppid.parse::<u32>().ok());
            if let Some(parent) = parent {
                parents.entry(parent).or_default().push(child);
            }
        }
    }
    let mut stack = parents.get(&pid).cloned().unwrap_or_default();
    while let Some(child) = stack.pop() {
        // SAFETY: kill(2) on a pid of this cell; no memory involved.
        unsafe { libc::kill(child as i32, libc::SIGKILL) };
        stack.extend(parents.get(&child).cloned().unwrap_or_default());
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.code, status.signal) {
        (Some(code), _) => format!("exit {code}"),
        (None, Some(signal)) => format!("signal {signal}"),
        (None, None) => "gone".to_owned(),
    }
}

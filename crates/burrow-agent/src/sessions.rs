//! Persistent command sessions: one long-lived shell per session, fed command lines on its
//! stdin. Each command runs in the shell itself (`eval`), so `cd`, variables and functions
//! carry over; its stdin is /dev/null; its end is a marker with a random nonce that the shell
//! prints on stdout (with `$?` and `$PWD`) and on stderr, so the agent knows when both streams
//! of that command are complete — no fixed wait, and output without a final newline is fine.
//!
//! The two streams are read by a thread of the session's own, in the order the kernel reports
//! them ready, and passed on as tagged chunks in that order.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::os::fd::{AsFd, OwnedFd};
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

/// The reader thread: both streams through one epoll asked for one event at a time, so that
/// the stream that became ready first is read first.
fn read_in_order(stdout: &OwnedFd, stderr: &OwnedFd, output: &Output) {
    use rustix::event::epoll;
    let finish = |output: &Output| {
        output
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        output.arrived.notify_one();
    };
    let Ok(poller) = epoll::create(epoll::CreateFlags::CLOEXEC) else {
        return finish(output);
    };
    let streams = [(stdout, Stream::Stdout), (stderr, Stream::Stderr)];
    for (index, (fd, _)) in streams.iter().enumerate() {
        if epoll::add(
            &poller,
            fd,
            epoll::EventData::new_u64(index as u64),
            epoll::EventFlags::IN,
        )
        .is_err()
        {
            return finish(output);
        }
    }
    let mut open = streams.len();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut events = Vec::with_capacity(1);
    while open > 0 {
        events.clear();
        match epoll::wait(&poller, rustix::buffer::spare_capacity(&mut events), None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        }
        let Some(event) = events.first() else {
            continue;
        };
        let Some((fd, stream)) = streams.get(event.data.u64() as usize) else {
            continue;
        };
        match rustix::io::read(fd, &mut buffer) {
            Ok(0) | Err(_) => {
                let _ = epoll::delete(&poller, fd);
                open -= 1;
            }
            Ok(n) => {
                output
                    .queue
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .chunks
                    .push_back((*stream, buffer[..n].to_vec()));
                output.arrived.notify_one();
            }
        }
    }
    finish(output);
}

/// The shell text that runs `command` and then prints the end markers.
///
/// The command runs in a function of the session's shell (so what it changes stays), with
/// stdin from /dev/null; SIGINT (sent by the agent on a timeout) makes the shell return from
/// that function, so that the rest of the command line does not run after what was interrupted.
fn wrap(command: &str, nonce: &str) -> String {
    // POSIX single quotes hold anything but a single quote, which is closed, escaped and
    // reopened: the command reaches eval byte for byte, whatever it contains.
    let quoted = command.replace('\'', r"'\''");
    format!(
        "__burrow_c='{quoted}'\n\
         __burrow_run() {{ eval \"$__burrow_c\"\n}}\n\
         trap 'return 130' INT\n\
         __burrow_run </dev/null\n\
         __burrow_s=$?\n\
         trap - INT\n\
         command printf '\\036{nonce} %s %s\\036' \"$__burrow_s\" \"$PWD\"\n\
         command printf '\\036{nonce}\\036' >&2\n"
    )
}

/// 16 random hex digits.
fn nonce() -> String {
    let mut bytes = [0u8; 8];
    if rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (nanos as u64).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What collecting a command's output ended with.
#[derive(Debug)]
enum Collected {
    /// Both markers: the command's status and the shell's directory after it.
    Done { status: i32, cwd: String },
    /// The shell's streams closed first.
    ShellEnded,
}

/// Finds the end markers in both streams, passing everything before them on.
struct Markers {
    marker: Vec<u8>,
    pending: [Vec<u8>; 2],
    stdout_end: Option<(i32, String)>,
    stderr_end: bool,
}

impl Markers {
    fn new(nonce: &str) -> Markers {
        Markers {
            marker: format!("\x1e{nonce}").into_bytes(),
            pending: [Vec::new(), Vec::new()],
            stdout_end: None,
            stderr_end: false,
        }
    }

    /// Collects until both markers were seen or the streams closed.
    async fn collect(
        &mut self,
        output: &Output,
        chunk: &mut dyn FnMut(Stream, Vec<u8>),
    ) -> Collected {
        loop {
            let notified = output.arrived.notified();
            let (chunks, closed) = output.take();
            for (stream, bytes) in chunks {
                self.feed(stream, &bytes, chunk);
            }
            if let (Some((status, cwd)), true) = (&self.stdout_end, self.stderr_end) {
                return Collected::Done {
                    status: *status,
                    cwd: cwd.clone(),
                };
            }
            if closed {
                for (index, stream) in [Stream::Stdout, Stream::Stderr].into_iter().enumerate() {
                    let rest = std::mem::take(&mut self.pending[index]);
                    if !rest.is_empty() {
                        chunk(stream, rest);
                    }
                }
                return Collected::ShellEnded;
            }
            notified.await;
        }
    }

    fn feed(&mut self, stream: Stream, bytes: &[u8], chunk: &mut dyn FnMut(Stream, Vec<u8>)) {
        let index = match stream {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        };
        let done = match stream {
            Stream::Stdout => self.stdout_end.is_some(),
            Stream::Stderr => self.stderr_end,
        };
        if done {
            // Output after the marker comes from something the command left running.
            chunk(stream, bytes.to_vec());
            return;
        }
        let pending = &mut self.pending[index];
        pending.extend_from_slice(bytes);
        if let Some(at) = find(pending, &self.marker) {
            let after = at + self.marker.len();
            // The marker ends with a second 0x1e; wait for it.
            let Some(close) = pending[after..].iter().position(|&b| b == 0x1e) else {
                if at > 0 {
                    chunk(stream, pending.drain(..at).collect());
                }
                return;
            };
            let payload = String::from_utf8_lossy(&pending[after..after + close]).into_owned();
            let rest = pending.split_off(after + close + 1);
            pending.truncate(at);
            if !pending.is_empty() {
                chunk(stream, std::mem::take(pending));
            }
            match stream {
                Stream::Stdout => {
                    let mut fields = payload.trim_start().splitn(2, ' ');
                    let status = fields.next().and_then(|s| s.parse().ok()).unwrap_or(-1);
                    let cwd = fields.next().unwrap_or("").to_owned();
                    self.stdout_end = Some((status, cwd));
                }
                Stream::Stderr => self.stderr_end = true,
            }
            if !rest.is_empty() {
                chunk(stream, rest);
            }
            return;
        }
        // Keep back only what could be the start of the marker.
        let keep = longest_marker_prefix_suffix(pending, &self.marker);
        let ready = pending.len() - keep;
        if ready > 0 {
            chunk(stream, pending.drain(..ready).collect());
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The length of the longest suffix of `data` that is a proper prefix of `marker`.
fn longest_marker_prefix_suffix(data: &[u8], marker: &[u8]) -> usize {
    (1..marker.len().min(data.len() + 1))
        .rev()
        .find(|&len| data.ends_with(&marker[..len]))
        .unwrap_or(0)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// What the scanner passed on, the stdout marker's payload, and whether stderr's came.
    type Scanned = (Vec<(Stream, Vec<u8>)>, Option<(i32, String)>, bool);

    fn run(marker_nonce: &str, feeds: &[(Stream, &[u8])]) -> Scanned {
        let mut markers = Markers::new(marker_nonce);
        let mut out = Vec::new();
        for (stream, bytes) in feeds {
            markers.feed(*stream, bytes, &mut |s, b| out.push((s, b)));
        }
        (out, markers.stdout_end.clone(), markers.stderr_end)
    }

    #[test]
    fn markers_split_anywhere_are_found_and_output_is_exact() {
        let full = b"no newline at end\x1eabc 3 /workspace/x y\x1e";
        for split in 0..full.len() {
            let (out, end, _) = run(
                "abc",
                &[
                    (Stream::Stdout, &full[..split]),
                    (Stream::Stdout, &full[split..]),
                ],
            );
            let text: Vec<u8> = out.iter().flat_map(|(_, b)| b.clone()).collect();
            assert_eq!(text, b"no newline at end", "split at {split}");
            assert_eq!(
                end,
                Some((3, "/workspace/x y".to_owned())),
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_lone_record_separator_in_output_passes_through() {
        let (out, end, stderr_done) = run(
            "abc",
            &[
                (Stream::Stdout, b"a\x1eb\x1e"),
                (Stream::Stderr, b"\x1eabc\x1e"),
                (Stream::Stdout, b"\x1eabc 0 /w\x1e"),
            ],
        );
        let text: Vec<u8> = out.iter().flat_map(|(_, b)| b.clone()).collect();
        assert_eq!(text, b"a\x1eb\x1e");
        assert_eq!(end, Some((0, "/w".to_owned())));
        assert!(stderr_done);
    }

    #[test]
    fn the_wrapped_command_is_quoted_for_eval() {
        let script = wrap("echo 'it''s' \"$HOME\"", "n");
        assert!(
            script.starts_with("__burrow_c='echo '\\''it'\\'''\\''s'\\'' \"$HOME\"'\n"),
            "{script}"
        );
        assert!(
            script.contains("trap 'return 130' INT\n__burrow_run </dev/null\n"),
            "{script}"
        );
    }
}

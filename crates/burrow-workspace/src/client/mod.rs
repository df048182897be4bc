//! The host's side of the agent protocol: a blocking client over the workspace's socket.
//!
//! The agent runs beside untrusted code, so nothing it says is taken on trust: every answer must
//! carry the id of the request it answers, sizes must match what was asked, and frames are
//! bounded by the protocol's decoder.
//!
//! Files and commands are here; shells, sessions, services, secrets and tunnels in
//! [`interactive`].

use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use burrow_output::{OutputSink, Stream};
use burrow_proto::{Channel, Decoder, Entry, Frame, MAX_CHUNK, Message, PROTOCOL_VERSION};
use rustix::event::{PollFd, PollFlags};

use crate::error::{Result, WorkspaceError};

pub mod interactive;

/// How long a simple request may take before the agent is considered lost.
pub(crate) const ANSWER_TIMEOUT: Duration = Duration::from_secs(60);

/// A command for [`AgentClient::exec`].
#[derive(Debug, Clone)]
pub struct ExecCall {
    /// Command and arguments.
    pub argv: Vec<String>,
    /// Its whole environment.
    pub env: Vec<(String, String)>,
    /// Working directory, relative to the workspace.
    pub cwd: String,
    /// The agent kills it after this long.
    pub timeout: Option<Duration>,
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExecResult {
    /// Exit code, if it exited.
    pub code: Option<i32>,
    /// Signal, if one killed it.
    pub signal: Option<i32>,
    /// Whether its timeout killed it.
    pub timed_out: bool,
    /// Set when it could not be started: the errno.
    pub exec_errno: Option<i32>,
}

/// A chunk of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChunk {
    /// The whole file's size.
    pub size: u64,
    /// The bytes read.
    pub bytes: Vec<u8>,
}

/// A connection to a workspace's agent.
#[derive(Debug)]
pub struct AgentClient {
    stream: UnixStream,
    decoder: Decoder,
    next_id: u64,
    buffer: Vec<u8>,
    /// The greeting was sent and its answer not read yet: it is read before the first answer,
    /// so the first request does not wait a round trip for it.
    greeting_pending: bool,
}

impl AgentClient {
    /// Connects and greets the agent.
    pub fn connect(socket: &Path) -> Result<AgentClient> {
        let stream = UnixStream::connect(socket).map_err(WorkspaceError::io(socket))?;
        AgentClient::over(stream)
    }

    /// Greets the agent on a connected stream. The answer is checked with the first request's.
    pub fn over(stream: UnixStream) -> Result<AgentClient> {
        let mut client = AgentClient {
            stream,
            decoder: Decoder::new(),
            next_id: 1,
            buffer: vec![0u8; 64 * 1024],
            greeting_pending: true,
        };
        client.send(&Frame::Message(Message::Hello {
            version: PROTOCOL_VERSION,
        }))?;
        Ok(client)
    }

    /// Reads the answer to the greeting, if it has not been read.
    pub(crate) fn check_greeting(&mut self, deadline: Instant) -> Result<()> {
        if !self.greeting_pending {
            return Ok(());
        }
        self.greeting_pending = false;
        match self.next_frame(deadline)? {
            Frame::Message(Message::HelloOk { version }) if version == PROTOCOL_VERSION => Ok(()),
            Frame::Message(Message::HelloOk { version }) => {
                Err(WorkspaceError::AgentLost(format!(
                    "the agent speaks protocol version {version}, burrow speaks {PROTOCOL_VERSION}"
                )))
            }
            Frame::Message(other) => Err(unexpected(&other)),
            Frame::Data { .. } => Err(WorkspaceError::AgentLost(
                "data arrived before the greeting".to_owned(),
            )),
        }
    }

    pub(crate) fn new_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    pub(crate) fn send(&mut self, frame: &Frame) -> Result<()> {
        let bytes = frame.encode()?;
        self.stream
            .write_all(&bytes)
            .map_err(|error| WorkspaceError::AgentLost(error.to_string()))
    }

    /// The next frame, waiting until `deadline`.
    pub(crate) fn next_frame(&mut self, deadline: Instant) -> Result<Frame> {
        loop {
            if let Some(frame) = self.decoder.next_frame()? {
                return Ok(frame);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(WorkspaceError::AgentLost("no answer in time".to_owned()));
            }
            self.stream
                .set_read_timeout(Some(left))
                .map_err(|error| WorkspaceError::AgentLost(error.to_string()))?;
            let n = match self.stream.read(&mut self.buffer) {
                Ok(0) => {
                    return Err(WorkspaceError::AgentLost(
                        "the connection closed".to_owned(),
                    ));
                }
                Ok(n) => n,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(WorkspaceError::AgentLost(error.to_string())),
            };
            self.decoder.push(&self.buffer[..n]);
        }
    }

    fn next_message(&mut self, deadline: Instant) -> Result<Message> {
        self.check_greeting(deadline)?;
        match self.next_frame(deadline)? {
            Frame::Message(message) => Ok(message),
            Frame::Data { .. } => Err(WorkspaceError::AgentLost(
                "data arrived where a message was expected".to_owned(),
            )),
        }
    }

    /// Sends a request and returns the answer for it.
    pub(crate) fn request(&mut self, message: Message) -> Result<Message> {
        self.request_within(message, ANSWER_TIMEOUT)
    }

    /// The same, for a request whose answer may take `patience` (a wait asked for).
    pub(crate) fn request_within(
        &mut self,
        message: Message,
        patience: Duration,
    ) -> Result<Message> {
        let id = message.id();
        self.send(&Frame::Message(message))?;
        let answer = self.next_message(Instant::now() + patience)?;
        if answer.id() != id {
            return Err(unexpected(&answer));
        }
        match answer {
            Message::Failed { code, message, .. } => Err(refused(code, &message)),
            answer => Ok(answer),
        }
    }

    /// Reads up to `max_bytes` of a file from `offset`.
    pub fn read_file(&mut self, path: &str, offset: u64, max_bytes: u64) -> Result<FileChunk> {
        let id = self.new_id();
        let asked = max_bytes.min(MAX_CHUNK as u64);
        match self.request(Message::ReadFile {
            id,
            path: path.to_owned(),
            offset,
            max_bytes: asked,
        })? {
            Message::FileData { size, len, .. } if len <= asked => {
                match self.next_frame(Instant::now() + ANSWER_TIMEOUT)? {
                    Frame::Data {
                        id: data_id,
                        channel: Channel::File,
                        bytes,
                    } if data_id == id && bytes.len() as u64 == len => {
                        Ok(FileChunk { size, bytes })
                    }
                    _ => Err(WorkspaceError::AgentLost(
                        "file data did not match its header".to_owned(),
                    )),
                }
            }
            other => Err(unexpected(&other)),
        }
    }

    /// Reads a whole file, refusing one larger than `limit`.
    pub fn read_whole(&mut self, path: &str, limit: u64) -> Result<Vec<u8>> {
        let mut content = Vec::new();
        loop {
            let chunk = self.read_file(path, content.len() as u64, MAX_CHUNK as u64)?;
            if chunk.size > limit {
                return Err(WorkspaceError::Invalid(format!(
                    "{path}: {} bytes is more than {limit}",
                    chunk.size
                )));
            }
            let done = chunk.bytes.is_empty()
                || content.len() as u64 + chunk.bytes.len() as u64 >= chunk.size;
            content.extend(chunk.bytes);
            if done {
                return Ok(content);
            }
        }
    }

    /// Replaces a file atomically.
    pub fn write_file(
        &mut self,
        path: &str,
        content: &[u8],
        mode: Option<u32>,
        parents: bool,
    ) -> Result<()> {
        let id = self.new_id();
        self.send(&Frame::Message(Message::WriteFile {
            id,
            path: path.to_owned(),
            size: content.len() as u64,
            mode,
            parents,
        }))?;
        for chunk in content.chunks(MAX_CHUNK) {
            self.send(&Frame::Data {
                id,
                channel: Channel::File,
                bytes: chunk.to_vec(),
            })?;
        }
        self.expect_done(id)
    }

    fn expect_done(&mut self, id: u64) -> Result<()> {
        let answer = self.next_message(Instant::now() + ANSWER_TIMEOUT)?;
        match answer {
            Message::Done { id: done } if done == id => Ok(()),
            Message::Failed {
                id: failed,
                code,
                message,
            } if failed == id => Err(refused(code, &message)),
            other => Err(unexpected(&other)),
        }
    }

    /// Lists a path.
    pub fn list(
        &mut self,
        path: &str,
        recursive: bool,
        max_entries: u64,
    ) -> Result<(Vec<Entry>, bool)> {
        let id = self.new_id();
        match self.request(Message::List {
            id,
            path: path.to_owned(),
            recursive,
            max_entries,
        })? {
            Message::Entries {
                entries, truncated, ..
            } if entries.len() as u64 <= max_entries.max(1) => Ok((entries, truncated)),
            other => Err(unexpected(&other)),
        }
    }

    /// Describes a path; `None` when it does not exist.
    pub fn stat(&mut self, path: &str) -> Result<Option<Entry>> {
        let id = self.new_id();
        self.send(&Frame::Message(Message::Stat {
            id,
            path: path.to_owned(),
        }))?;
        match self.next_message(Instant::now() + ANSWER_TIMEOUT)? {
            Message::Entries {
                id: got,
                mut entries,
                ..
            } if got == id && entries.len() == 1 => Ok(entries.pop()),
            Message::Failed {
                id: got,
                code: burrow_proto::ErrorCode::NotFound,
                ..
            } if got == id => Ok(None),
            Message::Failed {
                id: got,
                code,
                message,
            } if got == id => Err(refused(code, &message)),
            other => Err(unexpected(&other)),
        }
    }

    /// Removes a path.
    pub fn remove(&mut self, path: &str, recursive: bool) -> Result<()> {
        let id = self.new_id();
        self.request(Message::Remove {
            id,
            path: path.to_owned(),
            recursive,
        })
        .and_then(|answer| done(&answer))
    }

    /// Creates a directory.
    pub fn mkdir(&mut self, path: &str, parents: bool) -> Result<()> {
        let id = self.new_id();
        self.request(Message::Mkdir {
            id,
            path: path.to_owned(),
            parents,
        })
        .and_then(|answer| done(&answer))
    }

    /// Creates a symbolic link.
    pub fn symlink(&mut self, path: &str, target: &str) -> Result<()> {
        let id = self.new_id();
        self.request(Message::Symlink {
            id,
            path: path.to_owned(),
            target: target.to_owned(),
        })
        .and_then(|answer| done(&answer))
    }

    /// The socket itself, once it stops carrying frames (a tunnel), and what was read from it
    /// past the last frame.
    pub(crate) fn into_stream(mut self) -> (UnixStream, Vec<u8>) {
        let early = self.decoder.take_buffered();
        (self.stream, early)
    }

    /// Asks the agent to stop every command and exit (the cell ends).
    pub fn shutdown(mut self) {
        let _ = self.send(&Frame::Message(Message::Shutdown));
    }

    /// Runs a command, streaming its output into `sink`. `signals`, when given, is polled for
    /// signals to pass on to the command.
    pub fn exec(
        &mut self,
        call: &ExecCall,
        sink: &mut dyn OutputSink,
        signals: Option<&dyn SignalSource>,
    ) -> Result<ExecResult> {
        let id = self.new_id();
        let signal_fd = signals.map(SignalSource::fd);
        self.send(&Frame::Message(Message::Exec {
            id,
            argv: call.argv.clone(),
            env: call.env.clone(),
            cwd: call.cwd.clone(),
            timeout_ms: call.timeout.map(|t| t.as_millis() as u64),
            stdin: false,
        }))?;
        self.check_greeting(Instant::now() + ANSWER_TIMEOUT)?;
        // The agent enforces the timeout; this is only the limit on waiting for it to say so.
        let patience = call.timeout.map(|t| t + Duration::from_secs(30));
        let started = Instant::now();
        loop {
            while let Some(frame) = self.decoder.next_frame()? {
                match frame {
                    Frame::Data {
                        id: got,
                        channel,
                        bytes,
                    } if got == id => match channel {
                        Channel::Stdout => sink.write(Stream::Stdout, &bytes),
                        Channel::Stderr => sink.write(Stream::Stderr, &bytes),
                        Channel::Stdin | Channel::File => {}
                    },
                    Frame::Message(Message::Started { id: got, .. }) if got == id => {}
                    Frame::Message(Message::Exited {
                        id: got,
                        code,
                        signal,
                        timed_out,
                    }) if got == id => {
                        return Ok(ExecResult {
                            code,
                            signal,
                            timed_out,
                            exec_errno: None,
                        });
                    }
                    Frame::Message(Message::ExecFailed { id: got, errno }) if got == id => {
                        return Ok(ExecResult {
                            code: None,
                            signal: None,
                            timed_out: false,
                            exec_errno: Some(errno),
                        });
                    }
                    Frame::Message(Message::Failed {
                        id: got,
                        code,
                        message,
                    }) if got == id => {
                        return Err(refused(code, &message));
                    }
                    Frame::Message(other) => return Err(unexpected(&other)),
                    Frame::Data { .. } => {
                        return Err(WorkspaceError::AgentLost(
                            "output for another request arrived during a command".to_owned(),
                        ));
                    }
                }
            }
            if let Some(limit) = patience
                && started.elapsed() > limit
            {
                return Err(WorkspaceError::AgentLost(
                    "the command's timeout passed and the agent did not report it".to_owned(),
                ));
            }
            let mut fds = vec![PollFd::new(&self.stream, PollFlags::IN)];
            if let Some(fd) = &signal_fd {
                fds.push(PollFd::new(fd, PollFlags::IN));
            }
            let tick = rustix::event::Timespec {
                tv_sec: 1,
                tv_nsec: 0,
            };
            match rustix::event::poll(&mut fds, Some(&tick)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(error) => return Err(WorkspaceError::AgentLost(error.to_string())),
            }
            let readable = !fds[0].revents().is_empty();
            let signalled = fds.get(1).is_some_and(|fd| !fd.revents().is_empty());
            drop(fds);
            if signalled && let Some(source) = signals {
                for signal in source.take() {
                    self.send(&Frame::Message(Message::Signal { id, signal }))?;
                }
            }
            if readable {
                self.stream
                    .set_read_timeout(Some(Duration::from_secs(5)))
                    .map_err(|error| WorkspaceError::AgentLost(error.to_string()))?;
                match self.stream.read(&mut self.buffer) {
                    Ok(0) => {
                        return Err(WorkspaceError::AgentLost(
                            "the connection closed".to_owned(),
                        ));
                    }
                    Ok(n) => self.decoder.push(&self.buffer[..n]),
                    Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(error) => return Err(WorkspaceError::AgentLost(error.to_string())),
                }
            }
        }
    }
}

/// Signals to pass on to a running command (burrow's own Ctrl-C, say).
pub trait SignalSource {
    /// A descriptor that becomes readable when signals are pending.
    fn fd(&self) -> std::os::fd::BorrowedFd<'_>;
    /// The pending signals.
    fn take(&self) -> Vec<i32>;
}

impl SignalSource for burrow_sandbox::SignalForwarder {
    fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.as_fd()
    }

    fn take(&self) -> Vec<i32> {
        self.pending()
    }
}

pub(crate) fn done(answer: &Message) -> Result<()> {
    match answer {
        Message::Done { .. } => Ok(()),
        other => Err(unexpected(other)),
    }
}

/// The agent's refusal, cut to one bounded line: it is untrusted text.
pub(crate) fn refused(code: burrow_proto::ErrorCode, message: &str) -> WorkspaceError {
    let mut line: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(500)
        .collect();
    line.truncate(line.trim_end().len());
    WorkspaceError::Agent {
        code,
        message: line,
    }
}

pub(crate) fn unexpected(message: &Message) -> WorkspaceError {
    let mut shown = format!("{message:?}");
    if shown.len() > 200 {
        let mut cut = 200;
        while !shown.is_char_boundary(cut) {
            cut -= 1;
        }
        shown.truncate(cut);
        shown.push_str("...");
    }
    WorkspaceError::AgentLost(format!("an unexpected answer: {shown}"))
}

#[cfg(test)]
mod tests {
    //! The client against an agent that lies: everything it sends is untrusted.

    use std::io::Write as _;

    use burrow_proto::{ErrorCode, read_frame, write_frame};

    use super::*;

    /// A client connected to a fake agent that greets, then sends `answer` for the first
    /// request (given the request's id).
    fn against(answer: impl FnOnce(u64, &mut UnixStream) + Send + 'static) -> AgentClient {
        let (host, mut agent) = UnixStream::pair().unwrap();
        std::thread::spawn(move || {
            let _hello = read_frame(&mut agent).unwrap();
            write_frame(
                &mut agent,
                &Frame::Message(Message::HelloOk {
                    version: PROTOCOL_VERSION,
                }),
            )
            .unwrap();
            if let Ok(Some(Frame::Message(request))) = read_frame(&mut agent) {
                answer(request.id().unwrap_or(0), &mut agent);
            }
            // Keep the connection open until the client gives up.
            let _ = read_frame(&mut agent);
        });
        AgentClient::over(host).unwrap()
    }

    fn lost(result: Result<impl std::fmt::Debug>) -> String {
        match result {
            Err(WorkspaceError::AgentLost(reason)) => reason,
            other => panic!("expected the agent to be given up on, got {other:?}"),
        }
    }

    #[test]
    fn an_oversized_frame_is_refused_before_it_is_read() {
        let mut client = against(|_, agent| {
            agent.write_all(&u32::MAX.to_le_bytes()).unwrap();
        });
        let reason = lost(client.stat("f"));
        assert!(
            reason.contains("larger") || reason.contains("too large") || reason.contains("4194304"),
            "{reason}"
        );
    }

    #[test]
    fn an_answer_to_another_request_is_refused() {
        let mut client = against(|id, agent| {
            write_frame(agent, &Frame::Message(Message::Done { id: id + 7 })).unwrap();
        });
        lost(client.mkdir("d", false));
    }

    #[test]
    fn more_file_data_than_asked_for_is_refused() {
        let mut client = against(|id, agent| {
            let data = vec![b'x'; 100];
            write_frame(
                agent,
                &Frame::Message(Message::FileData {
                    id,
                    size: 100,
                    offset: 0,
                    len: 100,
                }),
            )
            .unwrap();
            write_frame(
                agent,
                &Frame::Data {
                    id,
                    channel: Channel::File,
                    bytes: data,
                },
            )
            .unwrap();
        });
        lost(client.read_file("f", 0, 10));
    }

    #[test]
    fn file_data_that_does_not_match_its_header_is_refused() {
        let mut client = against(|id, agent| {
            write_frame(
                agent,
                &Frame::Message(Message::FileData {
                    id,
                    size: 5,
                    offset: 0,
                    len: 5,
                }),
            )
            .unwrap();
            write_frame(
                agent,
                &Frame::Data {
                    id,
                    channel: Channel::File,
                    bytes: b"toolong".to_vec(),
                },
            )
            .unwrap();
        });
        lost(client.read_file("f", 0, 5));
    }

    #[test]
    fn an_agents_message_is_cut_to_one_bounded_line() {
        let mut client = against(|id, agent| {
            let message = format!("first line\nsecond\x1b[31m line {}", "y".repeat(5000));
            write_frame(
                agent,
                &Frame::Message(Message::Failed {
                    id,
                    code: ErrorCode::Io,
                    message,
                }),
            )
            .unwrap();
        });
        match client.mkdir("d", false) {
            Err(WorkspaceError::Agent { message, .. }) => {
                assert!(
                    !message.contains('\n') && !message.contains('\x1b'),
                    "{message:?}"
                );
                assert!(message.chars().count() <= 500);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn another_protocol_version_is_refused() {
        let (host, mut agent) = UnixStream::pair().unwrap();
        std::thread::spawn(move || {
            let _hello = read_frame(&mut agent).unwrap();
            write_frame(
                &mut agent,
                &Frame::Message(Message::HelloOk {
                    version: PROTOCOL_VERSION + 1,
                }),
            )
            .unwrap();
            let _ = read_frame(&mut agent);
        });
        let mut client = AgentClient::over(host).unwrap();
        let reason = lost(client.stat("f"));
        assert!(reason.contains("protocol version"), "{reason}");
    }
}

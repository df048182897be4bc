//! The host's side of shells, sessions, services, secrets and published ports. The same rules
//! as for files and commands: every answer must carry its request's id and the sizes it
//! announced.

use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use burrow_output::Stream;
use burrow_proto::service::{ServiceInfo, ServiceMessage, ServiceSpec, ServiceState};
use burrow_proto::session::{SessionInfo, SessionMessage};
use burrow_proto::shell::{ExitStatus, ShellInfo, ShellMessage};
use burrow_proto::{Channel, Frame, Message};

use super::{AgentClient, done, refused, unexpected};
use crate::error::{Result, WorkspaceError};

/// Extra patience beyond a wait the request itself asks for.
const SLACK: Duration = Duration::from_secs(30);

/// What a shell read returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellChunk {
    /// Absolute position of the first byte.
    pub start: u64,
    /// Raw output (not yet redacted).
    pub bytes: Vec<u8>,
    /// Bytes lost between the cursor asked for and `start`.
    pub lost: u64,
    /// Everything the shell produced so far.
    pub end: u64,
    /// Set once the shell has exited.
    pub exit: Option<ExitStatus>,
}

/// How long a shell read waits before answering.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ShellWait {
    /// Until the shell has been quiet this long.
    pub idle: Option<Duration>,
    /// Until there is output past the cursor.
    pub for_data: bool,
    /// The longest either may take.
    pub limit: Duration,
}

/// How a session command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionEnd {
    /// `$?`.
    pub exit_code: Option<i32>,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Set when the session's shell ended.
    pub ended: Option<ExitStatus>,
    /// Whether the shell was replaced.
    pub restarted: bool,
}

/// Log bytes read from a service.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    /// Absolute position of the first byte.
    pub start: u64,
    /// Raw log bytes.
    pub bytes: Vec<u8>,
    /// Bytes no longer kept before `start`.
    pub lost: u64,
    /// Everything logged so far.
    pub end: u64,
    /// The service's state.
    pub state: ServiceState,
}

impl AgentClient {
    fn shell_request(&mut self, message: ShellMessage, patience: Duration) -> Result<ShellMessage> {
        match self.request_within(Message::Shell(message), patience)? {
            Message::Shell(answer) => Ok(answer),
            other => Err(unexpected(&other)),
        }
    }

    fn shell_done(&mut self, message: ShellMessage) -> Result<()> {
        let answer = self.request(Message::Shell(message))?;
        done(&answer)
    }

    /// Starts a shell; returns its name and pid.
    pub fn shell_open(
        &mut self,
        cwd: &str,
        size: (u16, u16),
        env: Vec<(String, String)>,
    ) -> Result<(String, u32)> {
        let id = self.new_id();
        let (cols, rows) = size;
        match self.shell_request(
            ShellMessage::Open {
                id,
                cwd: cwd.to_owned(),
                cols,
                rows,
                env,
            },
            super::ANSWER_TIMEOUT,
        )? {
            ShellMessage::Opened { shell, pid, .. } => Ok((shell, pid)),
            other => Err(unexpected(&Message::Shell(other))),
        }
    }

    /// Reads a shell's output from `cursor`.
    pub fn shell_read(
        &mut self,
        shell: &str,
        cursor: u64,
        max_bytes: u64,
        wait: ShellWait,
    ) -> Result<ShellChunk> {
        let id = self.new_id();
        let request = ShellMessage::Read {
            id,
            shell: shell.to_owned(),
            cursor,
            max_bytes,
            wait_idle_ms: wait.idle.map_or(0, |d| d.as_millis() as u64),
            wait_data: wait.for_data,
            wait_max_ms: wait.limit.as_millis() as u64,
        };
        match self.shell_request(request, wait.limit + SLACK)? {
            ShellMessage::Output {
                start,
                len,
                lost,
                end,
                exit,
                ..
            } if len <= max_bytes => {
                let bytes = self.data_for(id, len)?;
                Ok(ShellChunk {
                    start,
                    bytes,
                    lost,
                    end,
                    exit,
                })
            }
            other => Err(unexpected(&Message::Shell(other))),
        }
    }

    /// The data chunk announced by the answer to request `id`.
    fn data_for(&mut self, id: u64, len: u64) -> Result<Vec<u8>> {
        match self.next_frame(Instant::now() + super::ANSWER_TIMEOUT)? {
            Frame::Data { id: got, bytes, .. } if got == id && bytes.len() as u64 == len => {
                Ok(bytes)
            }
            _ => Err(WorkspaceError::AgentLost(
                "the data did not match its header".to_owned(),
            )),
        }
    }

    /// Types into a shell.
    pub fn shell_write(&mut self, shell: &str, data: &str) -> Result<()> {
        let id = self.new_id();
        self.shell_done(ShellMessage::Write {
            id,
            shell: shell.to_owned(),
            data: data.to_owned(),
        })
    }

    /// Signals a shell's foreground process group.
    pub fn shell_signal(&mut self, shell: &str, signal: i32) -> Result<()> {
        let id = self.new_id();
        self.shell_done(ShellMessage::Signal {
            id,
            shell: shell.to_owned(),
            signal,
        })
    }

    /// Resizes a shell's terminal.
    pub fn shell_resize(&mut self, shell: &str, cols: u16, rows: u16) -> Result<()> {
        let id = self.new_id();
        self.shell_done(ShellMessage::Resize {
            id,
            shell: shell.to_owned(),
            cols,
            rows,
        })
    }

    /// Ends a shell.
    pub fn shell_close(&mut self, shell: &str) -> Result<()> {
        let id = self.new_id();
        self.shell_done(ShellMessage::Close {
            id,
            shell: shell.to_owned(),
        })
    }

    /// Every shell.
    pub fn shell_list(&mut self) -> Result<Vec<ShellInfo>> {
        let id = self.new_id();
        match self.shell_request(ShellMessage::ListAll { id }, super::ANSWER_TIMEOUT)? {
            ShellMessage::List { shells, .. } => Ok(shells),
            other => Err(unexpected(&Message::Shell(other))),
        }
    }

    fn session_request(&mut self, message: SessionMessage) -> Result<SessionMessage> {
        match self.request(Message::Session(message))? {
            Message::Session(answer) => Ok(answer),
            other => Err(unexpected(&other)),
        }
    }

    /// Starts a session; returns its name and its shell's pid.
    pub fn session_open(&mut self, cwd: &str, env: Vec<(String, String)>) -> Result<(String, u32)> {
        let id = self.new_id();
        match self.session_request(SessionMessage::Open {
            id,
            cwd: cwd.to_owned(),
            env,
        })? {
            SessionMessage::Opened { session, pid, .. } => Ok((session, pid)),
            other => Err(unexpected(&Message::Session(other))),
        }
    }

    /// Runs a command line in a session; `chunk` gets its output in order.
    pub fn session_exec(
        &mut self,
        session: &str,
        command: &str,
        timeout: Option<Duration>,
        chunk: &mut dyn FnMut(Stream, &[u8]),
    ) -> Result<SessionEnd> {
        let id = self.new_id();
        self.send(&Frame::Message(Message::Session(SessionMessage::Exec {
            id,
            session: session.to_owned(),
            command: command.to_owned(),
            timeout_ms: timeout.map(|t| t.as_millis() as u64),
        })))?;
        self.check_greeting(Instant::now() + super::ANSWER_TIMEOUT)?;
        // The agent reports a timeout itself (a restart takes a moment more): wait beyond it.
        let deadline = timeout.map(|t| Instant::now() + t + SLACK);
        loop {
            let frame = match deadline {
                Some(deadline) => self.next_frame(deadline)?,
                None => self.next_frame(Instant::now() + Duration::from_secs(24 * 3600))?,
            };
            match frame {
                Frame::Data {
                    id: got,
                    channel,
                    bytes,
                } if got == id => match channel {
                    Channel::Stdout => chunk(Stream::Stdout, &bytes),
                    Channel::Stderr => chunk(Stream::Stderr, &bytes),
                    Channel::Stdin | Channel::File => {}
                },
                Frame::Message(Message::Session(SessionMessage::Result {
                    id: got,
                    exit_code,
                    timed_out,
                    ended,
                    restarted,
                })) if got == id => {
                    return Ok(SessionEnd {
                        exit_code,
                        timed_out,
                        ended,
                        restarted,
                    });
                }
                Frame::Message(Message::Failed {
                    id: got,
                    code,
                    message,
                }) if got == id => return Err(refused(code, &message)),
                Frame::Message(other) => return Err(unexpected(&other)),
                Frame::Data { .. } => {
                    return Err(WorkspaceError::AgentLost(
                        "output for another request arrived during a command".to_owned(),
                    ));
                }
            }
        }
    }

    /// Ends a session.
    pub fn session_close(&mut self, session: &str) -> Result<()> {
        let id = self.new_id();
        let answer = self.request(Message::Session(SessionMessage::Close {
            id,
            session: session.to_owned(),
        }))?;
        done(&answer)
    }

    /// Every session.
    pub fn session_list(&mut self) -> Result<Vec<SessionInfo>> {
        let id = self.new_id();
        match self.session_request(SessionMessage::ListAll { id })? {
            SessionMessage::List { sessions, .. } => Ok(sessions),
            other => Err(unexpected(&Message::Session(other))),
        }
    }

    fn service_status(
        &mut self,
        message: ServiceMessage,
        patience: Duration,
    ) -> Result<ServiceInfo> {
        match self.request_within(Message::Service(message), patience)? {
            Message::Service(ServiceMessage::Status { service, .. }) => Ok(service),
            other => Err(unexpected(&other)),
        }
    }

    /// Starts a service; answers once it is ready or has failed.
    pub fn service_start(&mut self, spec: ServiceSpec) -> Result<ServiceInfo> {
        let id = self.new_id();
        let patience = spec.ready_timeout + SLACK;
        self.service_status(spec.into_message(id), patience)
    }

    /// Stops a service.
    pub fn service_stop(&mut self, name: &str, grace: Duration) -> Result<ServiceInfo> {
        let id = self.new_id();
        self.service_status(
            ServiceMessage::Stop {
                id,
                name: name.to_owned(),
                grace_ms: grace.as_millis() as u64,
            },
            grace + SLACK,
        )
    }

    /// A service's status.
    pub fn service_query(&mut self, name: &str) -> Result<ServiceInfo> {
        let id = self.new_id();
        self.service_status(
            ServiceMessage::Query {
                id,
                name: name.to_owned(),
            },
            super::ANSWER_TIMEOUT,
        )
    }

    /// Every service.
    pub fn service_list(&mut self) -> Result<Vec<ServiceInfo>> {
        let id = self.new_id();
        match self.request(Message::Service(ServiceMessage::ListAll { id }))? {
            Message::Service(ServiceMessage::List { services, .. }) => Ok(services),
            other => Err(unexpected(&other)),
        }
    }

    /// Reads a service's log from `cursor`, waiting up to `wait` for new bytes.
    pub fn service_logs(
        &mut self,
        name: &str,
        cursor: u64,
        max_bytes: u64,
        wait: Duration,
    ) -> Result<LogChunk> {
        let id = self.new_id();
        let request = ServiceMessage::Logs {
            id,
            name: name.to_owned(),
            cursor,
            max_bytes,
            wait_ms: wait.as_millis() as u64,
        };
        match self.request_within(Message::Service(request), wait + SLACK)? {
            Message::Service(ServiceMessage::Log {
                start,
                len,
                lost,
                end,
                state,
                ..
            }) if len <= max_bytes => {
                let bytes = self.data_for(id, len)?;
                Ok(LogChunk {
                    start,
                    bytes,
                    lost,
                    end,
                    state,
                })
            }
            other => Err(unexpected(&other)),
        }
    }

    /// Makes /run/secrets in the cell hold exactly these files.
    pub fn set_secrets(&mut self, files: Vec<(String, Vec<u8>)>) -> Result<()> {
        let id = self.new_id();
        let answer = self.request(Message::SetSecrets { id, files })?;
        done(&answer)
    }

    /// Turns this connection into a byte pipe to `port` on the cell's loopback. Returns the
    /// socket and the bytes from the port that already arrived with the answer.
    pub fn tcp_connect(mut self, port: u16) -> Result<(UnixStream, Vec<u8>)> {
        let id = self.new_id();
        let answer = self.request(Message::TcpConnect { id, port })?;
        done(&answer)?;
        Ok(self.into_stream())
    }
}

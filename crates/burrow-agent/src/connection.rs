//! One connection from the host: a reader that dispatches requests, and a writer that sends
//! every frame (answers, output) in order. When the connection ends, so do the commands it
//! started and the writes it left unfinished.

use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use burrow_proto::{Channel, Decoder, ErrorCode, Frame, MAX_CHUNK, Message, PROTOCOL_VERSION};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::exec::{self, ExecRequest, RunningExec};
use crate::files::{FileError, PendingWrite};

/// Frames queued for the host; beyond this, output waits (and so, in the end, do commands).
const OUTGOING_QUEUE: usize = 64;

/// Entries a listing may return at most, whatever the host asks.
const MAX_ENTRIES: u64 = 100_000;

/// A write waiting for the rest of its data.
struct Incoming {
    pending: PendingWrite,
    remaining: u64,
}

/// What a connection has in flight.
struct Connection {
    agent: Rc<Agent>,
    out: mpsc::Sender<Frame>,
    execs: HashMap<u64, RunningExec>,
    writes: HashMap<u64, Incoming>,
}

/// Serves one connection until the host closes it (or breaks the protocol).
pub async fn serve(agent: Rc<Agent>, stream: UnixStream) {
    let _active = agent.activity.begin();
    let (mut reader, writer) = stream.into_split();
    let (out, frames) = mpsc::channel(OUTGOING_QUEUE);
    let writer_task = tokio::task::spawn_local(write_frames(writer, frames));
    let mut connection = Connection {
        agent,
        out,
        execs: HashMap::new(),
        writes: HashMap::new(),
    };

    let mut decoder = Decoder::new();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut greeted = false;
    // Set when the host turns this connection into a TCP tunnel (a published port).
    let mut tunnel = None;
    'reading: loop {
        let n = match reader.read(&mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        decoder.push(&buffer[..n]);
        loop {
            let frame = match decoder.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => break,
                // A host that breaks the protocol gets no more answers.
                Err(_) => break 'reading,
            };
            match (greeted, frame) {
                (false, Frame::Message(Message::Hello { version })) => {
                    if version != PROTOCOL_VERSION {
                        connection
                            .fail(0, ErrorCode::Invalid, format!("unsupported protocol version {version}; this agent speaks {PROTOCOL_VERSION}"))
                            .await;
                        break 'reading;
                    }
                    greeted = true;
                    connection
                        .send(Message::HelloOk {
                            version: PROTOCOL_VERSION,
                        })
                        .await;
                }
                (false, _) => break 'reading,
                (true, Frame::Message(Message::TcpConnect { id, port })) => {
                    tunnel = Some((id, port, decoder.take_buffered()));
                    break 'reading;
                }
                (true, Frame::Message(message)) => {
                    if !connection.handle(message).await {
                        break 'reading;
                    }
                }
                (true, Frame::Data { id, channel, bytes }) => {
                    connection.data(id, channel, bytes).await;
                }
            }
        }
    }
    // The host is gone: its commands and unfinished writes go with it.
    for exec in connection.execs.values() {
        exec::kill_group(exec.group, libc::SIGKILL);
    }
    let out = connection.out.clone();
    drop(connection);
    if let Some((id, port, early)) = tunnel {
        crate::tunnel::run(id, port, early, reader, out, writer_task).await;
        return;
    }
    drop(out);
    let _ = writer_task.await;
}

/// Sends frames in order until every sender is gone; returns the socket's write half (a
/// tunnel takes it over).
async fn write_frames(
    mut writer: OwnedWriteHalf,
    mut frames: mpsc::Receiver<Frame>,
) -> OwnedWriteHalf {
    while let Some(frame) = frames.recv().await {
        let Ok(bytes) = frame.encode() else {
            continue;
        };
        if writer.write_all(&bytes).await.is_err() {
            break;
        }
    }
    writer
}

impl Connection {
    async fn send(&self, message: Message) {
        let _ = self.out.send(Frame::Message(message)).await;
    }

    async fn fail(&self, id: u64, code: ErrorCode, message: String) {
        self.send(Message::Failed { id, code, message }).await;
    }

    async fn failed(&self, id: u64, error: FileError) {
        self.fail(id, error.code, error.message).await;
    }

    /// Handles one request; false ends the connection.
    async fn handle(&mut self, message: Message) -> bool {
        let workspace = &self.agent.workspace;
        match message {
            Message::Exec {
                id,
                argv,
                env,
                cwd,
                timeout_ms,
                stdin,
            } => {
                let request = ExecRequest {
                    id,
                    argv,
                    env,
                    cwd,
                    timeout: timeout_ms.map(Duration::from_millis),
                    stdin,
                };
                match exec::start(&self.agent, &request, self.out.clone()) {
                    Ok((running, pid)) => {
                        self.execs.insert(id, running);
                        self.send(Message::Started { id, pid }).await;
                    }
                    Err(errno) => self.send(Message::ExecFailed { id, errno }).await,
                }
            }
            Message::Signal { id, signal } => {
                if let Some(exec) = self.execs.get(&id) {
                    exec::kill_group(exec.group, signal);
                }
            }
            Message::CloseStdin { id } => {
                if let Some(exec) = self.execs.get_mut(&id) {
                    exec.stdin = None;
                }
            }
            Message::ReadFile {
                id,
                path,
                offset,
                max_bytes,
            } => match workspace.read(&path, offset, max_bytes.min(MAX_CHUNK as u64)) {
                Ok((size, bytes)) => {
                    self.send(Message::FileData {
                        id,
                        size,
                        offset,
                        len: bytes.len() as u64,
                    })
                    .await;
                    let _ = self
                        .out
                        .send(Frame::Data {
                            id,
                            channel: Channel::File,
                            bytes,
                        })
                        .await;
                }
                Err(error) => self.failed(id, error).await,
            },
            Message::WriteFile {
                id,
                path,
                size,
                mode,
                parents,
            } => {
                if size > self.agent.max_write {
                    self.fail(
                        id,
                        ErrorCode::TooLarge,
                        format!(
                            "{path}: {size} bytes is more than the {} a write may carry",
                            self.agent.max_write
                        ),
                    )
                    .await;
                    return true;
                }
                match workspace.begin_write(&path, mode, parents) {
                    Ok(pending) if size == 0 => match pending.commit() {
                        Ok(()) => self.send(Message::Done { id }).await,
                        Err(error) => self.failed(id, error).await,
                    },
                    Ok(pending) => {
                        self.writes.insert(
                            id,
                            Incoming {
                                pending,
                                remaining: size,
                            },
                        );
                    }
                    Err(error) => self.failed(id, error).await,
                }
            }
            Message::List {
                id,
                path,
                recursive,
                max_entries,
            } => match workspace.list(&path, recursive, max_entries.min(MAX_ENTRIES) as usize) {
                Ok((entries, truncated)) => {
                    self.send(Message::Entries {
                        id,
                        entries,
                        truncated,
                    })
                    .await;
                }
                Err(error) => self.failed(id, error).await,
            },
            Message::Stat { id, path } => match workspace.stat(&path) {
                Ok(entry) => {
                    self.send(Message::Entries {
                        id,
                        entries: vec![entry],
                        truncated: false,
                    })
                    .await;
                }
                Err(error) => self.failed(id, error).await,
            },
            Message::Remove {
                id,
                path,
                recursive,
            } => {
                self.done_or_failed(id, workspace.remove(&path, recursive))
                    .await;
            }
            Message::Mkdir { id, path, parents } => {
                self.done_or_failed(id, workspace.mkdir(&path, parents))
                    .await;
            }
            Message::Symlink { id, path, target } => {
                self.done_or_failed(id, workspace.symlink(&path, &target))
                    .await;
            }
            Message::Shutdown => {
                self.agent.kill_all();
                std::process::exit(0);
            }
            Message::SetSecrets { id, files } => match crate::secrets::install(&files) {
                Ok(()) => self.send(Message::Done { id }).await,
                Err(message) => self.fail(id, ErrorCode::Io, message).await,
            },
            Message::Shell(request) => crate::requests::shell(&self.agent, request, &self.out),
            Message::Session(request) => crate::requests::session(&self.agent, request, &self.out),
            Message::Service(request) => crate::requests::service(&self.agent, request, &self.out),
            // Handled by the reading loop (it changes what the connection is).
            Message::TcpConnect { .. } => {}
            // Messages only the agent sends, or a second hello: the host is confused.
            Message::Hello { .. }
            | Message::HelloOk { .. }
            | Message::Started { .. }
            | Message::Exited { .. }
            | Message::ExecFailed { .. }
            | Message::FileData { .. }
            | Message::Entries { .. }
            | Message::Done { .. }
            | Message::Failed { .. } => return false,
        }
        true
    }

    async fn done_or_failed(&self, id: u64, result: Result<(), FileError>) {
        match result {
            Ok(()) => self.send(Message::Done { id }).await,
            Err(error) => self.failed(id, error).await,
        }
    }

    /// A data chunk: stdin for a command, or the next part of a write.
    async fn data(&mut self, id: u64, channel: Channel, bytes: Vec<u8>) {
        match channel {
            Channel::Stdin => {
                if let Some(sender) = self.execs.get(&id).and_then(|exec| exec.stdin.clone()) {
                    let _ = sender.send(bytes).await;
                }
            }
            Channel::File => {
                let Some(mut incoming) = self.writes.remove(&id) else {
                    return;
                };
                if bytes.len() as u64 > incoming.remaining {
                    self.fail(
                        id,
                        ErrorCode::Invalid,
                        "more data than the write announced".to_owned(),
                    )
                    .await;
                    return;
                }
                if let Err(error) = incoming.pending.write(&bytes) {
                    self.failed(id, error).await;
                    return;
                }
                incoming.remaining -= bytes.len() as u64;
                if incoming.remaining == 0 {
                    let result = incoming.pending.commit();
                    self.done_or_failed(id, result).await;
                } else {
                    self.writes.insert(id, incoming);
                }
            }
            // Output channels only flow from the agent.
            Channel::Stdout | Channel::Stderr => {}
        }
    }
}

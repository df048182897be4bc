//! Requests about shells, sessions and services. Each runs in a task of its own: a read that
//! waits for output, a command in a session or a service becoming ready may take long, and the
//! connection keeps serving other requests meanwhile.

use std::rc::Rc;
use std::time::Duration;

use burrow_proto::service::ServiceMessage;
use burrow_proto::session::SessionMessage;
use burrow_proto::shell::ShellMessage;
use burrow_proto::{Channel, ErrorCode, Frame, MAX_CHUNK, Message};
use tokio::sync::mpsc;

use crate::agent::Agent;
use crate::services::ServiceSpec;
use crate::sessions::Stream;
use crate::shells::MAX_WAIT;
use crate::unknown::Unknown;

/// Shell requests.
pub fn shell(agent: &Rc<Agent>, request: ShellMessage, out: &mpsc::Sender<Frame>) {
    let agent = Rc::clone(agent);
    let out = out.clone();
    tokio::task::spawn_local(async move {
        let id = request.id();
        let answer = match request {
            ShellMessage::Open {
                id,
                cwd,
                cols,
                rows,
                env,
            } => agent
                .shells
                .open(&agent, &cwd, (cols, rows), &env)
                .map(|(shell, pid)| vec![shell_frame(ShellMessage::Opened { id, shell, pid })])
                .map_err(Refusal::from),
            ShellMessage::Read {
                id,
                shell,
                cursor,
                max_bytes,
                wait_idle_ms,
                wait_data,
                wait_max_ms,
            } => match agent.shells.get(&shell) {
                Ok(shell) => {
                    let limit = Duration::from_millis(wait_max_ms).min(MAX_WAIT);
                    if wait_data {
                        shell.output.wait_for_data(cursor, limit).await;
                    }
                    if wait_idle_ms > 0 {
                        shell
                            .output
                            .wait_for_quiet(Duration::from_millis(wait_idle_ms), limit)
                            .await;
                    }
                    let slice = shell.output.read(cursor, max_bytes.min(MAX_CHUNK as u64));
                    Ok(vec![
                        shell_frame(ShellMessage::Output {
                            id,
                            start: slice.start,
                            len: slice.bytes.len() as u64,
                            lost: slice.lost,
                            end: slice.end,
                            exit: shell.exit.get(),
                        }),
                        Frame::Data {
                            id,
                            channel: Channel::Stdout,
                            bytes: slice.bytes,
                        },
                    ])
                }
                Err(unknown) => Err(unknown.into()),
            },
            ShellMessage::Write { id, shell, data } => match agent.shells.get(&shell) {
                Ok(shell) => shell
                    .write(data.as_bytes())
                    .await
                    .map(|()| done(id))
                    .map_err(Refusal::from),
                Err(unknown) => Err(unknown.into()),
            },
            ShellMessage::Signal { id, shell, signal } => agent
                .shells
                .get(&shell)
                .map(|shell| {
                    shell.signal(signal);
                    done(id)
                })
                .map_err(Refusal::from),
            ShellMessage::Resize {
                id,
                shell,
                cols,
                rows,
            } => match agent.shells.get(&shell) {
                Ok(shell) => shell
                    .resize((cols, rows))
                    .map(|()| done(id))
                    .map_err(Refusal::from),
                Err(unknown) => Err(unknown.into()),
            },
            ShellMessage::Close { id, shell } => agent
                .shells
                .close(&shell)
                .map(|()| done(id))
                .map_err(Refusal::from),
            ShellMessage::ListAll { id } => Ok(vec![shell_frame(ShellMessage::List {
                id,
                shells: agent.shells.list(),
            })]),
            // Only the agent sends these.
            ShellMessage::Opened { .. }
            | ShellMessage::Output { .. }
            | ShellMessage::List { .. } => Err(Refusal::from("not a request".to_owned())),
        };
        send_all(&out, id, answer).await;
    });
}

/// Session requests.
pub fn session(agent: &Rc<Agent>, request: SessionMessage, out: &mpsc::Sender<Frame>) {
    let agent = Rc::clone(agent);
    let out = out.clone();
    tokio::task::spawn_local(async move {
        let id = request.id();
        let answer = match request {
            SessionMessage::Open { id, cwd, env } => agent
                .sessions
                .open(&agent, &cwd, &env)
                .map(|(session, pid)| {
                    vec![session_frame(SessionMessage::Opened { id, session, pid })]
                })
                .map_err(Refusal::from),
            SessionMessage::Exec {
                id,
                session,
                command,
                timeout_ms,
            } => match agent.sessions.get(&session) {
                Ok(session) => {
                    let _busy = agent.activity.begin();
                    // Output goes out as it comes, through the connection's ordered queue.
                    let (chunks, mut queued) = mpsc::unbounded_channel::<Frame>();
                    let forward_out = out.clone();
                    let forwarder = tokio::task::spawn_local(async move {
                        while let Some(frame) = queued.recv().await {
                            let _ = forward_out.send(frame).await;
                        }
                    });
                    let mut chunk = |stream: Stream, bytes: Vec<u8>| {
                        let channel = match stream {
                            Stream::Stdout => Channel::Stdout,
                            Stream::Stderr => Channel::Stderr,
                        };
                        for piece in bytes.chunks(MAX_CHUNK) {
                            let _ = chunks.send(Frame::Data {
                                id,
                                channel,
                                bytes: piece.to_vec(),
                            });
                        }
                    };
                    let result = session
                        .exec(
                            &agent,
                            &command,
                            timeout_ms.map(Duration::from_millis),
                            &mut chunk,
                        )
                        .await;
                    drop(chunks);
                    let _ = forwarder.await;
                    result
                        .map(|end| {
                            vec![session_frame(SessionMessage::Result {
                                id,
                                exit_code: end.exit_code,
                                timed_out: end.timed_out,
                                ended: end.ended,
                                restarted: end.restarted,
                            })]
                        })
                        .map_err(Refusal::from)
                }
                Err(unknown) => Err(unknown.into()),
            },
            SessionMessage::Close { id, session } => agent
                .sessions
                .close(&session)
                .map(|()| done(id))
                .map_err(Refusal::from),
            SessionMessage::ListAll { id } => Ok(vec![session_frame(SessionMessage::List {
                id,
                sessions: agent.sessions.list(),
            })]),
            SessionMessage::Opened { .. }
            | SessionMessage::Result { .. }
            | SessionMessage::List { .. } => Err(Refusal::from("not a request".to_owned())),
        };
        send_all(&out, id, answer).await;
    });
}

/// Service requests.
pub fn service(agent: &Rc<Agent>, request: ServiceMessage, out: &mpsc::Sender<Frame>) {
    let agent = Rc::clone(agent);
    let out = out.clone();
    tokio::task::spawn_local(async move {
        let id = request.id();
        let answer = match request {
            ServiceMessage::Start {
                id,
                name,
                argv,
                cwd,
                env,
                ready,
                ready_timeout_ms,
                interval_ms,
                restart,
            } => {
                let spec = ServiceSpec {
                    name,
                    argv,
                    cwd,
                    env,
                    ready,
                    ready_timeout: Duration::from_millis(ready_timeout_ms),
                    interval: Duration::from_millis(interval_ms.max(10)),
                    restart,
                };
                agent
                    .services
                    .start(&agent, spec)
                    .await
                    .map(|service| vec![service_frame(ServiceMessage::Status { id, service })])
                    .map_err(Refusal::from)
            }
            ServiceMessage::Stop { id, name, grace_ms } => match agent.services.get(&name) {
                Ok(service) => {
                    let service = service.stop(Duration::from_millis(grace_ms)).await;
                    Ok(vec![service_frame(ServiceMessage::Status { id, service })])
                }
                Err(unknown) => Err(unknown.into()),
            },
            ServiceMessage::Query { id, name } => agent
                .services
                .get(&name)
                .map(|service| {
                    vec![service_frame(ServiceMessage::Status {
                        id,
                        service: service.info(),
                    })]
                })
                .map_err(Refusal::from),
            ServiceMessage::ListAll { id } => Ok(vec![service_frame(ServiceMessage::List {
                id,
                services: agent.services.list(),
            })]),
            ServiceMessage::Logs {
                id,
                name,
                cursor,
                max_bytes,
                wait_ms,
            } => match agent.services.get(&name) {
                Ok(service) => {
                    if wait_ms > 0 {
                        let limit = Duration::from_millis(wait_ms).min(MAX_WAIT);
                        service.log.wait_for_data(cursor, limit).await;
                    }
                    let slice = service.log.read(cursor, max_bytes.min(MAX_CHUNK as u64));
                    Ok(vec![
                        service_frame(ServiceMessage::Log {
                            id,
                            start: slice.start,
                            len: slice.bytes.len() as u64,
                            lost: slice.lost,
                            end: slice.end,
                            state: service.state(),
                        }),
                        Frame::Data {
                            id,
                            channel: Channel::Stdout,
                            bytes: slice.bytes,
                        },
                    ])
                }
                Err(unknown) => Err(unknown.into()),
            },
            ServiceMessage::Status { .. }
            | ServiceMessage::List { .. }
            | ServiceMessage::Log { .. } => Err(Refusal::from("not a request".to_owned())),
        };
        send_all(&out, id, answer).await;
    });
}

fn shell_frame(message: ShellMessage) -> Frame {
    Frame::Message(Message::Shell(message))
}

fn session_frame(message: SessionMessage) -> Frame {
    Frame::Message(Message::Session(message))
}

fn service_frame(message: ServiceMessage) -> Frame {
    Frame::Message(Message::Service(message))
}

fn done(id: u64) -> Vec<Frame> {
    vec![Frame::Message(Message::Done { id })]
}

/// Why a request was refused: a code the client can act on, and a line for people.
struct Refusal {
    code: ErrorCode,
    message: String,
}

impl From<Unknown> for Refusal {
    fn from(unknown: Unknown) -> Refusal {
        Refusal {
            code: ErrorCode::NotFound,
            message: unknown.0,
        }
    }
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal {
            code: ErrorCode::Invalid,
            message,
        }
    }
}

async fn send_all(out: &mpsc::Sender<Frame>, id: u64, answer: Result<Vec<Frame>, Refusal>) {
    let frames = answer.unwrap_or_else(|refusal| {
        vec![Frame::Message(Message::Failed {
            id,
            code: refusal.code,
            message: refusal.message,
        })]
    });
    for frame in frames {
        let _ = out.send(frame).await;
    }
}

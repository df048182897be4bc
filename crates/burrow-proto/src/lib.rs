//! The protocol between burrow and the agent that runs as PID 1 inside a workspace's cell.
//!
//! A connection is a unix stream socket. Both sides send [`Frame`]s: a little-endian `u32`
//! length, then either a JSON [`Message`] or a chunk of raw bytes tagged with a request id and
//! a [`Channel`]. The first message is [`Message::Hello`], answered by [`Message::HelloOk`] with
//! the agent's [`PROTOCOL_VERSION`]; requests then carry ids chosen by the host, and every
//! answer, output chunk and final status carries its request's id, so several requests can be in
//! flight on one connection. The full description is in docs/protocol.md.
//!
//! The agent runs beside untrusted code, so the host treats everything it sends as untrusted:
//! frames are bounded ([`MAX_FRAME`]) and checked before anything is allocated.
//!
//! ```
//! use burrow_proto::{Decoder, Frame, Message, PROTOCOL_VERSION};
//!
//! let bytes = Frame::Message(Message::Hello { version: PROTOCOL_VERSION }).encode()?;
//! let mut decoder = Decoder::new();
//! decoder.push(&bytes);
//! assert_eq!(
//!     decoder.next_frame()?,
//!     Some(Frame::Message(Message::Hello { version: PROTOCOL_VERSION }))
//! );
//! # Ok::<(), burrow_proto::ProtocolError>(())
//! ```
#![deny(missing_docs)]

mod error;
mod frame;
mod message;
pub mod service;
pub mod session;
pub mod shell;

pub use error::ProtocolError;
pub use frame::{Channel, Decoder, Frame, MAX_CHUNK, MAX_FRAME, read_frame, write_frame};
pub use message::{Entry, EntryKind, ErrorCode, Message, PROTOCOL_VERSION};

/// Prefix of the temporary files the agent's writes go through before they are renamed into
/// place; the host sweeps leftovers of a cell that died mid-write before the next start.
pub const WRITE_TEMP_PREFIX: &str = ".burrow-write-";

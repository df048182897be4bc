//! Framing: every frame is a little-endian `u32` length, then that many bytes of payload.
//!
//! The payload's first byte says what it is: a JSON [`Message`](crate::Message), or a chunk of
//! raw bytes belonging to a request (command output, stdin, file contents), so that data needs
//! no base64. Lengths are checked before anything is allocated: a peer cannot make the other
//! side buffer more than [`MAX_FRAME`] bytes.

use std::io::{self, Read, Write};

use crate::error::ProtocolError;
use crate::message::Message;

/// The largest payload a frame may carry.
pub const MAX_FRAME: usize = 4 * 1024 * 1024;

/// The largest data chunk: data is split into chunks of at most this many bytes.
pub const MAX_CHUNK: usize = 1024 * 1024;

const KIND_MESSAGE: u8 = 1;
const KIND_DATA: u8 = 2;

/// Which byte stream a data chunk belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    /// The command's standard input (host to agent).
    Stdin,
    /// The command's standard output (agent to host).
    Stdout,
    /// The command's standard error (agent to host).
    Stderr,
    /// File contents, either way.
    File,
}

impl Channel {
    fn to_byte(self) -> u8 {
        match self {
            Channel::Stdin => 0,
            Channel::Stdout => 1,
            Channel::Stderr => 2,
            Channel::File => 3,
        }
    }

    fn from_byte(byte: u8) -> Option<Channel> {
        match byte {
            0 => Some(Channel::Stdin),
            1 => Some(Channel::Stdout),
            2 => Some(Channel::Stderr),
            3 => Some(Channel::File),
            _ => None,
        }
    }
}

/// One frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A control message.
    Message(Message),
    /// Raw bytes for request `id` on `channel`.
    Data {
        /// The request the bytes belong to.
        id: u64,
        /// Which stream.
        channel: Channel,
        /// The bytes (at most [`MAX_CHUNK`]).
        bytes: Vec<u8>,
    },
}

impl Frame {
    /// The frame, length prefix included, as bytes to write.
    pub fn encode(&self) -> Result<Vec<u8>, ProtocolError> {
        let mut out = vec![0u8; 4];
        match self {
            Frame::Message(message) => {
                out.push(KIND_MESSAGE);
                serde_json::to_writer(&mut out, message)
                    .map_err(|error| ProtocolError::Encode(error.to_string()))?;
            }
            Frame::Data { id, channel, bytes } => {
                if bytes.len() > MAX_CHUNK {
                    return Err(ProtocolError::TooLarge(bytes.len()));
                }
                out.push(KIND_DATA);
                out.extend_from_slice(&id.to_le_bytes());
                out.push(channel.to_byte());
                out.extend_from_slice(bytes);
            }
        }
        let payload = out.len() - 4;
        if payload > MAX_FRAME {
            return Err(ProtocolError::TooLarge(payload));
        }
        out[..4].copy_from_slice(&(payload as u32).to_le_bytes());
        Ok(out)
    }

    /// Decodes one payload (without its length prefix).
    fn decode(payload: &[u8]) -> Result<Frame, ProtocolError> {
        match payload.split_first() {
            Some((&KIND_MESSAGE, json)) => serde_json::from_slice(json)
                .map(Frame::Message)
                .map_err(|error| ProtocolError::Malformed(error.to_string())),
            Some((&KIND_DATA, rest)) if rest.len() >= 9 => {
                let mut id = [0u8; 8];
                id.copy_from_slice(&rest[..8]);
                let channel = Channel::from_byte(rest[8]).ok_or_else(|| {
                    ProtocolError::Malformed(format!("unknown data channel {}", rest[8]))
                })?;
                Ok(Frame::Data {
                    id: u64::from_le_bytes(id),
                    channel,
                    bytes: rest[9..].to_vec(),
                })
            }
            Some((kind, _)) => Err(ProtocolError::Malformed(format!(
                "unknown frame kind {kind}"
            ))),
            None => Err(ProtocolError::Malformed("empty frame".to_owned())),
        }
    }
}

/// Turns bytes arriving in any pieces into frames; for non-blocking and async readers.
#[derive(Debug, Default)]
pub struct Decoder {
    buffer: Vec<u8>,
}

impl Decoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Takes the bytes received but not yet decoded (when the connection stops carrying
    /// frames, as a tunnel does).
    pub fn take_buffered(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buffer)
    }

    /// Adds bytes read from the peer.
    pub fn push(&mut self, bytes: &[u8]) {
        self.buffer.extend_from_slice(bytes);
    }

    /// The next complete frame, if one has arrived.
    pub fn next_frame(&mut self) -> Result<Option<Frame>, ProtocolError> {
        let Some(prefix) = self.buffer.get(..4) else {
            return Ok(None);
        };
        let mut length = [0u8; 4];
        length.copy_from_slice(prefix);
        let length = u32::from_le_bytes(length) as usize;
        if length > MAX_FRAME {
            return Err(ProtocolError::TooLarge(length));
        }
        if self.buffer.len() < 4 + length {
            return Ok(None);
        }
        let frame = Frame::decode(&self.buffer[4..4 + length]);
        self.buffer.drain(..4 + length);
        frame.map(Some)
    }

    /// Whether bytes of an incomplete frame are buffered.
    pub fn is_mid_frame(&self) -> bool {
        !self.buffer.is_empty()
    }
}

/// Writes one frame to a blocking writer.
pub fn write_frame(writer: &mut impl Write, frame: &Frame) -> Result<(), ProtocolError> {
    writer.write_all(&frame.encode()?)?;
    Ok(())
}

/// Reads one frame from a blocking reader; `Ok(None)` at a clean end of stream.
pub fn read_frame(reader: &mut impl Read) -> Result<Option<Frame>, ProtocolError> {
    let mut prefix = [0u8; 4];
    match read_exactly(reader, &mut prefix)? {
        0 => return Ok(None),
        4 => {}
        _ => return Err(ProtocolError::Truncated),
    }
    let length = u32::from_le_bytes(prefix) as usize;
    if length > MAX_FRAME {
        return Err(ProtocolError::TooLarge(length));
    }
    let mut payload = vec![0u8; length];
    if read_exactly(reader, &mut payload)? != length {
        return Err(ProtocolError::Truncated);
    }
    Frame::decode(&payload).map(Some)
}

/// Fills `buffer` unless the stream ends first; returns how much was read.
fn read_exactly(reader: &mut impl Read, buffer: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Message;

    fn frames() -> Vec<Frame> {
        vec![
            Frame::Message(Message::Hello { version: 1 }),
            Frame::Data {
                id: 7,
                channel: Channel::Stderr,
                bytes: b"\x00\xffbinary".to_vec(),
            },
            Frame::Data {
                id: u64::MAX,
                channel: Channel::File,
                bytes: Vec::new(),
            },
        ]
    }

    #[test]
    fn frames_round_trip_in_any_pieces() {
        let mut wire = Vec::new();
        for frame in frames() {
            wire.extend(frame.encode().unwrap());
        }
        for piece in [1, 3, 7, wire.len()] {
            let mut decoder = Decoder::new();
            let mut decoded = Vec::new();
            for chunk in wire.chunks(piece) {
                decoder.push(chunk);
                while let Some(frame) = decoder.next_frame().unwrap() {
                    decoded.push(frame);
                }
            }
            assert_eq!(decoded, frames());
            assert!(!decoder.is_mid_frame());
        }
        let mut reader = wire.as_slice();
        let mut decoded = Vec::new();
        while let Some(frame) = read_frame(&mut reader).unwrap() {
            decoded.push(frame);
        }
        assert_eq!(decoded, frames());
    }

    #[test]
    fn oversize_frames_are_refused_before_allocating() {
        let mut decoder = Decoder::new();
        decoder.push(&(MAX_FRAME as u32 + 1).to_le_bytes());
        assert!(matches!(
            decoder.next_frame(),
            Err(ProtocolError::TooLarge(_))
        ));
        let wire = u32::MAX.to_le_bytes();
        assert!(matches!(
            read_frame(&mut wire.as_slice()),
            Err(ProtocolError::TooLarge(_))
        ));
        let chunk = Frame::Data {
            id: 1,
            channel: Channel::File,
            bytes: vec![0; MAX_CHUNK + 1],
        };
        assert!(chunk.encode().is_err());
    }

    #[test]
    fn malformed_and_truncated_frames_are_errors() {
        for payload in [
            &[9u8][..],
            &[KIND_DATA, 1, 2][..],
            &[KIND_MESSAGE, b'{'][..],
            &[][..],
        ] {
            let mut wire = (payload.len() as u32).to_le_bytes().to_vec();
            wire.extend_from_slice(payload);
            assert!(read_frame(&mut wire.as_slice()).is_err(), "{payload:?}");
        }
        let mut wire = 10u32.to_le_bytes().to_vec();
        wire.extend_from_slice(b"abc");
        assert!(matches!(
            read_frame(&mut wire.as_slice()),
            Err(ProtocolError::Truncated)
        ));
    }
}

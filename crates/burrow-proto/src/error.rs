//! Protocol errors.

/// What went wrong on the wire.
#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    /// Reading or writing the connection failed.
    #[error("the connection failed: {0}")]
    Io(#[from] std::io::Error),
    /// A frame is larger than the protocol allows.
    #[error("a frame of {0} bytes is larger than the protocol allows")]
    TooLarge(usize),
    /// The connection ended in the middle of a frame.
    #[error("the connection ended in the middle of a frame")]
    Truncated,
    /// A frame could not be decoded.
    #[error("a malformed frame: {0}")]
    Malformed(String),
    /// A message could not be encoded.
    #[error("cannot encode a message: {0}")]
    Encode(String),
}

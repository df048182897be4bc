//! Capped capture of a sandboxed command's output.
//!
//! Every byte a command writes to stdout or stderr goes through a
//! [`Capture`]: it keeps the head and the tail of the stream, counts what it
//! drops in between, and never stops reading because a cap was reached. Memory
//! is bounded by [`CaptureLimits::max_bytes`] whatever the stream's length.
//!
//! ```
//! use burrow_output::{Capture, CaptureLimits, Omitted};
//!
//! let mut capture = Capture::new(CaptureLimits { max_bytes: 8, max_lines: None });
//! capture.push(b"hello, ");
//! capture.push(b"world\n");
//! let captured = capture.finish();
//!
//! assert_eq!(captured.head, b"hell");
//! assert_eq!(captured.tail, b"rld\n");
//! assert_eq!(captured.omitted, Some(Omitted { bytes: 5, lines: 1 }));
//! assert_eq!(
//!     captured.to_string_lossy(),
//!     "hell\n[... burrow omitted 5 bytes, 1 line ...]\nrld\n",
//! );
//! ```
//!
//! [`CaptureSink`] does the same for both streams of a command, as an
//! [`OutputSink`].
#![deny(missing_docs)]

mod bounded;
mod capture;
mod captured;
mod limits;
mod sink;
mod tail_ring;
pub mod terminal_text;
mod text;

pub use capture::Capture;
pub use captured::{Captured, Omitted};
pub use limits::CaptureLimits;
pub use sink::{CaptureSink, OutputSink, Stream};

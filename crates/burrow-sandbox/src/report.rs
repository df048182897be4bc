//! Messages from a cell's init (and the command's child before exec) back to burrow.
//!
//! They travel over a pipe whose write end only the init holds; the init is non-dumpable, so the
//! command cannot reach that descriptor through /proc. burrow still parses defensively: a
//! message is a fixed header and a bounded payload, and anything malformed ends the stream.

use std::io::{self, Read};
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::error::Step;

/// Longest payload (path or message) a report carries.
const MAX_DETAIL: usize = 512;

/// One message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Report {
    /// A set-up step failed; the cell is gone.
    SetupFailed {
        step: Step,
        errno: i32,
        detail: String,
    },
    /// A layer could not be applied and the policy allowed running without it.
    Degraded { step: Step, detail: String },
    /// The command could not be executed.
    ExecFailed { errno: i32, program: String },
    /// The command ended with this wait status.
    Exited { wait_status: i32 },
}

const KIND_SETUP_FAILED: u8 = 1;
const KIND_DEGRADED: u8 = 2;
const KIND_EXEC_FAILED: u8 = 3;
const KIND_EXITED: u8 = 4;

impl Report {
    /// Encodes the message: kind, step, value (i32 LE), detail length (u16 LE), detail.
    fn encode(&self, out: &mut [u8; 8 + MAX_DETAIL]) -> usize {
        let (kind, step, value, detail) = match self {
            Report::SetupFailed {
                step,
                errno,
                detail,
            } => (KIND_SETUP_FAILED, step.wire(), *errno, detail.as_str()),
            Report::Degraded { step, detail } => (KIND_DEGRADED, step.wire(), 0, detail.as_str()),
            Report::ExecFailed { errno, program } => {
                (KIND_EXEC_FAILED, 0, *errno, program.as_str())
            }
            Report::Exited { wait_status } => (KIND_EXITED, 0, *wait_status, ""),
        };
        let detail = truncate_at_char_boundary(detail, MAX_DETAIL);
        out[0] = kind;
        out[1] = step;
        out[2..6].copy_from_slice(&value.to_le_bytes());
        out[6..8].copy_from_slice(&(detail.len() as u16).to_le_bytes());
        out[8..8 + detail.len()].copy_from_slice(detail.as_bytes());
        8 + detail.len()
    }

    /// Writes the message with a single write(2), so messages from two processes sharing the
    /// pipe never interleave (writes up to PIPE_BUF bytes are atomic).
    pub(crate) fn send(&self, fd: BorrowedFd<'_>) {
        let mut buffer = [0u8; 8 + MAX_DETAIL];
        let len = self.encode(&mut buffer);
        // Nothing useful can be done if the parent is gone; the exit status still tells.
        // SAFETY: writing `len` initialised bytes from `buffer`.
        let _ = unsafe { libc::write(fd.as_raw_fd(), buffer.as_ptr().cast(), len) };
    }

    /// Reads every message until end of file or the first malformed one.
    pub(crate) fn read_all(mut source: impl Read) -> Vec<Report> {
        let mut bytes = Vec::new();
        // Bounded: the init sends a handful of messages; a flood is cut off.
        if source
            .by_ref()
            .take(64 * 1024)
            .read_to_end(&mut bytes)
            .is_err()
        {
            return Vec::new();
        }
        let mut reports = Vec::new();
        let mut rest = bytes.as_slice();
        while rest.len() >= 8 {
            let kind = rest[0];
            let step = Step::from_u8(rest[1]);
            let value = i32::from_le_bytes([rest[2], rest[3], rest[4], rest[5]]);
            let len = usize::from(u16::from_le_bytes([rest[6], rest[7]]));
            if len > MAX_DETAIL || rest.len() < 8 + len {
                break;
            }
            let detail = String::from_utf8_lossy(&rest[8..8 + len]).into_owned();
            rest = &rest[8 + len..];
            let report = match (kind, step) {
                (KIND_SETUP_FAILED, Some(step)) => Report::SetupFailed {
                    step,
                    errno: value,
                    detail,
                },
                (KIND_DEGRADED, Some(step)) => Report::Degraded { step, detail },
                (KIND_EXEC_FAILED, _) => Report::ExecFailed {
                    errno: value,
                    program: detail,
                },
                (KIND_EXITED, _) => Report::Exited { wait_status: value },
                _ => break,
            };
            reports.push(report);
        }
        reports
    }
}

/// The error a failed set-up step carries from the child.
pub(crate) struct StepError {
    pub(crate) step: Step,
    pub(crate) source: io::Error,
    pub(crate) detail: String,
}

impl StepError {
    /// The message for burrow. An error without an errno (one of burrow's own checks) travels
    /// as errno 0 with its text in the detail.
    pub(crate) fn report(&self) -> Report {
        match self.source.raw_os_error() {
            Some(errno) => Report::SetupFailed {
                step: self.step,
                errno,
                detail: self.detail.clone(),
            },
            None => Report::SetupFailed {
                step: self.step,
                errno: 0,
                detail: if self.detail.is_empty() {
                    self.source.to_string()
                } else {
                    format!("{}: {}", self.detail, self.source)
                },
            },
        }
    }
}

/// Attaches a step (and optionally what it worked on) to an io::Result.
pub(crate) trait AtStep<T> {
    fn at(self, step: Step) -> Result<T, StepError>;
    fn at_path(self, step: Step, path: &std::path::Path) -> Result<T, StepError>;
}

impl<T> AtStep<T> for io::Result<T> {
    fn at(self, step: Step) -> Result<T, StepError> {
        self.map_err(|source| StepError {
            step,
            source,
            detail: String::new(),
        })
    }

    fn at_path(self, step: Step, path: &std::path::Path) -> Result<T, StepError> {
        self.map_err(|source| StepError {
            step,
            source,
            detail: path.display().to_string(),
        })
    }
}

impl<T> AtStep<T> for rustix::io::Result<T> {
    fn at(self, step: Step) -> Result<T, StepError> {
        self.map_err(io::Error::from).at(step)
    }

    fn at_path(self, step: Step, path: &std::path::Path) -> Result<T, StepError> {
        self.map_err(io::Error::from).at_path(step, path)
    }
}

fn truncate_at_char_boundary(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(reports: &[Report]) -> Vec<Report> {
        let mut wire = Vec::new();
        for report in reports {
            let mut buffer = [0u8; 8 + MAX_DETAIL];
            let len = report.encode(&mut buffer);
            wire.extend_from_slice(&buffer[..len]);
        }
        Report::read_all(wire.as_slice())
    }

    #[test]
    fn messages_round_trip() {
        let reports = vec![
            Report::Degraded {
                step: Step::Landlock,
                detail: "not enforced".into(),
            },
            Report::ExecFailed {
                errno: libc::ENOENT,
                program: "nosuch".into(),
            },
            Report::Exited {
                wait_status: 0x0100,
            },
            Report::SetupFailed {
                step: Step::MountProc,
                errno: libc::EPERM,
                detail: String::new(),
            },
        ];
        assert_eq!(round_trip(&reports), reports);
    }

    #[test]
    fn long_details_are_cut_at_a_character_boundary() {
        let program = "é".repeat(400);
        let decoded = round_trip(&[Report::ExecFailed { errno: 2, program }]);
        let Report::ExecFailed { program, .. } = &decoded[0] else {
            panic!("{decoded:?}");
        };
        assert_eq!(program.len(), MAX_DETAIL);
        assert!(program.chars().all(|c| c == 'é'));
    }

    #[test]
    fn malformed_input_ends_the_stream() {
        assert!(Report::read_all(&[9u8, 0, 0, 0, 0, 0, 0, 0][..]).is_empty());
        // A length pointing past the end.
        assert!(Report::read_all(&[KIND_EXITED, 0, 0, 0, 0, 0, 0xff, 0x01][..]).is_empty());
    }
}

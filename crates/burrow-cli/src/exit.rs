//! burrow's exit codes and how a failure becomes one line on stderr.

use std::process::ExitCode;

/// burrow itself failed (bad input, or a layer that cannot be set up).
pub const BURROW_FAILED: u8 = 125;

/// Prints `burrow: {error}` on one line and returns burrow's failure code.
pub fn fail(error: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("burrow: {}", one_line(&error.to_string()));
    ExitCode::from(BURROW_FAILED)
}

/// Any exit status as an ExitCode (codes outside 0..=255 wrap as the shell would see them).
pub fn code(status: i32) -> ExitCode {
    ExitCode::from((status & 0xff) as u8)
}

/// Collapses whitespace so that a message is always one line.
pub fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

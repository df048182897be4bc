//! The caller's terminal: raw mode for `shell attach`, and its size.

use std::os::fd::BorrowedFd;

/// The terminal in raw mode until dropped.
pub struct RawMode {
    fd: BorrowedFd<'static>,
    saved: rustix::termios::Termios,
}

impl RawMode {
    /// Puts standard input's terminal in raw mode.
    pub fn enter() -> std::io::Result<RawMode> {
        let fd = rustix::stdio::stdin();
        let saved = rustix::termios::tcgetattr(fd)?;
        let mut raw = saved.clone();
        raw.make_raw();
        rustix::termios::tcsetattr(fd, rustix::termios::OptionalActions::Flush, &raw)?;
        Ok(RawMode { fd, saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = rustix::termios::tcsetattr(
            self.fd,
            rustix::termios::OptionalActions::Flush,
            &self.saved,
        );
    }
}

/// Standard input's terminal size, as (columns, rows).
pub fn size() -> Option<(u16, u16)> {
    rustix::termios::tcgetwinsize(rustix::stdio::stdin())
        .ok()
        .map(|size| (size.ws_col, size.ws_row))
        .filter(|&(cols, rows)| cols > 0 && rows > 0)
}

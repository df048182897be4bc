//! Reading patch text into a [`Patch`].
//!
//! A patch is a sequence of file sections, each either git's (`diff --git`
//! and its extended headers, [`git`]) or plain `diff -u` (`---`/`+++`,
//! [`plain`]), followed by hunks ([`hunk`]). Text between sections (a commit
//! message, a diffstat, `diff -r`'s own lines) is skipped, as `git apply`
//! does; hunks are read strictly.

mod git;
mod hunk;
mod plain;

use crate::Patch;
use crate::error::PatchError;
use crate::path;

/// Parses a patch made of one or more file sections.
pub fn parse(text: &[u8]) -> Result<Patch, PatchError> {
    let mut parser = Parser {
        lines: split_lines(text),
        next: 0,
    };
    let mut files = Vec::new();
    while let Some(line) = parser.peek() {
        if line.starts_with(b"diff --git ") {
            files.push(parser.git_section()?);
        } else if parser.at_plain_header() {
            files.push(parser.plain_section()?);
        } else if line.starts_with(b"@@ ") {
            return Err(parser.malformed_here("hunk without a file header"));
        } else if let Some(names) = line.strip_prefix(b"Binary files ") {
            return Err(PatchError::Binary {
                path: binary_line_path(names),
            });
        } else {
            parser.next += 1;
        }
    }
    if files.is_empty() {
        return Err(PatchError::Empty);
    }
    Ok(Patch { files })
}

/// Splits on `'\n'`, dropping the empty piece after a final newline.
fn split_lines(text: &[u8]) -> Vec<&[u8]> {
    let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
    if lines.last().is_some_and(|line| line.is_empty()) {
        lines.pop();
    }
    lines
}

/// Header lines are compared without a trailing `'\r'`, so a patch that went
/// through a CRLF mailer still parses; hunk lines keep theirs (it may be the
/// file's own line ending).
fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// A short, one-line quotation of patch text for error messages.
fn excerpt(line: &[u8]) -> String {
    let text = String::from_utf8_lossy(trim_cr(line));
    let short: String = text.chars().take(60).collect();
    let short = crate::error::one_line(&short);
    if text.chars().count() > 60 {
        format!("{short}...")
    } else {
        short
    }
}

/// The file a `Binary files A and B differ` line is about (best effort: the
/// names are not quoted when they hold spaces).
fn binary_line_path(names: &[u8]) -> String {
    let names = trim_cr(names);
    let old = names
        .windows(5)
        .position(|w| w == b" and ")
        .and_then(|end| names.get(..end))
        .unwrap_or(names);
    let name = match old {
        b"/dev/null" => names
            .strip_prefix(b"/dev/null and ")
            .and_then(|rest| rest.strip_suffix(b" differ"))
            .unwrap_or(names),
        _ => old,
    };
    String::from_utf8_lossy(path::strip_component(name)).into_owned()
}

/// The name of a `---`/`+++` line: `None` for `/dev/null`. `epoch` is set
/// when its `diff -u` timestamp is the Unix epoch.
struct HeaderName {
    name: Option<Vec<u8>>,
    epoch: bool,
}

struct Parser<'a> {
    lines: Vec<&'a [u8]>,
    /// Index of the next unread line.
    next: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<&'a [u8]> {
        self.lines.get(self.next).copied()
    }

    fn peek_at(&self, ahead: usize) -> Option<&'a [u8]> {
        self.lines.get(self.next + ahead).copied()
    }

    fn advance(&mut self) -> &'a [u8] {
        let line = self.peek().unwrap_or_default();
        self.next += 1;
        line
    }

    /// 1-based number of the next unread line.
    fn line_number(&self) -> usize {
        self.next + 1
    }

    fn malformed_here(&self, message: impl Into<String>) -> PatchError {
        PatchError::Malformed {
            line: self.line_number(),
            message: message.into(),
        }
    }

    fn at_plain_header(&self) -> bool {
        self.peek().is_some_and(|line| line.starts_with(b"--- "))
            && self
                .peek_at(1)
                .is_some_and(|line| line.starts_with(b"+++ "))
    }

    /// Reads a `--- NAME` line and the `+++ NAME` line that must follow.
    fn minus_plus(&mut self) -> Result<(HeaderName, HeaderName), PatchError> {
        let mut side = |marker: &[u8]| {
            let number = self.line_number();
            let line = trim_cr(self.peek().unwrap_or_default());
            let field = line
                .strip_prefix(marker)
                .ok_or_else(|| PatchError::Malformed {
                    line: number,
                    message: format!(
                        "expected a `{}` line, found: {}",
                        String::from_utf8_lossy(marker).trim_end(),
                        excerpt(line)
                    ),
                })?;
            let (name, timestamp) =
                path::header_name(field).ok_or_else(|| PatchError::Malformed {
                    line: number,
                    message: format!("malformed file name: {}", excerpt(field)),
                })?;
            self.next += 1;
            Ok::<_, PatchError>(HeaderName {
                epoch: plain::is_epoch_timestamp(timestamp),
                name: (name != b"/dev/null").then_some(name),
            })
        };
        let minus = side(b"--- ")?;
        let plus = side(b"+++ ")?;
        Ok((minus, plus))
    }
}

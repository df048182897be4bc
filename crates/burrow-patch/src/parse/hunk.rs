//! Hunks: `@@ -l,s +l,s @@` and exactly the lines its counts promise.

use super::{Parser, excerpt, trim_cr};
use crate::error::PatchError;
use crate::{Hunk, HunkLine};

impl Parser<'_> {
    /// Reads consecutive hunks.
    pub(super) fn hunks(&mut self) -> Result<Vec<Hunk>, PatchError> {
        let mut hunks = Vec::new();
        while self.peek().is_some_and(|line| line.starts_with(b"@@ ")) {
            hunks.push(self.hunk()?);
        }
        Ok(hunks)
    }

    fn hunk(&mut self) -> Result<Hunk, PatchError> {
        let header_line = self.line_number();
        let header = trim_cr(self.advance());
        let (old_start, old_lines, new_start, new_lines) =
            parse_hunk_header(header).ok_or_else(|| PatchError::Malformed {
                line: header_line,
                message: format!("hunk header is malformed: {}", excerpt(header)),
            })?;
        let mut hunk = Hunk {
            old_start,
            old_lines,
            new_start,
            new_lines,
            lines: Vec::new(),
            old_missing_newline: false,
            new_missing_newline: false,
        };
        let (mut old_seen, mut new_seen) = (0, 0);
        let ends_early = |parser: &Self| {
            parser.malformed_here(format!(
                "the hunk at line {header_line} ends early: its header promises \
                 {old_lines} old and {new_lines} new lines"
            ))
        };
        while old_seen < old_lines || new_seen < new_lines {
            let Some(line) = self.peek() else {
                return Err(ends_early(self));
            };
            let (is_old, is_new, hunk_line) = match line.split_first() {
                // git apply also takes an empty line for an empty context
                // line, which editors make of a lone space.
                None => (true, true, HunkLine::Context(Vec::new())),
                Some((b' ', text)) => (true, true, HunkLine::Context(text.to_vec())),
                Some((b'-', text)) => (true, false, HunkLine::Removed(text.to_vec())),
                Some((b'+', text)) => (false, true, HunkLine::Added(text.to_vec())),
                Some((b'\\', _)) => {
                    self.no_newline_marker(&mut hunk)?;
                    continue;
                }
                Some(_) => return Err(ends_early(self)),
            };
            if (is_old && old_seen == old_lines) || (is_new && new_seen == new_lines) {
                return Err(self.malformed_here(format!(
                    "the hunk at line {header_line} has more lines than its header says"
                )));
            }
            if (is_old && hunk.old_missing_newline) || (is_new && hunk.new_missing_newline) {
                return Err(self.malformed_here("a line follows `\\ No newline at end of file`"));
            }
            old_seen += usize::from(is_old);
            new_seen += usize::from(is_new);
            hunk.lines.push(hunk_line);
            self.next += 1;
        }
        if self.peek().is_some_and(|line| line.starts_with(b"\\")) {
            self.no_newline_marker(&mut hunk)?;
        }
        if self
            .peek()
            .is_some_and(|line| self.is_stray_hunk_line(line))
        {
            return Err(self.malformed_here(format!(
                "the hunk at line {header_line} has more lines than its header says"
            )));
        }
        Ok(hunk)
    }

    /// A `+`, `-` or ` ` line right after a complete hunk means the header
    /// undercounts. The exceptions are what may legitimately follow: a plain
    /// section header, and format-patch's `-- ` signature line.
    fn is_stray_hunk_line(&self, line: &[u8]) -> bool {
        let line = trim_cr(line);
        match line.first() {
            Some(b'+' | b' ') => true,
            Some(b'-') => line != b"--" && line != b"-- " && !self.at_plain_header(),
            _ => false,
        }
    }

    /// `\ No newline at end of file`: the previous line has no `'\n'`.
    fn no_newline_marker(&mut self, hunk: &mut Hunk) -> Result<(), PatchError> {
        let (old, new) = match hunk.lines.last() {
            Some(HunkLine::Context(_)) => (true, true),
            Some(HunkLine::Removed(_)) => (true, false),
            Some(HunkLine::Added(_)) => (false, true),
            None => return Err(self.malformed_here("`\\ No newline` marker before any line")),
        };
        if (old && hunk.old_missing_newline) || (new && hunk.new_missing_newline) {
            return Err(self.malformed_here("repeated `\\ No newline` marker"));
        }
        hunk.old_missing_newline |= old;
        hunk.new_missing_newline |= new;
        self.next += 1;
        Ok(())
    }
}

/// `@@ -l[,s] +l[,s] @@[ section heading]`. A missing count means 1; a
/// start of 0 is only allowed with an empty side.
fn parse_hunk_header(header: &[u8]) -> Option<(usize, usize, usize, usize)> {
    let rest = header.strip_prefix(b"@@ -")?;
    let (old, rest) = split_once(rest, b' ')?;
    let rest = rest.strip_prefix(b"+")?;
    let (new, rest) = split_once(rest, b' ')?;
    if rest != b"@@" && !rest.starts_with(b"@@ ") {
        return None;
    }
    let (old_start, old_lines) = parse_range(old)?;
    let (new_start, new_lines) = parse_range(new)?;
    Some((old_start, old_lines, new_start, new_lines))
}

fn parse_range(range: &[u8]) -> Option<(usize, usize)> {
    let (start, count) = match split_once(range, b',') {
        Some((start, count)) => (parse_number(start)?, parse_number(count)?),
        None => (parse_number(range)?, 1),
    };
    (start > 0 || count == 0).then_some((start, count))
}

fn parse_number(digits: &[u8]) -> Option<usize> {
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(digits).ok()?.parse().ok()
}

fn split_once(text: &[u8], separator: u8) -> Option<(&[u8], &[u8])> {
    let at = text.iter().position(|&b| b == separator)?;
    let (before, after) = text.split_at(at);
    Some((before, after.get(1..)?))
}

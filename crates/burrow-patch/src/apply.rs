//! Applying one file's hunks to its content, in memory.
//!
//! Content is handled as lines that remember whether they end with `'\n'`,
//! so a file without a final newline, or with CRLF endings, comes out byte
//! for byte as the patch says.

use crate::{Hunk, HunkLine};

/// The hunk that did not apply: its 0-based index within the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HunkFailure {
    pub(crate) index: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Line<'a> {
    text: &'a [u8],
    newline: bool,
}

/// Applies `hunks` in order to `content`.
///
/// Each hunk is tried where its header says, shifted by how far the previous
/// hunk of the file landed from its own header; failing that, at the nearest
/// place where its old side matches exactly (below first, then above, as
/// `git apply` searches). Hunks may not overlap or go backwards.
pub(crate) fn apply_hunks(content: &[u8], hunks: &[Hunk]) -> Result<Vec<u8>, HunkFailure> {
    let file = split_file(content);
    let mut result: Vec<Line<'_>> = Vec::with_capacity(file.len());
    // Lines of `file` before `cursor` are already in `result` or replaced.
    let mut cursor = 0;
    let mut offset: isize = 0;
    for (index, hunk) in hunks.iter().enumerate() {
        let failure = HunkFailure { index };
        let (old, new) = sides(hunk);
        // An empty old side inserts after line `old_start`; otherwise
        // `old_start` is the 1-based first line.
        let header_position = if old.is_empty() {
            hunk.old_start
        } else {
            hunk.old_start.saturating_sub(1)
        };
        let expected = header_position.saturating_add_signed(offset);
        let position = find_position(&file, &old, cursor, expected).ok_or(failure)?;
        let old_end = position + old.len();

        // Only a file's last line may lack its newline: a new side that
        // ends without one must end the file, and nothing may be appended
        // to a line without one.
        if new.last().is_some_and(|line| !line.newline) && old_end != file.len() {
            return Err(failure);
        }
        result.extend(file.get(cursor..position).ok_or(failure)?);
        if !new.is_empty() && result.last().is_some_and(|line| !line.newline) {
            return Err(failure);
        }
        result.extend(new);
        cursor = old_end;
        offset = position as isize - header_position as isize;
    }
    result.extend(file.get(cursor..).unwrap_or_default());
    Ok(join(&result))
}

fn split_file(content: &[u8]) -> Vec<Line<'_>> {
    let mut lines: Vec<Line<'_>> = content
        .split(|&b| b == b'\n')
        .map(|text| Line {
            text,
            newline: true,
        })
        .collect();
    // The piece after the last '\n' is empty when the file ends with one
    // (or is empty); otherwise it is a last line without a newline.
    match lines.last_mut() {
        Some(last) if last.text.is_empty() => {
            lines.pop();
        }
        Some(last) => last.newline = false,
        None => {}
    }
    lines
}

fn join(lines: &[Line<'_>]) -> Vec<u8> {
    let mut content = Vec::with_capacity(lines.iter().map(|line| line.text.len() + 1).sum());
    for line in lines {
        content.extend_from_slice(line.text);
        if line.newline {
            content.push(b'\n');
        }
    }
    content
}

/// The hunk's old side (context and removed lines) and new side (context
/// and added lines).
fn sides(hunk: &Hunk) -> (Vec<Line<'_>>, Vec<Line<'_>>) {
    let mut old = Vec::new();
    let mut new = Vec::new();
    for line in &hunk.lines {
        let (text, in_old, in_new) = match line {
            HunkLine::Context(text) => (text, true, true),
            HunkLine::Removed(text) => (text, true, false),
            HunkLine::Added(text) => (text, false, true),
        };
        let line = Line {
            text,
            newline: true,
        };
        if in_old {
            old.push(line);
        }
        if in_new {
            new.push(line);
        }
    }
    if let Some(last) = old.last_mut().filter(|_| hunk.old_missing_newline) {
        last.newline = false;
    }
    if let Some(last) = new.last_mut().filter(|_| hunk.new_missing_newline) {
        last.newline = false;
    }
    (old, new)
}

/// The position at or after `cursor` nearest to `expected` where `old`
/// matches `file` exactly.
fn find_position(
    file: &[Line<'_>],
    old: &[Line<'_>],
    cursor: usize,
    expected: usize,
) -> Option<usize> {
    let last = file.len().checked_sub(old.len())?;
    if cursor > last {
        return None;
    }
    let matches_at = |position: usize| file.get(position..position + old.len()) == Some(old);
    let expected = expected.clamp(cursor, last);
    for distance in 0..=(last - cursor) {
        let below = expected + distance;
        if below <= last && matches_at(below) {
            return Some(below);
        }
        let above = expected
            .checked_sub(distance)
            .filter(|&above| above >= cursor);
        if let Some(above) = above.filter(|_| distance > 0)
            && matches_at(above)
        {
            return Some(above);
        }
    }
    None
}

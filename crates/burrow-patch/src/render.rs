//! Git-style unified diffs of one file, and their line counts.

use std::fmt::Write as _;
use std::ops::Range;
use std::time::{Duration, Instant};

use similar::algorithms::{Capture, Replace, diff_deadline};
use similar::{Algorithm, DiffOp, DiffTag};

use crate::path::quote;

/// Lines of context around each change, git's default.
const CONTEXT: usize = 3;

/// How much of a file git looks at to decide it is binary.
const BINARY_SNIFF_LEN: usize = 8000;

/// Past this, the diff falls back to a quicker, less minimal (but still
/// correct) answer rather than stall `burrow diff` on a huge file.
const DIFF_TIME_LIMIT: Duration = Duration::from_secs(2);

/// Lines added and removed between two versions of a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiffStat {
    /// Lines only the new version has.
    pub added: usize,
    /// Lines only the old version has.
    pub removed: usize,
}

/// Whether git would call `content` binary: a NUL byte in its first 8000
/// bytes.
pub fn is_binary(content: &[u8]) -> bool {
    content.iter().take(BINARY_SNIFF_LEN).any(|&byte| byte == 0)
}

/// Renders the change from `old` to `new` as `git diff` would, with headers
/// naming `a/{old_path}` and `b/{new_path}`. `None` is an absent file (so the
/// diff adds or deletes it); different paths with both sides present are a
/// rename. Returns an empty string when nothing changed.
///
/// Content that is binary, or not UTF-8 (which a `String` cannot carry
/// byte-exact), is rendered as git's `Binary files ... differ` line.
pub fn render_diff(
    old_path: &str,
    new_path: &str,
    old: Option<&[u8]>,
    new: Option<&[u8]>,
) -> String {
    let renamed = old.is_some() && new.is_some() && old_path != new_path;
    if old == new && !renamed {
        return String::new();
    }
    let old_name = quote(&format!("a/{old_path}"));
    let new_name = quote(&format!("b/{new_path}"));
    let mut out = format!("diff --git {old_name} {new_name}\n");
    match (old, new) {
        (None, _) => out.push_str("new file mode 100644\n"),
        (_, None) => out.push_str("deleted file mode 100644\n"),
        _ if renamed => {
            let _ = writeln!(out, "rename from {}", quote(old_path));
            let _ = writeln!(out, "rename to {}", quote(new_path));
        }
        _ => {}
    }
    let old_label = old.map_or("/dev/null".to_string(), |_| old_name);
    let new_label = new.map_or("/dev/null".to_string(), |_| new_name);
    let old_text = as_text(old.unwrap_or_default());
    let new_text = as_text(new.unwrap_or_default());
    let (Some(old_text), Some(new_text)) = (old_text, new_text) else {
        let _ = writeln!(out, "Binary files {old_label} and {new_label} differ");
        return out;
    };
    if old_text == new_text {
        // An empty file added or deleted, or a pure rename: git shows only
        // the headers.
        return out;
    }
    // git ends a name holding a space with a tab, so that `patch` does not
    // take the rest of the name for a timestamp.
    let tab = |label: &str| if label.contains(' ') { "\t" } else { "" };
    let _ = writeln!(out, "--- {old_label}{}", tab(&old_label));
    let _ = writeln!(out, "+++ {new_label}{}", tab(&new_label));

    let old_lines: Vec<&str> = old_text.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new_text.split_inclusive('\n').collect();
    for group in similar::group_diff_ops(diff_lines(&old_lines, &new_lines), CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let old_range = first.old_range().start..last.old_range().end;
        let new_range = first.new_range().start..last.new_range().end;
        let _ = writeln!(
            out,
            "@@ -{} +{} @@",
            hunk_range(&old_range),
            hunk_range(&new_range)
        );
        for op in &group {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            match tag {
                DiffTag::Equal => push_lines(&mut out, ' ', &old_lines, old_range),
                DiffTag::Delete => push_lines(&mut out, '-', &old_lines, old_range),
                DiffTag::Insert => push_lines(&mut out, '+', &new_lines, new_range),
                DiffTag::Replace => {
                    push_lines(&mut out, '-', &old_lines, old_range);
                    push_lines(&mut out, '+', &new_lines, new_range);
                }
            }
        }
    }
    out
}

/// Counts the lines `render_diff` would show added and removed. Binary
/// content counts no lines (git's `--numstat` shows `-` for it).
pub fn diff_stat(old: Option<&[u8]>, new: Option<&[u8]>) -> DiffStat {
    let old = old.unwrap_or_default();
    let new = new.unwrap_or_default();
    if is_binary(old) || is_binary(new) {
        return DiffStat::default();
    }
    let old_lines: Vec<&[u8]> = old.split_inclusive(|&b| b == b'\n').collect();
    let new_lines: Vec<&[u8]> = new.split_inclusive(|&b| b == b'\n').collect();
    let mut stat = DiffStat::default();
    for op in diff_lines(&old_lines, &new_lines) {
        let (_, old_range, new_range) = op.as_tag_tuple();
        if op.tag() != DiffTag::Equal {
            stat.removed += old_range.len();
            stat.added += new_range.len();
        }
    }
    stat
}

/// Lines keep their `'\n'`, so a last line without one differs from the
/// same text with one, as in git.
///
/// similar's `capture_diff_slices` runs its `Compact` pass, which in 2.x can
/// leave a stale `new_index` on a moved delete (mitsuhiko/similar#78) and so
/// a wrong hunk header; the plain algorithm's ops are consistent.
fn diff_lines<T: Eq + std::hash::Hash + Ord>(old: &[T], new: &[T]) -> Vec<DiffOp> {
    let deadline = Instant::now().checked_add(DIFF_TIME_LIMIT);
    let mut capture = Replace::new(Capture::new());
    match diff_deadline(
        Algorithm::Myers,
        &mut capture,
        old,
        0..old.len(),
        new,
        0..new.len(),
        deadline,
    ) {
        Ok(()) => capture.into_inner().into_ops(),
        Err(never) => match never {},
    }
}

fn as_text(content: &[u8]) -> Option<&str> {
    if is_binary(content) {
        return None;
    }
    std::str::from_utf8(content).ok()
}

/// `start,count` in unified-diff form: 1-based, `,1` left out, and an empty
/// range named by the line before it.
fn hunk_range(range: &Range<usize>) -> String {
    match range.len() {
        0 => format!("{},0", range.start),
        1 => format!("{}", range.start + 1),
        count => format!("{},{count}", range.start + 1),
    }
}

fn push_lines(out: &mut String, prefix: char, lines: &[&str], range: Range<usize>) {
    for line in lines.get(range).unwrap_or_default() {
        out.push(prefix);
        match line.strip_suffix('\n') {
            Some(text) => {
                out.push_str(text);
                out.push('\n');
            }
            None => {
                out.push_str(line);
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
}

//! File names in patch headers: git's C-style quoting, the `a/`/`b/`
//! prefixes, and the check that a path stays inside the workspace.

use crate::error::PatchError;

/// Decodes a git C-quoted name that starts at `text[0] == '"'`. Returns the
/// bytes and what follows the closing quote, or `None` if it is malformed.
pub(crate) fn unquote(text: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    let mut rest = text.strip_prefix(b"\"")?;
    let mut name = Vec::new();
    loop {
        let (&byte, after) = rest.split_first()?;
        rest = after;
        match byte {
            b'"' => return Some((name, rest)),
            b'\\' => {
                let (&escape, after) = rest.split_first()?;
                rest = after;
                let decoded = match escape {
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b't' => b'\t',
                    b'n' => b'\n',
                    b'v' => 0x0b,
                    b'f' => 0x0c,
                    b'r' => b'\r',
                    b'"' | b'\\' => escape,
                    b'0'..=b'3' => {
                        let (digits, after) = rest.split_at_checked(2)?;
                        rest = after;
                        let mut value = u32::from(escape - b'0');
                        for &digit in digits {
                            if !(b'0'..=b'7').contains(&digit) {
                                return None;
                            }
                            value = value * 8 + u32::from(digit - b'0');
                        }
                        u8::try_from(value).ok()?
                    }
                    _ => return None,
                };
                name.push(decoded);
            }
            _ => name.push(byte),
        }
    }
}

/// Quotes a name the way git does when it holds a control character, a
/// quote or a backslash; other names (spaces and UTF-8 included) stay bare.
pub fn quote(name: &str) -> String {
    let needs_quotes = name
        .bytes()
        .any(|b| b < 0x20 || b == 0x7f || b == b'"' || b == b'\\');
    if !needs_quotes {
        return name.to_string();
    }
    let mut quoted = String::from("\"");
    for c in name.chars() {
        match c {
            '\t' => quoted.push_str("\\t"),
            '\n' => quoted.push_str("\\n"),
            '\r' => quoted.push_str("\\r"),
            '"' => quoted.push_str("\\\""),
            '\\' => quoted.push_str("\\\\"),
            c if c.is_ascii_control() => quoted.push_str(&format!("\\{:03o}", c as u32)),
            c => quoted.push(c),
        }
    }
    quoted.push('"');
    quoted
}

/// Reads the name of a `---`/`+++` line (after the marker and space): quoted,
/// or up to the tab that starts `diff -u`'s timestamp. Returns the name and
/// the text after it (the timestamp, if any).
pub(crate) fn header_name(field: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    if field.starts_with(b"\"") {
        let (name, rest) = unquote(field)?;
        return Some((name, rest.strip_prefix(b"\t").unwrap_or(rest)));
    }
    match field.iter().position(|&b| b == b'\t') {
        Some(tab) => {
            let (name, rest) = field.split_at(tab);
            Some((name.to_vec(), rest.get(1..).unwrap_or_default()))
        }
        None => Some((field.to_vec(), &[])),
    }
}

/// Reads a whole-line name (`rename from NAME`), quoted or not.
pub(crate) fn line_name(field: &[u8]) -> Option<Vec<u8>> {
    if field.starts_with(b"\"") {
        let (name, rest) = unquote(field)?;
        return rest.is_empty().then_some(name);
    }
    Some(field.to_vec())
}

/// Splits the names of a `diff --git A B` line. Unquoted names with spaces
/// are ambiguous; like git, pick the split where both name the same file
/// once their prefix is stripped. `None` when no split fits (a rename, whose
/// names come from its `rename from`/`rename to` lines instead).
pub(crate) fn git_line_names(names: &[u8]) -> Option<(Vec<u8>, Vec<u8>)> {
    if names.starts_with(b"\"") {
        let (old, rest) = unquote(names)?;
        let rest = rest.strip_prefix(b" ")?;
        let new = line_name(rest)?;
        return Some((old, new));
    }
    if names.ends_with(b"\"") {
        for (space, _) in names.iter().enumerate().filter(|&(_, &b)| b == b' ') {
            let (old, rest) = names.split_at(space);
            if let Some((new, tail)) = rest.get(1..).and_then(unquote)
                && tail.is_empty()
            {
                return Some((old.to_vec(), new));
            }
        }
        return None;
    }
    names
        .iter()
        .enumerate()
        .filter(|&(_, &b)| b == b' ')
        .find_map(|(space, _)| {
            let (old, rest) = names.split_at(space);
            let new = rest.get(1..)?;
            (strip_component(old) == strip_component(new) && old.contains(&b'/'))
                .then(|| (old.to_vec(), new.to_vec()))
        })
}

/// Drops the first path component (`a/x/y` -> `x/y`), as `patch -p1` does.
/// A name without a component to drop is kept whole; a leading `/` is kept
/// so that the absolute path is rejected rather than quietly made relative.
pub(crate) fn strip_component(name: &[u8]) -> &[u8] {
    match name.iter().position(|&b| b == b'/') {
        Some(slash) if slash > 0 => name.get(slash + 1..).unwrap_or_default(),
        _ => name,
    }
}

/// Checks that `path` (already stripped of its prefix) names a file inside
/// the workspace. `as_written` is what the patch says, for the message.
pub(crate) fn validate(as_written: &[u8], path: &[u8]) -> Result<String, PatchError> {
    let shown = String::from_utf8_lossy(as_written).into_owned();
    let invalid = |reason| PatchError::InvalidPath {
        path: shown.clone(),
        reason,
    };
    if path.is_empty() {
        return Err(invalid("empty"));
    }
    if path.contains(&0) {
        return Err(invalid("contains a NUL byte"));
    }
    if path.starts_with(b"/") || path.split(|&b| b == b'/').any(|part| part == b"..") {
        return Err(PatchError::PathEscapes { path: shown });
    }
    for component in path.split(|&b| b == b'/') {
        match component {
            b"" => return Err(invalid("has an empty component")),
            b"." => return Err(invalid("has a `.` component")),
            _ => {}
        }
    }
    String::from_utf8(path.to_vec()).map_err(|_| invalid("is not UTF-8"))
}

//! git's file sections: `diff --git A B`, its extended headers (modes,
//! renames, copies), then optional `---`/`+++` lines and hunks.

use super::{Parser, excerpt, trim_cr};
use crate::error::PatchError;
use crate::{FilePatch, path};

/// The headers a git section may carry before its hunks.
#[derive(Default)]
struct GitHeaders {
    old_mode: Option<u32>,
    new_mode: Option<u32>,
    created: bool,
    deleted: bool,
    rename_from: Option<Vec<u8>>,
    rename_to: Option<Vec<u8>>,
    copy_from: Option<Vec<u8>>,
    copy_to: Option<Vec<u8>>,
    /// `---`/`+++` names, unstripped; `Some(None)` is `/dev/null`.
    minus: Option<Option<Vec<u8>>>,
    plus: Option<Option<Vec<u8>>>,
}

impl Parser<'_> {
    pub(super) fn git_section(&mut self) -> Result<FilePatch, PatchError> {
        let header_line = self.line_number();
        let names = trim_cr(self.advance())
            .strip_prefix(b"diff --git ")
            .and_then(path::git_line_names);
        let headers = self.git_headers(names.as_ref())?;
        let hunks = self.hunks()?;

        let (line_old, line_new) = match &names {
            Some((old, new)) => (Some(old.as_slice()), Some(new.as_slice())),
            None => (None, None),
        };
        let created = headers.created || headers.minus == Some(None);
        let deleted = headers.deleted || headers.plus == Some(None);
        if created && deleted {
            return Err(PatchError::Malformed {
                line: header_line,
                message: "the section both creates and deletes its file".into(),
            });
        }
        // Rename and copy names carry no prefix; the others carry git's a/, b/.
        let minus = headers.minus.as_ref().and_then(|name| name.as_deref());
        let plus = headers.plus.as_ref().and_then(|name| name.as_deref());
        let old_path = pick_side(
            created,
            headers
                .rename_from
                .as_deref()
                .or(headers.copy_from.as_deref()),
            minus.or(line_old),
            header_line,
        )?;
        let new_path = pick_side(
            deleted,
            headers.rename_to.as_deref().or(headers.copy_to.as_deref()),
            plus.or(line_new),
            header_line,
        )?;
        Ok(FilePatch {
            old_path,
            new_path,
            old_mode: headers.old_mode,
            new_mode: headers.new_mode,
            is_copy: headers.copy_from.is_some(),
            hunks,
        })
    }

    /// Reads git's extended headers and its `---`/`+++` lines, up to the
    /// first hunk or whatever else ends the section.
    fn git_headers(
        &mut self,
        names: Option<&(Vec<u8>, Vec<u8>)>,
    ) -> Result<GitHeaders, PatchError> {
        let mut headers = GitHeaders::default();
        while let Some(raw) = self.peek() {
            let line = trim_cr(raw);
            let number = self.line_number();
            let name = |field: &[u8]| {
                path::line_name(field).ok_or_else(|| PatchError::Malformed {
                    line: number,
                    message: format!("malformed file name: {}", excerpt(field)),
                })
            };
            if let Some(mode) = line.strip_prefix(b"old mode ") {
                headers.old_mode = Some(parse_mode(mode, number)?);
            } else if let Some(mode) = line.strip_prefix(b"new mode ") {
                headers.new_mode = Some(parse_mode(mode, number)?);
            } else if let Some(mode) = line.strip_prefix(b"deleted file mode ") {
                headers.deleted = true;
                headers.old_mode = Some(parse_mode(mode, number)?);
            } else if let Some(mode) = line.strip_prefix(b"new file mode ") {
                headers.created = true;
                headers.new_mode = Some(parse_mode(mode, number)?);
            } else if let Some(field) = line.strip_prefix(b"rename from ") {
                headers.rename_from = Some(name(field)?);
            } else if let Some(field) = line.strip_prefix(b"rename to ") {
                headers.rename_to = Some(name(field)?);
            } else if let Some(field) = line.strip_prefix(b"copy from ") {
                headers.copy_from = Some(name(field)?);
            } else if let Some(field) = line.strip_prefix(b"copy to ") {
                headers.copy_to = Some(name(field)?);
            } else if line.starts_with(b"similarity index ")
                || line.starts_with(b"dissimilarity index ")
                || line.starts_with(b"index ")
            {
                // Informational; the mode on `index` lines is the unchanged one.
            } else if line.starts_with(b"--- ") {
                let (minus, plus) = self.minus_plus()?;
                headers.minus = Some(minus.name);
                headers.plus = Some(plus.name);
                return Ok(headers);
            } else if line.starts_with(b"GIT binary patch") || line.starts_with(b"Binary files ") {
                let shown = names
                    .map(|(old, new)| if headers.deleted { old } else { new })
                    .map(|name| String::from_utf8_lossy(path::strip_component(name)).into_owned())
                    .or_else(|| {
                        line.strip_prefix(b"Binary files ")
                            .map(super::binary_line_path)
                    })
                    .unwrap_or_else(|| "?".into());
                return Err(PatchError::Binary { path: shown });
            } else {
                return Ok(headers);
            }
            self.next += 1;
        }
        Ok(headers)
    }
}

/// One side's path: absent if the section says so, else the first name
/// found (an unprefixed rename/copy name, else a prefixed one).
fn pick_side(
    absent: bool,
    unprefixed: Option<&[u8]>,
    prefixed: Option<&[u8]>,
    header_line: usize,
) -> Result<Option<String>, PatchError> {
    if absent {
        return Ok(None);
    }
    let path = match (unprefixed, prefixed) {
        (Some(name), _) => path::validate(name, name)?,
        (None, Some(name)) => path::validate(name, path::strip_component(name))?,
        (None, None) => {
            return Err(PatchError::Malformed {
                line: header_line,
                message: "cannot tell which file the section is for".into(),
            });
        }
    };
    Ok(Some(path))
}

/// An octal git mode such as `100644`.
fn parse_mode(text: &[u8], line: usize) -> Result<u32, PatchError> {
    let text = trim_cr(text);
    std::str::from_utf8(text)
        .ok()
        .filter(|digits| (1..=7).contains(&digits.len()))
        .and_then(|digits| u32::from_str_radix(digits, 8).ok())
        .ok_or_else(|| PatchError::Malformed {
            line,
            message: format!("file mode is malformed: {}", excerpt(text)),
        })
}

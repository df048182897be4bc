//! Checking a whole patch against the workspace and computing its changes.

use std::collections::{HashMap, HashSet};

use crate::apply::apply_hunks;
use crate::error::ApplyError;
use crate::{Change, FilePatch, Patch, PatchSource};

/// Checks every file of `patch` against the current contents read from
/// `source` and returns the changes that make the result, or the first
/// error and no changes at all.
///
/// Every section reads the workspace as it was before the patch (a copy's
/// source is taken unmodified, as git does), and a path may be changed by
/// one section only. Deletions (including renamed-away paths) come first in
/// the result, then writes, so that a file may be replaced by a directory of
/// the same name.
pub fn plan(patch: &Patch, source: &mut impl PatchSource) -> Result<Vec<Change>, ApplyError> {
    let mut reader = Reader {
        source,
        cache: HashMap::new(),
    };
    let mut changed: HashSet<&str> = HashSet::new();
    let mut deletes = Vec::new();
    let mut writes = Vec::new();
    for file in &patch.files {
        for path in changed_paths(file) {
            if !changed.insert(path) {
                return Err(ApplyError::Duplicate { path: path.into() });
            }
        }
        match (&file.old_path, &file.new_path) {
            (None, None) => {}
            (None, Some(new_path)) => {
                reader.require_absent(new_path)?;
                let content = patched(new_path, &[], file)?;
                writes.push(write(new_path, content, file));
            }
            (Some(old_path), None) => {
                let current = reader.require_present(old_path)?;
                match apply_hunks(&current, &file.hunks) {
                    Ok(rest) if rest.is_empty() => deletes.push(Change::Delete {
                        path: old_path.clone(),
                    }),
                    _ => {
                        return Err(ApplyError::DeleteMismatch {
                            path: old_path.clone(),
                        });
                    }
                }
            }
            (Some(old_path), Some(new_path)) if old_path == new_path => {
                let current = reader.require_present(old_path)?;
                let content = patched(old_path, &current, file)?;
                if content != current || file.new_mode.is_some_and(|new| Some(new) != file.old_mode)
                {
                    writes.push(write(new_path, content, file));
                }
            }
            (Some(old_path), Some(new_path)) => {
                let current = reader.require_present(old_path)?;
                reader.require_absent(new_path)?;
                let content = patched(old_path, &current, file)?;
                writes.push(write(new_path, content, file));
                if !file.is_copy {
                    deletes.push(Change::Delete {
                        path: old_path.clone(),
                    });
                }
            }
        }
    }
    deletes.extend(writes);
    Ok(deletes)
}

/// The paths a section changes: a copy leaves its source alone.
fn changed_paths(file: &FilePatch) -> Vec<&str> {
    let old = file.old_path.as_deref().filter(|_| !file.is_copy);
    let new = file.new_path.as_deref().filter(|&new| Some(new) != old);
    old.into_iter().chain(new).collect()
}

fn patched(path: &str, current: &[u8], file: &FilePatch) -> Result<Vec<u8>, ApplyError> {
    apply_hunks(current, &file.hunks).map_err(|failure| {
        let line = file
            .hunks
            .get(failure.index)
            .map_or(0, |hunk| hunk.old_start);
        ApplyError::HunkFailed {
            path: path.into(),
            hunk: failure.index + 1,
            line,
        }
    })
}

fn write(path: &str, content: Vec<u8>, file: &FilePatch) -> Change {
    Change::Write {
        path: path.into(),
        content,
        mode: file.new_mode,
    }
}

/// Reads each path once, so that every section sees the same content.
struct Reader<'s, S> {
    source: &'s mut S,
    cache: HashMap<String, Option<Vec<u8>>>,
}

impl<S: PatchSource> Reader<'_, S> {
    fn read(&mut self, path: &str) -> Result<Option<Vec<u8>>, ApplyError> {
        if let Some(content) = self.cache.get(path) {
            return Ok(content.clone());
        }
        let content = self.source.read(path).map_err(|reason| ApplyError::Read {
            path: path.into(),
            reason,
        })?;
        self.cache.insert(path.into(), content.clone());
        Ok(content)
    }

    fn require_present(&mut self, path: &str) -> Result<Vec<u8>, ApplyError> {
        self.read(path)?
            .ok_or_else(|| ApplyError::Missing { path: path.into() })
    }

    fn require_absent(&mut self, path: &str) -> Result<(), ApplyError> {
        match self.read(path)? {
            Some(_) => Err(ApplyError::AlreadyExists { path: path.into() }),
            None => Ok(()),
        }
    }
}

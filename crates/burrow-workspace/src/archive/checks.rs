//! The rules every entry is checked against, in both passes, and the name helpers they use.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::{EntryKind, ImportEntry, ImportLimits, Source};
use crate::error::Result;

/// An entry as the source describes it, before checking.
pub(super) enum Item {
    File { size: u64 },
    Dir,
    Symlink(Vec<u8>),
    HardLink(Vec<u8>),
}

impl Item {
    pub(super) fn describe(&self) -> &'static str {
        match self {
            Item::File { .. } => "a file",
            Item::Dir => "a directory",
            Item::Symlink(_) => "a symlink",
            Item::HardLink(_) => "a hard link",
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    at: usize,
    hard_link: bool,
}

/// Turns described entries into checked ones, one at a time, so that both passes apply the
/// very same rules in the very same order.
pub(super) struct Builder<'s> {
    source: &'s Source,
    limits: ImportLimits,
    pub(super) entries: Vec<ImportEntry>,
    index: HashMap<String, Slot>,
    total: u64,
    count: u64,
}

impl<'s> Builder<'s> {
    pub(super) fn new(source: &'s Source, limits: ImportLimits) -> Builder<'s> {
        Builder {
            source,
            limits,
            entries: Vec::new(),
            index: HashMap::new(),
            total: 0,
            count: 0,
        }
    }

    /// Checks and adds one entry (and any parent directories it implies); returns where it
    /// went, or `None` for the root itself and a repeated directory.
    pub(super) fn add(&mut self, name: &[u8], item: Item, mode: u32) -> Result<Option<usize>> {
        self.count_one(name)?;
        let path =
            normalize(name).map_err(|why| self.source.reject(name, format_args!("has {why}")))?;
        if path.is_empty() {
            // `./` is how `tar -C dir -cf x.tar .` names the root; it carries nothing to import.
            return match item {
                Item::Dir => Ok(None),
                _ => Err(self.source.reject(
                    name,
                    "names the import root itself, which can only be a directory",
                )),
            };
        }
        self.add_parents(name, &path)?;
        if let Some(slot) = self.index.get(&path).copied() {
            let existing = &mut self.entries[slot.at];
            if matches!(item, Item::Dir) && existing.kind == EntryKind::Dir {
                // A repeated directory: tar applies the last one's mode, and so do we.
                existing.mode = mode;
                return Ok(None);
            }
            let was = match existing.kind {
                _ if slot.hard_link => "a hard link",
                EntryKind::File { .. } => "a file",
                EntryKind::Dir => "a directory",
                EntryKind::Symlink { .. } => "a symlink",
            };
            return Err(self.source.reject(
                name,
                format_args!(
                    "appears twice in the archive, as {was} and as {}",
                    item.describe()
                ),
            ));
        }
        let (kind, hard_link) = match item {
            Item::File { size } => {
                self.charge(name, size)?;
                (EntryKind::File { size }, false)
            }
            Item::Dir => (EntryKind::Dir, false),
            Item::Symlink(target) => {
                let target = self.check_symlink(name, &path, &target)?;
                (EntryKind::Symlink { target }, false)
            }
            Item::HardLink(target) => {
                let size = self.hard_link_size(name, &target)?;
                self.charge(name, size)?;
                (EntryKind::File { size }, true)
            }
        };
        Ok(Some(self.push(path, kind, mode, hard_link)))
    }

    /// Lists missing parent directories, and refuses a path that runs through a symlink or a
    /// file of the same source: written out, `l/f` after `l -> ../..` would land outside.
    fn add_parents(&mut self, name: &[u8], path: &str) -> Result<()> {
        for (end, _) in path.match_indices('/') {
            let parent = &path[..end];
            match self.index.get(parent).copied() {
                Some(slot) => match self.entries[slot.at].kind {
                    EntryKind::Dir => {}
                    EntryKind::Symlink { .. } => {
                        return Err(self.source.reject(
                            name,
                            format_args!(
                                "lies under `{}`, a symlink of the same source; nothing is written through a link",
                                show(parent.as_bytes())
                            ),
                        ));
                    }
                    EntryKind::File { .. } => {
                        return Err(self.source.reject(
                            name,
                            format_args!(
                                "lies under `{}`, which is a file",
                                show(parent.as_bytes())
                            ),
                        ));
                    }
                },
                None => {
                    self.count_one(name)?;
                    self.push(parent.to_owned(), EntryKind::Dir, 0o755, false);
                }
            }
        }
        Ok(())
    }

    fn push(&mut self, path: String, kind: EntryKind, mode: u32, hard_link: bool) -> usize {
        let at = self.entries.len();
        self.index.insert(path.clone(), Slot { at, hard_link });
        self.entries.push(ImportEntry { path, kind, mode });
        at
    }

    fn count_one(&mut self, name: &[u8]) -> Result<()> {
        self.count += 1;
        if self.count > self.limits.max_entries {
            return Err(self.source.reject(
                name,
                format_args!("is past the limit of {} entries", self.limits.max_entries),
            ));
        }
        Ok(())
    }

    fn charge(&mut self, name: &[u8], size: u64) -> Result<()> {
        if size > self.limits.max_file {
            return Err(self.source.reject(
                name,
                format_args!(
                    "is {size} bytes, over the limit of {} bytes per file",
                    self.limits.max_file
                ),
            ));
        }
        self.total = self
            .total
            .checked_add(size)
            .filter(|total| *total <= self.limits.max_total)
            .ok_or_else(|| {
                self.source.reject(
                    name,
                    format_args!(
                        "brings the total past the limit of {} bytes",
                        self.limits.max_total
                    ),
                )
            })?;
        Ok(())
    }

    /// A hard link is accepted only to an earlier regular file (not another link), because it
    /// is written as a copy of that file's content, which must already have been checked.
    fn hard_link_size(&self, name: &[u8], target: &[u8]) -> Result<u64> {
        let path = normalize(target).map_err(|why| {
            self.source.reject(
                name,
                format_args!("is a hard link to `{}`, which has {why}", show(target)),
            )
        })?;
        match self.index.get(&path) {
            Some(slot) if !slot.hard_link => {
                if let EntryKind::File { size } = self.entries[slot.at].kind {
                    return Ok(size);
                }
            }
            _ => {}
        }
        Err(self.source.reject(
            name,
            format_args!(
                "is a hard link to `{}`, which is not an earlier regular file of the archive",
                show(target)
            ),
        ))
    }

    /// A symlink must be relative and, resolved from its own directory without following
    /// anything, must never climb above the import root.
    fn check_symlink(&self, name: &[u8], path: &str, target: &[u8]) -> Result<String> {
        let target = text(target).map_err(|why| {
            self.source
                .reject(name, format_args!("is a symlink whose target has {why}"))
        })?;
        if target.starts_with('/') {
            return Err(self.source.reject(
                name,
                format_args!(
                    "is a symlink to the absolute path `{}`; only relative links inside the source can be imported",
                    show(target.as_bytes())
                ),
            ));
        }
        let mut depth = path.matches('/').count();
        for component in target.split('/') {
            match component {
                "" | "." => {}
                ".." if depth == 0 => {
                    return Err(self.source.reject(
                        name,
                        format_args!(
                            "is a symlink to `{}`, which points outside the import root",
                            show(target.as_bytes())
                        ),
                    ));
                }
                ".." => depth -= 1,
                _ => depth += 1,
            }
        }
        Ok(target.to_owned())
    }

    /// The checks that need the whole list: a symlink whose target runs through another
    /// symlink of the source (`a/b -> ..` makes `a/l -> b/../..` climb out although it looks
    /// lexically fine), wherever in the archive that other link comes.
    pub(super) fn finish(self) -> Result<Vec<ImportEntry>> {
        for entry in &self.entries {
            let EntryKind::Symlink { target } = &entry.kind else {
                continue;
            };
            let mut at: Vec<&str> = entry.path.split('/').collect();
            at.pop();
            let components: Vec<&str> = target.split('/').collect();
            for (i, component) in components.iter().enumerate() {
                match *component {
                    "" | "." => {}
                    ".." => {
                        at.pop();
                    }
                    component => {
                        at.push(component);
                        let last = i + 1 == components.len();
                        let through = at.join("/");
                        let is_link = self.index.get(&through).is_some_and(|slot| {
                            matches!(self.entries[slot.at].kind, EntryKind::Symlink { .. })
                        });
                        if !last && is_link {
                            return Err(self.source.reject(
                                entry.path.as_bytes(),
                                format_args!(
                                    "is a symlink to `{}`, which runs through `{}`, another symlink of the same source",
                                    show(target.as_bytes()),
                                    show(through.as_bytes())
                                ),
                            ));
                        }
                    }
                }
            }
        }
        Ok(self.entries)
    }
}

/// Checks that a name is text a path can hold.
fn text(bytes: &[u8]) -> std::result::Result<&str, &'static str> {
    if bytes.is_empty() {
        return Err("an empty name");
    }
    if bytes.contains(&0) {
        return Err("a NUL byte in its name");
    }
    std::str::from_utf8(bytes).map_err(|_| "a name that is not valid UTF-8")
}

/// Normalizes an entry name: relative, no `..`; `.` and empty components dropped. The root
/// itself normalizes to the empty string.
pub(super) fn normalize(bytes: &[u8]) -> std::result::Result<String, &'static str> {
    let name = text(bytes)?;
    if name.starts_with('/') {
        return Err("an absolute name");
    }
    let mut path = String::with_capacity(name.len());
    for component in name.split('/') {
        match component {
            "" | "." => {}
            ".." => return Err("a `..` component in its name"),
            component => {
                if !path.is_empty() {
                    path.push('/');
                }
                path.push_str(component);
            }
        }
    }
    Ok(path)
}

/// Bytes for a one-line message: control characters and invalid UTF-8 escaped, long names cut.
pub(super) fn show(bytes: &[u8]) -> String {
    const MAX: usize = 200;
    let mut out = String::new();
    'chunks: for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if out.len() >= MAX {
                out.push('…');
                break 'chunks;
            }
            if c.is_control() {
                out.extend(c.escape_default());
            } else {
                out.push(c);
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(out, "\\x{byte:02x}");
        }
    }
    out
}

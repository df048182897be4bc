//! The root of a workspace's cell: the host's top-level entries bound into a tmpfs, so that
//! /workspace can exist beside them, and the workspace mounted there.
//!
//! A `burrow run` cell uses the host's root itself (cloned read-only), which is cheaper, but a
//! read-only clone cannot gain a new top-level directory.

use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, FileType, Mode, OFlags};
use rustix::mount::MountAttrFlags;

use super::build::{attach_to, clone_host_path, make_file, new_filesystem};
use crate::error::Step;
use crate::report::{AtStep, StepError};
use crate::spec::WorkspaceMount;
use crate::sys::{self, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};

/// Top-level directories the cell mounts its own filesystems on: made empty, not bound.
const OWN_MOUNTPOINTS: [&str; 4] = ["proc", "dev", "tmp", "run"];

/// The workspace's own name at the top of the cell.
const WORKSPACE_NAME: &str = "workspace";

/// What goes at the top of the cell's root, taken from the host before the root exists.
pub(crate) enum TopEntry {
    /// A directory (or file) of the host, cloned read-only.
    Bound {
        name: OsString,
        tree: OwnedFd,
        is_dir: bool,
    },
    /// A symlink, recreated as it is (/bin -> usr/bin on merged-/usr systems).
    Link { name: OsString, target: OsString },
    /// An empty directory for the cell's own mounts.
    Empty { name: OsString },
}

/// Clones the host's top-level entries. Must run before anything is attached over the host's
/// tree.
pub(crate) fn take_top_entries() -> Result<Vec<TopEntry>, StepError> {
    let step = Step::CloneRoot;
    let root = rustix::fs::open(
        "/",
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .at(step)?;
    let mut entries = Vec::new();
    for entry in rustix::fs::Dir::read_from(&root).at(step)? {
        let entry = entry.at(step)?;
        let name = OsStr::from_bytes(entry.file_name().to_bytes()).to_os_string();
        if name == "." || name == ".." || name == WORKSPACE_NAME {
            continue;
        }
        if OWN_MOUNTPOINTS.iter().any(|own| name == *own) {
            entries.push(TopEntry::Empty { name });
            continue;
        }
        let path = Path::new("/").join(&name);
        let stat = rustix::fs::statat(CWD, &path, rustix::fs::AtFlags::SYMLINK_NOFOLLOW)
            .at_path(step, &path)?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => {
                let target = rustix::fs::readlinkat(CWD, &path, Vec::new()).at_path(step, &path)?;
                entries.push(TopEntry::Link {
                    name,
                    target: OsStr::from_bytes(target.to_bytes()).to_os_string(),
                });
            }
            kind @ (FileType::Directory | FileType::RegularFile) => {
                let is_dir = kind == FileType::Directory;
                let tree = clone_host_path(&path, is_dir, step)?;
                sys::mount_setattr(
                    tree.as_fd(),
                    is_dir,
                    MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                    0,
                )
                .at_path(Step::ReadOnlyRoot, &path)?;
                entries.push(TopEntry::Bound { name, tree, is_dir });
            }
            // Sockets and the like at the top of a host are nobody's business in a cell.
            _ => {}
        }
    }
    Ok(entries)
}

/// A tmpfs for the cell's root, to be attached at the staging point.
pub(crate) fn new_root_tmpfs() -> Result<OwnedFd, StepError> {
    new_filesystem(
        "tmpfs",
        &[("size", Some("1048576")), ("mode", Some("0755"))],
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
    )
    .at(Step::CloneRoot)
}

/// Recreates the host's top level inside the attached tmpfs root.
pub(crate) fn populate_root(
    new_root: BorrowedFd<'_>,
    entries: &[TopEntry],
) -> Result<(), StepError> {
    let step = Step::CloneRoot;
    for entry in entries {
        match entry {
            TopEntry::Empty { name } => make_dir(new_root, name).at(step)?,
            TopEntry::Link { name, target } => {
                rustix::fs::symlinkat(target.as_os_str(), new_root, name.as_os_str()).at(step)?;
            }
            TopEntry::Bound { name, tree, is_dir } => {
                let mountpoint = if *is_dir {
                    make_dir(new_root, name).at(step)?;
                    super::build::open_beneath(new_root, Path::new(name)).at(step)?
                } else {
                    make_file(new_root, Path::new(name), 0o644).at(step)?
                };
                attach_to(tree.as_fd(), mountpoint.as_fd()).at(step)?;
            }
        }
    }
    make_dir(new_root, OsStr::new(WORKSPACE_NAME)).at(step)
}

fn make_dir(dir: BorrowedFd<'_>, name: &OsStr) -> std::io::Result<()> {
    Ok(rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o755))?)
}

/// Attaches the workspace's tree (from [`workspace_tree`]) at /workspace.
pub(crate) fn attach_workspace(new_root: BorrowedFd<'_>, tree: &OwnedFd) -> Result<(), StepError> {
    let step = Step::BindWritable;
    let target = super::build::open_beneath(new_root, Path::new(WORKSPACE_NAME)).at(step)?;
    attach_to(tree.as_fd(), target.as_fd()).at(step)
}

/// The workspace as a detached mount: an overlay of its layers, or its directory cloned. Made
/// before the new root covers the staging point, under which the layers may lie.
pub(crate) fn workspace_tree(workspace: &WorkspaceMount) -> Result<OwnedFd, StepError> {
    match workspace {
        WorkspaceMount::Directory(path) => {
            let tree = clone_host_path(path, true, Step::BindWritable)?;
            sys::mount_setattr(tree.as_fd(), true, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0)
                .at_path(Step::BindWritable, path)?;
            Ok(tree)
        }
        WorkspaceMount::Overlay { lower, upper, work } => overlay(lower, upper, work),
    }
}

/// An overlay in the cell's user namespace. `userxattr` keeps overlayfs's own metadata in the
/// `user.overlay.*` attributes an unprivileged mounter may write.
fn overlay(lower: &[PathBuf], upper: &Path, work: &Path) -> Result<OwnedFd, StepError> {
    let step = Step::BindWritable;
    let context =
        rustix::mount::fsopen("overlay", rustix::mount::FsOpenFlags::FSOPEN_CLOEXEC).at(step)?;
    if sys::kernel_at_least(6, 8) {
        // One layer per call: no separator to escape in the paths.
        for layer in lower {
            rustix::mount::fsconfig_set_string(&context, "lowerdir+", layer.as_os_str())
                .at_path(step, layer)?;
        }
    } else {
        rustix::mount::fsconfig_set_string(
            &context,
            "lowerdir",
            joined_lowerdirs(lower).as_os_str(),
        )
        .at(step)?;
    }
    rustix::mount::fsconfig_set_string(&context, "upperdir", upper.as_os_str())
        .at_path(step, upper)?;
    rustix::mount::fsconfig_set_string(&context, "workdir", work.as_os_str())
        .at_path(step, work)?;
    rustix::mount::fsconfig_set_flag(&context, "userxattr").at(step)?;
    rustix::mount::fsconfig_create(&context).at(step)?;
    rustix::mount::fsmount(
        &context,
        rustix::mount::FsMountFlags::FSMOUNT_CLOEXEC,
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
    )
    .at(step)
}

/// The legacy `lowerdir=a:b` form, with `:` and `\` escaped.
fn joined_lowerdirs(lower: &[PathBuf]) -> OsString {
    let mut joined = Vec::new();
    for (index, layer) in lower.iter().enumerate() {
        if index > 0 {
            joined.push(b':');
        }
        for &byte in layer.as_os_str().as_bytes() {
            if byte == b':' || byte == b'\\' {
                joined.push(b'\\');
            }
            joined.push(byte);
        }
    }
    OsString::from(OsStr::from_bytes(&joined))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_lowerdirs_escape_their_separator() {
        let joined = joined_lowerdirs(&[
            PathBuf::from("/a:b"),
            PathBuf::from("/c\\d"),
            PathBuf::from("/e"),
        ]);
        assert_eq!(joined, OsString::from("/a\\:b:/c\\\\d:/e"));
    }
}

//! Building the cell's root inside its user and mount namespaces.
//!
//! The host's mount tree is cloned read-only, private areas are laid over it, writable roots
//! are bound in, protected and hidden paths are covered, and then the cell pivots into the new
//! tree and detaches the host's. Every lookup is `openat2` with `RESOLVE_NO_SYMLINKS` and every
//! mount goes through the file descriptor API (`open_tree` / `move_mount`), so a path that turns
//! into a symlink halfway is refused rather than followed.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use rustix::fs::{CWD, FileType, Mode, OFlags, ResolveFlags};
use rustix::mount::{
    FsMountFlags, FsOpenFlags, MountAttrFlags, MountPropagationFlags, MoveMountFlags,
    OpenTreeFlags, UnmountFlags,
};

use super::{MountPlan, ProtectedPath, relative_to_root, workspace};
use crate::error::Step;
use crate::report::{AtStep, StepError};
use crate::sys::{self, MOUNT_ATTR_NODEV, MOUNT_ATTR_NOSUID, MOUNT_ATTR_RDONLY};

/// Where the new root is attached before the pivot: any directory of the host works, since the
/// cell's mount namespace is private and the host's tree is detached afterwards.
const STAGING: &str = "/tmp";

/// Device nodes bound from the host into the cell's /dev.
const DEVICE_NODES: [&str; 6] = ["null", "zero", "full", "random", "urandom", "tty"];

/// Names inside the scratch tmpfs. Its root is covered at the end, so only the areas bound
/// elsewhere are reachable from the cell.
const SCRATCH_TMP: &str = "tmp";
const SCRATCH_RUN: &str = "run";
const SCRATCH_SHM: &str = "shm";
const PLACEHOLDER_DIR: &str = "hidden-dir";
const PLACEHOLDER_FILE: &str = "hidden-file";

/// Private areas of the cell: mountpoints for writable roots may be created inside them.
const PRIVATE_AREAS: [&str; 4] = ["tmp", "var/tmp", "run", "dev/shm"];

/// Builds the cell's root; returns a descriptor of it, to pivot into with [`enter_root`].
pub(crate) fn build_root(plan: &MountPlan, pid_max: Option<u64>) -> Result<OwnedFd, StepError> {
    // Nothing done in this namespace may propagate back into the host's mount tree.
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .at(Step::PrivateMounts)?;

    // Take every host tree the cell needs before the new root covers the staging point: a
    // writable root under /tmp would otherwise be looked up inside the read-only clone. A
    // workspace's cell needs a root that can hold /workspace: a tmpfs with the host's top level
    // bound into it; other cells use a read-only clone of the host's root itself.
    let (root, top_entries) = match &plan.workspace {
        None => {
            let root = clone_tree(CWD, Path::new("/"), true).at(Step::CloneRoot)?;
            sys::mount_setattr(
                root.as_fd(),
                true,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                0,
            )
            .at(Step::ReadOnlyRoot)?;
            (root, None)
        }
        Some(_) => (
            workspace::new_root_tmpfs()?,
            Some(workspace::take_top_entries()?),
        ),
    };
    let workspace_tree = plan
        .workspace
        .as_ref()
        .map(workspace::workspace_tree)
        .transpose()?;
    let writable = clone_writable_roots(plan)?;
    let readonly = plan
        .readonly
        .iter()
        .map(|path| {
            let tree = clone_host_path(path, true, Step::BindWritable)?;
            sys::mount_setattr(
                tree.as_fd(),
                true,
                MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                0,
            )
            .at_path(Step::BindWritable, path)?;
            Ok((path.clone(), tree))
        })
        .collect::<Result<Vec<_>, StepError>>()?;
    let devices = clone_device_nodes()?;
    let run_files = plan
        .run_files
        .iter()
        .map(|path| Ok((path.clone(), clone_host_path(path, false, Step::MountTmp)?)))
        .collect::<Result<Vec<_>, StepError>>()?;

    attach(root.as_fd(), CWD, Path::new(STAGING)).at(Step::CloneRoot)?;
    let new_root = open_path(CWD, Path::new(STAGING)).at(Step::CloneRoot)?;
    if let Some(entries) = &top_entries {
        workspace::populate_root(new_root.as_fd(), entries)?;
    }

    let scratch = mount_scratch(new_root.as_fd(), plan.tmp_size, &run_files)?;
    mount_dev(new_root.as_fd(), &devices, &scratch)?;
    mount_proc(new_root.as_fd(), pid_max)?;
    if let Some(tree) = &workspace_tree {
        workspace::attach_workspace(new_root.as_fd(), tree)?;
    }
    for (path, tree) in writable.iter().chain(&readonly) {
        bind_root(new_root.as_fd(), path, tree)?;
    }
    let workspace_root = plan
        .workspace
        .as_ref()
        .map(|_| PathBuf::from(crate::spec::WORKSPACE_DIR));
    for root in plan.writable.iter().chain(&workspace_root) {
        protect_inside(new_root.as_fd(), root, &plan.protected)?;
    }
    for hidden in &plan.hidden {
        hide(new_root.as_fd(), &hidden.path, &scratch)?;
    }
    if top_entries.is_some() {
        // Nothing new may appear at the top of the cell.
        sys::mount_setattr(new_root.as_fd(), false, MOUNT_ATTR_RDONLY, 0).at(Step::ReadOnlyRoot)?;
    }
    Ok(new_root)
}

/// Switches to the new root, detaches the host's, and enters the working directory.
pub(crate) fn enter_root(new_root: OwnedFd, cwd: &Path) -> Result<(), StepError> {
    // pivot_root(".", ".") stacks the old root on top of the new one at "."; detaching "."
    // then removes the old root, with no directory needed to park it in.
    rustix::process::fchdir(&new_root).at(Step::PivotRoot)?;
    // The working directory holds the new root from here on.
    drop(new_root);
    rustix::process::pivot_root(".", ".").at(Step::PivotRoot)?;
    rustix::mount::unmount(".", UnmountFlags::DETACH).at(Step::DetachOldRoot)?;
    rustix::process::chdir("/").at(Step::DetachOldRoot)?;
    rustix::process::chdir(cwd).at_path(Step::Chdir, cwd)
}

fn clone_writable_roots(plan: &MountPlan) -> Result<Vec<(PathBuf, OwnedFd)>, StepError> {
    plan.writable
        .iter()
        .map(|path| {
            let tree = clone_host_path(path, true, Step::BindWritable)?;
            sys::mount_setattr(tree.as_fd(), true, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0)
                .at_path(Step::BindWritable, path)?;
            Ok((path.clone(), tree))
        })
        .collect()
}

fn clone_device_nodes() -> Result<Vec<(&'static str, OwnedFd)>, StepError> {
    DEVICE_NODES
        .iter()
        .map(|name| {
            let path = Path::new("/dev").join(name);
            Ok((*name, clone_host_path(&path, false, Step::MountDev)?))
        })
        .collect()
}

/// Clones a host path (looked up without following symlinks) as a detached mount.
pub(super) fn clone_host_path(
    path: &Path,
    recursive: bool,
    step: Step,
) -> Result<OwnedFd, StepError> {
    let source = rustix::fs::openat2(
        CWD,
        path,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::NO_SYMLINKS,
    )
    .at_path(step, path)?;
    clone_tree(source.as_fd(), Path::new(""), recursive).at_path(step, path)
}

/// The cell's scratch tmpfs and descriptors of its parts.
struct Scratch {
    shm: OwnedFd,
    placeholder_dir: OwnedFd,
    placeholder_file: OwnedFd,
}

/// One tmpfs, bounded by `size`, serves /tmp, /var/tmp, /run and /dev/shm, so the cell's
/// scratch space has one bound rather than one per directory.
fn mount_scratch(
    new_root: BorrowedFd<'_>,
    size: u64,
    run_files: &[(PathBuf, OwnedFd)],
) -> Result<Scratch, StepError> {
    let step = Step::MountTmp;
    let tmpfs = new_tmpfs(size, "0755").at(step)?;
    let tmp_target = open_beneath(new_root, Path::new("tmp")).at(step)?;
    attach_to(tmpfs.as_fd(), tmp_target.as_fd()).at(step)?;
    let top = open_beneath(new_root, Path::new("tmp")).at(step)?;

    make_dir(top.as_fd(), SCRATCH_TMP, 0o1777).at(step)?;
    make_dir(top.as_fd(), SCRATCH_RUN, 0o755).at(step)?;
    make_dir(top.as_fd(), SCRATCH_SHM, 0o1777).at(step)?;
    make_dir(top.as_fd(), PLACEHOLDER_DIR, 0o555).at(step)?;
    make_file(top.as_fd(), Path::new(PLACEHOLDER_FILE), 0o444).at(step)?;

    // Host files that must stay visible under the private /run (the resolver's), bound into
    // the scratch copy of /run before that is cloned into place.
    for (path, tree) in run_files {
        let inside_run = path.strip_prefix("/run").unwrap_or(path);
        let target = create_beneath(top.as_fd(), &Path::new(SCRATCH_RUN).join(inside_run), false)
            .at_path(step, path)?;
        attach_to(tree.as_fd(), target.as_fd()).at_path(step, path)?;
    }

    let tmp = open_beneath(top.as_fd(), Path::new(SCRATCH_TMP)).at(step)?;
    let run = open_beneath(top.as_fd(), Path::new(SCRATCH_RUN)).at(step)?;
    bind_if_dir(new_root, "run", run.as_fd(), true).at(step)?;
    bind_if_dir(new_root, "var/run", run.as_fd(), true).at(step)?;
    bind_if_dir(new_root, "var/tmp", tmp.as_fd(), false).at(step)?;

    let scratch = Scratch {
        shm: open_beneath(top.as_fd(), Path::new(SCRATCH_SHM)).at(step)?,
        placeholder_dir: open_beneath(top.as_fd(), Path::new(PLACEHOLDER_DIR)).at(step)?,
        placeholder_file: open_beneath(top.as_fd(), Path::new(PLACEHOLDER_FILE)).at(step)?,
    };
    // Last, cover the scratch root with its own tmp directory: the cell's /tmp.
    let tmp_tree = clone_tree(tmp.as_fd(), Path::new(""), false).at(step)?;
    attach_to(tmp_tree.as_fd(), top.as_fd()).at(step)?;
    Ok(scratch)
}

/// Binds `source` over `new_root/relative` when that is a real directory of the host's tree
/// (not a symlink: /var/run is usually one, to /run, and then needs nothing).
fn bind_if_dir(
    new_root: BorrowedFd<'_>,
    relative: &str,
    source: BorrowedFd<'_>,
    recursive: bool,
) -> io::Result<()> {
    let target = match open_beneath(new_root, Path::new(relative)) {
        Ok(target) => target,
        Err(error) if is_absent_or_link(&error) => return Ok(()),
        Err(error) => return Err(error),
    };
    if !is_dir(target.as_fd())? {
        return Ok(());
    }
    let tree = clone_tree(source, Path::new(""), recursive)?;
    attach_to(tree.as_fd(), target.as_fd())
}

/// A minimal /dev: a few host device nodes, a private devpts, /dev/shm, and the usual links.
fn mount_dev(
    new_root: BorrowedFd<'_>,
    devices: &[(&'static str, OwnedFd)],
    scratch: &Scratch,
) -> Result<(), StepError> {
    let step = Step::MountDev;
    let tmpfs = new_tmpfs(64 * 1024, "0755").at(step)?;
    let target = open_beneath(new_root, Path::new("dev")).at(step)?;
    attach_to(tmpfs.as_fd(), target.as_fd()).at(step)?;
    let dev = open_beneath(new_root, Path::new("dev")).at(step)?;

    for (name, tree) in devices {
        let node = make_file(dev.as_fd(), Path::new(name), 0o666).at(step)?;
        attach_to(tree.as_fd(), node.as_fd()).at(step)?;
    }
    for (link, target) in [
        ("ptmx", "pts/ptmx"),
        ("fd", "/proc/self/fd"),
        ("stdin", "/proc/self/fd/0"),
        ("stdout", "/proc/self/fd/1"),
        ("stderr", "/proc/self/fd/2"),
    ] {
        rustix::fs::symlinkat(target, dev.as_fd(), link).at(step)?;
    }

    // A devpts instance of the cell's own: its ptys are not the host's.
    make_dir(dev.as_fd(), "pts", 0o755).at(step)?;
    let devpts = new_filesystem(
        "devpts",
        &[
            ("newinstance", None),
            ("ptmxmode", Some("0666")),
            ("mode", Some("0620")),
        ],
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )
    .at(step)?;
    let pts = open_beneath(dev.as_fd(), Path::new("pts")).at(step)?;
    attach_to(devpts.as_fd(), pts.as_fd()).at(step)?;

    make_dir(dev.as_fd(), "shm", 0o1777).at(step)?;
    let shm_target = open_beneath(dev.as_fd(), Path::new("shm")).at(step)?;
    let shm = clone_tree(scratch.shm.as_fd(), Path::new(""), false).at(step)?;
    attach_to(shm.as_fd(), shm_target.as_fd()).at(step)?;

    // Nothing more may be created in /dev.
    sys::mount_setattr(dev.as_fd(), false, MOUNT_ATTR_RDONLY, 0).at(step)
}

/// A /proc of the cell's own pid namespace, read-only: sysctls, sysrq-trigger and the like
/// cannot be written even by a cell whose user is root on the host. Before it is made read-only,
/// the namespace's pid_max is set when that bounds the number of processes (see spawn.rs).
fn mount_proc(new_root: BorrowedFd<'_>, pid_max: Option<u64>) -> Result<(), StepError> {
    let step = Step::MountProc;
    let proc = new_filesystem(
        "proc",
        &[],
        MountAttrFlags::MOUNT_ATTR_NOSUID
            | MountAttrFlags::MOUNT_ATTR_NODEV
            | MountAttrFlags::MOUNT_ATTR_NOEXEC,
    )
    .at(step)?;
    if let Some(pid_max) = pid_max {
        let file = rustix::fs::openat(
            &proc,
            "sys/kernel/pid_max",
            OFlags::WRONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .at_path(step, Path::new("/proc/sys/kernel/pid_max"))?;
        rustix::io::write(&file, pid_max.to_string().as_bytes())
            .at_path(step, Path::new("/proc/sys/kernel/pid_max"))?;
    }
    sys::mount_setattr(proc.as_fd(), false, MOUNT_ATTR_RDONLY, 0).at(step)?;
    let target = open_beneath(new_root, Path::new("proc")).at(step)?;
    attach_to(proc.as_fd(), target.as_fd()).at(step)
}

fn bind_root(new_root: BorrowedFd<'_>, path: &Path, tree: &OwnedFd) -> Result<(), StepError> {
    let relative = relative_to_root(path);
    let target = match open_beneath(new_root, relative) {
        Ok(target) => target,
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) && in_private_area(relative) => {
            // The cell's /tmp (or /run) is fresh: make the mountpoint in it.
            let is_dir =
                rustix::fs::fstat(tree).map(|st| FileType::from_raw_mode(st.st_mode).is_dir());
            let is_dir = is_dir.at_path(Step::BindWritable, path)?;
            create_beneath(new_root, relative, is_dir).at_path(Step::BindWritable, path)?
        }
        Err(error) => return Err(error).at_path(Step::BindWritable, path),
    };
    attach_to(tree.as_fd(), target.as_fd()).at_path(Step::BindWritable, path)
}

/// Keeps each protected path inside a writable root read-only.
///
/// The path's ancestors inside the root are bound onto themselves (still writable) first: a
/// mountpoint cannot be renamed or removed, so sandboxed code cannot move `.git` aside and put a
/// fresh one with its own hooks in its place.
fn protect_inside(
    new_root: BorrowedFd<'_>,
    root: &Path,
    protected: &[ProtectedPath],
) -> Result<(), StepError> {
    let step = Step::ProtectPath;
    let base = open_beneath(new_root, relative_to_root(root)).at_path(step, root)?;
    if !is_dir(base.as_fd()).at_path(step, root)? {
        return Ok(());
    }
    let mut pinned: HashSet<PathBuf> = HashSet::new();
    'paths: for entry in protected {
        let full = root.join(&entry.relative);
        let mut ancestor = PathBuf::new();
        let components: Vec<&OsStr> = entry.relative.iter().collect();
        let Some((last, parents)) = components.split_last() else {
            continue;
        };
        for component in parents {
            ancestor.push(component);
            let fd = match open_beneath(base.as_fd(), &ancestor) {
                Ok(fd) => fd,
                Err(error) if is_absent(&error) => continue 'paths,
                Err(error) => return Err(error).at_path(step, &root.join(&ancestor)),
            };
            if !is_dir(fd.as_fd()).at_path(step, &full)? {
                continue 'paths; // e.g. `.git` is a file in a worktree: nothing to protect here
            }
            if pinned.insert(ancestor.clone()) {
                let tree = clone_tree(fd.as_fd(), Path::new(""), true).at_path(step, &full)?;
                attach_to(tree.as_fd(), fd.as_fd()).at_path(step, &full)?;
            }
        }
        let target = match open_beneath(base.as_fd(), &entry.relative) {
            Ok(fd) => fd,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) && entry.is_dir => {
                let parent = open_beneath(base.as_fd(), &ancestor).at_path(step, &full)?;
                make_dir(parent.as_fd(), *last, 0o755).at_path(step, &full)?;
                open_beneath(base.as_fd(), &entry.relative).at_path(step, &full)?
            }
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => continue,
            Err(error) if error.raw_os_error() == Some(libc::ELOOP) => {
                return Err(StepError {
                    step,
                    source: io::Error::other(
                        "it is a symlink, so it cannot be kept read-only; make it a real \
                         directory or file, or remove it from filesystem.protected",
                    ),
                    detail: full.display().to_string(),
                });
            }
            Err(error) => return Err(error).at_path(step, &full),
        };
        let tree = clone_tree(target.as_fd(), Path::new(""), true).at_path(step, &full)?;
        sys::mount_setattr(tree.as_fd(), true, MOUNT_ATTR_RDONLY, 0).at_path(step, &full)?;
        attach_to(tree.as_fd(), target.as_fd()).at_path(step, &full)?;
    }
    Ok(())
}

/// Covers a path with an empty, read-only placeholder of the same kind.
fn hide(new_root: BorrowedFd<'_>, path: &Path, scratch: &Scratch) -> Result<(), StepError> {
    let step = Step::HidePath;
    let target = match open_beneath(new_root, relative_to_root(path)) {
        Ok(target) => target,
        // Under a private area, or gone since planning: absent either way.
        Err(error) if error.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        Err(error) => return Err(error).at_path(step, path),
    };
    let placeholder = if is_dir(target.as_fd()).at_path(step, path)? {
        &scratch.placeholder_dir
    } else {
        &scratch.placeholder_file
    };
    let tree = clone_tree(placeholder.as_fd(), Path::new(""), false).at_path(step, path)?;
    sys::mount_setattr(tree.as_fd(), false, MOUNT_ATTR_RDONLY, 0).at_path(step, path)?;
    attach_to(tree.as_fd(), target.as_fd()).at_path(step, path)
}

// ---------------------------------------------------------------------------------------------
// Small helpers over the mount and openat2 APIs.

pub(super) fn clone_tree<Fd: AsFd>(dir: Fd, path: &Path, recursive: bool) -> io::Result<OwnedFd> {
    let mut flags = OpenTreeFlags::OPEN_TREE_CLONE | OpenTreeFlags::OPEN_TREE_CLOEXEC;
    if path.as_os_str().is_empty() {
        flags |= OpenTreeFlags::AT_EMPTY_PATH;
    }
    if recursive {
        flags |= OpenTreeFlags::AT_RECURSIVE;
    }
    Ok(rustix::mount::open_tree(dir, path, flags)?)
}

/// Attaches a detached tree at `path` (relative to `dir`).
fn attach<Fd: AsFd>(tree: BorrowedFd<'_>, dir: Fd, path: &Path) -> io::Result<()> {
    Ok(rustix::mount::move_mount(
        tree,
        "",
        dir,
        path,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )?)
}

/// Attaches a detached tree onto the file or directory `target` refers to.
pub(super) fn attach_to(tree: BorrowedFd<'_>, target: BorrowedFd<'_>) -> io::Result<()> {
    Ok(rustix::mount::move_mount(
        tree,
        "",
        target,
        "",
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH | MoveMountFlags::MOVE_MOUNT_T_EMPTY_PATH,
    )?)
}

fn open_path<Fd: AsFd>(dir: Fd, path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        path,
        OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

/// Looks `relative` up beneath `dir`, refusing any symlink and any escape from `dir`.
pub(super) fn open_beneath(dir: BorrowedFd<'_>, relative: &Path) -> io::Result<OwnedFd> {
    let relative = if relative.as_os_str().is_empty() {
        Path::new(".")
    } else {
        relative
    };
    Ok(rustix::fs::openat2(
        dir,
        relative,
        OFlags::PATH | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS,
    )?)
}

/// Creates the missing directories of `relative` beneath `dir`, and the last component as a
/// directory or an empty file, and returns it.
pub(super) fn create_beneath(
    dir: BorrowedFd<'_>,
    relative: &Path,
    last_is_dir: bool,
) -> io::Result<OwnedFd> {
    let components: Vec<&OsStr> = relative.iter().collect();
    let mut current = open_beneath(dir, Path::new(""))?;
    for (index, component) in components.iter().enumerate() {
        let is_last = index + 1 == components.len();
        match open_beneath(current.as_fd(), Path::new(component)) {
            Ok(next) => current = next,
            Err(error) if error.raw_os_error() == Some(libc::ENOENT) => {
                if is_last && !last_is_dir {
                    current = make_file(current.as_fd(), Path::new(component), 0o644)?;
                } else {
                    make_dir(current.as_fd(), *component, 0o755)?;
                    current = open_beneath(current.as_fd(), Path::new(component))?;
                }
            }
            Err(error) => return Err(error),
        }
    }
    Ok(current)
}

fn make_dir<P: rustix::path::Arg>(dir: BorrowedFd<'_>, name: P, mode: u32) -> io::Result<()> {
    Ok(rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(mode))?)
}

/// Creates an empty regular file and returns an O_PATH descriptor of it.
pub(super) fn make_file(dir: BorrowedFd<'_>, name: &Path, mode: u32) -> io::Result<OwnedFd> {
    drop(rustix::fs::openat(
        dir,
        name,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC,
        Mode::from_raw_mode(mode),
    )?);
    open_beneath(dir, name)
}

/// A detached tmpfs of `size` bytes.
fn new_tmpfs(size: u64, mode: &str) -> io::Result<OwnedFd> {
    new_filesystem(
        "tmpfs",
        &[("size", Some(&size.to_string())), ("mode", Some(mode))],
        MountAttrFlags::MOUNT_ATTR_NOSUID | MountAttrFlags::MOUNT_ATTR_NODEV,
    )
}

/// A detached mount of a fresh filesystem instance, configured by key (and value).
pub(super) fn new_filesystem(
    kind: &str,
    options: &[(&str, Option<&str>)],
    attributes: MountAttrFlags,
) -> io::Result<OwnedFd> {
    let context = rustix::mount::fsopen(kind, FsOpenFlags::FSOPEN_CLOEXEC)?;
    for (key, value) in options {
        match value {
            Some(value) => rustix::mount::fsconfig_set_string(&context, *key, *value)?,
            None => rustix::mount::fsconfig_set_flag(&context, *key)?,
        }
    }
    rustix::mount::fsconfig_create(&context)?;
    Ok(rustix::mount::fsmount(
        &context,
        FsMountFlags::FSMOUNT_CLOEXEC,
        attributes,
    )?)
}

fn is_dir(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let stat = rustix::fs::fstat(fd)?;
    Ok(FileType::from_raw_mode(stat.st_mode).is_dir())
}

fn is_absent(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::ENOENT | libc::ENOTDIR))
}

fn is_absent_or_link(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(libc::ENOENT | libc::ENOTDIR | libc::ELOOP)
    )
}

fn in_private_area(relative: &Path) -> bool {
    PRIVATE_AREAS.iter().any(|area| relative.starts_with(area))
}

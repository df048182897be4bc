//! The cell's filesystem: planned in burrow before the clone, built inside the cell after it.
//!
//! Planning (here) resolves symlinks and checks that paths exist, so a bad `--write` fails with
//! a clear message before any namespace exists. Building ([`build`]) repeats every lookup
//! race-free with `openat2(RESOLVE_NO_SYMLINKS)` and mounts by file descriptor, because code in
//! another cell sharing a writable directory could swap a path for a symlink in between.

mod build;
mod workspace;

pub(crate) use build::{build_root, enter_root};

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use burrow_policy::NetworkMode;

use crate::error::SandboxError;
use crate::spec::{CellSpec, WorkspaceMount};

/// A path hidden from the cell, with what kind of placeholder covers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HiddenPath {
    pub(crate) path: PathBuf,
    pub(crate) is_dir: bool,
}

/// A path kept read-only inside every writable root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProtectedPath {
    /// Relative to the writable root, plain components only.
    pub(crate) relative: PathBuf,
    /// Written with a trailing `/`: created empty when missing.
    pub(crate) is_dir: bool,
}

/// Everything the cell's init needs to build its root, with host paths already resolved.
#[derive(Debug, Clone)]
pub(crate) struct MountPlan {
    /// Writable roots: canonical, existing, shallowest first.
    pub(crate) writable: Vec<PathBuf>,
    /// Paths bound read-only: the working directory, when it is not writable and lies in an
    /// area that is private in the cell (/tmp, say), where it would not exist otherwise.
    pub(crate) readonly: Vec<PathBuf>,
    /// Hidden paths that exist: canonical.
    pub(crate) hidden: Vec<HiddenPath>,
    /// Read-only paths inside writable roots.
    pub(crate) protected: Vec<ProtectedPath>,
    /// Size of the cell's scratch tmpfs (/tmp, /var/tmp, /run, /dev/shm).
    pub(crate) tmp_size: u64,
    /// The host's resolver configuration when it lives under /run (systemd-resolved), to be
    /// carried into the cell's private /run when the cell uses the host network.
    pub(crate) run_files: Vec<PathBuf>,
    /// The working directory, canonical.
    pub(crate) cwd: PathBuf,
    /// The workspace mounted at /workspace, its host paths canonical.
    pub(crate) workspace: Option<WorkspaceMount>,
}

impl MountPlan {
    /// Resolves and checks the spec's paths on the host.
    pub(crate) fn prepare(spec: &CellSpec) -> Result<MountPlan, SandboxError> {
        let fs = &spec.filesystem;
        let mut writable = Vec::with_capacity(fs.writable.len());
        for path in &fs.writable {
            let canonical = std::fs::canonicalize(path).map_err(|error| SandboxError::Path {
                path: path.clone(),
                reason: match error.kind() {
                    io::ErrorKind::NotFound => {
                        "no such file or directory: a writable root must exist; create it first"
                            .to_owned()
                    }
                    _ => format!("cannot be made writable: {error}"),
                },
            })?;
            if canonical == Path::new("/") {
                return Err(SandboxError::Path {
                    path: path.clone(),
                    reason: "resolves to /; refusing to make the whole filesystem writable"
                        .to_owned(),
                });
            }
            writable.push(canonical);
        }
        writable.sort_by_key(|path| path.components().count());
        writable.dedup();

        let mut hidden = Vec::new();
        for path in &fs.hidden {
            // Most credential paths do not exist; one lstat says so without resolving each
            // component the way canonicalize does.
            if std::fs::symlink_metadata(path).is_err_and(|e| e.kind() == io::ErrorKind::NotFound) {
                continue;
            }
            let canonical = match std::fs::canonicalize(path) {
                Ok(canonical) => canonical,
                // Absent already; nothing to cover.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) => {
                    return Err(SandboxError::Path {
                        path: path.clone(),
                        reason: format!("cannot be hidden: {error}"),
                    });
                }
            };
            if let Some(root) = writable.iter().find(|root| root.starts_with(&canonical)) {
                return Err(SandboxError::Path {
                    path: path.clone(),
                    reason: format!(
                        "is hidden but holds the writable root {}; drop one of the two",
                        root.display()
                    ),
                });
            }
            let is_dir = std::fs::metadata(&canonical).is_ok_and(|m| m.is_dir());
            hidden.push(HiddenPath {
                path: canonical,
                is_dir,
            });
        }

        let protected = fs
            .protected
            .iter()
            .map(|relative| ProtectedPath {
                is_dir: relative.as_os_str().as_bytes().ends_with(b"/"),
                relative: relative.components().collect(),
            })
            .collect();

        // A workspace's cell starts in /workspace, which exists only inside it.
        let in_workspace =
            spec.workspace.is_some() && spec.cwd.starts_with(crate::spec::WORKSPACE_DIR);
        let cwd = if in_workspace {
            spec.cwd.clone()
        } else {
            std::fs::canonicalize(&spec.cwd).map_err(|error| SandboxError::Path {
                path: spec.cwd.clone(),
                reason: format!("cannot be the working directory: {error}"),
            })?
        };
        if let Some(hide) = hidden.iter().find(|hide| cwd.starts_with(&hide.path)) {
            return Err(SandboxError::Path {
                path: cwd,
                reason: format!(
                    "is the working directory but {} is hidden; run from elsewhere or pass --cwd",
                    hide.path.display()
                ),
            });
        }

        let in_private_area = ["/tmp", "/var/tmp", "/run", "/var/run", "/dev/shm"]
            .iter()
            .any(|area| cwd.starts_with(area));
        let readonly = if in_private_area && !writable.iter().any(|root| cwd.starts_with(root)) {
            vec![cwd.clone()]
        } else {
            Vec::new()
        };

        let workspace = spec
            .workspace
            .as_ref()
            .map(canonical_workspace)
            .transpose()?;

        let run_files = match spec.network {
            NetworkMode::Host => resolver_files_under_run(),
            // Allow: programs reach names through the proxy, which resolves them on the host.
            NetworkMode::None | NetworkMode::Loopback | NetworkMode::Allow => Vec::new(),
        };

        Ok(MountPlan {
            writable,
            readonly,
            hidden,
            protected,
            tmp_size: fs.tmp_size.bytes(),
            run_files,
            cwd,
            workspace,
        })
    }
}

/// The workspace's host paths, resolved and checked to exist (as directories).
fn canonical_workspace(mount: &WorkspaceMount) -> Result<WorkspaceMount, SandboxError> {
    let resolve = |path: &PathBuf| -> Result<PathBuf, SandboxError> {
        let canonical = std::fs::canonicalize(path).map_err(|error| SandboxError::Path {
            path: path.clone(),
            reason: format!("cannot hold the workspace: {error}"),
        })?;
        if !canonical.is_dir() {
            return Err(SandboxError::Path {
                path: path.clone(),
                reason: "cannot hold the workspace: not a directory".to_owned(),
            });
        }
        Ok(canonical)
    };
    Ok(match mount {
        WorkspaceMount::Overlay { lower, upper, work } => WorkspaceMount::Overlay {
            lower: lower.iter().map(resolve).collect::<Result<_, _>>()?,
            upper: resolve(upper)?,
            work: resolve(work)?,
        },
        WorkspaceMount::Directory(path) => WorkspaceMount::Directory(resolve(path)?),
    })
}

/// /etc/resolv.conf is often a symlink into /run (systemd-resolved, NetworkManager); the cell's
/// /run is private, so the target file is carried over, or DNS would break.
fn resolver_files_under_run() -> Vec<PathBuf> {
    std::fs::canonicalize("/etc/resolv.conf")
        .ok()
        .filter(|target| target.starts_with("/run") && target.is_file())
        .into_iter()
        .collect()
}

/// The path relative to `/`, for lookups beneath the new root.
pub(crate) fn relative_to_root(path: &Path) -> &Path {
    path.strip_prefix("/").unwrap_or(path)
}

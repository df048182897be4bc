//! A cgroup per cell, for the limits that need one: memory for the whole cell, CPU bandwidth,
//! and the process count when burrow runs as root (the kernel exempts root from RLIMIT_NPROC).
//!
//! Both cgroup versions are supported because hosts have either or both (this project's own
//! machines mount v1 controllers beside a v2 hierarchy without them). Each controller is taken
//! from the hierarchy that has it: a v1 hierarchy under this process's own cgroup, or the v2
//! hierarchy, under this process's cgroup when that is the root, else beside it (the parent of
//! a systemd scope is where delegation happens). A cell's cgroup is created only when a limit
//! needs it, because creating one costs more than the rest of a cell's set-up.

mod detect;

pub use detect::{CgroupLayout, Hierarchy};

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// Which cgroup version enforces a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CgroupVersion {
    /// A v1 controller hierarchy.
    V1,
    /// The unified hierarchy.
    V2,
}

/// What a cell needs cgroups for.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct CgroupNeeds {
    pub(crate) memory: Option<u64>,
    pub(crate) pids: Option<u64>,
    pub(crate) cpus: Option<f64>,
}

impl CgroupNeeds {
    fn is_empty(&self) -> bool {
        self.memory.is_none() && self.pids.is_none() && self.cpus.is_none()
    }
}

/// Where a controller can be used, found by [`CgroupLayout::place`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    /// The version of the hierarchy.
    pub version: CgroupVersion,
    /// The directory cell cgroups are created in.
    pub parent: PathBuf,
}

impl CgroupLayout {
    /// Where cells' cgroups for `controller` can go, if anywhere: a writable directory whose
    /// hierarchy offers the controller.
    pub fn place(&self, controller: &str) -> Option<Placement> {
        if let Some(hierarchy) = self.v1.get(controller)
            && is_writable_dir(&hierarchy.own_dir)
        {
            return Some(Placement {
                version: CgroupVersion::V1,
                parent: hierarchy.own_dir.clone(),
            });
        }
        let v2 = self.v2.as_ref()?;
        let parent = if v2.own_dir == v2.mount_point {
            v2.own_dir.clone()
        } else {
            v2.own_dir.parent()?.to_path_buf()
        };
        let available = std::fs::read_to_string(parent.join("cgroup.controllers")).ok()?;
        (available.split_whitespace().any(|c| c == controller) && is_writable_dir(&parent))
            .then_some(Placement {
                version: CgroupVersion::V2,
                parent,
            })
    }
}

fn is_writable_dir(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok()
}

/// One directory of a cell's cgroup (one per v1 hierarchy, or the single v2 one).
#[derive(Debug)]
struct Dir {
    path: PathBuf,
    version: CgroupVersion,
}

/// A cell's cgroup, removed when dropped.
#[derive(Debug)]
pub(crate) struct CellCgroup {
    dirs: Vec<Dir>,
    memory: Option<Dir>,
}

/// How each limit ended up enforced.
#[derive(Debug, Default)]
pub(crate) struct CgroupOutcome {
    pub(crate) cgroup: Option<CellCgroup>,
    pub(crate) memory: Option<CgroupVersion>,
    pub(crate) pids: Option<CgroupVersion>,
    pub(crate) cpus: Option<CgroupVersion>,
}

static NEXT_CELL: AtomicU32 = AtomicU32::new(0);

impl CellCgroup {
    /// Creates the cgroup directories the needs call for and writes their limits. A controller
    /// that is nowhere available is left out: the caller decides whether that is fatal.
    pub(crate) fn create(layout: &CgroupLayout, needs: CgroupNeeds) -> io::Result<CgroupOutcome> {
        let mut outcome = CgroupOutcome::default();
        if needs.is_empty() {
            return Ok(outcome);
        }
        let name = format!(
            "burrow-{}-{}",
            std::process::id(),
            NEXT_CELL.fetch_add(1, Ordering::Relaxed)
        );
        let mut cell = CellCgroup {
            dirs: Vec::new(),
            memory: None,
        };
        let wanted = [
            ("memory", needs.memory.is_some()),
            ("pids", needs.pids.is_some()),
            ("cpu", needs.cpus.is_some()),
        ];
        for (controller, needed) in wanted {
            if !needed {
                continue;
            }
            let Some(placement) = layout.place(controller) else {
                continue;
            };
            let dir = cell.dir_for(&placement, &name, controller)?;
            let version = placement.version;
            match controller {
                "memory" => {
                    let bytes = needs.memory.unwrap_or(u64::MAX);
                    write_memory_limit(&dir, version, bytes)?;
                    outcome.memory = Some(version);
                    cell.memory = Some(Dir { path: dir, version });
                }
                "pids" => {
                    let max = needs.pids.unwrap_or(u64::MAX);
                    write_file(&dir.join("pids.max"), &max.to_string())?;
                    outcome.pids = Some(version);
                }
                _ => {
                    let cpus = needs.cpus.unwrap_or(1.0);
                    write_cpu_limit(&dir, version, cpus)?;
                    outcome.cpus = Some(version);
                }
            }
        }
        if !cell.dirs.is_empty() {
            outcome.cgroup = Some(cell);
        }
        Ok(outcome)
    }

    /// The directory for one controller, creating it (and, for v2, enabling the controller).
    fn dir_for(
        &mut self,
        placement: &Placement,
        name: &str,
        controller: &str,
    ) -> io::Result<PathBuf> {
        let path = placement.parent.join(name);
        if placement.version == CgroupVersion::V2 {
            // Enabling is idempotent; it fails only where delegation does not allow it.
            let control = placement.parent.join("cgroup.subtree_control");
            let enabled = std::fs::read_to_string(&control).unwrap_or_default();
            if !enabled.split_whitespace().any(|c| c == controller) {
                write_file(&control, &format!("+{controller}"))?;
            }
        }
        if !self.dirs.iter().any(|dir| dir.path == path) {
            sweep_stale(&placement.parent);
            std::fs::create_dir(&path)?;
            self.dirs.push(Dir {
                path: path.clone(),
                version: placement.version,
            });
        }
        Ok(path)
    }

    /// Moves a process (the cell's init, before it starts the command) into the cgroup.
    pub(crate) fn add(&self, pid: libc::pid_t) -> io::Result<()> {
        for dir in &self.dirs {
            write_file(&dir.path.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// Leaves the cgroup in place (for a cell that outlives this process) and returns its
    /// directories, for [`remove_cgroup_dirs`] once the cell has stopped.
    pub(crate) fn detach(mut self) -> Vec<PathBuf> {
        self.memory = None;
        std::mem::take(&mut self.dirs)
            .into_iter()
            .map(|dir| dir.path)
            .collect()
    }

    /// Whether the kernel's OOM killer killed a process of the cell.
    pub(crate) fn oom_killed(&self) -> bool {
        let Some(memory) = &self.memory else {
            return false;
        };
        let file = match memory.version {
            CgroupVersion::V1 => "memory.oom_control",
            CgroupVersion::V2 => "memory.events",
        };
        std::fs::read_to_string(memory.path.join(file))
            .ok()
            .and_then(|text| {
                text.lines()
                    .find_map(|line| line.strip_prefix("oom_kill "))
                    .and_then(|count| count.trim().parse::<u64>().ok())
            })
            .is_some_and(|count| count > 0)
    }
}

impl Drop for CellCgroup {
    fn drop(&mut self) {
        for dir in &self.dirs {
            remove_when_empty(&dir.path);
        }
    }
}

/// Removes the cgroup directories of a stopped cell.
pub fn remove_cgroup_dirs(dirs: &[PathBuf]) {
    for dir in dirs {
        remove_when_empty(dir);
    }
}

fn write_memory_limit(dir: &Path, version: CgroupVersion, bytes: u64) -> io::Result<()> {
    match version {
        CgroupVersion::V1 => {
            write_file(&dir.join("memory.limit_in_bytes"), &bytes.to_string())?;
            // Memory plus swap, where swap accounting is on: otherwise the limit only moves
            // the excess to swap.
            let memsw = dir.join("memory.memsw.limit_in_bytes");
            if memsw.exists() {
                write_file(&memsw, &bytes.to_string())?;
            }
        }
        CgroupVersion::V2 => {
            write_file(&dir.join("memory.max"), &bytes.to_string())?;
            let swap = dir.join("memory.swap.max");
            if swap.exists() {
                write_file(&swap, "0")?;
            }
        }
    }
    Ok(())
}

fn write_cpu_limit(dir: &Path, version: CgroupVersion, cpus: f64) -> io::Result<()> {
    const PERIOD_US: u64 = 100_000;
    let quota = ((cpus * PERIOD_US as f64).round() as u64).max(1_000);
    match version {
        CgroupVersion::V1 => {
            write_file(&dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
            write_file(&dir.join("cpu.cfs_quota_us"), &quota.to_string())
        }
        CgroupVersion::V2 => write_file(&dir.join("cpu.max"), &format!("{quota} {PERIOD_US}")),
    }
}

fn write_file(path: &Path, value: &str) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.write_all(value.as_bytes())
        .map_err(|error| io::Error::new(error.kind(), format!("{}: {error}", path.display())))
}

/// rmdir, retrying briefly: the last processes of a cell can take a moment to leave.
fn remove_when_empty(path: &Path) {
    for _ in 0..100 {
        match std::fs::remove_dir(path) {
            Ok(()) => return,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(2)),
        }
    }
    tracing::warn!(path = %path.display(), "could not remove a cell's cgroup");
}

/// Removes cgroups left by burrow processes that died without cleaning up (kill -9).
fn sweep_stale(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(owner) = name
            .to_str()
            .and_then(|n| n.strip_prefix("burrow-"))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        // EPERM means the process exists but belongs to someone else: alive.
        let alive = rustix::process::Pid::from_raw(owner).is_some_and(|pid| {
            !matches!(
                rustix::process::test_kill_process(pid),
                Err(rustix::io::Errno::SRCH)
            )
        });
        if !alive {
            let _ = std::fs::remove_dir(entry.path());
        }
    }
}

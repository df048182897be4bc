//! Probes of what this host supports, for `burrow doctor`.
//!
//! Each check looks at one kernel feature the way a cell uses it (a user namespace is created,
//! an overlay is mounted, a trial cell runs), so the report says what will work, not what a
//! configuration file claims.

use std::io::Write;
use std::time::Instant;

use burrow_output::{CaptureLimits, CaptureSink};
use burrow_policy::{PathContext, Policy};
use serde::Serialize;

use crate::cgroup::{CgroupLayout, CgroupVersion};
use crate::spec::{CellSpec, Stdin};
use crate::supervise::WaitOptions;
use crate::{Cell, sys};

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Present and working.
    Ok,
    /// Working with less than the best (an older Landlock ABI, say).
    Partial,
    /// Not available; cells that need it are refused unless degradation is allowed.
    Missing,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// What was checked.
    pub name: &'static str,
    /// How it came out.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to do, when something is missing.
    pub fix: Option<String>,
}

/// What this host offers.
#[derive(Debug, Clone, Serialize)]
pub struct HostReport {
    /// Kernel release.
    pub kernel: String,
    /// Machine architecture.
    pub arch: String,
    /// Whether burrow runs as root here.
    pub root: bool,
    /// The checks, in the order a cell uses the features.
    pub checks: Vec<Check>,
}

impl HostReport {
    /// Whether every check passed (possibly partially).
    pub fn healthy(&self) -> bool {
        self.checks
            .iter()
            .all(|check| check.status != Status::Missing)
    }
}

/// Runs every check. Must be called from a single-threaded process (the trial cell is cloned).
pub fn probe(context: &PathContext) -> HostReport {
    let uname = rustix::system::uname();
    let root = rustix::process::geteuid().is_root();
    let checks = vec![
        check_user_namespaces(),
        check_landlock(),
        check_seccomp(),
        check_cgroups(root),
        check_overlayfs(),
        check_trial_cell(context),
    ];
    HostReport {
        kernel: uname.release().to_string_lossy().into_owned(),
        arch: uname.machine().to_string_lossy().into_owned(),
        root,
        checks,
    }
}

fn check(name: &'static str, status: Status, detail: String, fix: Option<&str>) -> Check {
    Check {
        name,
        status,
        detail,
        fix: fix.map(str::to_owned),
    }
}

fn read_trimmed(path: &str) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_owned())
}

/// Runs `body` in a forked child and returns its exit code (0 is success, else an errno).
fn in_child(body: impl FnOnce() -> std::io::Result<()>) -> Result<(), std::io::Error> {
    match sys::fork()? {
        None => {
            let code = match body() {
                Ok(()) => 0,
                Err(error) => error.raw_os_error().unwrap_or(libc::EIO),
            };
            sys::exit_now(code)
        }
        Some(pid) => {
            let mut status = 0;
            // SAFETY: waitpid writes the status into a local integer.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            match crate::init::exit_code(status) {
                0 => Ok(()),
                errno => Err(std::io::Error::from_raw_os_error(errno)),
            }
        }
    }
}

/// Enters a new user and mount namespace with the caller's ids mapped.
fn enter_user_and_mount_namespace() -> std::io::Result<()> {
    let (uid, gid) = (
        rustix::process::getuid().as_raw(),
        rustix::process::getgid().as_raw(),
    );
    // SAFETY: a single-threaded child; no descriptor table is unshared.
    unsafe {
        rustix::thread::unshare_unsafe(
            rustix::thread::UnshareFlags::NEWUSER | rustix::thread::UnshareFlags::NEWNS,
        )?;
    }
    let write = |file: &str, text: &str| -> std::io::Result<()> {
        std::fs::OpenOptions::new()
            .write(true)
            .open(format!("/proc/self/{file}"))?
            .write_all(text.as_bytes())
    };
    write("setgroups", "deny")?;
    write("uid_map", &format!("{uid} {uid} 1"))?;
    write("gid_map", &format!("{gid} {gid} 1"))
}

fn check_user_namespaces() -> Check {
    let name = "user namespaces";
    match in_child(enter_user_and_mount_namespace) {
        Ok(()) => check(name, Status::Ok, "can be created and mapped".into(), None),
        Err(error) => {
            let mut detail = format!("cannot be created: {error}");
            if read_trimmed("/proc/sys/kernel/unprivileged_userns_clone").as_deref() == Some("0") {
                detail.push_str(" (kernel.unprivileged_userns_clone = 0)");
            }
            if read_trimmed("/proc/sys/kernel/apparmor_restrict_unprivileged_userns").as_deref()
                == Some("1")
            {
                detail.push_str(" (AppArmor restricts unprivileged user namespaces)");
            }
            check(
                name,
                Status::Missing,
                detail,
                Some(
                    "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1, \
                     or an AppArmor profile that allows userns for burrow)",
                ),
            )
        }
    }
}

fn check_landlock() -> Check {
    let name = "landlock";
    let abi = sys::landlock_abi_version();
    let mut covers = vec![];
    for (min, feature) in [
        (1, "filesystem"),
        (4, "TCP"),
        (5, "device ioctls"),
        (6, "abstract unix sockets and signals"),
        (9, "pathname unix sockets"),
    ] {
        if abi >= min {
            covers.push(feature);
        }
    }
    match abi {
        0 => check(
            name,
            Status::Missing,
            "not enabled in this kernel".into(),
            Some(
                "boot with lsm=...,landlock (Linux 5.13 or later); --allow-degraded runs without it",
            ),
        ),
        abi if abi < 9 => check(
            name,
            Status::Partial,
            format!(
                "ABI {abi}: {}; connecting to unix sockets by path needs ABI 9 (burrow hides the \
                 usual socket directories instead)",
                covers.join(", ")
            ),
            None,
        ),
        abi => check(
            name,
            Status::Ok,
            format!("ABI {abi}: {}", covers.join(", ")),
            None,
        ),
    }
}

fn check_seccomp() -> Check {
    let name = "seccomp";
    match read_trimmed("/proc/sys/kernel/seccomp/actions_avail") {
        Some(actions) if actions.contains("errno") && actions.contains("kill_process") => check(
            name,
            Status::Ok,
            "filters with errno and kill actions".into(),
            None,
        ),
        Some(actions) => check(
            name,
            Status::Missing,
            format!("filters lack the actions burrow uses (have: {actions})"),
            Some("use a kernel with CONFIG_SECCOMP_FILTER"),
        ),
        None => check(
            name,
            Status::Missing,
            "not available".into(),
            Some("use a kernel with CONFIG_SECCOMP_FILTER"),
        ),
    }
}

fn check_cgroups(root: bool) -> Check {
    let name = "limits";
    let layout = CgroupLayout::detect().unwrap_or_default();
    let place = |controller| {
        layout
            .place(controller)
            .map(|placement| match placement.version {
                CgroupVersion::V1 => "cgroup v1",
                CgroupVersion::V2 => "cgroup v2",
            })
    };
    let memory = place("memory").unwrap_or("rlimit (per process)");
    let pids = if !root {
        "rlimit (RLIMIT_NPROC, whole cell)"
    } else if sys::kernel_at_least(6, 14) {
        "the cell's pid_max"
    } else {
        place("pids").unwrap_or("none: root is exempt from RLIMIT_NPROC")
    };
    let cpu = place("cpu");
    let v1: Vec<&str> = layout.v1.keys().map(String::as_str).collect();
    let mounted = format!(
        "cgroup v1 controllers: {}; cgroup v2: {}",
        if v1.is_empty() {
            "none".to_owned()
        } else {
            v1.join(", ")
        },
        if layout.v2.is_some() {
            "mounted"
        } else {
            "not mounted"
        }
    );
    let detail = format!(
        "memory by {memory}; processes by {pids}; CPU bandwidth by {} ({mounted})",
        cpu.unwrap_or("nothing")
    );
    if cpu.is_none() || memory.starts_with("rlimit") {
        check(
            name,
            Status::Partial,
            detail,
            Some(
                "for whole-cell memory and CPU limits, give burrow a writable cgroup (run as \
                 root, or under a systemd user slice with delegation)",
            ),
        )
    } else {
        check(name, Status::Ok, detail, None)
    }
}

fn check_overlayfs() -> Check {
    let name = "overlayfs";
    match overlay_in_user_namespace(None) {
        Ok(()) => check(
            name,
            Status::Ok,
            "mountable in a user namespace".into(),
            None,
        ),
        Err(error) => check(
            name,
            Status::Partial,
            format!("cannot be mounted in a user namespace ({error}); workspaces copy instead"),
            Some("use Linux 5.11 or later"),
        ),
    }
}

/// Whether overlayfs can be mounted in a user namespace here, which workspaces need to keep
/// their changes in a layer of their own (they copy the whole tree otherwise). Tries it in a
/// child process: in `scratch`, an empty directory on the filesystem that will hold the layers
/// (the caller removes what is created in it), or on a tmpfs of the child's own.
pub fn overlay_in_user_namespace(scratch: Option<&std::path::Path>) -> Result<(), String> {
    in_child(|| {
        enter_user_and_mount_namespace()?;
        rustix::mount::mount_change(
            "/",
            rustix::mount::MountPropagationFlags::REC
                | rustix::mount::MountPropagationFlags::PRIVATE,
        )?;
        let scratch = match scratch {
            Some(dir) => dir.to_path_buf(),
            None => {
                let tmp = std::path::PathBuf::from("/tmp");
                rustix::mount::mount(
                    "tmpfs",
                    &tmp,
                    "tmpfs",
                    rustix::mount::MountFlags::empty(),
                    None,
                )?;
                tmp
            }
        };
        for dir in ["lower", "upper", "work", "merged"] {
            std::fs::create_dir(scratch.join(dir))?;
        }
        let options = format!(
            "lowerdir={0}/lower,upperdir={0}/upper,workdir={0}/work,userxattr",
            scratch.display()
        );
        let options = std::ffi::CString::new(options).map_err(std::io::Error::other)?;
        rustix::mount::mount(
            "overlay",
            scratch.join("merged"),
            "overlay",
            rustix::mount::MountFlags::empty(),
            options.as_c_str(),
        )?;
        Ok(())
    })
    .map_err(|error| error.to_string())
}

fn check_trial_cell(context: &PathContext) -> Check {
    let name = "trial cell";
    let mut policy = Policy::default();
    policy.filesystem.write_cwd = false;
    let mut context = context.clone();
    context.cwd = std::path::PathBuf::from("/");
    let spec = CellSpec::from_policy(&policy, &context, vec!["true".into()], std::env::vars_os());
    let mut spec = match spec {
        Ok(spec) => spec,
        Err(error) => return check(name, Status::Missing, error.to_string(), None),
    };
    spec.stdin = Stdin::Null;
    let started = Instant::now();
    let outcome = Cell::spawn(&spec).and_then(|cell| {
        let mut sink = CaptureSink::new(CaptureLimits::DEFAULT);
        cell.wait(&mut sink, &WaitOptions::default())
    });
    match outcome {
        Ok(outcome) if outcome.exit_code() == 0 => check(
            name,
            Status::Ok,
            format!(
                "`true` ran in a cell with every layer in {:.1} ms",
                started.elapsed().as_secs_f64() * 1000.0
            ),
            None,
        ),
        Ok(outcome) => check(
            name,
            Status::Missing,
            format!("`true` exited with {} in a cell", outcome.exit_code()),
            None,
        ),
        Err(error) => check(name, Status::Missing, error.to_string(), None),
    }
}

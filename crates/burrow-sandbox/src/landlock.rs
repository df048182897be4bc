//! Landlock: the filesystem policy again, enforced by the kernel's LSM.
//!
//! The mounts already make everything outside the writable roots read-only; Landlock states the
//! same rules in terms the kernel checks on every access, so a mistake in the mount tree (or a
//! kernel bug in it) does not open a write path. On kernels with Landlock ABI 6 it also keeps
//! the cell from connecting to abstract unix sockets and signalling processes outside it; with
//! ABI 9, from connecting to unix sockets outside its writable areas.

use std::path::{Path, PathBuf};

use burrow_policy::NetworkMode;
use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset,
    RulesetAttr, RulesetCreatedAttr, RulesetStatus, Scope,
};

use crate::error::Step;
use crate::report::{AtStep, StepError};

/// The newest ABI whose rights burrow asks for; older kernels enforce what they know.
const TARGET_ABI: ABI = ABI::V9;

/// Paths of the cell, as seen inside it, that get write access besides the writable roots.
pub(crate) const SCRATCH_AREAS: [&str; 4] = ["/tmp", "/var/tmp", "/run", "/dev/shm"];

/// How much of the ruleset the kernel enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Enforcement {
    /// Every right burrow asked for.
    Full,
    /// The kernel's ABI is older: some rights (say, unix socket connections) are not enforced.
    Partial,
    /// Not at all.
    None,
}

/// Restricts the calling process (and everything it starts) to the cell's filesystem policy.
/// `agent_binary`, for a workspace's cell, is burrow's own executable, opened on the host and
/// not visible in the cell: it may be executed (and only that file).
pub(crate) fn apply(
    writable_roots: &[PathBuf],
    network: NetworkMode,
    agent_binary: Option<std::os::fd::BorrowedFd<'_>>,
) -> Result<Enforcement, StepError> {
    let abi = TARGET_ABI;
    let read = AccessFs::from_read(abi);
    let all = AccessFs::from_all(abi);
    // Devices: reading and writing (null, tty, ptys) and their ioctls, but nothing is created.
    let device = read | AccessFs::WriteFile | AccessFs::Truncate | AccessFs::IoctlDev;

    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(all)
        .at(Step::Landlock)?
        .scope(Scope::from_all(abi))
        .at(Step::Landlock)?;
    if network == NetworkMode::None {
        // No TCP at all: the seccomp filter already refuses the sockets.
        ruleset = ruleset
            .handle_access(AccessNet::from_all(abi))
            .at(Step::Landlock)?;
    }
    let mut created = ruleset.create().at(Step::Landlock)?;
    created = add_rule(created, Path::new("/"), read)?;
    created = add_rule(created, Path::new("/dev"), device)?;
    for area in SCRATCH_AREAS {
        created = add_rule(created, Path::new(area), all)?;
    }
    for root in writable_roots {
        created = add_rule(created, root, all)?;
    }
    if let Some(binary) = agent_binary {
        created = created
            .add_rule(PathBeneath::new(
                binary,
                AccessFs::Execute | AccessFs::ReadFile,
            ))
            .at(Step::Landlock)?;
    }
    let status = created.restrict_self().at(Step::Landlock)?;
    Ok(match status.ruleset {
        RulesetStatus::FullyEnforced => Enforcement::Full,
        RulesetStatus::PartiallyEnforced => Enforcement::Partial,
        RulesetStatus::NotEnforced => Enforcement::None,
    })
}

fn add_rule(
    ruleset: landlock::RulesetCreated,
    path: &Path,
    access: landlock::BitFlags<AccessFs>,
) -> Result<landlock::RulesetCreated, StepError> {
    let fd = match PathFd::new(path) {
        Ok(fd) => fd,
        // An area this host does not have (no /var/tmp, say) needs no rule.
        Err(_) if !path.exists() => return Ok(ruleset),
        Err(error) => {
            return Err(std::io::Error::other(error.to_string())).at_path(Step::Landlock, path);
        }
    };
    ruleset
        .add_rule(PathBeneath::new(fd, access))
        .at_path(Step::Landlock, path)
}

impl<T> AtStep<T> for Result<T, landlock::RulesetError> {
    fn at(self, step: Step) -> Result<T, StepError> {
        self.map_err(|error| std::io::Error::other(error.to_string()))
            .at(step)
    }

    fn at_path(self, step: Step, path: &Path) -> Result<T, StepError> {
        self.map_err(|error| std::io::Error::other(error.to_string()))
            .at_path(step, path)
    }
}

#[cfg(test)]
mod tests {
    use std::fs;

    use burrow_policy::NetworkMode;

    use super::{Enforcement, apply};
    use crate::testing::{errno, in_child, scratch_dir};

    /// Landlock on its own, without the cell's mounts: only the writable roots take writes.
    #[test]
    fn landlock_alone_confines_writes_to_the_writable_roots() {
        let scratch = scratch_dir();
        let writable = scratch.path().join("writable");
        let outside = scratch.path().join("outside");
        fs::create_dir(&writable).unwrap();
        fs::create_dir(&outside).unwrap();

        // Control: the same writes succeed without Landlock.
        let control = in_child(|| errno(fs::write(outside.join("f"), "x")));
        assert_eq!(control, 0);
        fs::remove_file(outside.join("f")).unwrap();

        let result = in_child(|| {
            rustix::thread::set_no_new_privs(true).unwrap();
            let enforcement = apply(std::slice::from_ref(&writable), NetworkMode::None, None)
                .map_err(|e| e.source)
                .unwrap();
            if enforcement == Enforcement::None {
                return 100;
            }
            if errno(fs::write(writable.join("f"), "x")) != 0 {
                return 101;
            }
            if fs::read_to_string(writable.join("f")).ok().as_deref() != Some("x") {
                return 102;
            }
            errno(fs::write(outside.join("f"), "x"))
        });
        assert_eq!(result, libc::EACCES, "write outside the writable roots");
        assert!(!outside.join("f").exists());
    }

    /// With the network off, Landlock refuses TCP even where a socket could be made.
    #[test]
    fn landlock_alone_refuses_tcp_when_the_network_is_off() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let control = in_child(|| errno(std::net::TcpStream::connect(address)));
        assert_eq!(control, 0);
        let result = in_child(|| {
            rustix::thread::set_no_new_privs(true).unwrap();
            apply(&[], NetworkMode::None, None)
                .map_err(|e| e.source)
                .unwrap();
            errno(std::net::TcpStream::connect(address))
        });
        assert_eq!(result, libc::EACCES);
    }
}

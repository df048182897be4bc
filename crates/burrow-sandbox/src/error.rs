//! Errors of the sandbox, one per set-up step, each carrying the OS error and saying what to do.

use std::fmt;
use std::io;
use std::path::PathBuf;

/// Defines [`Step`] from one list: each variant with the phrase that completes "cannot ...".
macro_rules! steps {
    ($($(#[$doc:meta])* $name:ident => $describe:literal,)+) => {
        /// A step of building a cell. The cell's init reports the step that failed, so the
        /// message can name the layer and how to fix it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u8)]
        pub enum Step {
            $($(#[$doc])* $name,)+
        }

        impl Step {
            const ALL: &'static [Step] = &[$(Step::$name,)+];

            /// What the step does, for messages.
            pub fn describe(self) -> &'static str {
                match self {
                    $(Step::$name => $describe,)+
                }
            }
        }
    };
}

steps! {
    /// Arranging for the cell to die with burrow.
    ParentDeathSignal => "tie the cell's life to burrow's",
    /// Denying setgroups(2), as an unprivileged gid map requires.
    Setgroups => "deny setgroups in the user namespace",
    /// Writing the user id map.
    UidMap => "map the user id into the user namespace",
    /// Writing the group id map.
    GidMap => "map the group id into the user namespace",
    /// Making every mount private so nothing propagates back to the host.
    PrivateMounts => "make the cell's mounts private",
    /// Cloning the host's mount tree as the cell's read-only root.
    CloneRoot => "clone the host's mount tree",
    /// Making the cloned root read-only.
    ReadOnlyRoot => "make the cell's root read-only",
    /// Binding a writable root.
    BindWritable => "bind a writable root",
    /// Keeping a path inside a writable root read-only.
    ProtectPath => "keep a path inside a writable root read-only",
    /// Hiding a path.
    HidePath => "hide a path",
    /// Mounting the cell's scratch tmpfs (/tmp, /run, /dev/shm).
    MountTmp => "mount the private /tmp",
    /// Mounting /dev.
    MountDev => "mount /dev",
    /// Mounting /proc.
    MountProc => "mount /proc",
    /// Switching to the new root.
    PivotRoot => "switch to the cell's root",
    /// Detaching the host's root.
    DetachOldRoot => "detach the host's root",
    /// Setting the hostname.
    Hostname => "set the hostname",
    /// Creating and joining the network namespace, with its loopback interface.
    Loopback => "bring up the loopback interface",
    /// Entering the working directory.
    Chdir => "enter the working directory",
    /// Waiting for burrow to place the cell in its cgroup.
    WaitForParent => "wait for burrow to place the cell in its cgroup",
    /// Setting resource limits.
    Rlimits => "set resource limits",
    /// Starting a new session, detached from the terminal.
    NewSession => "start a new session",
    /// Dropping capabilities.
    Capabilities => "drop capabilities",
    /// Setting no_new_privs.
    NoNewPrivs => "set no_new_privs",
    /// Applying Landlock rules.
    Landlock => "apply Landlock rules",
    /// Installing the seccomp filter.
    Seccomp => "install the seccomp filter",
    /// Setting up signal forwarding in the cell's init.
    Signals => "set up signal forwarding",
    /// Starting the command.
    Fork => "start the command",
    /// Opening the network proxy's port on the cell's loopback and handing it to burrow.
    ProxyPort => "open the network proxy's port in the cell",
}

impl Step {
    /// The step a report's wire number names; numbers start at 1, so 0 is never a step.
    pub(crate) fn from_u8(value: u8) -> Option<Step> {
        Step::ALL.iter().copied().find(|step| step.wire() == value)
    }

    /// The step's number on the wire between the cell and burrow.
    pub(crate) fn wire(self) -> u8 {
        self as u8 + 1
    }

    /// What a person can do about a failure of this step.
    pub fn fix(self, errno: i32) -> &'static str {
        match (self, errno) {
            (Step::UidMap | Step::GidMap | Step::Setgroups, _) => {
                "user namespaces seem restricted on this host (kernel.unprivileged_userns_clone, \
                 or AppArmor's kernel.apparmor_restrict_unprivileged_userns); run `burrow doctor`"
            }
            (Step::MountProc, libc::EPERM) => {
                "this host covers parts of /proc (as containers do), so a fresh /proc cannot be \
                 mounted; run burrow on the host or in a container with an unmasked /proc"
            }
            (
                Step::BindWritable | Step::HidePath | Step::ProtectPath,
                libc::ELOOP | libc::EXDEV,
            ) => {
                "a path changed into a symlink while the cell was being built; check who else \
                 writes there"
            }
            (Step::Landlock, _) => {
                "the kernel did not enforce Landlock; run `burrow doctor`, or pass \
                 --allow-degraded to run without it"
            }
            (Step::Seccomp, _) => "the kernel refused the seccomp filter; run `burrow doctor`",
            _ => "run `burrow doctor` to see which isolation features this host lacks",
        }
    }
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Why a cell could not be started or supervised.
#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    /// A step inside the new cell failed.
    #[error("cannot {step}{detail}: {error}; {fix}", detail = detail_suffix(detail), fix = step.fix(error.raw_os_error().unwrap_or(0)))]
    Setup {
        /// The step.
        step: Step,
        /// Which path or value it was working on, if any.
        detail: String,
        /// What the kernel said. (Not named `source`: the message already includes it, and a
        /// source would repeat it in error chains.)
        error: io::Error,
    },
    /// A step inside the new cell refused to go on (a check of burrow's own, not an OS error);
    /// the detail says why and what to do.
    #[error("cannot {step}: {detail}")]
    Refused {
        /// The step.
        step: Step,
        /// What was wrong.
        detail: String,
    },
    /// Creating the namespaces failed.
    #[error("cannot create the cell's namespaces: {error}; {fix}", fix = namespace_fix(error))]
    Namespaces {
        /// What the kernel said.
        error: io::Error,
    },
    /// A path the policy names is unusable.
    #[error("{path}: {reason}")]
    Path {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// A layer the policy requires is not available and degradation was not allowed.
    #[error("{layer} is not available: {reason}; {fix}")]
    LayerUnavailable {
        /// The layer.
        layer: &'static str,
        /// Why.
        reason: String,
        /// What to do.
        fix: &'static str,
    },
    /// Cgroup set-up failed.
    #[error("cannot set up the cell's cgroup: {0}")]
    Cgroup(String),
    /// The process is multi-threaded, and cells are cloned without the help of libc.
    #[error("cells must be started from a single-threaded process ({threads} threads here)")]
    MultiThreaded {
        /// How many threads there are.
        threads: u64,
    },
    /// The command cannot be passed to execve.
    #[error("{0}")]
    InvalidCommand(String),
    /// Building the seccomp program failed.
    #[error("cannot compile the seccomp filter: {0}")]
    Seccomp(String),
    /// Any other OS error of burrow's own, with what it was doing.
    #[error("cannot {doing}: {error}")]
    Io {
        /// What burrow was doing.
        doing: &'static str,
        /// What the kernel said.
        error: io::Error,
    },
}

impl SandboxError {
    /// What a cell's report of a failed set-up step means: a refusal of burrow's own when no
    /// errno came with it, an OS error otherwise.
    pub(crate) fn from_setup(step: Step, errno: i32, detail: String) -> SandboxError {
        if errno == 0 {
            SandboxError::Refused { step, detail }
        } else {
            SandboxError::Setup {
                step,
                detail,
                error: io::Error::from_raw_os_error(errno),
            }
        }
    }

    pub(crate) fn io(doing: &'static str) -> impl FnOnce(io::Error) -> SandboxError {
        move |error| SandboxError::Io { doing, error }
    }

    /// The same for a rustix error.
    pub(crate) fn errno(doing: &'static str) -> impl FnOnce(rustix::io::Errno) -> SandboxError {
        move |errno| SandboxError::Io {
            doing,
            error: errno.into(),
        }
    }
}

fn detail_suffix(detail: &str) -> String {
    if detail.is_empty() {
        String::new()
    } else {
        format!(" ({detail})")
    }
}

fn namespace_fix(error: &io::Error) -> &'static str {
    match error.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => {
            "unprivileged user namespaces are disabled here; enable them (sysctl \
             kernel.unprivileged_userns_clone=1, or an AppArmor profile for burrow) and run \
             `burrow doctor`"
        }
        Some(libc::ENOSPC) => {
            "the namespace limit is reached (user.max_user_namespaces and friends); raise it or \
             stop stale cells"
        }
        Some(libc::EINVAL) => "this kernel lacks a namespace burrow needs; run `burrow doctor`",
        _ => "run `burrow doctor`",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip_through_their_wire_number() {
        for step in Step::ALL {
            assert_eq!(Step::from_u8(step.wire()), Some(*step));
        }
        assert_eq!(Step::from_u8(0), None);
        assert_eq!(Step::from_u8(Step::ALL.len() as u8 + 1), None);
    }

    #[test]
    fn setup_errors_are_one_line_with_a_fix() {
        let error = SandboxError::Setup {
            step: Step::UidMap,
            detail: String::new(),
            error: io::Error::from_raw_os_error(libc::EPERM),
        };
        let text = error.to_string();
        assert!(
            text.starts_with("cannot map the user id into the user namespace: "),
            "{text}"
        );
        assert!(text.contains("burrow doctor"), "{text}");
        assert!(!text.contains('\n'));
    }
}

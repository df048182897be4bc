//! How a command ended, and how its limits were enforced.

use std::time::Duration;

use serde::Serialize;

use crate::cgroup::CgroupVersion;

/// How the command's process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// It exited with this code.
    Exited(i32),
    /// A signal killed it.
    Signaled(i32),
}

/// Why the command could not be executed at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecError {
    /// The errno of the failed execve (or of the PATH search).
    pub errno: i32,
    /// The program as given.
    pub program: String,
}

impl ExecError {
    /// A one-line message, as a shell would print it.
    pub fn message(&self) -> String {
        match self.errno {
            libc::ENOENT => format!("command not found: {}", self.program),
            libc::EACCES => format!("permission denied: {} is not executable", self.program),
            errno => format!(
                "cannot execute {}: {}",
                self.program,
                std::io::Error::from_raw_os_error(errno)
            ),
        }
    }
}

/// A layer that could not be set up, accepted because the policy allows degradation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Degradation {
    /// The layer (`landlock`, `pids limit`, ...).
    pub layer: String,
    /// Why it is missing.
    pub reason: String,
}

/// What enforces a limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// A v1 cgroup controller (the whole cell).
    CgroupV1,
    /// A v2 cgroup controller (the whole cell).
    CgroupV2,
    /// setrlimit(2) (per process, except RLIMIT_NPROC, which counts the cell's processes).
    Rlimit,
    /// The cell's own `kernel.pid_max` (Linux 6.14+): bounds the tasks of its pid namespace.
    PidMax,
}

impl From<CgroupVersion> for Mechanism {
    fn from(version: CgroupVersion) -> Mechanism {
        match version {
            CgroupVersion::V1 => Mechanism::CgroupV1,
            CgroupVersion::V2 => Mechanism::CgroupV2,
        }
    }
}

/// How each limit of the policy was enforced; `None` where the policy sets no such limit (or,
/// with degradation allowed, where nothing could enforce it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LimitEnforcement {
    /// Memory.
    pub memory: Option<Mechanism>,
    /// Process count.
    pub pids: Option<Mechanism>,
    /// CPU bandwidth.
    pub cpus: Option<Mechanism>,
}

/// The result of running a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// How the command's process ended.
    pub termination: Termination,
    /// Whether burrow killed the cell because the timeout passed.
    pub timed_out: bool,
    /// Whether the kernel's OOM killer killed a process of the cell.
    pub oom_killed: bool,
    /// Set when the command could not be executed.
    pub exec_error: Option<ExecError>,
    /// Wall-clock time from spawn to the end.
    pub duration: Duration,
    /// Layers the cell ran without.
    pub degraded: Vec<Degradation>,
    /// How the limits were enforced.
    pub limits: LimitEnforcement,
}

impl Outcome {
    /// An outcome with only its termination and duration: no timeout, no exec error, nothing
    /// degraded.
    pub fn finished(termination: Termination, duration: Duration) -> Outcome {
        Outcome {
            termination,
            timed_out: false,
            oom_killed: false,
            exec_error: None,
            duration,
            degraded: Vec::new(),
            limits: LimitEnforcement::default(),
        }
    }

    /// burrow's exit code for this outcome: the command's own, 128+N for signal N, 124 for a
    /// timeout, 127 when the command was not found, 126 when it could not be executed.
    pub fn exit_code(&self) -> i32 {
        if self.timed_out {
            return 124;
        }
        if let Some(error) = &self.exec_error {
            return if error.errno == libc::ENOENT {
                127
            } else {
                126
            };
        }
        match self.termination {
            Termination::Exited(code) => code,
            Termination::Signaled(signal) => 128 + signal,
        }
    }

    /// The signal that killed the command, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.termination {
            Termination::Signaled(signal) => Some(signal),
            Termination::Exited(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(termination: Termination) -> Outcome {
        Outcome::finished(termination, Duration::ZERO)
    }

    #[test]
    fn exit_codes_follow_the_shell_conventions() {
        assert_eq!(outcome(Termination::Exited(3)).exit_code(), 3);
        assert_eq!(
            outcome(Termination::Signaled(libc::SIGTERM)).exit_code(),
            143
        );
        let mut timed_out = outcome(Termination::Signaled(libc::SIGKILL));
        timed_out.timed_out = true;
        assert_eq!(timed_out.exit_code(), 124);
        let mut missing = outcome(Termination::Exited(127));
        missing.exec_error = Some(ExecError {
            errno: libc::ENOENT,
            program: "nope".into(),
        });
        assert_eq!(missing.exit_code(), 127);
        assert_eq!(
            missing.exec_error.unwrap().message(),
            "command not found: nope"
        );
    }
}

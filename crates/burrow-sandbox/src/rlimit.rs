//! Resource limits applied with setrlimit(2): the floor that holds on every host, cgroups or not.

use burrow_policy::Limits;
use rustix::process::{Resource, Rlimit};

use crate::error::Step;
use crate::report::{AtStep, StepError};

/// The rlimits for one cell or host process.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RlimitPlan {
    entries: Vec<(Resource, u64, u64)>,
}

impl RlimitPlan {
    /// Limits for a command.
    ///
    /// `extra_processes` is how many processes burrow itself keeps in the accounting scope (the
    /// cell's init); `count_processes` is false on the host backend, where RLIMIT_NPROC would
    /// count every process of the user, not just the command's. `memory_by_cgroup` says a cgroup
    /// bounds memory, so the cruder per-process address-space limit is not needed.
    pub(crate) fn new(
        limits: &Limits,
        extra_processes: u64,
        count_processes: bool,
        memory_by_cgroup: bool,
    ) -> RlimitPlan {
        let mut entries = vec![
            // A crashing command must not write core files into the workspace, nor hand them
            // to a core_pattern helper on the host.
            (Resource::Core, 0, 0),
        ];
        if count_processes {
            let pids = limits.pids.saturating_add(extra_processes);
            entries.push((Resource::Nproc, pids, pids));
        }
        if let (Some(memory), false) = (limits.memory, memory_by_cgroup) {
            entries.push((Resource::As, memory.bytes(), memory.bytes()));
        }
        if let Some(seconds) = limits.cpu_time {
            // SIGXCPU at the soft limit, SIGKILL a second later for a process that ignores it.
            entries.push((Resource::Cpu, seconds, seconds.saturating_add(1)));
        }
        if let Some(size) = limits.max_file_size {
            entries.push((Resource::Fsize, size.bytes(), size.bytes()));
        }
        if let Some(nofile) = limits.nofile {
            entries.push((Resource::Nofile, nofile, nofile));
        }
        RlimitPlan { entries }
    }

    /// Applies the limits to the calling process; its children inherit them.
    ///
    /// A limit above the current hard limit is clamped to it: an unprivileged process cannot
    /// raise its hard limits, and the stricter value already holds.
    pub(crate) fn apply(&self) -> Result<(), StepError> {
        for &(resource, soft, hard) in &self.entries {
            let current = rustix::process::getrlimit(resource);
            let ceiling = current.maximum.unwrap_or(u64::MAX);
            let limit = Rlimit {
                current: Some(soft.min(ceiling)),
                maximum: Some(hard.min(ceiling)),
            };
            rustix::process::setrlimit(resource, limit).at(Step::Rlimits)?;
        }
        Ok(())
    }
}

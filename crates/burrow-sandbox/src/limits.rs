//! How each limit of a policy is enforced: which need a cgroup, which an rlimit, and what is
//! refused or reported when neither is available.

use crate::cgroup::{CellCgroup, CgroupLayout, CgroupNeeds};
use crate::error::SandboxError;
use crate::outcome::{Degradation, LimitEnforcement, Mechanism};
use crate::rlimit::RlimitPlan;
use crate::spec::CellSpec;

/// What bounds the number of processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ProcessLimit {
    /// RLIMIT_NPROC, which counts the processes of the cell's user in its user namespace.
    Rlimit,
    /// The cell's own pid_max.
    PidMax(u64),
    /// A pids cgroup; `required` refuses to run without one (unless degradation is allowed),
    /// otherwise its absence is only reported.
    Cgroup { required: bool },
}

/// The cell's or the host command's limits, ready to apply.
#[derive(Debug)]
pub(crate) struct LimitPlan {
    pub(crate) cgroup: Option<CellCgroup>,
    pub(crate) rlimits: RlimitPlan,
    pub(crate) degraded: Vec<Degradation>,
    pub(crate) enforcement: LimitEnforcement,
}

/// Creates the cgroup the policy's limits need and the rlimits that back them.
///
/// `extra_processes` is how many processes burrow keeps beside the command (a cell's init);
/// `count_processes` says whether RLIMIT_NPROC means anything (in a cell it counts the cell's
/// processes; on the host, every process of the user).
pub(crate) fn plan(
    spec: &CellSpec,
    processes: ProcessLimit,
    extra_processes: u64,
    count_processes: bool,
) -> Result<LimitPlan, SandboxError> {
    let pids = spec.limits.pids.saturating_add(extra_processes);
    let needs = CgroupNeeds {
        memory: spec.limits.memory.map(|m| m.bytes()),
        pids: matches!(processes, ProcessLimit::Cgroup { .. }).then_some(pids),
        cpus: spec.limits.cpus,
    };
    let layout = if needs == CgroupNeeds::default() {
        CgroupLayout::default()
    } else {
        CgroupLayout::detect().map_err(SandboxError::io("read this process's cgroups"))?
    };
    let cgroups = CellCgroup::create(&layout, needs)
        .map_err(|error| SandboxError::Cgroup(error.to_string()))?;

    let mut degraded = Vec::new();
    match processes {
        ProcessLimit::Cgroup { required: true } if cgroups.pids.is_none() => degrade_or_fail(
            spec,
            &mut degraded,
            "the process limit",
            "burrow runs as root, which RLIMIT_NPROC does not bind; this kernel has no \
             per-namespace pid_max (Linux 6.14) and no pids cgroup is writable"
                .to_owned(),
            "give burrow a writable pids cgroup, or pass --allow-degraded",
        )?,
        // Parity with a bare process: the host backend is no sandbox, so this is reported,
        // not refused.
        ProcessLimit::Cgroup { required: false } if cgroups.pids.is_none() => {
            degraded.push(Degradation {
                layer: "the process limit".to_owned(),
                reason: "the host backend can only count processes with a pids cgroup".to_owned(),
            });
        }
        _ => {}
    }
    if needs.cpus.is_some() && cgroups.cpus.is_none() {
        degrade_or_fail(
            spec,
            &mut degraded,
            "the CPU limit",
            "no writable cpu cgroup controller".to_owned(),
            "give burrow a writable cpu cgroup, or drop --cpus (or pass --allow-degraded)",
        )?;
    }

    let rlimits = RlimitPlan::new(
        &spec.limits,
        extra_processes,
        count_processes,
        cgroups.memory.is_some(),
    );
    let enforcement = LimitEnforcement {
        memory: match (cgroups.memory, spec.limits.memory) {
            (Some(version), _) => Some(version.into()),
            (None, Some(_)) => Some(Mechanism::Rlimit),
            (None, None) => None,
        },
        pids: match processes {
            ProcessLimit::Rlimit => Some(Mechanism::Rlimit),
            ProcessLimit::PidMax(_) => Some(Mechanism::PidMax),
            ProcessLimit::Cgroup { .. } => cgroups.pids.map(Mechanism::from),
        },
        cpus: cgroups.cpus.map(Mechanism::from),
    };
    Ok(LimitPlan {
        cgroup: cgroups.cgroup,
        rlimits,
        degraded,
        enforcement,
    })
}

/// Accepts a missing layer when the policy allows degradation, or refuses.
pub(crate) fn degrade_or_fail(
    spec: &CellSpec,
    degraded: &mut Vec<Degradation>,
    layer: &'static str,
    reason: String,
    fix: &'static str,
) -> Result<(), SandboxError> {
    if spec.allow_degraded {
        degraded.push(Degradation {
            layer: layer.to_owned(),
            reason,
        });
        Ok(())
    } else {
        Err(SandboxError::LayerUnavailable { layer, reason, fix })
    }
}

/// The kernel exempts root from RLIMIT_NPROC, so a cell started by root needs another bound.
///
/// Since Linux 6.14 each pid namespace has its own `kernel.pid_max`. Pid numbers below 300 are
/// not reused once allocation has wrapped, so `pids + 301` lets the cell run at least `pids`
/// tasks at any time and never more than `pids + 300`: a bound on a fork bomb that costs one
/// write. A pids cgroup is exact, but moving a process into one waits for an RCU grace period
/// whenever no other cgroup move happened in the last few milliseconds (about 12 ms here), which
/// would dominate every command; it is used when root asks for fewer than 300 processes, or on
/// older kernels, whose pid_max is global and must not be touched.
pub(crate) fn cell_process_limit(root: bool, pids: u64) -> ProcessLimit {
    const PID_MAX_RESERVED: u64 = 300;
    if !root {
        ProcessLimit::Rlimit
    } else if pids >= PID_MAX_RESERVED && crate::sys::kernel_at_least(6, 14) {
        ProcessLimit::PidMax(pids + PID_MAX_RESERVED + 1)
    } else {
        ProcessLimit::Cgroup { required: true }
    }
}

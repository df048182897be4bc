//! The burrow cell: one command, isolated from the host by every layer Linux offers.
//!
//! [`Cell::spawn`] starts a [`CellSpec`]'s command in new user, mount, pid, ipc, uts, cgroup
//! and (unless the policy shares the host's) network namespaces. Inside, the cell's init (PID 1)
//! builds a root from a read-only clone of the host's mount tree with private /tmp, /run, /dev
//! and /proc, binds the writable roots, covers protected and hidden paths, pivots into it, then
//! applies rlimits, drops every capability, sets no_new_privs, applies Landlock and installs a
//! seccomp filter before it forks the command. [`Cell::wait`] streams the output into an
//! [`OutputSink`](burrow_output::OutputSink), enforces the timeout, and returns an [`Outcome`].
//!
//! ```no_run
//! use burrow_output::{CaptureLimits, CaptureSink};
//! use burrow_policy::{PathContext, Policy};
//! use burrow_sandbox::{Cell, CellSpec, WaitOptions};
//!
//! let policy = Policy::default();
//! let context = PathContext { cwd: std::env::current_dir()?, home: None, state_dir: None };
//! let spec = CellSpec::from_policy(&policy, &context, vec!["id".into()], std::env::vars_os())?;
//! let mut sink = CaptureSink::new(CaptureLimits::DEFAULT);
//! let outcome = Cell::spawn(&spec)?.wait(&mut sink, &WaitOptions::default())?;
//! let (stdout, _stderr) = sink.finish();
//! println!("{} -> {}", stdout.to_string_lossy(), outcome.exit_code());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The cell is the only place in burrow with `unsafe` system calls; they live in `sys` and a few
//! spots that hand raw descriptors across `fork`, each with a `// SAFETY:` comment.
#![deny(missing_docs)]

mod caps;
mod cgroup;
mod child;
mod command;
mod command_spawn;
mod error;
mod host;
mod init;
mod landlock;
mod limits;
mod mounts;
mod netns;
mod outcome;
pub mod probe;
mod proxy_port;
mod report;
mod rlimit;
mod seccomp;
mod spawn;
mod spec;
mod supervise;
mod sys;
mod testing;
mod userns;

pub use cgroup::{CgroupLayout, CgroupVersion, Hierarchy, Placement, remove_cgroup_dirs};
pub use command_spawn::{CommandSpawn, Grouping};
pub use error::{SandboxError, Step};
pub use outcome::{Degradation, ExecError, LimitEnforcement, Mechanism, Outcome, Termination};
pub use seccomp::CommandFilter;
pub use spawn::{AgentCell, AgentLaunch, Cell};
pub use spec::{CellSpec, Stdin, WORKSPACE_DIR, WorkspaceMount};
pub use supervise::{SignalForwarder, WaitOptions};

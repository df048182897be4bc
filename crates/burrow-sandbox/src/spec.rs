//! What to run and under which rules: the input of [`Cell::spawn`](crate::Cell::spawn).

use std::ffi::OsString;
use std::path::PathBuf;

use burrow_policy::{
    Backend, Limits, NetworkMode, PathContext, Policy, PolicyError, ResolvedFilesystem,
};

/// Where the command's standard input comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stdin {
    /// burrow's own standard input.
    Inherit,
    /// /dev/null: the command reads end-of-file at once.
    Null,
}

/// Everything needed to start one command in a cell.
#[derive(Debug, Clone)]
pub struct CellSpec {
    /// The command and its arguments; `argv[0]` is looked up in the cell's `PATH`.
    pub argv: Vec<OsString>,
    /// The complete environment of the command.
    pub env: Vec<(OsString, OsString)>,
    /// The working directory (absolute; the same path inside the cell).
    pub cwd: PathBuf,
    /// Filesystem rules, resolved.
    pub filesystem: ResolvedFilesystem,
    /// Network mode.
    pub network: NetworkMode,
    /// Resource limits.
    pub limits: Limits,
    /// Run without a layer that cannot be set up (reported) instead of refusing.
    pub allow_degraded: bool,
    /// Sandbox or host backend.
    pub backend: Backend,
    /// The cell's hostname.
    pub hostname: String,
    /// Standard input.
    pub stdin: Stdin,
    /// A workspace mounted at /workspace (and writable there).
    pub workspace: Option<WorkspaceMount>,
}

/// Where a workspace's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WorkspaceMount {
    /// An overlay: read-only lower layers (topmost first) under a writable upper layer.
    Overlay {
        /// Lower layers, topmost first.
        lower: Vec<PathBuf>,
        /// Where changes go.
        upper: PathBuf,
        /// Overlayfs's work directory, on the same filesystem as `upper`.
        work: PathBuf,
    },
    /// A plain directory, bound read-write (the copying fallback where overlayfs cannot be
    /// mounted in a user namespace).
    Directory(PathBuf),
}

/// Where a cell's workspace appears inside it.
pub const WORKSPACE_DIR: &str = "/workspace";

impl CellSpec {
    /// Builds a spec from a validated policy, the caller's context and environment.
    pub fn from_policy<I>(
        policy: &Policy,
        context: &PathContext,
        argv: Vec<OsString>,
        caller_env: I,
    ) -> Result<CellSpec, PolicyError>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        Ok(CellSpec {
            argv,
            env: policy.command_env(caller_env),
            cwd: context.cwd.clone(),
            filesystem: policy.resolve_filesystem(context)?,
            network: policy.network,
            limits: policy.limits.clone(),
            allow_degraded: policy.allow_degraded,
            backend: policy.backend,
            hostname: "burrow".to_owned(),
            stdin: Stdin::Inherit,
            workspace: None,
        })
    }

    /// The value of a variable in the command's environment.
    pub fn env_var(&self, name: &str) -> Option<&OsString> {
        self.env
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value)
    }
}

//! burrow's operations as the agent surfaces offer them: each takes a caller and one input
//! type, checks that the caller may touch what it names, and answers a serializable value or an
//! [`ApiError`]. The HTTP API and the MCP tools are thin layers over this module.
//!
//! Every operation blocks (SQLite, the agent's socket, child processes); the async surfaces
//! run them on tokio's blocking pool.
//!
//! A server is multi-threaded, and a cell may only be cloned from a single-threaded process
//! (see `burrow_sandbox::Cell`). So whatever starts a cell — `run`, starting a workspace,
//! resetting or snapshotting a running one — is done by a short-lived `burrow` child process,
//! and everything else (reading the database, talking to a running cell's agent) in process.

mod commands;
mod error;
mod files;
pub mod inputs;
mod interactive;
mod launcher;
mod workspaces;

use std::ffi::OsString;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use burrow_workspace::client::AgentClient;
use burrow_workspace::handle::Handle;
use burrow_workspace::layout::StateDir;
use burrow_workspace::manager::Workspaces;
use burrow_workspace::store::{Store, WorkspaceRecord};

pub use commands::CommandOutput;
pub use error::{ApiError, ApiResult, ErrorCode};
pub use files::{FileContent, Listing, decode_content};
pub use interactive::{ServiceLogs, ServiceStarted, SessionOpened, ShellOpened};
pub use workspaces::{Diff, MAX_TIMEOUT, Patched, Workspace};

use launcher::Launcher;

/// Who is calling: a tenant of `burrow serve`, or the local user (`burrow mcp` over stdio).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    tenant: Option<String>,
}

impl Caller {
    /// A tenant, authenticated by its token.
    pub fn tenant(name: impl Into<String>) -> Caller {
        Caller {
            tenant: Some(name.into()),
        }
    }

    /// The local user, who sees the workspaces made with the CLI and no tenant's.
    pub fn local() -> Caller {
        Caller { tenant: None }
    }

    /// The tenant, if any.
    pub fn tenant_name(&self) -> Option<&str> {
        self.tenant.as_deref()
    }

    /// The environment the policy's `inherit` rules pick from. A tenant's commands must not
    /// see the server's variables, so a tenant gets a fixed, neutral one; the local user's
    /// commands inherit as they do from the CLI.
    fn environment(&self) -> Vec<(OsString, OsString)> {
        match self.tenant {
            Some(_) => vec![
                ("PATH".into(), burrow_policy::DEFAULT_PATH.into()),
                ("LANG".into(), "C.UTF-8".into()),
            ],
            None => std::env::vars_os().collect(),
        }
    }
}

/// The operations on one state directory.
#[derive(Debug)]
pub struct Api {
    state: StateDir,
    launcher: Launcher,
    /// Database connections between uses: opening one reads the schema, which would be most
    /// of a cheap request's cost.
    stores: Mutex<Vec<Store>>,
}

/// Database connections kept at most; a burst beyond opens (and then closes) more.
const POOLED_STORES: usize = 16;

/// [`Workspaces`] whose database connection goes back to the pool when dropped.
struct Pooled<'a> {
    workspaces: Option<Workspaces>,
    pool: &'a Mutex<Vec<Store>>,
}

impl Deref for Pooled<'_> {
    type Target = Workspaces;

    fn deref(&self) -> &Workspaces {
        // `workspaces` is taken only by `drop`.
        self.workspaces.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for Pooled<'_> {
    fn deref_mut(&mut self) -> &mut Workspaces {
        self.workspaces.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        let (Some(workspaces), Ok(mut pool)) = (self.workspaces.take(), self.pool.lock()) else {
            return;
        };
        if pool.len() < POOLED_STORES {
            pool.push(workspaces.into_store());
        }
    }
}

impl Api {
    /// Operations on the state in `root`, starting cells with the `burrow` binary at `burrow`.
    pub fn new(root: &Path, burrow: PathBuf) -> Api {
        Api {
            state: StateDir::new(root),
            launcher: Launcher::new(root, burrow),
            stores: Mutex::new(Vec::new()),
        }
    }

    /// The state directory's root.
    pub fn root(&self) -> &Path {
        self.state.root()
    }

    /// The caller a bearer token acts for; `None` when it is not a live token.
    pub fn authenticate(&self, token: &str) -> ApiResult<Option<Caller>> {
        let mut workspaces = self.workspaces()?;
        let found = burrow_workspace::tokens::authenticate(workspaces.store(), token)?;
        Ok(found.map(Caller::tenant))
    }

    /// Deletes the workspaces whose time is up; returns their names.
    pub fn reap_expired(&self) -> ApiResult<Vec<String>> {
        Ok(self.workspaces()?.reap()?)
    }

    /// The state, without start-up recovery (the server did that once, at start), on a
    /// database connection from the pool.
    fn workspaces(&self) -> ApiResult<Pooled<'_>> {
        let reused = self
            .stores
            .lock()
            .map_err(|_| ApiError::internal("the connection pool is poisoned"))?
            .pop();
        let store = match reused {
            Some(store) => store,
            None => Store::open(&self.state.database())?,
        };
        Ok(Pooled {
            workspaces: Some(Workspaces::with_store(self.state.root(), store)),
            pool: &self.stores,
        })
    }

    /// The caller's workspace named `workspace`; another tenant's is not found.
    fn record(&self, caller: &Caller, workspace: &str) -> ApiResult<WorkspaceRecord> {
        Ok(self
            .workspaces()?
            .get_for(workspace, caller.tenant_name())?)
    }

    /// The caller's workspace, running (started by a child process if it was stopped), and a
    /// connection to its agent.
    fn running(&self, caller: &Caller, workspace: &str) -> ApiResult<(Handle, AgentClient)> {
        let record = self.record(caller, workspace)?;
        if let Some(found) = Handle::fast(&self.state, &record.id) {
            return Ok(found);
        }
        // Stopped, or its agent did not answer: `burrow ws start` starts a stopped cell and
        // refuses a live one, and either way the socket is tried once more.
        let started = self.launcher.start(&record.id);
        match Handle::fast(&self.state, &record.id) {
            Some(found) => Ok(found),
            None => Err(started.err().unwrap_or_else(|| {
                ApiError::new(
                    ErrorCode::Unavailable,
                    format!("workspace {workspace} started but its agent does not answer; retry"),
                )
            })),
        }
    }
}

/// Starts, once, what a server must do before it starts threads: recovery of what killed
/// processes left half done, reaping of expired workspaces, and the storage probe (which
/// forks). Returns the names of the workspaces reaped.
pub fn prepare_state(root: &Path) -> ApiResult<Vec<String>> {
    let workspaces = Workspaces::open(root)?;
    workspaces.probe_storage()?;
    Ok(workspaces.reaped_at_open().to_vec())
}

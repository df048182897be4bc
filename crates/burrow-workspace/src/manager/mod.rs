//! The workspaces of one state directory: creating, finding, starting, stopping and deleting
//! them, and putting right what a killed burrow left half done.
//!
//! Every multi-step change follows the same rule: the database row says what is in progress
//! (a workspace `creating` or `deleting`, a snapshot not yet `complete`), the files are
//! changed, and the row is updated last, in one transaction. Whoever opens the state next
//! finishes or undoes what a dead process left, if that process's workspace lock is free.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use burrow_policy::{PathContext, Policy};
use serde::Serialize;

mod create;
mod recovery;

use crate::cell;
use crate::client::AgentClient;
use crate::error::{Result, WorkspaceError};
use crate::handle::Handle;
use crate::info::ExecInfo;
use crate::journal;
use crate::layout::{StateDir, WorkspaceDir};
use crate::lock::WorkspaceLock;
use crate::names::new_id;
use crate::store::{AuditRecord, CellRecord, Lifecycle, StorageMode, Store, WorkspaceRecord};

/// Forces a storage mode (`overlay` or `copy`) instead of probing the host.
pub const STORAGE_ENV: &str = "BURROW_WORKSPACE_STORAGE";

/// How to make a workspace.
#[derive(Debug, Clone)]
pub struct CreateOptions {
    /// Its name.
    pub name: Option<String>,
    /// A host directory or tarball to start from.
    pub seed: Option<PathBuf>,
    /// Its policy.
    pub policy: Policy,
    /// Where the policy's relative paths point.
    pub context: PathContext,
    /// Time to live.
    pub ttl: Option<Duration>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Secrets.
    pub secrets: crate::secrets::SecretMap,
    /// Redaction rules for everything printed of it.
    pub redact: Vec<burrow_redact::RuleSpec>,
    /// The tenant that owns it (`burrow serve`); none for the local user.
    pub tenant: Option<String>,
}

/// The name a tenant's workspace is stored under: names are per tenant, and `~`, which no
/// name may hold, keeps them apart from the local user's.
pub fn stored_name(tenant: Option<&str>, name: &str) -> String {
    match tenant {
        Some(tenant) => format!("{tenant}~{name}"),
        None => name.to_owned(),
    }
}

/// A stored name as its tenant sees it.
pub fn shown_name(tenant: Option<&str>, stored: &str) -> String {
    match tenant {
        Some(tenant) => stored
            .strip_prefix(&format!("{tenant}~"))
            .unwrap_or(stored)
            .to_owned(),
        None => stored.to_owned(),
    }
}

/// A workspace as `ws list` and `ws status` show it.
#[derive(Debug, Clone, Serialize)]
pub struct WorkspaceStatus {
    /// Its id.
    pub id: String,
    /// Its name.
    pub name: Option<String>,
    /// `running` or `stopped`.
    pub state: &'static str,
    /// The agent's pid on the host, while running.
    pub pid: Option<u32>,
    /// When it was created (Unix seconds).
    pub created_at: i64,
    /// When it expires (Unix seconds).
    pub expires_at: Option<i64>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// `overlay` or `copy`.
    pub storage: StorageMode,
    /// Snapshot names, oldest first.
    pub snapshots: Vec<String>,
    /// The snapshot the workspace currently builds on, if any.
    pub based_on: Option<String>,
}

/// The workspaces of a state directory.
#[derive(Debug)]
pub struct Workspaces {
    state: StateDir,
    store: Store,
    /// Names (or ids) of the expired workspaces [`Workspaces::open`] deleted.
    reaped_at_open: Vec<String>,
}

impl Workspaces {
    /// Opens (creating) the state directory, recovers from interrupted operations and reaps
    /// expired workspaces.
    pub fn open(root: &Path) -> Result<Workspaces> {
        let state = StateDir::new(root);
        for dir in [
            state.root().to_path_buf(),
            state.names(),
            state.workspaces(),
            state.incoming(),
            state.trash(),
        ] {
            create_private_dir(&dir)?;
        }
        let store = Store::open(&state.database())?;
        let mut workspaces = Workspaces {
            state,
            store,
            reaped_at_open: Vec::new(),
        };
        workspaces.recover()?;
        workspaces.reaped_at_open = workspaces.reap()?;
        Ok(workspaces)
    }

    /// The state directory.
    pub fn state(&self) -> &StateDir {
        &self.state
    }

    /// The database.
    pub fn store(&mut self) -> &mut Store {
        &mut self.store
    }

    pub(crate) fn store_ref(&self) -> &Store {
        &self.store
    }

    /// Opens the state without the start-up work of [`Workspaces::open`] (recovery, reaping):
    /// for a long-lived server that did that work once and repeats it on its own schedule.
    pub fn attach(root: &Path) -> Result<Workspaces> {
        let state = StateDir::new(root);
        let store = Store::open(&state.database())?;
        Ok(Workspaces::with_store(root, store))
    }

    /// Like [`Workspaces::attach`], with a connection to the state's database the caller
    /// keeps between uses (opening one reads the schema: a server reuses them).
    pub fn with_store(root: &Path, store: Store) -> Workspaces {
        Workspaces {
            state: StateDir::new(root),
            store,
            reaped_at_open: Vec::new(),
        }
    }

    /// The database connection, for reuse by [`Workspaces::with_store`].
    pub fn into_store(self) -> Store {
        self.store
    }

    /// Decides, once, whether workspaces here use overlayfs (probing the host, which forks:
    /// a server calls this before it starts threads).
    pub fn probe_storage(&self) -> Result<StorageMode> {
        self.storage_mode()
    }

    /// Finds a usable workspace of `tenant` (none: the local user's) by name or id; another
    /// tenant's is not found, exactly like one that does not exist.
    pub fn get_for(&self, name_or_id: &str, tenant: Option<&str>) -> Result<WorkspaceRecord> {
        let by_id = self
            .store
            .find_workspace(name_or_id)?
            .filter(|r| r.id == name_or_id);
        let found = match by_id {
            Some(record) => Some(record),
            None => self
                .store
                .find_workspace(&stored_name(tenant, name_or_id))?,
        };
        match found {
            Some(record)
                if record.lifecycle == Lifecycle::Ready && record.tenant.as_deref() == tenant =>
            {
                Ok(record)
            }
            _ => Err(WorkspaceError::NotFound(name_or_id.to_owned())),
        }
    }

    /// The workspaces of `tenant` (none: the local user's), oldest first, named as it names them.
    pub fn list_for(&self, tenant: Option<&str>) -> Result<Vec<WorkspaceStatus>> {
        let records = self.store.list_workspaces()?;
        records
            .into_iter()
            .filter(|record| {
                record.lifecycle == Lifecycle::Ready && record.tenant.as_deref() == tenant
            })
            .map(|record| {
                let mut status = self.status_of(&record)?;
                status.name = status.name.map(|name| shown_name(tenant, &name));
                Ok(status)
            })
            .collect()
    }

    /// One workspace's status, named as its tenant names it.
    pub fn status_for(&self, name_or_id: &str, tenant: Option<&str>) -> Result<WorkspaceStatus> {
        let record = self.get_for(name_or_id, tenant)?;
        let mut status = self.status_of(&record)?;
        status.name = status.name.map(|name| shown_name(tenant, &name));
        Ok(status)
    }

    /// Finds a usable workspace by name or id.
    pub fn get(&self, name_or_id: &str) -> Result<WorkspaceRecord> {
        match self.store.find_workspace(name_or_id)? {
            Some(record) if record.lifecycle == Lifecycle::Ready => Ok(record),
            _ => Err(WorkspaceError::NotFound(name_or_id.to_owned())),
        }
    }

    /// Removes a workspace's files, name link and row (a failed create, a delete, recovery).
    fn discard(&mut self, record: &WorkspaceRecord) {
        let dir = self.state.workspace(&record.id);
        if let Some(name) = &record.name {
            let link = self.state.name_link(name);
            let points_here = std::fs::read_link(&link)
                .ok()
                .and_then(|target| target.file_name().map(|n| n == record.id.as_str()))
                .unwrap_or(false);
            if points_here {
                let _ = std::fs::remove_file(&link);
            }
        }
        // Moved aside first, so a half-removed directory is never mistaken for a workspace.
        let aside = self
            .state
            .trash()
            .join(format!("{}-{}", record.id, new_id()));
        let removed = match std::fs::rename(dir.root(), &aside) {
            Ok(()) => crate::tree::remove_tree(&aside),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(WorkspaceError::Io {
                path: dir.root().to_owned(),
                error,
            }),
        };
        if let Err(error) = removed {
            tracing::warn!(%error, "could not remove a workspace's files");
        }
        if let Err(error) = self.store.delete_workspace(&record.id) {
            tracing::warn!(%error, "could not remove a workspace's row");
        }
    }

    /// Every workspace, oldest first.
    pub fn list(&self) -> Result<Vec<WorkspaceStatus>> {
        let records = self.store.list_workspaces()?;
        records
            .into_iter()
            .filter(|record| record.lifecycle == Lifecycle::Ready)
            .map(|record| self.status_of(&record))
            .collect()
    }

    /// One workspace's status.
    pub fn status(&self, name_or_id: &str) -> Result<WorkspaceStatus> {
        let record = self.get(name_or_id)?;
        self.status_of(&record)
    }

    fn status_of(&self, record: &WorkspaceRecord) -> Result<WorkspaceStatus> {
        let running = record.cell.as_ref().filter(|cell| cell::is_alive(cell));
        let snapshots = self.store.snapshots(&record.id)?;
        let name_of = |id: &String| {
            snapshots
                .iter()
                .find(|s| &s.id == id)
                .map_or_else(|| id.clone(), |s| s.name.clone())
        };
        Ok(WorkspaceStatus {
            id: record.id.clone(),
            name: record.name.clone(),
            state: if running.is_some() {
                "running"
            } else {
                "stopped"
            },
            pid: running.map(|cell| cell.pid),
            created_at: record.created_at,
            expires_at: record.expires_at,
            labels: record.labels.clone(),
            storage: record.mode,
            snapshots: snapshots
                .iter()
                .filter(|s| s.complete)
                .map(|s| s.name.clone())
                .collect(),
            based_on: record.chain.last().map(name_of),
        })
    }

    /// Starts a stopped workspace's cell; refuses a running one.
    pub fn start(&mut self, name_or_id: &str) -> Result<WorkspaceRecord> {
        let record = self.get(name_or_id)?;
        let dir = self.state.workspace(&record.id);
        let _lock = WorkspaceLock::acquire(&dir.lock())?;
        let record = self.get(&record.id)?;
        if record.cell.as_ref().is_some_and(cell::is_alive) {
            return Err(WorkspaceError::AlreadyRunning(name_or_id.to_owned()));
        }
        self.start_locked(&dir, record)
    }

    /// The workspace's cell, started if it is not running. The caller holds the lock.
    fn start_locked(
        &mut self,
        dir: &WorkspaceDir,
        record: WorkspaceRecord,
    ) -> Result<WorkspaceRecord> {
        if let Some(stale) = &record.cell {
            cell::clean_up(dir, stale);
            self.store.set_cell(&record.id, None)?;
        }
        let policy = policy_of(&record)?;
        let started = cell::start(&self.state, &record, &policy)?;
        for degradation in &started.degraded {
            tracing::warn!(layer = %degradation.layer, reason = %degradation.reason, "workspace cell runs without a layer");
        }
        if let Err(error) = self.store.set_cell(&record.id, Some(&started.cell)) {
            // A cell nobody knows about would run until its idle timeout: stop it now.
            cell::stop(dir, &started.cell);
            return Err(error);
        }
        let _ = journal::append(
            &dir.journal(),
            &journal::record("start", format!("pid {}", started.cell.pid)),
        );
        if let Err(error) = push_secrets(dir, false) {
            cell::stop(dir, &started.cell);
            self.store.set_cell(&record.id, None)?;
            return Err(error);
        }
        Ok(WorkspaceRecord {
            cell: Some(started.cell),
            ..record
        })
    }

    /// A running workspace to send commands and file operations to: started if it is
    /// stopped.
    pub fn handle(&mut self, name_or_id: &str) -> Result<(Handle, AgentClient)> {
        let record = self.get(name_or_id)?;
        let dir = self.state.workspace(&record.id);
        let info =
            ExecInfo::read(&dir).ok_or_else(|| WorkspaceError::NotFound(name_or_id.to_owned()))?;
        let handle = Handle::new(dir.clone(), info);
        if record.cell.as_ref().is_some_and(cell::is_alive)
            && let Ok(client) = handle.connect()
        {
            return Ok((handle, client));
        }
        let _lock = WorkspaceLock::acquire(&dir.lock())?;
        let record = self.get(&record.id)?;
        let running = record.cell.as_ref().is_some_and(cell::is_alive);
        if running && let Ok(client) = handle.connect() {
            return Ok((handle, client));
        }
        if running && let Some(cell) = &record.cell {
            // Alive but not answering: start afresh.
            cell::stop(&dir, cell);
        }
        self.start_locked(&dir, record)?;
        let client = handle.connect()?;
        Ok((handle, client))
    }

    /// Stops a running workspace's cell; refuses a stopped one.
    pub fn stop(&mut self, name_or_id: &str) -> Result<()> {
        let record = self.get(name_or_id)?;
        let dir = self.state.workspace(&record.id);
        let _lock = WorkspaceLock::acquire(&dir.lock())?;
        let record = self.get(&record.id)?;
        if !self.stop_locked(&dir, &record)? {
            return Err(WorkspaceError::NotRunning(name_or_id.to_owned()));
        }
        let _ = journal::append(&dir.journal(), &journal::record("stop", ""));
        Ok(())
    }

    /// Stops the cell if it runs; true if it did. The caller holds the lock.
    fn stop_locked(&mut self, dir: &WorkspaceDir, record: &WorkspaceRecord) -> Result<bool> {
        let Some(recorded) = &record.cell else {
            return Ok(false);
        };
        let was_running = cell::is_alive(recorded);
        cell::stop(dir, recorded);
        self.store.set_cell(&record.id, None)?;
        Ok(was_running)
    }

    /// Deletes a workspace: stops its cell, removes its files and everything recorded about
    /// it.
    pub fn delete(&mut self, name_or_id: &str) -> Result<()> {
        let record = self.get(name_or_id)?;
        let dir = self.state.workspace(&record.id);
        let _lock = WorkspaceLock::acquire(&dir.lock())?;
        let record = self.get(&record.id)?;
        self.stop_locked(&dir, &record)?;
        self.store.set_lifecycle(&record.id, Lifecycle::Deleting)?;
        self.discard(&record);
        Ok(())
    }

    /// The expired workspaces that opening the state deleted.
    pub fn reaped_at_open(&self) -> &[String] {
        &self.reaped_at_open
    }

    /// Deletes every expired workspace; returns their names (or ids).
    pub fn reap(&mut self) -> Result<Vec<String>> {
        let now = journal::now_ms() / 1000;
        let mut reaped = Vec::new();
        for record in self.store.list_workspaces()? {
            if record.lifecycle != Lifecycle::Ready || record.expires_at.is_none_or(|at| at > now) {
                continue;
            }
            let dir = self.state.workspace(&record.id);
            // A workspace busy in another process is reaped next time.
            let Some(_lock) = WorkspaceLock::try_acquire(&dir.lock())? else {
                continue;
            };
            self.stop_locked(&dir, &record)?;
            self.store.set_lifecycle(&record.id, Lifecycle::Deleting)?;
            self.discard(&record);
            reaped.push(record.name.clone().unwrap_or(record.id.clone()));
        }
        Ok(reaped)
    }

    /// Adds or replaces a secret; a running cell gets it at once.
    pub fn set_secret(&mut self, name_or_id: &str, name: &str, value: Vec<u8>) -> Result<()> {
        crate::secrets::validate_secret_name(name)?;
        crate::secrets::validate_secret_value(name, &value)?;
        self.change_secrets(name_or_id, "secret.set", name, |secrets| {
            secrets.insert(name.to_owned(), value);
            Ok(())
        })
    }

    /// Removes a secret.
    pub fn remove_secret(&mut self, name_or_id: &str, name: &str) -> Result<()> {
        self.change_secrets(name_or_id, "secret.rm", name, |secrets| {
            secrets.remove(name).map(drop).ok_or_else(|| {
                WorkspaceError::Invalid(format!("the workspace has no secret named {name}"))
            })
        })
    }

    /// A workspace's secrets' names.
    pub fn secret_names(&self, name_or_id: &str) -> Result<Vec<String>> {
        let record = self.get(name_or_id)?;
        let dir = self.state.workspace(&record.id);
        Ok(crate::secrets::load(&dir)?.into_keys().collect())
    }

    fn change_secrets(
        &mut self,
        name_or_id: &str,
        kind: &str,
        name: &str,
        change: impl FnOnce(&mut crate::secrets::SecretMap) -> Result<()>,
    ) -> Result<()> {
        let record = self.get(name_or_id)?;
        let dir = self.state.workspace(&record.id);
        let _lock = WorkspaceLock::acquire(&dir.lock())?;
        let mut secrets = crate::secrets::load(&dir)?;
        change(&mut secrets)?;
        crate::secrets::save(&dir, &secrets)?;
        let record = self.get(&record.id)?;
        if record.cell.as_ref().is_some_and(cell::is_alive) {
            push_secrets(&dir, true)?;
        }
        // The name only: a secret's value is never logged.
        journal::append(&dir.journal(), &journal::record(kind, name))
    }

    /// A workspace's audit log, oldest first.
    pub fn audit(&mut self, name_or_id: &str) -> Result<Vec<AuditRecord>> {
        let record = self.get(name_or_id)?;
        let dir = self.state.workspace(&record.id);
        journal::ingest(&dir.journal(), &mut self.store, &record.id)?;
        self.store.audit(&record.id)
    }

    /// Runs `change` on a workspace's files with its cell stopped, then starts the cell again
    /// if it was running: reset and snapshot cannot change layers under a mounted overlay.
    pub(crate) fn with_cell_stopped<T>(
        &mut self,
        name_or_id: &str,
        change: impl FnOnce(&mut Store, &WorkspaceDir, &WorkspaceRecord) -> Result<T>,
    ) -> Result<T> {
        let record = self.get(name_or_id)?;
        let dir = self.state.workspace(&record.id);
        let _lock = WorkspaceLock::acquire(&dir.lock())?;
        let record = self.get(&record.id)?;
        let was_running = self.stop_locked(&dir, &record)?;
        let result = change(&mut self.store, &dir, &record);
        if was_running {
            let record = self.get(&record.id)?;
            let restarted = self.start_locked(&dir, record);
            if let (Ok(_), Err(error)) = (&result, restarted) {
                return Err(error);
            }
        }
        result
    }
}

/// Gives a running cell its secrets as files under /run/secrets. At start, a workspace
/// without secrets has nothing to install; after a change, even an empty set is sent.
fn push_secrets(dir: &WorkspaceDir, even_none: bool) -> Result<()> {
    let secrets = crate::secrets::load(dir)?;
    if secrets.is_empty() && !even_none {
        return Ok(());
    }
    let stream = cell::connect(dir).map_err(WorkspaceError::io(dir.socket()))?;
    let mut client = AgentClient::over(stream)?;
    client.set_secrets(secrets.into_iter().collect())
}

/// A stored workspace's policy.
pub(crate) fn policy_of(record: &WorkspaceRecord) -> Result<Policy> {
    let file = burrow_policy::PolicyFile::from_toml(&record.policy, "the workspace's policy")?;
    Ok(Policy::from_file(file)?)
}

fn create_private_dir(path: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)
    {
        Ok(()) => Ok(()),
        Err(error) => Err(WorkspaceError::Io {
            path: path.to_owned(),
            error,
        }),
    }
}

impl CellRecord {
    /// Whether this recorded cell is still running.
    pub fn is_alive(&self) -> bool {
        cell::is_alive(self)
    }
}

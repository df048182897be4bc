//! The state database: workspaces, snapshots and the audit log, in SQLite (WAL).
//!
//! Every change is one transaction, so a burrow killed at any instant leaves either the old
//! state or the new one. Multi-step operations on files (create, delete, snapshot) record their
//! progress in a row's `state`, and [`Store::open`]'s callers finish or undo what a killed burrow
//! left half done (see `Workspaces::recover`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::error::Result;

/// How a workspace stores its files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageMode {
    /// Layers merged by overlayfs.
    Overlay,
    /// One directory, copied from the seed (where overlayfs cannot be mounted in a user
    /// namespace).
    Copy,
}

impl StorageMode {
    fn as_str(self) -> &'static str {
        match self {
            StorageMode::Overlay => "overlay",
            StorageMode::Copy => "copy",
        }
    }

    fn parse(text: &str) -> StorageMode {
        if text == "copy" {
            StorageMode::Copy
        } else {
            StorageMode::Overlay
        }
    }
}

/// Where a workspace is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Lifecycle {
    /// Being created: its files may be incomplete.
    Creating,
    /// Usable.
    Ready,
    /// Being deleted.
    Deleting,
}

impl Lifecycle {
    fn as_str(self) -> &'static str {
        match self {
            Lifecycle::Creating => "creating",
            Lifecycle::Ready => "ready",
            Lifecycle::Deleting => "deleting",
        }
    }

    fn parse(text: &str) -> Lifecycle {
        match text {
            "creating" => Lifecycle::Creating,
            "deleting" => Lifecycle::Deleting,
            _ => Lifecycle::Ready,
        }
    }
}

/// A running cell, as recorded when it was started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CellRecord {
    /// The agent's pid on the host.
    pub pid: u32,
    /// Its start time (clock ticks since boot, from /proc), to tell it from a reused pid.
    pub start_time: u64,
    /// Cgroup directories to remove once it stops.
    pub cgroup_dirs: Vec<PathBuf>,
}

/// One workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceRecord {
    /// Its id.
    pub id: String,
    /// Its name, if it has one.
    pub name: Option<String>,
    /// When it was created (Unix seconds).
    pub created_at: i64,
    /// Its policy, as a TOML policy file.
    pub policy: String,
    /// How it stores files.
    pub mode: StorageMode,
    /// When it expires (Unix seconds).
    pub expires_at: Option<i64>,
    /// Labels.
    pub labels: BTreeMap<String, String>,
    /// Snapshot ids stacked above the seed, bottom first.
    pub chain: Vec<String>,
    /// The running cell, if one was started (it may have died since).
    pub cell: Option<CellRecord>,
    /// Where it is in its life.
    pub lifecycle: Lifecycle,
    /// The tenant that owns it (`burrow serve`); none for the local user's.
    pub tenant: Option<String>,
}

/// An API token: its hash only; the token itself is shown once, when made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Its id (for `token revoke`).
    pub id: String,
    /// The tenant it acts for.
    pub tenant: String,
    /// When it was made (Unix seconds).
    pub created_at: i64,
    /// When it was revoked, if it was.
    pub revoked_at: Option<i64>,
}

/// A snapshot: a frozen layer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotRecord {
    /// Its id (also its layer's directory name).
    pub id: String,
    /// Its name.
    pub name: String,
    /// The snapshot it was taken on top of (none: the seed).
    pub parent: Option<String>,
    /// When it was taken (Unix seconds).
    pub created_at: i64,
    /// False while being taken (a killed burrow may leave it so).
    pub complete: bool,
}

/// One audit record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// Unique id (the journal's records keep theirs, so ingesting twice is harmless).
    pub uid: String,
    /// When (Unix milliseconds).
    pub at_ms: i64,
    /// What: `exec`, `file.write`, `file.rm`, `file.mkdir`, `patch`, `import`, `reset`,
    /// `snapshot`, `start`, `stop`.
    pub kind: String,
    /// The command, path, or other subject.
    pub subject: String,
    /// Working directory, for commands.
    pub cwd: Option<String>,
    /// Exit status, for commands.
    pub exit_code: Option<i32>,
    /// How long it took.
    pub duration_ms: Option<u64>,
}

/// The open database.
#[derive(Debug)]
pub struct Store {
    connection: Connection,
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS workspaces (
    id TEXT PRIMARY KEY,
    name TEXT UNIQUE,
    created_at INTEGER NOT NULL,
    policy TEXT NOT NULL,
    mode TEXT NOT NULL,
    expires_at INTEGER,
    labels TEXT NOT NULL,
    chain TEXT NOT NULL,
    cell TEXT,
    lifecycle TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS snapshots (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    name TEXT NOT NULL,
    parent TEXT,
    created_at INTEGER NOT NULL,
    complete INTEGER NOT NULL,
    UNIQUE (workspace_id, name)
);
CREATE TABLE IF NOT EXISTS audit (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    uid TEXT NOT NULL UNIQUE,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id) ON DELETE CASCADE,
    at_ms INTEGER NOT NULL,
    kind TEXT NOT NULL,
    subject TEXT NOT NULL,
    cwd TEXT,
    exit_code INTEGER,
    duration_ms INTEGER
);
CREATE INDEX IF NOT EXISTS audit_by_workspace ON audit (workspace_id, seq);
";

/// Schema changes since the first version, in order: entry N takes the database from version
/// N + 1 to N + 2.
const MIGRATIONS: [&str; 1] = ["
ALTER TABLE workspaces ADD COLUMN tenant TEXT;
CREATE TABLE IF NOT EXISTS tokens (
    id TEXT PRIMARY KEY,
    tenant TEXT NOT NULL,
    hash TEXT NOT NULL UNIQUE,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
"];

/// The schema version this code writes.
const SCHEMA_VERSION: i64 = 1 + MIGRATIONS.len() as i64;

impl Store {
    /// Opens (creating) the database.
    pub fn open(path: &std::path::Path) -> Result<Store> {
        let connection = Connection::open(path)?;
        connection.busy_timeout(Duration::from_secs(10))?;
        // WAL: readers never block the writer; NORMAL: a commit survives the process being
        // killed (the data is in the WAL, in the page cache), which is what burrow promises.
        connection.execute_batch(
            "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;",
        )?;
        let version: i64 = connection.query_row("PRAGMA user_version", [], |row| row.get(0))?;
        if version < SCHEMA_VERSION {
            // One transaction: a burrow killed half-way leaves the old version, whole.
            let mut script = String::from("BEGIN IMMEDIATE;");
            if version < 1 {
                script.push_str(SCHEMA);
            }
            for migration in MIGRATIONS.iter().skip((version.max(1) - 1) as usize) {
                script.push_str(migration);
            }
            script.push_str(&format!("PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;"));
            connection.execute_batch(&script)?;
        }
        Ok(Store { connection })
    }

    /// Inserts a workspace.
    pub fn insert_workspace(&self, record: &WorkspaceRecord) -> Result<()> {
        self.connection.execute(
            "INSERT INTO workspaces (id, name, created_at, policy, mode, expires_at, labels, chain, cell, lifecycle, tenant)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                record.id,
                record.name,
                record.created_at,
                record.policy,
                record.mode.as_str(),
                record.expires_at,
                to_json(&record.labels),
                to_json(&record.chain),
                record.cell.as_ref().map(to_json),
                record.lifecycle.as_str(),
                record.tenant,
            ],
        )?;
        Ok(())
    }

    /// Finds a workspace by name or id (any lifecycle).
    pub fn find_workspace(&self, name_or_id: &str) -> Result<Option<WorkspaceRecord>> {
        Ok(self
            .connection
            .query_row(
                "SELECT id, name, created_at, policy, mode, expires_at, labels, chain, cell, lifecycle, tenant
                 FROM workspaces WHERE id = ?1 OR name = ?1 LIMIT 1",
                [name_or_id],
                workspace_from_row,
            )
            .optional()?)
    }

    /// All workspaces, oldest first.
    pub fn list_workspaces(&self) -> Result<Vec<WorkspaceRecord>> {
        let mut statement = self.connection.prepare(
            "SELECT id, name, created_at, policy, mode, expires_at, labels, chain, cell, lifecycle, tenant
             FROM workspaces ORDER BY created_at, id",
        )?;
        let rows = statement.query_map([], workspace_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Records a workspace's lifecycle state.
    pub fn set_lifecycle(&self, id: &str, lifecycle: Lifecycle) -> Result<()> {
        self.connection.execute(
            "UPDATE workspaces SET lifecycle = ?2 WHERE id = ?1",
            params![id, lifecycle.as_str()],
        )?;
        Ok(())
    }

    /// Records the running cell (or none).
    pub fn set_cell(&self, id: &str, cell: Option<&CellRecord>) -> Result<()> {
        self.connection.execute(
            "UPDATE workspaces SET cell = ?2 WHERE id = ?1",
            params![id, cell.map(to_json)],
        )?;
        Ok(())
    }

    /// Records the snapshot chain.
    pub fn set_chain(&self, id: &str, chain: &[String]) -> Result<()> {
        self.connection.execute(
            "UPDATE workspaces SET chain = ?2 WHERE id = ?1",
            params![id, to_json(&chain)],
        )?;
        Ok(())
    }

    /// Removes a workspace and everything recorded about it.
    pub fn delete_workspace(&self, id: &str) -> Result<()> {
        self.connection
            .execute("DELETE FROM workspaces WHERE id = ?1", [id])?;
        Ok(())
    }

    /// Inserts a snapshot, incomplete.
    pub fn insert_snapshot(&self, workspace_id: &str, snapshot: &SnapshotRecord) -> Result<()> {
        self.connection.execute(
            "INSERT INTO snapshots (id, workspace_id, name, parent, created_at, complete)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            params![
                snapshot.id,
                workspace_id,
                snapshot.name,
                snapshot.parent,
                snapshot.created_at,
                snapshot.complete,
            ],
        )?;
        Ok(())
    }

    /// Marks a snapshot taken and appends it to its workspace's chain, in one transaction.
    pub fn complete_snapshot(
        &mut self,
        workspace_id: &str,
        snapshot_id: &str,
        chain: &[String],
    ) -> Result<()> {
        let transaction = self.connection.transaction()?;
        transaction.execute(
            "UPDATE snapshots SET complete = 1 WHERE id = ?1",
            [snapshot_id],
        )?;
        transaction.execute(
            "UPDATE workspaces SET chain = ?2 WHERE id = ?1",
            params![workspace_id, to_json(&chain)],
        )?;
        transaction.commit()?;
        Ok(())
    }

    /// A workspace's snapshots, oldest first.
    pub fn snapshots(&self, workspace_id: &str) -> Result<Vec<SnapshotRecord>> {
        let mut statement = self.connection.prepare(
            "SELECT id, name, parent, created_at, complete FROM snapshots
             WHERE workspace_id = ?1 ORDER BY created_at, rowid",
        )?;
        let rows = statement.query_map([workspace_id], |row| {
            Ok(SnapshotRecord {
                id: row.get(0)?,
                name: row.get(1)?,
                parent: row.get(2)?,
                created_at: row.get(3)?,
                complete: row.get(4)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Removes a snapshot's record.
    pub fn delete_snapshot(&self, snapshot_id: &str) -> Result<()> {
        self.connection
            .execute("DELETE FROM snapshots WHERE id = ?1", [snapshot_id])?;
        Ok(())
    }

    /// Adds audit records (ones already present, by uid, are skipped).
    pub fn insert_audit(&mut self, workspace_id: &str, records: &[AuditRecord]) -> Result<()> {
        let transaction = self.connection.transaction()?;
        {
            let mut statement = transaction.prepare(
                "INSERT OR IGNORE INTO audit (uid, workspace_id, at_ms, kind, subject, cwd, exit_code, duration_ms)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            for record in records {
                statement.execute(params![
                    record.uid,
                    workspace_id,
                    record.at_ms,
                    record.kind,
                    record.subject,
                    record.cwd,
                    record.exit_code,
                    record.duration_ms.map(|d| d as i64),
                ])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    /// A workspace's audit log, oldest first.
    pub fn audit(&self, workspace_id: &str) -> Result<Vec<AuditRecord>> {
        let mut statement = self.connection.prepare(
            "SELECT uid, at_ms, kind, subject, cwd, exit_code, duration_ms FROM audit
             WHERE workspace_id = ?1 ORDER BY at_ms, seq",
        )?;
        let rows = statement.query_map([workspace_id], |row| {
            Ok(AuditRecord {
                uid: row.get(0)?,
                at_ms: row.get(1)?,
                kind: row.get(2)?,
                subject: row.get(3)?,
                cwd: row.get(4)?,
                exit_code: row.get(5)?,
                duration_ms: row.get::<_, Option<i64>>(6)?.map(|d| d.max(0) as u64),
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }
}

impl Store {
    /// Records a token's hash.
    pub fn insert_token(&self, token: &TokenRecord, hash: &str) -> Result<()> {
        self.connection.execute(
            "INSERT INTO tokens (id, tenant, hash, created_at, revoked_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![token.id, token.tenant, hash, token.created_at, token.revoked_at],
        )?;
        Ok(())
    }

    /// The live (not revoked) token with this hash.
    pub fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRecord>> {
        Ok(self
            .connection
            .query_row(
                "SELECT id, tenant, created_at, revoked_at FROM tokens WHERE hash = ?1 AND revoked_at IS NULL",
                [hash],
                token_from_row,
            )
            .optional()?)
    }

    /// Every token, oldest first.
    pub fn tokens(&self) -> Result<Vec<TokenRecord>> {
        let mut statement = self.connection.prepare(
            "SELECT id, tenant, created_at, revoked_at FROM tokens ORDER BY created_at, id",
        )?;
        let rows = statement.query_map([], token_from_row)?;
        Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
    }

    /// Revokes a token; false if no live token has this id.
    pub fn revoke_token(&self, id: &str, at: i64) -> Result<bool> {
        let changed = self.connection.execute(
            "UPDATE tokens SET revoked_at = ?2 WHERE id = ?1 AND revoked_at IS NULL",
            params![id, at],
        )?;
        Ok(changed > 0)
    }
}

fn token_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<TokenRecord> {
    Ok(TokenRecord {
        id: row.get(0)?,
        tenant: row.get(1)?,
        created_at: row.get(2)?,
        revoked_at: row.get(3)?,
    })
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    // Serialising these plain records cannot fail; an empty object is a safe fallback.
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn from_json<T: for<'de> Deserialize<'de> + Default>(text: Option<String>) -> T {
    text.and_then(|text| serde_json::from_str(&text).ok())
        .unwrap_or_default()
}

fn workspace_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<WorkspaceRecord> {
    let mode: String = row.get(4)?;
    let lifecycle: String = row.get(9)?;
    let cell: Option<String> = row.get(8)?;
    Ok(WorkspaceRecord {
        id: row.get(0)?,
        name: row.get(1)?,
        created_at: row.get(2)?,
        policy: row.get(3)?,
        mode: StorageMode::parse(&mode),
        expires_at: row.get(5)?,
        labels: from_json(row.get(6)?),
        chain: from_json(row.get(7)?),
        cell: cell.and_then(|text| serde_json::from_str(&text).ok()),
        lifecycle: Lifecycle::parse(&lifecycle),
        tenant: row.get(10)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, name: Option<&str>) -> WorkspaceRecord {
        WorkspaceRecord {
            id: id.to_owned(),
            name: name.map(str::to_owned),
            created_at: 1,
            policy: String::new(),
            mode: StorageMode::Overlay,
            expires_at: None,
            labels: BTreeMap::from([("team".to_owned(), "a".to_owned())]),
            chain: Vec::new(),
            cell: None,
            lifecycle: Lifecycle::Ready,
            tenant: None,
        }
    }

    #[test]
    fn workspaces_round_trip_and_names_are_unique() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db")).unwrap();
        store
            .insert_workspace(&record("aaaaaaaaaaaa", Some("one")))
            .unwrap();
        assert!(
            store
                .insert_workspace(&record("bbbbbbbbbbbb", Some("one")))
                .is_err()
        );
        let found = store.find_workspace("one").unwrap().unwrap();
        assert_eq!(found, record("aaaaaaaaaaaa", Some("one")));
        assert_eq!(store.find_workspace("aaaaaaaaaaaa").unwrap(), Some(found));
        let cell = CellRecord {
            pid: 7,
            start_time: 9,
            cgroup_dirs: vec![PathBuf::from("/x")],
        };
        store.set_cell("aaaaaaaaaaaa", Some(&cell)).unwrap();
        assert_eq!(
            store.find_workspace("one").unwrap().unwrap().cell,
            Some(cell)
        );
    }

    #[test]
    fn a_first_version_database_is_migrated_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            let old = Connection::open(&path).unwrap();
            old.execute_batch(SCHEMA).unwrap();
            old.execute_batch("PRAGMA user_version = 1").unwrap();
            old.execute(
                "INSERT INTO workspaces (id, name, created_at, policy, mode, labels, chain, lifecycle)
                 VALUES ('aaaaaaaaaaaa', 'old', 1, '', 'overlay', '{}', '[]', 'ready')",
                [],
            )
            .unwrap();
        }
        let store = Store::open(&path).unwrap();
        let found = store.find_workspace("old").unwrap().unwrap();
        assert_eq!(found.tenant, None);
        assert!(store.tokens().unwrap().is_empty());
        drop(store);
        // Opening again changes nothing.
        let store = Store::open(&path).unwrap();
        assert_eq!(store.list_workspaces().unwrap().len(), 1);
    }

    #[test]
    fn tokens_are_found_by_hash_until_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db")).unwrap();
        let token = TokenRecord {
            id: "t1".into(),
            tenant: "acme".into(),
            created_at: 5,
            revoked_at: None,
        };
        store.insert_token(&token, "hash-1").unwrap();
        assert_eq!(store.token_by_hash("hash-1").unwrap(), Some(token));
        assert!(store.revoke_token("t1", 9).unwrap());
        assert!(!store.revoke_token("t1", 10).unwrap());
        assert_eq!(store.token_by_hash("hash-1").unwrap(), None);
        assert_eq!(store.tokens().unwrap()[0].revoked_at, Some(9));
    }

    #[test]
    fn audit_records_are_not_duplicated() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("state.db")).unwrap();
        store
            .insert_workspace(&record("aaaaaaaaaaaa", None))
            .unwrap();
        let entry = AuditRecord {
            uid: "u1".to_owned(),
            at_ms: 5,
            kind: "exec".to_owned(),
            subject: "make".to_owned(),
            cwd: Some(".".to_owned()),
            exit_code: Some(0),
            duration_ms: Some(3),
        };
        store
            .insert_audit("aaaaaaaaaaaa", &[entry.clone(), entry.clone()])
            .unwrap();
        store
            .insert_audit("aaaaaaaaaaaa", std::slice::from_ref(&entry))
            .unwrap();
        assert_eq!(store.audit("aaaaaaaaaaaa").unwrap(), vec![entry]);
        // Deleting the workspace deletes its records.
        store.delete_workspace("aaaaaaaaaaaa").unwrap();
        assert!(store.audit("aaaaaaaaaaaa").unwrap().is_empty());
    }
}

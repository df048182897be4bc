//! Creating a workspace: options checked and the seed scanned before anything exists, the
//! directory made and locked, the row inserted as `creating`, the files populated, and the row
//! made `ready` last.

use burrow_policy::{Backend, PathContext, Policy};

use super::{CreateOptions, STORAGE_ENV, Workspaces, create_private_dir, shown_name, stored_name};
use crate::archive::{ImportLimits, Source};
use crate::error::{Result, WorkspaceError};
use crate::info::{self, ExecInfo};
use crate::journal;
use crate::layout::{SEED_LAYER, WorkspaceDir};
use crate::lock::WorkspaceLock;
use crate::names::{looks_like_id, new_id, validate_name};
use crate::store::{Lifecycle, StorageMode, WorkspaceRecord};

/// Limits of a seed.
const SEED_LIMITS: ImportLimits = ImportLimits {
    max_file: 1 << 30,
    max_total: 16 << 30,
    max_entries: 1_000_000,
};

impl Workspaces {
    /// Creates a workspace (stopped).
    pub fn create(&mut self, options: &CreateOptions) -> Result<WorkspaceRecord> {
        if let Some(tenant) = &options.tenant {
            validate_name(tenant)?;
        }
        let tenant = options.tenant.as_deref();
        if let Some(name) = &options.name {
            validate_name(name)?;
            if looks_like_id(name) {
                return Err(WorkspaceError::Invalid(format!(
                    "`{name}` looks like a workspace id; pick a name that does not"
                )));
            }
            if self
                .store
                .find_workspace(&stored_name(tenant, name))?
                .is_some()
            {
                return Err(WorkspaceError::NameTaken(name.clone()));
            }
        }
        for key in options.labels.keys() {
            validate_name(key).map_err(|_| {
                WorkspaceError::Invalid(format!(
                    "label `{key}`: use letters, digits, `.`, `_` and `-`"
                ))
            })?;
        }
        let (policy_file, policy_text) = workspace_policy(&options.policy, &options.context)?;
        for (name, value) in &options.secrets {
            crate::secrets::validate_secret_name(name)?;
            crate::secrets::validate_secret_value(name, value)?;
        }
        // Rules and secrets that cannot make a redactor are refused before anything exists.
        burrow_redact::Redactor::new(
            &crate::secrets::for_redaction(&options.secrets),
            &options.redact,
        )
        .map_err(|error| WorkspaceError::Invalid(error.to_string()))?;
        // The seed is checked entirely before anything is made.
        let seed = match &options.seed {
            Some(path) => {
                let source = Source::open(path)?;
                let entries = source.scan(&SEED_LIMITS)?;
                Some((source, entries))
            }
            None => None,
        };
        let mode = self.storage_mode()?;
        let now = journal::now_ms() / 1000;
        let record = WorkspaceRecord {
            id: new_id(),
            name: options
                .name
                .as_deref()
                .map(|name| stored_name(tenant, name)),
            created_at: now,
            policy: policy_text,
            mode,
            // Rounded up to the second: a workspace lives at least as long as asked.
            expires_at: options.ttl.map(|ttl| {
                let ttl_ms = i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX);
                journal::now_ms().saturating_add(ttl_ms).saturating_add(999) / 1000
            }),
            labels: options.labels.clone(),
            chain: Vec::new(),
            cell: None,
            lifecycle: Lifecycle::Creating,
            tenant: options.tenant.clone(),
        };
        let dir = self.state.workspace(&record.id);
        // Held until the workspace is ready: recovery leaves a workspace alone while its
        // creator lives.
        let _lock = self.make_locked_dir(&record.id)?;
        if let Err(error) = self.store.insert_workspace(&record) {
            let _ = crate::tree::remove_tree(dir.root());
            return Err(match (&record.name, error) {
                (
                    Some(name),
                    WorkspaceError::Database(rusqlite::Error::SqliteFailure(failure, _)),
                ) if failure.code == rusqlite::ErrorCode::ConstraintViolation => {
                    WorkspaceError::NameTaken(shown_name(tenant, name))
                }
                (_, error) => error,
            });
        }
        match self.populate(&dir, &record, policy_file, seed, options) {
            Ok(()) => {}
            Err(error) => {
                self.discard(&record);
                return Err(error);
            }
        }
        self.store.set_lifecycle(&record.id, Lifecycle::Ready)?;
        let _ = journal::append(
            &dir.journal(),
            &journal::record("create", record.name.clone().unwrap_or_default()),
        );
        Ok(WorkspaceRecord {
            lifecycle: Lifecycle::Ready,
            ..record
        })
    }

    /// Makes workspace `id`'s directory and returns its held lock. It is made and locked in
    /// `incoming/` and then renamed into place, so that recovery can take any unlocked
    /// directory in `workspaces/` without a row for the leftover of a killed create.
    fn make_locked_dir(&self, id: &str) -> Result<WorkspaceLock> {
        let dir = self.state.workspace(id);
        let staging = WorkspaceDir::new(self.state.incoming().join(id));
        create_private_dir(staging.root())?;
        let lock = WorkspaceLock::acquire(&staging.lock())?;
        if let Err(error) = std::fs::rename(staging.root(), dir.root()) {
            let _ = crate::tree::remove_tree(staging.root());
            return Err(WorkspaceError::Io {
                path: dir.root().to_owned(),
                error,
            });
        }
        Ok(lock)
    }

    fn populate(
        &self,
        dir: &WorkspaceDir,
        record: &WorkspaceRecord,
        policy: burrow_policy::PolicyFile,
        seed: Option<(Source, Vec<crate::archive::ImportEntry>)>,
        options: &CreateOptions,
    ) -> Result<()> {
        crate::secrets::save(dir, &options.secrets)?;
        create_private_dir(&dir.layers())?;
        create_private_dir(&dir.trash())?;
        let seed_dir = dir.layer(SEED_LAYER);
        match seed {
            Some((source, entries)) => {
                crate::tree::materialize(&source, &entries, &seed_dir)?;
            }
            None => std::fs::create_dir(&seed_dir).map_err(WorkspaceError::io(&seed_dir))?,
        }
        match record.mode {
            StorageMode::Overlay => {
                for path in [dir.upper(), dir.work()] {
                    std::fs::create_dir(&path).map_err(WorkspaceError::io(&path))?;
                }
            }
            StorageMode::Copy => {
                crate::tree::copy_tree(&seed_dir, &dir.tree())?;
            }
        }
        ExecInfo {
            id: record.id.clone(),
            name: record.name.clone(),
            policy,
            expires_at: record.expires_at,
            redact: options.redact.clone(),
        }
        .write(dir)?;
        if let Some(name) = &record.name {
            info::link_name(&self.state, name, &record.id)?;
        }
        Ok(())
    }

    /// Whether overlayfs works for workspaces here; probed once per kernel and remembered.
    pub(super) fn storage_mode(&self) -> Result<StorageMode> {
        match std::env::var(STORAGE_ENV).as_deref() {
            Ok("copy") => return Ok(StorageMode::Copy),
            Ok("overlay") => return Ok(StorageMode::Overlay),
            Ok(other) if !other.is_empty() => {
                return Err(WorkspaceError::Invalid(format!(
                    "{STORAGE_ENV}={other}: use `overlay` or `copy`"
                )));
            }
            _ => {}
        }
        let kernel = rustix::system::uname()
            .release()
            .to_string_lossy()
            .into_owned();
        let cache = self.state.root().join("storage");
        if let Ok(text) = std::fs::read_to_string(&cache)
            && let Some((mode, release)) = text.trim().split_once(' ')
            && release == kernel
        {
            return Ok(if mode == "copy" {
                StorageMode::Copy
            } else {
                StorageMode::Overlay
            });
        }
        let scratch = self.state.trash().join(format!("probe-{}", new_id()));
        create_private_dir(&scratch)?;
        let works = burrow_sandbox::probe::overlay_in_user_namespace(Some(&scratch));
        let _ = crate::tree::remove_tree(&scratch);
        let mode = match works {
            Ok(()) => StorageMode::Overlay,
            Err(error) => {
                tracing::info!(%error, "overlayfs is not available to workspaces; they will copy");
                StorageMode::Copy
            }
        };
        let word = if mode == StorageMode::Copy {
            "copy"
        } else {
            "overlay"
        };
        let _ = std::fs::write(&cache, format!("{word} {kernel}\n"));
        Ok(mode)
    }
}

/// The policy a workspace stores: its own paths made absolute (it outlives the directory it
/// was created from), and no writable working directory (the workspace is what is writable).
fn workspace_policy(
    policy: &Policy,
    context: &PathContext,
) -> Result<(burrow_policy::PolicyFile, String)> {
    if policy.backend != Backend::Sandbox {
        return Err(WorkspaceError::Invalid(
            "workspaces need the sandbox backend; drop --backend host".to_owned(),
        ));
    }
    let mut policy = policy.clone();
    policy.filesystem.write_cwd = false;
    let bare = PathContext {
        cwd: context.cwd.clone(),
        home: context.home.clone(),
        state_dir: None,
    };
    let mut writes = policy.clone();
    writes.filesystem.hide.clear();
    writes.filesystem.hide_credentials = false;
    let mut hides = policy.clone();
    hides.filesystem.write.clear();
    hides.filesystem.hide_credentials = false;
    policy.filesystem.write = writes.resolve_filesystem(&bare)?.writable;
    policy.filesystem.hide = hides.resolve_filesystem(&bare)?.hidden;
    // The whole set checked together, as a cell will use it.
    policy.resolve_filesystem(context)?;
    let file = policy.to_file();
    let text = toml::to_string(&file)
        .map_err(|error| WorkspaceError::Invalid(format!("cannot store the policy: {error}")))?;
    Ok((file, text))
}

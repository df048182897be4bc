//! Workspaces' lifecycle and history: create, list, status, start, stop, delete, reset,
//! snapshots, diff, patch, audit, and secrets.

use std::path::PathBuf;
use std::time::Duration;

use burrow_policy::{ByteSize, HostPattern, NetworkMode, PathContext, Policy, PolicyFile};
use burrow_redact::RuleSpec;
use burrow_workspace::WorkspaceError;
use burrow_workspace::diff::Rendered;
use burrow_workspace::edit::PatchedFile;
use burrow_workspace::manager::CreateOptions;
use burrow_workspace::store::AuditRecord;
use burrow_workspace::versions::SnapshotInfo;
use serde::Serialize;

use super::error::{ApiError, ApiResult, ErrorCode};
use super::inputs::{
    CreateInput, Network, PatchInput, ResetInput, SecretRef, SecretSetInput, SnapshotInput,
    WorkspaceRef,
};
use super::{Api, Caller};

/// A workspace as the API shows it: named as its tenant named it.
pub use burrow_workspace::manager::WorkspaceStatus as Workspace;

/// The longest timeout a command or a workspace's default may have, in seconds.
pub const MAX_TIMEOUT: u64 = 3600;

/// What changed since the baseline.
#[derive(Debug, Serialize)]
pub struct Diff {
    /// One entry per changed path.
    pub files: Vec<Rendered>,
}

/// What a patch did.
#[derive(Debug, Serialize)]
pub struct Patched {
    /// One entry per file.
    pub files: Vec<PatchedFile>,
}

impl Api {
    /// Makes a workspace (stopped; its first command starts it).
    pub fn create(&self, caller: &Caller, input: CreateInput) -> ApiResult<Workspace> {
        let mut policy = creation_policy(&input)?;
        if let Some(idle) = input.idle_timeout {
            policy.workspace.idle_timeout = (idle > 0).then(|| Duration::from_secs(idle));
        }
        let redact = parse_rules(&input.redact)?;
        let options = CreateOptions {
            name: input.name,
            seed: None,
            policy,
            context: PathContext {
                cwd: PathBuf::from("/"),
                // The server user's home, so that its credentials are hidden from the cell.
                home: std::env::var_os("HOME")
                    .filter(|home| !home.is_empty())
                    .map(PathBuf::from),
                state_dir: Some(self.root().to_path_buf()),
            },
            ttl: input.ttl.map(Duration::from_secs),
            labels: input.labels,
            secrets: input
                .secrets
                .into_iter()
                .map(|(name, value)| (name, value.into_bytes()))
                .collect(),
            redact,
            tenant: caller.tenant_name().map(str::to_owned),
        };
        let mut workspaces = self.workspaces()?;
        let record = workspaces.create(&options)?;
        Ok(workspaces.status_for(&record.id, caller.tenant_name())?)
    }

    /// The caller's workspaces, oldest first.
    pub fn list(&self, caller: &Caller) -> ApiResult<Vec<Workspace>> {
        Ok(self.workspaces()?.list_for(caller.tenant_name())?)
    }

    /// One workspace.
    pub fn status(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<Workspace> {
        Ok(self
            .workspaces()?
            .status_for(&input.workspace, caller.tenant_name())?)
    }

    /// Starts a workspace's cell; a running one is left as it is.
    pub fn start(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<Workspace> {
        drop(self.running(caller, &input.workspace)?);
        self.status(caller, input)
    }

    /// Stops a workspace's cell (its files stay); a stopped one is left as it is.
    pub fn stop(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<Workspace> {
        let record = self.record(caller, &input.workspace)?;
        match self.workspaces()?.stop(&record.id) {
            Ok(()) | Err(WorkspaceError::NotRunning(_)) => {}
            Err(error) => return Err(error.into()),
        }
        self.status(caller, input)
    }

    /// Deletes a workspace and everything in it.
    pub fn delete(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<()> {
        let record = self.record(caller, &input.workspace)?;
        Ok(self.workspaces()?.delete(&record.id)?)
    }

    /// Discards the changes since the baseline or since a snapshot.
    pub fn reset(&self, caller: &Caller, input: &ResetInput) -> ApiResult<Workspace> {
        let record = self.record(caller, &input.workspace)?;
        if let Some(to) = &input.to {
            let known = self.workspaces()?.snapshots(&record.id)?;
            if !known.iter().any(|s| &s.name == to || &s.id == to) {
                return Err(WorkspaceError::SnapshotNotFound {
                    workspace: input.workspace.clone(),
                    snapshot: to.clone(),
                }
                .into());
            }
        }
        self.launcher.reset(&record.id, input.to.as_deref())?;
        self.status(
            caller,
            &WorkspaceRef {
                workspace: input.workspace.clone(),
            },
        )
    }

    /// Freezes the current state under a name.
    pub fn snapshot_create(
        &self,
        caller: &Caller,
        input: &SnapshotInput,
    ) -> ApiResult<SnapshotInfo> {
        burrow_workspace::names::validate_name(&input.name)?;
        let record = self.record(caller, &input.workspace)?;
        let find = |api: &Api| -> ApiResult<Option<SnapshotInfo>> {
            Ok(api
                .workspaces()?
                .snapshots(&record.id)?
                .into_iter()
                .find(|s| s.name == input.name))
        };
        if find(self)?.is_some() {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "workspace {} already has a snapshot named {}",
                    input.workspace, input.name
                ),
            ));
        }
        self.launcher.snapshot(&record.id, &input.name)?;
        find(self)?.ok_or_else(|| ApiError::internal("the snapshot was made but cannot be found"))
    }

    /// A workspace's snapshots, oldest first.
    pub fn snapshots(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<Vec<SnapshotInfo>> {
        let record = self.record(caller, &input.workspace)?;
        Ok(self.workspaces()?.snapshots(&record.id)?)
    }

    /// Deletes a snapshot nothing builds on.
    pub fn snapshot_delete(&self, caller: &Caller, input: &SnapshotInput) -> ApiResult<()> {
        let record = self.record(caller, &input.workspace)?;
        self.workspaces()?
            .delete_snapshot(&record.id, &input.name)
            .map_err(|error| match error {
                WorkspaceError::SnapshotNotFound { .. } => ApiError::not_found(format!(
                    "workspace {} has no snapshot named {}",
                    input.workspace, input.name
                )),
                other => other.into(),
            })
    }

    /// What changed since the baseline, as git would show it, redacted.
    pub fn diff(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<Diff> {
        let record = self.record(caller, &input.workspace)?;
        Ok(Diff {
            files: self.workspaces()?.diff(&record.id, &[])?,
        })
    }

    /// Applies a unified diff, all or nothing.
    pub fn patch(&self, caller: &Caller, input: &PatchInput) -> ApiResult<Patched> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let files = handle.apply_patch(&mut client, input.patch.as_bytes())?;
        Ok(Patched { files })
    }

    /// Everything done in a workspace, oldest first.
    pub fn audit(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<Vec<AuditRecord>> {
        let record = self.record(caller, &input.workspace)?;
        Ok(self.workspaces()?.audit(&record.id)?)
    }

    /// Sets a secret; a running cell gets it at once.
    pub fn secret_set(&self, caller: &Caller, input: SecretSetInput) -> ApiResult<()> {
        let record = self.record(caller, &input.workspace)?;
        Ok(self
            .workspaces()?
            .set_secret(&record.id, &input.name, input.value.into_bytes())?)
    }

    /// The names of a workspace's secrets (never their values).
    pub fn secret_list(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<Vec<String>> {
        let record = self.record(caller, &input.workspace)?;
        Ok(self.workspaces()?.secret_names(&record.id)?)
    }

    /// Removes a secret.
    pub fn secret_delete(&self, caller: &Caller, input: &SecretRef) -> ApiResult<()> {
        let record = self.record(caller, &input.workspace)?;
        self.workspaces()?
            .remove_secret(&record.id, &input.name)
            .map_err(|error| match error {
                WorkspaceError::Invalid(message) => ApiError::not_found(message),
                other => other.into(),
            })
    }
}

/// The policy of a new workspace, from the few settings the API offers.
fn creation_policy(input: &CreateInput) -> ApiResult<Policy> {
    let mut file = PolicyFile::default();
    let (mode, allow) = network_policy(input.network, &input.allow)?;
    file.network.mode = Some(mode);
    file.network.allow = allow;
    file.limits.timeout = match input.timeout {
        Some(seconds) => Some(checked_timeout(seconds)?),
        None => None,
    };
    file.limits.memory = input.memory.as_deref().map(parse_size).transpose()?;
    file.limits.pids = input.pids;
    Policy::from_file(file).map_err(|error| ApiError::invalid(error.to_string()))
}

/// The policy's network for the API's choice: never the host's network, and an allowlist
/// never reaches private addresses (the server's own services among them).
pub(super) fn network_policy(
    network: Option<Network>,
    allow: &[String],
) -> ApiResult<(NetworkMode, Vec<HostPattern>)> {
    if allow.is_empty() {
        let mode = match network {
            Some(Network::Loopback) => NetworkMode::Loopback,
            Some(Network::None) | None => NetworkMode::None,
        };
        return Ok((mode, Vec::new()));
    }
    if network.is_some() {
        return Err(ApiError::invalid(
            "give either `network` or `allow` (an allowlist is its own network mode)",
        ));
    }
    let patterns = allow
        .iter()
        .map(|host| {
            host.parse()
                .map_err(|message: String| ApiError::invalid(message))
        })
        .collect::<ApiResult<Vec<HostPattern>>>()?;
    Ok((NetworkMode::Allow, patterns))
}

/// A timeout in seconds, refused when zero or beyond [`MAX_TIMEOUT`].
pub(super) fn checked_timeout(seconds: u64) -> ApiResult<u64> {
    if seconds == 0 || seconds > MAX_TIMEOUT {
        return Err(ApiError::invalid(format!(
            "timeout {seconds}: give 1 to {MAX_TIMEOUT} seconds"
        )));
    }
    Ok(seconds)
}

/// A size such as `512M`.
pub(super) fn parse_size(text: &str) -> ApiResult<ByteSize> {
    text.parse::<ByteSize>()
        .map_err(|error| ApiError::invalid(format!("memory {text}: {error}")))
}

/// Redaction rules such as `email` or `ip:mask`.
pub(super) fn parse_rules(rules: &[String]) -> ApiResult<Vec<RuleSpec>> {
    rules
        .iter()
        .map(|rule| {
            rule.parse::<RuleSpec>()
                .map_err(|error| ApiError::invalid(format!("redact {rule}: {error}")))
        })
        .collect()
}

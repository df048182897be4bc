//! The policy as written: a TOML file or command-line flags, every field optional.
//!
//! Layers are merged field by field ([`PolicyFile::overlay`]), then validated once into a
//! [`Policy`](crate::Policy). Unknown keys are errors, so a typo never silently weakens a policy.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::error::PolicyError;
use crate::model::{Backend, NetworkMode};
use crate::network::HostPattern;
use crate::size::ByteSize;

/// A whole policy file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyFile {
    /// What the cell sees of the host's files.
    pub filesystem: FilesystemSection,
    /// What the cell can reach on the network.
    pub network: NetworkSection,
    /// Time, memory, process and file limits.
    pub limits: LimitsSection,
    /// The command's environment.
    pub env: EnvSection,
    /// How much output is captured.
    pub output: OutputSection,
    /// How the cell is made.
    pub sandbox: SandboxSection,
    /// Settings of workspaces.
    pub workspace: WorkspaceSection,
}

/// `[filesystem]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FilesystemSection {
    /// Whether the current directory is writable (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub write_cwd: Option<bool>,
    /// More writable roots.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub write: Vec<PathBuf>,
    /// Paths made absent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hide: Vec<PathBuf>,
    /// Whether the built-in list of credential paths is hidden (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hide_credentials: Option<bool>,
    /// Paths relative to each writable root that stay read-only (default `.git/hooks`,
    /// `.git/config`). Setting the key replaces the default list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protected: Option<Vec<PathBuf>>,
    /// Size of the private /tmp.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tmp_size: Option<ByteSize>,
}

/// `[network]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkSection {
    /// `none`, `loopback`, `allow` or `host`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<NetworkMode>,
    /// Hosts reachable through burrow's proxy (`allow` mode, which a non-empty list implies):
    /// `example.com`, `*.example.com`, `example.com:443`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub allow: Vec<HostPattern>,
    /// Exceptions to `allow`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deny: Vec<HostPattern>,
    /// Whether allowed names may resolve to loopback, private, link-local, multicast or
    /// metadata addresses (default false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_private: Option<bool>,
}

/// `[limits]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsSection {
    /// Wall-clock seconds before the whole cell is killed; 0 means none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Memory for the whole cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<ByteSize>,
    /// Processes and threads in the cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids: Option<u64>,
    /// CPU seconds per process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_time: Option<u64>,
    /// CPU bandwidth in cores (1.5 = one and a half cores).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// Largest file a process may write.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_file_size: Option<ByteSize>,
    /// Open files per process.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub nofile: Option<u64>,
}

/// `[env]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvSection {
    /// Variables set to fixed values.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub set: BTreeMap<String, String>,
    /// Caller variables passed through, by name or `*` pattern.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub inherit: Vec<String>,
}

/// `[output]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputSection {
    /// Bytes kept per captured stream (head and tail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<ByteSize>,
    /// Lines kept per captured stream (head and tail).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_lines: Option<u64>,
}

/// `[sandbox]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxSection {
    /// `sandbox` (the default) or `host` (no isolation, for trusted commands).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub backend: Option<Backend>,
    /// Run even when a layer cannot be set up, and say which.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_degraded: Option<bool>,
}

/// `[workspace]`
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorkspaceSection {
    /// Seconds without a connection or a command after which a workspace's cell stops; 0 for
    /// never (default 1800).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<u64>,
    /// Largest file one write may carry (default 8M).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_file_write: Option<ByteSize>,
}

impl PolicyFile {
    /// Parses a policy file; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<PolicyFile, PolicyError> {
        let deserializer = toml::Deserializer::parse(text)
            .map_err(|error| PolicyError::syntax(origin, text, &error, None))?;
        serde_path_to_error::deserialize(deserializer).map_err(|error| {
            let key = error.path().to_string();
            PolicyError::syntax(origin, text, error.inner(), Some(key))
        })
    }

    /// This file with `top` laid over it: scalars set in `top` win, lists are concatenated.
    #[must_use]
    pub fn overlay(mut self, top: PolicyFile) -> PolicyFile {
        let fs = &mut self.filesystem;
        replace(&mut fs.write_cwd, top.filesystem.write_cwd);
        fs.write.extend(top.filesystem.write);
        fs.hide.extend(top.filesystem.hide);
        replace(&mut fs.hide_credentials, top.filesystem.hide_credentials);
        replace(&mut fs.protected, top.filesystem.protected);
        replace(&mut fs.tmp_size, top.filesystem.tmp_size);

        replace(&mut self.network.mode, top.network.mode);
        self.network.allow.extend(top.network.allow);
        self.network.deny.extend(top.network.deny);
        replace(&mut self.network.allow_private, top.network.allow_private);

        let limits = &mut self.limits;
        replace(&mut limits.timeout, top.limits.timeout);
        replace(&mut limits.memory, top.limits.memory);
        replace(&mut limits.pids, top.limits.pids);
        replace(&mut limits.cpu_time, top.limits.cpu_time);
        replace(&mut limits.cpus, top.limits.cpus);
        replace(&mut limits.max_file_size, top.limits.max_file_size);
        replace(&mut limits.nofile, top.limits.nofile);

        self.env.set.extend(top.env.set);
        self.env.inherit.extend(top.env.inherit);

        replace(&mut self.output.max_bytes, top.output.max_bytes);
        replace(&mut self.output.max_lines, top.output.max_lines);

        replace(&mut self.sandbox.backend, top.sandbox.backend);
        replace(&mut self.sandbox.allow_degraded, top.sandbox.allow_degraded);

        replace(&mut self.workspace.idle_timeout, top.workspace.idle_timeout);
        replace(
            &mut self.workspace.max_file_write,
            top.workspace.max_file_write,
        );
        self
    }
}

fn replace<T>(base: &mut Option<T>, top: Option<T>) {
    if top.is_some() {
        *base = top;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_section() {
        let file = PolicyFile::from_toml(
            r#"
            [filesystem]
            write = ["~/cache"]
            hide = ["/srv/secrets"]
            tmp_size = "64M"
            [network]
            mode = "host"
            [limits]
            timeout = 5
            memory = "256M"
            pids = 64
            cpus = 1.5
            [env]
            set = { FOO = "bar" }
            inherit = ["LC_*"]
            [output]
            max_bytes = 4096
            [sandbox]
            allow_degraded = true
            "#,
            "p.toml",
        )
        .unwrap();
        assert_eq!(file.network.mode, Some(NetworkMode::Host));
        assert_eq!(file.limits.memory, Some(ByteSize::mib(256)));
        assert_eq!(file.output.max_bytes, Some(ByteSize(4096)));
        assert_eq!(file.env.set["FOO"], "bar");
    }

    #[test]
    fn an_unknown_key_is_named_with_its_line() {
        let error = PolicyFile::from_toml("[limits]\ntimeout = 3\nmemroy = \"1G\"\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("p.toml:3: limits.memroy: unknown field `memroy`"),
            "{error}"
        );
        assert!(!error.contains('\n'), "{error}");
    }

    #[test]
    fn a_bad_value_is_named_with_its_key() {
        let error = PolicyFile::from_toml("[network]\nmode = \"everywhere\"\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("p.toml:2: network.mode: unknown variant"),
            "{error}"
        );
    }

    #[test]
    fn overlay_replaces_scalars_and_extends_lists() {
        let base = PolicyFile::from_toml(
            "[filesystem]\nwrite = [\"/a\"]\n[limits]\npids = 10\ntimeout = 9\n",
            "base",
        )
        .unwrap();
        let top = PolicyFile::from_toml(
            "[filesystem]\nwrite = [\"/b\"]\n[limits]\npids = 20\n",
            "top",
        )
        .unwrap();
        let merged = base.overlay(top);
        assert_eq!(
            merged.filesystem.write,
            [PathBuf::from("/a"), PathBuf::from("/b")]
        );
        assert_eq!(merged.limits.pids, Some(20));
        assert_eq!(merged.limits.timeout, Some(9));
    }
}

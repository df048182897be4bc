//! The validated policy: every value present, in range and consistent.

use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::credentials::{CREDENTIAL_PATHS, DEFAULT_PROTECTED};
use crate::env::EnvPolicy;
use crate::error::PolicyError;
use crate::file::{
    EnvSection, FilesystemSection, LimitsSection, NetworkSection, OutputSection, PolicyFile,
    SandboxSection, WorkspaceSection,
};
use crate::network::NetworkRules;
use crate::size::ByteSize;

/// Default wall-clock limit of a command.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default number of processes a command may have.
pub const DEFAULT_PIDS: u64 = 512;
/// Default bytes captured per stream.
pub const DEFAULT_MAX_OUTPUT: ByteSize = ByteSize::mib(1);
/// Default size of the private /tmp.
pub const DEFAULT_TMP_SIZE: ByteSize = ByteSize::mib(512);
/// Default idle time after which a workspace's cell stops.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(1800);
/// Default largest file one write into a workspace may carry.
pub const DEFAULT_MAX_FILE_WRITE: ByteSize = ByteSize::mib(8);

/// Settings of workspaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkspacePolicy {
    /// Stop the cell after this long without activity; `None` for never.
    pub idle_timeout: Option<Duration>,
    /// Largest file one write may carry.
    pub max_file_write: ByteSize,
}

/// What the cell can reach on the network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NetworkMode {
    /// Own network namespace, and no sockets but unix ones.
    None,
    /// Own network namespace with a loopback interface: servers and clients inside the cell can
    /// talk to each other, nothing outside is reachable.
    Loopback,
    /// Own network namespace with a loopback interface, and burrow's proxy on it as the only
    /// way out: to the hosts of the allowlist ([`Policy::network_rules`]).
    Allow,
    /// The host's network.
    Host,
}

impl NetworkMode {
    /// Its name in policy files and flags.
    pub fn name(self) -> &'static str {
        match self {
            NetworkMode::None => "none",
            NetworkMode::Loopback => "loopback",
            NetworkMode::Allow => "allow",
            NetworkMode::Host => "host",
        }
    }

    /// Whether the cell has a loopback interface and may use IP sockets on it.
    pub fn has_loopback(self) -> bool {
        matches!(self, NetworkMode::Loopback | NetworkMode::Allow)
    }
}

/// How commands are run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// A Linux cell: namespaces, Landlock, seccomp, cgroups.
    Sandbox,
    /// No isolation: own process group, rlimits, timeout and output handling only.
    Host,
}

/// Filesystem rules, paths as the user wrote them.
#[derive(Debug, Clone, PartialEq)]
pub struct FilesystemPolicy {
    /// Whether the current directory is a writable root.
    pub write_cwd: bool,
    /// Further writable roots.
    pub write: Vec<PathBuf>,
    /// Paths made absent.
    pub hide: Vec<PathBuf>,
    /// Whether [`CREDENTIAL_PATHS`] are hidden.
    pub hide_credentials: bool,
    /// Relative paths that stay read-only inside every writable root.
    pub protected: Vec<PathBuf>,
    /// Size of the private /tmp.
    pub tmp_size: ByteSize,
}

/// Resource limits.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// Wall-clock limit of the whole cell; `None` for none.
    pub timeout: Option<Duration>,
    /// Memory of the whole cell.
    pub memory: Option<ByteSize>,
    /// Processes of the command and its descendants.
    pub pids: u64,
    /// CPU seconds per process.
    pub cpu_time: Option<u64>,
    /// CPU bandwidth in cores.
    pub cpus: Option<f64>,
    /// Largest file a process may write.
    pub max_file_size: Option<ByteSize>,
    /// Open files per process.
    pub nofile: Option<u64>,
}

/// Output capture caps, per stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OutputPolicy {
    /// Bytes kept (head and tail).
    pub max_bytes: ByteSize,
    /// Lines kept (head and tail).
    pub max_lines: Option<u64>,
}

/// A complete, validated policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    /// Filesystem rules.
    pub filesystem: FilesystemPolicy,
    /// Network mode.
    pub network: NetworkMode,
    /// What `allow` mode lets through (empty in the other modes).
    pub network_rules: NetworkRules,
    /// Resource limits.
    pub limits: Limits,
    /// Environment rules.
    pub env: EnvPolicy,
    /// Output caps.
    pub output: OutputPolicy,
    /// How commands are run.
    pub backend: Backend,
    /// Whether a layer that cannot be set up is skipped (and reported) rather than fatal.
    pub allow_degraded: bool,
    /// Settings of workspaces.
    pub workspace: WorkspacePolicy,
}

/// Where relative and `~` paths point.
#[derive(Debug, Clone)]
pub struct PathContext {
    /// The caller's working directory (absolute).
    pub cwd: PathBuf,
    /// The caller's home directory, when known.
    pub home: Option<PathBuf>,
    /// burrow's state directory, hidden from every cell.
    pub state_dir: Option<PathBuf>,
}

/// Filesystem rules with every path absolute and normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedFilesystem {
    /// Writable roots, the working directory first when it is one.
    pub writable: Vec<PathBuf>,
    /// Hidden paths.
    pub hidden: Vec<PathBuf>,
    /// Read-only paths relative to each writable root.
    pub protected: Vec<PathBuf>,
    /// Size of the private /tmp.
    pub tmp_size: ByteSize,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            filesystem: FilesystemPolicy {
                write_cwd: true,
                write: Vec::new(),
                hide: Vec::new(),
                hide_credentials: true,
                protected: DEFAULT_PROTECTED.iter().map(PathBuf::from).collect(),
                tmp_size: DEFAULT_TMP_SIZE,
            },
            network: NetworkMode::None,
            network_rules: NetworkRules::default(),
            limits: Limits {
                timeout: Some(DEFAULT_TIMEOUT),
                memory: None,
                pids: DEFAULT_PIDS,
                cpu_time: None,
                cpus: None,
                max_file_size: None,
                nofile: None,
            },
            env: EnvPolicy::default(),
            output: OutputPolicy {
                max_bytes: DEFAULT_MAX_OUTPUT,
                max_lines: None,
            },
            backend: Backend::Sandbox,
            allow_degraded: false,
            workspace: WorkspacePolicy {
                idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
                max_file_write: DEFAULT_MAX_FILE_WRITE,
            },
        }
    }
}

impl Policy {
    /// Validates a (merged) policy file, filling defaults.
    pub fn from_file(file: PolicyFile) -> Result<Policy, PolicyError> {
        let defaults = Policy::default();
        let backend = file.sandbox.backend.unwrap_or(defaults.backend);
        if backend == Backend::Host {
            refuse_isolation_rules_on_host_backend(&file)?;
        }

        let fs = file.filesystem;
        let protected = fs.protected.unwrap_or(defaults.filesystem.protected);
        for path in &protected {
            check_protected(path)?;
        }
        for (key, paths) in [
            ("filesystem.write", &fs.write),
            ("filesystem.hide", &fs.hide),
        ] {
            if paths.iter().any(|p| p.as_os_str().is_empty()) {
                return Err(PolicyError::invalid(key, "an empty path is not allowed"));
            }
        }
        let tmp_size = fs.tmp_size.unwrap_or(defaults.filesystem.tmp_size);
        if tmp_size < ByteSize::mib(1) {
            return Err(PolicyError::invalid(
                "filesystem.tmp_size",
                "must be at least 1M",
            ));
        }

        let (network, network_rules) = validate_network(file.network, backend, defaults.network)?;

        Ok(Policy {
            filesystem: FilesystemPolicy {
                write_cwd: fs.write_cwd.unwrap_or(defaults.filesystem.write_cwd),
                write: fs.write,
                hide: fs.hide,
                hide_credentials: fs
                    .hide_credentials
                    .unwrap_or(defaults.filesystem.hide_credentials),
                protected,
                tmp_size,
            },
            network,
            network_rules,
            limits: validate_limits(&file.limits, &defaults.limits)?,
            env: validate_env(file.env)?,
            output: OutputPolicy {
                max_bytes: file.output.max_bytes.unwrap_or(defaults.output.max_bytes),
                max_lines: file.output.max_lines,
            },
            backend,
            allow_degraded: file.sandbox.allow_degraded.unwrap_or(false),
            workspace: WorkspacePolicy {
                idle_timeout: match file.workspace.idle_timeout {
                    Some(0) => None,
                    Some(seconds) => Some(Duration::from_secs(seconds)),
                    None => defaults.workspace.idle_timeout,
                },
                max_file_write: file
                    .workspace
                    .max_file_write
                    .unwrap_or(defaults.workspace.max_file_write),
            },
        })
    }

    /// The command's environment, from the caller's: the `env` rules, and in `allow` mode the
    /// variables that send HTTP clients to burrow's proxy (set last: a proxy of the caller's
    /// would not be reachable from the cell anyway).
    pub fn command_env<I>(&self, caller: I) -> Vec<(std::ffi::OsString, std::ffi::OsString)>
    where
        I: IntoIterator<Item = (std::ffi::OsString, std::ffi::OsString)>,
    {
        let mut env = self.env.build(caller);
        if self.network == NetworkMode::Allow {
            let proxies = crate::network::proxy_variables();
            env.retain(|(name, _)| !proxies.iter().any(|(proxy, _)| name == proxy));
            env.extend(
                proxies
                    .into_iter()
                    .map(|(name, value)| (name.into(), value.into())),
            );
            env.sort();
        }
        env
    }

    /// The policy written out in full, every default made explicit.
    pub fn to_file(&self) -> PolicyFile {
        let fs = &self.filesystem;
        let limits = &self.limits;
        PolicyFile {
            filesystem: FilesystemSection {
                write_cwd: Some(fs.write_cwd),
                write: fs.write.clone(),
                hide: fs.hide.clone(),
                hide_credentials: Some(fs.hide_credentials),
                protected: Some(fs.protected.clone()),
                tmp_size: Some(fs.tmp_size),
            },
            network: NetworkSection {
                mode: Some(self.network),
                allow: self.network_rules.allow.clone(),
                deny: self.network_rules.deny.clone(),
                allow_private: (self.network == NetworkMode::Allow)
                    .then_some(self.network_rules.allow_private),
            },
            limits: LimitsSection {
                timeout: Some(limits.timeout.map_or(0, |t| t.as_secs())),
                memory: limits.memory,
                pids: Some(limits.pids),
                cpu_time: limits.cpu_time,
                cpus: limits.cpus,
                max_file_size: limits.max_file_size,
                nofile: limits.nofile,
            },
            env: EnvSection {
                set: self.env.set.clone(),
                inherit: self.env.inherit.clone(),
            },
            output: OutputSection {
                max_bytes: Some(self.output.max_bytes),
                max_lines: self.output.max_lines,
            },
            sandbox: SandboxSection {
                backend: Some(self.backend),
                allow_degraded: Some(self.allow_degraded),
            },
            workspace: WorkspaceSection {
                idle_timeout: Some(self.workspace.idle_timeout.map_or(0, |t| t.as_secs())),
                max_file_write: Some(self.workspace.max_file_write),
            },
        }
    }

    /// The filesystem rules with `~` and relative paths resolved, and checked against each other.
    pub fn resolve_filesystem(
        &self,
        context: &PathContext,
    ) -> Result<ResolvedFilesystem, PolicyError> {
        let fs = &self.filesystem;
        let mut writable = Vec::new();
        if fs.write_cwd {
            writable.push(normalize(&context.cwd));
        }
        for path in &fs.write {
            writable.push(resolve(path, context, "filesystem.write")?);
        }

        let mut hidden = Vec::new();
        if fs.hide_credentials
            && let Some(home) = &context.home
        {
            hidden.extend(
                CREDENTIAL_PATHS
                    .iter()
                    .map(|rel| normalize(&home.join(rel))),
            );
        }
        if let Some(state_dir) = &context.state_dir {
            hidden.push(normalize(state_dir));
        }
        for path in &fs.hide {
            hidden.push(resolve(path, context, "filesystem.hide")?);
        }
        dedup_keep_order(&mut writable);
        dedup_keep_order(&mut hidden);

        for root in &writable {
            if root == Path::new("/") {
                return Err(PolicyError::invalid(
                    "filesystem.write",
                    "refusing to make the whole filesystem (/) writable; run from a project \
                     directory, or pass --no-write-cwd",
                ));
            }
            if let Some(hide) = hidden.iter().find(|hide| root.starts_with(hide)) {
                return Err(PolicyError::conflict(
                    "filesystem.write",
                    format!(
                        "{} is hidden by {}; a hidden path cannot hold a writable root",
                        root.display(),
                        hide.display()
                    ),
                ));
            }
        }

        Ok(ResolvedFilesystem {
            writable,
            hidden,
            protected: fs.protected.clone(),
            tmp_size: fs.tmp_size,
        })
    }
}

/// The network mode and, for `allow`, its rules: an allowlist implies `allow` mode, which
/// needs one.
fn validate_network(
    section: crate::file::NetworkSection,
    backend: Backend,
    default: NetworkMode,
) -> Result<(NetworkMode, NetworkRules), PolicyError> {
    let listed = !section.allow.is_empty();
    let mode = match (section.mode, backend) {
        (Some(mode), _) => mode,
        (None, _) if listed => NetworkMode::Allow,
        (None, Backend::Host) => NetworkMode::Host,
        (None, Backend::Sandbox) => default,
    };
    if mode != NetworkMode::Allow {
        for (key, set) in [
            ("network.allow", listed),
            ("network.deny", !section.deny.is_empty()),
            ("network.allow_private", section.allow_private.is_some()),
        ] {
            if set {
                return Err(PolicyError::conflict(
                    key,
                    format!(
                        "only `allow` mode has an allowlist, and the mode is `{}`",
                        mode.name()
                    ),
                ));
            }
        }
        return Ok((mode, NetworkRules::default()));
    }
    if !listed {
        return Err(PolicyError::invalid(
            "network.allow",
            "`allow` mode needs at least one host, e.g. allow = [\"pypi.org\", \"*.pythonhosted.org\"]",
        ));
    }
    Ok((
        mode,
        NetworkRules {
            allow: section.allow,
            deny: section.deny,
            allow_private: section.allow_private.unwrap_or(false),
        },
    ))
}

fn refuse_isolation_rules_on_host_backend(file: &PolicyFile) -> Result<(), PolicyError> {
    let why =
        "the host backend does not isolate anything; drop the setting or use the sandbox backend";
    let fs = &file.filesystem;
    if !fs.write.is_empty() {
        return Err(PolicyError::conflict("filesystem.write", why));
    }
    if !fs.hide.is_empty() {
        return Err(PolicyError::conflict("filesystem.hide", why));
    }
    if fs.write_cwd == Some(false) {
        return Err(PolicyError::conflict("filesystem.write_cwd", why));
    }
    if let Some(mode) = file.network.mode
        && mode != NetworkMode::Host
    {
        return Err(PolicyError::conflict("network.mode", why));
    }
    if !file.network.allow.is_empty() {
        return Err(PolicyError::conflict("network.allow", why));
    }
    Ok(())
}

fn check_protected(path: &Path) -> Result<(), PolicyError> {
    let plain = path
        .components()
        .all(|component| matches!(component, Component::Normal(_)));
    if path.as_os_str().is_empty() || !plain {
        return Err(PolicyError::invalid(
            "filesystem.protected",
            format!(
                "`{}` must be a path relative to a writable root, without `.` or `..`",
                path.display()
            ),
        ));
    }
    Ok(())
}

fn validate_limits(limits: &LimitsSection, defaults: &Limits) -> Result<Limits, PolicyError> {
    let at_least = |key: &str, value: Option<u64>, min: u64, unit: &str| match value {
        Some(v) if v < min => Err(PolicyError::invalid(
            key,
            format!("must be at least {min}{unit}"),
        )),
        _ => Ok(value),
    };
    let pids = at_least("limits.pids", limits.pids, 1, "")?.unwrap_or(defaults.pids);
    let cpu_time = at_least("limits.cpu_time", limits.cpu_time, 1, " second")?;
    let nofile = at_least("limits.nofile", limits.nofile, 16, "")?;
    if let Some(memory) = limits.memory
        && memory < ByteSize::mib(4)
    {
        return Err(PolicyError::invalid("limits.memory", "must be at least 4M"));
    }
    if let Some(size) = limits.max_file_size
        && size.bytes() == 0
    {
        return Err(PolicyError::invalid(
            "limits.max_file_size",
            "must be at least 1 byte",
        ));
    }
    if let Some(cpus) = limits.cpus
        && !(cpus.is_finite() && cpus >= 0.01)
    {
        return Err(PolicyError::invalid(
            "limits.cpus",
            "must be a number of cores of at least 0.01",
        ));
    }
    let timeout = match limits.timeout {
        Some(0) => None,
        Some(seconds) => Some(Duration::from_secs(seconds)),
        None => defaults.timeout,
    };
    Ok(Limits {
        timeout,
        memory: limits.memory,
        pids,
        cpu_time,
        cpus: limits.cpus,
        max_file_size: limits.max_file_size,
        nofile,
    })
}

fn validate_env(env: EnvSection) -> Result<EnvPolicy, PolicyError> {
    for name in env.set.keys().chain(env.inherit.iter()) {
        let valid = !name.is_empty()
            && !name.contains('=')
            && !name.contains('\0')
            && !name.starts_with(|c: char| c.is_ascii_digit());
        if !valid {
            return Err(PolicyError::invalid(
                "env",
                format!("`{name}` is not a valid variable name"),
            ));
        }
    }
    Ok(EnvPolicy {
        set: env.set,
        inherit: env.inherit,
    })
}

fn resolve(path: &Path, context: &PathContext, key: &str) -> Result<PathBuf, PolicyError> {
    let expanded = match path.strip_prefix("~") {
        Ok(rest) => match &context.home {
            Some(home) => home.join(rest),
            None => {
                return Err(PolicyError::invalid(
                    key,
                    format!(
                        "`{}` needs a home directory, and $HOME is not set",
                        path.display()
                    ),
                ));
            }
        },
        Err(_) => context.cwd.join(path),
    };
    Ok(normalize(&expanded))
}

/// Removes `.` and resolves `..` lexically; symlinks are the sandbox's business.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        out.push("/");
    }
    out
}

fn dedup_keep_order(paths: &mut Vec<PathBuf>) {
    let mut seen = std::collections::HashSet::new();
    paths.retain(|path| seen.insert(path.clone()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(toml: &str) -> Result<Policy, PolicyError> {
        Policy::from_file(PolicyFile::from_toml(toml, "p.toml")?)
    }

    fn context() -> PathContext {
        PathContext {
            cwd: PathBuf::from("/work/project"),
            home: Some(PathBuf::from("/home/ann")),
            state_dir: Some(PathBuf::from("/home/ann/.local/share/burrow")),
        }
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let policy = policy("").unwrap();
        assert_eq!(policy, Policy::default());
        assert_eq!(policy.limits.timeout, Some(Duration::from_secs(30)));
        assert_eq!(policy.limits.pids, 512);
        assert_eq!(policy.network, NetworkMode::None);
    }

    #[test]
    fn timeout_zero_means_none() {
        assert_eq!(
            policy("[limits]\ntimeout = 0").unwrap().limits.timeout,
            None
        );
    }

    #[test]
    fn out_of_range_limits_name_their_key() {
        for (toml, key) in [
            ("[limits]\npids = 0", "limits.pids"),
            ("[limits]\nmemory = \"1K\"", "limits.memory"),
            ("[limits]\ncpus = 0.0", "limits.cpus"),
            ("[limits]\nnofile = 2", "limits.nofile"),
            ("[filesystem]\ntmp_size = 10", "filesystem.tmp_size"),
            (
                "[filesystem]\nprotected = [\"../x\"]",
                "filesystem.protected",
            ),
            (
                "[filesystem]\nprotected = [\"/etc\"]",
                "filesystem.protected",
            ),
            ("[env]\nset = { \"A=B\" = \"1\" }", "env"),
        ] {
            let error = policy(toml).unwrap_err().to_string();
            assert!(error.starts_with(&format!("{key}: ")), "{toml}: {error}");
        }
    }

    #[test]
    fn host_backend_refuses_isolation_rules() {
        let error = policy("[sandbox]\nbackend = \"host\"\n[filesystem]\nwrite = [\"/x\"]")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("filesystem.write: the host backend"),
            "{error}"
        );
        let error = policy("[sandbox]\nbackend = \"host\"\n[network]\nmode = \"none\"")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("network.mode: "), "{error}");
        let host = policy("[sandbox]\nbackend = \"host\"").unwrap();
        assert_eq!(host.network, NetworkMode::Host);
    }

    #[test]
    fn resolves_home_and_relative_paths() {
        let policy =
            policy("[filesystem]\nwrite = [\"~/cache\", \"out/../build\"]\nhide = [\"secrets\"]")
                .unwrap();
        let fs = policy.resolve_filesystem(&context()).unwrap();
        assert_eq!(
            fs.writable,
            [
                PathBuf::from("/work/project"),
                PathBuf::from("/home/ann/cache"),
                PathBuf::from("/work/project/build"),
            ]
        );
        assert!(fs.hidden.contains(&PathBuf::from("/home/ann/.ssh")));
        assert!(
            fs.hidden
                .contains(&PathBuf::from("/home/ann/.local/share/burrow"))
        );
        assert!(fs.hidden.contains(&PathBuf::from("/work/project/secrets")));
    }

    #[test]
    fn a_writable_root_inside_a_hidden_path_is_a_conflict() {
        let policy = policy("[filesystem]\nwrite = [\"~/.ssh/keys\"]").unwrap();
        let error = policy
            .resolve_filesystem(&context())
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("filesystem.write: /home/ann/.ssh/keys is hidden by /home/ann/.ssh"),
            "{error}"
        );
    }

    #[test]
    fn refuses_to_make_root_writable() {
        let policy = Policy::default();
        let mut context = context();
        context.cwd = PathBuf::from("/");
        assert!(policy.resolve_filesystem(&context).is_err());
    }

    #[test]
    fn to_file_round_trips() {
        let policy =
            policy("[limits]\nmemory = \"64M\"\ncpus = 0.5\n[env]\ninherit = [\"LC_*\"]").unwrap();
        let text = toml::to_string(&policy.to_file()).unwrap();
        let again = Policy::from_file(PolicyFile::from_toml(&text, "again").unwrap()).unwrap();
        assert_eq!(policy, again);
    }
    #[test]
    fn an_allowlist_is_its_own_network_mode() {
        let listed =
            policy("[network]\nallow = [\"pypi.org\", \"*.pythonhosted.org:443\"]").unwrap();
        assert_eq!(listed.network, NetworkMode::Allow);
        assert_eq!(
            listed.network_rules.allow_text(),
            "pypi.org, *.pythonhosted.org:443"
        );
        assert!(!listed.network_rules.allow_private);
        let round_trip = Policy::from_file(listed.to_file()).unwrap();
        assert_eq!(round_trip, listed);

        let error = policy("[network]\nmode = \"allow\"")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("network.allow: "), "{error}");
        let error = policy("[network]\nmode = \"loopback\"\nallow = [\"x.org\"]")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("network.allow: "), "{error}");
        let error = policy("[network]\ndeny = [\"x.org\"]")
            .unwrap_err()
            .to_string();
        assert!(error.starts_with("network.deny: "), "{error}");
        let error = policy("[network]\nallow = [\"not a host\"]")
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("network.allow") && error.contains("not a host pattern"),
            "{error}"
        );
    }

    #[test]
    fn allow_mode_points_programs_at_the_proxy() {
        let listed = policy("[network]\nallow = [\"pypi.org\"]").unwrap();
        let caller = [("HTTPS_PROXY".into(), "http://corp:8080".into())];
        let env = listed.command_env(caller);
        let get = |name: &str| env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        assert_eq!(get("HTTPS_PROXY"), Some(crate::PROXY_URL.into()));
        assert_eq!(get("https_proxy"), Some(crate::PROXY_URL.into()));
        assert_eq!(get("no_proxy"), Some("localhost,127.0.0.1,::1".into()));
        let none = Policy::default().command_env(Vec::new());
        assert!(!none.iter().any(|(k, _)| k == "HTTP_PROXY"));
    }
}

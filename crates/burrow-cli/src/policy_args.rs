//! From command-line flags (and an optional policy file) to a validated policy.

use burrow_policy::{DEFAULT_PROTECTED, Policy, PolicyError, PolicyFile};

use crate::cli::PolicyArgs;

impl PolicyArgs {
    /// The policy file, if any, with these flags laid over it, validated.
    pub fn to_policy(&self) -> Result<Policy, PolicyError> {
        let base = match &self.policy {
            Some(path) => PolicyFile::read(path)?,
            None => PolicyFile::default(),
        };
        let mut merged = base.overlay(self.as_file());
        if !self.protect.is_empty() {
            let mut protected = merged
                .filesystem
                .protected
                .take()
                .unwrap_or_else(|| DEFAULT_PROTECTED.iter().map(Into::into).collect());
            protected.extend(self.protect.iter().cloned());
            merged.filesystem.protected = Some(protected);
        }
        Policy::from_file(merged)
    }

    /// These flags as a policy file in which only what was given is set.
    fn as_file(&self) -> PolicyFile {
        let mut file = PolicyFile::default();
        let fs = &mut file.filesystem;
        fs.write = self.write.clone();
        fs.hide = self.hide.clone();
        fs.write_cwd = self.no_write_cwd.then_some(false);
        fs.tmp_size = self.tmp_size;
        if let Some(network) = &self.network {
            file.network.mode = Some(network.mode);
            file.network.allow = network.allow.clone();
        }
        file.network.deny = self.network_deny.clone();
        file.network.allow_private = self.network_allow_private.then_some(true);
        let limits = &mut file.limits;
        limits.timeout = self.timeout;
        limits.memory = self.memory;
        limits.pids = self.pids;
        limits.cpu_time = self.cpu_time;
        limits.cpus = self.cpus;
        limits.max_file_size = self.max_file_size;
        limits.nofile = self.nofile;
        file.output.max_bytes = self.max_output_bytes;
        file.output.max_lines = self.max_output_lines;
        file.env.set = self.env.iter().cloned().collect();
        file.env.inherit = self.inherit_env.clone();
        file.sandbox.backend = self.backend.map(Into::into);
        file.sandbox.allow_degraded = self.allow_degraded.then_some(true);
        file
    }
}

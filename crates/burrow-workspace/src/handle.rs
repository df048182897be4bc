//! A workspace reached for commands and file operations, and the fast way to reach a running
//! one.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use burrow_output::OutputSink;
use burrow_policy::Policy;
use burrow_sandbox::{ExecError, Outcome, Termination, WORKSPACE_DIR};

use crate::client::{AgentClient, ExecCall, ExecResult, SignalSource};
use crate::error::{Result, WorkspaceError};
use crate::info::ExecInfo;
use crate::layout::{StateDir, WorkspaceDir};
use crate::store::AuditRecord;

/// A workspace whose cell is running.
#[derive(Debug, Clone)]
pub struct Handle {
    dir: WorkspaceDir,
    info: ExecInfo,
}

/// A command to run in a workspace.
#[derive(Debug, Clone, Default)]
pub struct ExecRequest {
    /// Command and arguments.
    pub argv: Vec<String>,
    /// Working directory relative to /workspace (absolute paths under /workspace are accepted).
    pub cwd: Option<String>,
    /// Variables set on top of what the policy passes.
    pub env: Vec<(String, String)>,
    /// Overrides the policy's timeout (`Some(Duration::ZERO)`: none).
    pub timeout: Option<Duration>,
    /// The environment the policy's `inherit` rules pick from.
    pub caller_env: Vec<(OsString, OsString)>,
    /// Secrets to pass as variables: `NAME` or `NAME=VAR`.
    pub secret_env: Vec<String>,
}

/// How a command in a workspace ended.
#[derive(Debug, Clone)]
pub struct ExecReport {
    /// What the agent reported.
    pub result: ExecResult,
    /// Wall-clock time, as the host saw it.
    pub duration: Duration,
    /// The timeout that applied.
    pub timeout: Option<Duration>,
    /// The program, for messages.
    pub program: String,
}

impl ExecReport {
    /// The same outcome `burrow run` reports, for identical exit codes and messages.
    pub fn outcome(&self) -> Outcome {
        let termination = match (self.result.code, self.result.signal) {
            (_, Some(signal)) => Termination::Signaled(signal),
            (Some(code), None) => Termination::Exited(code),
            (None, None) => Termination::Exited(0),
        };
        let mut outcome = Outcome::finished(termination, self.duration);
        outcome.timed_out = self.result.timed_out;
        outcome.exec_error = self.result.exec_errno.map(|errno| ExecError {
            errno,
            program: self.program.clone(),
        });
        outcome
    }
}

impl Handle {
    pub(crate) fn new(dir: WorkspaceDir, info: ExecInfo) -> Handle {
        Handle { dir, info }
    }

    /// Reaches a running workspace by name or id without opening the database; `None` when
    /// that is not possible (stopped, expired, unknown), and the caller goes the slow way.
    pub fn fast(state: &StateDir, name_or_id: &str) -> Option<(Handle, AgentClient)> {
        let dir = crate::info::resolve(state, name_or_id)?;
        let info = ExecInfo::read(&dir)?;
        if info.expired() {
            return None;
        }
        let stream = crate::cell::connect(&dir).ok()?;
        let client = AgentClient::over(stream).ok()?;
        Some((Handle { dir, info }, client))
    }

    /// The workspace's id.
    pub fn id(&self) -> &str {
        &self.info.id
    }

    /// Its name, or its id when it has none.
    pub fn label(&self) -> &str {
        self.info.name.as_deref().unwrap_or(&self.info.id)
    }

    /// Its policy.
    pub fn policy(&self) -> Result<Policy> {
        Ok(Policy::from_file(self.info.policy.clone())?)
    }

    /// Connects to its agent.
    pub fn connect(&self) -> Result<AgentClient> {
        let stream = crate::cell::connect(&self.dir)
            .map_err(|_| WorkspaceError::NotRunning(self.label().to_owned()))?;
        AgentClient::over(stream)
    }

    /// Its directory of burrow's state.
    pub fn dir(&self) -> &WorkspaceDir {
        &self.dir
    }

    /// The redactor for output of this workspace: its secrets, its rules and `call_rules`.
    pub fn redactor(
        &self,
        call_rules: &[burrow_redact::RuleSpec],
    ) -> Result<burrow_redact::Redactor> {
        crate::redaction::redactor(&self.dir, &self.info.redact, call_rules)
    }

    /// A command's whole environment: what the policy passes of `caller_env`, then `extra`,
    /// then the secrets asked for as variables.
    pub fn command_env(
        &self,
        policy: &Policy,
        caller_env: &[(OsString, OsString)],
        extra: &[(String, String)],
        secret_env: &[String],
    ) -> Result<Vec<(String, String)>> {
        let mut env: Vec<(String, String)> = policy
            .command_env(caller_env.iter().cloned())
            .into_iter()
            .map(|(name, value)| {
                (
                    name.to_string_lossy().into_owned(),
                    value.to_string_lossy().into_owned(),
                )
            })
            .collect();
        for (name, value) in extra.iter().chain(&self.secret_env(secret_env)?) {
            env.retain(|(existing, _)| existing != name);
            env.push((name.clone(), value.clone()));
        }
        Ok(env)
    }

    /// Its secrets as variables, for `--secret-env NAME[=VAR]` requests.
    pub fn secret_env(&self, requests: &[String]) -> Result<Vec<(String, String)>> {
        if requests.is_empty() {
            return Ok(Vec::new());
        }
        crate::secrets::as_env(&crate::secrets::load(&self.dir)?, requests)
    }

    /// The connections its network allowlist refused since `from_ms` (Unix milliseconds);
    /// nothing to read unless `policy` is in `allow` mode (this is on every exec's path).
    pub fn network_denied_since(&self, policy: &Policy, from_ms: i64) -> Vec<burrow_proxy::Denial> {
        if policy.network != burrow_policy::NetworkMode::Allow {
            return Vec::new();
        }
        let now = crate::journal::now_ms();
        crate::netproxy::denials_between(&self.dir, from_ms.max(0) as u64, now.max(0) as u64)
    }

    /// Applies a unified diff through the agent, all or nothing, within the policy's write
    /// limit, and audits it.
    pub fn apply_patch(
        &self,
        client: &mut AgentClient,
        text: &[u8],
    ) -> Result<Vec<crate::edit::PatchedFile>> {
        let limit = self.policy()?.workspace.max_file_write.bytes();
        let files = crate::edit::apply_patch(client, text, limit)?;
        let paths: Vec<&str> = files.iter().map(|file| file.path.as_str()).collect();
        self.audit(&crate::journal::record("patch", paths.join(" ")))?;
        Ok(files)
    }

    /// Appends to its audit log, with secrets and redacted types taken out of the subject.
    pub fn audit(&self, record: &AuditRecord) -> Result<()> {
        self.audit_with(record, &self.redactor(&[])?)
    }

    /// The same, with a redactor the caller already has.
    pub fn audit_with(
        &self,
        record: &AuditRecord,
        redactor: &burrow_redact::Redactor,
    ) -> Result<()> {
        if redactor.is_empty() {
            return crate::journal::append(&self.dir.journal(), record);
        }
        let mut record = record.clone();
        record.subject =
            String::from_utf8_lossy(&redactor.redact_all(record.subject.as_bytes())).into_owned();
        if let Some(cwd) = &record.cwd {
            record.cwd =
                Some(String::from_utf8_lossy(&redactor.redact_all(cwd.as_bytes())).into_owned());
        }
        crate::journal::append(&self.dir.journal(), &record)
    }

    /// Runs a command, streaming its output into `sink` through `redactor`, and records it in
    /// the audit log.
    pub fn exec(
        &self,
        client: &mut AgentClient,
        request: &ExecRequest,
        sink: &mut dyn OutputSink,
        signals: Option<&dyn SignalSource>,
        redactor: &burrow_redact::Redactor,
    ) -> Result<ExecReport> {
        let policy = self.policy()?;
        let Some(program) = request.argv.first() else {
            return Err(WorkspaceError::Invalid("no command given".to_owned()));
        };
        let cwd = workspace_cwd(request.cwd.as_deref())?;
        let mut env: Vec<(String, String)> = policy
            .command_env(request.caller_env.iter().cloned())
            .into_iter()
            .map(|(name, value)| {
                (
                    name.to_string_lossy().into_owned(),
                    value.to_string_lossy().into_owned(),
                )
            })
            .collect();
        for (name, value) in request
            .env
            .iter()
            .chain(&self.secret_env(&request.secret_env)?)
        {
            env.retain(|(existing, _)| existing != name);
            env.push((name.clone(), value.clone()));
        }
        let timeout = match request.timeout {
            Some(Duration::ZERO) => None,
            Some(timeout) => Some(timeout),
            None => policy.limits.timeout,
        };
        let call = ExecCall {
            argv: request.argv.clone(),
            env,
            cwd: cwd.clone(),
            timeout,
        };
        let started = Instant::now();
        let result = if redactor.is_empty() {
            client.exec(&call, sink, signals)?
        } else {
            let mut redacting = crate::redaction::RedactingSink::new(redactor, sink);
            let result = client.exec(&call, &mut redacting, signals);
            redacting.finish();
            result?
        };
        let report = ExecReport {
            result,
            duration: started.elapsed(),
            timeout,
            program: program.clone(),
        };
        let mut record = crate::journal::record("exec", shell_words(&request.argv));
        record.cwd = Some(cwd);
        record.exit_code = Some(report.outcome().exit_code());
        record.duration_ms = Some(report.duration.as_millis() as u64);
        self.audit_with(&record, redactor)?;
        Ok(report)
    }
}

/// A working directory given relative to /workspace (or absolute under it), as a path in the
/// cell; `..` may not leave /workspace.
pub fn workspace_cwd(cwd: Option<&str>) -> Result<String> {
    let Some(cwd) = cwd else {
        return Ok(WORKSPACE_DIR.to_owned());
    };
    let relative = match cwd.strip_prefix(WORKSPACE_DIR) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest.trim_start_matches('/'),
        _ if cwd.starts_with('/') => {
            return Err(WorkspaceError::Invalid(format!(
                "--cwd {cwd}: give a path relative to {WORKSPACE_DIR}"
            )));
        }
        _ => cwd,
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in relative.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(WorkspaceError::Invalid(format!(
                        "--cwd {cwd}: the path leads outside {WORKSPACE_DIR}"
                    )));
                }
            }
            part => parts.push(part),
        }
    }
    if cwd.contains('\0') {
        return Err(WorkspaceError::Invalid(
            "--cwd may not contain a NUL byte".to_owned(),
        ));
    }
    let mut path = WORKSPACE_DIR.to_owned();
    for part in parts {
        path.push('/');
        path.push_str(part);
    }
    Ok(path)
}

/// A command line as a shell would read it back, for the audit log.
pub fn shell_words(argv: &[String]) -> String {
    argv.iter()
        .map(|word| {
            let plain = !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
            if plain {
                word.clone()
            } else {
                format!("'{}'", word.replace('\'', r"'\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cwd_stays_under_the_workspace() {
        assert_eq!(workspace_cwd(None).unwrap(), "/workspace");
        assert_eq!(
            workspace_cwd(Some("src/./lib")).unwrap(),
            "/workspace/src/lib"
        );
        assert_eq!(
            workspace_cwd(Some("/workspace/src")).unwrap(),
            "/workspace/src"
        );
        assert_eq!(workspace_cwd(Some("a/../b")).unwrap(), "/workspace/b");
        for bad in ["..", "a/../../etc", "/etc", "/workspacex"] {
            assert!(workspace_cwd(Some(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn command_lines_quote_what_a_shell_would_split() {
        let argv = ["sh", "-c", "echo 'hi' > f"].map(str::to_owned);
        assert_eq!(shell_words(&argv), r"sh -c 'echo '\''hi'\'' > f'");
    }
}

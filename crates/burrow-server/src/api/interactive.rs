//! What lives in a workspace's cell between calls: shells on a terminal, command sessions and
//! services. Their output is redacted like every other output of the workspace.

use std::time::Duration;

use burrow_proto::service::ServiceSpec;
use burrow_proto::service::{Readiness, RestartPolicy, ServiceInfo, ServiceState};
use burrow_proto::session::SessionInfo;
use burrow_proto::shell::ShellInfo;
use burrow_workspace::handle::{shell_words, workspace_cwd};
use burrow_workspace::journal;
use burrow_workspace::pages::{self, CommandResult, ShellPage, ShellRead};
use serde::Serialize;

use super::commands::command_timeout;
use super::error::{ApiError, ApiResult};
use super::inputs::{
    ReadyProbe, Restart, ServiceLogsInput, ServiceRef, ServiceStartInput, ServiceStopInput,
    SessionExecInput, SessionOpenInput, SessionRef, ShellOpenInput, ShellReadInput, ShellRef,
    ShellResizeInput, ShellSignalInput, ShellWriteInput, WorkspaceRef,
};
use super::{Api, Caller};

/// Lines of a failed service's log shown with the failure.
const FAILURE_LOG_LINES: usize = 20;

/// The longest grace a service stop may ask for.
const MAX_GRACE: u64 = 300;

/// A shell just opened.
#[derive(Debug, Serialize)]
pub struct ShellOpened {
    /// Its id, for the other shell operations.
    pub shell: String,
    /// Its pid in the cell.
    pub pid: u32,
}

/// A session just opened.
#[derive(Debug, Serialize)]
pub struct SessionOpened {
    /// Its id, for `session_exec` and `session_close`.
    pub session: String,
}

/// A service after its start: ready, or failed with the end of its log.
#[derive(Debug, Serialize)]
pub struct ServiceStarted {
    /// Its state.
    #[serde(flatten)]
    pub service: ServiceInfo,
    /// The last lines of its log when it did not become ready, redacted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log_tail: Option<String>,
}

impl ServiceStarted {
    /// Whether the service became ready.
    pub fn ready(&self) -> bool {
        self.service.state == ServiceState::Ready
    }
}

/// A service's log.
#[derive(Debug, Serialize)]
pub struct ServiceLogs {
    /// The log, redacted.
    pub logs: String,
}

impl Api {
    /// Starts an interactive shell on a terminal.
    pub fn shell_open(&self, caller: &Caller, input: &ShellOpenInput) -> ApiResult<ShellOpened> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let policy = handle.policy()?;
        let extra: Vec<(String, String)> = input.env.clone().into_iter().collect();
        let env = handle.command_env(&policy, &caller.environment(), &extra, &input.secret_env)?;
        let cwd = workspace_cwd(input.cwd.as_deref())?;
        let (shell, pid) = client.shell_open(&cwd, (input.cols, input.rows), env)?;
        handle.audit(&journal::record("shell.open", format!("{shell} in {cwd}")))?;
        Ok(ShellOpened { shell, pid })
    }

    /// A workspace's shells.
    pub fn shell_list(&self, caller: &Caller, input: &WorkspaceRef) -> ApiResult<Vec<ShellInfo>> {
        let (_, mut client) = self.running(caller, &input.workspace)?;
        Ok(client.shell_list()?)
    }

    /// Reads a shell's output from a cursor, redacted.
    pub fn shell_read(&self, caller: &Caller, input: &ShellReadInput) -> ApiResult<ShellPage> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let read = ShellRead {
            cursor: input.cursor,
            max_chars: input.max_chars,
            wait_idle: input.wait_idle_ms.map(Duration::from_millis),
            plain: input.plain,
        };
        Ok(pages::read_shell(
            &handle,
            &mut client,
            &input.shell,
            &read,
            &[],
        )?)
    }

    /// Types into a shell.
    pub fn shell_write(&self, caller: &Caller, input: &ShellWriteInput) -> ApiResult<()> {
        let (_, mut client) = self.running(caller, &input.workspace)?;
        let text = if input.newline {
            format!("{}\n", input.text)
        } else {
            input.text.clone()
        };
        Ok(client.shell_write(&input.shell, &text)?)
    }

    /// Signals a shell's foreground programs.
    pub fn shell_signal(&self, caller: &Caller, input: &ShellSignalInput) -> ApiResult<()> {
        let (_, mut client) = self.running(caller, &input.workspace)?;
        Ok(client.shell_signal(&input.shell, input.signal.number())?)
    }

    /// Resizes a shell's terminal.
    pub fn shell_resize(&self, caller: &Caller, input: &ShellResizeInput) -> ApiResult<()> {
        let (_, mut client) = self.running(caller, &input.workspace)?;
        Ok(client.shell_resize(&input.shell, input.cols, input.rows)?)
    }

    /// Ends a shell and everything it started.
    pub fn shell_close(&self, caller: &Caller, input: &ShellRef) -> ApiResult<()> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        client.shell_close(&input.shell)?;
        handle.audit(&journal::record("shell.close", &input.shell))?;
        Ok(())
    }

    /// Starts a command session.
    pub fn session_open(
        &self,
        caller: &Caller,
        input: &SessionOpenInput,
    ) -> ApiResult<SessionOpened> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let policy = handle.policy()?;
        let extra: Vec<(String, String)> = input.env.clone().into_iter().collect();
        let env = handle.command_env(&policy, &caller.environment(), &extra, &input.secret_env)?;
        let cwd = workspace_cwd(input.cwd.as_deref())?;
        let (session, _) = client.session_open(&cwd, env)?;
        handle.audit(&journal::record(
            "session.open",
            format!("{session} in {cwd}"),
        ))?;
        Ok(SessionOpened { session })
    }

    /// A workspace's sessions.
    pub fn session_list(
        &self,
        caller: &Caller,
        input: &WorkspaceRef,
    ) -> ApiResult<Vec<SessionInfo>> {
        let (_, mut client) = self.running(caller, &input.workspace)?;
        Ok(client.session_list()?)
    }

    /// Runs a command line in a session.
    pub fn session_exec(
        &self,
        caller: &Caller,
        input: &SessionExecInput,
    ) -> ApiResult<CommandResult> {
        if input.command.trim().is_empty() {
            return Err(ApiError::invalid("`command` is empty: give a command line"));
        }
        let timeout = command_timeout(caller, input.timeout)?;
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let policy = handle.policy()?;
        let timeout = match timeout {
            Some(Duration::ZERO) => None,
            Some(timeout) => Some(timeout),
            None => policy.limits.timeout,
        };
        let redactor = handle.redactor(&[])?;
        Ok(pages::run_session_command(
            &handle,
            &mut client,
            &input.session,
            &input.command,
            timeout,
            &redactor,
            pages::capture_limits(&policy),
        )?)
    }

    /// Ends a session.
    pub fn session_close(&self, caller: &Caller, input: &SessionRef) -> ApiResult<()> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        client.session_close(&input.session)?;
        handle.audit(&journal::record("session.close", &input.session))?;
        Ok(())
    }

    /// Starts a service and waits until it is ready (or has failed).
    pub fn service_start(
        &self,
        caller: &Caller,
        input: &ServiceStartInput,
    ) -> ApiResult<ServiceStarted> {
        burrow_workspace::names::validate_name(&input.name)?;
        let argv = input.command.argv()?;
        let ready = input.ready.as_ref().map(readiness).transpose()?;
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let policy = handle.policy()?;
        let extra: Vec<(String, String)> = input.env.clone().into_iter().collect();
        let env = handle.command_env(&policy, &caller.environment(), &extra, &input.secret_env)?;
        let service = client.service_start(ServiceSpec {
            name: input.name.clone(),
            argv: argv.clone(),
            cwd: workspace_cwd(input.cwd.as_deref())?,
            env,
            ready,
            ready_timeout: Duration::from_secs(input.ready_timeout),
            interval: Duration::from_millis(input.ready_interval_ms),
            restart: match input.restart {
                Restart::No => RestartPolicy::No,
                Restart::OnFailure => RestartPolicy::OnFailure,
            },
        })?;
        handle.audit(&journal::record(
            "service.start",
            format!("{}: {}", input.name, shell_words(&argv)),
        ))?;
        let log_tail = if service.state == ServiceState::Ready {
            None
        } else {
            // Why it failed is usually in its last lines.
            let log = handle
                .redactor(&[])?
                .redact_all(&pages::service_log(&mut client, &input.name)?);
            Some(String::from_utf8_lossy(pages::last_lines(&log, FAILURE_LOG_LINES)).into_owned())
        };
        Ok(ServiceStarted { service, log_tail })
    }

    /// A workspace's services.
    pub fn service_list(
        &self,
        caller: &Caller,
        input: &WorkspaceRef,
    ) -> ApiResult<Vec<ServiceInfo>> {
        let (_, mut client) = self.running(caller, &input.workspace)?;
        Ok(client.service_list()?)
    }

    /// One service's state.
    pub fn service_status(&self, caller: &Caller, input: &ServiceRef) -> ApiResult<ServiceInfo> {
        let (_, mut client) = self.running(caller, &input.workspace)?;
        Ok(client.service_query(&input.name)?)
    }

    /// A service's log, redacted: its last lines, or all that is kept.
    pub fn service_logs(
        &self,
        caller: &Caller,
        input: &ServiceLogsInput,
    ) -> ApiResult<ServiceLogs> {
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let log = handle
            .redactor(&[])?
            .redact_all(&pages::service_log(&mut client, &input.name)?);
        let shown = if input.all {
            &log[..]
        } else {
            pages::last_lines(&log, input.tail)
        };
        Ok(ServiceLogs {
            logs: String::from_utf8_lossy(shown).into_owned(),
        })
    }

    /// Stops a service: SIGTERM, then SIGKILL after the grace.
    pub fn service_stop(
        &self,
        caller: &Caller,
        input: &ServiceStopInput,
    ) -> ApiResult<ServiceInfo> {
        if input.grace > MAX_GRACE {
            return Err(ApiError::invalid(format!(
                "grace {}: give 0 to {MAX_GRACE} seconds",
                input.grace
            )));
        }
        let (handle, mut client) = self.running(caller, &input.workspace)?;
        let info = client.service_stop(&input.name, Duration::from_secs(input.grace))?;
        handle.audit(&journal::record("service.stop", &input.name))?;
        Ok(info)
    }
}

/// The agent's probe for the API's.
fn readiness(probe: &ReadyProbe) -> ApiResult<Readiness> {
    Ok(match probe {
        ReadyProbe::File(path) => Readiness::File { path: path.clone() },
        ReadyProbe::Tcp(address) => Readiness::tcp(address)
            .ok_or_else(|| ApiError::invalid(format!("ready tcp {address}: give HOST:PORT")))?,
        ReadyProbe::Http(url) if url.starts_with("http://") => Readiness::Http { url: url.clone() },
        ReadyProbe::Http(url) => {
            return Err(ApiError::invalid(format!(
                "ready http {url}: give an http:// URL"
            )));
        }
        ReadyProbe::Cmd(command) => Readiness::Command {
            command: command.clone(),
        },
    })
}

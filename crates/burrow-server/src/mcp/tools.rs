//! The MCP tools: one per operation, each with a description written for a model (what it
//! does, when to use it, what comes back) and the JSON schema of its input type.

use std::sync::Arc;

use rmcp::handler::server::common::schema_for_input;
use rmcp::model::Tool;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::render::Render;
use crate::api::inputs::*;
use crate::api::{Api, ApiError, ApiResult, Caller, decode_content};

/// Which tools a server offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// `run_command` only: throwaway sandboxes, no state.
    Run,
    /// Workspaces for a coding agent: create, exec, read, write, patch, diff, delete.
    Core,
    /// Everything: also snapshots, shells, sessions, services, secrets.
    Full,
}

/// The profiles a tool is in.
const RUN: &[Profile] = &[Profile::Run, Profile::Full];
const CORE: &[Profile] = &[Profile::Core, Profile::Full];
const FULL: &[Profile] = &[Profile::Full];

/// A tool's answer: text for the model and the JSON it was made from.
pub(super) struct Answer {
    pub(super) text: String,
    pub(super) structured: Option<Value>,
}

type Call = dyn Fn(&Api, &Caller, Map<String, Value>) -> ApiResult<Answer> + Send + Sync;

/// One tool.
pub(super) struct ToolSpec {
    pub(super) tool: Tool,
    profiles: &'static [Profile],
    pub(super) call: Arc<Call>,
}

impl ToolSpec {
    pub(super) fn name(&self) -> &str {
        &self.tool.name
    }

    pub(super) fn offered_in(&self, profile: Profile) -> bool {
        self.profiles.contains(&profile)
    }
}

/// A tool named `name` that runs `operation` on its arguments, as `T`.
fn tool<T, R>(
    name: &'static str,
    profiles: &'static [Profile],
    description: &'static str,
    render: Render,
    operation: fn(&Api, &Caller, T) -> ApiResult<R>,
) -> ToolSpec
where
    T: DeserializeOwned + JsonSchema + 'static,
    R: Serialize + 'static,
{
    // The schemas are generated from types this crate defines; one that cannot be is a bug
    // caught by the test that lists every profile's tools.
    let schema = schema_for_input::<T>().unwrap_or_default();
    let call = move |api: &Api, caller: &Caller, arguments: Map<String, Value>| {
        let input: T = serde_json::from_value(Value::Object(arguments)).map_err(|error| {
            ApiError::invalid(format!(
                "bad arguments for {name}: {error}; see the tool's input schema"
            ))
        })?;
        let answer = serde_json::to_value(operation(api, caller, input)?)
            .map_err(|error| ApiError::internal(format!("cannot encode the answer: {error}")))?;
        let text = render.text(&answer);
        // Structured content must be an object; lists are wrapped, nothing is left out.
        let structured = match answer {
            Value::Object(_) => Some(answer),
            Value::Null => None,
            other => Some(Value::Object(Map::from_iter([("items".to_owned(), other)]))),
        };
        Ok(Answer { text, structured })
    };
    ToolSpec {
        tool: Tool::new(name, description, schema),
        profiles,
        call: Arc::new(call),
    }
}

/// Every tool, in the order they are listed.
pub(super) fn all() -> Vec<ToolSpec> {
    use Render::{Command, Diff, Done, File, Json, Shell};
    vec![
        tool(
            "run_command",
            RUN,
            "Run one shell command in a fresh, isolated Linux sandbox that is thrown away afterwards \
             (no network unless `network` is `loopback`; the host's files are read-only and your \
             home's credentials are hidden). Use it for one-off commands that need no state; use a \
             workspace when files must persist between commands. Returns the exit code, then stdout \
             and stderr (long output is cut in the middle, with a note).",
            Command,
            |api, _, input: RunInput| api.run(&input),
        ),
        tool(
            "workspace_create",
            CORE,
            "Create a persistent sandboxed workspace: a private copy-on-write directory at /workspace \
             where files survive between commands. Give it a `name` to refer to it later. Returns \
             the workspace (its id, name and state).",
            Json,
            |api, caller, input: CreateInput| api.create(caller, input),
        ),
        tool(
            "workspace_exec",
            CORE,
            "Run a shell command inside a workspace, in /workspace (or `cwd`, relative to it). Each \
             call starts a fresh shell: use `cd dir && cmd` in one command, or a session to keep the \
             directory and variables. Returns the exit code, then stdout and stderr (long output is \
             cut in the middle, with a note). A non-zero exit code is not a tool error.",
            Command,
            |api, caller, input: ExecInput| api.exec(caller, input),
        ),
        tool(
            "file_read",
            CORE,
            "Read a file of a workspace (path relative to /workspace). Returns its text (base64 when \
             it is not UTF-8), up to `max_bytes` from `offset`; a longer file says the offset to \
             read on from.",
            File,
            |api, caller, input: FileReadInput| api.file_read(caller, &input),
        ),
        tool(
            "file_write",
            CORE,
            "Write a whole file in a workspace (path relative to /workspace; parent directories are \
             made). `content` replaces what was there; readers never see half a file. For small \
             edits to an existing file, patch_apply is usually better.",
            Done("written"),
            |api, caller, input: FileWriteInput| {
                let bytes = decode_content(&input.content, input.encoding)?;
                api.file_write(
                    caller,
                    &input.workspace,
                    &input.path,
                    &bytes,
                    input.mode.as_deref(),
                )
            },
        ),
        tool(
            "patch_apply",
            CORE,
            "Apply a unified diff (as `git diff` or `diff -u` writes it) to a workspace's files: \
             edits, new files, deletions and renames. Either every file applies or none is changed. \
             Returns the files touched.",
            Json,
            |api, caller, input: PatchInput| api.patch(caller, &input),
        ),
        tool(
            "workspace_diff",
            CORE,
            "Show what changed in a workspace since it was created (or last reset), as a unified \
             diff. Use it to review your work before you finish.",
            Diff,
            |api, caller, input: WorkspaceRef| api.diff(caller, &input),
        ),
        tool(
            "workspace_delete",
            CORE,
            "Delete a workspace and everything in it, for good.",
            Done("deleted"),
            |api, caller, input: WorkspaceRef| api.delete(caller, &input),
        ),
        tool(
            "workspace_list",
            FULL,
            "List your workspaces with their state, labels and expiry.",
            Json,
            |api, caller, _: NoInput| api.list(caller),
        ),
        tool(
            "workspace_status",
            FULL,
            "Show one workspace: running or stopped, when it expires, its snapshots.",
            Json,
            |api, caller, input: WorkspaceRef| api.status(caller, &input),
        ),
        tool(
            "workspace_start",
            FULL,
            "Start a stopped workspace (commands start it by themselves; this is for warming up).",
            Json,
            |api, caller, input: WorkspaceRef| api.start(caller, &input),
        ),
        tool(
            "workspace_stop",
            FULL,
            "Stop a workspace's processes (shells, sessions, services end); its files stay.",
            Json,
            |api, caller, input: WorkspaceRef| api.stop(caller, &input),
        ),
        tool(
            "workspace_reset",
            FULL,
            "Throw away a workspace's changes: back to how it was created, or to snapshot `to`.",
            Json,
            |api, caller, input: ResetInput| api.reset(caller, &input),
        ),
        tool(
            "file_list",
            FULL,
            "List a directory of a workspace (path relative to /workspace; `recursive` for the \
             whole tree). Returns each entry's path, kind, size and mode.",
            Json,
            |api, caller, input: FileListInput| api.file_list(caller, &input),
        ),
        tool(
            "file_delete",
            FULL,
            "Remove a file of a workspace, or a directory with `recursive`.",
            Done("removed"),
            |api, caller, input: FileDeleteInput| api.file_delete(caller, &input),
        ),
        tool(
            "snapshot_create",
            FULL,
            "Save a workspace's files as a named snapshot, to go back to with workspace_reset.",
            Json,
            |api, caller, input: SnapshotInput| api.snapshot_create(caller, &input),
        ),
        tool(
            "snapshot_list",
            FULL,
            "List a workspace's snapshots.",
            Json,
            |api, caller, input: WorkspaceRef| api.snapshots(caller, &input),
        ),
        tool(
            "snapshot_delete",
            FULL,
            "Delete a snapshot.",
            Done("deleted"),
            |api, caller, input: SnapshotInput| api.snapshot_delete(caller, &input),
        ),
        tool(
            "audit_log",
            FULL,
            "What was done in a workspace: commands, file writes, patches, with exit codes.",
            Json,
            |api, caller, input: WorkspaceRef| api.audit(caller, &input),
        ),
        tool(
            "shell_open",
            FULL,
            "Open an interactive shell on a terminal in a workspace, for programs that need one \
             (editors, REPLs, prompts). Returns its id; then shell_write and shell_read.",
            Json,
            |api, caller, input: ShellOpenInput| api.shell_open(caller, &input),
        ),
        tool(
            "shell_read",
            FULL,
            "Read a shell's output from `cursor` (0 at first, then the next_cursor given). Set \
             `wait_idle_ms` to wait until the output settles; `plain` strips terminal escapes.",
            Shell,
            |api, caller, input: ShellReadInput| api.shell_read(caller, &input),
        ),
        tool(
            "shell_write",
            FULL,
            "Type text into a shell (a newline is added unless `newline` is false).",
            Done("sent"),
            |api, caller, input: ShellWriteInput| api.shell_write(caller, &input),
        ),
        tool(
            "shell_signal",
            FULL,
            "Send a signal (INT is Ctrl-C) to the program running in a shell.",
            Done("sent"),
            |api, caller, input: ShellSignalInput| api.shell_signal(caller, &input),
        ),
        tool(
            "shell_close",
            FULL,
            "Close a shell and end what runs in it.",
            Done("closed"),
            |api, caller, input: ShellRef| api.shell_close(caller, &input),
        ),
        tool(
            "session_open",
            FULL,
            "Open a persistent shell session in a workspace: unlike workspace_exec, `cd`, exported \
             variables and functions carry over from one session_exec to the next. Returns its id.",
            Json,
            |api, caller, input: SessionOpenInput| api.session_open(caller, &input),
        ),
        tool(
            "session_exec",
            FULL,
            "Run a command in a session (the shell keeps its directory and variables). Returns the \
             exit code, then stdout and stderr.",
            Command,
            |api, caller, input: SessionExecInput| api.session_exec(caller, &input),
        ),
        tool(
            "session_close",
            FULL,
            "Close a session.",
            Done("closed"),
            |api, caller, input: SessionRef| api.session_close(caller, &input),
        ),
        tool(
            "service_start",
            FULL,
            "Start a long-running process (a dev server, a database) in a workspace and wait until \
             it is ready: `ready` is a file that appears, a TCP address that accepts, an HTTP URL \
             that answers below 400, or a command that succeeds. Returns its state; when it failed, \
             the end of its log.",
            Json,
            |api, caller, input: ServiceStartInput| api.service_start(caller, &input),
        ),
        tool(
            "service_status",
            FULL,
            "A service's state: ready, failed or stopped, its pid, restarts and exit code.",
            Json,
            |api, caller, input: ServiceRef| api.service_status(caller, &input),
        ),
        tool(
            "service_logs",
            FULL,
            "A service's output (the last `tail` lines, or `all`).",
            Json,
            |api, caller, input: ServiceLogsInput| api.service_logs(caller, &input),
        ),
        tool(
            "service_stop",
            FULL,
            "Stop a service: TERM, then KILL after `grace` seconds.",
            Json,
            |api, caller, input: ServiceStopInput| api.service_stop(caller, &input),
        ),
        tool(
            "secret_set",
            FULL,
            "Store a secret in a workspace. Its value is never shown: it is redacted from every \
             output, and given to a command only as a variable it names in `secret_env`.",
            Done("set"),
            |api, caller, input: SecretSetInput| api.secret_set(caller, input),
        ),
        tool(
            "secret_list",
            FULL,
            "List the names of a workspace's secrets (never their values).",
            Json,
            |api, caller, input: WorkspaceRef| api.secret_list(caller, &input),
        ),
        tool(
            "secret_delete",
            FULL,
            "Delete a secret.",
            Done("deleted"),
            |api, caller, input: SecretRef| api.secret_delete(caller, &input),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_a_schema_and_a_unique_name() {
        let tools = all();
        let mut names: Vec<&str> = tools.iter().map(ToolSpec::name).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count, "duplicate tool names");
        for spec in &tools {
            assert_eq!(
                spec.tool.input_schema.get("type"),
                Some(&Value::from("object")),
                "{}",
                spec.name()
            );
            assert!(!spec.profiles.is_empty());
        }
    }

    #[test]
    fn the_profiles_nest_as_documented() {
        let tools = all();
        let count = |profile| tools.iter().filter(|t| t.offered_in(profile)).count();
        assert_eq!(count(Profile::Run), 1);
        assert_eq!(count(Profile::Core), 7);
        assert_eq!(count(Profile::Full), tools.len());
    }
}

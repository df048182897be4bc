//! The REST API's route table. Each entry names its method, path, what it does, where its
//! input comes from and the operation it runs; the router and the OpenAPI document are both
//! built from this one table, so they cannot disagree.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{RawPathParams, State};
use axum::http::{StatusCode, Uri};
use axum::routing::{MethodFilter, MethodRouter, on};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::input::{Source, body_error, build, path_pairs};
use super::{error_response, reply};
use crate::api::inputs::*;
use crate::api::{Api, ApiResult, Caller, ServiceStarted};
use crate::app::App;

/// An HTTP method the API uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verb {
    Get,
    Post,
    Put,
    Delete,
}

impl Verb {
    fn filter(self) -> MethodFilter {
        match self {
            Verb::Get => MethodFilter::GET,
            Verb::Post => MethodFilter::POST,
            Verb::Put => MethodFilter::PUT,
            Verb::Delete => MethodFilter::DELETE,
        }
    }

    /// The method's name in lower case, as OpenAPI spells it.
    pub(super) fn name(self) -> &'static str {
        match self {
            Verb::Get => "get",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::Delete => "delete",
        }
    }
}

/// One endpoint.
pub(super) struct Route {
    pub(super) verb: Verb,
    pub(super) path: &'static str,
    pub(super) summary: &'static str,
    pub(super) source: Source,
    /// The status of a successful answer (`201`, `204`; a service that failed to start is
    /// `422`, decided per answer).
    pub(super) success: StatusCode,
    /// The input's JSON schema, for the OpenAPI document.
    pub(super) input: fn(&mut SchemaGenerator) -> Schema,
    pub(super) handler: MethodRouter<App>,
}

const OK: StatusCode = StatusCode::OK;
const CREATED: StatusCode = StatusCode::CREATED;
const NO_CONTENT: StatusCode = StatusCode::NO_CONTENT;

/// An endpoint that runs `operation` on the input built from the path and `source`.
fn route<T, R>(
    verb: Verb,
    path: &'static str,
    summary: &'static str,
    source: Source,
    success: StatusCode,
    operation: fn(&Api, &Caller, T) -> ApiResult<R>,
) -> Route
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    R: Serialize + Send + 'static,
{
    routed(verb, path, summary, source, success, |_| None, operation)
}

/// Like [`route`], with `status` choosing an answer's status from its content.
fn routed<T, R>(
    verb: Verb,
    path: &'static str,
    summary: &'static str,
    source: Source,
    success: StatusCode,
    status: fn(&R) -> Option<StatusCode>,
    operation: fn(&Api, &Caller, T) -> ApiResult<R>,
) -> Route
where
    T: DeserializeOwned + JsonSchema + Send + 'static,
    R: Serialize + Send + 'static,
{
    let handler = move |State(app): State<App>,
                        Extension(caller): Extension<Caller>,
                        params: RawPathParams,
                        uri: Uri,
                        body: Result<Bytes, BytesRejection>| async move {
        let input = match build::<T>(source, &path_pairs(&params), uri.query(), body) {
            Ok(input) => input,
            Err(error) => return error_response(error),
        };
        match app
            .blocking(move |api| operation(api, &caller, input))
            .await
        {
            Ok(answer) => reply(status(&answer).unwrap_or(success), &answer),
            Err(error) => error_response(error),
        }
    };
    Route {
        verb,
        path,
        summary,
        source,
        success,
        input: |generator| generator.subschema_for::<T>(),
        handler: on(verb.filter(), handler),
    }
}

/// Where a file's bytes go: the raw body of `PUT .../files/content`.
#[derive(Debug, serde::Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct UploadInput {
    /// The workspace's name or id.
    workspace: String,
    /// File relative to /workspace; missing parent directories are made.
    path: String,
    /// Permission bits in octal, e.g. `755`.
    #[serde(default)]
    mode: Option<String>,
}

/// `PUT .../files/content`: the body is the file's bytes, not JSON.
fn upload() -> Route {
    let handler = |State(app): State<App>,
                   Extension(caller): Extension<Caller>,
                   params: RawPathParams,
                   uri: Uri,
                   body: Result<Bytes, BytesRejection>| async move {
        let body = match body {
            Ok(body) => body,
            Err(rejection) => return error_response(body_error(&rejection)),
        };
        let input = match build::<UploadInput>(
            Source::Upload,
            &path_pairs(&params),
            uri.query(),
            Ok(Bytes::new()),
        ) {
            Ok(input) => input,
            Err(error) => return error_response(error),
        };
        let written = app
            .blocking(move |api| {
                api.file_write(
                    &caller,
                    &input.workspace,
                    &input.path,
                    &body,
                    input.mode.as_deref(),
                )
            })
            .await;
        match written {
            Ok(()) => reply(NO_CONTENT, &()),
            Err(error) => error_response(error),
        }
    };
    Route {
        verb: Verb::Put,
        path: "/v1/workspaces/{workspace}/files/content",
        summary: "Write a whole file; the body is its bytes (at most 32 MiB, and the workspace's write limit)",
        source: Source::Upload,
        success: NO_CONTENT,
        input: |generator| generator.subschema_for::<UploadInput>(),
        handler: on(MethodFilter::PUT, handler),
    }
}

/// A service that did not become ready is `422`, with the service's state and log tail.
fn service_status(started: &ServiceStarted) -> Option<StatusCode> {
    (!started.ready()).then_some(StatusCode::UNPROCESSABLE_ENTITY)
}

/// Every endpoint that needs a token. (Kept one line per endpoint, as a table.)
#[rustfmt::skip]
pub(super) fn table() -> Vec<Route> {
    use Source::{Json, Query, Text};
    use Verb::{Delete, Get, Post, Put};
    vec![
        route(Post, "/v1/run", "Run one command in a fresh sandbox", Json, OK, |api, _, input: RunInput| api.run(&input)),
        route(Post, "/v1/workspaces", "Create a workspace", Json, CREATED, |api, caller, input: CreateInput| api.create(caller, input)),
        route(Get, "/v1/workspaces", "List the caller's workspaces", Query, OK, |api, caller, _: NoInput| api.list(caller)),
        route(Get, "/v1/workspaces/{workspace}", "A workspace's state", Query, OK, |api, caller, input: WorkspaceRef| api.status(caller, &input)),
        route(Delete, "/v1/workspaces/{workspace}", "Delete a workspace and everything in it", Query, NO_CONTENT, |api, caller, input: WorkspaceRef| api.delete(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/start", "Start a workspace's cell (nothing if it runs)", Json, OK, |api, caller, input: WorkspaceRef| api.start(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/stop", "Stop a workspace's cell (nothing if it is stopped)", Json, OK, |api, caller, input: WorkspaceRef| api.stop(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/exec", "Run a command in a workspace", Json, OK, |api, caller, input: ExecInput| api.exec(caller, input)),
        route(Post, "/v1/workspaces/{workspace}/reset", "Go back to the baseline or a snapshot", Json, OK, |api, caller, input: ResetInput| api.reset(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/diff", "What changed since the baseline", Query, OK, |api, caller, input: WorkspaceRef| api.diff(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/patch", "Apply a unified diff (the body, text/plain)", Text("patch"), OK, |api, caller, input: PatchInput| api.patch(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/audit", "What was done in a workspace", Query, OK, |api, caller, input: WorkspaceRef| api.audit(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/snapshots", "A workspace's snapshots", Query, OK, |api, caller, input: WorkspaceRef| api.snapshots(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/snapshots", "Snapshot a workspace", Json, CREATED, |api, caller, input: SnapshotInput| api.snapshot_create(caller, &input)),
        route(Delete, "/v1/workspaces/{workspace}/snapshots/{name}", "Delete a snapshot", Query, NO_CONTENT, |api, caller, input: SnapshotInput| api.snapshot_delete(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/files", "List a directory", Query, OK, |api, caller, input: FileListInput| api.file_list(caller, &input)),
        route(Delete, "/v1/workspaces/{workspace}/files", "Remove a file or directory", Query, NO_CONTENT, |api, caller, input: FileDeleteInput| api.file_delete(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/files/content", "Read a file, a page at a time", Query, OK, |api, caller, input: FileReadInput| api.file_read(caller, &input)),
        upload(),
        route(Post, "/v1/workspaces/{workspace}/files/mkdir", "Make a directory", Json, NO_CONTENT, |api, caller, input: MkdirInput| api.mkdir(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/shells", "Open an interactive shell on a terminal", Json, CREATED, |api, caller, input: ShellOpenInput| api.shell_open(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/shells", "A workspace's shells", Query, OK, |api, caller, input: WorkspaceRef| api.shell_list(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/shells/{shell}/output", "Read a shell's output from a cursor", Query, OK, |api, caller, input: ShellReadInput| api.shell_read(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/shells/{shell}/input", "Type into a shell", Json, NO_CONTENT, |api, caller, input: ShellWriteInput| api.shell_write(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/shells/{shell}/signal", "Signal a shell's foreground process group", Json, NO_CONTENT, |api, caller, input: ShellSignalInput| api.shell_signal(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/shells/{shell}/resize", "Resize a shell's terminal", Json, NO_CONTENT, |api, caller, input: ShellResizeInput| api.shell_resize(caller, &input)),
        route(Delete, "/v1/workspaces/{workspace}/shells/{shell}", "Close a shell", Query, NO_CONTENT, |api, caller, input: ShellRef| api.shell_close(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/sessions", "Open a persistent shell session", Json, CREATED, |api, caller, input: SessionOpenInput| api.session_open(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/sessions", "A workspace's sessions", Query, OK, |api, caller, input: WorkspaceRef| api.session_list(caller, &input)),
        route(Post, "/v1/workspaces/{workspace}/sessions/{session}/exec", "Run a command in a session (cwd and variables persist)", Json, OK, |api, caller, input: SessionExecInput| api.session_exec(caller, &input)),
        route(Delete, "/v1/workspaces/{workspace}/sessions/{session}", "Close a session", Query, NO_CONTENT, |api, caller, input: SessionRef| api.session_close(caller, &input)),
        routed(Post, "/v1/workspaces/{workspace}/services", "Start a service and wait until it is ready (422 if it is not)", Json, CREATED, service_status, |api, caller, input: ServiceStartInput| api.service_start(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/services", "A workspace's services", Query, OK, |api, caller, input: WorkspaceRef| api.service_list(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/services/{name}", "A service's state", Query, OK, |api, caller, input: ServiceRef| api.service_status(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/services/{name}/logs", "A service's output", Query, OK, |api, caller, input: ServiceLogsInput| api.service_logs(caller, &input)),
        route(Delete, "/v1/workspaces/{workspace}/services/{name}", "Stop a service (TERM, then KILL after the grace)", Query, OK, |api, caller, input: ServiceStopInput| api.service_stop(caller, &input)),
        route(Get, "/v1/workspaces/{workspace}/secrets", "A workspace's secrets' names", Query, OK, |api, caller, input: WorkspaceRef| api.secret_list(caller, &input)),
        route(Put, "/v1/workspaces/{workspace}/secrets/{name}", "Set a secret", Json, NO_CONTENT, |api, caller, input: SecretSetInput| api.secret_set(caller, input)),
        route(Delete, "/v1/workspaces/{workspace}/secrets/{name}", "Delete a secret", Query, NO_CONTENT, |api, caller, input: SecretRef| api.secret_delete(caller, &input)),
    ]
}

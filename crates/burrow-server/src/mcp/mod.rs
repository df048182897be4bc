//! burrow's operations as MCP tools, over stdio (`burrow mcp`, for the local user) or
//! streamable HTTP (`/mcp` of `burrow serve`, for the tenant its bearer token names).

mod render;
mod tools;

use std::sync::Arc;

use axum::Router;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServiceExt};

pub use tools::Profile;

use crate::api::{ApiError, Caller, ErrorCode};
use crate::app::App;

/// What the server tells a client about itself at initialisation.
const INSTRUCTIONS: &str = "burrow runs commands in Linux sandboxes. Use run_command for a \
    one-off command. For work on files, create a workspace (workspace_create), then run commands \
    in it (workspace_exec), read and write its files (file_read, file_write, patch_apply) and \
    review what changed (workspace_diff). Paths are relative to /workspace. Delete the workspace \
    when you are done.";

/// The MCP server: a profile's tools, acting for one caller (stdio) or for the caller each
/// HTTP request was authenticated as.
#[derive(Clone)]
pub struct McpServer {
    app: App,
    tools: Arc<Vec<tools::ToolSpec>>,
    caller: Option<Caller>,
}

impl McpServer {
    /// A server of `profile`'s tools. `caller` is who every call acts for; without one, the
    /// caller comes from the HTTP request (put there by authentication).
    pub fn new(app: App, profile: Profile, caller: Option<Caller>) -> McpServer {
        let tools = tools::all()
            .into_iter()
            .filter(|spec| spec.offered_in(profile))
            .collect();
        McpServer {
            app,
            tools: Arc::new(tools),
            caller,
        }
    }

    /// Serves MCP over stdin and stdout until the client goes away.
    pub async fn serve_stdio(self) -> Result<(), String> {
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| format!("MCP initialisation failed: {error}"))?;
        running
            .waiting()
            .await
            .map(drop)
            .map_err(|error| format!("the MCP server failed: {error}"))
    }

    /// `/mcp` as an axum router; `allow_any_host` turns off the check that the `Host` header
    /// is a loopback name (a guard against DNS rebinding, for servers only reachable locally).
    pub fn http_router(self, allow_any_host: bool, shutdown: &ShutdownSignal) -> Router {
        let mut config = StreamableHttpServerConfig::default();
        config.max_request_body_bytes = crate::rest::MAX_BODY;
        config.cancellation_token = shutdown.token.clone();
        if allow_any_host {
            config = config.disable_allowed_hosts();
        }
        let service = StreamableHttpService::new(
            move || Ok(self.clone()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        Router::new().route_service("/mcp", service)
    }

    fn caller(&self, context: &RequestContext<RoleServer>) -> Option<Caller> {
        if let Some(caller) = &self.caller {
            return Some(caller.clone());
        }
        let parts = context.extensions.get::<axum::http::request::Parts>()?;
        parts.extensions.get::<Caller>().cloned()
    }
}

/// Stops the MCP sessions of a server that is shutting down.
#[derive(Debug, Clone, Default)]
pub struct ShutdownSignal {
    token: tokio_util::sync::CancellationToken,
}

impl ShutdownSignal {
    /// Ends every open MCP stream.
    pub fn fire(&self) {
        self.token.cancel();
    }
}

impl ServerHandler for McpServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("burrow", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(
            self.tools.iter().map(|spec| spec.tool.clone()).collect(),
        ))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(spec) = self.tools.iter().find(|spec| spec.name() == request.name) else {
            return Err(ErrorData::invalid_params(
                format!(
                    "no tool named {}: list the tools to see what there is",
                    request.name
                ),
                None,
            ));
        };
        let Some(caller) = self.caller(&context) else {
            // Authentication runs before every HTTP request reaches here; this is a bug.
            return Ok(tool_error(&ApiError::new(
                ErrorCode::Unauthorized,
                "this request carries no authenticated caller",
            ))
            .into());
        };
        let call = Arc::clone(&spec.call);
        let arguments = request.arguments.unwrap_or_default();
        let answer = self
            .app
            .blocking(move |api| call(api, &caller, arguments))
            .await;
        Ok(match answer {
            Ok(answer) => {
                let mut result = CallToolResult::success(vec![ContentBlock::text(answer.text)]);
                result.structured_content = answer.structured;
                result
            }
            Err(error) => tool_error(&error),
        }
        .into())
    }
}

/// A failed call, as the model sees it: one line saying what is wrong and what to do.
fn tool_error(error: &ApiError) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(format!(
        "error ({}): {}",
        serde_json::to_value(error.code)
            .ok()
            .and_then(|code| code.as_str().map(str::to_owned))
            .unwrap_or_default(),
        error.error
    ))])
}

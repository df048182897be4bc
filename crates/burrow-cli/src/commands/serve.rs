//! `burrow mcp`, `burrow serve` and `burrow token`: the agent surfaces and their credentials.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, anyhow};
use burrow_server::api::{Api, Caller, prepare_state};
use burrow_server::mcp::{McpServer, Profile};
use burrow_server::{App, serve as server};

use crate::cli::{ProfileArg, ServeArgs, TokenCommand};
use crate::commands::workspaces::{finish, open, state_root};
use crate::report::print_json;

/// Operations running at once for one stdio client (it rarely sends more than one).
const STDIO_IN_FLIGHT: usize = 8;

pub fn mcp(profile: ProfileArg) -> ExitCode {
    let profile = match profile {
        ProfileArg::Run => Profile::Run,
        ProfileArg::Core => Profile::Core,
        ProfileArg::Full => Profile::Full,
    };
    finish((|| {
        let app = prepared_app(STDIO_IN_FLIGHT)?;
        runtime()?
            .block_on(McpServer::new(app, profile, Some(Caller::local())).serve_stdio())
            .map_err(|error| anyhow!(error))
    })())
}

pub fn serve(args: &ServeArgs) -> ExitCode {
    finish((|| {
        server::check_listen(args.listen, args.allow_non_loopback).map_err(|e| anyhow!(e))?;
        let app = prepared_app(args.max_in_flight)?;
        runtime()?.block_on(async {
            let listener = tokio::net::TcpListener::bind(args.listen)
                .await
                .with_context(|| format!("cannot listen on {}", args.listen))?;
            let address = listener.local_addr()?;
            eprintln!("burrow serve: listening on http://{address} (API at /v1, MCP at /mcp)");
            server::serve(app, listener, args.allow_non_loopback).await?;
            eprintln!("burrow serve: stopped");
            Ok(())
        })
    })())
}

/// The state, recovered and probed while this process is still single-threaded (both may
/// fork), and the operations on it.
fn prepared_app(max_in_flight: usize) -> anyhow::Result<App> {
    let root = state_root()?;
    prepare_state(&root).context("cannot open the state")?;
    Ok(App::new(Api::new(&root, burrow_binary()?), max_in_flight))
}

/// This very binary, which the server runs to start cells (see `burrow_server::api`).
fn burrow_binary() -> anyhow::Result<PathBuf> {
    std::env::current_exe().context("cannot find the burrow binary")
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")
}

pub fn token(command: &TokenCommand) -> ExitCode {
    finish(match command {
        TokenCommand::Create { tenant, json } => (|| {
            let mut workspaces = open()?;
            let (record, token) = burrow_workspace::tokens::create(workspaces.store(), tenant)?;
            if *json {
                print_json(&serde_json::json!({
                    "id": record.id,
                    "tenant": record.tenant,
                    "token": token,
                    "created_at": record.created_at,
                }));
            } else {
                eprintln!(
                    "token {} for tenant {}; it is shown only now, keep it:",
                    record.id, record.tenant
                );
                println!("{token}");
            }
            Ok(())
        })(),
        TokenCommand::List { json } => (|| {
            let tokens = open()?.store().tokens()?;
            if *json {
                print_json(&tokens);
                return Ok(());
            }
            println!("{:<26}  {:<24}  STATE", "ID", "TENANT");
            for token in tokens {
                let state = if token.revoked_at.is_some() {
                    "revoked"
                } else {
                    "live"
                };
                println!("{:<26}  {:<24}  {state}", token.id, token.tenant);
            }
            Ok(())
        })(),
        TokenCommand::Revoke { id } => (|| {
            let now = burrow_workspace::journal::now_ms() / 1000;
            if open()?.store().revoke_token(id, now)? {
                Ok(())
            } else {
                Err(anyhow!(
                    "no live token {id}: see `burrow token list` for the ids"
                ))
            }
        })(),
    })
}

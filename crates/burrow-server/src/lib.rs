//! burrow's agent surfaces: the operations behind them ([`api`]), the HTTP API with tenants
//! ([`rest`]), MCP tools over stdio and streamable HTTP ([`mcp`]), and `burrow serve`
//! ([`serve`]).

#![deny(missing_docs)]

pub mod api;
pub mod app;
pub mod mcp;
pub mod rest;
pub mod serve;

pub use app::App;

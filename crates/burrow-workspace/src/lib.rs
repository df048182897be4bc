//! Workspaces: persistent cells with an agent inside.
//!
//! A workspace is a directory of layers in burrow's state directory (see [`layout`]), a row in
//! the state database ([`store`]), and, while it runs, a cell whose PID 1 is burrow's agent,
//! reached over a unix socket ([`client`]). Commands and file operations go through the agent;
//! diff, export, reset and snapshots work on the layers from the host, never following a link
//! that code in the cell planted.
#![deny(missing_docs)]

pub mod archive;
pub mod cell;
pub mod client;
pub mod detach;
pub mod diff;
pub mod edit;
pub mod error;
pub mod export;
pub mod handle;
pub mod info;
pub mod journal;
pub mod layers;
pub mod layout;
pub mod lock;
pub mod manager;
pub mod names;
pub mod netproxy;
pub mod pages;
pub mod redaction;
pub mod secrets;
pub mod store;
pub mod tokens;
pub mod tree;
mod undo;
pub mod versions;

pub use error::{Result, WorkspaceError};

//! Workspaces end to end: real cells with the agent as PID 1, real SQLite state, the CLI as a
//! user drives it.

mod attacks;
mod changes;
mod crash;
mod files;
mod lifecycle;
mod secrets;
mod services;
mod sessions;
mod shells;

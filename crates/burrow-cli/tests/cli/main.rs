//! End-to-end tests of the `burrow` binary: real cells, real processes, no mocks.
//!
//! Each test of an isolation claim shows the attack fails in a cell and, where it can be done
//! safely, that the same command succeeds on the host backend, so that the test would fail if
//! the protection were removed. Cell tests run twice: as the invoking user and as an
//! unprivileged uid.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod harness;
mod workspace_harness;

mod allowlist;
mod environment;
mod exit_codes;
mod filesystem;
mod limits;
mod network;
mod output;
mod policy;
mod processes;
mod python;
mod serve;
mod snapshots;
mod tools;
mod workspaces;

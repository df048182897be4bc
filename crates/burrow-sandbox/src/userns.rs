//! The cell's user namespace: who the cell's processes are, seen from the host.
//!
//! The cell keeps the caller's own uid and gid (root stays uid 0, an unprivileged user stays
//! themself), mapped one to one. That is the only mapping an unprivileged process may write for
//! itself, so burrow needs no setuid helper. Root inside a cell started by root is still host uid
//! 0, but with no capabilities in any namespace and every reachable host path read-only (see
//! docs/security.md for what that leaves and the tests that show it).

use std::io::Write;

use crate::error::Step;
use crate::report::{AtStep, StepError};

/// Writes the cell's uid and gid maps from inside the new user namespace.
pub(crate) fn map_caller(uid: u32, gid: u32) -> Result<(), StepError> {
    // An unprivileged gid map is only accepted once setgroups(2) is denied, so that nobody can
    // drop a supplementary group that a file's permissions deny access by.
    write_proc_self("setgroups", "deny").at(Step::Setgroups)?;
    write_proc_self("uid_map", &format!("{uid} {uid} 1\n")).at(Step::UidMap)?;
    write_proc_self("gid_map", &format!("{gid} {gid} 1\n")).at(Step::GidMap)?;
    Ok(())
}

fn write_proc_self(file: &str, contents: &str) -> std::io::Result<()> {
    // A single write(2): the kernel accepts a map only in one write.
    std::fs::OpenOptions::new()
        .write(true)
        .open(format!("/proc/self/{file}"))?
        .write_all(contents.as_bytes())
}

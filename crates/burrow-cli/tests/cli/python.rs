//! The Python package's suite (python/tests) against this build of burrow: the HTTP client
//! and the CLI client, MCP through the official MCP Python SDK over stdio and streamable
//! HTTP, and LangChain's shell tool with burrow's execution policy.
//!
//! The virtualenv it needs is made (once) by python/requirements-test.sh.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::harness::burrow_binary;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[test]
fn python_clients_mcp_and_langchain() {
    let repo = repository();
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("py-venv");
    let made = Command::new(repo.join("python/requirements-test.sh"))
        .arg(&venv)
        .status()
        .expect("run python/requirements-test.sh");
    assert!(made.success(), "python/requirements-test.sh failed: {made}");
    let status = Command::new(venv.join("bin/python"))
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"])
        .current_dir(repo.join("python"))
        .env("BURROW_BIN", burrow_binary())
        .env_remove("BURROW_HOME")
        .status()
        .expect("run pytest");
    assert!(status.success(), "the Python suite failed: {status}");
}

//! `burrow agent`: PID 1 of a workspace's cell, exec'd by the cell's init once the cell is set
//! up. Not for people to run.

use std::process::ExitCode;
use std::time::{Duration, SystemTime};

use burrow_agent::AgentConfig;

use crate::cli::AgentArgs;

pub fn agent(args: &AgentArgs) -> ExitCode {
    let config = AgentConfig {
        listener_fd: args.listen_fd,
        root: args.root.clone(),
        idle_timeout: args
            .idle_timeout
            .filter(|&s| s > 0)
            .map(Duration::from_secs),
        max_write: args.max_write,
        expires_at: args
            .expires_at
            .and_then(|at| u64::try_from(at).ok())
            .map(|at| SystemTime::UNIX_EPOCH + Duration::from_secs(at)),
    };
    match burrow_agent::run(config) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("burrow agent: {error}");
            ExitCode::FAILURE
        }
    }
}

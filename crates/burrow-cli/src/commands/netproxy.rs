//! `burrow netproxy`: a workspace cell's allowlist proxy, started detached with the cell (see
//! `burrow_workspace::netproxy`).

use std::net::TcpListener;
use std::os::fd::{FromRawFd, OwnedFd};
use std::process::ExitCode;

use anyhow::{Context, bail};

use crate::cli::NetproxyArgs;

pub fn netproxy(args: &NetproxyArgs) -> ExitCode {
    let served = (|| {
        if args.listen_fd < 3 {
            bail!("--listen-fd must be an inherited descriptor");
        }
        let rules = serde_json::from_str(&args.rules).context("--rules is not an allowlist")?;
        // SAFETY: the process that started this one passed the cell's listening socket as this
        // descriptor, and nothing else here owns it.
        let listener = TcpListener::from(unsafe { OwnedFd::from_raw_fd(args.listen_fd) });
        burrow_workspace::netproxy::serve(
            &args.dir,
            rules,
            listener,
            args.cell_pid,
            args.cell_start,
        )?;
        Ok(())
    })();
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}

//! Dispatch from the parsed command line to each command.

mod agent;
mod changes;
mod doctor;
mod exec;
mod files;
mod netproxy;
mod policy;
mod publish;
mod run;
mod secrets;
mod serve;
mod services;
mod sessions;
mod shells;
mod workspaces;

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;

use crate::cli::{Cli, Command, PolicyCommand};
use crate::exit;

/// Entry point of the `burrow` binary.
pub fn run_main() -> ExitCode {
    ensure_standard_descriptors();
    init_logging();
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    if let Some(args) = crate::fast_args::exec_args(&args) {
        return exec::exec(&args);
    }
    if let Some(args) = crate::fast_args::agent_args(&args) {
        return agent::agent(&args);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(&error),
    };
    match cli.command {
        Command::Run(args) => run::run(&args),
        Command::Policy {
            command: PolicyCommand::Check { file, json },
        } => policy::check(&file, json),
        Command::Doctor { json } => doctor::doctor(json),
        Command::Ws(command) => workspaces::ws(&command),
        Command::Exec(args) => exec::exec(&args),
        Command::File(command) => files::file(&command),
        Command::Patch {
            workspace,
            file,
            json,
        } => changes::patch(&workspace, file.as_deref(), json),
        Command::Diff {
            workspace,
            stat,
            json,
            redact,
        } => changes::diff(&workspace, stat, json, &redact.redact),
        Command::Export {
            workspace,
            path,
            output,
            json,
            redact,
        } => changes::export(&workspace, path.as_deref(), &output, json, &redact.redact),
        Command::Import {
            workspace,
            source,
            dest,
            json,
        } => changes::import(&workspace, &source, &dest, json),
        Command::Reset { workspace, to } => changes::reset(&workspace, to.as_deref()),
        Command::Snapshot(command) => changes::snapshot(&command),
        Command::Audit { workspace, json } => changes::audit(&workspace, json),
        Command::Agent(args) => agent::agent(&args),
        Command::Mcp { profile } => serve::mcp(profile),
        Command::Serve(args) => serve::serve(&args),
        Command::Token(command) => serve::token(&command),
        Command::Shell(command) => shells::shell(command),
        Command::Session(command) => sessions::session(command),
        Command::Service(command) => services::service(command),
        Command::Secret(command) => secrets::secret(&command),
        Command::Publish(args) => publish::publish(&args),
        Command::Netproxy(args) => netproxy::netproxy(&args),
    }
}

/// Help and version go to stdout with status 0; a usage error is one line and status 125, so
/// that it cannot be mistaken for the exit status of the command burrow was asked to run.
fn usage_error(error: &clap::Error) -> ExitCode {
    match error.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = error.print();
            ExitCode::SUCCESS
        }
        _ => {
            let rendered = error.render().to_string();
            let message: Vec<&str> = rendered
                .lines()
                .take_while(|line| !line.starts_with("Usage:"))
                .map(str::trim)
                .filter(|line| !line.is_empty())
                .collect();
            let message = message.join(" ");
            let message = message.strip_prefix("error: ").unwrap_or(&message);
            eprintln!("burrow: {}; see `burrow --help`", exit::one_line(message));
            ExitCode::from(exit::BURROW_FAILED)
        }
    }
}

/// `BURROW_LOG=debug` shows what burrow does; logs go to stderr.
fn init_logging() {
    let Ok(filter) = tracing_subscriber::EnvFilter::try_from_env("BURROW_LOG") else {
        return;
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

/// A process started with descriptor 0, 1 or 2 closed would hand that number to the next file
/// it opens, and output meant for a pipe could land in it. Fill the gaps with /dev/null.
fn ensure_standard_descriptors() {
    for fd in 0..3 {
        // SAFETY: borrowing a descriptor number only to ask whether it is open.
        let borrowed = unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) };
        if rustix::io::fcntl_getfd(borrowed) == Err(rustix::io::Errno::BADF) {
            // The lowest free number is `fd`: opening /dev/null fills it.
            if let Ok(null) = std::fs::File::options()
                .read(true)
                .write(true)
                .open("/dev/null")
            {
                let _ = std::os::fd::IntoRawFd::into_raw_fd(null);
            }
        }
    }
}

//! The `burrow` command.

mod cli;
mod commands;
mod context;
mod exit;
mod hints;
mod policy_args;
mod report;
mod sinks;

fn main() -> std::process::ExitCode {
    commands::run_main()
}

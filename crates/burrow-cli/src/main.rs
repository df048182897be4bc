//! The `burrow` command.
//!
//! `main` is the C entry point rather than Rust's: std's start-up reads /proc/self/maps to
//! place a stack guard and sets up an alternate signal stack, which together cost more than a
//! tenth of `burrow exec` on a running cell. burrow does the part it needs itself (SIGPIPE
//! ignored, so that a closed pipe is an EPIPE error, not death). A stack overflow then ends the
//! process with SIGSEGV instead of a message; burrow does not recurse deeply.
// Unit tests bring the test harness's own main, and then nothing calls `run_main`.
#![cfg_attr(not(test), no_main)]
#![cfg_attr(test, allow(dead_code))]

mod cli;
mod commands;
mod context;
mod exit;
mod fast_args;
mod hints;
mod network;
mod policy_args;
mod report;
mod sinks;
mod terminal;

#[cfg(not(test))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    // SAFETY: setting a signal's disposition to SIG_IGN before any thread exists.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let code = commands::run_main();
    // ExitCode keeps its number to itself; the one it equals is the status.
    (0..=u8::MAX)
        .find(|&status| std::process::ExitCode::from(status) == code)
        .map_or(1, libc::c_int::from)
}

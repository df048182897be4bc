//! `burrow-bench`: timings that need to be taken inside one process.
//!
//! `burrow-bench exec-protocol STATE_DIR WORKSPACE RUNS` compares, in one process and one run,
//! running /bin/true in a workspace's running cell through the agent protocol (the path the MCP
//! and HTTP servers take) with spawning /bin/true directly from the same process. Both are
//! measured alternately, so that noise hits them alike; it prints the medians, p90s and the
//! ratio of the medians.

use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use burrow_output::{OutputSink, Stream};
use burrow_workspace::client::ExecCall;
use burrow_workspace::handle::Handle;
use burrow_workspace::layout::StateDir;

/// Output is not what is measured.
struct Discard;

impl OutputSink for Discard {
    fn write(&mut self, _stream: Stream, _chunk: &[u8]) {}
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("exec-protocol") if args.len() == 5 => {
            match exec_protocol(&args[2], &args[3], &args[4]) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("burrow-bench: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!("usage: burrow-bench exec-protocol STATE_DIR WORKSPACE RUNS");
            ExitCode::from(2)
        }
    }
}

fn exec_protocol(state: &str, workspace: &str, runs: &str) -> Result<(), String> {
    let runs: usize = match runs.parse() {
        Ok(runs) if runs > 0 => runs,
        _ => return Err(format!("{runs}: give a number of runs above 0")),
    };
    let (_, mut client) = Handle::fast(&StateDir::new(state), workspace)
        .ok_or_else(|| format!("workspace {workspace} is not running; start it first"))?;
    let call = ExecCall {
        argv: vec!["/bin/true".to_owned()],
        env: vec![("PATH".to_owned(), "/usr/bin:/bin".to_owned())],
        cwd: "/workspace".to_owned(),
        timeout: None,
    };
    let mut protocol = Vec::with_capacity(runs);
    let mut spawn = Vec::with_capacity(runs);
    // Warm both paths up.
    for _ in 0..20 {
        client
            .exec(&call, &mut Discard, None)
            .map_err(|e| e.to_string())?;
        spawn_true()?;
    }
    for _ in 0..runs {
        let started = Instant::now();
        let result = client
            .exec(&call, &mut Discard, None)
            .map_err(|e| e.to_string())?;
        protocol.push(started.elapsed());
        if result.code != Some(0) {
            return Err(format!("/bin/true in the cell ended with {result:?}"));
        }
        let started = Instant::now();
        spawn_true()?;
        spawn.push(started.elapsed());
    }
    let (protocol_median, protocol_p90) = percentiles(&mut protocol);
    let (spawn_median, spawn_p90) = percentiles(&mut spawn);
    println!("exec of /bin/true, {runs} runs each, alternating:");
    println!(
        "  agent protocol (running cell)   median {:>7.1} us   p90 {:>7.1} us",
        micros(protocol_median),
        micros(protocol_p90)
    );
    println!(
        "  spawn from this process         median {:>7.1} us   p90 {:>7.1} us",
        micros(spawn_median),
        micros(spawn_p90)
    );
    println!(
        "  ratio (protocol / spawn)        {:.2}x",
        micros(protocol_median) / micros(spawn_median)
    );
    Ok(())
}

/// fork+exec of /bin/true from this process, as std spawns (posix_spawn), and its wait.
fn spawn_true() -> Result<(), String> {
    let status = Command::new("/bin/true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| e.to_string())?;
    if status.success() {
        Ok(())
    } else {
        Err("/bin/true failed".to_owned())
    }
}

fn percentiles(samples: &mut [Duration]) -> (Duration, Duration) {
    samples.sort();
    let at = |fraction: f64| samples[((samples.len() - 1) as f64 * fraction) as usize];
    (at(0.5), at(0.9))
}

fn micros(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e6
}

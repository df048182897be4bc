//! `burrow-bench`: timings that need to be taken inside one process.
//!
//! - `exec-protocol STATE_DIR WORKSPACE RUNS` compares, in one process and one run, running
//!   /bin/true in a workspace's running cell through the agent protocol (the path the MCP and
//!   HTTP servers take) with spawning /bin/true directly from the same process. Both are
//!   measured alternately, so that noise hits them alike; it prints the medians, p90s and the
//!   ratio of the medians.
//! - `shell-roundtrip STATE_DIR WORKSPACE RUNS`: in a PTY shell of the workspace, the time from
//!   writing a command line to reading its output back (write, then reads waiting for data).
//! - `redact-throughput MIB`: redacts MIB mebibytes of log-like text with 10 secrets and every
//!   PII rule, in 64 KiB chunks, and prints MB/s.

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
    let result = match (args.get(1).map(String::as_str), args.len()) {
        (Some("exec-protocol"), 5) => exec_protocol(&args[2], &args[3], &args[4]),
        (Some("shell-roundtrip"), 5) => shell_roundtrip(&args[2], &args[3], &args[4]),
        (Some("redact-throughput"), 3) => redact_throughput(&args[2]),
        _ => {
            eprintln!(
                "usage: burrow-bench exec-protocol|shell-roundtrip STATE_DIR WORKSPACE RUNS\n       \
                 burrow-bench redact-throughput MIB"
            );
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("burrow-bench: {error}");
            ExitCode::FAILURE
        }
    }
}

fn runs_of(runs: &str) -> Result<usize, String> {
    match runs.parse() {
        Ok(runs) if runs > 0 => Ok(runs),
        _ => Err(format!("{runs}: give a number of runs above 0")),
    }
}

fn exec_protocol(state: &str, workspace: &str, runs: &str) -> Result<(), String> {
    let runs = runs_of(runs)?;
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

fn shell_roundtrip(state: &str, workspace: &str, runs: &str) -> Result<(), String> {
    use burrow_workspace::client::interactive::ShellWait;
    let runs = runs_of(runs)?;
    let (_, mut client) = Handle::fast(&StateDir::new(state), workspace)
        .ok_or_else(|| format!("workspace {workspace} is not running; start it first"))?;
    let env = vec![
        ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
        ("PS1".to_owned(), String::new()),
    ];
    let (shell, _) = client
        .shell_open("/workspace", (120, 30), env)
        .map_err(|e| e.to_string())?;
    let wait = ShellWait {
        idle: None,
        for_data: true,
        limit: Duration::from_secs(10),
    };
    // Read until `needle` appears past `cursor`; returns the new cursor.
    let read_until = |client: &mut burrow_workspace::client::AgentClient,
                      mut cursor: u64,
                      needle: &[u8]|
     -> Result<u64, String> {
        let mut seen = Vec::new();
        loop {
            let chunk = client
                .shell_read(&shell, cursor, 1 << 20, wait)
                .map_err(|e| e.to_string())?;
            cursor = chunk.start + chunk.bytes.len() as u64;
            seen.extend(chunk.bytes);
            if seen.windows(needle.len()).any(|w| w == needle) {
                return Ok(cursor);
            }
            if chunk.exit.is_some() {
                return Err("the shell exited".to_owned());
            }
        }
    };
    client
        .shell_write(&shell, "stty -echo; echo ready-$((40+2))\n")
        .map_err(|e| e.to_string())?;
    let mut cursor = read_until(&mut client, 0, b"ready-42")?;
    let mut samples = Vec::with_capacity(runs);
    for run in 0..runs + 20 {
        let started = Instant::now();
        client
            .shell_write(&shell, &format!("echo r-$(({run}+1000))\n"))
            .map_err(|e| e.to_string())?;
        cursor = read_until(&mut client, cursor, format!("r-{}", run + 1000).as_bytes())?;
        if run >= 20 {
            samples.push(started.elapsed());
        }
    }
    client.shell_close(&shell).map_err(|e| e.to_string())?;
    let (median, p90) = percentiles(&mut samples);
    println!(
        "shell write + read of `echo`, {runs} runs: median {:.1} us, p90 {:.1} us",
        micros(median),
        micros(p90)
    );
    Ok(())
}

fn redact_throughput(mib: &str) -> Result<(), String> {
    use burrow_redact::{Redactor, RuleSpec, Secret};
    let mib: usize = mib.parse().map_err(|_| format!("{mib}: not a number"))?;
    let secrets: Vec<Secret> = (0..10)
        .map(|n| {
            Secret::new(
                format!("SECRET_{n}"),
                format!("sk-live-{n:02}-c0ffee-d00d-{}", n * 7919),
            )
        })
        .collect();
    let rules: Vec<RuleSpec> = ["email", "credit_card", "ip", "mac", "url"]
        .iter()
        .map(|rule| {
            rule.parse()
                .map_err(|e: burrow_redact::ParseRuleError| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let redactor = Redactor::new(&secrets, &rules).map_err(|e| e.to_string())?;
    // Log-like lines; about one in a hundred carries something to redact.
    let mut text = Vec::with_capacity(1 << 20);
    let mut line = 0usize;
    while text.len() < 1 << 20 {
        let extra = match line % 100 {
            0 => " user=ann@example.com".to_owned(),
            25 => " peer=10.1.2.3".to_owned(),
            50 => format!(" token={}", "sk-live-03-c0ffee-d00d-23757"),
            75 => " fetch https://example.com/api/v1/items?page=2".to_owned(),
            _ => String::new(),
        };
        text.extend_from_slice(
            format!(
                "2026-11-21T22:00:{:02}Z INFO request {line} handled in {} ms{extra}\n",
                line % 60,
                line % 97
            )
            .as_bytes(),
        );
        line += 1;
    }
    let total = mib << 20;
    let started = Instant::now();
    let mut stream = redactor.stream();
    let mut out = Vec::with_capacity(128 << 10);
    let mut fed = 0;
    while fed < total {
        for chunk in text.chunks(64 << 10) {
            out.clear();
            stream.push_into(chunk, &mut out);
            std::hint::black_box(&out);
            fed += chunk.len();
        }
    }
    std::hint::black_box(stream.finish());
    let elapsed = started.elapsed();
    println!(
        "redaction of {mib} MiB (10 secrets, every PII rule): {:.0} MB/s",
        fed as f64 / elapsed.as_secs_f64() / 1e6
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

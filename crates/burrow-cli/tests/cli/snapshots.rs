//! Snapshots of what burrow prints for programs to read: the `--json` object of `run` and the
//! effective policy. A change to either is a change to burrow's interface, made on purpose.

use crate::harness::{Harness, RunResult, User};

/// Runs burrow with `args` and snapshots its JSON, minus what differs between runs and users.
fn snapshot_run(name: &str, args: &[&str]) {
    let t = Harness::new(User::Invoker);
    let run = RunResult::from_output(&t.burrow(args).output().unwrap());
    insta::assert_json_snapshot!(name, run.json, {
        ".duration_ms" => "[duration]",
        ".limits.pids" => "[depends on the user: rlimit, or pid-max as root]",
    });
}

#[test]
fn run_json_object() {
    snapshot_run(
        "run_json_object",
        &[
            "run",
            "--json",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ],
    );
}

#[test]
fn run_json_object_when_truncated_and_timed_out() {
    snapshot_run(
        "run_json_object_when_truncated_and_timed_out",
        &[
            "run",
            "--json",
            "--timeout",
            "1",
            "--max-output-bytes",
            "16",
            "--",
            "sh",
            "-c",
            "seq 1 100; sleep 10",
        ],
    );
}

#[test]
fn effective_policy() {
    let t = Harness::new(User::Invoker);
    let policy = t.write(
        "policy.toml",
        "[filesystem]\nwrite = [\"/srv/cache\"]\n[limits]\nmemory = \"1G\"\ncpus = 1.5\n[env]\ninherit = [\"LC_*\"]\n",
    );
    let output = t
        .burrow(["policy", "check", policy.to_str().unwrap()])
        .output()
        .unwrap();
    insta::assert_snapshot!(String::from_utf8_lossy(&output.stdout));
}

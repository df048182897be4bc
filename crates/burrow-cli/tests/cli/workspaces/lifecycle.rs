//! Creating, listing, starting, stopping, deleting; commands in a running cell; TTL and idle
//! timeout; bad input.

use std::os::unix::ffi::OsStrExt;

use crate::cell_test;
use crate::workspace_harness::eventually;

cell_test!(a_workspace_lives_from_create_to_delete, |t| {
    let id = t.create_ws("proj", &["--label", "team=a"]);
    let listed = t.call(&["ws", "list", "--json"]).json();
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["name"], "proj");
    assert_eq!(listed[0]["state"], "stopped");
    assert_eq!(listed[0]["labels"]["team"], "a");

    // The first exec starts the cell; it keeps running after burrow returns.
    assert_eq!(t.sh("proj", "echo hello"), "hello\n");
    let status = t.status(&id);
    assert_eq!(status["state"], "running", "{status}");
    let pid = status["pid"].as_u64().unwrap();
    assert!(std::path::Path::new(&format!("/proc/{pid}")).exists());
    // The agent is the cell's PID 1.
    assert_eq!(t.sh("proj", "cat /proc/1/comm"), "burrow\n");

    t.ok(&["ws", "stop", "proj"]);
    assert_eq!(t.status("proj")["state"], "stopped");
    assert!(eventually(10, || !std::path::Path::new(&format!(
        "/proc/{pid}/comm"
    ))
    .exists()
        || std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| s.contains(") Z "))));
    t.fails(&["ws", "stop", "proj"], "is not running");

    t.ok(&["ws", "start", "proj"]);
    t.fails(&["ws", "start", "proj"], "already running");
    t.ok(&["ws", "delete", "proj"]);
    t.fails(&["ws", "status", "proj"], "no workspace named proj");
    t.fails(&["exec", "proj", "--", "true"], "no workspace named proj");
    assert!(!t.state.join("workspaces").join(&id).exists());
    assert!(!t.state.join("names/proj").exists());
});

cell_test!(files_persist_across_commands_and_restarts, |t| {
    t.create_ws("keep", &[]);
    t.sh(
        "keep",
        "echo one > a.txt && mkdir -p d && echo two > d/b.txt",
    );
    assert_eq!(t.sh("keep", "cat a.txt d/b.txt"), "one\ntwo\n");
    t.ok(&["ws", "stop", "keep"]);
    assert_eq!(
        t.sh("keep", "cat a.txt d/b.txt && pwd"),
        "one\ntwo\n/workspace\n"
    );
});

cell_test!(exec_reports_like_run, |t| {
    t.create_ws("codes", &[]);
    let run = t.exec_json("codes", &[], "echo out; echo err >&2; exit 3");
    assert_eq!(run.exit_code(), 3);
    assert_eq!(run.status, 3);
    assert_eq!(run.stdout(), "out\n");
    assert_eq!(run.stderr(), "err\n");

    let missing = t.call(&["exec", "codes", "--", "no-such-program"]);
    assert_eq!(missing.status, 127, "{missing:#?}");
    assert!(
        missing
            .stderr
            .contains("command not found: no-such-program"),
        "{missing:#?}"
    );

    let slow = t.exec_json("codes", &["--timeout", "1"], "sleep 30");
    assert_eq!(slow.exit_code(), 124, "{slow:#?}");
    assert_eq!(slow.json["timed_out"], true);

    let killed = t.exec_json("codes", &[], "kill -TERM $$");
    assert_eq!(killed.exit_code(), 128 + 15, "{killed:#?}");

    // Streaming mode: the command's own output and status.
    let streamed = t.call(&["exec", "codes", "--", "sh", "-c", "echo streamed; exit 5"]);
    assert_eq!(streamed.status, 5);
    assert_eq!(streamed.text(), "streamed\n");
});

cell_test!(exec_takes_cwd_and_env, |t| {
    t.create_ws("where", &[]);
    t.sh("where", "mkdir -p src/lib");
    let run = t.exec_json(
        "where",
        &["--cwd", "src/lib", "--env", "GREETING=hi"],
        "pwd; echo $GREETING",
    );
    run.assert_success();
    assert_eq!(run.stdout(), "/workspace/src/lib\nhi\n");
    t.fails(
        &["exec", "where", "--cwd", "../..", "--", "true"],
        "outside /workspace",
    );
    t.fails(
        &["exec", "where", "--cwd", "/etc", "--", "true"],
        "relative to /workspace",
    );
});

cell_test!(commands_of_one_workspace_run_concurrently, |t| {
    t.create_ws("both", &[]);
    t.ok(&["ws", "start", "both"]);
    // Each waits for the other's mark: they finish only if they run at the same time.
    let first = t
        .burrow([
            "exec",
            "both",
            "--timeout",
            "20",
            "--",
            "sh",
            "-c",
            "touch a; while [ ! -e b ]; do sleep 0.05; done; echo first",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let second = t.sh(
        "both",
        "touch b; while [ ! -e a ]; do sleep 0.05; done; echo second",
    );
    assert_eq!(second, "second\n");
    let first = first.wait_with_output().unwrap();
    assert!(first.status.success());
    assert_eq!(String::from_utf8_lossy(&first.stdout), "first\n");
});

cell_test!(a_workspace_cell_is_isolated_like_a_run_cell, |t| {
    t.create_ws("iso", &[]);
    // The state directory (every workspace's files and agent sockets) is hidden.
    let state = t.state.display().to_string();
    let run = t.exec_json(
        "iso",
        &[],
        &format!("ls {state} 2>&1; ls {state}/workspaces 2>&1"),
    );
    assert!(!run.stdout().contains("state.db"), "{run:#?}");
    assert!(!run.stdout().contains("agent.sock"), "{run:#?}");
    // Commands do not inherit the agent's listening socket.
    let fds = t.sh("iso", "ls -l /proc/self/fd/ | grep -c socket || true");
    assert_eq!(fds.trim(), "0", "a socket leaked into the command");
    // The host's files are read-only, the workspace writable, capabilities gone.
    let run = t.exec_json("iso", &[], &format!("echo x > {}/leak", t.root.display()));
    run.assert_failure_mentioning("Read-only file system");
    assert!(!t.root.join("leak").exists());
    let caps = t.sh(
        "iso",
        "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status",
    );
    assert!(
        caps.contains("CapEff:\t0000000000000000")
            && caps.contains("NoNewPrivs:\t1")
            && caps.contains("Seccomp:\t2"),
        "{caps}"
    );
    // The network is off by default.
    let net = t.exec_json(
        "iso",
        &[],
        "cat /proc/net/dev | grep -v lo: | tail -n +3 | wc -l",
    );
    assert_eq!(net.stdout().trim(), "0", "{net:#?}");
});

cell_test!(bad_input_is_refused_in_one_line, |t| {
    t.fails(&["ws", "create", "--name", "-bad"], "");
    t.fails(
        &["ws", "create", "--name", "a/b"],
        "not a valid workspace name",
    );
    t.fails(
        &["ws", "create", "--name", &"x".repeat(65)],
        "not a valid workspace name",
    );
    t.create_ws("taken", &[]);
    t.fails(&["ws", "create", "--name", "taken"], "already exists");
    t.fails(&["ws", "status", "nope"], "no workspace named nope");
    t.fails(&["file", "read", "nope", "x"], "no workspace named nope");
    t.fails(
        &["ws", "create", "--seed", "/does/not/exist"],
        "/does/not/exist",
    );
    t.fails(&["ws", "create", "--backend", "host"], "sandbox backend");
    t.fails(
        &["ws", "create", "--name", "0123456789ab"],
        "looks like a workspace id",
    );
    t.fails(&["ws", "create", "--label", "bad label=x"], "label");
    // A path that is not UTF-8.
    let odd = std::ffi::OsStr::from_bytes(b"f\xff");
    let done = t
        .burrow([
            std::ffi::OsStr::new("file"),
            "read".as_ref(),
            "taken".as_ref(),
            odd,
        ])
        .output()
        .unwrap();
    assert_eq!(done.status.code(), Some(125));
    assert!(
        String::from_utf8_lossy(&done.stderr).contains("UTF-8"),
        "{done:?}"
    );
    // Nothing was created by the failures.
    let listed = t.call(&["ws", "list", "--json"]).json();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
});

cell_test!(expired_workspaces_are_reaped, |t| {
    let id = t.create_ws("brief", &["--ttl", "2"]);
    t.create_ws("lasting", &[]);
    t.sh("brief", "true");
    let pid = t.status("brief")["pid"].as_u64().unwrap();
    // Any command that opens the state reaps it once its time is up; the cell is gone too.
    let names = || -> Vec<serde_json::Value> {
        let listed = t.call(&["ws", "list", "--json"]).json();
        listed
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["name"].clone())
            .collect()
    };
    assert!(
        eventually(10, || names() == vec![serde_json::json!("lasting")]),
        "{:?}",
        names()
    );
    assert!(!t.state.join("workspaces").join(id).exists());
    assert!(eventually(10, || std::fs::read_to_string(format!(
        "/proc/{pid}/stat"
    ))
    .map_or(true, |s| s.contains(") Z "))));
    t.fails(&["exec", "brief", "--", "true"], "no workspace named brief");

    // `ws reap` says what it deleted. (No command opens the state in between, so `ws reap`
    // is the one that finds it; a TTL is rounded up to the next whole second.)
    t.create_ws("briefer", &["--ttl", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(2100));
    assert_eq!(t.ok(&["ws", "reap"]), "briefer\n");
    assert_eq!(t.ok(&["ws", "reap"]), "");
});

cell_test!(an_idle_cell_stops_by_itself_and_starts_again, |t| {
    t.create_ws("idle", &["--idle-timeout", "1"]);
    t.sh("idle", "echo x > kept");
    assert!(eventually(20, || t.status("idle")["state"] == "stopped"));
    assert_eq!(t.sh("idle", "cat kept"), "x\n");
});

cell_test!(a_killed_cell_is_found_and_replaced, |t| {
    t.create_ws("phoenix", &[]);
    t.sh("phoenix", "echo survived > f");
    let pid = t.status("phoenix")["pid"].as_u64().unwrap() as i32;
    // SAFETY: kill(2) on the test's own cell.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    assert!(eventually(10, || t.status("phoenix")["state"] == "stopped"));
    assert_eq!(t.sh("phoenix", "cat f"), "survived\n");
    assert_ne!(t.status("phoenix")["pid"].as_u64().unwrap() as i32, pid);
});

/// openat2 through ctypes: prints the result and errno.
const OPENAT2: &str = r#"
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
class How(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]
how = How(0, 0, 0)
result = libc.syscall(437, -100, b"/", ctypes.byref(how), ctypes.sizeof(how))
print(result if result < 0 else "opened", ctypes.get_errno())
"#;

cell_test!(workspace_commands_run_under_the_filter_of_run_cells, |t| {
    // The agent itself resolves paths with openat2; the commands it starts must not have it
    // (its mode cannot be checked for setuid bits), exactly as in a `burrow run` cell.
    let control = t.run_on_host(&[], &format!("python3 -c '{OPENAT2}'"));
    assert_eq!(
        control.stdout().split_whitespace().next(),
        Some("opened"),
        "{control:#?}"
    );
    let in_run = t.run_json(&[], &format!("python3 -c '{OPENAT2}'"));
    assert_eq!(in_run.stdout().trim(), "-1 38", "{in_run:#?}");
    t.create_ws("filter", &[]);
    let script = format!(
        "python3 -c '{OPENAT2}'; touch f; chmod u+s f 2>&1 || true; sh -c 'grep Seccomp: /proc/self/status'"
    );
    let out = t.sh("filter", &script);
    assert!(out.starts_with("-1 38\n"), "{out}");
    assert!(
        out.contains("Operation not permitted"),
        "setuid bit was set: {out}"
    );
    assert!(out.contains("Seccomp:\t2"), "{out}");
});

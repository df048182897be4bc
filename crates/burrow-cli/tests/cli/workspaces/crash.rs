//! burrow killed at any instant: acknowledged work survives, nothing half-written is visible,
//! and the next command cleans up.

use std::process::Stdio;
use std::time::Duration;

use crate::cell_test;
use crate::harness::Harness;
use crate::workspace_harness::eventually;

/// The content of write number `n`: large enough that a kill often lands mid-transfer, and
/// different for every write so that a mix-up shows.
fn content(n: usize) -> Vec<u8> {
    let line = format!("write {n} ");
    line.as_bytes()
        .iter()
        .copied()
        .cycle()
        .take(3 << 20)
        .collect()
}

/// Names of temporary write files anywhere in the workspace, as a command in it sees them.
fn leftovers(t: &Harness, ws: &str) -> String {
    t.sh(ws, "find . -name '.burrow-write-*'")
}

cell_test!(
    killing_burrow_during_a_burst_of_writes_loses_no_acknowledged_write,
    |t| {
        t.create_ws("burst", &[]);
        t.ok(&["ws", "start", "burst"]);
        let mut acknowledged = Vec::new();
        let mut killed = Vec::new();
        for n in 0..24 {
            let source = t.write(format!("src-{n}"), content(n));
            let name = format!("f{n}");
            let mut child = t
                .burrow([
                    "file",
                    "write",
                    "burst",
                    &name,
                    "--from",
                    source.to_str().unwrap(),
                ])
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            if n % 2 == 1 {
                // Somewhere in the middle of the transfer, or before it, or after.
                std::thread::sleep(Duration::from_millis((n as u64 * 7) % 40));
                let _ = child.kill();
                killed.push(n);
                let _ = child.wait();
            } else if child.wait().unwrap().success() {
                acknowledged.push(n);
            }
        }
        assert!(!acknowledged.is_empty());
        for n in 0..24 {
            let read = t.call(&[
                "file",
                "read",
                "burst",
                &format!("f{n}"),
                "--max-bytes",
                "4000000",
            ]);
            if acknowledged.contains(&n) {
                assert_eq!(read.status, 0, "acknowledged write {n} is missing");
            }
            // Whatever exists is whole: never a prefix of a write.
            if read.status == 0 {
                assert!(
                    read.stdout == content(n),
                    "f{n} is half-written ({} bytes)",
                    read.stdout.len()
                );
            }
        }
        assert_eq!(leftovers(&t, "burst"), "", "a temporary file is visible");
    }
);

cell_test!(
    a_cell_killed_mid_write_leaves_nothing_behind_after_restart,
    |t| {
        let id = t.create_ws("cellkill", &[]);
        t.ok(&[
            "file",
            "write",
            "cellkill",
            "kept",
            "--text",
            "acknowledged",
        ]);
        let pid = t.status("cellkill")["pid"].as_u64().unwrap() as i32;
        let source = t.write("big", content(1));
        let writer = t
            .burrow([
                "file",
                "write",
                "cellkill",
                "big",
                "--from",
                source.to_str().unwrap(),
            ])
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(5));
        // SAFETY: kill(2) on the test's own cell.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        let _ = writer.wait_with_output();
        // A writer that had not reached the agent before the kill finds the cell dead and
        // starts another one itself: either way the killed cell is gone.
        assert!(eventually(10, || {
            let status = t.status("cellkill");
            status["state"] == "stopped" || status["pid"].as_u64() != Some(pid as u64)
        }));
        // The next command finds the dead cell, sweeps what it left, and starts a new one.
        assert_eq!(t.ok(&["file", "read", "cellkill", "kept"]), "acknowledged");
        assert_eq!(leftovers(&t, "cellkill"), "");
        let upper = t.state.join("workspaces").join(&id);
        let on_host = std::process::Command::new("find")
            .arg(&upper)
            .args(["-name", ".burrow-write-*"])
            .output()
            .unwrap();
        assert_eq!(String::from_utf8_lossy(&on_host.stdout), "");
        let big = t.call(&["file", "read", "cellkill", "big", "--max-bytes", "4000000"]);
        assert!(
            big.status != 0 || big.stdout == content(1),
            "half-written file visible"
        );
    }
);

cell_test!(killing_burrow_during_create_leaves_no_trace, |t| {
    let seed = t.root.join("seed");
    for n in 0..2000 {
        let dir = seed.join(format!("d{}", n % 20));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{n}")), format!("{n}\n")).unwrap();
    }
    t.give_to_user(&seed);
    for delay in [2u64, 10, 30, 60] {
        let mut child = t
            .burrow(["ws", "create", "--seed", seed.to_str().unwrap()])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        let _ = child.kill();
        let _ = child.wait();
    }
    // The next command recovers: every workspace left is whole; no directory is orphaned.
    let listed = t.call(&["ws", "list", "--json"]).json();
    let listed = listed.as_array().unwrap();
    let dirs = std::fs::read_dir(t.state.join("workspaces"))
        .unwrap()
        .count();
    assert_eq!(dirs, listed.len(), "orphaned workspace directories");
    for workspace in listed {
        let id = workspace["id"].as_str().unwrap();
        assert_eq!(t.sh(id, "ls d7 | wc -l").trim(), "100");
    }
    assert_eq!(std::fs::read_dir(t.state.join("trash")).unwrap().count(), 0);
});

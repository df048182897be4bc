//! Helpers for workspace tests: creating workspaces, running burrow and checking its result.

use std::io::Write;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::harness::{Harness, RunResult};

/// burrow's result: status, stdout, stderr.
#[derive(Debug)]
pub struct Done {
    pub status: i32,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Done {
    fn from(output: Output) -> Done {
        Done {
            status: output.status.code().unwrap_or(-1),
            stdout: output.stdout,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {self:#?}"))
    }
}

impl Harness {
    /// Runs burrow with `args` and returns what it did.
    pub fn call(&self, args: &[&str]) -> Done {
        Done::from(self.burrow(args).output().expect("run burrow"))
    }

    /// Runs burrow with `args` and `input` on stdin.
    pub fn call_with_input(&self, args: &[&str], input: &[u8]) -> Done {
        let mut child = self
            .burrow(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn burrow");
        child.stdin.take().unwrap().write_all(input).unwrap();
        Done::from(child.wait_with_output().unwrap())
    }

    /// Runs burrow and asserts success; returns stdout as text.
    #[track_caller]
    pub fn ok(&self, args: &[&str]) -> String {
        let done = self.call(args);
        assert_eq!(done.status, 0, "burrow {args:?} failed: {done:#?}");
        done.text()
    }

    /// Runs burrow, asserts it failed with one line on stderr containing `needle`.
    #[track_caller]
    pub fn fails(&self, args: &[&str], needle: &str) -> Done {
        let done = self.call(args);
        assert_ne!(
            done.status, 0,
            "burrow {args:?} unexpectedly succeeded: {done:#?}"
        );
        assert!(
            done.stderr.contains(needle),
            "expected {needle:?} from burrow {args:?}: {done:#?}"
        );
        assert_eq!(
            done.stderr.trim_end().lines().count(),
            1,
            "not one line: {done:#?}"
        );
        done
    }

    /// Creates a workspace named `name` with extra flags; returns its id.
    #[track_caller]
    pub fn create_ws(&self, name: &str, flags: &[&str]) -> String {
        let mut args = vec!["ws", "create", "--name", name];
        args.extend_from_slice(flags);
        let id = self.ok(&args).trim().to_owned();
        assert_eq!(id.len(), 12, "not an id: {id:?}");
        id
    }

    /// `burrow exec --json WS -- sh -c SCRIPT`.
    pub fn exec_json(&self, ws: &str, flags: &[&str], script: &str) -> RunResult {
        let mut args = vec!["exec", "--json", ws];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        RunResult::from_output(&self.burrow(&args).output().expect("run burrow"))
    }

    /// Runs a script in the workspace and returns its stdout, asserting success.
    #[track_caller]
    pub fn sh(&self, ws: &str, script: &str) -> String {
        let run = self.exec_json(ws, &[], script);
        run.assert_success();
        run.stdout().to_owned()
    }

    /// `burrow ws status --json`.
    /// Waits (10 s at most) until a process whose name is `comm` runs in `ws`'s cell: a
    /// signal meant for a shell's foreground job must not reach the shell before the job runs.
    pub fn wait_for_process(&self, ws: &str, comm: &str) {
        let script = format!(
            "for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = {comm} ] && exit 0; done; exit 1"
        );
        assert!(
            eventually(10, || self
                .call(&["exec", ws, "--", "sh", "-c", &script])
                .status
                == 0),
            "no `{comm}` process appeared in {ws}"
        );
    }

    /// Waits (10 s at most) until `burrow ARGS` prints `expected`, and returns what it printed
    /// last: for output a process in the cell writes in its own time.
    pub fn ok_eventually(&self, args: &[&str], expected: &str) -> String {
        let mut last = String::new();
        eventually(10, || {
            last = self.ok(args);
            last == expected
        });
        last
    }

    pub fn status(&self, ws: &str) -> Value {
        self.call(&["ws", "status", "--json", ws]).json()
    }

    /// Deletes every workspace of the test's state directory (stopping their cells).
    pub fn delete_workspaces(&self) {
        let Ok(entries) = std::fs::read_dir(self.state.join("workspaces")) else {
            return;
        };
        for entry in entries.flatten() {
            let id = entry.file_name().to_string_lossy().into_owned();
            let _ = self
                .burrow(["ws", "delete", &id])
                .stderr(Stdio::null())
                .output();
        }
    }
}

/// Polls a condition for up to `seconds` (waiting for something to happen, never a timing
/// assertion).
pub fn eventually(seconds: u64, mut condition: impl FnMut() -> bool) -> bool {
    for _ in 0..seconds * 20 {
        if condition() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    condition()
}

/// What `burrow shell read --json` returned.
#[derive(Debug)]
pub struct ShellRead {
    pub output: String,
    pub next: u64,
    pub lost: u64,
    pub exited: bool,
}

impl Harness {
    /// Reads a shell's output from `cursor` (waiting for `idle_ms` of quiet first).
    #[track_caller]
    pub fn shell_read(
        &self,
        ws: &str,
        shell: &str,
        cursor: u64,
        idle_ms: u64,
        extra: &[&str],
    ) -> ShellRead {
        let cursor = cursor.to_string();
        let idle = idle_ms.to_string();
        let mut args = vec![
            "shell",
            "read",
            ws,
            shell,
            "--json",
            "--cursor",
            &cursor,
            "--wait-idle-ms",
            &idle,
        ];
        args.extend_from_slice(extra);
        let done = self.call(&args);
        assert_eq!(done.status, 0, "{done:#?}");
        let json = done.json();
        ShellRead {
            output: json["output"].as_str().unwrap_or_default().to_owned(),
            next: json["next_cursor"].as_u64().unwrap(),
            lost: json["lost"].as_u64().unwrap(),
            exited: !json["exited"].is_null(),
        }
    }

    /// Reads a shell until its output (from `cursor`) contains `needle`; returns everything read
    /// and the next cursor.
    #[track_caller]
    pub fn shell_until(
        &self,
        ws: &str,
        shell: &str,
        mut cursor: u64,
        needle: &str,
    ) -> (String, u64) {
        let mut seen = String::new();
        for _ in 0..100 {
            let read = self.shell_read(ws, shell, cursor, 100, &["--plain"]);
            seen.push_str(&read.output);
            let progressed = read.next != cursor;
            cursor = read.next;
            if seen.contains(needle) {
                return (seen, cursor);
            }
            if !progressed {
                // Quiet already: the read came back at once. Give the shell time.
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
        }
        panic!("{needle:?} never appeared; the shell said {seen:?}");
    }

    /// `burrow session exec --json WS S -- COMMAND`.
    #[track_caller]
    pub fn session_json(&self, ws: &str, session: &str, flags: &[&str], command: &str) -> Value {
        let mut args = vec!["session", "exec", "--json", ws, session];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", command]);
        let done = self.call(&args);
        done.json()
    }
}

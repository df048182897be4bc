//! PTY shells: interactive programs driven by write and read, cursors, the bounded buffer,
//! signals, resizing, escape stripping.

use crate::cell_test;

cell_test!(a_python_repl_is_driven_through_a_shell, |t| {
    t.create_ws("repl", &[]);
    let shell = t.ok(&["shell", "open", "repl"]).trim().to_owned();
    assert!(shell.starts_with("sh-"), "{shell}");
    t.ok(&[
        "shell",
        "write",
        "repl",
        &shell,
        "echo filters-$(awk '/Seccomp_filters/ {print $2}' /proc/self/status)",
    ]);
    t.shell_until("repl", &shell, 0, "filters-2");
    t.ok(&["shell", "write", "repl", &shell, "python3 -q"]);
    let (_, cursor) = t.shell_until("repl", &shell, 0, ">>> ");
    t.ok(&["shell", "write", "repl", &shell, "print(6 * 7)"]);
    let (seen, cursor) = t.shell_until("repl", &shell, cursor, "42");
    assert!(seen.contains("42"), "{seen}");
    // ^D leaves the REPL; the shell is still there.
    t.ok(&["shell", "write", "repl", &shell, "\u{4}", "--no-newline"]);
    t.ok(&["shell", "write", "repl", &shell, "echo back-in-$((1+1))"]);
    t.shell_until("repl", &shell, cursor, "back-in-2");
    let list = t.call(&["shell", "list", "repl", "--json"]).json();
    assert_eq!(list[0]["shell"], shell.as_str());
    t.ok(&["shell", "close", "repl", &shell]);
    assert_eq!(
        t.call(&["shell", "list", "repl", "--json"]).json(),
        serde_json::json!([])
    );
    t.fails(&["shell", "read", "repl", &shell], "no shell named");
});

cell_test!(a_prompt_is_answered, |t| {
    t.create_ws("prompt", &[]);
    let shell = t.ok(&["shell", "open", "prompt"]).trim().to_owned();
    t.ok(&[
        "shell",
        "write",
        "prompt",
        &shell,
        "read -p 'Continue? [y/n] ' answer; echo \"got:$answer\"",
    ]);
    let (seen, cursor) = t.shell_until("prompt", &shell, 0, "Continue? [y/n] ");
    assert!(!seen.contains("got:y"), "{seen}");
    t.ok(&["shell", "write", "prompt", &shell, "y"]);
    t.shell_until("prompt", &shell, cursor, "got:y");
});

cell_test!(cursors_page_through_output_and_say_what_was_lost, |t| {
    t.create_ws("pages", &[]);
    let shell = t.ok(&["shell", "open", "pages"]).trim().to_owned();
    t.ok(&[
        "shell",
        "write",
        "pages",
        &shell,
        "stty -echo; printf 'abcdefghij%s\\n' -end",
    ]);
    let (_, _) = t.shell_until("pages", &shell, 0, "-end");
    // Paging the same output five characters at a time gives it back in order.
    let whole = t.shell_read("pages", &shell, 0, 0, &["--plain"]).output;
    let mut paged = String::new();
    let mut cursor = 0;
    loop {
        let read = t.shell_read("pages", &shell, cursor, 0, &["--max-chars", "5"]);
        if read.next == cursor {
            break;
        }
        paged.push_str(&read.output);
        cursor = read.next;
    }
    assert!(paged.contains("abcdefghij-end"), "{paged:?} vs {whole:?}");
    // Two megabytes through a one-megabyte buffer: reading from 0 says how much was dropped.
    t.ok(&[
        "shell",
        "write",
        "pages",
        &shell,
        "head -c 2000000 /dev/zero | tr '\\0' x; echo; echo done-flooding",
    ]);
    let mut last = t.shell_read("pages", &shell, cursor, 300, &[]);
    for _ in 0..50 {
        if last.output.contains("done-flooding") {
            break;
        }
        last = t.shell_read("pages", &shell, last.next, 300, &[]);
    }
    let early = t.shell_read("pages", &shell, 0, 0, &["--max-chars", "10"]);
    assert!(early.lost > 900_000, "{early:?}");
    let plain = t.call(&["shell", "read", "pages", &shell, "--max-chars", "10"]);
    assert!(
        plain.stderr.contains("fell out of the shell's buffer"),
        "{plain:#?}"
    );
});

cell_test!(signals_resizing_and_escapes, |t| {
    t.create_ws("sig", &[]);
    let shell = t
        .ok(&["shell", "open", "sig", "--cols", "100", "--rows", "40"])
        .trim()
        .to_owned();
    t.ok(&["shell", "write", "sig", &shell, "stty size"]);
    let (_, cursor) = t.shell_until("sig", &shell, 0, "40 100");
    t.ok(&["shell", "resize", "sig", &shell, "132", "50"]);
    t.ok(&["shell", "write", "sig", &shell, "stty size"]);
    let (_, cursor) = t.shell_until("sig", &shell, cursor, "50 132");
    // ^C reaches the foreground job, not the shell, which is back at its prompt with $? 130.
    t.ok(&["shell", "write", "sig", &shell, "sleep 300"]);
    t.wait_for_process("sig", "sleep");
    t.ok(&["shell", "signal", "sig", &shell, "int"]);
    t.ok(&["shell", "write", "sig", &shell, "echo after-sleep-$?"]);
    let (seen, cursor) = t.shell_until("sig", &shell, cursor, "after-sleep-130");
    assert!(seen.contains("after-sleep-130"), "{seen}");
    // --plain strips colours.
    t.ok(&[
        "shell",
        "write",
        "sig",
        &shell,
        "printf '\\033[31mred\\033[0m-text\\n'",
    ]);
    let (plain, _) = t.shell_until("sig", &shell, cursor, "red-text");
    assert!(!plain.contains('\u{1b}'), "{plain:?}");
    let raw = t.shell_read("sig", &shell, cursor, 100, &[]);
    assert!(raw.output.contains("\u{1b}[31m"), "{raw:?}");
    // The shell outlives every call; `exit` ends it and a read says so.
    t.ok(&["shell", "write", "sig", &shell, "exit 3"]);
    let mut exited = false;
    for _ in 0..50 {
        if t.shell_read("sig", &shell, 0, 100, &[]).exited {
            exited = true;
            break;
        }
    }
    assert!(exited);
});

/// Drives `burrow shell attach` from a pseudo-terminal: type a command, read its output,
/// detach with Ctrl-].
const ATTACH_DRIVER: &str = r#"
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execv(sys.argv[1], [sys.argv[1], "shell", "attach", sys.argv[2]])
def read_until(needle, seconds=20):
    seen = b""
    end = time.time() + seconds
    while time.time() < end and needle not in seen:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:
                break
    return seen
read_until(b"Ctrl-]")
time.sleep(0.5)
os.write(fd, b"echo attached-$((40+2))\r")
seen = read_until(b"attached-42")
os.write(fd, b"\x1d")
seen += read_until(b"detached")
_, status = os.waitpid(pid, 0)
print("status", os.waitstatus_to_exitcode(status))
print("saw-output" if b"attached-42" in seen else "no-output")
print("saw-detach" if b"detached" in seen else "no-detach")
"#;

cell_test!(attach_connects_a_terminal_and_detaches, |t| {
    use std::os::unix::process::CommandExt;
    t.create_ws("tty", &[]);
    t.ok(&["ws", "start", "tty"]);
    let burrow = t.burrow(["--version"]).get_program().to_owned();
    let mut driver = std::process::Command::new("python3");
    driver
        .args(["-c", ATTACH_DRIVER])
        .arg(&burrow)
        .arg("tty")
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", &t.home)
        .env("BURROW_HOME", &t.state);
    if t.uid != crate::harness::current_uid() {
        driver.uid(t.uid).gid(t.uid);
    }
    let out = driver.output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("status 0") && text.contains("saw-output") && text.contains("saw-detach"),
        "{text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Detaching left the shell running.
    let shells = t.call(&["shell", "list", "tty", "--json"]).json();
    assert_eq!(shells.as_array().unwrap().len(), 1, "{shells}");
    assert!(shells[0]["exit"].is_null());
});

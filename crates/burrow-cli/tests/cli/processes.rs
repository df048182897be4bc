//! Privileges and processes: capabilities, no_new_privs, seccomp, namespaces, ptrace, PID 1,
//! signals, and the cell dying with burrow.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use crate::cell_test;
use crate::workspace_harness::eventually;

/// Whether a host process whose command line contains `marker` still exists.
fn process_with_marker_exists(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|cmdline| String::from_utf8_lossy(&cmdline).contains(marker))
            .unwrap_or(false)
    })
}

/// Starts burrow with `args`, stdout piped, and returns it with a line reader on its stdout.
fn start(
    t: &crate::harness::Harness,
    args: &[&str],
) -> (std::process::Child, BufReader<std::process::ChildStdout>) {
    let mut burrow = t.burrow(args).stdout(Stdio::piped()).spawn().unwrap();
    let stdout = BufReader::new(burrow.stdout.take().unwrap());
    (burrow, stdout)
}

fn next_line(reader: &mut BufReader<std::process::ChildStdout>) -> String {
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    line
}

cell_test!(capabilities_are_dropped_and_filters_applied, |t| {
    let script =
        "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status";
    let control = t.run_on_host(&[], script);
    assert!(control.stdout().contains("Seccomp:\t0"), "{control:#?}");
    let run = t.run_json(&[], script);
    run.assert_success();
    for line in [
        "CapInh:\t0000000000000000",
        "CapPrm:\t0000000000000000",
        "CapEff:\t0000000000000000",
        "CapBnd:\t0000000000000000",
        "CapAmb:\t0000000000000000",
        "NoNewPrivs:\t1",
        "Seccomp:\t2",
    ] {
        assert!(run.stdout().contains(line), "missing {line:?}: {run:#?}");
    }
});

cell_test!(nested_user_namespaces_are_refused, |t| {
    let script = "unshare --user true && echo nested";
    t.run_on_host(&[], script).assert_success();
    let run = t.run_json(&[], script);
    assert!(!run.stdout().contains("nested"), "{run:#?}");
});

cell_test!(mount_is_refused, |t| {
    let script = "mount -t tmpfs none /tmp && echo mounted";
    // In a user namespace of its own, the same command can mount: only the cell stops it.
    let control = t.run_on_host(
        &[],
        &format!("unshare --user --map-root-user --mount sh -c '{script}'"),
    );
    assert!(control.stdout().contains("mounted"), "{control:#?}");
    let run = t.run_json(&[], script);
    assert!(!run.stdout().contains("mounted"), "{run:#?}");
});

const PTRACE_PROBE: &str = r#"
import ctypes, os, time
libc = ctypes.CDLL(None, use_errno=True)
child = os.fork()
if child == 0:
    time.sleep(5); os._exit(0)
PTRACE_ATTACH = 16
r = libc.ptrace(PTRACE_ATTACH, child, 0, 0)
print("ptrace", r, ctypes.get_errno())
buf = ctypes.create_string_buffer(8)
class iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
r = libc.process_vm_readv(child, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
print("process_vm_readv", r, ctypes.get_errno())
os.kill(child, 9)
"#;

cell_test!(ptrace_and_process_vm_are_refused, |t| {
    t.write("work/ptrace.py", PTRACE_PROBE);
    let control = t.run_on_host(&[], "python3 ptrace.py");
    assert!(control.stdout().contains("ptrace 0 0"), "{control:#?}");
    assert!(
        control.stdout().contains("process_vm_readv 8 0"),
        "{control:#?}"
    );
    let run = t.run_json(&[], "python3 ptrace.py");
    assert!(run.stdout().contains("ptrace -1 1"), "{run:#?}"); // EPERM
    assert!(run.stdout().contains("process_vm_readv -1 1"), "{run:#?}");
});

const SYSCALL_PROBE: &str = r#"
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
def probe(name, nr, *args):
    r = libc.syscall(nr, *args)
    print(name, r, ctypes.get_errno())
probe("keyctl", 250, 0, -3, 0)          # KEYCTL_GET_KEYRING_ID, session keyring
probe("io_uring_setup", 425, 1, ctypes.create_string_buffer(120))
probe("userfaultfd", 323, 0)
probe("unshare", 272, 0x10000000)       # CLONE_NEWUSER
probe("clone3", 435, 0, 0)
probe("ioctl_tiocsti", 16, 0, 0x5412, ctypes.c_char_p(b"x"))
probe("personality", 135, 0x0040000)    # ADDR_NO_RANDOMIZE
"#;

cell_test!(the_seccomp_filter_refuses_what_it_should, |t| {
    t.write("work/syscalls.py", SYSCALL_PROBE);
    let run = t.run_json(&[], "python3 syscalls.py");
    run.assert_success();
    let out = run.stdout();
    for (name, errno) in [
        ("keyctl", 1),
        ("io_uring_setup", 1),
        ("userfaultfd", 1),
        ("unshare", 1),
        ("clone3", 38), // ENOSYS, so libc falls back to clone
        ("ioctl_tiocsti", 1),
        ("personality", 1),
    ] {
        assert!(
            out.contains(&format!("{name} -1 {errno}\n")),
            "{name}: {out}"
        );
    }
    // Without the filter the same calls get other answers (success, or an error of their own).
    let control = t.run_on_host(&[], "python3 syscalls.py");
    let host = control.stdout();
    assert!(!host.contains("ioctl_tiocsti -1 1\n"), "{host}"); // ENOTTY on the host
    assert!(
        !host.contains("unshare -1 1\n") || !crate::harness::running_as_root(),
        "{host}"
    );
    assert!(!host.contains("keyctl -1 1\n"), "{host}");
});

cell_test!(pid_1_reaps_orphaned_zombies, |t| {
    // The subshell exits at once; its sleep is orphaned to PID 1 and exits later. Without a
    // reaping init it would stay a zombie.
    let script = "(sleep 0.2 &) ; sleep 1; for s in /proc/[0-9]*/stat; do cut -d' ' -f3 $s; done | grep -c Z || true";
    let run = t.run_json(&[], script);
    run.assert_success();
    assert_eq!(run.stdout().trim(), "0", "{run:#?}");
});

cell_test!(a_timeout_kills_every_process_of_the_cell, |t| {
    let marker = format!("777.{}{}", std::process::id(), t.uid);
    let script = format!(
        "sleep {marker}1 & (setsid sleep {marker}2 &) ; nohup sleep {marker}3 >/dev/null 2>&1 & sleep {marker}4"
    );
    let run = t.run_json(&["--timeout", "1"], &script);
    assert_eq!(run.exit_code(), 124, "{run:#?}");
    assert_eq!(run.json["timed_out"], true);
    assert_eq!(run.status, 124);
    assert!(
        eventually(5, || !process_with_marker_exists(&marker)),
        "processes of the cell survived the timeout"
    );
});

cell_test!(the_cell_dies_with_burrow, |t| {
    let marker = format!("778.{}{}", std::process::id(), t.uid);
    let script = format!("echo started; sleep {marker}");
    let (mut burrow, mut stdout) = start(&t, &["run", "--", "sh", "-c", &script]);
    assert_eq!(next_line(&mut stdout), "started\n");
    assert!(process_with_marker_exists(&marker));
    // SIGKILL: burrow gets no chance to clean up; the kernel must end the cell.
    burrow.kill().unwrap();
    burrow.wait().unwrap();
    assert!(
        eventually(5, || !process_with_marker_exists(&marker)),
        "the cell outlived burrow"
    );
});

cell_test!(signals_to_burrow_reach_the_command, |t| {
    let (mut burrow, mut stdout) = start(
        &t,
        &[
            "run",
            "--",
            "sh",
            "-c",
            "trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
        ],
    );
    assert_eq!(next_line(&mut stdout), "ready\n");
    // SAFETY: kill(2) on the child we spawned.
    unsafe { libc::kill(burrow.id() as i32, libc::SIGTERM) };
    let status = burrow.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stdout, &mut rest).unwrap();
    assert_eq!(rest, "got-term\n");
    assert_eq!(status.code(), Some(3));
});

cell_test!(output_streams_while_the_command_runs, |t| {
    // The command waits for the test to answer through a FIFO in the writable cwd, and the test
    // answers only after reading the command's first line: burrow must stream it.
    let fifo = t.work.join("answer");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    t.give_to_user(&fifo);
    let (mut burrow, mut stdout) = start(
        &t,
        &[
            "run",
            "--timeout",
            "20",
            "--",
            "sh",
            "-c",
            "echo first; read x < answer; echo second $x",
        ],
    );
    assert_eq!(next_line(&mut stdout), "first\n");
    std::fs::write(&fifo, "ok\n").unwrap();
    assert_eq!(next_line(&mut stdout), "second ok\n");
    assert!(burrow.wait().unwrap().success());
});

cell_test!(standard_input_is_passed_through, |t| {
    let mut burrow = t
        .burrow(["run", "--", "sh", "-c", "tr a-z A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut burrow.stdin.take().unwrap(), b"hello\n").unwrap();
    let output = burrow.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "HELLO\n");
});

cell_test!(the_hostname_is_the_cells_own, |t| {
    let run = t.run_json(&[], "hostname; hostname other 2>/dev/null; hostname");
    assert_eq!(run.stdout(), "burrow\nburrow\n", "{run:#?}");
});

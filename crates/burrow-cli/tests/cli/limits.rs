//! Limits: processes, memory, file size, /tmp size, CPU time, open files, timeouts.

use crate::cell_test;

/// Forks up to `n` sleeping children and prints how many forks succeeded.
fn fork_script(n: u32) -> String {
    format!(
        r#"python3 -c '
import os, time
made = 0
for i in range({n}):
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        time.sleep(3); os._exit(0)
    made += 1
print(made)'"#
    )
}

fn forks(run: &crate::harness::RunResult) -> u32 {
    run.stdout()
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{run:#?}"))
}

cell_test!(a_small_process_limit_holds, |t| {
    let run = t.run_json(&["--pids", "40"], &fork_script(200));
    let made = forks(&run);
    assert!(made < 40, "{made} forks under --pids 40");
    assert!(made >= 30, "only {made} forks under --pids 40");
    let control = t.run_json(&["--pids", "400"], &fork_script(200));
    assert_eq!(forks(&control), 200);
});

cell_test!(the_default_process_limit_holds, |t| {
    // 512 by default: between 512 and 812 tasks when the cell's pid_max enforces it (as root on
    // Linux 6.14+), exactly 512 with RLIMIT_NPROC.
    let run = t.run_json(&["--timeout", "60"], &fork_script(1200));
    let made = forks(&run);
    assert!(
        (400..=812).contains(&made),
        "{made} forks under the default limit"
    );
});

cell_test!(a_fork_bomb_stays_inside, |t| {
    let run = t.run_json(
        &["--pids", "64", "--timeout", "3"],
        // The shell forks once, for the bomb, then becomes the sleep: once the bomb has used
        // every process, the shell could fork nothing more (and would exit with 2).
        "bomb() { bomb | bomb & }; bomb & exec sleep 10",
    );
    assert_eq!(run.exit_code(), 124, "{run:#?}");
    // burrow came back and the host can still start processes.
    assert!(
        std::process::Command::new("true")
            .status()
            .unwrap()
            .success()
    );
});

cell_test!(a_memory_bomb_is_stopped, |t| {
    let script = "python3 -c 'b = bytearray(512 * 1024 * 1024); b[::4096] = b\"x\" * (len(b) // 4096); print(\"allocated\")'";
    let control = t.run_json(&["--memory", "2G"], script);
    control.assert_success();
    let run = t.run_json(&["--memory", "64M"], script);
    assert_ne!(run.exit_code(), 0, "{run:#?}");
    assert!(!run.stdout().contains("allocated"));
    if run.json["oom_killed"] == true {
        let hints = run.json["hints"].to_string();
        assert!(hints.contains("--memory"), "{hints}");
    }
});

cell_test!(a_file_cannot_outgrow_max_file_size, |t| {
    let run = t.run_json(&["--max-file-size", "1M"], "head -c 5M /dev/zero > big");
    assert_ne!(run.exit_code(), 0, "{run:#?}");
    let size = std::fs::metadata(t.work.join("big")).unwrap().len();
    assert!(size <= 1024 * 1024, "{size}");
    t.run_json(&["--max-file-size", "8M"], "head -c 5M /dev/zero > big")
        .assert_success();
});

cell_test!(filling_tmp_stops_at_its_size, |t| {
    let run = t.run_json(
        &["--tmp-size", "16M"],
        "head -c 64M /dev/zero > /tmp/fill; echo status $?; du -m /tmp/fill | cut -f1",
    );
    let out = run.stdout();
    assert!(out.contains("status 1"), "{out}");
    let megabytes: u32 = out.lines().last().unwrap().trim().parse().unwrap();
    assert!(megabytes <= 16, "{out}");
});

cell_test!(cpu_time_is_limited, |t| {
    let run = t.run_json(
        &["--cpu-time", "1", "--timeout", "20"],
        "while :; do :; done",
    );
    // SIGXCPU at the soft limit.
    assert_eq!(run.json["signal"], 24, "{run:#?}");
    assert_eq!(run.exit_code(), 152);
});

cell_test!(open_files_are_limited, |t| {
    let run = t.run_json(&["--nofile", "32"], "ulimit -n");
    assert_eq!(run.stdout().trim(), "32");
});

cell_test!(a_cpu_bandwidth_limit_needs_a_cgroup_or_degradation, |t| {
    let run = t.run_json(&["--cpus", "0.5"], "true");
    if t.is_root() {
        // Root can create a cpu cgroup here.
        run.assert_success();
        assert!(run.json["limits"]["cpus"].is_string(), "{run:#?}");
    } else {
        // Fail closed, naming the layer; --allow-degraded runs and says what is missing.
        assert_eq!(run.status, 125, "{run:#?}");
        assert!(
            run.json["error"].as_str().unwrap().contains("CPU limit"),
            "{run:#?}"
        );
        let run = t.run_json(&["--cpus", "0.5", "--allow-degraded"], "true");
        run.assert_success();
        assert!(
            run.json["degraded"].to_string().contains("CPU limit"),
            "{run:#?}"
        );
    }
});

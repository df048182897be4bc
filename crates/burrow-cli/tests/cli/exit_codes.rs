//! Exit statuses: the command's own, 128+N, 124, 127, 126, 125, and one-line errors.

use crate::cell_test;

cell_test!(the_commands_own_code_passes_through, |t| {
    let run = t.run_json(&[], "exit 7");
    assert_eq!(run.exit_code(), 7);
    assert_eq!(run.status, 7);
    assert_eq!(run.json["signal"], serde_json::Value::Null);
});

cell_test!(death_by_signal_is_128_plus_n, |t| {
    let run = t.run_json(&[], "kill -TERM $$");
    assert_eq!(run.exit_code(), 143);
    assert_eq!(run.json["signal"], 15);
    assert_eq!(run.status, 143);
});

cell_test!(a_missing_command_is_127_with_a_message, |t| {
    let output = t
        .burrow(["run", "--", "no-such-command-anywhere"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(127));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        stderr.trim(),
        "burrow: command not found: no-such-command-anywhere"
    );
});

cell_test!(a_non_executable_file_is_126, |t| {
    t.write("work/script.sh", "echo hi\n");
    let output = t.burrow(["run", "--", "./script.sh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(126), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("permission denied"));
});

cell_test!(a_script_without_an_interpreter_line_runs_with_sh, |t| {
    let script = t.write("work/plain.sh", "echo from-sh\n");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let output = t.burrow(["run", "--", "./plain.sh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "from-sh\n");
});

cell_test!(a_burrow_failure_is_125_and_one_line, |t| {
    let output = t
        .burrow(["run", "--write", "/no/such/dir", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with("burrow: /no/such/dir: no such file or directory"),
        "{stderr}"
    );
});

cell_test!(a_burrow_failure_in_json_mode_is_a_json_error, |t| {
    let output = t
        .burrow(["run", "--json", "--memory", "1K", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["exit_code"], 125);
    assert!(
        json["error"].as_str().unwrap().contains("limits.memory"),
        "{json}"
    );
});

cell_test!(a_usage_error_is_125_and_one_line, |t| {
    let output = t
        .burrow(["run", "--no-such-flag", "--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("--no-such-flag"), "{stderr}");
});

cell_test!(help_goes_to_stdout_with_status_0, |t| {
    let output = t.burrow(["run", "--help"]).output().unwrap();
    assert_eq!(output.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&output.stdout).contains("--network"));
});

cell_test!(no_user_namespaces_means_no_sandbox, |t| {
    // burrow itself runs in a user namespace allowed no nested ones: the cell's namespaces cannot
    // be created, and burrow refuses (with or without --allow-degraded) rather than run the
    // command unisolated.
    for extra in [&[][..], &["--allow-degraded"][..]] {
        let mut args = vec!["run"];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sh", "-c", "echo ran"]);
        let burrow = t.burrow(args.clone());
        let script = "echo 0 > /proc/sys/user/max_user_namespaces && exec \"$@\"";
        let mut command = std::process::Command::new("unshare");
        command
            .args(["--user", "--map-root-user", "sh", "-c", script, "sh"])
            .arg(burrow.get_program())
            .args(burrow.get_args());
        for (key, value) in burrow.get_envs() {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        command.current_dir(&t.work);
        if t.uid != crate::harness::current_uid() {
            std::os::unix::process::CommandExt::uid(&mut command, t.uid);
            std::os::unix::process::CommandExt::gid(&mut command, t.uid);
        }
        let output = command.output().unwrap();
        assert_eq!(output.status.code(), Some(125), "{output:?}");
        assert!(output.stdout.is_empty(), "the command ran: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("cannot create the cell's namespaces"),
            "{stderr}"
        );
    }
});

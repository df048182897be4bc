//! What a cell sees of the host's files: read-only everywhere but the writable roots, private
//! /tmp, /run and /dev, a /proc of its own, hidden credentials, protected git metadata.

use std::path::Path;

use crate::cell_test;

cell_test!(writing_outside_the_writable_roots_fails, |t| {
    let outside = t.root.join("outside");
    std::fs::create_dir(&outside).unwrap();
    t.give_to_user(&outside);
    let script = format!("echo x > {}/file", outside.display());

    let control = t.run_on_host(&[], &script);
    control.assert_success();
    std::fs::remove_file(outside.join("file")).unwrap();

    let run = t.run_json(&[], &script);
    run.assert_failure_mentioning("Read-only file system");
    assert!(!outside.join("file").exists());
    let hints = run.json["hints"].to_string();
    assert!(hints.contains("--write"), "{hints}");
});

cell_test!(the_working_directory_and_extra_roots_are_writable, |t| {
    let extra = t.root.join("extra");
    std::fs::create_dir(&extra).unwrap();
    t.give_to_user(&extra);
    let script = format!(
        "echo in-cwd > here && echo in-extra > {}/there && cat here",
        extra.display()
    );
    let run = t.run_json(&["--write", extra.to_str().unwrap()], &script);
    run.assert_success();
    assert_eq!(run.stdout(), "in-cwd\n");
    assert_eq!(
        std::fs::read_to_string(t.work.join("here")).unwrap(),
        "in-cwd\n"
    );
    assert_eq!(
        std::fs::read_to_string(extra.join("there")).unwrap(),
        "in-extra\n"
    );
    // Files the cell creates belong to the caller on the host.
    assert_eq!(crate::harness::owner_of(&t.work.join("here")), t.uid);
});

cell_test!(no_write_cwd_makes_the_working_directory_read_only, |t| {
    let run = t.run_json(&["--no-write-cwd"], "echo x > here");
    run.assert_failure_mentioning("Read-only file system");
    assert!(!t.work.join("here").exists());
});

cell_test!(credentials_in_home_are_hidden, |t| {
    t.write("home/.ssh/id_ed25519", "PRIVATE KEY\n");
    t.write("home/.aws/credentials", "aws_secret_access_key=abc\n");
    t.write("home/.netrc", "machine example.com password hunter2\n");
    t.write("home/notes.txt", "visible\n");
    let script =
        "cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc 2>&1; ls -A ~/.ssh; cat ~/notes.txt";

    let control = t.run_on_host(&[], script);
    assert!(control.stdout().contains("PRIVATE KEY"));
    assert!(control.stdout().contains("hunter2"));

    let run = t.run_json(&[], script);
    assert!(!run.stdout().contains("PRIVATE KEY"), "{run:#?}");
    assert!(!run.stdout().contains("aws_secret_access_key"), "{run:#?}");
    assert!(!run.stdout().contains("hunter2"), "{run:#?}");
    assert!(run.stdout().contains("visible"), "{run:#?}");
});

cell_test!(hide_makes_a_path_absent, |t| {
    t.write("data/secret.txt", "classified\n");
    t.write("data/public.txt", "public\n");
    let secret = t.root.join("data/secret.txt");
    let data = t.root.join("data");
    let script = format!("cat {0}/secret.txt {0}/public.txt", data.display());

    let run = t.run_json(&["--hide", secret.to_str().unwrap()], &script);
    assert!(!run.stdout().contains("classified"), "{run:#?}");
    assert!(run.stdout().contains("public"), "{run:#?}");

    let run = t.run_json(
        &["--hide", data.to_str().unwrap()],
        &format!("ls -A {}", data.display()),
    );
    run.assert_success();
    assert_eq!(run.stdout(), "");
});

cell_test!(burrows_own_state_is_hidden, |t| {
    t.write("state/secrets/token", "state-secret\n");
    let script = format!("cat {}/secrets/token", t.state.display());
    assert!(
        t.run_on_host(&[], &script)
            .stdout()
            .contains("state-secret")
    );
    let run = t.run_json(&[], &script);
    assert!(!run.stdout().contains("state-secret"), "{run:#?}");
});

cell_test!(a_writable_root_inside_a_hidden_path_is_refused, |t| {
    std::fs::create_dir_all(t.home.join(".ssh/sub")).unwrap();
    t.give_to_user(&t.home);
    let sub = t.home.join(".ssh/sub");
    let output = t
        .burrow(["run", "--write", sub.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("hidden"));
});

cell_test!(tmp_run_and_shm_are_private_and_writable, |t| {
    let marker = format!("burrow-test-{}-{}", std::process::id(), t.uid);
    let host_file = Path::new("/tmp").join(&marker);
    std::fs::write(&host_file, "host").unwrap();
    let script = format!(
        "test ! -e /tmp/{marker} && echo a > /tmp/x && echo b > /dev/shm/y && echo c > /run/z \
         && cat /tmp/x /dev/shm/y /run/z"
    );
    let run = t.run_json(&[], &script);
    std::fs::remove_file(&host_file).unwrap();
    run.assert_success();
    assert_eq!(run.stdout(), "a\nb\nc\n");
    // The host's /tmp/x may be anything, a directory even (a checkout there): only not the
    // cell's file.
    assert_ne!(
        std::fs::read_to_string("/tmp/x").ok().as_deref(),
        Some("a\n")
    );
});

cell_test!(dev_holds_only_a_minimal_set_of_devices, |t| {
    let run = t.run_json(
        &[],
        "ls -A /dev | tr '\\n' ' '; echo; echo x > /dev/null; head -c 4 /dev/urandom | wc -c",
    );
    run.assert_success();
    let listing = run.stdout().lines().next().unwrap_or_default().to_owned();
    let mut names: Vec<&str> = listing.split_whitespace().collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "fd", "full", "null", "ptmx", "pts", "random", "shm", "stderr", "stdin", "stdout",
            "tty", "urandom", "zero"
        ]
    );
    assert!(run.stdout().contains("\n4\n"));
    // Host block devices are absent.
    let run = t.run_json(&[], "ls /dev/vda /dev/sda /dev/mem /dev/kmsg 2>&1");
    assert_ne!(run.exit_code(), 0);
});

cell_test!(dev_cannot_be_added_to, |t| {
    let run = t.run_json(&[], "touch /dev/planted");
    run.assert_failure_mentioning("Read-only file system");
});

cell_test!(proc_shows_only_the_cells_processes, |t| {
    let mut sleeper = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .unwrap();
    let host_pid = sleeper.id();
    let script = format!(
        "ls /proc | grep -c '^[0-9]*$'; test -e /proc/{host_pid} && echo visible; \
         kill -0 {host_pid} 2>&1 || echo cannot-signal; echo init=$(cat /proc/1/comm)"
    );
    let control = t.run_on_host(&[], &format!("kill -0 {host_pid} && echo can-signal"));
    let run = t.run_json(&[], &script);
    sleeper.kill().unwrap();
    sleeper.wait().unwrap();

    if !t.is_root() && host_pid != 0 && crate::harness::running_as_root() {
        // An unprivileged host user cannot signal a root process either; the cell's view is
        // what this test is about.
    } else {
        assert!(control.stdout().contains("can-signal"), "{control:#?}");
    }
    assert!(!run.stdout().contains("visible"), "{run:#?}");
    assert!(run.stdout().contains("cannot-signal"), "{run:#?}");
    let count: u32 = run.stdout().lines().next().unwrap().trim().parse().unwrap();
    assert!(count <= 4, "the cell sees {count} processes: {run:#?}");
});

cell_test!(proc_sys_cannot_be_written, |t| {
    let script = "cat /proc/sys/vm/overcommit_ratio > /proc/sys/vm/overcommit_ratio";
    if t.is_root() {
        // Root on the host can write it (the same value back, so nothing changes).
        t.run_on_host(&[], script).assert_success();
    }
    let run = t.run_json(&[], script);
    assert_ne!(run.exit_code(), 0, "{run:#?}");
    let run = t.run_json(&[], "echo c > /proc/sysrq-trigger");
    assert_ne!(run.exit_code(), 0, "{run:#?}");
});

cell_test!(sys_is_read_only, |t| {
    let run = t.run_json(&[], "echo 1 > /sys/kernel/mm/ksm/run");
    run.assert_failure_mentioning("Read-only file system");
});

cell_test!(root_owned_host_files_cannot_be_written, |t| {
    let target = format!("/etc/burrow-probe-{}-{}", std::process::id(), t.uid);
    let script = format!("touch {target}");
    if t.is_root() {
        t.run_on_host(&[], &script).assert_success();
        std::fs::remove_file(&target).unwrap();
    }
    let run = t.run_json(&[], &script);
    assert_ne!(run.exit_code(), 0, "{run:#?}");
    assert!(!Path::new(&target).exists());
});

cell_test!(git_hooks_and_config_stay_read_only, |t| {
    let run = t.run_json(
        &crate::harness::GIT_IDENTITY,
        "git init -q . && rm -rf .git/hooks && echo x > f && git add f && git commit -qm one && echo committed",
    );
    // git init inside the cell: .git did not exist at start, so nothing was protected yet.
    run.assert_success();
    assert!(run.stdout().contains("committed"));

    // Now .git exists: hooks (missing, so created empty) and config are read-only.
    let attacks = [
        "mkdir -p .git/hooks && echo 'touch /tmp/pwned' > .git/hooks/pre-commit",
        "git config core.hooksPath /tmp/hooks",
        "echo '[core] fsmonitor = evil' >> .git/config",
        "mv .git .git-old && mkdir -p .git/hooks",
    ];
    for attack in attacks {
        let run = t.run_json(&[], attack);
        assert_ne!(run.exit_code(), 0, "{attack}: {run:#?}");
    }
    assert!(t.work.join(".git/config").exists());
    assert!(!t.work.join(".git/hooks/pre-commit").exists());
    let config = std::fs::read_to_string(t.work.join(".git/config")).unwrap();
    assert!(
        !config.contains("fsmonitor") && !config.contains("hooksPath"),
        "{config}"
    );

    // The repository itself stays usable.
    let run = t.run_json(
        &crate::harness::GIT_IDENTITY,
        "echo y >> f && git commit -qam two && git log --oneline | wc -l",
    );
    run.assert_success();
    assert_eq!(run.stdout().trim(), "2");

    // Deleting the repository destroys it (the sandbox does not stop that) but cannot replace
    // it: the protected paths survive, still read-only.
    let run = t.run_json(&[], "rm -rf .git");
    assert_ne!(run.exit_code(), 0);
    assert!(t.work.join(".git/hooks").is_dir() && t.work.join(".git/config").is_file());
});

cell_test!(host_unix_sockets_are_unreachable, |t| {
    use std::os::unix::net::UnixListener;
    let name = format!("burrow-test-{}-{}", std::process::id(), t.uid);
    let mut paths = vec![Path::new("/tmp").join(format!("{name}.sock"))];
    if crate::harness::running_as_root() {
        paths.push(Path::new("/run").join(format!("{name}.sock")));
    }
    for path in &paths {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).unwrap();
        std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o777))
            .unwrap();
        let script = format!(
            "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"{}\"); print(\"connected\")'",
            path.display()
        );
        let control = t.run_on_host(&[], &script);
        assert!(control.stdout().contains("connected"), "{control:#?}");
        let run = t.run_json(&["--network", "host"], &script);
        assert!(
            !run.stdout().contains("connected"),
            "{}: {run:#?}",
            path.display()
        );
        drop(listener);
        std::fs::remove_file(path).unwrap();
    }
});

cell_test!(setuid_bits_cannot_be_set, |t| {
    let script = "cp /bin/true ./t && chmod u+s ./t && echo set";
    let control = t.run_on_host(&[], script);
    control.assert_success();
    std::fs::remove_file(t.work.join("t")).unwrap();
    let run = t.run_json(&[], script);
    assert!(!run.stdout().contains("set"), "{run:#?}");
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(t.work.join("t")).unwrap().permissions(),
    );
    assert_eq!(mode & 0o6000, 0);
});

cell_test!(device_nodes_cannot_be_created, |t| {
    let script = "mknod ./null c 1 3 && echo made";
    if t.is_root() {
        t.run_on_host(&[], script).assert_success();
        std::fs::remove_file(t.work.join("null")).unwrap();
    }
    let run = t.run_json(&[], script);
    assert!(!run.stdout().contains("made"), "{run:#?}");
    // FIFOs are fine.
    t.run_json(&[], "mkfifo ./pipe && test -p ./pipe")
        .assert_success();
});

cell_test!(a_protected_path_that_is_a_symlink_is_refused, |t| {
    // `.git/hooks` pointing into the writable tree could be rewritten through its target, and a
    // symlink cannot be made read-only: burrow refuses rather than follow it.
    std::fs::create_dir_all(t.work.join(".git")).unwrap();
    std::fs::create_dir_all(t.work.join("githooks")).unwrap();
    std::os::unix::fs::symlink("../githooks", t.work.join(".git/hooks")).unwrap();
    t.give_to_user(&t.work);
    let output = t.burrow(["run", "--", "true"]).output().unwrap();
    assert_eq!(output.status.code(), Some(125), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(".git/hooks") && stderr.contains("symlink"),
        "{stderr}"
    );
});

cell_test!(a_writable_root_given_through_a_symlink_is_its_target, |t| {
    let real = t.root.join("real");
    std::fs::create_dir(&real).unwrap();
    std::os::unix::fs::symlink(&real, t.root.join("link")).unwrap();
    t.give_to_user(&t.root);
    let link = t.root.join("link");
    let run = t.run_json(
        &["--write", link.to_str().unwrap()],
        &format!("echo x > {}/f", real.display()),
    );
    run.assert_success();
    assert!(real.join("f").exists());
});

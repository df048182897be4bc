//! Policy files, `burrow policy check`, and `burrow doctor`.

use crate::cell_test;

cell_test!(a_policy_file_sets_what_flags_would, |t| {
    let extra = t.root.join("extra");
    std::fs::create_dir(&extra).unwrap();
    t.give_to_user(&extra);
    let policy = t.write(
        "policy.toml",
        format!(
            "[filesystem]\nwrite = [\"{}\"]\nwrite_cwd = false\n[env]\nset = {{ MODE = \"from-policy\" }}\n[limits]\ntimeout = 7\n",
            extra.display()
        ),
    );
    let script = format!("echo $MODE > {}/f; echo x > here", extra.display());
    let run = t.run_json(&["--policy", policy.to_str().unwrap()], &script);
    assert_ne!(run.exit_code(), 0, "cwd should be read-only: {run:#?}");
    assert_eq!(
        std::fs::read_to_string(extra.join("f")).unwrap(),
        "from-policy\n"
    );
    // A flag overrides the file.
    let run = t.run_json(
        &["--policy", policy.to_str().unwrap(), "--env", "MODE=flag"],
        "echo $MODE",
    );
    assert_eq!(run.stdout(), "flag\n");
});

cell_test!(policy_check_prints_the_effective_policy, |t| {
    let policy = t.write(
        "policy.toml",
        "[limits]\nmemory = \"256M\"\n[network]\nmode = \"loopback\"\n",
    );
    let output = t
        .burrow(["policy", "check", policy.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("memory = \"256M\""), "{text}");
    assert!(text.contains("mode = \"loopback\""), "{text}");
    assert!(text.contains("pids = 512"), "{text}");
    assert!(text.contains("timeout = 30"), "{text}");

    let output = t
        .burrow(["policy", "check", "--json", policy.to_str().unwrap()])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["limits"]["memory"], "256M");
});

cell_test!(an_unknown_key_is_an_error_naming_it, |t| {
    let policy = t.write("bad.toml", "[limits]\ntimeout = 5\nmemroy = \"1G\"\n");
    let output = t
        .burrow(["policy", "check", policy.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains(":3: limits.memroy: unknown field `memroy`"),
        "{stderr}"
    );

    let output = t
        .burrow(["run", "--policy", policy.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(125));
});

cell_test!(a_contradiction_is_an_error_naming_the_key, |t| {
    let policy = t.write(
        "bad.toml",
        "[sandbox]\nbackend = \"host\"\n[network]\nmode = \"none\"\n",
    );
    let output = t
        .burrow(["policy", "check", policy.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("network.mode"));
});

cell_test!(doctor_reports_every_layer, |t| {
    let output = t.burrow(["doctor", "--json"]).output().unwrap();
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let names: Vec<&str> = json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|check| check["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "user namespaces",
            "landlock",
            "seccomp",
            "limits",
            "overlayfs",
            "trial cell"
        ]
    );
    // This project's machines have everything a cell needs.
    assert_eq!(output.status.code(), Some(0), "{json}");
    let human = t.burrow(["doctor"]).output().unwrap();
    assert!(String::from_utf8_lossy(&human.stdout).contains("trial cell"));
});

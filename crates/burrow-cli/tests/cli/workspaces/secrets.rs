//! Secrets and redaction: secrets reach commands only when asked for, are kept out of
//! /workspace and the audit log, and never appear in anything burrow prints, even split across
//! reads; PII rules with each strategy.

use std::time::Duration;

use crate::cell_test;
use crate::workspace_harness::eventually;

const TOKEN: &str = "hunter2-s3cr3t-v4lue";

cell_test!(secrets_are_given_on_request_and_redacted_everywhere, |t| {
    t.create_ws("sec", &["--secret", &format!("TOKEN={TOKEN}")]);
    // Not in the environment unless asked for; then redacted from the output.
    assert_eq!(t.sh("sec", "echo \"[$TOKEN]\""), "[]\n");
    let run = t.exec_json(
        "sec",
        &["--secret-env", "TOKEN=API_TOKEN"],
        "echo \"key=$API_TOKEN\"; echo \"$API_TOKEN\" | base64; echo \"$API_TOKEN\" >&2",
    );
    run.assert_success();
    assert!(
        !run.stdout().contains(TOKEN) && !run.stderr().contains(TOKEN),
        "{run:#?}"
    );
    assert!(run.stdout().contains("key=[REDACTED:TOKEN]"), "{run:#?}");
    assert_eq!(run.stderr(), "[REDACTED:TOKEN]\n");
    // The base64 form too.
    let encoded = t.call(&[
        "exec",
        "sec",
        "--secret-env",
        "TOKEN",
        "--",
        "sh",
        "-c",
        "printf %s \"$TOKEN\" | base64",
    ]);
    assert!(encoded.text().contains("[REDACTED:TOKEN]"), "{encoded:#?}");
    // As a file in /run/secrets; its content is redacted from output, its size is not secret.
    assert_eq!(
        t.sh("sec", "wc -c < /run/secrets/TOKEN").trim(),
        TOKEN.len().to_string()
    );
    assert_eq!(t.sh("sec", "cat /run/secrets/TOKEN"), "[REDACTED:TOKEN]");
    // Never in /workspace, never in the state's files the cell could reach, owner-only.
    assert_eq!(
        t.sh("sec", "grep -r s3cr3t /workspace || echo clean"),
        "clean\n"
    );
    let id = t.status("sec")["id"].as_str().unwrap().to_owned();
    let stored = t.state.join("workspaces").join(&id).join("secrets.json");
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&stored).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    // Files holding it: diff, file read and export show the replacement.
    t.sh("sec", "cp /run/secrets/TOKEN leaked.txt");
    let diff = t.ok(&["diff", "sec"]);
    assert!(
        diff.contains("[REDACTED:TOKEN]") && !diff.contains(TOKEN),
        "{diff}"
    );
    assert_eq!(
        t.ok(&["file", "read", "sec", "leaked.txt"]),
        "[REDACTED:TOKEN]"
    );
    let out = t.root.join("export");
    t.ok(&["export", "sec", "--output", out.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(out.join("leaked.txt")).unwrap(),
        "[REDACTED:TOKEN]"
    );
    // The audit log has the command lines, not the secret.
    t.call(&["exec", "sec", "--", "echo", TOKEN]);
    let audit = t.ok(&["audit", "sec", "--json"]);
    assert!(
        !audit.contains(TOKEN) && audit.contains("[REDACTED:TOKEN]"),
        "{audit}"
    );
    // Names are listed, values never.
    assert_eq!(t.ok(&["secret", "list", "sec"]), "TOKEN\n");
});

cell_test!(secrets_change_while_the_cell_runs, |t| {
    t.create_ws("change", &[]);
    t.sh("change", "true");
    t.ok(&[
        "secret",
        "set",
        "change",
        "DB_PASS",
        "--value",
        "correct-horse",
    ]);
    assert_eq!(
        t.sh("change", "cat /run/secrets/DB_PASS"),
        "[REDACTED:DB_PASS]"
    );
    let piped = t.call_with_input(&["secret", "set", "change", "OTHER"], b"from-stdin-value\n");
    assert_eq!(piped.status, 0, "{piped:#?}");
    assert_eq!(t.ok(&["secret", "list", "change"]), "DB_PASS\nOTHER\n");
    t.ok(&["secret", "rm", "change", "DB_PASS"]);
    assert_eq!(t.sh("change", "ls /run/secrets"), "OTHER\n");
    t.fails(
        &[
            "secret",
            "set",
            "change",
            "bad-name",
            "--value",
            "long enough",
        ],
        "not a valid secret name",
    );
    t.fails(
        &["secret", "set", "change", "SHORT", "--value", "abc"],
        "too short",
    );
    t.fails(&["secret", "rm", "change", "NOPE"], "no secret named NOPE");
    t.fails(
        &["exec", "change", "--secret-env", "NOPE", "--", "true"],
        "no secret named NOPE",
    );
});

/// Prints the secret in two halves with a pause between them.
const SPLIT: &str = "printf 'hunter2-s3c'; sleep 1; printf 'r3t-v4lue\\n'";

cell_test!(a_secret_split_across_reads_is_still_redacted, |t| {
    t.create_ws("split", &["--secret", &format!("TOKEN={TOKEN}")]);
    // exec, streamed.
    let streamed = t.call(&["exec", "split", "--", "sh", "-c", SPLIT]);
    assert_eq!(streamed.text(), "[REDACTED:TOKEN]\n", "{streamed:#?}");
    // A shell read during the pause shows nothing of the first half.
    let shell = t.ok(&["shell", "open", "split"]).trim().to_owned();
    t.ok(&[
        "shell",
        "write",
        "split",
        &shell,
        "stty -echo; echo ready-$((40+2))",
    ]);
    let (_, cursor) = t.shell_until("split", &shell, 0, "ready-42");
    t.ok(&["shell", "write", "split", &shell, SPLIT]);
    std::thread::sleep(Duration::from_millis(400));
    let during = t.shell_read("split", &shell, cursor, 0, &[]);
    assert!(!during.output.contains("hunter"), "{during:?}");
    let (after, _) = t.shell_until("split", &shell, during.next, "[REDACTED:TOKEN]");
    assert!(
        !after.contains("s3c") && !after.contains("hunter"),
        "{after}"
    );
    // Service logs, followed.
    t.ok(&[
        "service",
        "start",
        "split",
        "leaky",
        "--",
        "sh",
        "-c",
        &format!("{SPLIT}; exec sleep 300"),
    ]);
    // Read while the secret is half written, too: no read may show a part of it.
    let mut logs = String::new();
    eventually(10, || {
        logs = t.ok(&["service", "logs", "split", "leaky", "--all"]);
        assert!(!logs.contains("s3c") && !logs.contains("hunter"), "{logs}");
        logs == "[REDACTED:TOKEN]\n"
    });
    assert_eq!(logs, "[REDACTED:TOKEN]\n");
});

cell_test!(pii_rules_apply_with_each_strategy, |t| {
    t.create_ws("pii", &["--redact", "email"]);
    let text = "mail ann@example.com card 4111-1111-1111-1111 ip 192.168.1.23 v6 fe80::1 mac 00:1A:2B:3C:4D:5E url https://example.com/a?b=c";
    let script = format!("echo '{text}'");
    // The workspace's own rule applies to every exec.
    assert!(t.sh("pii", &script).contains("mail [REDACTED_EMAIL] card"));
    let with = |flags: &[&str]| {
        let mut args = vec!["exec", "pii"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", &script]);
        t.call(&args).text()
    };
    let out = with(&[
        "--redact",
        "credit_card",
        "--redact",
        "ip",
        "--redact",
        "mac",
        "--redact",
        "url",
    ]);
    for expected in [
        "[REDACTED_EMAIL]",
        "[REDACTED_CREDIT_CARD]",
        "ip [REDACTED_IP]",
        "v6 [REDACTED_IP]",
        "[REDACTED_MAC_ADDRESS]",
        "[REDACTED_URL]",
    ] {
        assert!(out.contains(expected), "{expected} missing: {out}");
    }
    let masked = with(&[
        "--redact",
        "credit_card:mask",
        "--redact",
        "ip:mask",
        "--redact",
        "mac:mask",
    ]);
    assert!(
        masked.contains("****-****-****-1111")
            && masked.contains("*.*.*.23")
            && masked.contains("**:**:**:**:**:5E"),
        "{masked}"
    );
    let hashed = with(&["--redact", "ip:hash"]);
    assert!(hashed.contains("<ip_hash:"), "{hashed}");
    assert_eq!(with(&["--redact", "ip:hash"]), hashed, "a hash is stable");
    let custom = with(&["--redact", "re:card [0-9-]+"]);
    assert!(
        custom.contains("[REDACTED_CUSTOM]") && !custom.contains("4111"),
        "{custom}"
    );
    let blocked = with(&["--redact", "url:block"]);
    assert_eq!(blocked.trim(), "Output blocked: detected url.");
    t.fails(&["exec", "pii", "--redact", "phone", "--", "true"], "");
});

cell_test!(every_surface_takes_secrets_and_redacts_them, |t| {
    let key_file = t.write("key.txt", "file-held-key-material");
    let spec = format!("KEY={}", key_file.display());
    t.create_ws(
        "all",
        &[
            "--secret",
            &format!("TOKEN={TOKEN}"),
            "--secret-file",
            &spec,
        ],
    );
    // Sessions.
    let session = t
        .ok(&["session", "open", "all", "--secret-env", "TOKEN"])
        .trim()
        .to_owned();
    let result = t.session_json(
        "all",
        &session,
        &[],
        "echo \"$TOKEN\"; cat /run/secrets/KEY >&2",
    );
    assert_eq!(result["stdout"], "[REDACTED:TOKEN]\n", "{result}");
    assert_eq!(result["stderr"], "[REDACTED:KEY]", "{result}");
    // Shells.
    let shell = t
        .ok(&["shell", "open", "all", "--secret-env", "TOKEN=T"])
        .trim()
        .to_owned();
    t.ok(&[
        "shell",
        "write",
        "all",
        &shell,
        "stty -echo; echo \"got-$T\"",
    ]);
    let (seen, _) = t.shell_until("all", &shell, 0, "got-[REDACTED:TOKEN]");
    assert!(!seen.contains(TOKEN), "{seen}");
    // Services.
    t.ok(&[
        "service",
        "start",
        "all",
        "talker",
        "--secret-env",
        "TOKEN",
        "--",
        "sh",
        "-c",
        "echo \"svc-$TOKEN\"; exec sleep 300",
    ]);
    assert_eq!(
        t.ok_eventually(
            &["service", "logs", "all", "talker"],
            "svc-[REDACTED:TOKEN]\n"
        ),
        "svc-[REDACTED:TOKEN]\n"
    );
});

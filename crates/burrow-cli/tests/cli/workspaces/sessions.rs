//! Persistent sessions: state carries between commands; output exact and in order; `exit`,
//! stdin, timeouts; `session serve` for harnesses.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;

use crate::cell_test;

cell_test!(state_carries_between_commands, |t| {
    t.create_ws("state", &[]);
    t.sh("state", "mkdir -p sub/dir");
    let session = t.ok(&["session", "open", "state"]).trim().to_owned();
    assert!(session.starts_with("s-"), "{session}");
    t.session_json(
        "state",
        &session,
        &[],
        "cd sub/dir && export GREETING=hello && greet() { echo \"$GREETING $1\"; }",
    );
    let result = t.session_json("state", &session, &[], "pwd; greet world");
    assert_eq!(
        result["stdout"], "/workspace/sub/dir\nhello world\n",
        "{result}"
    );
    assert_eq!(result["exit_code"], 0);
    // Output without a final newline, a status of its own, quotes of every kind.
    let result = t.session_json(
        "state",
        &session,
        &[],
        "printf 'no newline'; printf \"it's\" >&2; false",
    );
    assert_eq!(result["stdout"], "no newline");
    assert_eq!(result["stderr"], "it's");
    assert_eq!(result["exit_code"], 1);
    // A syntax error is the command's, not the session's.
    let result = t.session_json("state", &session, &[], "if then fi (");
    assert_ne!(result["exit_code"], 0);
    assert_eq!(
        t.session_json("state", &session, &[], "echo $GREETING")["stdout"],
        "hello\n"
    );
    // The session's shell and its commands run under the commands' seccomp filter (two
    // filters: the cell's and the addition that takes openat2 away).
    let filters = t.session_json(
        "state",
        &session,
        &[],
        "grep Seccomp_filters /proc/self/status",
    );
    assert_eq!(filters["stdout"], "Seccomp_filters:\t2\n", "{filters}");
    let list = t.call(&["session", "list", "state", "--json"]).json();
    assert_eq!(list[0]["cwd"], "/workspace/sub/dir");
    t.ok(&["session", "close", "state", &session]);
    t.fails(
        &["session", "exec", "state", &session, "--", "true"],
        "no session named",
    );
});

cell_test!(stdout_and_stderr_keep_their_order, |t| {
    t.create_ws("order", &[]);
    let session = t.ok(&["session", "open", "order"]).trim().to_owned();
    let result = t.session_json(
        "order",
        &session,
        &[],
        "echo one; sleep 0.05; echo two >&2; sleep 0.05; echo three; sleep 0.05; echo four >&2",
    );
    let order: Vec<(String, String)> = result["output"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["stream"].as_str().unwrap().to_owned(),
                c["text"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            ("stdout", "one\n"),
            ("stderr", "two\n"),
            ("stdout", "three\n"),
            ("stderr", "four\n")
        ]
        .map(|(s, t)| (s.to_owned(), t.to_owned()))
    );
    // Streamed: each stream to burrow's own.
    let done = t.call(&[
        "session",
        "exec",
        "order",
        &session,
        "--",
        "echo out; echo err >&2",
    ]);
    assert_eq!(done.text(), "out\n");
    assert_eq!(done.stderr, "err\n");
});

cell_test!(exit_stdin_and_timeouts_are_handled, |t| {
    t.create_ws("edges", &[]);
    let session = t.ok(&["session", "open", "edges"]).trim().to_owned();
    // A command that reads stdin gets end-of-file at once.
    let result = t.session_json("edges", &session, &[], "cat; read line; echo \"read=$?\"");
    assert_eq!(result["stdout"], "read=1\n", "{result}");
    // A timeout interrupts the command (the rest of its line does not run); the session and
    // its state survive, even when the command was a loop in the shell itself.
    t.session_json("edges", &session, &[], "export KEPT=yes");
    let result = t.session_json(
        "edges",
        &session,
        &["--timeout", "1"],
        "sleep 60; echo never",
    );
    assert_eq!(result["timed_out"], true, "{result}");
    assert_eq!(result["exit_code"], 124);
    assert_eq!(result["restarted"], false);
    assert_eq!(result["stdout"], "", "{result}");
    let result = t.session_json(
        "edges",
        &session,
        &["--timeout", "1"],
        "while :; do :; done",
    );
    assert_eq!(
        (result["timed_out"].clone(), result["restarted"].clone()),
        (true.into(), false.into()),
        "{result}"
    );
    assert_eq!(
        t.session_json("edges", &session, &[], "echo $KEPT")["stdout"],
        "yes\n"
    );
    // A command that makes the shell deaf to interruption gets the shell replaced, in the
    // same directory, and says so.
    t.sh("edges", "mkdir -p deep");
    t.session_json("edges", &session, &[], "cd deep");
    let result = t.session_json(
        "edges",
        &session,
        &["--timeout", "1"],
        "trap '' INT; while :; do :; done",
    );
    assert_eq!(result["timed_out"], true, "{result}");
    assert_eq!(result["restarted"], true, "{result}");
    let after = t.session_json("edges", &session, &[], "pwd; echo \"kept=$KEPT\"");
    assert_eq!(after["stdout"], "/workspace/deep\nkept=\n", "{after}");
    // `exit` ends the session, which says so.
    let result = t.session_json("edges", &session, &[], "echo bye; exit 3");
    assert_eq!(result["stdout"], "bye\n");
    assert_eq!(result["exit_code"], 3);
    assert_eq!(result["ended"]["code"], 3, "{result}");
    let again = t.call(&["session", "exec", "edges", &session, "--", "true"]);
    assert_ne!(again.status, 0);
    assert!(again.stderr.contains("has ended"), "{again:#?}");
});

cell_test!(session_serve_answers_a_line_per_request, |t| {
    t.create_ws("serve", &[]);
    let mut child = t
        .burrow(["session", "serve", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |request: &str| -> serde_json::Value {
        writeln!(input, "{request}").unwrap();
        input.flush().unwrap();
        let mut line = String::new();
        output.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap()
    };
    let first = ask(r#"{"id": 1, "command": "cd /tmp && X=42"}"#);
    assert_eq!(first["id"], 1);
    assert_eq!(first["exit_code"], 0);
    let second = ask(r#"{"id": "b", "command": "echo $X $PWD; echo oops >&2"}"#);
    assert_eq!(second["id"], "b");
    assert_eq!(second["stdout"], "42 /tmp\n");
    assert_eq!(second["stderr"], "oops\n");
    let slow = ask(r#"{"command": "sleep 30", "timeout": 1}"#);
    assert_eq!(slow["timed_out"], true);
    let bad = ask("not json");
    assert!(
        bad["error"].as_str().unwrap().contains("not a request"),
        "{bad}"
    );
    drop(input);
    assert!(child.wait().unwrap().success());
});

//! Services: each readiness probe, failures before ready, stopping with a grace period,
//! restarts, logs, and a port published to the host.

use std::io::{Read, Write};
use std::time::Duration;

use crate::cell_test;
use crate::harness::Harness;

/// A free port on the host's loopback (closed again at once).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn status(t: &Harness, ws: &str, name: &str) -> serde_json::Value {
    t.call(&["service", "status", ws, name, "--json"]).json()
}

cell_test!(each_readiness_probe_gates_the_start, |t| {
    t.create_ws("svc", &["--network", "loopback"]);
    // A file.
    let out = t.ok(&[
        "service",
        "start",
        "svc",
        "file",
        "--ready-file",
        "ready",
        "--",
        "sh",
        "-c",
        "sleep 0.3; touch ready; exec sleep 300",
    ]);
    assert!(out.starts_with("file: ready"), "{out}");
    // A TCP port and an HTTP URL, served by python in the cell.
    let port = free_port().to_string();
    let server = ["python3", "-m", "http.server", "--bind", "127.0.0.1", &port];
    let mut args = vec!["service", "start", "svc", "tcp", "--ready-tcp"];
    let address = format!("127.0.0.1:{port}");
    args.extend([address.as_str(), "--"]);
    args.extend(server);
    assert!(t.ok(&args).starts_with("tcp: ready"));
    let url = format!("http://127.0.0.1:{port}/");
    let check = t.ok(&[
        "service",
        "start",
        "svc",
        "http",
        "--ready-http",
        &url,
        "--",
        "sleep",
        "300",
    ]);
    assert!(check.starts_with("http: ready"), "{check}");
    // A command.
    t.sh("svc", "touch flag");
    let out = t.ok(&[
        "service",
        "start",
        "svc",
        "cmd",
        "--ready-cmd",
        "test -e flag",
        "--",
        "sleep",
        "300",
    ]);
    assert!(out.starts_with("cmd: ready"), "{out}");
    let list = t.call(&["service", "list", "svc", "--json"]).json();
    assert_eq!(list.as_array().unwrap().len(), 4);
    assert!(
        list.as_array()
            .unwrap()
            .iter()
            .all(|s| s["state"] == "ready"),
        "{list}"
    );
    t.fails(
        &["service", "start", "svc", "file", "--", "true"],
        "already running",
    );
});

cell_test!(failures_before_ready_are_reported, |t| {
    t.create_ws("fail", &[]);
    let early = t.call(&[
        "service",
        "start",
        "fail",
        "early",
        "--ready-file",
        "never",
        "--",
        "sh",
        "-c",
        "echo dying-words; exit 3",
    ]);
    assert_eq!(early.status, 1, "{early:#?}");
    assert!(
        early
            .text()
            .contains("failed (exited_before_ready), exit 3"),
        "{early:#?}"
    );
    assert!(early.stderr.contains("dying-words"), "{early:#?}");
    let slow = t.call(&[
        "service",
        "start",
        "fail",
        "slow",
        "--ready-file",
        "never",
        "--ready-timeout",
        "1",
        "--",
        "sleep",
        "300",
    ]);
    assert_eq!(slow.status, 1);
    assert!(
        slow.text().contains("failed (readiness_timeout)"),
        "{slow:#?}"
    );
    // The timed-out service was killed.
    assert!(!t.sh("fail", "ps -eo args").contains("sleep 300"));
});

cell_test!(stop_escalates_to_sigkill_after_the_grace, |t| {
    t.create_ws("stop", &[]);
    t.ok(&["service", "start", "stop", "polite", "--", "sleep", "300"]);
    assert!(
        t.ok(&["service", "stop", "stop", "polite", "--grace", "5"])
            .contains("stopped (sigterm)")
    );
    t.ok(&[
        "service",
        "start",
        "stop",
        "stubborn",
        "--",
        "sh",
        "-c",
        "trap '' TERM; while :; do sleep 0.1; done",
    ]);
    let out = t.ok(&["service", "stop", "stop", "stubborn", "--grace", "1"]);
    assert!(out.contains("stopped (sigkill)"), "{out}");
    assert_eq!(status(&t, "stop", "stubborn")["state"], "stopped");
    assert!(!t.sh("stop", "ps -eo args").contains("while"));
});

cell_test!(logs_keep_order_and_restarts_happen_on_failure, |t| {
    t.create_ws("logs", &[]);
    t.ok(&[
        "service",
        "start",
        "logs",
        "talk",
        "--",
        "sh",
        "-c",
        "for i in 1 2 3 4 5; do echo out-$i; echo err-$i >&2; done; exec sleep 300",
    ]);
    let expected = "out-1\nerr-1\nout-2\nerr-2\nout-3\nerr-3\nout-4\nerr-4\nout-5\nerr-5\n";
    let all = t.ok_eventually(&["service", "logs", "logs", "talk", "--all"], expected);
    assert_eq!(all, expected);
    assert_eq!(
        t.ok(&["service", "logs", "logs", "talk", "--tail", "2"]),
        "out-5\nerr-5\n"
    );
    // A service that fails after it was ready is started again.
    t.ok(&[
        "service",
        "start",
        "logs",
        "flaky",
        "--restart",
        "on-failure",
        "--",
        "sh",
        "-c",
        "echo started; sleep 0.2; exit 1",
    ]);
    assert!(crate::workspace_harness::eventually(20, || status(
        &t, "logs", "flaky"
    )["restarts"]
        .as_u64()
        >= Some(2)));
    let log = t.ok(&["service", "logs", "logs", "flaky", "--all"]);
    assert!(log.matches("started").count() >= 2, "{log}");
    t.ok(&["service", "stop", "logs", "flaky", "--grace", "1"]);
});

cell_test!(a_published_port_is_reached_from_the_host, |t| {
    t.create_ws("pub", &["--network", "loopback"]);
    t.sh("pub", "echo served-from-the-cell > index.html");
    let cell_port = "8000";
    let host_port = free_port().to_string();
    let publish = format!("{host_port}:{cell_port}");
    t.ok(&[
        "service",
        "start",
        "pub",
        "web",
        "--ready-tcp",
        "127.0.0.1:8000",
        "--publish",
        &publish,
        "--",
        "python3",
        "-m",
        "http.server",
        "--bind",
        "127.0.0.1",
        cell_port,
    ]);
    let mut stream =
        std::net::TcpStream::connect(("127.0.0.1", host_port.parse::<u16>().unwrap())).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    stream
        .write_all(b"GET /index.html HTTP/1.0\r\nHost: x\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.0 200"), "{answer}");
    assert!(answer.contains("served-from-the-cell"), "{answer}");
    // The forwarder goes with the service.
    t.ok(&["service", "stop", "pub", "web"]);
    assert!(crate::workspace_harness::eventually(10, || {
        std::net::TcpStream::connect(("127.0.0.1", host_port.parse::<u16>().unwrap())).is_err()
    }));
});

cell_test!(logs_can_be_followed_to_the_end, |t| {
    t.create_ws("follow", &[]);
    t.ok(&[
        "service",
        "start",
        "follow",
        "brief",
        "--",
        "sh",
        "-c",
        "echo first; sleep 1; echo second",
    ]);
    // Follows while the service runs, and ends when it has exited and everything was printed.
    let followed = t.ok(&["service", "logs", "follow", "brief", "--follow"]);
    assert_eq!(followed, "first\nsecond\n");
    assert_eq!(status(&t, "follow", "brief")["state"], "exited");
    assert_eq!(status(&t, "follow", "brief")["exit_code"], 0);
});

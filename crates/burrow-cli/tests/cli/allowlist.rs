//! `--network allow:...`: only the allowlist's hosts, through burrow's proxy.
//!
//! Everything stays on this machine: a small HTTP server on the host's 127.0.0.1, and names
//! (`allowed.test`, `a.wild.test`, ...) mapped to it by the proxy's test-only resolver override
//! (`BURROW_PROXY_RESOLVE`, read from burrow's own environment, never the cell's). Because
//! those names resolve to a loopback address, reaching them also needs
//! `--network-allow-private`; one test shows what happens without it.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use crate::cell_test;
use crate::harness::{Harness, User};

/// Bytes of the pattern the server's `/big` streams, repeated (a prime, so that a shifted,
/// dropped or repeated block shows).
const PATTERN: usize = 251;

/// An HTTP/1.1 server on the host's loopback: `/big?N` streams N bytes of the pattern, any
/// other path answers `hello <Host header>`.
fn web_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    port
}

fn serve(stream: TcpStream) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut host = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(value) = line.to_ascii_lowercase().strip_prefix("host:") {
            host = value.trim().to_owned();
        }
    }
    let path = request_line.split(' ').nth(1).unwrap_or("/").to_owned();
    let mut stream = stream;
    if let Some(count) = path.strip_prefix("/big?") {
        let total: usize = count.parse().unwrap_or(0);
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {total}\r\nConnection: close\r\n\r\n"
        );
        let block: Vec<u8> = (0..PATTERN * 4096).map(|i| (i % PATTERN) as u8).collect();
        let mut left = total;
        while left > 0 {
            let n = left.min(block.len());
            if stream.write_all(&block[..n]).is_err() {
                return;
            }
            left -= n;
        }
    } else {
        let body = format!("hello {host}\n");
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

/// A harness whose burrow maps the test names to 127.0.0.1.
fn harness_with_names(mut t: Harness) -> Harness {
    let names = [
        "allowed.test",
        "other.test",
        "a.wild.test",
        "wild.test",
        "secret.wild.test",
    ];
    let mapping: Vec<String> = names
        .iter()
        .map(|name| format!("{name}=127.0.0.1"))
        .collect();
    t.env
        .push(("BURROW_PROXY_RESOLVE".into(), mapping.join(",")));
    t
}

fn allow(hosts: &str) -> Vec<String> {
    vec![
        "--network".into(),
        format!("allow:{hosts}"),
        "--network-allow-private".into(),
    ]
}

fn flags(list: &[String]) -> Vec<&str> {
    list.iter().map(String::as_str).collect()
}

cell_test!(an_allowed_name_is_reached_through_the_proxy, |t| {
    let t = harness_with_names(t);
    let port = web_server();
    let rules = allow("allowed.test");
    // curl through HTTP_PROXY, curl tunnelling with CONNECT, Python's urllib (which reads the
    // proxy variables like pip does), and curl through SOCKS5 with remote name resolution.
    let script = format!(
        "curl -sS http://allowed.test:{port}/plain && \
         curl -sS --proxytunnel http://allowed.test:{port}/tunnel && \
         python3 -c 'import urllib.request; print(urllib.request.urlopen(\"http://allowed.test:{port}/\", timeout=10).read().decode(), end=\"\")' && \
         curl -sS --proxy socks5h://127.0.0.1:3128 http://allowed.test:{port}/socks && \
         env | grep -c -i '^https\\?_proxy=http://127.0.0.1:3128$'"
    );
    let run = t.run_json(&flags(&rules), &script);
    run.assert_success();
    let expected = format!("hello allowed.test:{port}\n");
    assert_eq!(
        run.stdout(),
        format!("{}4\n", expected.repeat(4)),
        "{run:#?}"
    );
    assert!(run.json.get("network_denied").is_none(), "{run:#?}");
});

cell_test!(a_name_off_the_list_is_refused_and_reported, |t| {
    let t = harness_with_names(t);
    let port = web_server();
    let rules = allow("allowed.test");
    let script = format!(
        "curl -sS -w '%{{http_code}}\\n' http://other.test:{port}/; \
         curl -sS --proxy socks5h://127.0.0.1:3128 http://other.test:{port}/ || echo socks-refused"
    );
    let run = t.run_json(&flags(&rules), &script);
    let out = run.stdout();
    assert!(
        out.contains("not on this sandbox's network allowlist"),
        "{run:#?}"
    );
    assert!(
        out.contains("403\n") && out.contains("socks-refused"),
        "{run:#?}"
    );
    let denied = run.json["network_denied"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        denied.iter().any(|d| d["host"] == "other.test"
            && d["port"] == port
            && d["at_ms"].as_u64().is_some()),
        "{run:#?}"
    );
    // Without --json: one line on stderr per refused host, after the command's output.
    let streamed = t
        .burrow([&["run"][..], &flags(&rules), &["--", "sh", "-c", &script]].concat())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&streamed.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            line.starts_with(&format!(
                "burrow: blocked a connection to other.test:{port}"
            ))
        })
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
});

cell_test!(wildcards_ports_and_exceptions, |t| {
    let t = harness_with_names(t);
    let port = web_server();
    let other_port = web_server();
    let mut rules = allow(&format!("*.wild.test,allowed.test:{port}"));
    rules.extend(["--network-deny".into(), "secret.wild.test".into()]);
    let fetch = |host: &str, port: u16| {
        format!("curl -s -o /dev/null -w '{host}:{port} %{{http_code}}\\n' http://{host}:{port}/;")
    };
    let script = [
        fetch("a.wild.test", port),
        fetch("wild.test", port),
        fetch("secret.wild.test", port),
        fetch("allowed.test", port),
        fetch("allowed.test", other_port),
    ]
    .concat();
    let run = t.run_json(&flags(&rules), &script);
    let expected = format!(
        "a.wild.test:{port} 200\nwild.test:{port} 403\nsecret.wild.test:{port} 403\n\
         allowed.test:{port} 200\nallowed.test:{other_port} 403\n"
    );
    assert_eq!(run.stdout(), expected, "{run:#?}");
    let denied = run.json["network_denied"].to_string();
    assert!(
        denied.contains("network.deny") || denied.contains("denied"),
        "{denied}"
    );
});

cell_test!(
    a_name_resolving_to_a_private_address_is_refused_unless_allowed,
    |t| {
        let t = harness_with_names(t);
        let port = web_server();
        let script = format!("curl -sS -w '%{{http_code}}\\n' http://allowed.test:{port}/");
        let run = t.run_json(&["--network", "allow:allowed.test"], &script);
        assert!(run.stdout().ends_with("403\n"), "{run:#?}");
        assert!(run.stdout().contains("private"), "{run:#?}");
        assert!(
            run.json["network_denied"].to_string().contains("127.0.0.1"),
            "{run:#?}"
        );
        // The same with the policy's allow_private.
        let policy = t.write(
            "policy.toml",
            "[network]\nallow = [\"allowed.test\"]\nallow_private = true\n",
        );
        let run = t.run_json(&["--policy", policy.to_str().unwrap()], &script);
        assert!(run.stdout().ends_with("200\n"), "{run:#?}");
    }
);

cell_test!(connections_that_bypass_the_proxy_fail, |t| {
    let t = harness_with_names(t);
    let port = web_server();
    let rules = allow("allowed.test");
    // The host's server directly (its port is not on the cell's own loopback), an address
    // with no route (TEST-NET: never leaves this machine), and the proxy variables ignored.
    let script = format!(
        r#"python3 -c '
import socket
for address in [("127.0.0.1", {port}), ("192.0.2.1", 80)]:
    try:
        socket.create_connection(address, timeout=5)
        print("reached", address)
    except OSError as error:
        print("refused", address[0], error.errno)
'; curl -sS --noproxy '*' --max-time 5 http://allowed.test:{port}/ || echo curl-failed"#
    );
    let run = t.run_json(&flags(&rules), &script);
    let out = run.stdout();
    assert!(!out.contains("reached"), "{run:#?}");
    assert!(out.contains("refused 127.0.0.1 111"), "{run:#?}"); // ECONNREFUSED
    assert!(out.contains("refused 192.0.2.1 101"), "{run:#?}"); // ENETUNREACH
    assert!(out.contains("curl-failed"), "{run:#?}");
});

cell_test!(
    a_workspace_reports_refusals_in_exec_and_the_audit_log,
    |t| {
        let t = harness_with_names(t);
        let port = web_server();
        let rules = allow("allowed.test");
        let mut create = vec!["ws", "create", "--name", "net"];
        create.extend(flags(&rules));
        t.ok(&create);
        let fetch = |host: &str| format!("curl -s -w ' %{{http_code}}' http://{host}:{port}/");
        let reached = t.exec_json("net", &[], &fetch("allowed.test"));
        assert_eq!(
            reached.stdout(),
            format!("hello allowed.test:{port}\n 200"),
            "{reached:#?}"
        );
        assert!(reached.json.get("network_denied").is_none(), "{reached:#?}");
        let refused = t.exec_json("net", &[], &fetch("other.test"));
        assert!(refused.stdout().ends_with(" 403"), "{refused:#?}");
        let denied = refused.json["network_denied"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(denied.len(), 1, "{refused:#?}");
        assert_eq!(denied[0]["host"], "other.test");
        let audit = t.ok(&["audit", "net", "--json"]);
        assert!(
            audit.contains("network.denied") && audit.contains("other.test"),
            "{audit}"
        );
        // The proxy lives with the cell: after a stop and a start it serves the new cell.
        t.ok(&["ws", "stop", "net"]);
        let again = t.exec_json("net", &[], &fetch("allowed.test"));
        assert!(again.stdout().ends_with(" 200"), "{again:#?}");
    }
);

#[test]
fn a_gigabyte_through_the_proxy_arrives_intact() {
    let t = harness_with_names(Harness::new(User::Invoker));
    let port = web_server();
    let rules = allow("allowed.test");
    let total: usize = 1 << 30;
    let script = format!(
        r#"curl -sS --proxytunnel http://allowed.test:{port}/big?{total} | python3 -c '
import sys
pattern = bytes(i % {PATTERN} for i in range({PATTERN} * 4096))
seen = 0
source = sys.stdin.buffer
while True:
    chunk = source.read(len(pattern))
    if not chunk:
        break
    offset = seen % {PATTERN}
    expected = (pattern[offset:] + pattern[:offset])[:len(chunk)]
    if chunk != expected:
        sys.exit("corrupt at byte %d" % seen)
    seen += len(chunk)
print(seen)'"#
    );
    let mut flags = flags(&rules);
    flags.extend(["--timeout", "300"]);
    let run = t.run_json(&flags, &script);
    run.assert_success();
    assert_eq!(run.stdout(), format!("{total}\n"), "{run:#?}");
}

#[test]
fn bad_allowlists_are_refused_with_one_line() {
    let t = Harness::new(User::Invoker);
    let policy = t.write("p.toml", "[network]\nmode = \"allow\"\n");
    let policy = policy.to_str().unwrap();
    for (flags, needle) in [
        (&["--network", "allow:"][..], "at least one host"),
        (&["--network", "allow:exa mple.com"], "not a host pattern"),
        (&["--network", "allow:x.com:0"], "port"),
        (&["--network-deny", "x.com"], "network.deny"),
        (&["--policy", policy], "network.allow"),
    ] {
        let done = t.call(&[&["run"][..], flags, &["--", "true"]].concat());
        assert_eq!(done.status, 125, "{flags:?}: {done:?}");
        assert_eq!(done.stderr.trim().lines().count(), 1, "{flags:?}: {done:?}");
        assert!(done.stderr.contains(needle), "{flags:?}: {done:?}");
    }
}

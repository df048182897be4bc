//! `burrow serve`, `burrow token` and `burrow mcp` end to end: a real server on a port of
//! 127.0.0.1 chosen by the kernel, spoken to with plain HTTP/1.1 over a socket, as the invoking
//! user and as an unprivileged one. (The Python client, MCP SDK and LangChain suite in
//! python/tests drives the same server much further; see `python.rs`.)

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::cell_test;
use crate::harness::Harness;

/// A running `burrow serve`, killed if a test fails before it stops it.
struct Server {
    child: Child,
    address: String,
}

impl Server {
    fn start(t: &Harness) -> Server {
        let mut child = t
            .burrow(["serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn burrow serve");
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        stderr.read_line(&mut line).unwrap();
        let address = line
            .split("http://")
            .nth(1)
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("burrow serve said: {line}"))
            .to_owned();
        // Keep draining its log so that it never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        Server { child, address }
    }

    /// One request; returns the status and the body parsed as JSON (`Null` when empty).
    fn request(&self, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> (u16, Value) {
        self.request_to(&self.address, method, path, token, body)
    }

    /// One request naming `host` in its `Host` header.
    fn request_to(
        &self,
        host: &str,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: &[u8],
    ) -> (u16, Value) {
        let mut stream = TcpStream::connect(&self.address).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .unwrap();
        let auth = token.map_or(String::new(), |t| format!("Authorization: Bearer {t}\r\n"));
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {host}\r\n{auth}Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let text = String::from_utf8_lossy(&answer);
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("not an HTTP answer: {text}"));
        let body = text.split_once("\r\n\r\n").map_or("", |(_, body)| body);
        let json = if body.trim().is_empty() {
            Value::Null
        } else {
            // Not every answer is JSON (rmcp's refusals are text): those are kept as a string.
            serde_json::from_str(body).unwrap_or_else(|_| Value::String(body.to_owned()))
        };
        (status, json)
    }

    fn call(&self, method: &str, path: &str, token: &str, body: Value) -> (u16, Value) {
        let body = match body {
            Value::Null => Vec::new(),
            body => body.to_string().into_bytes(),
        };
        self.request(method, path, Some(token), &body)
    }

    /// SIGTERM, and the exit status.
    fn stop(mut self) -> i32 {
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        // Drop's kill finds the child reaped and does nothing.
        self.child.wait().unwrap().code().unwrap_or(-1)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn token(t: &Harness, tenant: &str) -> String {
    t.ok(&["token", "create", "--tenant", tenant])
        .trim()
        .to_owned()
}

/// An error answer is `{"error": one line, "code"}`.
#[track_caller]
fn assert_error(answer: &(u16, Value), status: u16, code: &str) {
    assert_eq!(answer.0, status, "{answer:?}");
    assert_eq!(answer.1["code"], code, "{answer:?}");
    let message = answer.1["error"].as_str().unwrap();
    assert!(!message.is_empty() && !message.contains('\n'), "{answer:?}");
}

cell_test!(a_tenant_runs_commands_and_keeps_workspaces, |mut t| {
    let alpha = token(&t, "alpha");
    // A variable the local user's commands inherit by default: a tenant's must not.
    t.env.push(("TZ".into(), "Server/Private".into()));
    let server = Server::start(&t);
    assert_eq!(server.request("GET", "/healthz", None, b"").0, 200);

    let (status, run) = server.call(
        "POST",
        "/v1/run",
        &alpha,
        json!({"command": "echo $((6*7))"}),
    );
    assert_eq!(
        (status, run["exit_code"].clone(), run["stdout"].clone()),
        (200, json!(0), json!("42\n"))
    );

    let (status, created) = server.call("POST", "/v1/workspaces", &alpha, json!({"name": "w"}));
    assert_eq!(
        (status, created["name"].clone()),
        (201, json!("w")),
        "{created}"
    );
    let exec = |script: &str| {
        server.call(
            "POST",
            "/v1/workspaces/w/exec",
            &alpha,
            json!({"command": script}),
        )
    };
    let (status, wrote) = exec("echo kept > f && pwd");
    assert_eq!(
        (status, wrote["stdout"].clone()),
        (200, json!("/workspace\n")),
        "{wrote}"
    );
    assert_eq!(exec("cat f").1["stdout"], "kept\n");
    let environment = exec("env").1["stdout"].as_str().unwrap().to_owned();
    assert!(
        !environment.contains("Server/Private"),
        "the server's environment leaked: {environment}"
    );
    assert!(environment.contains("PATH="), "{environment}");

    // The workspace is the tenant's, not the local user's; the operator sees it with --all.
    let listed: Value = serde_json::from_str(&t.ok(&["ws", "list", "--json"])).unwrap();
    assert_eq!(
        listed,
        json!([]),
        "a tenant's workspace showed up for the local user"
    );
    let everything: Value =
        serde_json::from_str(&t.ok(&["ws", "list", "--all", "--json"])).unwrap();
    assert_eq!(everything[0]["name"], "alpha~w");

    let (status, _) = server.call("DELETE", "/v1/workspaces/w", &alpha, Value::Null);
    assert_eq!(status, 204);
    assert_error(&exec("true"), 404, "not_found");
    assert_eq!(server.stop(), 0, "burrow serve should exit 0 on SIGTERM");
});

cell_test!(tenants_cannot_see_or_touch_each_other, |t| {
    let alpha = token(&t, "alpha");
    let beta = token(&t, "beta");
    let server = Server::start(&t);
    server.call("POST", "/v1/workspaces", &alpha, json!({"name": "mine"}));
    let marker = json!({"command": "echo v1 > marker"});
    assert_eq!(
        server
            .call("POST", "/v1/workspaces/mine/exec", &alpha, marker)
            .0,
        200
    );

    // Every way in for the other tenant is 404, exactly like a workspace that does not exist.
    let attempts = [
        ("GET", "/v1/workspaces/mine", Value::Null),
        (
            "POST",
            "/v1/workspaces/mine/exec",
            json!({"command": "echo v2 > marker"}),
        ),
        (
            "PUT",
            "/v1/workspaces/mine/secrets/S",
            json!({"value": "x"}),
        ),
        ("POST", "/v1/workspaces/mine/reset", json!({})),
        ("DELETE", "/v1/workspaces/mine", Value::Null),
    ];
    for (method, path, body) in attempts {
        let missing = server.call(
            method,
            &path.replace("mine", "nothing"),
            &beta,
            body.clone(),
        );
        let answer = server.call(method, path, &beta, body);
        assert_error(&answer, 404, "not_found");
        assert_eq!(
            missing.1["error"]
                .as_str()
                .map(|m| m.replace("nothing", "mine")),
            answer.1["error"].as_str().map(str::to_owned)
        );
    }
    let (_, listed) = server.call("GET", "/v1/workspaces", &beta, Value::Null);
    assert_eq!(listed, json!([]));
    // Beta may use the same name for its own workspace.
    assert_eq!(
        server
            .call("POST", "/v1/workspaces", &beta, json!({"name": "mine"}))
            .0,
        201
    );

    // Nothing of alpha's changed.
    let (_, read) = server.call(
        "POST",
        "/v1/workspaces/mine/exec",
        &alpha,
        json!({"command": "cat marker; ls"}),
    );
    assert_eq!(read["stdout"], "v1\nmarker\n");
    let (_, secrets) = server.call("GET", "/v1/workspaces/mine/secrets", &alpha, Value::Null);
    assert_eq!(secrets, json!([]));
    assert_eq!(server.stop(), 0);
});

cell_test!(requests_without_a_live_token_are_refused, |t| {
    let alpha = token(&t, "alpha");
    let server = Server::start(&t);
    assert_error(
        &server.request("GET", "/v1/workspaces", None, b""),
        401,
        "unauthorized",
    );
    assert_error(
        &server.request("GET", "/v1/workspaces", Some("burrow_00"), b""),
        401,
        "unauthorized",
    );
    assert_error(
        &server.request("POST", "/mcp", None, b"{}"),
        401,
        "unauthorized",
    );
    assert_eq!(
        server.request("GET", "/v1/workspaces", Some(&alpha), b"").0,
        200
    );

    let listed: Value = serde_json::from_str(&t.ok(&["token", "list", "--json"])).unwrap();
    let id = listed[0]["id"].as_str().unwrap().to_owned();
    assert!(
        !t.ok(&["token", "list"]).contains(&alpha),
        "token list showed a token"
    );
    t.ok(&["token", "revoke", &id]);
    let refused = server.request(
        "POST",
        "/v1/workspaces",
        Some(&alpha),
        br#"{"name": "late"}"#,
    );
    assert_error(&refused, 401, "unauthorized");
    t.fails(&["token", "revoke", &id], "no live token");
    assert_eq!(server.stop(), 0);
    // Nothing was made by the refused request.
    assert!(t.ok(&["token", "list"]).contains("revoked"));
});

cell_test!(bad_requests_are_one_line_json_errors, |t| {
    let alpha = token(&t, "alpha");
    let server = Server::start(&t);
    let oversize = vec![b' '; (16 << 20) + 1];
    assert_error(
        &server.request("POST", "/v1/run", Some(&alpha), &oversize),
        413,
        "too_large",
    );
    assert_error(
        &server.request("POST", "/v1/run", Some(&alpha), b"{\"command\": }"),
        400,
        "invalid",
    );
    assert_error(
        &server.call(
            "POST",
            "/v1/run",
            &alpha,
            json!({"command": "true", "nope": 1}),
        ),
        400,
        "invalid",
    );
    assert_error(
        &server.call("POST", "/v1/workspaces", &alpha, json!({"name": "../x"})),
        400,
        "invalid",
    );
    assert_error(
        &server.call("GET", "/v1/nothing", &alpha, Value::Null),
        404,
        "not_found",
    );
    assert_error(
        &server.call("POST", "/v1/workspaces", &alpha, json!({"timeout": 0})),
        400,
        "invalid",
    );
    // The server goes on.
    assert_eq!(
        server
            .call("POST", "/v1/run", &alpha, json!({"command": "true"}))
            .0,
        200
    );
    let (_, listed) = server.call("GET", "/v1/workspaces", &alpha, Value::Null);
    assert_eq!(
        listed,
        json!([]),
        "a refused request left a workspace behind"
    );
    assert_eq!(server.stop(), 0);
});

#[test]
fn serve_refuses_a_non_loopback_address_unless_told() {
    let t = Harness::new(crate::harness::User::Invoker);
    let done = t.fails(&["serve", "--listen", "0.0.0.0:0"], "--allow-non-loopback");
    assert_eq!(done.stderr.trim().lines().count(), 1, "{done:?}");
}

#[test]
fn a_token_needs_a_valid_tenant_name() {
    let t = Harness::new(crate::harness::User::Invoker);
    t.fails(
        &["token", "create", "--tenant", "a/b"],
        "not a valid tenant name",
    );
    assert_eq!(t.ok(&["token", "list", "--json"]).trim(), "[]");
}

cell_test!(mcp_over_http_refuses_foreign_host_names, |t| {
    let alpha = token(&t, "alpha");
    let server = Server::start(&t);
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
    })
    .to_string();
    let port = server.address.rsplit(':').next().unwrap().to_owned();
    let (status, _) = server.request("POST", "/mcp", Some(&alpha), initialize.as_bytes());
    assert_eq!(status, 200, "a loopback Host should be served");
    // A page that rebinds its own DNS name to 127.0.0.1 still sends its own name.
    let rebound = format!("attacker.example:{port}");
    let (status, answer) = server.request_to(
        &rebound,
        "POST",
        "/mcp",
        Some(&alpha),
        initialize.as_bytes(),
    );
    assert!(
        (400..500).contains(&status),
        "a foreign Host was served: {status} {answer}"
    );
    assert_eq!(server.stop(), 0);
});

cell_test!(
    a_tenants_allowlist_never_reaches_private_addresses,
    |mut t| {
        let alpha = token(&t, "alpha");
        // The name maps to the server's own loopback, where its services listen.
        t.env.push((
            "BURROW_PROXY_RESOLVE".into(),
            "internal.test=127.0.0.1".into(),
        ));
        let server = Server::start(&t);
        let port = server.address.rsplit(':').next().unwrap().to_owned();
        let fetch = format!("curl -s -w ' %{{http_code}}' http://internal.test:{port}/healthz");
        let (status, run) = server.call(
            "POST",
            "/v1/run",
            &alpha,
            json!({"command": fetch, "allow": ["internal.test"]}),
        );
        assert_eq!(status, 200, "{run}");
        assert!(run["stdout"].as_str().unwrap().ends_with(" 403"), "{run}");
        assert!(
            run["network_denied"][0]["reason"]
                .as_str()
                .unwrap()
                .contains("private"),
            "{run}"
        );

        let (status, _) = server.call(
            "POST",
            "/v1/workspaces",
            &alpha,
            json!({"name": "net", "allow": ["internal.test"]}),
        );
        assert_eq!(status, 201);
        let (_, exec) = server.call(
            "POST",
            "/v1/workspaces/net/exec",
            &alpha,
            json!({"command": fetch}),
        );
        assert!(exec["stdout"].as_str().unwrap().ends_with(" 403"), "{exec}");
        assert_eq!(exec["network_denied"][0]["host"], "internal.test", "{exec}");

        let both = server.call(
            "POST",
            "/v1/run",
            &alpha,
            json!({"command": "true", "network": "loopback", "allow": ["x.org"]}),
        );
        assert_error(&both, 400, "invalid");
        let bad = server.call(
            "POST",
            "/v1/run",
            &alpha,
            json!({"command": "true", "allow": ["not a host"]}),
        );
        assert_error(&bad, 400, "invalid");
        assert_eq!(server.stop(), 0);
    }
);

//! What the proxy refuses over HTTP, how it says so, and what it records.

use std::net::TcpListener;

use crate::support::{LOOPBACK, Response, TestProxy, echo_server, local_names, round_trip, rules};

/// Checks a refusal's answer, and that exactly one denial was recorded for it.
fn assert_refused(proxy: &TestProxy, response: &Response, host: &str, port: u16, reason: &str) {
    assert_eq!(response.status_line, "HTTP/1.1 403 Forbidden");
    assert_eq!(response.header("Content-Type"), Some("text/plain"));
    assert_eq!(response.header("Connection"), Some("close"));
    let shown = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    assert_eq!(response.header("X-Burrow-Denied"), Some(shown.as_str()));
    let body = response.body_text();
    assert!(body.starts_with(&format!("burrow: {shown} ")), "{body}");
    assert!(body.ends_with('\n') && body.lines().count() == 1, "{body}");
    let denials = proxy.denials.all();
    assert_eq!(denials.len(), 1, "{denials:?}");
    assert_eq!(denials[0].host, host);
    assert_eq!(denials[0].port, port);
    assert_eq!(denials[0].reason, reason);
    assert!(denials[0].at_ms > 0);
}

#[test]
fn a_name_off_the_allowlist_gets_403_naming_the_allowlist() {
    let proxy = TestProxy::start(
        rules(&["pypi.org", "*.pythonhosted.org"], &[], false),
        local_names(&["evil.example"]),
    );
    let response = proxy.http_connect("evil.example:443").unwrap_err();
    assert_refused(
        &proxy,
        &response,
        "evil.example",
        443,
        "not on the allowlist",
    );
    assert_eq!(
        response.body_text(),
        "burrow: evil.example:443 is not on this sandbox's network allowlist \
         (allowed: pypi.org, *.pythonhosted.org)\n"
    );
}

#[test]
fn a_plain_http_request_off_the_allowlist_gets_403() {
    let proxy = TestProxy::start(rules(&["pypi.org"], &[], false), local_names(&[]));
    let response =
        proxy.exchange(b"GET http://evil.example/steal HTTP/1.1\r\nHost: evil.example\r\n\r\n");
    assert_refused(
        &proxy,
        &response,
        "evil.example",
        80,
        "not on the allowlist",
    );
}

#[test]
fn a_wildcard_does_not_allow_its_own_name_or_lookalikes() {
    let proxy = TestProxy::start(
        rules(&["*.example.test"], &[], true),
        local_names(&["example.test", "badexample.test"]),
    );
    let response = proxy.http_connect("example.test:443").unwrap_err();
    assert_refused(
        &proxy,
        &response,
        "example.test",
        443,
        "not on the allowlist",
    );
    let response = proxy.http_connect("badexample.test:443").unwrap_err();
    assert_eq!(response.status(), 403);
    assert_eq!(proxy.denials.all().len(), 2);
}

#[test]
fn a_port_rule_refuses_other_ports() {
    let proxy = TestProxy::start(
        rules(&["allowed.test:443"], &[], true),
        local_names(&["allowed.test"]),
    );
    let response = proxy.http_connect("allowed.test:8443").unwrap_err();
    assert_refused(
        &proxy,
        &response,
        "allowed.test",
        8443,
        "not on the allowlist",
    );
}

#[test]
fn deny_carves_an_exception_out_of_allow() {
    let echo = echo_server();
    let proxy = TestProxy::start(
        rules(&["*.example.test"], &["secret.example.test"], true),
        local_names(&["www.example.test", "secret.example.test"]),
    );
    let response = proxy
        .http_connect(&format!("secret.example.test:{}", echo.port()))
        .unwrap_err();
    assert_refused(
        &proxy,
        &response,
        "secret.example.test",
        echo.port(),
        "denied by network.deny",
    );
    assert!(
        response.body_text().contains("network.deny"),
        "{}",
        response.body_text()
    );
    let tunnel = proxy
        .http_connect(&format!("www.example.test:{}", echo.port()))
        .unwrap();
    assert_eq!(round_trip(tunnel, b"www"), b"www");
}

#[test]
fn an_allowed_name_resolving_to_loopback_is_refused_without_allow_private() {
    let echo = echo_server();
    let proxy = TestProxy::start(
        rules(&["allowed.test"], &[], false),
        local_names(&["allowed.test"]),
    );
    let response = proxy
        .http_connect(&format!("allowed.test:{}", echo.port()))
        .unwrap_err();
    assert_refused(
        &proxy,
        &response,
        "allowed.test",
        echo.port(),
        "resolves to a private address (127.0.0.1)",
    );
    let body = response.body_text();
    assert!(
        body.contains("private address (127.0.0.1)") && body.contains("allow_private"),
        "{body}"
    );
}

#[test]
fn a_private_ip_literal_is_refused_even_when_listed() {
    let echo = echo_server();
    let proxy = TestProxy::start(rules(&["127.0.0.1"], &[], false), local_names(&[]));
    let response = proxy
        .http_connect(&format!("127.0.0.1:{}", echo.port()))
        .unwrap_err();
    assert_refused(
        &proxy,
        &response,
        "127.0.0.1",
        echo.port(),
        "a private address (127.0.0.1)",
    );
}

#[test]
fn ip_literals_are_checked_against_the_rules_as_written() {
    let proxy = TestProxy::allowing_local("allowed.test");
    let response = proxy.http_connect("[::1]:443").unwrap_err();
    assert_refused(&proxy, &response, "::1", 443, "not on the allowlist");
}

#[test]
fn a_malformed_request_gets_400_and_the_proxy_keeps_serving() {
    let echo = echo_server();
    let proxy = TestProxy::allowing_local("allowed.test");
    for malformed in [
        &b"this is not http\r\n\r\n"[..],
        b"GET /relative HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
        b"CONNECT allowed.test HTTP/1.1\r\n\r\n",
        b"GET http://allowed.test/ HTTP/1.1\r\nno colon\r\n\r\n",
        b"GET https://allowed.test/ HTTP/1.1\r\n\r\n",
        b"\x00\xff\xfe garbage\n\n",
    ] {
        let response = proxy.exchange(malformed);
        assert_eq!(
            response.status_line, "HTTP/1.1 400 Bad Request",
            "{malformed:?}"
        );
        assert!(response.body_text().starts_with("burrow: "));
    }
    assert!(proxy.denials.all().is_empty());
    let tunnel = proxy
        .http_connect(&format!("allowed.test:{}", echo.port()))
        .unwrap();
    assert_eq!(round_trip(tunnel, b"still serving"), b"still serving");
}

#[test]
fn a_head_longer_than_64_kib_gets_431() {
    let proxy = TestProxy::start(rules(&["allowed.test"], &[], true), local_names(&[]));
    let mut request = b"GET http://allowed.test/ HTTP/1.1\r\n".to_vec();
    request.extend_from_slice(format!("X-Padding: {}\r\n\r\n", "a".repeat(70 * 1024)).as_bytes());
    let response = proxy.exchange(&request);
    assert_eq!(
        response.status_line,
        "HTTP/1.1 431 Request Header Fields Too Large"
    );
}

#[test]
fn a_server_that_refuses_the_connection_gets_502_and_no_denial() {
    let closed_port = {
        let listener = TcpListener::bind((LOOPBACK, 0)).unwrap();
        listener.local_addr().unwrap().port()
    };
    let proxy = TestProxy::allowing_local("allowed.test");
    let response = proxy
        .http_connect(&format!("allowed.test:{closed_port}"))
        .unwrap_err();
    assert_eq!(response.status_line, "HTTP/1.1 502 Bad Gateway");
    assert_eq!(response.header("X-Burrow-Denied"), None);
    assert!(proxy.denials.all().is_empty());
}

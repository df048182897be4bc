//! HTTP CONNECT tunnels to allowed targets.

use std::io::{Read, Write};

use crate::support::{TestProxy, echo_server, local_names, round_trip, rules};

#[test]
fn connect_to_an_allowed_name_relays_bytes_both_ways() {
    let echo = echo_server();
    let proxy = TestProxy::allowing_local("allowed.test");
    let tunnel = proxy
        .http_connect(&format!("allowed.test:{}", echo.port()))
        .unwrap();
    assert_eq!(
        round_trip(tunnel, b"hello through the tunnel"),
        b"hello through the tunnel"
    );
    assert!(proxy.denials.all().is_empty());
}

#[test]
fn bytes_sent_right_after_the_connect_head_reach_the_server() {
    let echo = echo_server();
    let proxy = TestProxy::allowing_local("allowed.test");
    let mut stream = proxy.connect();
    // One write: the proxy reads the head and the first bytes of the tunnel together.
    write!(
        stream,
        "CONNECT allowed.test:{} HTTP/1.1\r\nHost: allowed.test\r\n\r\nearly bytes",
        echo.port()
    )
    .unwrap();
    let head = crate::support::read_head(&mut stream);
    assert_eq!(head, "HTTP/1.1 200 Connection established\r\n\r\n");
    let mut echoed = [0; 11];
    stream.read_exact(&mut echoed).unwrap();
    assert_eq!(&echoed, b"early bytes");
}

#[test]
fn a_wildcard_allows_names_below_it() {
    let echo = echo_server();
    let proxy = TestProxy::start(
        rules(&["*.example.test"], &[], true),
        local_names(&["api.example.test", "deep.api.example.test"]),
    );
    for name in [
        "api.example.test",
        "deep.api.example.test",
        "API.Example.Test",
    ] {
        let tunnel = proxy
            .http_connect(&format!("{name}:{}", echo.port()))
            .unwrap();
        assert_eq!(round_trip(tunnel, name.as_bytes()), name.as_bytes());
    }
}

#[test]
fn a_port_rule_allows_its_port() {
    let echo = echo_server();
    let proxy = TestProxy::start(
        rules(&[&format!("allowed.test:{}", echo.port())], &[], true),
        local_names(&["allowed.test"]),
    );
    let tunnel = proxy
        .http_connect(&format!("allowed.test:{}", echo.port()))
        .unwrap();
    assert_eq!(round_trip(tunnel, b"port"), b"port");
}

#[test]
fn a_name_resolving_to_loopback_is_reached_when_private_addresses_are_allowed() {
    let echo = echo_server();
    let proxy = TestProxy::allowing_local("allowed.test");
    let tunnel = proxy
        .http_connect(&format!("allowed.test:{}", echo.port()))
        .unwrap();
    assert_eq!(round_trip(tunnel, b"private ok"), b"private ok");
}

#[test]
fn an_allowed_ip_literal_is_reached_when_private_addresses_are_allowed() {
    let echo = echo_server();
    let proxy = TestProxy::start(rules(&["127.0.0.1"], &[], true), local_names(&[]));
    let tunnel = proxy
        .http_connect(&format!("127.0.0.1:{}", echo.port()))
        .unwrap();
    assert_eq!(round_trip(tunnel, b"literal"), b"literal");
}

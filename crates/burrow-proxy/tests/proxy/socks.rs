//! SOCKS5 clients.

use std::io::{Read, Write};

use crate::support::{
    TestProxy, echo_server, local_names, read_socks_reply, round_trip, rules, socks_name,
};

#[test]
fn socks_connect_to_an_allowed_name_relays() {
    let echo = echo_server();
    let proxy = TestProxy::allowing_local("allowed.test");
    let (code, stream) = proxy.socks_connect(&socks_name("allowed.test", echo.port()));
    assert_eq!(code, 0x00);
    assert_eq!(round_trip(stream, b"over socks"), b"over socks");
    assert!(proxy.denials.all().is_empty());
}

#[test]
fn socks_connect_to_a_name_off_the_allowlist_is_refused_with_code_2() {
    let proxy = TestProxy::start(
        rules(&["allowed.test"], &[], true),
        local_names(&["evil.test"]),
    );
    let (code, _) = proxy.socks_connect(&socks_name("evil.test", 443));
    assert_eq!(code, 0x02);
    let denials = proxy.denials.all();
    assert_eq!(denials.len(), 1);
    assert_eq!(
        (denials[0].host.as_str(), denials[0].port),
        ("evil.test", 443)
    );
    assert_eq!(denials[0].reason, "not on the allowlist");
}

#[test]
fn socks_connect_to_a_private_address_is_refused_with_code_2() {
    let echo = echo_server();
    let proxy = TestProxy::start(
        rules(&["allowed.test"], &[], false),
        local_names(&["allowed.test"]),
    );
    let (code, _) = proxy.socks_connect(&socks_name("allowed.test", echo.port()));
    assert_eq!(code, 0x02);
    assert_eq!(
        proxy.denials.all()[0].reason,
        "resolves to a private address (127.0.0.1)"
    );
}

#[test]
fn socks_connect_to_an_allowed_ipv4_address_relays() {
    let echo = echo_server();
    let proxy = TestProxy::start(rules(&["127.0.0.1"], &[], true), local_names(&[]));
    let mut address = vec![1, 127, 0, 0, 1];
    address.extend_from_slice(&echo.port().to_be_bytes());
    let (code, stream) = proxy.socks_connect(&address);
    assert_eq!(code, 0x00);
    assert_eq!(round_trip(stream, b"v4"), b"v4");
}

#[test]
fn socks_connect_to_an_ipv6_address_off_the_allowlist_is_refused() {
    let proxy = TestProxy::start(rules(&["allowed.test"], &[], true), local_names(&[]));
    let mut address = vec![4];
    address.extend_from_slice(&std::net::Ipv6Addr::LOCALHOST.octets());
    address.extend_from_slice(&443_u16.to_be_bytes());
    let (code, _) = proxy.socks_connect(&address);
    assert_eq!(code, 0x02);
    assert_eq!(proxy.denials.all()[0].host, "::1");
}

#[test]
fn a_name_that_cannot_be_resolved_gets_code_4_and_a_denial() {
    // A NUL byte fails before any lookup is attempted, so nothing leaves the machine.
    let proxy = TestProxy::start(rules(&["*.test"], &[], true), local_names(&[]));
    let (code, _) = proxy.socks_connect(&socks_name("bad\0name.test", 443));
    assert_eq!(code, 0x04);
    let denials = proxy.denials.all();
    assert_eq!(denials.len(), 1);
    assert_eq!(denials[0].reason, "cannot be resolved");
}

#[test]
fn a_client_that_wants_authentication_is_turned_away() {
    let proxy = TestProxy::start(rules(&["allowed.test"], &[], true), local_names(&[]));
    let mut stream = proxy.connect();
    stream.write_all(&[5, 1, 2]).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    assert_eq!(answer, [5, 0xFF]);
}

#[test]
fn commands_other_than_connect_get_code_7() {
    let proxy = TestProxy::start(rules(&["allowed.test"], &[], true), local_names(&[]));
    let mut stream = proxy.connect();
    stream.write_all(&[5, 2, 0, 2]).unwrap();
    let mut choice = [0; 2];
    stream.read_exact(&mut choice).unwrap();
    assert_eq!(choice, [5, 0]);
    let mut bind = vec![5, 2, 0];
    bind.extend_from_slice(&socks_name("allowed.test", 80));
    stream.write_all(&bind).unwrap();
    assert_eq!(read_socks_reply(&mut stream), 0x07);
    assert!(proxy.denials.all().is_empty());
}

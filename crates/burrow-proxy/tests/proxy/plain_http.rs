//! Plain HTTP requests with an absolute URI, forwarded in origin form.

use crate::support::{TestProxy, http_server};

const RESPONSE: &str = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";

#[test]
fn an_absolute_form_get_is_forwarded_in_origin_form_and_answered() {
    let (server, requests) = http_server(RESPONSE);
    let proxy = TestProxy::allowing_local("allowed.test");
    let port = server.port();
    let response = proxy.exchange(
        format!(
            "GET http://allowed.test:{port}/simple/pkg/?page=2 HTTP/1.1\r\n\
             Host: allowed.test:{port}\r\n\
             User-Agent: test/1\r\n\
             Proxy-Connection: keep-alive\r\n\
             Proxy-Authorization: Basic dXNlcjpwYXNz\r\n\
             Connection: keep-alive\r\n\
             Accept: */*\r\n\r\n"
        )
        .as_bytes(),
    );
    assert_eq!(response.status(), 200);
    assert_eq!(response.body, b"hello");
    let forwarded = String::from_utf8(requests.recv().unwrap()).unwrap();
    assert_eq!(
        forwarded,
        format!(
            "GET /simple/pkg/?page=2 HTTP/1.1\r\n\
             Host: allowed.test:{port}\r\n\
             User-Agent: test/1\r\n\
             Accept: */*\r\n\
             Connection: close\r\n\r\n"
        )
    );
}

#[test]
fn a_body_sent_with_the_head_is_forwarded() {
    let (server, requests) = http_server(RESPONSE);
    let proxy = TestProxy::allowing_local("allowed.test");
    let port = server.port();
    let response = proxy.exchange(
        format!(
            "POST http://allowed.test:{port}/upload HTTP/1.0\r\nContent-Length: 11\r\n\r\nhello world"
        )
        .as_bytes(),
    );
    assert_eq!(response.status(), 200);
    let forwarded = String::from_utf8(requests.recv().unwrap()).unwrap();
    assert_eq!(
        forwarded,
        format!(
            "POST /upload HTTP/1.0\r\nHost: allowed.test:{port}\r\nContent-Length: 11\r\n\
             Connection: close\r\n\r\nhello world"
        )
    );
}

#[test]
fn the_host_header_is_the_uris_authority() {
    let (server, requests) = http_server(RESPONSE);
    let proxy = TestProxy::allowing_local("allowed.test");
    let port = server.port();
    let response = proxy.exchange(
        format!("GET http://allowed.test:{port} HTTP/1.1\r\nHost: other.test\r\n\r\n").as_bytes(),
    );
    assert_eq!(response.status(), 200);
    let forwarded = String::from_utf8(requests.recv().unwrap()).unwrap();
    assert!(
        forwarded.starts_with(&format!("GET / HTTP/1.1\r\nHost: allowed.test:{port}\r\n")),
        "{forwarded}"
    );
    assert!(!forwarded.contains("other.test"), "{forwarded}");
}

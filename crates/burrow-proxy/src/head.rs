//! HTTP/1.x request heads: reading one with a bounded buffer, parsing it, and rewriting a proxy
//! request into the request its server expects.

use std::io;
use std::net::TcpStream;

use crate::deadline::Deadline;

/// The longest head read, blank line included.
pub(crate) const MAX_HEAD: usize = 64 * 1024;

/// Why no request could be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeadError {
    #[error("the request head is longer than {MAX_HEAD} bytes")]
    TooLarge,
    #[error("malformed request: {0}")]
    Malformed(&'static str),
    #[error("the client left before finishing its request")]
    Closed,
    #[error("the client did not finish its request in time")]
    TimedOut,
    #[error("cannot read the request: {0}")]
    Read(io::Error),
}

/// What a client sent: its head, and the bytes it sent after it (the start of a body, or a TLS
/// handshake after `CONNECT`), which belong to the server.
#[derive(Debug)]
pub(crate) struct Received {
    /// The request line and header lines, up to the line end before the blank line.
    pub head: Vec<u8>,
    pub rest: Vec<u8>,
}

/// Reads until the blank line that ends a head, at most [`MAX_HEAD`] bytes, by `deadline`.
pub(crate) fn read_head(stream: &TcpStream, deadline: Deadline) -> Result<Received, HeadError> {
    let mut buffer = vec![0; MAX_HEAD];
    let mut filled = 0;
    loop {
        if filled == buffer.len() {
            return Err(HeadError::TooLarge);
        }
        let read = match deadline.read(stream, &mut buffer[filled..]) {
            Ok(0) => return Err(HeadError::Closed),
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::TimedOut => {
                return Err(HeadError::TimedOut);
            }
            Err(error) => return Err(HeadError::Read(error)),
        };
        // The end may straddle the previous read: look again at its last three bytes.
        let searched_from = filled.saturating_sub(3);
        filled += read;
        if let Some((head_length, end)) = find_head_end(&buffer[..filled], searched_from) {
            let rest = buffer[end..filled].to_vec();
            buffer.truncate(head_length);
            return Ok(Received { head: buffer, rest });
        }
    }
}

/// Where the blank line ending a head is, searching from `from`: (length of the head before it,
/// index just after it). Bare `\n` line ends are accepted, as RFC 9112 allows.
fn find_head_end(bytes: &[u8], from: usize) -> Option<(usize, usize)> {
    (from..bytes.len()).find_map(|index| {
        if bytes[index] != b'\n' {
            return None;
        }
        let before = &bytes[..index];
        if before.ends_with(b"\n") {
            Some((index - 1, index + 1))
        } else if before.ends_with(b"\n\r") {
            Some((index - 2, index + 1))
        } else {
            None
        }
    })
}

/// A parsed request head, borrowing from the bytes read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Request<'a> {
    pub method: &'a str,
    pub target: &'a str,
    /// `HTTP/1.0` or `HTTP/1.1`.
    pub version: &'a str,
    pub headers: Vec<Header<'a>>,
}

/// One header line.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Header<'a> {
    pub name: &'a str,
    /// The value without surrounding whitespace, as sent (it may hold bytes that are not UTF-8).
    pub value: &'a [u8],
}

/// Parses a head (without its final blank line): a request line `METHOD target HTTP/1.x`, then
/// `Name: value` lines.
pub(crate) fn parse_head(head: &[u8]) -> Result<Request<'_>, HeadError> {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line));
    let request_line = lines.next().ok_or(HeadError::Malformed("empty request"))?;
    let request_line = std::str::from_utf8(request_line)
        .ok()
        .filter(|line| line.bytes().all(|b| b.is_ascii_graphic() || b == b' '))
        .ok_or(HeadError::Malformed(
            "the request line is not printable ASCII",
        ))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(HeadError::Malformed(
            "the request line is not `METHOD target HTTP/1.1`",
        ));
    };
    if method.is_empty() || !method.bytes().all(is_token_byte) {
        return Err(HeadError::Malformed("the method is not a token"));
    }
    if target.is_empty() {
        return Err(HeadError::Malformed("no request target"));
    }
    if !matches!(version, "HTTP/1.0" | "HTTP/1.1") {
        return Err(HeadError::Malformed(
            "only HTTP/1.0 and HTTP/1.1 are spoken",
        ));
    }
    let headers = lines.map(parse_header).collect::<Result<Vec<_>, _>>()?;
    Ok(Request {
        method,
        target,
        version,
        headers,
    })
}

fn parse_header(line: &[u8]) -> Result<Header<'_>, HeadError> {
    if line.first().is_some_and(|&b| b == b' ' || b == b'\t') {
        return Err(HeadError::Malformed("folded header lines are obsolete"));
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HeadError::Malformed("a header line without a colon"))?;
    let (name, value) = (&line[..colon], &line[colon + 1..]);
    if name.is_empty() || !name.iter().copied().all(is_token_byte) {
        return Err(HeadError::Malformed("a header name is not a token"));
    }
    // Any byte but controls (tab aside): a bare CR or a NUL could split the line downstream.
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(HeadError::Malformed(
            "a control character in a header value",
        ));
    }
    let value = value.trim_ascii();
    let name = std::str::from_utf8(name)
        .map_err(|_| HeadError::Malformed("a header name is not ASCII"))?;
    Ok(Header { name, value })
}

/// RFC 9110's `tchar`.
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// The head to send a server for a proxy request `GET http://authority/path`: the request line
/// in origin form, `Host` set to the URI's authority, the proxy's own and hop-by-hop headers
/// dropped, and `Connection: close`, so that the server answers one request and closes (the
/// client's connection is never reused, so it can never reach another host).
pub(crate) fn origin_form_head(request: &Request<'_>, authority: &str, path: &str) -> Vec<u8> {
    let listed_in_connection: Vec<&[u8]> = request
        .headers
        .iter()
        .filter(|header| {
            header.name.eq_ignore_ascii_case("connection")
                || header.name.eq_ignore_ascii_case("proxy-connection")
        })
        .flat_map(|header| header.value.split(|&b| b == b','))
        .map(<[u8]>::trim_ascii)
        .collect();
    let dropped = |name: &str| {
        const ALWAYS: [&str; 5] = [
            "host",
            "connection",
            "proxy-connection",
            "proxy-authorization",
            "keep-alive",
        ];
        // The body's framing stays whatever a `Connection` header says: the bytes after the
        // head go to the server unchanged, so it must read them the way the client meant.
        const FRAMING: [&str; 2] = ["content-length", "transfer-encoding"];
        ALWAYS
            .iter()
            .any(|always| name.eq_ignore_ascii_case(always))
            || (!FRAMING
                .iter()
                .any(|framing| name.eq_ignore_ascii_case(framing))
                && listed_in_connection
                    .iter()
                    .any(|listed| listed.eq_ignore_ascii_case(name.as_bytes())))
    };
    let mut out = Vec::with_capacity(256);
    let request_line = format!(
        "{} {path} {}\r\nHost: {authority}\r\n",
        request.method, request.version
    );
    out.extend_from_slice(request_line.as_bytes());
    for header in request
        .headers
        .iter()
        .filter(|header| !dropped(header.name))
    {
        out.extend_from_slice(header.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(header.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_end_of_a_head_is_found_with_either_line_end() {
        assert_eq!(
            find_head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody", 0),
            Some((21, 24))
        );
        assert_eq!(
            find_head_end(b"GET / HTTP/1.1\nA: b\n\nbody", 0),
            Some((19, 21))
        );
        assert_eq!(find_head_end(b"GET / HTTP/1.1\r\nA: b\r\n", 0), None);
        // Found when searching from just before a read that completed it.
        let bytes = b"GET / HTTP/1.1\r\n\r\n";
        assert_eq!(find_head_end(bytes, bytes.len() - 4), Some((15, 18)));
    }

    #[test]
    fn a_connect_request_is_parsed() {
        let request = parse_head(
            b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org:443\r\nUser-Agent:  curl/8 ",
        )
        .unwrap();
        assert_eq!(
            request,
            Request {
                method: "CONNECT",
                target: "pypi.org:443",
                version: "HTTP/1.1",
                headers: vec![
                    Header {
                        name: "Host",
                        value: b"pypi.org:443"
                    },
                    Header {
                        name: "User-Agent",
                        value: b"curl/8"
                    },
                ],
            }
        );
    }

    #[test]
    fn malformed_heads_are_refused() {
        let malformed: [&[u8]; 12] = [
            b"",
            b"GET",
            b"GET http://a.test/",
            b"GET  http://a.test/ HTTP/1.1",
            b"GET http://a.test/ HTTP/1.1 extra",
            b"GET http://a.test/ HTTP/2.0",
            b"G(T http://a.test/ HTTP/1.1",
            b"GET http://a.test/\x01 HTTP/1.1",
            b"GET http://a.test/ HTTP/1.1\r\nNo colon here",
            b"GET http://a.test/ HTTP/1.1\r\nA: b\r\n folded",
            b"GET http://a.test/ HTTP/1.1\r\nBad Name: x",
            b"GET http://a.test/ HTTP/1.1\r\nA: b\rc",
        ];
        for head in malformed {
            assert!(
                matches!(parse_head(head), Err(HeadError::Malformed(_))),
                "{}",
                String::from_utf8_lossy(head)
            );
        }
    }

    #[test]
    fn header_values_may_hold_bytes_beyond_ascii() {
        let request = parse_head(b"GET http://a.test/ HTTP/1.0\r\nX-Name: caf\xe9").unwrap();
        assert_eq!(request.headers[0].value, b"caf\xe9");
    }

    #[test]
    fn a_proxy_request_is_rewritten_for_its_server() {
        let head = b"POST http://a.test:8080/submit?x=1 HTTP/1.1\r\n\
            Host: elsewhere.test\r\n\
            Proxy-Connection: keep-alive\r\n\
            Proxy-Authorization: Basic Zm9vOmJhcg==\r\n\
            Connection: keep-alive, X-Hop, Content-Length\r\n\
            Keep-Alive: timeout=5\r\n\
            X-Hop: 1\r\n\
            Content-Length: 4\r\n\
            Accept: */*";
        let request = parse_head(head).unwrap();
        let rewritten = origin_form_head(&request, "a.test:8080", "/submit?x=1");
        assert_eq!(
            String::from_utf8(rewritten).unwrap(),
            "POST /submit?x=1 HTTP/1.1\r\n\
             Host: a.test:8080\r\n\
             Content-Length: 4\r\n\
             Accept: */*\r\n\
             Connection: close\r\n\r\n"
        );
    }
}

//! Where a client asks to go: `host:port`, read from an HTTP authority or a SOCKS5 request.

use std::fmt;
use std::net::Ipv6Addr;

/// A host and port a client asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Target {
    /// A name or an IP address as the client wrote it; IPv6 without brackets.
    pub host: String,
    pub port: u16,
}

impl fmt::Display for Target {
    /// `host:port`, with an IPv6 address in brackets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// Reads an HTTP authority without user info: `host:port`, `[v6]:port`, or without the port when
/// there is a `default_port`.
pub(crate) fn parse_authority(
    text: &str,
    default_port: Option<u16>,
) -> Result<Target, &'static str> {
    let (host, port) = if let Some(bracketed) = text.strip_prefix('[') {
        let (address, after) = bracketed
            .split_once(']')
            .ok_or("an IPv6 address without its closing bracket")?;
        address
            .parse::<Ipv6Addr>()
            .map_err(|_| "not an IPv6 address between the brackets")?;
        let port = match after {
            "" => None,
            _ => Some(
                after
                    .strip_prefix(':')
                    .ok_or("junk after the IPv6 address")?,
            ),
        };
        (address, port)
    } else {
        match text.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (text, None),
        }
    };
    if !is_host_name_or_ipv6(host) {
        return Err("not a host name");
    }
    let port = match port {
        // An empty port is the default one (RFC 3986).
        Some("") | None => default_port.ok_or("no port")?,
        Some(digits) => parse_port(digits).ok_or("the port must be 1 to 65535")?,
    };
    Ok(Target {
        host: host.to_owned(),
        port,
    })
}

/// Splits an absolute `http://` URI into its authority (without user info) and the origin-form
/// target to send to the server: the path, `/` when empty, and the query, without the fragment.
pub(crate) fn split_absolute_uri(uri: &str) -> Result<(&str, String), &'static str> {
    if uri.starts_with('/') || uri == "*" {
        return Err("this is a proxy: ask for an absolute http:// URL");
    }
    let (scheme, rest) = uri.split_once("://").ok_or("not an absolute URL")?;
    if !scheme.eq_ignore_ascii_case("http") {
        return Err("only http:// URLs are forwarded; use CONNECT for anything else");
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, after) = rest.split_at(end);
    let authority = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host);
    let after = after.split_once('#').map_or(after, |(before, _)| before);
    let path = if after.starts_with('/') {
        after.to_owned()
    } else {
        format!("/{after}")
    };
    Ok((authority, path))
}

/// Letters, digits, `-`, `_` and `.`; or an IPv6 address (taken out of its brackets).
fn is_host_name_or_ipv6(host: &str) -> bool {
    let name = !host.is_empty()
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    name || host.parse::<Ipv6Addr>().is_ok()
}

/// A port of decimal digits, 1 to 65535.
fn parse_port(digits: &str) -> Option<u16> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse::<u16>().ok().filter(|&port| port != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(host: &str, port: u16) -> Target {
        Target {
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn authorities_with_names_ipv4_and_bracketed_ipv6() {
        assert_eq!(
            parse_authority("Example.com:443", None),
            Ok(target("Example.com", 443))
        );
        assert_eq!(
            parse_authority("example.com", Some(80)),
            Ok(target("example.com", 80))
        );
        assert_eq!(
            parse_authority("example.com:", Some(80)),
            Ok(target("example.com", 80))
        );
        assert_eq!(
            parse_authority("10.0.0.5:8080", None),
            Ok(target("10.0.0.5", 8080))
        );
        assert_eq!(parse_authority("[::1]:443", None), Ok(target("::1", 443)));
        assert_eq!(
            parse_authority("[fe80::1]", Some(80)),
            Ok(target("fe80::1", 80))
        );
        assert_eq!(target("::1", 443).to_string(), "[::1]:443");
        assert_eq!(target("a.test", 80).to_string(), "a.test:80");
    }

    #[test]
    fn bad_authorities_are_refused() {
        for bad in [
            "example.com",
            "example.com:0",
            "example.com:65536",
            "example.com:+80",
            "example.com:80:80",
            ":443",
            "[::1:443",
            "[::1]443",
            "[not-v6]:443",
            "::1:443",
            "exa mple.com:443",
            "a/b:443",
            "user@host:443",
        ] {
            assert!(parse_authority(bad, None).is_err(), "{bad}");
        }
    }

    #[test]
    fn absolute_uris_split_into_authority_and_origin_form() {
        let split = |uri| split_absolute_uri(uri).unwrap();
        assert_eq!(
            split("http://a.test/x/y?q=1"),
            ("a.test", "/x/y?q=1".to_owned())
        );
        assert_eq!(split("HTTP://a.test:8080"), ("a.test:8080", "/".to_owned()));
        assert_eq!(split("http://a.test?q"), ("a.test", "/?q".to_owned()));
        assert_eq!(split("http://a.test/p#frag"), ("a.test", "/p".to_owned()));
        assert_eq!(split("http://user:pw@a.test/"), ("a.test", "/".to_owned()));
        assert_eq!(split("http://[::1]:81/"), ("[::1]:81", "/".to_owned()));
    }

    #[test]
    fn only_absolute_http_uris_are_forwarded() {
        for bad in [
            "/index.html",
            "*",
            "https://a.test/",
            "ftp://a.test/",
            "a.test/x",
        ] {
            assert!(split_absolute_uri(bad).is_err(), "{bad}");
        }
    }
}

//! Network allowlists: which hosts a cell in `allow` mode may reach through burrow's proxy.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::PolicyError;

/// Where burrow's proxy listens inside a cell in `allow` mode (the cell's own loopback: no
/// process of the host can reach it, and it is bound before the command starts).
pub const PROXY_PORT: u16 = 3128;

/// The proxy's address as the cell's programs are told it.
pub const PROXY_URL: &str = "http://127.0.0.1:3128";

/// The variables that point a cell's HTTP clients (curl, pip, npm, cargo, Python's urllib, Go,
/// Node's fetch with a proxy agent) at the proxy, in both spellings; loopback stays direct.
pub fn proxy_variables() -> Vec<(&'static str, &'static str)> {
    const SOCKS: &str = "socks5h://127.0.0.1:3128";
    const DIRECT: &str = "localhost,127.0.0.1,::1";
    vec![
        ("HTTP_PROXY", PROXY_URL),
        ("HTTPS_PROXY", PROXY_URL),
        ("ALL_PROXY", SOCKS),
        ("NO_PROXY", DIRECT),
        ("http_proxy", PROXY_URL),
        ("https_proxy", PROXY_URL),
        ("all_proxy", SOCKS),
        ("no_proxy", DIRECT),
    ]
}

/// A host pattern: `example.com`, `*.example.com` (any name below it, not itself), with an
/// optional `:port`. Names are compared case-insensitively, without a trailing dot.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostPattern {
    /// The name, lower case; for a wildcard, the part after `*.`.
    name: String,
    /// Whether the pattern is `*.name`.
    wildcard: bool,
    /// The only port allowed, when given.
    port: Option<u16>,
}

impl HostPattern {
    /// Parses `[*.]name[:port]`; `key` names the setting in errors.
    pub fn parse(text: &str, key: &str) -> Result<HostPattern, PolicyError> {
        text.parse()
            .map_err(|message| PolicyError::invalid(key, message))
    }

    /// Whether `host` (as a client named it) on `port` matches.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        if self.port.is_some_and(|wanted| wanted != port) {
            return false;
        }
        let host = normalize_host(host);
        if self.wildcard {
            host.len() > self.name.len() + 1
                && host.ends_with(&self.name)
                && host.as_bytes()[host.len() - self.name.len() - 1] == b'.'
        } else {
            host == self.name
        }
    }
}

impl std::str::FromStr for HostPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<HostPattern, String> {
        let bad = |why: &str| {
            format!(
                "`{text}` is not a host pattern ({why}): write example.com, *.example.com or example.com:443"
            )
        };
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => {
                let port: u16 = port
                    .parse()
                    .ok()
                    .filter(|&p| p != 0)
                    .ok_or_else(|| bad("the port must be 1 to 65535"))?;
                (host, Some(port))
            }
            None => (text, None),
        };
        let (name, wildcard) = match host.strip_prefix("*.") {
            Some(rest) => (rest, true),
            None => (host, false),
        };
        let name = normalize_host(name);
        if name.is_empty() {
            return Err(bad("no name"));
        }
        let valid = name.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        });
        if !valid || name.len() > 253 {
            return Err(bad("letters, digits, `-` and `_` in dot-separated labels"));
        }
        Ok(HostPattern {
            name,
            wildcard,
            port,
        })
    }
}

impl fmt::Display for HostPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.wildcard {
            f.write_str("*.")?;
        }
        f.write_str(&self.name)?;
        if let Some(port) = self.port {
            write!(f, ":{port}")?;
        }
        Ok(())
    }
}

impl Serialize for HostPattern {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for HostPattern {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// Lower case, without the trailing dot of a fully qualified name.
fn normalize_host(host: &str) -> String {
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
}

/// What a cell in `allow` mode may reach.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRules {
    /// Hosts that may be reached.
    pub allow: Vec<HostPattern>,
    /// Exceptions to `allow`: these are refused even when an `allow` pattern matches.
    pub deny: Vec<HostPattern>,
    /// Whether a name may resolve to a loopback, private, link-local, multicast or metadata
    /// address (refused by default: that is how DNS rebinding reaches the host's network).
    pub allow_private: bool,
}

/// Why the rules refuse a host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No `allow` pattern matches.
    NotAllowed,
    /// A `deny` pattern matches.
    Denied,
}

impl NetworkRules {
    /// Whether `host:port` may be reached by name (its addresses are checked separately).
    pub fn check(&self, host: &str, port: u16) -> Result<(), Refusal> {
        if self.deny.iter().any(|pattern| pattern.matches(host, port)) {
            return Err(Refusal::Denied);
        }
        if self.allow.iter().any(|pattern| pattern.matches(host, port)) {
            Ok(())
        } else {
            Err(Refusal::NotAllowed)
        }
    }

    /// The allowlist as one line, for messages.
    pub fn allow_text(&self) -> String {
        let patterns: Vec<String> = self.allow.iter().map(ToString::to_string).collect();
        patterns.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(text: &str) -> HostPattern {
        HostPattern::parse(text, "network.allow").unwrap()
    }

    #[test]
    fn exact_names_wildcards_and_ports() {
        assert!(pattern("pypi.org").matches("PyPI.org.", 443));
        assert!(!pattern("pypi.org").matches("files.pypi.org", 443));
        let wildcard = pattern("*.example.com");
        assert!(wildcard.matches("a.example.com", 80));
        assert!(wildcard.matches("a.b.example.com", 80));
        assert!(!wildcard.matches("example.com", 80));
        assert!(!wildcard.matches("badexample.com", 80));
        let port = pattern("example.com:8443");
        assert!(port.matches("example.com", 8443));
        assert!(!port.matches("example.com", 443));
        assert_eq!(pattern("*.Example.COM:81").to_string(), "*.example.com:81");
    }

    #[test]
    fn bad_patterns_are_refused_with_the_key() {
        for bad in [
            "",
            "*.",
            "a..b",
            "exa mple.com",
            "x.com:0",
            "x.com:70000",
            "http://x.com",
            "*",
        ] {
            let error = HostPattern::parse(bad, "network.allow")
                .unwrap_err()
                .to_string();
            assert!(error.contains("network.allow"), "{bad}: {error}");
        }
    }

    #[test]
    fn deny_carves_exceptions_out_of_allow() {
        let rules = NetworkRules {
            allow: vec![pattern("*.example.com")],
            deny: vec![pattern("secret.example.com")],
            allow_private: false,
        };
        assert_eq!(rules.check("www.example.com", 443), Ok(()));
        assert_eq!(rules.check("secret.example.com", 443), Err(Refusal::Denied));
        assert_eq!(rules.check("example.org", 443), Err(Refusal::NotAllowed));
    }
}

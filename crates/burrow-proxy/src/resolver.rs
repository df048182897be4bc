//! Name resolution for the proxy: the system's, with overrides for tests.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use tracing::debug;

/// The variable [`Resolver::from_env`] reads: `name=ip[,name=ip...]`.
pub const RESOLVE_VARIABLE: &str = "BURROW_PROXY_RESOLVE";

/// Name resolution: the system's (`getaddrinfo` through std's `ToSocketAddrs`), with optional
/// overrides that take precedence.
#[derive(Debug, Clone, Default)]
pub struct Resolver {
    /// (name in lower case without a trailing dot, address), in the order given; a name given
    /// several times resolves to all its addresses.
    overrides: Vec<(String, IpAddr)>,
}

impl Resolver {
    /// The system's resolver, without overrides.
    pub fn system() -> Resolver {
        Resolver::default()
    }

    /// The system's resolver with the overrides of the environment variable
    /// `BURROW_PROXY_RESOLVE="name=ip[,name=ip...]"`; malformed entries are skipped.
    ///
    /// This is for tests, to map names to local servers. It is read from the environment of the
    /// host process serving the proxy, which a cell cannot set.
    pub fn from_env() -> Resolver {
        match std::env::var(RESOLVE_VARIABLE) {
            Ok(text) => Resolver::system().with_overrides_from(&text),
            Err(_) => Resolver::system(),
        }
    }

    /// Resolves `name` (case-insensitive, with or without a trailing dot) to `ip`, instead of
    /// asking the system; calling it again for the same name adds an address.
    #[must_use]
    pub fn with_override(mut self, name: &str, ip: IpAddr) -> Resolver {
        self.overrides.push((normalize(name), ip));
        self
    }

    /// The addresses of `host` on `port`: its overrides if it has any, the address itself if
    /// `host` is an IP address (IPv6 without brackets), else the system's answer. Never empty.
    pub fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        let name = normalize(host);
        let overridden: Vec<SocketAddr> = self
            .overrides
            .iter()
            .filter(|(overridden, _)| *overridden == name)
            .map(|&(_, ip)| SocketAddr::new(ip, port))
            .collect();
        if !overridden.is_empty() {
            return Ok(overridden);
        }
        if let Ok(ip) = name.parse::<IpAddr>() {
            return Ok(vec![SocketAddr::new(ip, port)]);
        }
        let addresses: Vec<SocketAddr> = (name.as_str(), port).to_socket_addrs()?.collect();
        if addresses.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{name} has no addresses"),
            ));
        }
        Ok(addresses)
    }

    /// Adds the overrides written `name=ip[,name=ip...]`.
    fn with_overrides_from(mut self, text: &str) -> Resolver {
        for entry in text
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
        {
            let parsed = entry.split_once('=').and_then(|(name, ip)| {
                let name = name.trim();
                let ip = ip.trim().parse::<IpAddr>().ok()?;
                (!name.is_empty()).then_some((name, ip))
            });
            match parsed {
                Some((name, ip)) => self = self.with_override(name, ip),
                None => debug!("{RESOLVE_VARIABLE}: skipping {entry:?}, which is not name=ip"),
            }
        }
        self
    }
}

/// Lower case, without the trailing dot of a fully qualified name.
fn normalize(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn overrides_win_and_ignore_case_and_the_trailing_dot() {
        let resolver = Resolver::system()
            .with_override("Allowed.Test", ip("127.0.0.1"))
            .with_override("allowed.test", ip("::1"));
        let addresses = resolver.resolve("ALLOWED.test.", 443).unwrap();
        assert_eq!(
            addresses,
            vec![
                "127.0.0.1:443".parse().unwrap(),
                "[::1]:443".parse().unwrap()
            ]
        );
    }

    #[test]
    fn ip_literals_resolve_to_themselves() {
        let resolver = Resolver::system();
        assert_eq!(
            resolver.resolve("10.0.0.5", 80).unwrap(),
            vec!["10.0.0.5:80".parse().unwrap()]
        );
        assert_eq!(
            resolver.resolve("::1", 80).unwrap(),
            vec!["[::1]:80".parse().unwrap()]
        );
    }

    #[test]
    fn the_variable_is_a_comma_separated_list_and_bad_entries_are_skipped() {
        let resolver = Resolver::system()
            .with_overrides_from(" a.test=127.0.0.1 , bad, =1.2.3.4, c.test=nope,b.test=::1,");
        assert_eq!(
            resolver.overrides,
            vec![
                ("a.test".to_owned(), ip("127.0.0.1")),
                ("b.test".to_owned(), ip("::1"))
            ]
        );
    }
}

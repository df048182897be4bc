//! The host side of burrow's network allowlist.
//!
//! A cell in `allow` network mode has a network namespace of its own with nothing but a loopback
//! interface. Before its command starts, a listening socket is bound to `127.0.0.1:3128` inside
//! that namespace and handed to a host process, which serves it with a [`Proxy`]: the cell's
//! programs connect to it (they are told so by `HTTP_PROXY`, `HTTPS_PROXY` and `ALL_PROXY`), and
//! the proxy opens the outbound connections from the host's network, to the hosts the cell's
//! [`NetworkRules`](burrow_policy::NetworkRules) allow and to nothing else. A socket keeps the
//! namespace it was created in, so this crate never deals with namespaces: it is given a
//! [`TcpListener`](std::net::TcpListener) and serves it.
//!
//! One listener speaks three protocols, told apart by the first byte a client sends:
//!
//! - SOCKS5 (`0x05`), with the `CONNECT` command and names, IPv4 or IPv6 addresses;
//! - HTTP `CONNECT host:port`, the tunnel HTTPS clients ask for;
//! - plain HTTP with an absolute URI (`GET http://host/path`), forwarded one request per client
//!   connection.
//!
//! Before connecting, the proxy checks the name against the rules, resolves it with its
//! [`Resolver`], and refuses it when any address it resolves to [`is_private`] (unless the rules
//! allow private addresses); it then connects to one of the addresses it checked, never resolving
//! again, so that a name cannot change its answer between the check and the connection (DNS
//! rebinding). Every refused attempt is reported to a [`DenialSink`] as a [`Denial`]. Once
//! connected, bytes are relayed with `splice(2)`, without copying them through user space.
//!
//! ```no_run
//! use std::net::TcpListener;
//! use std::sync::{Arc, Mutex};
//!
//! use burrow_policy::NetworkRules;
//! use burrow_proxy::{Denial, DenialSink, Proxy, Resolver};
//!
//! #[derive(Default)]
//! struct Collected(Mutex<Vec<Denial>>);
//!
//! impl DenialSink for Collected {
//!     fn denied(&self, denial: &Denial) {
//!         if let Ok(mut denials) = self.0.lock() {
//!             denials.push(denial.clone());
//!         }
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let rules = NetworkRules {
//!     allow: vec!["pypi.org".parse()?, "*.pythonhosted.org".parse()?],
//!     deny: Vec::new(),
//!     allow_private: false,
//! };
//! let listener = TcpListener::bind("127.0.0.1:3128")?;
//! let denials = Arc::new(Collected::default());
//! let serving = Proxy::new(rules, Resolver::from_env(), denials.clone()).spawn(listener)?;
//! # drop(serving);
//! # Ok(())
//! # }
//! ```
//!
//! `splice(2)` to a socket whose peer has gone raises `SIGPIPE`; like every Rust program by
//! default, the process serving the proxy must ignore that signal.

#![deny(missing_docs)]

mod address;
mod admission;
mod deadline;
mod head;
mod http;
mod proxy;
mod relay;
mod resolver;
mod socks;
mod target;
mod upstream;

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

pub use address::is_private;
pub use proxy::Proxy;
pub use resolver::{RESOLVE_VARIABLE, Resolver};

/// One refused attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    /// The host as the client named it (a name or an address, IPv6 without brackets).
    pub host: String,
    /// The port the client asked for.
    pub port: u16,
    /// When it was refused, in Unix milliseconds.
    pub at_ms: u64,
    /// Why, in one line for people: "not on the allowlist", "denied by network.deny",
    /// "resolves to a private address (10.0.0.5)", "cannot be resolved".
    pub reason: String,
}

impl Denial {
    /// A denial of `host:port` made now.
    fn now(host: &str, port: u16, reason: String) -> Denial {
        let at_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        Denial {
            host: host.to_owned(),
            port,
            at_ms,
            reason,
        }
    }
}

/// Where denials go (the CLI collects them in memory; a workspace's proxy process appends them
/// to a file). Called from the proxy's connection threads, once per refused attempt.
pub trait DenialSink: Send + Sync {
    /// Records one refused attempt.
    fn denied(&self, denial: &Denial);
}

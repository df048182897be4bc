//! Whether a target may be reached, and at which addresses: the rules, then resolution, then the
//! addresses themselves.

use std::io;
use std::net::{IpAddr, SocketAddr};

use burrow_policy::{NetworkRules, Refusal};

use crate::address::is_private;
use crate::resolver::Resolver;
use crate::target::Target;

/// Why a target was refused.
#[derive(Debug)]
pub(crate) enum Refused {
    /// The rules refuse the name (or the address as the client wrote it).
    Rules(Refusal),
    /// It is, or resolves to, an address that is not the public internet.
    Private {
        ip: IpAddr,
        /// Whether the client asked for the address itself rather than a name.
        literal: bool,
    },
    /// The name has no address.
    Unresolvable(io::Error),
}

impl Refused {
    /// The reason recorded in a [`Denial`](crate::Denial): a few words, without the target.
    pub(crate) fn reason(&self) -> String {
        match self {
            Refused::Rules(Refusal::NotAllowed) => "not on the allowlist".to_owned(),
            Refused::Rules(Refusal::Denied) => "denied by network.deny".to_owned(),
            Refused::Private { ip, literal: true } => format!("a private address ({ip})"),
            Refused::Private { ip, literal: false } => {
                format!("resolves to a private address ({ip})")
            }
            Refused::Unresolvable(_) => "cannot be resolved".to_owned(),
        }
    }

    /// The sentence an HTTP client is answered with, naming the target and what to change.
    pub(crate) fn explain(&self, target: &Target, rules: &NetworkRules) -> String {
        match self {
            Refused::Rules(Refusal::NotAllowed) => {
                let allowed = rules.allow_text();
                let allowed = if allowed.is_empty() {
                    "the allowlist is empty".to_owned()
                } else {
                    format!("allowed: {allowed}")
                };
                format!("burrow: {target} is not on this sandbox's network allowlist ({allowed})")
            }
            Refused::Rules(Refusal::Denied) => {
                format!("burrow: {target} is refused by this sandbox's network.deny list")
            }
            Refused::Private { ip, literal } => {
                let what = if *literal {
                    "is a private address".to_owned()
                } else {
                    format!("resolves to a private address ({ip})")
                };
                format!(
                    "burrow: {target} {what}, which this sandbox may not reach (network.allow_private is off)"
                )
            }
            Refused::Unresolvable(error) => {
                format!("burrow: {target} cannot be resolved ({error})")
            }
        }
    }
}

/// The addresses `target` may be reached at, each of them checked: the rules must allow the
/// name, it must resolve, and unless the rules allow private addresses, none of its addresses
/// may be private (one private answer among public ones is how rebinding attacks hide).
pub(crate) fn admit(
    rules: &NetworkRules,
    resolver: &Resolver,
    target: &Target,
) -> Result<Vec<SocketAddr>, Refused> {
    rules
        .check(&target.host, target.port)
        .map_err(Refused::Rules)?;
    let addresses = resolver
        .resolve(&target.host, target.port)
        .map_err(Refused::Unresolvable)?;
    if !rules.allow_private
        && let Some(private) = addresses.iter().find(|address| is_private(address.ip()))
    {
        return Err(Refused::Private {
            ip: private.ip(),
            literal: target.host.parse::<IpAddr>().is_ok(),
        });
    }
    Ok(addresses)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(allow: &[&str], deny: &[&str], allow_private: bool) -> NetworkRules {
        NetworkRules {
            allow: allow.iter().map(|p| p.parse().unwrap()).collect(),
            deny: deny.iter().map(|p| p.parse().unwrap()).collect(),
            allow_private,
        }
    }

    fn target(host: &str, port: u16) -> Target {
        Target {
            host: host.to_owned(),
            port,
        }
    }

    #[test]
    fn every_address_must_be_public() {
        let resolver = Resolver::system()
            .with_override("mixed.test", "93.184.215.14".parse().unwrap())
            .with_override("mixed.test", "10.0.0.5".parse().unwrap())
            .with_override("public.test", "93.184.215.14".parse().unwrap());
        let strict = rules(&["*.test"], &[], false);
        let refused = admit(&strict, &resolver, &target("mixed.test", 443)).unwrap_err();
        assert_eq!(refused.reason(), "resolves to a private address (10.0.0.5)");
        assert_eq!(
            admit(&strict, &resolver, &target("public.test", 443)).unwrap(),
            vec!["93.184.215.14:443".parse().unwrap()]
        );
        let lenient = rules(&["*.test"], &[], true);
        assert_eq!(
            admit(&lenient, &resolver, &target("mixed.test", 443))
                .unwrap()
                .len(),
            2
        );
    }

    #[test]
    fn the_rules_are_checked_before_anything_is_resolved() {
        // A name the system cannot resolve: refused by the rules, not by resolution.
        let refused = admit(
            &rules(&["pypi.org"], &[], false),
            &Resolver::system(),
            &target("nowhere.invalid", 443),
        )
        .unwrap_err();
        assert_eq!(refused.reason(), "not on the allowlist");
        let explained = refused.explain(
            &target("nowhere.invalid", 443),
            &rules(&["pypi.org"], &[], false),
        );
        assert_eq!(
            explained,
            "burrow: nowhere.invalid:443 is not on this sandbox's network allowlist (allowed: pypi.org)"
        );
    }

    #[test]
    fn private_literals_are_refused_as_written() {
        let refused = admit(
            &rules(&["127.0.0.1"], &[], false),
            &Resolver::system(),
            &target("127.0.0.1", 80),
        )
        .unwrap_err();
        assert_eq!(refused.reason(), "a private address (127.0.0.1)");
    }
}

//! Addresses a cell may not reach unless its rules allow private addresses: everything that is
//! not the public internet. A name that resolves to one of them is how DNS rebinding reaches the
//! host's own services, its network, or a cloud's metadata service.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IPv4 networks that are not publicly routable (IANA's special-purpose registry, RFC 6890),
/// as (network, prefix length).
const PRIVATE_V4: &[(Ipv4Addr, u8)] = &[
    // "This network", including the unspecified address 0.0.0.0.
    (Ipv4Addr::new(0, 0, 0, 0), 8),
    // Private networks (RFC 1918).
    (Ipv4Addr::new(10, 0, 0, 0), 8),
    // Carrier-grade NAT (RFC 6598).
    (Ipv4Addr::new(100, 64, 0, 0), 10),
    // Loopback.
    (Ipv4Addr::new(127, 0, 0, 0), 8),
    // Link-local, including the cloud metadata service at 169.254.169.254.
    (Ipv4Addr::new(169, 254, 0, 0), 16),
    // Private networks (RFC 1918).
    (Ipv4Addr::new(172, 16, 0, 0), 12),
    // IETF protocol assignments.
    (Ipv4Addr::new(192, 0, 0, 0), 24),
    // Documentation (TEST-NET-1).
    (Ipv4Addr::new(192, 0, 2, 0), 24),
    // The deprecated 6to4 relay anycast.
    (Ipv4Addr::new(192, 88, 99, 0), 24),
    // Private networks (RFC 1918).
    (Ipv4Addr::new(192, 168, 0, 0), 16),
    // Benchmarking.
    (Ipv4Addr::new(198, 18, 0, 0), 15),
    // Documentation (TEST-NET-2).
    (Ipv4Addr::new(198, 51, 100, 0), 24),
    // Documentation (TEST-NET-3).
    (Ipv4Addr::new(203, 0, 113, 0), 24),
    // Multicast.
    (Ipv4Addr::new(224, 0, 0, 0), 4),
    // Reserved, including the broadcast address 255.255.255.255.
    (Ipv4Addr::new(240, 0, 0, 0), 4),
];

/// IPv6 global unicast (2000::/3): the only part of the IPv6 space that is the public internet.
/// Everything outside it is private here: unspecified, loopback, unique local (fc00::/7, which
/// holds AWS's metadata service fd00:ec2::254), link-local, site-local, multicast, discard-only,
/// local-use NAT64 and the unallocated rest.
const GLOBAL_V6: (Ipv6Addr, u8) = (Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3);

/// The parts of global unicast that are not publicly routable.
const PRIVATE_GLOBAL_V6: &[(Ipv6Addr, u8)] = &[
    // IETF protocol assignments: Teredo, benchmarking, ORCHID.
    (Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0), 23),
    // Documentation.
    (Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32),
    // Documentation (RFC 9637).
    (Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20),
];

/// Whether an address is loopback, private (10/8, 172.16/12, 192.168/16, 100.64/10), link-local
/// (169.254/16, including cloud metadata at 169.254.169.254), multicast, broadcast, unspecified,
/// in a documentation or reserved range, or one of the IPv6 equivalents (`::1`, `::`, fc00::/7,
/// fe80::/10, ff00::/8, fd00:ec2::254, and the IPv4-mapped, IPv4-compatible, 6to4 and NAT64 forms
/// of any of the IPv4 ones): anything but the public internet.
pub fn is_private(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_private_v4(v4),
        IpAddr::V6(v6) => is_private_v6(v6),
    }
}

fn is_private_v4(ip: Ipv4Addr) -> bool {
    PRIVATE_V4
        .iter()
        .any(|&(network, length)| in_v4_network(ip, network, length))
}

fn is_private_v6(ip: Ipv6Addr) -> bool {
    // An IPv6 address that carries an IPv4 one reaches that IPv4 address (through the kernel,
    // a 6to4 relay or a NAT64 gateway), so it is judged by it.
    if let Some(v4) = embedded_v4(ip) {
        return is_private_v4(v4);
    }
    let (global, length) = GLOBAL_V6;
    !in_v6_network(ip, global, length)
        || PRIVATE_GLOBAL_V6
            .iter()
            .any(|&(network, length)| in_v6_network(ip, network, length))
}

/// The IPv4 address inside an IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
/// (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d, which covers `::` and `::1` too), NAT64
/// (64:ff9b::a.b.c.d) or 6to4 (2002:aabb:ccdd::) address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let bits = u128::from(ip);
    let low = Ipv4Addr::from(bits as u32);
    let high_96 = bits >> 32;
    let carries_low = [
        0,                      // IPv4-compatible
        0xffff,                 // IPv4-mapped
        0xffff_0000,            // IPv4-translated
        0x0064_ff9b_u128 << 64, // NAT64 well-known prefix
    ];
    if carries_low.contains(&high_96) {
        return Some(low);
    }
    if bits >> 112 == 0x2002 {
        return Some(Ipv4Addr::from((bits >> 80) as u32));
    }
    None
}

fn in_v4_network(ip: Ipv4Addr, network: Ipv4Addr, length: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(length)).unwrap_or(0);
    u32::from(ip) & mask == u32::from(network) & mask
}

fn in_v6_network(ip: Ipv6Addr, network: Ipv6Addr, length: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(length)).unwrap_or(0);
    u128::from(ip) & mask == u128::from(network) & mask
}

#[cfg(test)]
mod tests {
    use super::*;

    fn private(text: &str) -> bool {
        is_private(text.parse().unwrap())
    }

    #[test]
    fn every_special_ipv4_range_is_private_at_both_ends() {
        let ranges = [
            ("0.0.0.0", "0.255.255.255"),
            ("10.0.0.0", "10.255.255.255"),
            ("100.64.0.0", "100.127.255.255"),
            ("127.0.0.0", "127.255.255.255"),
            ("169.254.0.0", "169.254.255.255"),
            ("172.16.0.0", "172.31.255.255"),
            ("192.0.0.0", "192.0.0.255"),
            ("192.0.2.0", "192.0.2.255"),
            ("192.88.99.0", "192.88.99.255"),
            ("192.168.0.0", "192.168.255.255"),
            ("198.18.0.0", "198.19.255.255"),
            ("198.51.100.0", "198.51.100.255"),
            ("203.0.113.0", "203.0.113.255"),
            ("224.0.0.0", "239.255.255.255"),
            ("240.0.0.0", "255.255.255.255"),
        ];
        for (first, last) in ranges {
            assert!(private(first), "{first}");
            assert!(private(last), "{last}");
        }
        for named in [
            "127.0.0.1",
            "169.254.169.254",
            "255.255.255.255",
            "0.0.0.0",
            "10.0.0.5",
        ] {
            assert!(private(named), "{named}");
        }
    }

    #[test]
    fn public_ipv4_addresses_just_outside_the_ranges_are_not() {
        for public in [
            "1.1.1.1",
            "8.8.8.8",
            "9.255.255.255",
            "11.0.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.0.1.0",
            "192.0.3.0",
            "192.167.255.255",
            "192.169.0.0",
            "198.17.255.255",
            "198.20.0.0",
            "203.0.112.255",
            "223.255.255.255",
            "151.101.0.223",
        ] {
            assert!(!private(public), "{public}");
        }
    }

    #[test]
    fn ipv6_loopback_unspecified_local_and_multicast_are_private() {
        for address in [
            "::1",
            "::",
            "fc00::1",
            "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "fd00:ec2::254",
            "fe80::1",
            "febf:ffff::1",
            "fec0::1",
            "ff00::1",
            "ff02::1",
            "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
            "100::1",
            "64:ff9b:1::1",
            "2001:db8::1",
            "2001::1",
            "3fff::1",
            "4000::1",
        ] {
            assert!(private(address), "{address}");
        }
    }

    #[test]
    fn ipv6_global_unicast_is_not() {
        for address in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "2400:cb00::1",
        ] {
            assert!(!private(address), "{address}");
        }
    }

    #[test]
    fn ipv4_inside_ipv6_is_judged_by_the_ipv4_address() {
        for address in [
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.5",
            "::ffff:169.254.169.254",
            "::ffff:0:192.168.1.1",
            "::127.0.0.1",
            "::10.1.2.3",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2002:c0a8:0101::1",
            "2002:a9fe:a9fe::",
        ] {
            assert!(private(address), "{address}");
        }
        for address in ["::ffff:8.8.8.8", "64:ff9b::1.1.1.1", "2002:0808:0808::1"] {
            assert!(!private(address), "{address}");
        }
    }
}

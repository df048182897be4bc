//! SOCKS5 clients (RFC 1928): no authentication, the `CONNECT` command, targets given as a name,
//! an IPv4 or an IPv6 address (`socks5h://` clients send names, so the proxy resolves them).

use std::io::{self, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};

use tracing::debug;

use crate::admission::Refused;
use crate::deadline::Deadline;
use crate::proxy::{OpenError, Proxy};
use crate::relay::relay;
use crate::target::Target;

/// The first byte of every SOCKS5 message.
pub(crate) const VERSION: u8 = 0x05;

/// The only authentication method offered: none (the socket is reachable from the cell only).
const NO_AUTHENTICATION: u8 = 0x00;
const NO_ACCEPTABLE_METHOD: u8 = 0xFF;

const COMMAND_CONNECT: u8 = 0x01;

const ADDRESS_IPV4: u8 = 0x01;
const ADDRESS_NAME: u8 = 0x03;
const ADDRESS_IPV6: u8 = 0x04;

/// Reply codes.
mod reply {
    pub const SUCCEEDED: u8 = 0x00;
    pub const GENERAL_FAILURE: u8 = 0x01;
    pub const NOT_ALLOWED: u8 = 0x02;
    pub const NETWORK_UNREACHABLE: u8 = 0x03;
    pub const HOST_UNREACHABLE: u8 = 0x04;
    pub const CONNECTION_REFUSED: u8 = 0x05;
    pub const COMMAND_NOT_SUPPORTED: u8 = 0x07;
    pub const ADDRESS_TYPE_NOT_SUPPORTED: u8 = 0x08;
}

/// Serves one SOCKS5 client, whose request must arrive by `deadline`.
pub(crate) fn serve(proxy: &Proxy, mut client: TcpStream, deadline: Deadline) -> io::Result<()> {
    if !negotiate_method(&mut client, deadline)? {
        return Ok(());
    }
    let Some((command, target)) = read_request(&mut client, deadline)? else {
        return Ok(());
    };
    if command != COMMAND_CONNECT {
        debug!(command, "unsupported SOCKS command");
        return send_reply(&mut client, reply::COMMAND_NOT_SUPPORTED, None);
    }
    if target.host.is_empty() {
        return send_reply(&mut client, reply::GENERAL_FAILURE, None);
    }
    debug!(%target, "socks connect");
    match proxy.open(&target) {
        Ok(server) => {
            send_reply(&mut client, reply::SUCCEEDED, server.local_addr().ok())?;
            relay(client, server)
        }
        Err(OpenError::Refused(Refused::Unresolvable(_))) => {
            send_reply(&mut client, reply::HOST_UNREACHABLE, None)
        }
        Err(OpenError::Refused(_)) => send_reply(&mut client, reply::NOT_ALLOWED, None),
        Err(OpenError::Unreachable(error)) => {
            send_reply(&mut client, reply_for_connect_error(&error), None)
        }
    }
}

/// Reads the client's methods and answers; whether it accepted "no authentication".
fn negotiate_method(client: &mut TcpStream, deadline: Deadline) -> io::Result<bool> {
    let mut greeting = [0; 2];
    deadline.read_exact(client, &mut greeting)?;
    let mut methods = vec![0; usize::from(greeting[1])];
    deadline.read_exact(client, &mut methods)?;
    if methods.contains(&NO_AUTHENTICATION) {
        client.write_all(&[VERSION, NO_AUTHENTICATION])?;
        Ok(true)
    } else {
        client.write_all(&[VERSION, NO_ACCEPTABLE_METHOD])?;
        Ok(false)
    }
}

/// Reads a request: its command and target. `None` when the request is not SOCKS5 or has an
/// unknown address type (then answered: its length is unknown, so nothing more can be read).
fn read_request(client: &mut TcpStream, deadline: Deadline) -> io::Result<Option<(u8, Target)>> {
    let mut header = [0; 4];
    deadline.read_exact(client, &mut header)?;
    let [version, command, _reserved, address_type] = header;
    if version != VERSION {
        debug!(version, "not a SOCKS5 request");
        return Ok(None);
    }
    let host = match address_type {
        ADDRESS_IPV4 => {
            let mut octets = [0; 4];
            deadline.read_exact(client, &mut octets)?;
            Ipv4Addr::from(octets).to_string()
        }
        ADDRESS_IPV6 => {
            let mut octets = [0; 16];
            deadline.read_exact(client, &mut octets)?;
            Ipv6Addr::from(octets).to_string()
        }
        ADDRESS_NAME => {
            let mut length = [0; 1];
            deadline.read_exact(client, &mut length)?;
            let mut name = vec![0; usize::from(length[0])];
            deadline.read_exact(client, &mut name)?;
            // A name that is not UTF-8 keeps its replacement characters, which match no rule.
            String::from_utf8_lossy(&name).into_owned()
        }
        _ => {
            send_reply(client, reply::ADDRESS_TYPE_NOT_SUPPORTED, None)?;
            return Ok(None);
        }
    };
    let mut port = [0; 2];
    deadline.read_exact(client, &mut port)?;
    let port = u16::from_be_bytes(port);
    Ok(Some((command, Target { host, port })))
}

/// Sends a reply with the address the proxy connected from (all zeros when it did not).
fn send_reply(client: &mut TcpStream, code: u8, bound: Option<SocketAddr>) -> io::Result<()> {
    let bound = bound.unwrap_or_else(|| SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)));
    let mut message = vec![VERSION, code, 0x00];
    match bound.ip() {
        IpAddr::V4(ip) => {
            message.push(ADDRESS_IPV4);
            message.extend_from_slice(&ip.octets());
        }
        IpAddr::V6(ip) => {
            message.push(ADDRESS_IPV6);
            message.extend_from_slice(&ip.octets());
        }
    }
    message.extend_from_slice(&bound.port().to_be_bytes());
    client.write_all(&message)
}

/// The reply code closest to why a connection failed.
fn reply_for_connect_error(error: &io::Error) -> u8 {
    match error.kind() {
        io::ErrorKind::ConnectionRefused => reply::CONNECTION_REFUSED,
        io::ErrorKind::NetworkUnreachable => reply::NETWORK_UNREACHABLE,
        io::ErrorKind::HostUnreachable | io::ErrorKind::TimedOut => reply::HOST_UNREACHABLE,
        _ => reply::GENERAL_FAILURE,
    }
}

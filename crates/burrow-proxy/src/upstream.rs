//! Connections to the servers clients asked for.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use tracing::debug;

/// How long one address may take to accept a connection.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Connects to the first of `addresses` that accepts, in order; these are the addresses that
/// were checked, and nothing is resolved again.
pub(crate) fn connect_to_any(addresses: &[SocketAddr]) -> io::Result<TcpStream> {
    let mut last_error = None;
    for address in addresses {
        match TcpStream::connect_timeout(address, CONNECT_TIMEOUT) {
            Ok(stream) => return Ok(stream),
            Err(error) => {
                debug!(%address, %error, "cannot connect");
                last_error = Some(error);
            }
        }
    }
    Err(last_error
        .unwrap_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no address to connect to")))
}

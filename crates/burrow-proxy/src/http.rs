//! HTTP clients: `CONNECT host:port` tunnels, and plain requests with an absolute URI, forwarded
//! one per client connection.

use std::io::{self, Write};
use std::net::{Shutdown, TcpStream};
use std::time::Duration;

use tracing::debug;

use crate::deadline::Deadline;
use crate::head::{HeadError, Request, origin_form_head, parse_head, read_head};
use crate::proxy::{OpenError, Proxy};
use crate::relay::relay;
use crate::target::{Target, parse_authority, split_absolute_uri};

/// How long a client answered with an error may take to finish sending what it had started
/// (closing a socket with unread bytes resets it, and the client could lose the answer).
const LINGER: Duration = Duration::from_secs(1);

/// Serves one HTTP client, whose request head must arrive by `deadline`.
pub(crate) fn serve(proxy: &Proxy, client: TcpStream, deadline: Deadline) -> io::Result<()> {
    let received = match read_head(&client, deadline) {
        Ok(received) => received,
        Err(error @ (HeadError::Closed | HeadError::TimedOut)) => {
            debug!(%error, "dropping the client");
            return Ok(());
        }
        Err(HeadError::Read(error)) => return Err(error),
        Err(error @ HeadError::TooLarge) => {
            let message = format!("burrow: {error}");
            return answer(
                &client,
                "431 Request Header Fields Too Large",
                &message,
                None,
            );
        }
        Err(error @ HeadError::Malformed(_)) => return bad_request(&client, &error),
    };
    let request = match parse_head(&received.head) {
        Ok(request) => request,
        Err(error) => return bad_request(&client, &error),
    };
    debug!(
        method = request.method,
        target = request.target,
        "http request"
    );
    if request.method == "CONNECT" {
        tunnel(proxy, client, &request, &received.rest)
    } else {
        forward(proxy, client, &request, &received.rest)
    }
}

/// `CONNECT host:port`: answers 200 once connected, then relays; `early` is what the client
/// sent after its head without waiting for the answer.
fn tunnel(
    proxy: &Proxy,
    mut client: TcpStream,
    request: &Request<'_>,
    early: &[u8],
) -> io::Result<()> {
    let target = match parse_authority(request.target, None) {
        Ok(target) => target,
        Err(why) => {
            return bad_request(
                &client,
                &format!("cannot CONNECT to {:?}: {why}", request.target),
            );
        }
    };
    let Some(mut server) = open_or_answer(proxy, &client, &target)? else {
        return Ok(());
    };
    client.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")?;
    server.write_all(early)?;
    relay(client, server)
}

/// `GET http://host/path`: sends the server the request in origin form, and the body bytes
/// already read after the head, then relays both ways until either side is done.
fn forward(
    proxy: &Proxy,
    client: TcpStream,
    request: &Request<'_>,
    body_start: &[u8],
) -> io::Result<()> {
    let (authority, path) = match split_absolute_uri(request.target) {
        Ok(split) => split,
        Err(why) => return bad_request(&client, &why),
    };
    let target = match parse_authority(authority, Some(80)) {
        Ok(target) => target,
        Err(why) => {
            return bad_request(&client, &format!("cannot forward to {authority:?}: {why}"));
        }
    };
    let Some(mut server) = open_or_answer(proxy, &client, &target)? else {
        return Ok(());
    };
    server.write_all(&origin_form_head(request, authority, &path))?;
    server.write_all(body_start)?;
    relay(client, server)
}

/// Answers 400 with `why` the request cannot be served.
fn bad_request(client: &TcpStream, why: &dyn std::fmt::Display) -> io::Result<()> {
    answer(client, "400 Bad Request", &format!("burrow: {why}"), None)
}

/// Connects to `target`, or answers the client why not (and returns `None`).
fn open_or_answer(
    proxy: &Proxy,
    client: &TcpStream,
    target: &Target,
) -> io::Result<Option<TcpStream>> {
    match proxy.open(target) {
        Ok(server) => Ok(Some(server)),
        Err(OpenError::Refused(refused)) => {
            let message = refused.explain(target, proxy.rules());
            answer(client, "403 Forbidden", &message, Some(target)).map(|()| None)
        }
        Err(OpenError::Unreachable(error)) => {
            let message = format!("burrow: cannot connect to {target}: {error}");
            answer(client, "502 Bad Gateway", &message, None).map(|()| None)
        }
    }
}

/// Answers with `status` and a one-line plain-text `message`, marking a refusal with
/// `X-Burrow-Denied: host:port`, and closes the connection.
fn answer(
    mut client: &TcpStream,
    status: &str,
    message: &str,
    denied: Option<&Target>,
) -> io::Result<()> {
    let body = format!("{message}\n");
    let denied = denied.map_or_else(String::new, |target| {
        format!("X-Burrow-Denied: {target}\r\n")
    });
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n{denied}\r\n{body}",
        body.len()
    );
    client.write_all(response.as_bytes())?;
    close_after_answer(client);
    Ok(())
}

/// Ends the connection after an answer so that the client reads it: says that nothing more will
/// come, then reads what the client is still sending for a moment, since closing with unread
/// bytes would reset the connection and could discard the answer before the client reads it.
fn close_after_answer(client: &TcpStream) {
    if client.shutdown(Shutdown::Write).is_err() {
        return;
    }
    let deadline = Deadline::after(LINGER);
    let mut discard = [0; 16 * 1024];
    let mut drained = 0;
    while drained < 1024 * 1024 {
        match deadline.read(client, &mut discard) {
            Ok(0) | Err(_) => return,
            Ok(read) => drained += read,
        }
    }
}

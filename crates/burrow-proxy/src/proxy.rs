//! The proxy: accepting clients, telling their protocols apart, and opening the connections the
//! rules allow.

use std::io;
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;

use burrow_policy::NetworkRules;
use tracing::debug;

use crate::admission::{Refused, admit};
use crate::deadline::Deadline;
use crate::resolver::Resolver;
use crate::target::Target;
use crate::upstream::connect_to_any;
use crate::{Denial, DenialSink, http, socks};

/// How long a client may take to say where it wants to go.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// Clients served at once; more are closed as they arrive. Each costs two threads while it
/// relays, and the cell's limits do not reach the host process.
const MAX_CLIENTS: usize = 512;

/// How long to wait before accepting again when the process is out of file descriptors or
/// memory, which closing connections will give back.
const EXHAUSTED_PAUSE: Duration = Duration::from_millis(100);

/// An allowlisting proxy for one cell: HTTP `CONNECT`, plain HTTP with absolute URIs, and
/// SOCKS5, on one listener.
pub struct Proxy {
    rules: NetworkRules,
    resolver: Resolver,
    sink: Arc<dyn DenialSink>,
    clients: AtomicUsize,
}

/// Why no connection to a target was opened.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// Refused, and recorded as a denial.
    Refused(Refused),
    /// Allowed, but no checked address accepted a connection.
    Unreachable(io::Error),
}

impl Proxy {
    /// A proxy that reaches what `rules` allow, resolving names with `resolver`, and reports
    /// every refused attempt to `sink`.
    pub fn new(rules: NetworkRules, resolver: Resolver, sink: Arc<dyn DenialSink>) -> Proxy {
        Proxy {
            rules,
            resolver,
            sink,
            clients: AtomicUsize::new(0),
        }
    }

    /// Serves connections until the listener fails; one thread per connection.
    #[expect(
        clippy::needless_pass_by_value,
        reason = "serving owns the listener: it is closed when serving ends"
    )]
    pub fn serve(self: Arc<Self>, listener: TcpListener) -> io::Result<()> {
        // A listener handed over from another process may have been left non-blocking.
        listener.set_nonblocking(false)?;
        loop {
            let client = match listener.accept() {
                Ok((client, _)) => client,
                Err(error) if is_transient(&error) => {
                    debug!(%error, "accept failed; accepting again");
                    if is_exhaustion(&error) {
                        thread::sleep(EXHAUSTED_PAUSE);
                    }
                    continue;
                }
                Err(error) => return Err(error),
            };
            let Some(seat) = Seat::take(&self) else {
                debug!("{MAX_CLIENTS} clients already: closing a new one");
                continue;
            };
            let proxy = Arc::clone(&self);
            let spawned = thread::Builder::new()
                .name("burrow-proxy".to_owned())
                .spawn(move || {
                    proxy.serve_client(client);
                    drop(seat);
                });
            if let Err(error) = spawned {
                debug!(%error, "no thread for a new client: closing it");
            }
        }
    }

    /// [`serve`](Proxy::serve) on a new thread.
    pub fn spawn(self, listener: TcpListener) -> io::Result<thread::JoinHandle<()>> {
        let proxy = Arc::new(self);
        thread::Builder::new()
            .name("burrow-proxy-accept".to_owned())
            .spawn(move || {
                if let Err(error) = proxy.serve(listener) {
                    debug!(%error, "the proxy's listener failed");
                }
            })
    }

    pub(crate) fn rules(&self) -> &NetworkRules {
        &self.rules
    }

    /// Connects to `target` if the rules allow it, at one of the addresses checked; a refusal
    /// is reported to the sink.
    pub(crate) fn open(&self, target: &Target) -> Result<TcpStream, OpenError> {
        let addresses = admit(&self.rules, &self.resolver, target).map_err(|refused| {
            let reason = refused.reason();
            debug!(%target, reason, "refused");
            self.sink
                .denied(&Denial::now(&target.host, target.port, reason));
            OpenError::Refused(refused)
        })?;
        connect_to_any(&addresses).map_err(OpenError::Unreachable)
    }

    /// Serves one client to the end; its failures end only its connection.
    fn serve_client(&self, client: TcpStream) {
        let peer = client.peer_addr().ok();
        let deadline = Deadline::after(REQUEST_TIMEOUT);
        let mut first = [0; 1];
        let served = match deadline.peek(&client, &mut first) {
            Ok(0) => Ok(()),
            Ok(_) if first[0] == socks::VERSION => socks::serve(self, client, deadline),
            Ok(_) => http::serve(self, client, deadline),
            Err(error) => Err(error),
        };
        if let Err(error) = served {
            debug!(?peer, %error, "client connection ended with an error");
        }
    }
}

/// One of the [`MAX_CLIENTS`] places, given back when dropped.
struct Seat(Arc<Proxy>);

impl Seat {
    fn take(proxy: &Arc<Proxy>) -> Option<Seat> {
        proxy
            .clients
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |taken| {
                (taken < MAX_CLIENTS).then_some(taken + 1)
            })
            .ok()
            .map(|_| Seat(Arc::clone(proxy)))
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.clients.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Accept errors that concern one connection or a passing shortage, not the listener.
fn is_transient(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::Interrupted
    ) || is_exhaustion(error)
        || error
            .raw_os_error()
            .is_some_and(|code| [errno::EPROTO, errno::EPERM].contains(&code))
}

/// Out of file descriptors, buffers or memory.
fn is_exhaustion(error: &io::Error) -> bool {
    error.raw_os_error().is_some_and(|code| {
        [errno::EMFILE, errno::ENFILE, errno::ENOBUFS, errno::ENOMEM].contains(&code)
    })
}

/// The error numbers `accept` may report, as `io::Error::raw_os_error` gives them.
mod errno {
    use rustix::io::Errno;

    pub const EPROTO: i32 = Errno::PROTO.raw_os_error();
    pub const EPERM: i32 = Errno::PERM.raw_os_error();
    pub const EMFILE: i32 = Errno::MFILE.raw_os_error();
    pub const ENFILE: i32 = Errno::NFILE.raw_os_error();
    pub const ENOBUFS: i32 = Errno::NOBUFS.raw_os_error();
    pub const ENOMEM: i32 = Errno::NOMEM.raw_os_error();
}

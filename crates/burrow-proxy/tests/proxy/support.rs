//! Local servers, a proxy on 127.0.0.1, and clients that talk to it. Nothing here reaches an
//! address other than 127.0.0.1.

use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use burrow_policy::NetworkRules;
use burrow_proxy::{Denial, DenialSink, Proxy, Resolver};

pub const LOOPBACK: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);

/// Long enough for any test machine; only there so that a broken proxy fails a test instead
/// of hanging it.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// The denials a proxy reported.
#[derive(Debug, Default)]
pub struct Recorded(Mutex<Vec<Denial>>);

impl Recorded {
    pub fn all(&self) -> Vec<Denial> {
        self.0.lock().unwrap().clone()
    }
}

impl DenialSink for Recorded {
    fn denied(&self, denial: &Denial) {
        self.0.lock().unwrap().push(denial.clone());
    }
}

pub fn rules(allow: &[&str], deny: &[&str], allow_private: bool) -> NetworkRules {
    NetworkRules {
        allow: allow
            .iter()
            .map(|pattern| pattern.parse().unwrap())
            .collect(),
        deny: deny
            .iter()
            .map(|pattern| pattern.parse().unwrap())
            .collect(),
        allow_private,
    }
}

/// A resolver mapping each name to 127.0.0.1.
pub fn local_names(names: &[&str]) -> Resolver {
    names.iter().fold(Resolver::system(), |resolver, name| {
        resolver.with_override(name, LOOPBACK)
    })
}

/// A proxy serving a listener on 127.0.0.1.
pub struct TestProxy {
    pub address: SocketAddr,
    pub denials: Arc<Recorded>,
}

impl TestProxy {
    pub fn start(rules: NetworkRules, resolver: Resolver) -> TestProxy {
        let listener = TcpListener::bind((LOOPBACK, 0)).unwrap();
        let address = listener.local_addr().unwrap();
        let denials = Arc::new(Recorded::default());
        Proxy::new(rules, resolver, denials.clone())
            .spawn(listener)
            .unwrap();
        TestProxy { address, denials }
    }

    /// A proxy allowing `name`, which resolves to this machine's loopback (so private
    /// addresses are allowed too).
    pub fn allowing_local(name: &str) -> TestProxy {
        TestProxy::start(rules(&[name], &[], true), local_names(&[name]))
    }

    pub fn connect(&self) -> TcpStream {
        let stream = TcpStream::connect(self.address).unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream.set_write_timeout(Some(PATIENCE)).unwrap();
        stream
    }

    /// Sends `CONNECT authority` and returns the whole answer when it is not a 200, or the
    /// tunnel when it is.
    pub fn http_connect(&self, authority: &str) -> Result<TcpStream, Response> {
        let mut stream = self.connect();
        write!(
            stream,
            "CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n"
        )
        .unwrap();
        let head = read_head(&mut stream);
        if head.starts_with("HTTP/1.1 200 ") {
            Ok(stream)
        } else {
            let mut body = Vec::new();
            stream.read_to_end(&mut body).unwrap();
            Err(Response::parse(&head, body))
        }
    }

    /// Sends `request` as it is and reads the whole answer, until the proxy closes.
    pub fn exchange(&self, request: &[u8]) -> Response {
        let mut stream = self.connect();
        stream.write_all(request).unwrap();
        let head = read_head(&mut stream);
        let mut body = Vec::new();
        stream.read_to_end(&mut body).unwrap();
        Response::parse(&head, body)
    }

    /// Greets as a SOCKS5 client offering no authentication, asks to connect to `address`
    /// (already encoded: type, address, port), and returns the reply code and the stream.
    pub fn socks_connect(&self, encoded_address: &[u8]) -> (u8, TcpStream) {
        let mut stream = self.connect();
        stream.write_all(&[5, 1, 0]).unwrap();
        let mut choice = [0; 2];
        stream.read_exact(&mut choice).unwrap();
        assert_eq!(choice, [5, 0]);
        let mut request = vec![5, 1, 0];
        request.extend_from_slice(encoded_address);
        stream.write_all(&request).unwrap();
        let code = read_socks_reply(&mut stream);
        (code, stream)
    }
}

/// A SOCKS5 address of type "domain name".
pub fn socks_name(name: &str, port: u16) -> Vec<u8> {
    let mut encoded = vec![3, u8::try_from(name.len()).unwrap()];
    encoded.extend_from_slice(name.as_bytes());
    encoded.extend_from_slice(&port.to_be_bytes());
    encoded
}

/// Reads a SOCKS5 reply, checks its shape, and returns its code.
pub fn read_socks_reply(stream: &mut TcpStream) -> u8 {
    let mut header = [0; 4];
    stream.read_exact(&mut header).unwrap();
    assert_eq!(header[0], 5);
    let address_length = match header[3] {
        1 => 4,
        4 => 16,
        other => panic!("unexpected address type {other}"),
    };
    let mut rest = vec![0; address_length + 2];
    stream.read_exact(&mut rest).unwrap();
    header[1]
}

/// An answer from the proxy or a server.
#[derive(Debug)]
pub struct Response {
    pub status_line: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    fn parse(head: &str, body: Vec<u8>) -> Response {
        let mut lines = head.split("\r\n");
        let status_line = lines.next().unwrap().to_owned();
        let headers = lines
            .filter(|line| !line.is_empty())
            .map(|line| {
                let (name, value) = line.split_once(':').unwrap();
                (name.to_owned(), value.trim().to_owned())
            })
            .collect();
        Response {
            status_line,
            headers,
            body,
        }
    }

    pub fn status(&self) -> u16 {
        self.status_line.split(' ').nth(1).unwrap().parse().unwrap()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(header, _)| header.eq_ignore_ascii_case(name))
            .map(|(_, value)| value.as_str())
    }

    pub fn body_text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }
}

/// Reads byte by byte up to the blank line, so that nothing after the head is consumed.
pub fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0; 1];
    while !head.ends_with(b"\r\n\r\n") {
        match stream.read(&mut byte) {
            Ok(0) => panic!(
                "closed before the end of the head: {:?}",
                String::from_utf8_lossy(&head)
            ),
            Ok(_) => head.push(byte[0]),
            Err(error) => panic!("cannot read the head: {error}"),
        }
    }
    String::from_utf8(head).unwrap()
}

/// A server on 127.0.0.1 that sends back everything it receives, and half-closes when its
/// client does.
pub fn echo_server() -> SocketAddr {
    serve_each(|mut stream| {
        let mut reader = stream.try_clone()?;
        io::copy(&mut reader, &mut stream)?;
        stream.shutdown(Shutdown::Write)
    })
}

/// A server on 127.0.0.1 that reads one request head (and a body of `Content-Length` bytes),
/// hands the raw request to the test, and answers `response`.
pub fn http_server(response: &'static str) -> (SocketAddr, Receiver<Vec<u8>>) {
    let (sender, received) = mpsc::channel();
    let sender = Mutex::new(sender);
    let address = serve_each(move |mut stream| {
        let head = read_head(&mut stream);
        let length = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length")
                    .then(|| value.trim().parse::<usize>().unwrap())
            })
            .unwrap_or(0);
        let mut body = vec![0; length];
        stream.read_exact(&mut body)?;
        let mut request = head.into_bytes();
        request.extend_from_slice(&body);
        sender.lock().unwrap().send(request).unwrap();
        stream.write_all(response.as_bytes())?;
        Ok(())
    });
    (address, received)
}

/// Accepts connections on 127.0.0.1 forever, each handled by `handle` on its own thread.
pub fn serve_each<F>(handle: F) -> SocketAddr
where
    F: Fn(TcpStream) -> io::Result<()> + Send + Sync + 'static,
{
    let listener = TcpListener::bind((LOOPBACK, 0)).unwrap();
    let address = listener.local_addr().unwrap();
    let handle = Arc::new(handle);
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            let handle = Arc::clone(&handle);
            thread::spawn(move || {
                let _ = handle(stream);
            });
        }
    });
    address
}

/// Sends `message` through `stream`, half-closes, and returns everything that comes back.
pub fn round_trip(mut stream: TcpStream, message: &[u8]) -> Vec<u8> {
    stream.write_all(message).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    answer
}

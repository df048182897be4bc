//! Network modes: none (the default), loopback, host.

use std::io::Write;
use std::net::TcpListener;

use crate::cell_test;

/// A TCP server on the host's loopback that answers every connection with "hello".
fn hello_server() -> (u16, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    listener.set_nonblocking(false).unwrap();
    let thread = std::thread::spawn(move || {
        // Serve a bounded number of connections, then stop.
        for stream in listener.incoming().take(4).flatten() {
            let mut stream = stream;
            let _ = stream.write_all(b"hello");
        }
    });
    (port, thread)
}

fn connect_script(port: u16) -> String {
    format!(
        "python3 -c 'import socket; s=socket.create_connection((\"127.0.0.1\", {port}), timeout=5); print(s.recv(5).decode())'"
    )
}

cell_test!(the_default_network_reaches_nothing, |t| {
    let (port, _server) = hello_server();
    let control = t.run_on_host(&[], &connect_script(port));
    assert_eq!(control.stdout(), "hello\n", "{control:#?}");
    let run = t.run_json(&[], &connect_script(port));
    run.assert_failure_mentioning("Address family not supported");
    let hints = run.json["hints"].to_string();
    assert!(hints.contains("--network host"), "{hints}");
});

cell_test!(loopback_has_its_own_loopback_only, |t| {
    let (port, _server) = hello_server();
    // The host's server is not on the cell's loopback.
    let run = t.run_json(&["--network", "loopback"], &connect_script(port));
    run.assert_failure_mentioning("Connection refused");
    // A server inside the cell is reachable from inside the cell.
    let script = r#"python3 -c '
import socket, threading
srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(1)
port = srv.getsockname()[1]
threading.Thread(target=lambda: srv.accept()[0].sendall(b"inside"), daemon=True).start()
c = socket.create_connection(("127.0.0.1", port), timeout=5)
print(c.recv(6).decode())'"#;
    let run = t.run_json(&["--network", "loopback"], script);
    run.assert_success();
    assert_eq!(run.stdout(), "inside\n");
});

cell_test!(host_network_reaches_the_hosts_server, |t| {
    let (port, _server) = hello_server();
    let run = t.run_json(&["--network", "host"], &connect_script(port));
    run.assert_success();
    assert_eq!(run.stdout(), "hello\n");
});

cell_test!(host_network_cannot_reach_abstract_unix_sockets, |t| {
    // Abstract sockets belong to the network namespace, so with the host's network only
    // Landlock's scoping stops the cell from reaching the host's (X11, D-Bus and the like).
    let name = format!("burrow-test-abstract-{}-{}", std::process::id(), t.uid);
    let listener = std::os::unix::net::UnixListener::bind_addr(
        &<std::os::unix::net::SocketAddr as std::os::linux::net::SocketAddrExt>::from_abstract_name(name.as_bytes()).unwrap(),
    )
    .unwrap();
    let script = format!(
        "python3 -c 'import socket; s=socket.socket(socket.AF_UNIX); s.connect(\"\\0{name}\"); print(\"connected\")'"
    );
    let control = t.run_on_host(&[], &script);
    assert!(control.stdout().contains("connected"), "{control:#?}");
    let run = t.run_json(&["--network", "host"], &script);
    assert!(!run.stdout().contains("connected"), "{run:#?}");
    drop(listener);
});

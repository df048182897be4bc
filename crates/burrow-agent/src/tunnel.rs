//! Published ports: a connection from the host that asked for `TcpConnect` becomes a plain
//! byte pipe to a TCP port on the cell's loopback.

use tokio::io::AsyncWriteExt;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use burrow_proto::{ErrorCode, Frame, Message};

/// Connects to `port` in the cell, answers the request, then copies bytes both ways until
/// either side closes.
pub async fn run(
    id: u64,
    port: u16,
    early: Vec<u8>,
    reader: OwnedReadHalf,
    out: mpsc::Sender<Frame>,
    writer: JoinHandle<OwnedWriteHalf>,
) {
    let connected = tokio::net::TcpStream::connect(("127.0.0.1", port)).await;
    let answer = match &connected {
        Ok(_) => Message::Done { id },
        Err(error) => Message::Failed {
            id,
            code: ErrorCode::Io,
            message: format!("cannot connect to port {port} in the cell: {error}"),
        },
    };
    let _ = out.send(Frame::Message(answer)).await;
    // The writer task ends once its last sender is gone, handing the socket back.
    drop(out);
    let Ok(writer) = writer.await else {
        return;
    };
    let Ok(mut tcp) = connected else {
        return;
    };
    let Ok(mut host) = reader.reunite(writer) else {
        return;
    };
    if !early.is_empty() && tcp.write_all(&early).await.is_err() {
        return;
    }
    let _ = tokio::io::copy_bidirectional(&mut host, &mut tcp).await;
}

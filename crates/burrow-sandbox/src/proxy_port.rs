//! The proxy's port in an `allow`-mode cell: a TCP socket listening on the cell's loopback,
//! made by the init inside the cell's network namespace and sent to burrow over a unix socket.
//!
//! A socket belongs to the network namespace it was created in, wherever its descriptor goes:
//! burrow accepts the cell's connections on it from the host side and makes the outbound ones
//! from the host's namespace. No forwarding process runs in the cell, and no path leads out of
//! it but this one port.

use std::mem::MaybeUninit;
use std::net::{Ipv4Addr, SocketAddrV4};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use burrow_policy::PROXY_PORT;
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType,
};

use crate::error::SandboxError;

/// Connections waiting to be accepted before the kernel refuses more.
const BACKLOG: i32 = 512;

/// The channel: burrow's end and the init's.
pub(crate) fn channel() -> Result<(OwnedFd, OwnedFd), SandboxError> {
    rustix::net::socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )
    .map_err(SandboxError::errno("create the proxy's channel"))
}

/// In the init, inside the cell's network namespace: binds 127.0.0.1:PROXY_PORT and sends
/// the listening socket to burrow.
pub(crate) fn open_and_hand_over(channel: BorrowedFd<'_>) -> std::io::Result<()> {
    let listener = rustix::net::socket_with(
        AddressFamily::INET,
        SocketType::STREAM,
        SocketFlags::CLOEXEC,
        None,
    )?;
    rustix::net::bind(
        &listener,
        &SocketAddrV4::new(Ipv4Addr::LOCALHOST, PROXY_PORT),
    )?;
    rustix::net::listen(&listener, BACKLOG)?;
    let fds = [listener.as_fd()];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    control.push(SendAncillaryMessage::ScmRights(&fds));
    rustix::net::sendmsg(
        channel,
        &[std::io::IoSlice::new(b"p")],
        &mut control,
        SendFlags::NOSIGNAL,
    )?;
    Ok(())
}

/// In burrow: the listening socket the init sent, or `None` if it ended without sending one
/// (its report says why).
pub(crate) fn receive(channel: BorrowedFd<'_>) -> Result<Option<OwnedFd>, SandboxError> {
    let mut byte = [0u8; 1];
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(1))];
    let mut control = RecvAncillaryBuffer::new(&mut space);
    loop {
        match rustix::net::recvmsg(
            channel,
            &mut [std::io::IoSliceMut::new(&mut byte)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(_) => break,
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(SandboxError::errno("receive the proxy's port")(error)),
        }
    }
    let mut received = None;
    for message in control.drain() {
        if let RecvAncillaryMessage::ScmRights(fds) = message {
            for fd in fds {
                received.get_or_insert(fd);
            }
        }
    }
    Ok(received)
}

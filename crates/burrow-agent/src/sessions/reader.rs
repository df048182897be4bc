//! The reader thread: a session's stdout and stderr, read in the order they became ready.

use std::os::fd::OwnedFd;
use std::sync::PoisonError;

use super::{Output, Stream};

/// The reader thread: both streams through one epoll asked for one event at a time, so that
/// the stream that became ready first is read first.
pub(super) fn read_in_order(stdout: &OwnedFd, stderr: &OwnedFd, output: &Output) {
    use rustix::event::epoll;
    let finish = |output: &Output| {
        output
            .queue
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .closed = true;
        output.arrived.notify_one();
    };
    let Ok(poller) = epoll::create(epoll::CreateFlags::CLOEXEC) else {
        return finish(output);
    };
    let streams = [(stdout, Stream::Stdout), (stderr, Stream::Stderr)];
    for (index, (fd, _)) in streams.iter().enumerate() {
        if epoll::add(
            &poller,
            fd,
            epoll::EventData::new_u64(index as u64),
            epoll::EventFlags::IN,
        )
        .is_err()
        {
            return finish(output);
        }
    }
    let mut open = streams.len();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut events = Vec::with_capacity(1);
    while open > 0 {
        events.clear();
        match epoll::wait(&poller, rustix::buffer::spare_capacity(&mut events), None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => break,
        }
        let Some(event) = events.first() else {
            continue;
        };
        let Some((fd, stream)) = streams.get(event.data.u64() as usize) else {
            continue;
        };
        match rustix::io::read(fd, &mut buffer) {
            Ok(0) | Err(_) => {
                let _ = epoll::delete(&poller, fd);
                open -= 1;
            }
            Ok(n) => {
                output
                    .queue
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .chunks
                    .push_back((*stream, buffer[..n].to_vec()));
                output.arrived.notify_one();
            }
        }
    }
    finish(output);
}

//! Large transfers: every byte arrives, in order, both ways at once.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::thread;

use crate::support::{TestProxy, echo_server};

const MIB: usize = 1024 * 1024;

/// A stream of pseudo-random bytes (xorshift), the same for the same seed.
struct Pattern(u64);

impl Pattern {
    fn fill(&mut self, buffer: &mut [u8]) {
        for chunk in buffer.chunks_exact_mut(8) {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            chunk.copy_from_slice(&self.0.to_le_bytes());
        }
    }
}

/// A running FNV-1a over 8-byte words: length and content together, order included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Checksum {
    length: u64,
    hash: u64,
}

impl Checksum {
    fn new() -> Checksum {
        Checksum {
            length: 0,
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Adds bytes whose count is a multiple of 8.
    fn add(&mut self, bytes: &[u8]) {
        for word in bytes.chunks_exact(8) {
            let word = u64::from_le_bytes(word.try_into().unwrap());
            self.hash = (self.hash ^ word).wrapping_mul(0x0100_0000_01b3);
        }
        self.length += bytes.len() as u64;
    }
}

/// Writes `total` pattern bytes, then half-closes; returns their checksum.
fn send(mut stream: TcpStream, total: usize, seed: u64) -> Checksum {
    let mut pattern = Pattern(seed);
    let mut buffer = vec![0; MIB];
    let mut checksum = Checksum::new();
    for _ in 0..total / MIB {
        pattern.fill(&mut buffer);
        checksum.add(&buffer);
        stream.write_all(&buffer).unwrap();
    }
    stream.shutdown(Shutdown::Write).unwrap();
    checksum
}

/// Reads to the end in whole MiB and returns the checksum of what came.
fn receive(mut stream: TcpStream) -> Checksum {
    let mut buffer = vec![0; MIB];
    let mut checksum = Checksum::new();
    loop {
        let mut filled = 0;
        while filled < MIB {
            match stream.read(&mut buffer[filled..]).unwrap() {
                0 => break,
                read => filled += read,
            }
        }
        assert_eq!(filled % 8, 0, "the stream ended mid-word");
        checksum.add(&buffer[..filled]);
        if filled < MIB {
            return checksum;
        }
    }
}

#[test]
fn a_256_mib_transfer_through_connect_arrives_intact_both_ways() {
    let echo = echo_server();
    let proxy = TestProxy::allowing_local("allowed.test");
    let tunnel = proxy
        .http_connect(&format!("allowed.test:{}", echo.port()))
        .unwrap();
    let reader = tunnel.try_clone().unwrap();
    let receiving = thread::spawn(move || receive(reader));
    let sent = send(tunnel, 256 * MIB, 0x9e37_79b9_7f4a_7c15);
    let received = receiving.join().unwrap();
    assert_eq!(sent.length, 256 * MIB as u64);
    assert_eq!(received, sent);
}

//! Throughput of `Capture::push`, run with
//! `cargo test -p burrow-output --release -- --ignored --nocapture`.

use std::hint::black_box;
use std::time::Instant;

use burrow_output::{Capture, CaptureLimits};

fn measure(name: &str, chunk: &[u8]) {
    let total: usize = 8 << 30;
    let mut capture = Capture::new(CaptureLimits::DEFAULT);
    let started = Instant::now();
    for _ in 0..total / chunk.len() {
        capture.push(black_box(chunk));
    }
    let captured = black_box(capture.finish());
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(captured.total_bytes, total as u64);
    let megabytes = total as f64 / 1e6;
    println!(
        "{name}: {:.0} MB/s ({megabytes:.0} MB in {seconds:.2} s)",
        megabytes / seconds
    );
}

#[test]
#[ignore = "throughput measurement; run in release"]
fn push_throughput() {
    let mib = 1024 * 1024;
    let log: Vec<u8> = b"2024-05-01T12:00:00Z INFO compiling crate foo v0.1.0 (/src/foo)\n"
        .iter()
        .copied()
        .cycle()
        .take(mib)
        .collect();
    measure("1 MiB chunks, 64-byte lines", &log);
    let short: Vec<u8> = b"ok\n".iter().copied().cycle().take(mib).collect();
    measure("1 MiB chunks, 3-byte lines", &short);
    measure("1 MiB chunks, no newlines", &vec![b'x'; mib]);
    measure("64 KiB chunks, 64-byte lines", &log[..64 * 1024]);
}

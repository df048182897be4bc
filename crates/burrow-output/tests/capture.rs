//! Behaviour of `Capture` against a reference computed on the whole input.

use std::ops::Range;

use burrow_output::{Capture, CaptureLimits, CaptureSink, Captured, Omitted, OutputSink, Stream};

/// splitmix64: deterministic, so a failure replays exactly.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `0..=max`.
    fn up_to(&mut self, max: usize) -> usize {
        (self.next() % (max as u64 + 1)) as usize
    }
}

fn random_input(rng: &mut Rng) -> Vec<u8> {
    let pieces: [&[u8]; 9] = [
        b"a",
        b"xyz",
        b"\n",
        b"\n\n",
        "é".as_bytes(),
        "€".as_bytes(),
        "𝄞".as_bytes(),
        b"\x80",
        b"\xC3",
    ];
    let len = if rng.up_to(9) == 0 {
        rng.up_to(600)
    } else {
        rng.up_to(80)
    };
    let mut input = Vec::new();
    while input.len() < len {
        input.extend_from_slice(pieces[rng.up_to(pieces.len() - 1)]);
    }
    input
}

fn random_limits(rng: &mut Rng, input_len: usize) -> CaptureLimits {
    let max_bytes = match rng.up_to(3) {
        0 => rng.up_to(3),
        1 => rng.up_to(11) | 1,
        _ => rng.up_to(input_len + 10),
    };
    let max_lines = match rng.up_to(3) {
        0 => None,
        1 => Some(rng.up_to(3)),
        _ => Some(rng.up_to(20)),
    };
    CaptureLimits {
        max_bytes,
        max_lines,
    }
}

/// Pushes `input` in random pieces, empty ones included.
fn capture_chunked(input: &[u8], limits: CaptureLimits, rng: &mut Rng) -> Captured {
    let mut capture = Capture::new(limits);
    let largest = rng.up_to(input.len()) + 1;
    let mut rest = input;
    while !rest.is_empty() {
        let (chunk, after) = rest.split_at(rng.up_to(largest).min(rest.len()));
        capture.push(chunk);
        rest = after;
    }
    assert_eq!(capture.total_bytes(), input.len() as u64);
    capture.finish()
}

/// Every line of `input` as a byte range, its newline included.
fn lines_of(input: &[u8]) -> Vec<Range<usize>> {
    let mut lines = Vec::new();
    let mut start = 0;
    for (at, &byte) in input.iter().enumerate() {
        if byte == b'\n' {
            lines.push(start..at + 1);
            start = at + 1;
        }
    }
    if start < input.len() {
        lines.push(start..input.len());
    }
    lines
}

fn is_continuation(byte: u8) -> bool {
    (0x80..0xC0).contains(&byte)
}

/// Whether `end` falls inside a character: some lead byte in the 3 bytes
/// before it announces a sequence reaching past it, with only continuation
/// bytes in between.
fn ends_inside_char(input: &[u8], end: usize) -> Option<usize> {
    (end.saturating_sub(3)..end).find(|&lead| {
        let announced = match input[lead] {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        lead + announced > end && input[lead + 1..end].iter().all(|&b| is_continuation(b))
    })
}

/// The specification, applied to the whole input at once.
fn reference(input: &[u8], limits: CaptureLimits) -> Captured {
    let len = input.len();
    let lines = lines_of(input);
    let head_bytes = limits.max_bytes / 2;
    let tail_bytes = limits.max_bytes - head_bytes;
    let fits = len <= limits.max_bytes && limits.max_lines.is_none_or(|n| lines.len() <= n);
    let mut captured = Captured {
        head: Vec::new(),
        tail: Vec::new(),
        omitted: None,
        total_bytes: len as u64,
        total_lines: lines.len() as u64,
    };
    if fits {
        let split = head_bytes.min(len);
        captured.head = input[..split].to_vec();
        captured.tail = input[split..].to_vec();
        return captured;
    }

    let mut head_end = head_bytes.min(len);
    if let Some(n) = limits.max_lines {
        let after_lines = match n / 2 {
            0 => 0,
            k => lines.get(k - 1).map_or(len, |line| line.end),
        };
        head_end = head_end.min(after_lines);
    }
    if let Some(lead) = ends_inside_char(input, head_end) {
        head_end = lead;
    }
    if head_end > 0
        && input[head_end - 1] != b'\n'
        && let Some(newline) = input[..head_end].iter().rposition(|&b| b == b'\n')
    {
        head_end = newline + 1;
    }

    let lines_from = |start: usize| lines.iter().filter(|line| line.end > start).count();
    let mut tail_start = len.saturating_sub(tail_bytes).max(head_end);
    if let Some(n) = limits.max_lines {
        let budget = n - n / 2;
        let first_candidate = tail_start;
        tail_start = (first_candidate..=len)
            .find(|&s| {
                let starts_line = s == first_candidate || s == len || input[s - 1] == b'\n';
                starts_line && lines_from(s) <= budget
            })
            // `len` itself always qualifies: nothing after it, zero lines.
            .unwrap_or(len);
    }
    for _ in 0..3 {
        if tail_start < len && is_continuation(input[tail_start]) {
            tail_start += 1;
        }
    }
    if tail_start > 0
        && tail_start < len
        && input[tail_start - 1] != b'\n'
        && let Some(newline) = input[tail_start..len - 1].iter().position(|&b| b == b'\n')
    {
        tail_start += newline + 1;
    }

    let omitted_lines = lines
        .iter()
        .filter(|line| line.start < tail_start && line.end > head_end)
        .count();
    let head_lines = lines.iter().filter(|line| line.end <= head_end).count();
    let tail_lines = lines.iter().filter(|line| line.start >= tail_start).count();
    assert_eq!(head_lines + omitted_lines + tail_lines, lines.len());

    captured.head = input[..head_end].to_vec();
    captured.tail = input[tail_start..].to_vec();
    captured.omitted = Some(Omitted {
        bytes: (tail_start - head_end) as u64,
        lines: omitted_lines as u64,
    });
    captured
}

fn limits(max_bytes: usize, max_lines: Option<usize>) -> CaptureLimits {
    CaptureLimits {
        max_bytes,
        max_lines,
    }
}

fn capture_all(input: &[u8], limits: CaptureLimits) -> Captured {
    let mut capture = Capture::new(limits);
    capture.push(input);
    capture.finish()
}

#[test]
fn exact_when_under_the_cap_for_any_chunking() {
    let mut rng = Rng(1);
    for _ in 0..3000 {
        let input = random_input(&mut rng);
        let lines = lines_of(&input).len();
        let max_lines = match rng.up_to(2) {
            0 => None,
            _ => Some(lines + rng.up_to(3)),
        };
        let limits = limits(input.len() + rng.up_to(3), max_lines);
        let captured = capture_chunked(&input, limits, &mut rng);
        assert_eq!(captured.omitted, None, "input {input:?}, {limits:?}");
        assert_eq!([captured.head.as_slice(), &captured.tail].concat(), input);
        assert_eq!(captured.to_bytes(), input);
        assert!(captured.head.len() <= limits.max_bytes / 2);
        assert_eq!(captured.total_lines, lines as u64);
    }
}

#[test]
fn matches_the_reference_for_random_inputs_caps_and_chunkings() {
    let mut rng = Rng(2);
    let mut omitted_seen = 0;
    for _ in 0..20_000 {
        let input = random_input(&mut rng);
        let limits = random_limits(&mut rng, input.len());
        let captured = capture_chunked(&input, limits, &mut rng);
        assert_eq!(
            captured,
            reference(&input, limits),
            "input {input:?}, {limits:?}"
        );
        if let Some(omitted) = captured.omitted {
            omitted_seen += 1;
            assert!(omitted.bytes > 0);
            let kept = (captured.head.len() + captured.tail.len()) as u64;
            assert_eq!(kept + omitted.bytes, captured.total_bytes);
            assert!(captured.head.len() <= limits.max_bytes / 2);
            assert!(captured.tail.len() <= limits.max_bytes - limits.max_bytes / 2);
        }
    }
    assert!(omitted_seen > 5000, "too few capped cases: {omitted_seen}");
}

#[test]
fn line_cap_alone() {
    let input: String = (0..10).map(|i| format!("line {i}\n")).collect();
    let captured = capture_all(input.as_bytes(), limits(usize::MAX, Some(4)));
    assert_eq!(captured.head, b"line 0\nline 1\n");
    assert_eq!(captured.tail, b"line 8\nline 9\n");
    assert_eq!(
        captured.omitted,
        Some(Omitted {
            bytes: 42,
            lines: 6
        })
    );
    assert_eq!(captured.total_lines, 10);

    // An odd cap gives the tail the extra line.
    let captured = capture_all(input.as_bytes(), limits(usize::MAX, Some(5)));
    assert_eq!(captured.head, b"line 0\nline 1\n");
    assert_eq!(captured.tail, b"line 7\nline 8\nline 9\n");
    assert_eq!(
        captured.omitted,
        Some(Omitted {
            bytes: 35,
            lines: 5
        })
    );

    // A final line without newline is still a line.
    let captured = capture_all(b"a\nb\nc\nd", limits(usize::MAX, Some(2)));
    assert_eq!(
        (captured.head.as_slice(), captured.tail.as_slice()),
        (&b"a\n"[..], &b"d"[..])
    );
    assert_eq!(captured.omitted, Some(Omitted { bytes: 4, lines: 2 }));
    assert_eq!(captured.total_lines, 4);

    let captured = capture_all(b"a\nb\n", limits(usize::MAX, Some(0)));
    assert_eq!((captured.head.len(), captured.tail.len()), (0, 0));
    assert_eq!(captured.omitted, Some(Omitted { bytes: 4, lines: 2 }));
}

#[test]
fn byte_cap_alone() {
    let input = [b'x'; 100];
    let captured = capture_all(&input, limits(11, None));
    assert_eq!((captured.head.len(), captured.tail.len()), (5, 6));
    assert_eq!(
        captured.omitted,
        Some(Omitted {
            bytes: 89,
            lines: 1
        })
    );

    // The cut lines are counted once each, whole lines in between too.
    let captured = capture_all(b"abc\ndef\nghi\njkl\n", limits(6, None));
    assert_eq!(captured.head, b"abc");
    assert_eq!(captured.tail, b"kl\n");
    assert_eq!(
        captured.omitted,
        Some(Omitted {
            bytes: 10,
            lines: 4
        })
    );

    let captured = capture_all(b"abc\ndef\n", limits(0, None));
    assert_eq!((captured.head.len(), captured.tail.len()), (0, 0));
    assert_eq!(captured.omitted, Some(Omitted { bytes: 8, lines: 2 }));
    assert_eq!(
        captured.to_bytes(),
        b"[... burrow omitted 8 bytes, 2 lines ...]\n"
    );

    let captured = capture_all(b"", limits(0, Some(0)));
    assert_eq!(captured.omitted, None);
    assert_eq!(captured.to_bytes(), b"");
}

#[test]
fn byte_and_line_caps_together() {
    let input = b"aaaaaaaaa\n".repeat(10);
    // The head's byte budget runs out inside line 2 and the tail's inside line
    // 9: both cuts move to line boundaries, so only whole lines are kept.
    let captured = capture_all(&input, limits(30, Some(4)));
    assert_eq!(captured.head, b"aaaaaaaaa\n");
    assert_eq!(captured.tail, b"aaaaaaaaa\n");
    assert_eq!(
        captured.omitted,
        Some(Omitted {
            bytes: 80,
            lines: 8
        })
    );

    // Now the line budgets are hit first on both sides.
    let captured = capture_all(&input, limits(30, Some(2)));
    assert_eq!(captured.head, b"aaaaaaaaa\n");
    assert_eq!(captured.tail, b"aaaaaaaaa\n");
    assert_eq!(
        captured.omitted,
        Some(Omitted {
            bytes: 80,
            lines: 8
        })
    );
}

#[test]
fn cuts_never_split_a_utf8_character() {
    let text = "é€a€éé\n€€é".repeat(4);
    let input = text.as_bytes();
    for max_bytes in 0..=input.len() + 1 {
        for max_lines in [None, Some(1), Some(3)] {
            let limits = limits(max_bytes, max_lines);
            let captured = capture_all(input, limits);
            assert!(std::str::from_utf8(&captured.head).is_ok(), "{limits:?}");
            assert!(std::str::from_utf8(&captured.tail).is_ok(), "{limits:?}");
            assert!(input.starts_with(&captured.head) && input.ends_with(&captured.tail));
            assert_eq!(captured, reference(input, limits));
            for split in 0..=input.len() {
                let mut capture = Capture::new(limits);
                capture.push(&input[..split]);
                capture.push(&input[split..]);
                assert_eq!(capture.finish(), captured, "{limits:?}, split at {split}");
            }
        }
    }

    // The bytes given up at the boundaries count as omitted.
    let captured = capture_all("€€€€".as_bytes(), limits(8, None));
    assert_eq!(captured.head, "€".as_bytes());
    assert_eq!(captured.tail, "€".as_bytes());
    assert_eq!(captured.omitted, Some(Omitted { bytes: 6, lines: 1 }));
}

#[test]
fn marker_text() {
    let input: String = (1..=4).map(|i| format!("line{i}\n")).collect();
    let captured = capture_all(input.as_bytes(), limits(1000, Some(2)));
    assert_eq!(
        captured.to_string_lossy(),
        "line1\n[... burrow omitted 12 bytes, 2 lines ...]\nline4\n"
    );

    // A head ending mid-line gets the marker on a line of its own.
    let captured = capture_all(b"abcdefghij", limits(4, None));
    assert_eq!(
        captured.to_bytes(),
        b"ab\n[... burrow omitted 6 bytes, 1 line ...]\nij"
    );

    // An empty head needs no line break before the marker.
    let captured = capture_all(b"abcdef", limits(1, None));
    assert_eq!(
        captured.to_string_lossy(),
        "[... burrow omitted 5 bytes, 1 line ...]\nf"
    );

    let captured = capture_all(b"ok\xFF\n", limits(100, None));
    assert_eq!(captured.omitted, None);
    assert_eq!(captured.to_string_lossy(), "ok\u{FFFD}\n");
}

#[test]
fn sink_captures_each_stream_separately() {
    let mut sink = CaptureSink::new(limits(6, None));
    sink.write(Stream::Stdout, b"out1\n");
    sink.write(Stream::Stderr, b"err\n");
    sink.write(Stream::Stdout, b"out2\n");
    let (stdout, stderr) = sink.finish();
    assert_eq!(stdout.head, b"out");
    assert_eq!(stdout.tail, b"t2\n");
    assert_eq!(stdout.omitted, Some(Omitted { bytes: 4, lines: 2 }));
    assert_eq!(stdout.total_bytes, 10);
    assert_eq!(stderr.to_bytes(), b"err\n");
    assert_eq!(stderr.omitted, None);
}

//! How a command's end is framed and found: the shell text that prints the end markers, and
//! the scanner that finds them in both streams.

use super::{Output, Stream};

/// The shell text that runs `command` and then prints the end markers.
///
/// The command runs in a function of the session's shell (so what it changes stays), with
/// stdin from /dev/null; SIGINT (sent by the agent on a timeout) makes the shell return from
/// that function, so that the rest of the command line does not run after what was interrupted.
pub(super) fn wrap(command: &str, nonce: &str) -> String {
    // POSIX single quotes hold anything but a single quote, which is closed, escaped and
    // reopened: the command reaches eval byte for byte, whatever it contains.
    let quoted = command.replace('\'', r"'\''");
    format!(
        "__burrow_c='{quoted}'\n\
         __burrow_run() {{ eval \"$__burrow_c\"\n}}\n\
         trap 'return 130' INT\n\
         __burrow_run </dev/null\n\
         __burrow_s=$?\n\
         trap - INT\n\
         command printf '\\036{nonce} %s %s\\036' \"$__burrow_s\" \"$PWD\"\n\
         command printf '\\036{nonce}\\036' >&2\n"
    )
}

/// 16 random hex digits.
pub(super) fn nonce() -> String {
    let mut bytes = [0u8; 8];
    if rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes = (nanos as u64).to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What collecting a command's output ended with.
#[derive(Debug)]
pub(super) enum Collected {
    /// Both markers: the command's status and the shell's directory after it.
    Done { status: i32, cwd: String },
    /// The shell's streams closed first.
    ShellEnded,
}

/// Finds the end markers in both streams, passing everything before them on.
pub(super) struct Markers {
    marker: Vec<u8>,
    pending: [Vec<u8>; 2],
    stdout_end: Option<(i32, String)>,
    stderr_end: bool,
}

impl Markers {
    pub(super) fn new(nonce: &str) -> Markers {
        Markers {
            marker: format!("\x1e{nonce}").into_bytes(),
            pending: [Vec::new(), Vec::new()],
            stdout_end: None,
            stderr_end: false,
        }
    }

    /// Collects until both markers were seen or the streams closed.
    pub(super) async fn collect(
        &mut self,
        output: &Output,
        chunk: &mut dyn FnMut(Stream, Vec<u8>),
    ) -> Collected {
        loop {
            let notified = output.arrived.notified();
            let (chunks, closed) = output.take();
            for (stream, bytes) in chunks {
                self.feed(stream, &bytes, chunk);
            }
            if let (Some((status, cwd)), true) = (&self.stdout_end, self.stderr_end) {
                return Collected::Done {
                    status: *status,
                    cwd: cwd.clone(),
                };
            }
            if closed {
                for (index, stream) in [Stream::Stdout, Stream::Stderr].into_iter().enumerate() {
                    let rest = std::mem::take(&mut self.pending[index]);
                    if !rest.is_empty() {
                        chunk(stream, rest);
                    }
                }
                return Collected::ShellEnded;
            }
            notified.await;
        }
    }

    fn feed(&mut self, stream: Stream, bytes: &[u8], chunk: &mut dyn FnMut(Stream, Vec<u8>)) {
        let index = match stream {
            Stream::Stdout => 0,
            Stream::Stderr => 1,
        };
        let done = match stream {
            Stream::Stdout => self.stdout_end.is_some(),
            Stream::Stderr => self.stderr_end,
        };
        if done {
            // Output after the marker comes from something the command left running.
            chunk(stream, bytes.to_vec());
            return;
        }
        let pending = &mut self.pending[index];
        pending.extend_from_slice(bytes);
        if let Some(at) = find(pending, &self.marker) {
            let after = at + self.marker.len();
            // The marker ends with a second 0x1e; wait for it.
            let Some(close) = pending[after..].iter().position(|&b| b == 0x1e) else {
                if at > 0 {
                    chunk(stream, pending.drain(..at).collect());
                }
                return;
            };
            let payload = String::from_utf8_lossy(&pending[after..after + close]).into_owned();
            let rest = pending.split_off(after + close + 1);
            pending.truncate(at);
            if !pending.is_empty() {
                chunk(stream, std::mem::take(pending));
            }
            match stream {
                Stream::Stdout => {
                    let mut fields = payload.trim_start().splitn(2, ' ');
                    let status = fields.next().and_then(|s| s.parse().ok()).unwrap_or(-1);
                    let cwd = fields.next().unwrap_or("").to_owned();
                    self.stdout_end = Some((status, cwd));
                }
                Stream::Stderr => self.stderr_end = true,
            }
            if !rest.is_empty() {
                chunk(stream, rest);
            }
            return;
        }
        // Keep back only what could be the start of the marker.
        let keep = longest_marker_prefix_suffix(pending, &self.marker);
        let ready = pending.len() - keep;
        if ready > 0 {
            chunk(stream, pending.drain(..ready).collect());
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// The length of the longest suffix of `data` that is a proper prefix of `marker`.
fn longest_marker_prefix_suffix(data: &[u8], marker: &[u8]) -> usize {
    (1..marker.len().min(data.len() + 1))
        .rev()
        .find(|&len| data.ends_with(&marker[..len]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the scanner passed on, the stdout marker's payload, and whether stderr's came.
    type Scanned = (Vec<(Stream, Vec<u8>)>, Option<(i32, String)>, bool);

    fn run(marker_nonce: &str, feeds: &[(Stream, &[u8])]) -> Scanned {
        let mut markers = Markers::new(marker_nonce);
        let mut out = Vec::new();
        for (stream, bytes) in feeds {
            markers.feed(*stream, bytes, &mut |s, b| out.push((s, b)));
        }
        (out, markers.stdout_end.clone(), markers.stderr_end)
    }

    #[test]
    fn markers_split_anywhere_are_found_and_output_is_exact() {
        let full = b"no newline at end\x1eabc 3 /workspace/x y\x1e";
        for split in 0..full.len() {
            let (out, end, _) = run(
                "abc",
                &[
                    (Stream::Stdout, &full[..split]),
                    (Stream::Stdout, &full[split..]),
                ],
            );
            let text: Vec<u8> = out.iter().flat_map(|(_, b)| b.clone()).collect();
            assert_eq!(text, b"no newline at end", "split at {split}");
            assert_eq!(
                end,
                Some((3, "/workspace/x y".to_owned())),
                "split at {split}"
            );
        }
    }

    #[test]
    fn a_lone_record_separator_in_output_passes_through() {
        let (out, end, stderr_done) = run(
            "abc",
            &[
                (Stream::Stdout, b"a\x1eb\x1e"),
                (Stream::Stderr, b"\x1eabc\x1e"),
                (Stream::Stdout, b"\x1eabc 0 /w\x1e"),
            ],
        );
        let text: Vec<u8> = out.iter().flat_map(|(_, b)| b.clone()).collect();
        assert_eq!(text, b"a\x1eb\x1e");
        assert_eq!(end, Some((0, "/w".to_owned())));
        assert!(stderr_done);
    }

    #[test]
    fn the_wrapped_command_is_quoted_for_eval() {
        let script = wrap("echo 'it''s' \"$HOME\"", "n");
        assert!(
            script.starts_with("__burrow_c='echo '\\''it'\\'''\\''s'\\'' \"$HOME\"'\n"),
            "{script}"
        );
        assert!(
            script.contains("trap 'return 130' INT\n__burrow_run </dev/null\n"),
            "{script}"
        );
    }
}

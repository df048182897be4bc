//! What a caller is shown of a workspace's files, shell output and session commands:
//! redacted, capped, and cut where the next read can carry on. The CLI, the HTTP API and the
//! MCP tools all show these same pages, so a secret hidden in one is hidden in all.

use std::time::{Duration, Instant};

use burrow_output::terminal_text::{char_prefix, complete_prefix, strip_escapes, utf8_prefix};
use burrow_output::{Capture, CaptureLimits, Omitted, Stream};
use burrow_policy::Policy;
use burrow_proto::shell::ExitStatus;
use burrow_redact::{RedactStream, Redactor};
use serde::{Serialize, Serializer};

use crate::client::AgentClient;
use crate::client::interactive::{SessionEnd, ShellChunk, ShellWait};
use crate::error::Result;
use crate::handle::Handle;
use crate::journal;

/// Bytes of a service's log asked for at once.
const LOG_CHUNK: u64 = 1 << 20;

/// The longest a shell read waits for the shell to go quiet.
pub const MAX_SHELL_WAIT: Duration = Duration::from_secs(60);

/// The output caps of a policy, for results that hold a command's output.
pub fn capture_limits(policy: &Policy) -> CaptureLimits {
    CaptureLimits {
        max_bytes: usize::try_from(policy.output.max_bytes.bytes()).unwrap_or(usize::MAX),
        max_lines: policy
            .output
            .max_lines
            .map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
    }
}

/// Part of a file, as shown.
#[derive(Debug, Clone)]
pub struct FilePage {
    /// The file's whole size.
    pub size: u64,
    /// Where the page starts.
    pub offset: u64,
    /// Where the next page starts (`size` when this one reached the end).
    pub next_offset: u64,
    /// The bytes shown, redacted.
    pub bytes: Vec<u8>,
}

/// Reads about `max_bytes` of `path` from `offset`, redacted with the workspace's rules and
/// `rules`.
pub fn read_file(
    handle: &Handle,
    client: &mut AgentClient,
    path: &str,
    offset: u64,
    max_bytes: u64,
    rules: &[burrow_redact::RuleSpec],
) -> Result<FilePage> {
    let redactor = handle.redactor(rules)?;
    // Redaction looks behind the offset, so that a secret the page starts inside of is still
    // recognised (and shown as its replacement, not as its second half).
    let look_behind = if redactor.is_empty() {
        0
    } else {
        redactor.hold_back() as u64
    };
    let window_start = offset.saturating_sub(look_behind);
    let end = offset.saturating_add(max_bytes);
    let (raw, size) = read_range(client, path, window_start, end)?;
    let complete = end >= size;
    let (bytes, next_offset) = if redactor.is_empty() {
        let from = usize::try_from(offset - window_start).unwrap_or(usize::MAX);
        (
            raw.get(from..).unwrap_or_default().to_vec(),
            window_start + raw.len() as u64,
        )
    } else {
        redactor.redact_window(&raw, window_start, offset, complete)
    };
    Ok(FilePage {
        size,
        offset,
        next_offset: next_offset.max(offset.min(size)),
        bytes,
    })
}

/// The bytes of `path` in `[start, end)` (fewer at its end), and the file's size.
fn read_range(
    client: &mut AgentClient,
    path: &str,
    start: u64,
    end: u64,
) -> Result<(Vec<u8>, u64)> {
    let mut bytes = Vec::new();
    let mut position = start;
    let mut size = client.read_file(path, start, 0)?.size;
    while position < end.min(size) {
        let chunk = client.read_file(path, position, end - position)?;
        size = chunk.size;
        if chunk.bytes.is_empty() {
            break;
        }
        position += chunk.bytes.len() as u64;
        bytes.extend(chunk.bytes);
    }
    Ok((bytes, size))
}

/// How to read a shell's output.
#[derive(Debug, Clone, Copy)]
pub struct ShellRead {
    /// Where to start, as an absolute position in the shell's output.
    pub cursor: u64,
    /// Characters to return at most.
    pub max_chars: usize,
    /// First wait until the shell has been quiet this long (at most [`MAX_SHELL_WAIT`]).
    pub wait_idle: Option<Duration>,
    /// Strip escape sequences.
    pub plain: bool,
}

/// Shell output, as shown.
#[derive(Debug, Clone, Serialize)]
pub struct ShellPage {
    /// The text, redacted (and with `plain`, without escape sequences).
    #[serde(serialize_with = "lossy_text")]
    pub output: Vec<u8>,
    /// Where it starts: the cursor asked for, or where the shell's buffer now starts.
    pub cursor: u64,
    /// Where the next read starts.
    pub next_cursor: u64,
    /// Bytes that fell out of the buffer between the cursor asked for and `cursor`.
    pub lost: u64,
    /// Everything the shell produced so far.
    pub end: u64,
    /// How the shell ended, once it has.
    pub exited: Option<ExitStatus>,
}

/// Reads a shell's output from a cursor, redacted.
pub fn read_shell(
    handle: &Handle,
    client: &mut AgentClient,
    shell: &str,
    read: &ShellRead,
    rules: &[burrow_redact::RuleSpec],
) -> Result<ShellPage> {
    let redactor = handle.redactor(rules)?;
    // Redaction looks behind the cursor, so that a secret the read starts inside of is still
    // recognised and shown as its replacement.
    let look_behind = if redactor.is_empty() {
        0
    } else {
        redactor.hold_back() as u64
    };
    let wait = ShellWait {
        idle: read.wait_idle.map(|idle| idle.min(MAX_SHELL_WAIT)),
        for_data: false,
        limit: MAX_SHELL_WAIT,
    };
    let max_bytes = (read.max_chars as u64)
        .saturating_mul(4)
        .saturating_add(look_behind);
    let chunk = client.shell_read(
        shell,
        read.cursor.saturating_sub(look_behind),
        max_bytes,
        wait,
    )?;
    let view = View::of(&chunk, read.cursor, read.max_chars, read.plain);
    let (shown, next_cursor) = if redactor.is_empty() {
        (
            chunk.bytes[view.from..view.to].to_vec(),
            chunk.start + view.to as u64,
        )
    } else {
        redactor.redact_window(
            &chunk.bytes[..view.to],
            chunk.start,
            view.cursor,
            view.complete,
        )
    };
    Ok(ShellPage {
        output: if read.plain {
            strip_escapes(&shown)
        } else {
            shown
        },
        cursor: view.cursor,
        next_cursor,
        lost: chunk.start.saturating_sub(read.cursor),
        end: chunk.end,
        exited: chunk.exit,
    })
}

/// Which part of a read chunk to show: from the cursor (or where the buffer starts), at most
/// `max_chars` characters, never ending inside a character or (with `plain`) an escape
/// sequence.
struct View {
    cursor: u64,
    from: usize,
    to: usize,
    /// No more output can come after `to`: the shell has exited and this is all of it.
    complete: bool,
}

impl View {
    fn of(chunk: &ShellChunk, cursor: u64, max_chars: usize, plain: bool) -> View {
        let cursor = cursor.max(chunk.start);
        let from = usize::try_from(cursor - chunk.start)
            .unwrap_or(usize::MAX)
            .min(chunk.bytes.len());
        let rest = &chunk.bytes[from..];
        // A character or (with plain) an escape sequence cut short by the end of what the
        // shell has written so far is left for the next read.
        let mut take = utf8_prefix(&rest[..char_prefix(rest, max_chars)]);
        if plain {
            take = complete_prefix(&rest[..take]);
        }
        let to = from + take;
        let complete = chunk.exit.is_some() && chunk.start + to as u64 >= chunk.end;
        View {
            cursor,
            from,
            to,
            complete,
        }
    }
}

/// One session command's result.
#[derive(Debug, Serialize)]
pub struct CommandResult {
    /// The request's id (`session serve`), echoed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<serde_json::Value>,
    /// `$?`; 124 after a timeout.
    pub exit_code: Option<i32>,
    /// Its standard output, redacted and capped.
    pub stdout: String,
    /// Its standard error, redacted and capped.
    pub stderr: String,
    /// stdout and stderr chunks in the order they were read.
    pub output: Vec<Chunk>,
    /// What the caps left out.
    pub truncated: Truncated,
    /// Whether the timeout killed it.
    pub timed_out: bool,
    /// Set when the session's shell ended (`exit`, or killed).
    pub ended: Option<ExitStatus>,
    /// Whether the shell had to be replaced after a timeout (its variables are gone).
    pub restarted: bool,
    /// Wall-clock time.
    pub duration_ms: u64,
    /// Why the command could not run at all.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A piece of output.
#[derive(Debug, Serialize)]
pub struct Chunk {
    /// `stdout` or `stderr`.
    pub stream: &'static str,
    /// The text.
    pub text: String,
}

/// What the caps left out.
#[derive(Debug, Serialize)]
pub struct Truncated {
    /// Of stdout.
    pub stdout: Option<Omitted>,
    /// Of stderr.
    pub stderr: Option<Omitted>,
    /// Whether `output` stops before the end.
    pub output: bool,
}

/// Runs one command line in a session, collecting its output redacted and capped like
/// `burrow run --json`, and records it in the audit log.
pub fn run_session_command(
    handle: &Handle,
    client: &mut AgentClient,
    session: &str,
    command: &str,
    timeout: Option<Duration>,
    redactor: &Redactor,
    limits: CaptureLimits,
) -> Result<CommandResult> {
    let started = Instant::now();
    let mut collector = Collector::new(redactor, limits);
    let end = client.session_exec(session, command, timeout, &mut |stream, bytes| {
        collector.push(stream, bytes);
    })?;
    let result = collector.finish(&end, started.elapsed());
    let mut record = journal::record("session.exec", format!("{session}: {command}"));
    record.exit_code = result.exit_code;
    record.duration_ms = Some(result.duration_ms);
    handle.audit_with(&record, redactor)?;
    Ok(result)
}

/// Collects a command's output, redacted, capped.
struct Collector {
    out_redact: RedactStream,
    err_redact: RedactStream,
    kept: Kept,
}

/// What is kept of the redacted output.
struct Kept {
    stdout: Capture,
    stderr: Capture,
    ordered: Vec<Chunk>,
    ordered_bytes: usize,
    ordered_budget: usize,
    ordered_cut: bool,
}

impl Collector {
    fn new(redactor: &Redactor, limits: CaptureLimits) -> Collector {
        Collector {
            out_redact: redactor.stream(),
            err_redact: redactor.stream(),
            kept: Kept {
                stdout: Capture::new(limits),
                stderr: Capture::new(limits),
                ordered: Vec::new(),
                ordered_bytes: 0,
                ordered_budget: limits.max_bytes.saturating_mul(2),
                ordered_cut: false,
            },
        }
    }

    fn push(&mut self, stream: Stream, bytes: &[u8]) {
        let shown = match stream {
            Stream::Stdout => self.out_redact.push(bytes),
            Stream::Stderr => self.err_redact.push(bytes),
        };
        self.kept.keep(stream, &shown);
    }

    fn finish(self, end: &SessionEnd, duration: Duration) -> CommandResult {
        let Collector {
            out_redact,
            err_redact,
            mut kept,
        } = self;
        kept.keep(Stream::Stdout, &out_redact.finish());
        kept.keep(Stream::Stderr, &err_redact.finish());
        let stdout = kept.stdout.finish();
        let stderr = kept.stderr.finish();
        CommandResult {
            id: None,
            exit_code: if end.timed_out {
                Some(124)
            } else {
                end.exit_code
            },
            stdout: stdout.to_string_lossy(),
            stderr: stderr.to_string_lossy(),
            output: kept.ordered,
            truncated: Truncated {
                stdout: stdout.omitted,
                stderr: stderr.omitted,
                output: kept.ordered_cut,
            },
            timed_out: end.timed_out,
            ended: end.ended,
            restarted: end.restarted,
            duration_ms: u64::try_from(duration.as_millis()).unwrap_or(u64::MAX),
            error: None,
        }
    }
}

impl Kept {
    fn keep(&mut self, stream: Stream, shown: &[u8]) {
        if shown.is_empty() {
            return;
        }
        let (capture, name) = match stream {
            Stream::Stdout => (&mut self.stdout, "stdout"),
            Stream::Stderr => (&mut self.stderr, "stderr"),
        };
        capture.push(shown);
        if self.ordered_bytes + shown.len() > self.ordered_budget {
            self.ordered_cut = true;
            return;
        }
        self.ordered_bytes += shown.len();
        let text = String::from_utf8_lossy(shown).into_owned();
        match self.ordered.last_mut() {
            Some(last) if last.stream == name => last.text.push_str(&text),
            _ => self.ordered.push(Chunk { stream: name, text }),
        }
    }
}

/// Everything the agent keeps of a service's log, raw (the caller redacts).
pub fn service_log(client: &mut AgentClient, name: &str) -> Result<Vec<u8>> {
    let mut log = Vec::new();
    let mut cursor = 0;
    loop {
        let chunk = client.service_logs(name, cursor, LOG_CHUNK, Duration::ZERO)?;
        cursor = chunk.start + chunk.bytes.len() as u64;
        log.extend(chunk.bytes);
        if cursor >= chunk.end {
            return Ok(log);
        }
    }
}

/// The last `count` lines of `text`.
pub fn last_lines(text: &[u8], count: usize) -> &[u8] {
    let body = text.strip_suffix(b"\n").unwrap_or(text);
    let start = body
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, b)| **b == b'\n')
        .nth(count.saturating_sub(1))
        .map_or(0, |(at, _)| at + 1);
    &text[start..]
}

/// Bytes as text, invalid UTF-8 replaced.
fn lossy_text<S: Serializer>(bytes: &[u8], serializer: S) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_str(&String::from_utf8_lossy(bytes))
}

#[cfg(test)]
mod tests {
    use super::last_lines;

    #[test]
    fn the_last_lines_are_kept() {
        assert_eq!(last_lines(b"a\nb\nc\n", 2), b"b\nc\n");
        assert_eq!(last_lines(b"a\nb\nc", 2), b"b\nc");
        assert_eq!(last_lines(b"a\n", 5), b"a\n");
        assert_eq!(last_lines(b"", 5), b"");
    }
}

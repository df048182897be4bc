//! Redaction on the way out: a workspace's secrets and redaction rules applied to everything
//! burrow prints of it. The cell knows the secrets (it was given them); the person or agent
//! reading burrow's output must not see them.

use burrow_output::{OutputSink, Stream};
use burrow_redact::{RedactStream, Redactor, RuleSpec};

use crate::error::{Result, WorkspaceError};
use crate::layout::WorkspaceDir;

/// The redactor for a workspace: its secrets, its own rules and the call's.
pub fn redactor(
    dir: &WorkspaceDir,
    workspace_rules: &[RuleSpec],
    call_rules: &[RuleSpec],
) -> Result<Redactor> {
    let secrets = crate::secrets::for_redaction(&crate::secrets::load(dir)?);
    let rules: Vec<RuleSpec> = workspace_rules.iter().chain(call_rules).cloned().collect();
    Redactor::new(&secrets, &rules).map_err(|error| WorkspaceError::Invalid(error.to_string()))
}

/// An output sink that redacts each stream before passing it on. Call [`RedactingSink::finish`]
/// at the end: what was withheld (a possible start of a secret) is flushed then.
pub struct RedactingSink<'a> {
    inner: &'a mut dyn OutputSink,
    stdout: RedactStream,
    stderr: RedactStream,
}

impl<'a> RedactingSink<'a> {
    /// Redacts into `inner`.
    pub fn new(redactor: &'a Redactor, inner: &'a mut dyn OutputSink) -> RedactingSink<'a> {
        RedactingSink {
            inner,
            stdout: redactor.stream(),
            stderr: redactor.stream(),
        }
    }

    /// Flushes both streams.
    pub fn finish(self) {
        let RedactingSink {
            inner,
            stdout,
            stderr,
        } = self;
        let rest = stdout.finish();
        if !rest.is_empty() {
            inner.write(Stream::Stdout, &rest);
        }
        let rest = stderr.finish();
        if !rest.is_empty() {
            inner.write(Stream::Stderr, &rest);
        }
    }
}

impl OutputSink for RedactingSink<'_> {
    fn write(&mut self, stream: Stream, chunk: &[u8]) {
        let redacted = match stream {
            Stream::Stdout => self.stdout.push(chunk),
            Stream::Stderr => self.stderr.push(chunk),
        };
        if !redacted.is_empty() {
            self.inner.write(stream, &redacted);
        }
    }
}

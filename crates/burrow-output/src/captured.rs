//! The result of a capture and how it reads as one piece of output.

/// What a cap left out.
///
/// `lines` counts every line with at least one omitted byte, so a line cut in
/// the middle by the head or the tail counts as omitted, once, even when part
/// of it was kept. Hence, for any capture:
/// complete lines in the head (its newlines) + `lines` + complete lines in the
/// tail (those not started before it) = [`Captured::total_lines`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Omitted {
    /// Bytes between the head and the tail:
    /// `total_bytes - head.len() - tail.len()`.
    pub bytes: u64,
    /// Lines wholly or partly between the head and the tail.
    pub lines: u64,
}

/// The result: head, marker, tail.
///
/// When nothing was omitted, `head ++ tail` is the stream, byte for byte.
/// When something was, `head` is the start of the stream and `tail` its end,
/// neither cut inside a UTF-8 character.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// The first bytes of the stream.
    pub head: Vec<u8>,
    /// The last bytes of the stream (those not already in `head`).
    pub tail: Vec<u8>,
    /// What was left out between `head` and `tail`, if anything.
    pub omitted: Option<Omitted>,
    /// Length of the whole stream.
    pub total_bytes: u64,
    /// Lines of the whole stream: its newlines, plus one for a final line
    /// without a newline.
    pub total_lines: u64,
}

impl Captured {
    /// head + (marker line if omitted) + tail, as bytes.
    ///
    /// The marker is `[... burrow omitted {bytes} bytes, {lines} lines ...]`
    /// (singular for one)
    /// on a line of its own: a newline is put before it when the head does
    /// not already end one.
    pub fn to_bytes(&self) -> Vec<u8> {
        let marker = self
            .omitted
            .map(|omitted| self.marker(omitted))
            .unwrap_or_default();
        let mut bytes = Vec::with_capacity(self.head.len() + marker.len() + self.tail.len());
        bytes.extend_from_slice(&self.head);
        bytes.extend_from_slice(marker.as_bytes());
        bytes.extend_from_slice(&self.tail);
        bytes
    }

    /// Same, as text: invalid UTF-8 replaced by U+FFFD (lossy).
    pub fn to_string_lossy(&self) -> String {
        String::from_utf8(self.to_bytes())
            .unwrap_or_else(|invalid| String::from_utf8_lossy(invalid.as_bytes()).into_owned())
    }

    fn marker(&self, omitted: Omitted) -> String {
        let line_break = if self.head.is_empty() || self.head.ends_with(b"\n") {
            ""
        } else {
            "\n"
        };
        let plural = |n: u64, word: &str| {
            if n == 1 {
                format!("1 {word}")
            } else {
                format!("{n} {word}s")
            }
        };
        format!(
            "{line_break}[... burrow omitted {}, {} ...]\n",
            plural(omitted.bytes, "byte"),
            plural(omitted.lines, "line")
        )
    }
}

//! How a cap is split between the head and the tail of a stream.

/// Limits of one captured stream.
///
/// Half of each budget goes to the head and the rest to the tail, so an odd
/// budget gives the tail the extra unit: the end of a command's output (the
/// error, the summary) is usually what matters most.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CaptureLimits {
    /// Most bytes kept (head and tail together). `0` keeps nothing.
    pub max_bytes: usize,
    /// Most lines kept (head and tail together), if lines are capped at all.
    /// `Some(0)` keeps nothing.
    pub max_lines: Option<usize>,
}

impl CaptureLimits {
    /// 1 MiB per stream, lines not capped.
    pub const DEFAULT: CaptureLimits = CaptureLimits {
        max_bytes: 1024 * 1024,
        max_lines: None,
    };

    pub(crate) fn head_bytes(&self) -> usize {
        self.max_bytes / 2
    }

    pub(crate) fn tail_bytes(&self) -> usize {
        self.max_bytes - self.max_bytes / 2
    }

    pub(crate) fn head_lines(&self) -> Option<usize> {
        self.max_lines.map(|n| n / 2)
    }

    pub(crate) fn tail_lines(&self) -> Option<usize> {
        self.max_lines.map(|n| n - n / 2)
    }
}

impl Default for CaptureLimits {
    fn default() -> Self {
        Self::DEFAULT
    }
}

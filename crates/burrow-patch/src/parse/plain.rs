//! `diff -u` file sections: `---`/`+++` names (with timestamps), then hunks.

use super::Parser;
use crate::error::PatchError;
use crate::{FilePatch, path};

impl Parser<'_> {
    /// A `diff -u` section: `---`/`+++` names, then hunks. `diff -N` marks
    /// an absent side with the epoch as its timestamp rather than
    /// `/dev/null`.
    pub(super) fn plain_section(&mut self) -> Result<FilePatch, PatchError> {
        let header_line = self.line_number();
        let (minus, plus) = self.minus_plus()?;
        let hunks = self.hunks()?;

        // Strip one component only for the a/ b/ convention: plain names are
        // otherwise already workspace paths.
        let strip = minus
            .name
            .as_ref()
            .is_none_or(|name| name.starts_with(b"a/"))
            && plus
                .name
                .as_ref()
                .is_none_or(|name| name.starts_with(b"b/"));
        let resolve = |name: &Vec<u8>| {
            let stripped = if strip {
                path::strip_component(name)
            } else {
                name
            };
            path::validate(name, stripped)
        };
        let old = match &minus.name {
            Some(name) if !minus.epoch => Some(resolve(name)?),
            _ => None,
        };
        let new = match &plus.name {
            Some(name) if !plus.epoch => Some(resolve(name)?),
            _ => None,
        };
        let (old_path, new_path) = match (old, new) {
            (None, None) => {
                return Err(PatchError::Malformed {
                    line: header_line,
                    message: "both sides of the section are absent".into(),
                });
            }
            // `diff -u file.orig file`: the new name is the file meant.
            (Some(_), Some(new)) => (Some(new.clone()), Some(new)),
            sides => sides,
        };
        Ok(FilePatch {
            old_path,
            new_path,
            old_mode: None,
            new_mode: None,
            is_copy: false,
            hunks,
        })
    }
}

/// Whether a `diff -u` timestamp is the Unix epoch, which `diff -N` (and GNU
/// patch) use for a file that does not exist: e.g. `1970-01-01
/// 00:00:00.000000000 +0000`, or `1969-12-31 19:00:00 -0500` in another
/// zone.
pub(super) fn is_epoch_timestamp(time: &[u8]) -> bool {
    let Ok(time) = std::str::from_utf8(time) else {
        return false;
    };
    let mut fields = time.split_whitespace();
    let (Some(date), Some(clock), zone) = (fields.next(), fields.next(), fields.next()) else {
        return false;
    };
    let day: i64 = match date {
        "1970-01-01" => 0,
        "1969-12-31" => -1,
        _ => return false,
    };
    let (clock, fraction) = clock.split_once('.').unwrap_or((clock, "0"));
    if !fraction.bytes().all(|b| b == b'0') {
        return false;
    }
    // Small integer types: an absurd field fails to parse instead of
    // overflowing the arithmetic below.
    let mut parts = clock.split(':').map(str::parse::<u8>);
    let (Some(Ok(hours)), Some(Ok(minutes)), Some(Ok(seconds)), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let zone_seconds = match zone {
        None => 0,
        Some(zone) => {
            let (sign, digits) = match zone.split_at_checked(1) {
                Some(("+", digits)) => (1, digits),
                Some(("-", digits)) => (-1, digits),
                _ => return false,
            };
            let (Some(zone_hours), Some(zone_minutes)) = (
                digits.get(..2).and_then(|h| h.parse::<u8>().ok()),
                digits.get(2..).and_then(|m| m.parse::<u8>().ok()),
            ) else {
                return false;
            };
            sign * (i64::from(zone_hours) * 3600 + i64::from(zone_minutes) * 60)
        }
    };
    let local = i64::from(hours) * 3600 + i64::from(minutes) * 60 + i64::from(seconds);
    day * 86_400 + local - zone_seconds == 0
}

//! Workspace names and ids.

use crate::error::{Result, WorkspaceError};

/// Checks a workspace (or snapshot) name: `[A-Za-z0-9][A-Za-z0-9._-]{0,63}`.
pub fn validate_name(name: &str) -> Result<()> {
    let bytes = name.as_bytes();
    let valid = !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if valid {
        Ok(())
    } else {
        Err(WorkspaceError::InvalidName(name.to_owned()))
    }
}

/// A new random id: 12 lowercase hex digits.
pub fn new_id() -> String {
    let mut bytes = [0u8; 6];
    // getrandom(2) without flags blocks only before the kernel's pool is ready, at early boot.
    if rustix::rand::getrandom(&mut bytes, rustix::rand::GetRandomFlags::empty()).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        bytes.copy_from_slice(&(nanos as u64 ^ u64::from(std::process::id())).to_le_bytes()[..6]);
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `text` looks like an id made by [`new_id`].
pub fn looks_like_id(text: &str) -> bool {
    text.len() == 12
        && text
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_rules() {
        for good in ["a", "A1", "my-ws", "proj.v2_final", &"x".repeat(64)] {
            assert!(validate_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "-a",
            ".a",
            "_a",
            "a/b",
            "a b",
            "é",
            "../x",
            &"x".repeat(65),
            "a\0",
        ] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn ids_are_twelve_hex_digits_and_differ() {
        let a = new_id();
        let b = new_id();
        assert!(looks_like_id(&a) && looks_like_id(&b));
        assert_ne!(a, b);
    }
}

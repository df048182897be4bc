//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use burrow_patch::{Change, parse, plan};

/// Workspace contents by path.
pub type Tree = BTreeMap<String, Vec<u8>>;

/// A tiny deterministic PRNG (xorshift64*), so failures reproduce.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    /// True `percent` times in a hundred.
    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// Makes the changes `plan` returned, as the calling crate would.
pub fn apply_changes(tree: &mut Tree, changes: &[Change]) {
    for change in changes {
        match change {
            Change::Write { path, content, .. } => {
                tree.insert(path.clone(), content.clone());
            }
            Change::Delete { path } => {
                assert!(tree.remove(path).is_some(), "deleting absent {path}");
            }
        }
    }
}

/// Parses `patch`, plans it against `tree` and returns the resulting tree,
/// or the error message.
pub fn patched(tree: &Tree, patch: &[u8]) -> Result<Tree, String> {
    let parsed = parse(patch).map_err(|error| error.to_string())?;
    let mut source = tree.clone();
    let changes = plan(&parsed, &mut source).map_err(|error| error.to_string())?;
    let mut result = tree.clone();
    apply_changes(&mut result, &changes);
    Ok(result)
}

pub fn tree(files: &[(&str, &str)]) -> Tree {
    files
        .iter()
        .map(|(path, content)| (path.to_string(), content.as_bytes().to_vec()))
        .collect()
}

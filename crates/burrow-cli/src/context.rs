//! Where the caller is: working directory, home, burrow's state directory.

use std::path::PathBuf;

use anyhow::{Context, Result};
use burrow_policy::PathContext;

/// The caller's context; `cwd` overrides the current directory.
pub fn path_context(cwd: Option<&std::path::Path>) -> Result<PathContext> {
    let current = std::env::current_dir().context("cannot read the current directory")?;
    let cwd = match cwd {
        Some(path) => current.join(path),
        None => current,
    };
    let home = std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from);
    Ok(PathContext {
        cwd: burrow_policy::normalize(&cwd),
        state_dir: state_dir(home.as_deref()),
        home,
    })
}

/// `$BURROW_HOME`, else `$XDG_DATA_HOME/burrow`, else `~/.local/share/burrow`.
pub fn state_dir(home: Option<&std::path::Path>) -> Option<PathBuf> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty("BURROW_HOME") {
        return Some(PathBuf::from(dir));
    }
    if let Some(data) = non_empty("XDG_DATA_HOME") {
        return Some(PathBuf::from(data).join("burrow"));
    }
    home.map(|home| home.join(".local/share/burrow"))
}

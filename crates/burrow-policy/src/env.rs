//! The environment a cell's command starts with.
//!
//! It starts empty but for a few variables every program expects, so nothing the caller's shell
//! happens to export (tokens above all) leaks into the cell by default.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};

use serde::{Deserialize, Serialize};

/// Variables passed from the caller when they are set, without being asked for.
pub const BASE_VARIABLES: &[&str] = &["PATH", "HOME", "LANG", "TERM", "TZ"];

/// `PATH` when the caller has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// Set in every cell so that programs (and agents) can tell they run inside burrow.
pub const SANDBOX_MARKER: (&str, &str) = ("BURROW_SANDBOX", "1");

/// Name fragments that mark a variable as a secret (compared case-insensitively).
const SECRET_MARKERS: &[&str] = &["TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Whether a variable's name suggests it holds a secret.
pub fn looks_secret(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    SECRET_MARKERS.iter().any(|marker| upper.contains(marker))
}

/// Finds a program the way execvp(3) does: a name with a slash is taken as it is, anything else
/// is searched in `search_path` (or [`DEFAULT_PATH`]). The error is the errno execvp would
/// report: ENOENT, or EACCES when only non-executable candidates exist.
pub fn find_program(name: &OsStr, search_path: Option<&OsStr>) -> Result<std::path::PathBuf, i32> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    const EACCES: i32 = 13;
    const ENOENT: i32 = 2;
    if name.as_bytes().contains(&b'/') {
        return Ok(std::path::PathBuf::from(name));
    }
    if name.is_empty() {
        return Err(ENOENT);
    }
    let mut saw_non_executable = false;
    let search = search_path.unwrap_or(OsStr::new(DEFAULT_PATH));
    for dir in search.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() {
            std::path::Path::new(".")
        } else {
            std::path::Path::new(OsStr::from_bytes(dir))
        };
        let candidate = dir.join(name);
        let Ok(metadata) = std::fs::metadata(&candidate) else {
            continue;
        };
        if !metadata.is_file() {
            continue;
        }
        // Any execute bit will do for the search; exec itself has the final word.
        if metadata.permissions().mode() & 0o111 != 0 {
            return Ok(candidate);
        }
        saw_non_executable = true;
    }
    Err(if saw_non_executable { EACCES } else { ENOENT })
}

/// What the policy adds to the base environment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvPolicy {
    /// Variables set to fixed values (`--env K=V`).
    pub set: BTreeMap<String, String>,
    /// Caller variables passed through (`--inherit-env NAME`); `*` matches any run of characters.
    /// A secret-looking variable passes only when named exactly, never through a pattern.
    pub inherit: Vec<String>,
}

impl EnvPolicy {
    /// The environment for the command, from the caller's environment.
    pub fn build<I>(&self, caller: I) -> Vec<(OsString, OsString)>
    where
        I: IntoIterator<Item = (OsString, OsString)>,
    {
        let mut env: BTreeMap<OsString, OsString> = BTreeMap::new();
        for (name, value) in caller {
            if self.passes(&name) {
                env.insert(name, value);
            }
        }
        env.entry(OsString::from("PATH"))
            .or_insert_with(|| OsString::from(DEFAULT_PATH));
        for (name, value) in &self.set {
            env.insert(OsString::from(name), OsString::from(value));
        }
        env.insert(
            OsString::from(SANDBOX_MARKER.0),
            OsString::from(SANDBOX_MARKER.1),
        );
        env.into_iter().collect()
    }

    fn passes(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            return false;
        };
        if self.inherit.iter().any(|wanted| wanted == name) {
            return true;
        }
        if looks_secret(name) {
            return false;
        }
        BASE_VARIABLES.contains(&name)
            || self
                .inherit
                .iter()
                .any(|pattern| pattern.contains('*') && glob_matches(pattern, name))
    }
}

/// `*`-only glob matching, enough for `LC_*` or `CARGO_*`.
fn glob_matches(pattern: &str, name: &str) -> bool {
    let mut parts = pattern.split('*');
    let Some(first) = parts.next() else {
        return pattern == name;
    };
    let Some(mut rest) = name.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    for (index, part) in parts.iter().enumerate() {
        let is_last = index + 1 == parts.len();
        if is_last {
            return rest.ends_with(part);
        }
        match rest.find(part) {
            Some(position) => rest = &rest[position + part.len()..],
            None => return false,
        }
    }
    rest.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(vars: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        vars.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    fn names(env: &[(OsString, OsString)]) -> Vec<String> {
        env.iter()
            .map(|(k, _)| k.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn keeps_only_the_base_variables_by_default() {
        let env = EnvPolicy::default().build(caller(&[
            ("PATH", "/bin"),
            ("HOME", "/home/a"),
            ("EDITOR", "vi"),
            ("GITHUB_TOKEN", "ghp_x"),
        ]));
        assert_eq!(names(&env), ["BURROW_SANDBOX", "HOME", "PATH"]);
    }

    #[test]
    fn secret_names_pass_only_when_named_exactly() {
        let policy = EnvPolicy {
            set: BTreeMap::new(),
            inherit: vec!["GITHUB_TOKEN".into(), "AWS_*".into()],
        };
        let env = policy.build(caller(&[
            ("GITHUB_TOKEN", "ghp_x"),
            ("AWS_REGION", "eu-west-1"),
            ("AWS_SECRET_ACCESS_KEY", "s3cr3t"),
        ]));
        assert_eq!(
            names(&env),
            ["AWS_REGION", "BURROW_SANDBOX", "GITHUB_TOKEN", "PATH"]
        );
    }

    #[test]
    fn explicit_values_win_and_path_has_a_default() {
        let policy = EnvPolicy {
            set: BTreeMap::from([("API_KEY".to_owned(), "given".to_owned())]),
            inherit: vec![],
        };
        let env = policy.build(caller(&[("API_KEY", "from-caller")]));
        assert!(env.contains(&("API_KEY".into(), "given".into())));
        assert!(env.contains(&("PATH".into(), DEFAULT_PATH.into())));
    }

    #[test]
    fn recognises_secret_names_case_insensitively() {
        for name in [
            "GITHUB_TOKEN",
            "aws_secret_access_key",
            "OPENAI_API_KEY",
            "DB_PASSWORD",
            "GOOGLE_APPLICATION_CREDENTIALS",
        ] {
            assert!(looks_secret(name), "{name}");
        }
        for name in ["PATH", "HOME", "LANG", "CARGO_HOME"] {
            assert!(!looks_secret(name), "{name}");
        }
    }

    #[test]
    fn globs_match_stars_anywhere() {
        assert!(glob_matches("LC_*", "LC_ALL"));
        assert!(glob_matches("*_HOME", "CARGO_HOME"));
        assert!(glob_matches("A*B*C", "AxxBxxC"));
        assert!(!glob_matches("A*B*C", "AxxBxx"));
        assert!(!glob_matches("LC_*", "XLC_ALL"));
        assert!(glob_matches("*", "anything"));
    }
}

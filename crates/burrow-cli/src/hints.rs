//! Hints: when a failure looks like the sandbox's doing, say so and say what would allow it.
//!
//! An agent reading "Read-only file system" does not know whether the disk is full, the path is
//! wrong, or the sandbox refused; a hint naming the policy and the flag that changes it saves it
//! a wrong guess.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use burrow_policy::{NetworkMode, ResolvedFilesystem};
use burrow_sandbox::Outcome;
use regex::Regex;

/// What a hint can refer to.
pub struct HintContext<'a> {
    pub outcome: &'a Outcome,
    pub stderr: &'a str,
    pub filesystem: &'a ResolvedFilesystem,
    pub network: NetworkMode,
    pub memory_limit: Option<burrow_policy::ByteSize>,
    pub sandboxed: bool,
}

/// At most this many hints about paths.
const MAX_PATH_HINTS: usize = 3;

static PATH_DENIAL: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?P<path>/[^\s:'`\x22]*)['`\x22]?[^\n]*?(?P<error>Read-only file system|Permission denied|Operation not permitted)",
    )
    .ok()
});

const NETWORK_ERRORS: [&str; 7] = [
    "Address family not supported by protocol",
    "Network is unreachable",
    "Could not resolve host",
    "Temporary failure in name resolution",
    "Name or service not known",
    "No address associated with hostname",
    "getaddrinfo",
];

/// The hints for a finished command (none when it succeeded).
pub fn hints(context: &HintContext<'_>) -> Vec<String> {
    let outcome = context.outcome;
    let mut hints = Vec::new();
    if outcome.exit_code() == 0 {
        return hints;
    }
    if outcome.oom_killed {
        let limit = context
            .memory_limit
            .map_or_else(String::new, |limit| format!(" (limit {limit})"));
        hints.push(format!(
            "the command ran out of memory{limit} and the kernel killed it; raise --memory"
        ));
    }
    if !context.sandboxed {
        return hints;
    }
    if outcome.signal() == Some(libc::SIGSYS) {
        hints.push(
            "the command was killed by SIGSYS: it made a system call that the sandbox's \
             seccomp filter forbids"
                .to_owned(),
        );
    }
    hints.extend(path_hints(context));
    let network_failed = NETWORK_ERRORS
        .iter()
        .any(|error| context.stderr.contains(error));
    match context.network {
        NetworkMode::Host => {}
        // The hosts the proxy refused are reported by name (`network_denied`); a failure to
        // resolve or reach anything means the program went around the proxy.
        NetworkMode::Allow if network_failed => hints.push(
            "the sandbox reaches the network only through burrow's proxy (HTTP_PROXY, \
             HTTPS_PROXY, ALL_PROXY are set): the program may not use proxy variables, or needs \
             to be told the proxy, 127.0.0.1:3128"
                .to_owned(),
        ),
        NetworkMode::None | NetworkMode::Loopback if network_failed => hints.push(format!(
            "the sandbox has no network access (--network {}); pass --network host if the \
             command needs it, or --network allow:HOST,... for only some hosts",
            context.network.name()
        )),
        NetworkMode::None | NetworkMode::Loopback | NetworkMode::Allow => {}
    }
    hints
}

fn path_hints(context: &HintContext<'_>) -> Vec<String> {
    let Some(pattern) = PATH_DENIAL.as_ref() else {
        return Vec::new();
    };
    let fs = context.filesystem;
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut hints = Vec::new();
    for captures in pattern.captures_iter(context.stderr) {
        let (Some(path), Some(error)) = (captures.name("path"), captures.name("error")) else {
            continue;
        };
        let path = Path::new(path.as_str().trim_end_matches(['.', ',', ')']));
        if path == Path::new("/") || seen.iter().any(|p| p == path) {
            continue;
        }
        let hint = if ["/proc", "/sys"]
            .iter()
            .any(|kernel| path.starts_with(kernel))
        {
            Some(format!(
                "{} is a kernel interface, read-only inside the sandbox: a sandboxed command \
                 cannot change kernel settings",
                path.display()
            ))
        } else if path.starts_with("/dev") {
            Some(format!(
                "{}: the sandbox's /dev holds only null, zero, full, random, urandom, tty and \
                 ptys, and nothing can be created there",
                path.display()
            ))
        } else if let Some(hidden) = fs.hidden.iter().find(|hidden| path.starts_with(hidden)) {
            Some(format!(
                "{} is hidden by the sandbox ({} holds credentials or was passed to --hide)",
                path.display(),
                hidden.display()
            ))
        } else if !fs.writable.iter().any(|root| path.starts_with(root))
            && !["/tmp", "/var/tmp", "/dev/shm", "/run"]
                .iter()
                .any(|area| path.starts_with(area))
        {
            let roots: Vec<String> = fs
                .writable
                .iter()
                .map(|r| r.display().to_string())
                .collect();
            let writable = if roots.is_empty() {
                "nothing but /tmp".to_owned()
            } else {
                roots.join(", ")
            };
            Some(format!(
                "{} is outside the sandbox's writable roots ({writable}); pass --write {} to \
                 let the command write there",
                path.display(),
                writable_suggestion(path).display()
            ))
        } else if fs.protected.iter().any(|protected| {
            path.iter()
                .collect::<PathBuf>()
                .ends_with(protected.components().collect::<PathBuf>())
        }) {
            Some(format!(
                "{} is kept read-only inside writable roots (filesystem.protected) so that \
                 sandboxed code cannot plant git hooks or settings",
                path.display()
            ))
        } else if error.as_str() == "Operation not permitted" {
            Some(format!(
                "the sandbox refused an operation on {} (it drops all capabilities and filters \
                 system calls)",
                path.display()
            ))
        } else {
            None
        };
        if let Some(hint) = hint {
            seen.push(path.to_path_buf());
            hints.push(hint);
            if hints.len() == MAX_PATH_HINTS {
                break;
            }
        }
    }
    hints
}

/// The directory to suggest for --write: the path's parent when it looks like a file.
fn writable_suggestion(path: &Path) -> &Path {
    if path.extension().is_some() {
        path.parent().unwrap_or(path)
    } else {
        path
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use burrow_policy::{ByteSize, NetworkMode, ResolvedFilesystem};
    use burrow_sandbox::{Outcome, Termination};

    use super::{HintContext, hints};

    fn outcome(termination: Termination) -> Outcome {
        Outcome::finished(termination, Duration::ZERO)
    }

    fn filesystem() -> ResolvedFilesystem {
        ResolvedFilesystem {
            writable: vec![PathBuf::from("/work/project")],
            hidden: vec![PathBuf::from("/home/ann/.ssh")],
            protected: vec![PathBuf::from(".git/hooks/")],
            tmp_size: ByteSize::mib(512),
        }
    }

    fn hints_for(stderr: &str, termination: Termination) -> Vec<String> {
        hints_in(NetworkMode::None, stderr, termination)
    }

    fn hints_in(network: NetworkMode, stderr: &str, termination: Termination) -> Vec<String> {
        let outcome = outcome(termination);
        let filesystem = filesystem();
        hints(&HintContext {
            outcome: &outcome,
            stderr,
            filesystem: &filesystem,
            network,
            memory_limit: None,
            sandboxed: true,
        })
    }

    #[test]
    fn a_read_only_path_outside_the_roots_suggests_write() {
        let hints = hints_for(
            "touch: cannot touch '/etc/foo.conf': Read-only file system\n",
            Termination::Exited(1),
        );
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(hints[0].contains("pass --write /etc"), "{hints:?}");
    }

    #[test]
    fn hidden_kernel_and_device_paths_get_their_own_explanations() {
        let hints = hints_for(
            "cat: /home/ann/.ssh/id_rsa: Permission denied\n\
             sh: 1: cannot create /proc/sys/vm/x: Read-only file system\n\
             mknod: /dev/sda: Operation not permitted\n",
            Termination::Exited(1),
        );
        assert!(hints[0].contains("hidden by the sandbox"), "{hints:?}");
        assert!(hints[1].contains("kernel interface"), "{hints:?}");
        assert!(hints[2].contains("/dev holds only"), "{hints:?}");
    }

    #[test]
    fn network_errors_and_sigsys_are_explained() {
        let hints = hints_for(
            "OSError: [Errno 97] Address family not supported by protocol\n",
            Termination::Exited(1),
        );
        assert!(hints[0].contains("--network host"), "{hints:?}");
        let hints = hints_for("", Termination::Signaled(libc::SIGSYS));
        assert!(hints[0].contains("seccomp"), "{hints:?}");
    }

    #[test]
    fn an_allowlisted_program_that_went_around_the_proxy_is_told_so() {
        let failed = "curl: (6) Could not resolve host: pypi.org\n";
        let hints = hints_in(NetworkMode::Allow, failed, Termination::Exited(6));
        assert_eq!(hints.len(), 1, "{hints:?}");
        assert!(hints[0].contains("127.0.0.1:3128"), "{hints:?}");
        assert!(hints_in(NetworkMode::Host, failed, Termination::Exited(6)).is_empty());
    }

    #[test]
    fn success_needs_no_hint() {
        assert!(hints_for("Read-only file system /etc/x", Termination::Exited(0)).is_empty());
    }
}

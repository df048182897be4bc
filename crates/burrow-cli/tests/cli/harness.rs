//! The test harness: a fresh directory per test, and the real `burrow` binary run in it with a
//! clean environment, as the invoking user or as an unprivileged one.

use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

use serde_json::Value;

/// The unprivileged user tests switch to when they run as root: `nobody`, which exists
/// everywhere, so programs that look their user up (git, python) are content.
pub const UNPRIVILEGED: u32 = 65534;

/// Who runs burrow in a test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum User {
    /// Whoever runs the test suite (root in CI).
    Invoker,
    /// An unprivileged uid; the same as the invoker when the suite does not run as root.
    Unprivileged,
}

/// Generates two tests from one body: as the invoking user and as an unprivileged one.
#[macro_export]
macro_rules! cell_test {
    // `$binding` is `t` or `mut t`.
    ($name:ident, |$binding:pat_param| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[allow(unused_imports)]
            use $crate::harness::*;

            #[test]
            fn as_invoker() {
                let $binding = Harness::new(User::Invoker);
                $body
            }

            #[test]
            fn as_unprivileged() {
                let $binding = Harness::new(User::Unprivileged);
                $body
            }
        }
    };
}

/// Flags giving git an identity inside a cell (the cell's environment is empty).
pub const GIT_IDENTITY: [&str; 8] = [
    "--env",
    "GIT_AUTHOR_NAME=a",
    "--env",
    "GIT_AUTHOR_EMAIL=a@b",
    "--env",
    "GIT_COMMITTER_NAME=a",
    "--env",
    "GIT_COMMITTER_EMAIL=a@b",
];

pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Host directories every cell replaces with a private tmpfs.
const CELL_SCRATCH: [&str; 4] = ["/tmp", "/var/tmp", "/run", "/dev/shm"];

/// Where test directories go: a place every uid can reach (the unprivileged user must be able
/// to enter it), and not under /tmp, which is private inside a cell (a test of "the host's files
/// are read-only" must see the host's files).
fn base_dir() -> &'static Path {
    static BASE: OnceLock<PathBuf> = OnceLock::new();
    BASE.get_or_init(|| {
        if let Some(dir) = std::env::var_os("BURROW_TEST_DIR") {
            return PathBuf::from(dir);
        }
        let target_tmp = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        // A checkout under /tmp (a CI clone, say) cannot hold the test directories: a cell
        // would see its own empty /tmp there instead.
        let in_scratch = CELL_SCRATCH.iter().any(|area| target_tmp.starts_with(area));
        let base = if in_scratch && !running_as_root() {
            let home = std::env::var_os("HOME").expect("HOME, to keep test directories in");
            PathBuf::from(home).join(".cache/burrow-tests")
        } else if !in_scratch && (traversable_by_all(&target_tmp) || !running_as_root()) {
            target_tmp.join("burrow-tests")
        } else {
            PathBuf::from("/var/lib/burrow-tests")
        };
        std::fs::create_dir_all(&base).expect("create the test base directory");
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755))
            .expect("open the test base directory");
        base
    })
}

fn traversable_by_all(path: &Path) -> bool {
    path.ancestors()
        .all(|dir| std::fs::metadata(dir).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// The burrow binary, copied where the unprivileged user can execute it.
pub fn burrow_binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        let built = PathBuf::from(env!("CARGO_BIN_EXE_burrow"));
        if !running_as_root() || traversable_by_all(&built) {
            return built;
        }
        let dir = base_dir().join(format!("bin-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the binary directory");
        let copy = dir.join("burrow");
        std::fs::copy(&built, &copy).expect("copy the burrow binary");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        copy
    })
}

/// One test's world: a directory with a work dir (the cwd), a home, and burrow's state.
pub struct Harness {
    pub uid: u32,
    pub root: PathBuf,
    pub work: PathBuf,
    pub home: PathBuf,
    pub state: PathBuf,
    /// Extra variables for burrow's own environment.
    pub env: Vec<(String, String)>,
}

impl Harness {
    pub fn new(user: User) -> Harness {
        let uid = match user {
            User::Unprivileged if running_as_root() => UNPRIVILEGED,
            // SAFETY: getuid has no preconditions.
            _ => unsafe { libc::getuid() },
        };
        let root = tempfile::Builder::new()
            .prefix("t-")
            .tempdir_in(base_dir())
            .expect("create a test directory")
            .keep();
        let harness = Harness {
            uid,
            work: root.join("work"),
            home: root.join("home"),
            state: root.join("state"),
            root,
            env: Vec::new(),
        };
        for dir in [&harness.work, &harness.home, &harness.state] {
            std::fs::create_dir_all(dir).expect("create test directories");
        }
        harness.give_to_user(&harness.root);
        harness
    }

    /// Whether burrow runs as root in this test.
    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// Makes the test user own `path` and everything below it.
    pub fn give_to_user(&self, path: &Path) {
        if !running_as_root() {
            return;
        }
        let mut stack = vec![path.to_path_buf()];
        while let Some(path) = stack.pop() {
            std::os::unix::fs::lchown(&path, Some(self.uid), Some(self.uid)).expect("chown");
            if path.is_dir() && !path.is_symlink() {
                for entry in std::fs::read_dir(&path).expect("read_dir") {
                    stack.push(entry.expect("entry").path());
                }
            }
        }
    }

    /// Writes a file (creating parents) owned by the test user.
    pub fn write(&self, path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> PathBuf {
        let path = self.root.join(path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parents");
        }
        std::fs::write(&path, contents).expect("write file");
        self.give_to_user(&self.root);
        path
    }

    /// A `burrow` command with a clean environment, run from the work directory as the test
    /// user.
    pub fn burrow<I, S>(&self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut command = Command::new(burrow_binary());
        command
            .args(args)
            .current_dir(&self.work)
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("HOME", &self.home)
            .env("LANG", "C.UTF-8")
            .env("BURROW_HOME", &self.state)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null());
        if self.uid != current_uid() {
            command.uid(self.uid).gid(self.uid);
        }
        command
    }

    /// Runs `burrow run [flags] --json -- sh -c SCRIPT` and parses the result.
    pub fn run_json(&self, flags: &[&str], script: &str) -> RunResult {
        let mut args: Vec<&str> = vec!["run", "--json"];
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "sh", "-c", script]);
        RunResult::from_output(&self.burrow(&args).output().expect("run burrow"))
    }

    /// The same script on the host backend: the control that shows the attack works without
    /// the sandbox, so that a sandboxed failure means something.
    pub fn run_on_host(&self, flags: &[&str], script: &str) -> RunResult {
        let mut all = vec!["--backend", "host"];
        all.extend_from_slice(flags);
        self.run_json(&all, script)
    }
}

impl Drop for Harness {
    fn drop(&mut self) {
        // Workspace cells outlive the burrow that started them: stop them with the test.
        self.delete_workspaces();
        // Everything under the test's directory belongs to the test user or to the invoker.
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// This process's uid.
pub fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions.
    unsafe { libc::getuid() }
}

/// The parsed `--json` result of `burrow run`, with burrow's own exit status and stderr.
#[derive(Debug)]
pub struct RunResult {
    pub status: i32,
    pub json: Value,
    /// burrow's own stderr, shown when an assertion fails.
    pub burrow_stderr: String,
}

impl RunResult {
    pub fn from_output(output: &Output) -> RunResult {
        let stdout = String::from_utf8_lossy(&output.stdout);
        let json = serde_json::from_str(stdout.trim()).unwrap_or_else(|error| {
            panic!(
                "burrow did not print JSON ({error}): stdout {stdout:?} stderr {:?}",
                String::from_utf8_lossy(&output.stderr)
            )
        });
        RunResult {
            status: output.status.code().unwrap_or(-1),
            json,
            burrow_stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    pub fn exit_code(&self) -> i64 {
        self.json["exit_code"].as_i64().expect("exit_code")
    }

    pub fn stdout(&self) -> &str {
        self.json["stdout"].as_str().unwrap_or_default()
    }

    pub fn stderr(&self) -> &str {
        self.json["stderr"].as_str().unwrap_or_default()
    }

    /// Asserts that the command exited 0, showing everything otherwise.
    #[track_caller]
    pub fn assert_success(&self) -> &RunResult {
        assert_eq!(
            self.exit_code(),
            0,
            "command failed: {self:#?}\nburrow said: {}",
            self.burrow_stderr
        );
        assert_eq!(
            self.status, 0,
            "burrow's status differs from the JSON: {self:#?}"
        );
        self
    }

    /// Asserts a non-zero exit, with `needle` in stdout or stderr.
    #[track_caller]
    pub fn assert_failure_mentioning(&self, needle: &str) -> &RunResult {
        assert_ne!(
            self.exit_code(),
            0,
            "command unexpectedly succeeded: {self:#?}"
        );
        assert!(
            self.stdout().contains(needle) || self.stderr().contains(needle),
            "expected {needle:?} in the output: {self:#?}"
        );
        self
    }
}

/// A host path of the test's, checked for ownership (the tests create files as root and hand
/// them to the test user).
pub fn owner_of(path: &Path) -> u32 {
    std::fs::metadata(path).expect("metadata").uid()
}

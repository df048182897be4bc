//! Building overlay layers by hand for tests: whiteouts are character
//! devices 0:0 (so the tests need root, as CI runs them), opaque directories
//! carry `user.overlay.opaque=y`.

use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use rustix::fs::{FileType, Mode, XattrFlags};
use tempfile::TempDir;

use super::LayerStack;

/// A temporary directory on a filesystem with user xattrs: /tmp if it has
/// them (ext4, tmpfs since Linux 6.6), else the crate's directory.
pub(crate) fn tempdir() -> TempDir {
    let dir = tempfile::tempdir().unwrap();
    let probe = dir.path().join(".probe");
    fs::create_dir(&probe).unwrap();
    let supported =
        rustix::fs::setxattr(&probe, "user.burrow-test", b"1", XattrFlags::empty()).is_ok();
    fs::remove_dir(&probe).unwrap();
    if supported {
        return dir;
    }
    tempfile::Builder::new()
        .prefix(".test-")
        .tempdir_in(env!("CARGO_MANIFEST_DIR"))
        .unwrap()
}

/// How many directories `operation` lists, on this thread.
pub(crate) fn listings<T>(operation: impl FnOnce() -> T) -> (T, usize) {
    let before = super::sys::LISTED.with(|listed| listed.get());
    let value = operation();
    let after = super::sys::LISTED.with(|listed| listed.get());
    (value, after - before)
}

/// Runs `operation` on a thread of its own and returns what it returns; fails the test if it
/// is still running after a minute. An operation that opened a FIFO would wait forever for a
/// writer: this turns that hang into a failure (a guard, not a timing assertion).
pub(crate) fn never_blocks<T: Send + 'static>(operation: impl FnOnce() -> T + Send + 'static) -> T {
    use std::sync::mpsc::RecvTimeoutError;
    let (done, result) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(operation());
    });
    match result.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(value) => value,
        Err(RecvTimeoutError::Timeout) => panic!("still blocked after a minute: a FIFO was opened"),
        Err(RecvTimeoutError::Disconnected) => panic!("the operation panicked"),
    }
}

/// Layers under one temporary directory, created by name.
pub(crate) struct Layers {
    pub(crate) dir: TempDir,
}

impl Layers {
    pub(crate) fn new() -> Layers {
        Layers { dir: tempdir() }
    }

    /// The directory of layer `name`, created if needed.
    pub(crate) fn layer(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        fs::create_dir_all(&path).unwrap();
        path
    }

    /// A stack of the named layers, topmost first.
    pub(crate) fn stack(&self, names: &[&str]) -> LayerStack {
        let dirs: Vec<PathBuf> = names.iter().map(|name| self.layer(name)).collect();
        LayerStack::open(&dirs).unwrap()
    }

    pub(crate) fn file(&self, layer: &str, path: &str, content: &[u8]) {
        let full = self.parent(layer, path);
        fs::write(&full, content).unwrap();
        fs::set_permissions(&full, fs::Permissions::from_mode(0o644)).unwrap();
    }

    pub(crate) fn mode(&self, layer: &str, path: &str, mode: u32) {
        let full = self.layer(layer).join(path);
        fs::set_permissions(full, fs::Permissions::from_mode(mode)).unwrap();
    }

    pub(crate) fn dir(&self, layer: &str, path: &str) {
        fs::create_dir_all(self.layer(layer).join(path)).unwrap();
    }

    pub(crate) fn opaque_dir(&self, layer: &str, path: &str) {
        let full = self.layer(layer).join(path);
        fs::create_dir_all(&full).unwrap();
        rustix::fs::setxattr(&full, "user.overlay.opaque", b"y", XattrFlags::empty()).unwrap();
    }

    pub(crate) fn symlink(&self, layer: &str, path: &str, target: impl AsRef<Path>) {
        symlink(target, self.parent(layer, path)).unwrap();
    }

    pub(crate) fn whiteout(&self, layer: &str, path: &str) {
        let full = self.parent(layer, path);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &full,
            FileType::CharacterDevice,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
    }

    pub(crate) fn fifo(&self, layer: &str, path: &str) {
        let full = self.parent(layer, path);
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &full,
            FileType::Fifo,
            Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
    }

    /// The host path of `path` in `layer`, its parent directory created.
    fn parent(&self, layer: &str, path: &str) -> PathBuf {
        let full = self.layer(layer).join(path);
        if let Some(parent) = full.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        full
    }
}

/// A secret outside every layer, for the tests that check no link is
/// followed: a directory holding `secret` with a recognisable content.
pub(crate) struct Outside {
    pub(crate) dir: TempDir,
}

pub(crate) const SECRET: &[u8] = b"TOP-SECRET-HOST-CONTENT\n";

impl Outside {
    pub(crate) fn new() -> Outside {
        let dir = tempdir();
        fs::write(dir.path().join("secret"), SECRET).unwrap();
        Outside { dir }
    }

    pub(crate) fn secret(&self) -> PathBuf {
        self.dir.path().join("secret")
    }
}

/// Whether `haystack` contains the secret.
pub(crate) fn leaks(haystack: &[u8]) -> bool {
    haystack
        .windows(SECRET.len())
        .any(|window| window == SECRET)
}

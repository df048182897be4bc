//! Helpers for the layer tests: run a closure in a forked child and get its verdict back.
#![cfg(test)]

/// Runs `body` in a forked child (so that layers applied there do not touch the test process)
/// and returns what it returned.
pub(crate) fn in_child(body: impl FnOnce() -> i32) -> i32 {
    match crate::sys::fork().expect("fork") {
        None => {
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)).unwrap_or(200);
            crate::sys::exit_now(code)
        }
        Some(pid) => {
            let mut status = 0;
            // SAFETY: waitpid writes into a local integer.
            unsafe { libc::waitpid(pid, &mut status, 0) };
            crate::init::exit_code(status)
        }
    }
}

/// The errno of an io::Result: 0 for success.
pub(crate) fn errno<T>(result: std::io::Result<T>) -> i32 {
    match result {
        Ok(_) => 0,
        Err(error) => error.raw_os_error().unwrap_or(-1),
    }
}

/// A scratch directory outside /tmp (which the cell's Landlock rules leave writable).
pub(crate) fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(".layer-test-")
        .tempdir_in(env!("CARGO_MANIFEST_DIR"))
        .expect("scratch directory")
}

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

/// A scratch directory outside /tmp and the other areas the cell's Landlock rules leave
/// writable: beside the sources, or in the home directory when the checkout is under /tmp.
pub(crate) fn scratch_dir() -> tempfile::TempDir {
    let sources = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let in_scratch = crate::landlock::SCRATCH_AREAS
        .iter()
        .any(|area| sources.starts_with(area));
    let parent = if in_scratch {
        std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME, for scratch directories"))
    } else {
        sources
    };
    tempfile::Builder::new()
        .prefix(".layer-test-")
        .tempdir_in(parent)
        .expect("scratch directory")
}

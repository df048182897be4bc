//! Giving memory back while nothing happens.
//!
//! The agent stays resident for the life of its workspace, and most of its resident memory is
//! burrow's own code, paged in at start-up and by the last request. Once the agent has been
//! idle for a moment, it drops those pages from its page tables (they stay in the page cache,
//! shared with every other burrow process, and come back with the next request at the cost of
//! a few minor faults) and returns free heap to the kernel.

use std::time::Duration;

/// Idle this long before memory is given back: longer than the gap between the commands of a
/// busy agent, so that they do not pay for page faults.
pub const TRIM_AFTER: Duration = Duration::from_secs(3);

unsafe extern "C" {
    /// First byte of the executable's image (the linker defines it).
    static __executable_start: u8;
    /// End of its code (the linker defines it). Read-only data comes before the code in
    /// burrow's link layout, so the two bound everything the binary maps read-only.
    static etext: u8;
}

/// Drops the executable's read-only pages from this process's page tables and trims the heap.
pub fn trim() {
    let page = rustix::param::page_size();
    // Only the addresses of the linker's symbols are taken; nothing is read.
    let (start, end) = (
        &raw const __executable_start as usize,
        &raw const etext as usize,
    );
    // Inward to whole pages: never past `etext` into the writable data that follows, whose
    // pages MADV_DONTNEED would reset.
    let start = start.next_multiple_of(page);
    let end = end - end % page;
    if end > start {
        // SAFETY: the range is the executable's own read-only, file-backed mapping; dropping
        // its pages only makes the next access fault them in again from the file.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        }
    }
    // SAFETY: malloc_trim only releases free heap memory.
    unsafe { libc::malloc_trim(0) };
}

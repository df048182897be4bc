//! Growing a buffer without ever going past its budget.

/// Makes room for `additional` more bytes, doubling like `Vec` does but never
/// allocating past `limit`: a capture of a few bytes should not cost a whole
/// budget, and a full one should not cost twice its budget.
pub(crate) fn reserve_within(buf: &mut Vec<u8>, additional: usize, limit: usize) {
    let needed = buf.len().saturating_add(additional);
    if needed > buf.capacity() {
        let target = buf.capacity().saturating_mul(2).min(limit).max(needed);
        buf.reserve_exact(target - buf.len());
    }
}

//! Dropping every capability, for good.

use rustix::thread::{CapabilitiesSecureBits, CapabilitySet, CapabilitySets};

use crate::error::Step;
use crate::report::{AtStep, StepError};
use crate::sys;

/// Highest capability number any kernel is likely to define; numbers the running kernel does
/// not know are skipped.
const LAST_CAPABILITY: u32 = 63;

/// Empties the bounding, ambient, inheritable, permitted and effective sets, and locks the
/// securebits so that exec as uid 0 cannot hand capabilities back.
///
/// Order matters: the bounding set and securebits need CAP_SETPCAP, so they go first, while it
/// is still held; the sets themselves are cleared last.
pub(crate) fn drop_all() -> Result<(), StepError> {
    for capability in 0..=LAST_CAPABILITY {
        match sys::drop_bounding_capability(capability) {
            Ok(()) => {}
            Err(error) if error.raw_os_error() == Some(libc::EINVAL) => break,
            Err(error) => return Err(error).at(Step::Capabilities),
        }
    }
    rustix::thread::set_capabilities_secure_bits(
        CapabilitiesSecureBits::NO_ROOT
            | CapabilitiesSecureBits::NO_ROOT_LOCKED
            | CapabilitiesSecureBits::NO_SETUID_FIXUP
            | CapabilitiesSecureBits::NO_SETUID_FIXUP_LOCKED
            | CapabilitiesSecureBits::KEEP_CAPS_LOCKED
            | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE
            | CapabilitiesSecureBits::NO_CAP_AMBIENT_RAISE_LOCKED,
    )
    .at(Step::Capabilities)?;
    rustix::thread::clear_ambient_capability_set().at(Step::Capabilities)?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .at(Step::Capabilities)?;

    let now = rustix::thread::capabilities(None).at(Step::Capabilities)?;
    if !(now.effective.is_empty() && now.permitted.is_empty() && now.inheritable.is_empty()) {
        return Err(std::io::Error::other(
            "capabilities remain after dropping them",
        ))
        .at(Step::Capabilities);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::testing::in_child;

    /// In a fresh user namespace a process holds every capability; drop_all leaves none, not
    /// even in the bounding set, and locks the securebits so exec cannot restore them.
    #[test]
    fn drop_all_leaves_no_capability_anywhere() {
        let result = in_child(|| {
            // SAFETY: a single-threaded child; no descriptor table is unshared.
            if unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWUSER) }
                .is_err()
            {
                return 100;
            }
            let before = rustix::thread::capabilities(None).unwrap();
            if before.effective.is_empty() {
                return 101; // the control: a new user namespace grants capabilities
            }
            if super::drop_all().is_err() {
                return 102;
            }
            let after = rustix::thread::capabilities(None).unwrap();
            if !(after.effective.is_empty() && after.permitted.is_empty()) {
                return 103;
            }
            for capability in 0..=40 {
                // SAFETY: PR_CAPBSET_READ takes an integer.
                let present = unsafe { libc::prctl(libc::PR_CAPBSET_READ, capability, 0, 0, 0) };
                if present == 1 {
                    return 104;
                }
            }
            let bits = rustix::thread::capabilities_secure_bits().unwrap();
            if !bits.contains(rustix::thread::CapabilitiesSecureBits::NO_ROOT_LOCKED) {
                return 105;
            }
            0
        });
        assert_eq!(result, 0);
    }
}

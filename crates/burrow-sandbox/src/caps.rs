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

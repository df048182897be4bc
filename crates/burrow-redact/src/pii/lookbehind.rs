//! Look-behind classes of the byte before a position, and the first bytes a match can start with.

use regex_automata::Anchored;
use regex_automata::hybrid::dfa::{Cache as DfaCache, DFA};
use regex_automata::util::start;

pub(super) const LOOKBEHIND_CLASSES: usize = 5;

/// The look-behind classes the DFA's start state depends on, each with a
/// representative byte: start of text, `\n`, `\r`, an ASCII word byte, any
/// other ASCII byte. `None` for non-ASCII bytes, which are not classified
/// (a Unicode word boundary in a custom regex may treat them specially).
pub(super) fn lookbehind_class(byte: Option<u8>) -> Option<usize> {
    match byte {
        None => Some(0),
        Some(b'\n') => Some(1),
        Some(b'\r') => Some(2),
        Some(b) if b.is_ascii_alphanumeric() || b == b'_' => Some(3),
        Some(b) if b.is_ascii() => Some(4),
        Some(_) => None,
    }
}

const LOOKBEHIND_REPRESENTATIVES: [Option<u8>; LOOKBEHIND_CLASSES] =
    [None, Some(b'\n'), Some(b'\r'), Some(b'a'), Some(b' ')];

/// For each look-behind class and byte, whether the anchored DFA survives
/// that first byte. Unknown (errors, quits) counts as yes.
pub(super) fn first_byte_table(dfa: &DFA) -> Box<[[bool; 256]; LOOKBEHIND_CLASSES]> {
    let mut cache = DfaCache::new(dfa);
    let mut table = Box::new([[true; 256]; LOOKBEHIND_CLASSES]);
    for (class, lookbehind) in LOOKBEHIND_REPRESENTATIVES.iter().enumerate() {
        let config = start::Config::new()
            .anchored(Anchored::Yes)
            .look_behind(*lookbehind);
        let Ok(start) = dfa.start_state(&mut cache, &config) else {
            continue;
        };
        for byte in 0..=255u8 {
            if let Ok(next) = dfa.next_state(&mut cache, start, byte) {
                table[class][usize::from(byte)] = !next.is_dead();
            }
        }
    }
    table
}

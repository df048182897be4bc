//! A shell, session or service looked up by a name nobody gave it: the client's request is
//! answered `not_found`, not `invalid`.

/// The failed lookup, with the line the client shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown(pub String);

impl Unknown {
    /// No `kind` named `name`; `burrow KIND list` shows the names there are.
    pub fn new(kind: &str, name: &str) -> Unknown {
        Unknown(format!("no {kind} named {name}; see `burrow {kind} list`"))
    }
}

//! Where credentials live in a home directory, hidden from every cell unless the policy says not to.

/// Paths under the caller's home directory that hold credentials or tokens.
///
/// The list errs on the side of hiding: a tool that needs one of these can be given it with
/// `filesystem.hide_credentials = false` plus its own `hide` list, but an agent must never read a
/// key by accident.
pub const CREDENTIAL_PATHS: &[&str] = &[
    // ssh keys, agents' sockets, known hosts
    ".ssh",
    // gpg keys and agent sockets
    ".gnupg",
    // cloud CLIs
    ".aws",
    ".azure",
    ".config/gcloud",
    ".oci",
    ".config/doctl",
    ".boto",
    ".s3cfg",
    ".config/rclone",
    // container and cluster credentials
    ".docker",
    ".kube",
    // forge and package-registry tokens
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    ".npmrc",
    ".pypirc",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings-security.xml",
    ".terraform.d/credentials.tfrc.json",
    ".vault-token",
    // password stores and keyrings
    ".password-store",
    ".local/share/keyrings",
    ".config/op",
    // database client passwords
    ".pgpass",
    ".my.cnf",
];

/// Paths relative to each writable root that stay read-only inside it.
///
/// A git hook or a `core.hooksPath`/`core.fsmonitor` setting planted by sandboxed code would run
/// on the host the next time a person uses git in that repository. A trailing `/` marks a
/// directory, which the sandbox creates (empty) when it is missing but its parent exists, so
/// that code in the cell cannot create it either.
pub const DEFAULT_PROTECTED: &[&str] = &[".git/hooks/", ".git/config"];

//! API tokens for `burrow serve`: random, shown once, stored as their SHA-256 only.

use sha2::{Digest, Sha256};

use crate::error::{Result, WorkspaceError};
use crate::names::validate_name;
use crate::store::{Store, TokenRecord};

/// What a token starts with, so that one found in a log or a file is recognisable.
const PREFIX: &str = "burrow_";

/// Makes a token for `tenant`; returns its record and the token itself (not stored).
pub fn create(store: &Store, tenant: &str) -> Result<(TokenRecord, String)> {
    validate_name(tenant).map_err(|_| {
        WorkspaceError::Invalid(format!(
            "`{tenant}` is not a valid tenant name: use letters, digits, `.`, `_` and `-` (up to 64, starting with a letter or digit)"
        ))
    })?;
    let mut secret = [0u8; 32];
    rustix::rand::getrandom(&mut secret, rustix::rand::GetRandomFlags::empty())
        .map_err(|error| WorkspaceError::Invalid(format!("no randomness for a token: {error}")))?;
    let token = format!("{PREFIX}{}", hex(&secret));
    let record = TokenRecord {
        id: crate::names::new_id(),
        tenant: tenant.to_owned(),
        created_at: crate::journal::now_ms() / 1000,
        revoked_at: None,
    };
    store.insert_token(&record, &digest(&token))?;
    Ok((record, token))
}

/// The tenant a token acts for, if it is a live token.
pub fn authenticate(store: &Store, token: &str) -> Result<Option<String>> {
    if !token.starts_with(PREFIX) || token.len() > 128 {
        return Ok(None);
    }
    Ok(store
        .token_by_hash(&digest(token))?
        .map(|record| record.tenant))
}

fn digest(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_authenticates_its_tenant_until_revoked() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("state.db")).unwrap();
        let (record, token) = create(&store, "acme").unwrap();
        assert!(token.starts_with("burrow_") && token.len() == 7 + 64);
        assert_eq!(
            authenticate(&store, &token).unwrap().as_deref(),
            Some("acme")
        );
        assert_eq!(authenticate(&store, "burrow_0000").unwrap(), None);
        assert_eq!(
            authenticate(&store, &token.replace('a', "b")).unwrap(),
            None
        );
        store.revoke_token(&record.id, 1).unwrap();
        assert_eq!(authenticate(&store, &token).unwrap(), None);
        assert!(create(&store, "bad tenant").is_err());
    }
}

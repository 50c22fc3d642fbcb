//! Bearer tokens, each granted a set of namespaces at start.
//!
//! The grants are JSON, `{ "<token>": ["namespace", ...], ... }`, from the environment
//! (`RUNSTORE_SYNC_TOKENS`) or a file (`RUNSTORE_SYNC_TOKENS_FILE`). Tokens are kept as
//! SHA-256 digests, so a lookup compares digests rather than the secrets themselves.

use std::collections::{BTreeSet, HashMap};

use axum::http::{header, HeaderMap};
use sha2::{Digest, Sha256};

use super::api_error::ApiError;
use crate::error::{Error, Result};

/// The longest namespace name, in bytes.
pub const MAX_NAMESPACE_BYTES: usize = 64;

/// Which namespaces each token may use.
#[derive(Debug, Clone, Default)]
pub struct Grants {
    by_digest: HashMap<[u8; 32], BTreeSet<String>>,
}

impl Grants {
    /// Grants from their JSON form, `{ "<token>": ["namespace", ...] }`.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for malformed JSON, an empty token, or a namespace name that is
    /// not 1 to [`MAX_NAMESPACE_BYTES`] of ASCII letters, digits, `-`, `_` and `.`.
    pub fn from_json(text: &str) -> Result<Self> {
        let parsed: HashMap<String, Vec<String>> = serde_json::from_str(text).map_err(|e| {
            Error::invalid(
                "tokens",
                format!("not a JSON object of token → namespaces: {e}"),
            )
        })?;
        let mut grants = Grants::default();
        for (token, namespaces) in parsed {
            for namespace in &namespaces {
                check_namespace(namespace)?;
            }
            grants.grant(&token, namespaces)?;
        }
        Ok(grants)
    }

    /// Lets `token` use `namespaces` (besides what it had).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an empty token or a malformed namespace name.
    pub fn grant(
        &mut self,
        token: &str,
        namespaces: impl IntoIterator<Item = impl Into<String>>,
    ) -> Result<()> {
        if token.is_empty() {
            return Err(Error::invalid("tokens", "a token must not be empty"));
        }
        let entry = self.by_digest.entry(digest(token)).or_default();
        for namespace in namespaces {
            let namespace = namespace.into();
            check_namespace(&namespace)?;
            entry.insert(namespace);
        }
        Ok(())
    }

    /// Admits a request to `namespace`: its `Authorization: Bearer` token must be known
    /// (else 401) and granted the namespace (else 403), both `UNAUTHORIZED`.
    pub(crate) fn admit(&self, headers: &HeaderMap, namespace: &str) -> Result<(), ApiError> {
        let token = headers
            .get(header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|token| !token.is_empty())
            .ok_or_else(|| unauthorized(401, "a bearer token is required"))?;
        let granted = self
            .by_digest
            .get(&digest(token))
            .ok_or_else(|| unauthorized(401, "the token is not known"))?;
        if !granted.contains(namespace) {
            return Err(unauthorized(403, "the token is not granted this namespace"));
        }
        Ok(())
    }
}

fn unauthorized(status: u16, message: &str) -> ApiError {
    ApiError::with_status(
        status,
        Error::Unauthorized {
            message: message.to_owned(),
        },
    )
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Namespace names stay short and plain: they prefix every id the server stores.
pub(crate) fn check_namespace(name: &str) -> Result<()> {
    let plain = name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if name.is_empty() || name.len() > MAX_NAMESPACE_BYTES || !plain {
        return Err(Error::invalid(
            "namespace",
            format!(
                "{name:?} is not 1 to {MAX_NAMESPACE_BYTES} ASCII letters, digits, '-', '_' or '.'"
            ),
        ));
    }
    Ok(())
}

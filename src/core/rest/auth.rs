//! Bearer tokens ([`Tokens`], the `AUTH_TOKENS` secret) and what one may
//! touch ([`Grant`]).
//!
//! What it does not do: accounts or users. A token names namespaces.

use crate::core::api;
use crate::core::catalog::{CatalogCall, Visible};
use crate::core::error::{Error, Result};
use serde_json::{Map, Value};

/// Which namespaces a token may touch: server configuration, a JSON object
/// `{"<token>": ["<namespace>" | "*", ...]}` (the `AUTH_TOKENS` secret).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Tokens(Vec<(String, Vec<String>)>);

impl Tokens {
    pub fn parse(json: &str) -> Result<Tokens> {
        let v: Map<String, Value> = serde_json::from_str(json).map_err(|e| Error::config(format!("AUTH_TOKENS is not a JSON object: {e}")))?;
        let mut out = Vec::new();
        for (token, spaces) in v {
            let spaces: Vec<String> = serde_json::from_value(spaces).map_err(|_| Error::config("AUTH_TOKENS values must be arrays of namespace names"))?;
            if token.len() < 8 {
                return Err(Error::config("AUTH_TOKENS tokens must be at least 8 characters"));
            }
            out.push((token, spaces));
        }
        Ok(Tokens(out))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Checks an `Authorization` header against `namespace`: 401 without a
    /// known bearer token, 403 when the token may not touch it, 503 when
    /// no tokens are configured (the service refuses rather than serving
    /// everyone).
    pub fn authorize(&self, header: Option<&str>, namespace: &str) -> Result<()> {
        self.grant(header)?.check(namespace)
    }

    /// The namespaces an `Authorization` header's token may touch: 401
    /// without a known bearer token, 503 when no tokens are configured.
    pub fn grant(&self, header: Option<&str>) -> Result<Grant> {
        if self.0.is_empty() {
            return Err(Error::config("no AUTH_TOKENS configured: the REST API is closed"));
        }
        let token = header.and_then(bearer_token).ok_or_else(|| Error::unauthenticated("missing bearer token"))?;
        self.0
            .iter()
            .find(|(t, _)| constant_time_eq(t.as_bytes(), token.as_bytes()))
            .map(|(_, s)| Grant(s.clone()))
            .ok_or_else(|| Error::unauthenticated("unknown bearer token"))
    }
}

/// The token of an `Authorization` header of the `Bearer` scheme, whose
/// name is read without regard to case ("bearer", "BEARER"; RFC 9110
/// section 11.1), the token after one or more spaces.
fn bearer_token(header: &str) -> Option<&str> {
    let (scheme, token) = header.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The namespaces one token may touch (`*`: every one).
#[derive(Clone, Debug, PartialEq)]
pub struct Grant(Vec<String>);

impl Grant {
    pub fn allows(&self, namespace: &str) -> bool {
        self.0.iter().any(|s| s == "*" || s == namespace)
    }

    /// The namespaces a list may show this token: every one for `*`, else
    /// those it names.
    pub fn visible(&self) -> Visible {
        if self.0.iter().any(|s| s == "*") {
            Visible::All
        } else {
            Visible::Only(self.0.clone())
        }
    }

    /// 403 unless the token may touch `namespace`.
    pub fn check(&self, namespace: &str) -> Result<()> {
        if self.allows(namespace) {
            Ok(())
        } else {
            Err(Error::forbidden(format!("this token may not access namespace {}", api::quoted(namespace))))
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A namespace call as `grant` may make it, before it is sent: creating a
/// namespace needs a token that may touch it; a list is limited to the
/// namespaces the grant may see, in the catalog's query itself (so its
/// pages, cursors and counts are made of those alone); the others name
/// their namespace in the path, checked before routing.
pub fn scope_catalog(call: CatalogCall, grant: &Grant) -> Result<CatalogCall> {
    match call {
        CatalogCall::Create { ref name, .. } => grant.check(name).map(|()| call),
        CatalogCall::List { account, per_page, cursor, order, .. } => Ok(CatalogCall::List { account, per_page, cursor, visible: grant.visible(), order }),
        other => Ok(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_the_bearer_scheme_is_read_without_regard_to_case() {
        for h in ["Bearer t0k", "bearer t0k", "BEARER t0k", "Bearer   t0k ", " bEaReR t0k"] {
            assert_eq!(bearer_token(h), Some("t0k"), "{h:?}");
        }
        for h in ["Bearer", "Bearer ", "Bearert0k", "Basic t0k", "Token t0k", ""] {
            assert_eq!(bearer_token(h), None, "{h:?}");
        }
    }
}

//! What the router makes of a request: its [`Route`], and for a profile
//! operation the [`ProfileCall`] and the [`Dialect`] it came through.

use crate::core::api;
use crate::core::catalog::CatalogCall;
use crate::core::op::Op;
use serde_json::{json, Value};

/// Which form of the API a request came through (see the module's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// `/client/v4/accounts/...`: results as Cloudflare documents them.
    Published,
    /// `/accounts/...`: this service's full reports.
    Original,
}

/// Where a request goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    Health,
    OpenApi,
    /// An operation on one profile.
    Profile(ProfileCall),
    /// Namespace management, answered by the catalog.
    Catalog(CatalogCall),
    /// The MCP endpoint of one profile (`/mcp/namespaces/{ns}/profiles/{p}`);
    /// any method (the MCP module answers 405 where due), no query string.
    Mcp {
        namespace: String,
        profile: String,
    },
}

/// An operation addressed to a profile's Durable Object.
#[derive(Clone, Debug, PartialEq)]
pub struct ProfileCall {
    pub namespace: String,
    pub profile: String,
    pub op: Op,
    pub args: Value,
    pub dialect: Dialect,
}

impl ProfileCall {
    /// The Durable Object name. Names cannot contain `/`, so distinct
    /// (namespace, profile) pairs never share an object.
    pub fn object_name(&self) -> String {
        object_name(&self.namespace, &self.profile)
    }

    /// Whether its caller reads no result: a route of the published
    /// dialect whose envelope carries `result: null` ([`envelope_for`](super::envelope_for)).
    pub fn unread(&self) -> bool {
        self.dialect == Dialect::Published && self.op.publishes_no_result()
    }

    /// The call's arguments, taken to be sent to the profile (not copied:
    /// an ingest's may be 16 MB); what its envelope reads of them, a
    /// list's `limit` ([`ProfileCall::per_page`]), stays.
    pub fn take_args(&mut self) -> Value {
        let args = std::mem::take(&mut self.args);
        if let Some(limit) = args.get("limit") {
            self.args = json!({ "limit": limit.clone() });
        }
        args
    }

    /// The page size a list asked for (what `result_info.per_page` says).
    pub fn per_page(&self) -> usize {
        self.args.get("limit").and_then(Value::as_u64).map_or(api::DEFAULT_PAGE_SIZE, api::count)
    }
}

pub fn object_name(namespace: &str, profile: &str) -> String {
    format!("{namespace}/{profile}")
}

/// A request as the router sees it.
pub struct Incoming<'a> {
    pub method: &'a str,
    pub path: &'a str,
    /// The query string as sent, without its `?` (empty for none); the
    /// router decodes it, refusing what does not decode.
    pub query: &'a str,
    pub content_type: Option<&'a str>,
    pub body: &'a [u8],
}

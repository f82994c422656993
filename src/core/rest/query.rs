//! Query strings: decoded strictly, and read by a route's [`QuerySpec`]
//! into its call's arguments. A parameter no route reads is refused, never
//! ignored.

use super::call::Dialect;
use crate::core::api;
use crate::core::error::{Error, Result};
use serde_json::{Map, Value};

/// The query string's name-value pairs, in order: `&`-separated (empty
/// pieces skipped), `+` a space, percent-escapes decoded. An escape that
/// is not two hex digits, or bytes that are not UTF-8, are refused rather
/// than replaced.
pub(super) fn query_pairs(raw: &str) -> Result<Vec<(String, String)>> {
    let field = |s: &str| percent_decode(&s.replace('+', " "), "query");
    raw.split('&')
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            let (k, v) = piece.split_once('=').unwrap_or((piece, ""));
            Ok((field(k)?, field(v)?))
        })
        .collect()
}

/// A non-negative integer written as plain decimal digits: no sign, no
/// leading zero, no spaces (`+20` and `007` are refused, not read as 20
/// and 7).
pub(super) fn integer(s: &str) -> Option<u64> {
    let canonical = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

/// The query parameters a GET route reads: each name, as the published
/// reference spells it, with the request field it fills (the field's own
/// name is taken too) and what its value must be. Any other parameter is
/// refused (400), naming the ones the route reads, so a misspelt one is
/// caught rather than ignored; a bad value is refused under the name it
/// was sent as.
pub(super) struct QuerySpec {
    params: &'static [Param],
}

/// One query parameter a route reads: its published name, the field it
/// fills, and what its value must be.
pub(super) struct Param(&'static str, &'static str, ParamValue);

/// What a query parameter's value must be, checked under the name it was
/// sent as (the operation checks the field again under its own name).
#[derive(Clone, Copy)]
pub(super) enum ParamValue {
    /// Any text; the operation reads it.
    Text,
    /// A count of 1 to this, in plain digits: a JSON number.
    Count(usize),
    /// A session id ([`api::validate_session_id_as`]).
    Session,
    /// An ISO-8601 instant ([`api::validate_date`]).
    Instant,
}

impl ParamValue {
    /// `v`, sent as `name`, as the JSON value of its field.
    fn read(self, name: &str, v: &str) -> Result<Value> {
        match self {
            ParamValue::Text => {}
            ParamValue::Count(max) => {
                let n = integer(v).ok_or_else(|| Error::invalid(format!("{} must be a positive integer, in digits", api::quoted(name))))?;
                if n == 0 || n > max as u64 {
                    // `name` is one of the route's own names: no need to quote it.
                    return Err(Error::invalid(format!("{name} must be 1-{max}")));
                }
                return Ok(Value::from(n));
            }
            ParamValue::Session => api::validate_session_id_as(name, v)?,
            ParamValue::Instant => api::validate_date(name, &Some(v.to_string()))?,
        }
        Ok(Value::String(v.to_string()))
    }
}

impl QuerySpec {
    /// The parameter `name` is, if this route reads it.
    fn param(&self, name: &str) -> Option<&'static Param> {
        self.params.iter().find(|Param(q, f, _)| *q == name || *f == name)
    }

    /// The names a refusal lists, each field once: as the published
    /// reference spells them on its paths, as this service's OpenAPI
    /// document does (the fields' own names) on the original ones.
    fn listed(&self, dialect: Dialect) -> String {
        let mut names: Vec<&str> = Vec::new();
        for Param(q, f, _) in self.params {
            let name = if dialect == Dialect::Published { q } else { f };
            if !names.iter().any(|n| self.param(n).is_some_and(|p| p.1 == *f)) {
                names.push(name);
            }
        }
        names.join(", ")
    }
}

/// A memory list's query (`GET …/memories`).
pub(super) const LIST_QUERY: QuerySpec = QuerySpec {
    params: &[
        Param("per_page", "limit", ParamValue::Count(api::MAX_PAGE_SIZE)),
        Param("cursor", "cursor", ParamValue::Text),
        Param("session_id", "sessionId", ParamValue::Session),
        Param("type", "type", ParamValue::Text),
        Param("status", "status", ParamValue::Text),
        Param("key", "key", ParamValue::Text),
        Param("filter", "filter", ParamValue::Text),
        Param("as_of", "asOf", ParamValue::Instant),
    ],
};
/// `GET …/summary`'s query.
pub(super) const SUMMARY_QUERY: QuerySpec = QuerySpec { params: &[Param("session_id", "sessionId", ParamValue::Session)] };
/// `GET …/export`'s query.
pub(super) const EXPORT_QUERY: QuerySpec = QuerySpec { params: &[Param("filter", "filter", ParamValue::Text)] };
/// A catalog list's query (namespaces, a namespace's profiles): a page
/// size under either name and a cursor; the namespace list also an order.
pub(super) const PROFILES_QUERY: QuerySpec = QuerySpec {
    params: &[
        Param("per_page", "perPage", ParamValue::Count(crate::core::catalog::MAX_PAGE)),
        Param("limit", "perPage", ParamValue::Count(crate::core::catalog::MAX_PAGE)),
        Param("cursor", "cursor", ParamValue::Text),
    ],
};
pub(super) const NAMESPACES_QUERY: QuerySpec = QuerySpec {
    params: &[
        Param("per_page", "perPage", ParamValue::Count(crate::core::catalog::MAX_PAGE)),
        Param("limit", "perPage", ParamValue::Count(crate::core::catalog::MAX_PAGE)),
        Param("cursor", "cursor", ParamValue::Text),
        Param("order", "order", ParamValue::Text),
        Param("direction", "direction", ParamValue::Text),
    ],
};

/// `text` with its percent-escapes decoded; `part` names where it came
/// from in the error.
pub(super) fn percent_decode(text: &str, part: &str) -> Result<String> {
    let bad = || Error::invalid(format!("bad percent-encoding in {part}"));
    let mut out = Vec::with_capacity(text.len());
    let mut bytes = text.bytes();
    while let Some(b) = bytes.next() {
        if b == b'%' {
            let hex = [bytes.next().ok_or_else(bad)?, bytes.next().ok_or_else(bad)?];
            if !hex.iter().all(u8::is_ascii_hexdigit) {
                return Err(bad());
            }
            let hex = std::str::from_utf8(&hex).map_err(|_| bad())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
        } else {
            out.push(b);
        }
    }
    String::from_utf8(out).map_err(|_| Error::invalid(format!("{part} is not valid UTF-8")))
}

/// Query parameters as a JSON object of the fields `spec` names them
/// by. A parameter the route does not read, or a field given twice (under
/// either name), is refused; numeric fields are parsed as integers of 1
/// to their largest value.
pub(super) fn query_args(query: &str, spec: &QuerySpec, dialect: Dialect) -> Result<Value> {
    let mut map = Map::new();
    for (k, v) in &query_pairs(query)? {
        let Param(_, field, value) =
            spec.param(k).ok_or_else(|| Error::invalid(format!("unknown query parameter {}; this route reads {}", api::quoted(k), spec.listed(dialect))))?;
        if map.contains_key(*field) {
            return Err(Error::invalid(format!("query parameter {} is given twice", api::quoted(k))));
        }
        map.insert(field.to_string(), value.read(k, v)?);
    }
    Ok(Value::Object(map))
}

/// A catalog list's query (`spec`): its page size (`per_page`, or
/// `limit`), its cursor, and all it holds.
pub(super) fn page_query(query: &str, spec: &QuerySpec, dialect: Dialect) -> Result<(Option<usize>, Option<String>, Value)> {
    let args = query_args(query, spec, dialect)?;
    let per_page = args.get("perPage").and_then(Value::as_u64).map(api::count);
    let cursor = args.get("cursor").and_then(Value::as_str).map(str::to_string);
    Ok((per_page, cursor, args))
}

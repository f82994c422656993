//! The REST surface, pure: routing a request to an operation, checking the
//! bearer token, and the response envelope. The Worker's fetch handler
//! only moves bytes between this module and the platform.
//!
//! Two prefixes reach the same operations:
//! - `/client/v4/accounts/{account}/agent-memory/...`, Cloudflare's
//!   published HTTP API, answered as documented ([`Dialect::Published`]):
//!   ingest and the deletions answer `null`, a list is an array with
//!   `result_info {cursor, per_page, count}`;
//! - `/accounts/{account}/agent-memory/...`, this service's first form
//!   ([`Dialect::Original`]): the same requests, and the full reports
//!   (ingest's report, the deletions' counts, a list as a page object).
//!
//! Under either: `namespaces` (create, list), `namespaces/{ns}` (get,
//! delete), and `namespaces/{ns}/profiles/{profile}/...` (the profile
//! operations).
//!
//! The router lives here; what it hands on is in the submodules, each
//! below the router and none importing it: `call` (what a request is
//! routed to), `query` (query strings), `body` (a body's size and
//! encoding), `internal` (the call posted to a profile's object),
//! `auth` (tokens) and `envelope` (the response around a result).

mod auth;
mod body;
mod call;
mod envelope;
mod internal;
mod query;

pub use auth::{scope_catalog, Grant, Tokens};
pub use body::{check_content_encoding, BodyReader, MAX_BODY_BYTES};
pub use call::{object_name, Dialect, Incoming, ProfileCall, Route};
pub use envelope::{
    catalog_status, envelope_catalog, envelope_ends, envelope_err, envelope_for, envelope_ok_owned, envelope_ok_text, retry_after_seconds, Enveloped,
    BUSY_RETRY_AFTER_SECONDS, NOTE_CODE,
};
pub use internal::{
    rpc_import_fits, rpc_op, rpc_profile_name, rpc_reads_no_result, rpc_size_fits, Asks, ObjectCall, Posted, CALL_BYTES_HEADER, CALL_HEADER, PIECES_HEADER,
};

use crate::core::api::{self, MAX_IMPORT_BYTES};
use crate::core::catalog::{CatalogCall, Visible};
use crate::core::error::{Error, Result};
use crate::core::op::Op;
use query::{
    integer, page_query, percent_decode, query_args, query_pairs, QuerySpec, EXPORT_QUERY, LIST_QUERY, NAMESPACES_QUERY, PROFILES_QUERY, SUMMARY_QUERY,
};
use serde_json::{json, Map, Value};

/// The largest body a request to `path` may carry: an import's limit on
/// a route that reads a file ([`Reads::File`]), [`MAX_BODY_BYTES`] on
/// every other. The Worker reads a body through a [`BodyReader`] held to
/// it.
pub fn body_limit(path: &str) -> usize {
    let file = profile_rest(path).is_some_and(|rest| PROFILE_ROUTES.iter().any(|r| matches!(r.reads, Reads::File) && r.matched(&rest).is_some()));
    if file {
        MAX_IMPORT_BYTES
    } else {
        MAX_BODY_BYTES
    }
}

impl BodyReader {
    /// The reader of a request to `path` ([`body_limit`]) with the
    /// `Content-Length` header `declared`, if any ([`BodyReader::limited`]).
    pub fn new(path: &str, declared: Option<&str>) -> Result<BodyReader> {
        BodyReader::limited(body_limit(path), declared)
    }
}

/// A path's segments, or `None` when one is empty (`//`, or a trailing
/// `/`). Paths are matched exactly: `…/profiles/p/` is not the profile.
/// (A URL parser rewrites `…/profiles/p/sessions/%2E%2E` and
/// `…/memories/%2e%2e` into `…/profiles/p/` before the Worker sees them;
/// read as the profile, they would delete it.)
fn segments(path: &str) -> Option<Vec<&str>> {
    let segments: Vec<&str> = path.strip_prefix('/')?.split('/').collect();
    (!segments.iter().any(|s| s.is_empty())).then_some(segments)
}

/// The dialect, the account and what follows `agent-memory/` of an API
/// path, under either prefix.
fn api_path<'s, 'p>(segments: &'s [&'p str]) -> Option<(Dialect, &'p str, &'s [&'p str])> {
    match segments {
        ["client", "v4", "accounts", account, "agent-memory", rest @ ..] => Some((Dialect::Published, *account, rest)),
        ["accounts", account, "agent-memory", rest @ ..] => Some((Dialect::Original, *account, rest)),
        _ => None,
    }
}

fn no_route(req: &Incoming<'_>) -> Error {
    Error::not_found(format!("no route for {} {}", api::quoted(req.method), api::quoted(req.path)))
}

/// The body of a namespace's creation.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateNamespace {
    name: String,
}

/// What a profile route reads of a request beside its path.
#[derive(Clone, Copy)]
enum Reads {
    /// Nothing more: a query string or a body is refused.
    Nothing,
    /// A JSON object body.
    Body,
    /// A JSON object body, or none (read as `{}`).
    OptionalBody,
    /// Its query string, as the spec reads it; a body is refused.
    Query(&'static QuerySpec),
    /// An import file (NDJSON) as the body, up to [`MAX_IMPORT_BYTES`].
    File,
}

/// A segment of a profile route's path.
#[derive(Clone, Copy)]
enum Segment {
    /// This word.
    Word(&'static str),
    /// Any segment, decoded into this field of the call's arguments.
    Text(&'static str),
    /// A positive integer (plain decimal digits) into this field; the
    /// second names what it is in the refusal of another.
    Number(&'static str, &'static str),
}

/// One route under a profile (`…/namespaces/{ns}/profiles/{name}` and
/// what follows): its method, the rest of its path, its operation, and
/// what it reads.
struct ProfileRoute {
    method: &'static str,
    path: &'static [Segment],
    op: Op,
    reads: Reads,
}

/// Every route under a profile: routing, the `Allow` header, the body
/// limit and the query and body checks all read this one table.
const PROFILE_ROUTES: &[ProfileRoute] = {
    use Segment::{Number, Text, Word};
    const fn r(method: &'static str, path: &'static [Segment], op: Op, reads: Reads) -> ProfileRoute {
        ProfileRoute { method, path, op, reads }
    }
    &[
        r("POST", &[Word("ingest")], Op::Ingest, Reads::Body),
        r("POST", &[Word("remember")], Op::Remember, Reads::Body),
        r("POST", &[Word("recall")], Op::Recall, Reads::Body),
        r("GET", &[Word("memories")], Op::List, Reads::Query(&LIST_QUERY)),
        r("GET", &[Word("memories"), Text("id")], Op::Get, Reads::Nothing),
        r("PATCH", &[Word("memories"), Text("id")], Op::Update, Reads::Body),
        r("DELETE", &[Word("memories"), Text("id")], Op::Delete, Reads::Nothing),
        r("POST", &[Word("memories"), Text("id"), Word("forget")], Op::Forget, Reads::Nothing),
        r("GET", &[Word("summary")], Op::GetSummary, Reads::Query(&SUMMARY_QUERY)),
        r("POST", &[Word("summary")], Op::GetSummary, Reads::OptionalBody),
        r("DELETE", &[Word("sessions"), Text("sessionId")], Op::DeleteSession, Reads::Nothing),
        r("GET", &[Word("export")], Op::Export, Reads::Query(&EXPORT_QUERY)),
        r("POST", &[Word("import")], Op::Import, Reads::File),
        r("GET", &[Word("stats")], Op::Stats, Reads::Nothing),
        r("DELETE", &[], Op::DeleteProfile, Reads::Nothing),
        r("POST", &[Word("restore")], Op::RestoreProfile, Reads::Nothing),
        r("POST", &[Word("consolidate")], Op::Consolidate, Reads::OptionalBody),
        r("POST", &[Word("consolidations"), Number("id", "a consolidation id"), Word("undo")], Op::UndoConsolidation, Reads::Nothing),
    ]
};

impl ProfileRoute {
    /// The segments of `rest` its parameters take, with their kinds, when
    /// `rest` is this route's path.
    fn matched<'p>(&self, rest: &[&'p str]) -> Option<Vec<(Segment, &'p str)>> {
        if rest.len() != self.path.len() {
            return None;
        }
        let mut params = Vec::new();
        for (segment, got) in self.path.iter().zip(rest) {
            match segment {
                Segment::Word(w) if w == got => {}
                Segment::Word(_) => return None,
                param => params.push((*param, *got)),
            }
        }
        Some(params)
    }

    /// The call's arguments: what it reads, with its path's parameters
    /// (a body may not give one of them too).
    fn args(&self, req: &Incoming<'_>, rest: &[&str], dialect: Dialect) -> Result<Value> {
        let mut args = match self.reads {
            Reads::Body => json_body(req)?,
            Reads::OptionalBody => optional_json_body(req)?,
            Reads::Query(spec) => query_args(req.query, spec, dialect)?,
            // Moved in: `json!` would serialize the file into a copy.
            Reads::File => Value::Object(Map::from_iter([("data".to_string(), Value::String(import_body(req)?))])),
            Reads::Nothing => Value::Object(Map::new()),
        };
        for (segment, got) in self.matched(rest).unwrap_or_default() {
            let (field, value) = match segment {
                Segment::Text(field) => (field, json!(decode(got)?)),
                Segment::Number(field, what) => {
                    let n = integer(&decode(got)?).and_then(|n| i64::try_from(n).ok());
                    (field, json!(n.ok_or_else(|| Error::invalid(format!("{what} is a positive integer")))?))
                }
                Segment::Word(_) => continue,
            };
            args = with_field(args, field, value)?;
        }
        Ok(args)
    }
}

/// What follows `…/profiles/{name}` in an API path (`None` for another
/// path).
fn profile_rest(path: &str) -> Option<Vec<&str>> {
    let segments = segments(path)?;
    match api_path(&segments)?.2 {
        ["namespaces", _, "profiles", _, rest @ ..] => Some(rest.to_vec()),
        _ => None,
    }
}

/// Routes a request. Errors are 4xx: unknown path (404, also for a path
/// that no method answers), wrong method (405 as invalid), bad body.
pub fn route(req: &Incoming<'_>) -> Result<Route> {
    let segments = segments(req.path).ok_or_else(|| no_route(req))?;
    match (req.method, segments.as_slice()) {
        ("GET", ["health"]) => return Ok(Route::Health),
        ("GET", ["openapi.json"]) => return Ok(Route::OpenApi),
        // Whatever the method: the endpoint answers it.
        (_, ["mcp", "namespaces", namespace, "profiles", profile]) => return mcp_route(req, namespace, profile),
        _ => {}
    }
    // A GET or DELETE reads no body: one sent is refused, never dropped
    // (`{"dryRun": true}` on a DELETE would otherwise be dropped, and the
    // deletion run for real).
    if matches!(req.method, "GET" | "DELETE") {
        no_body(req)?;
    }
    let (dialect, account, rest) = api_path(&segments).ok_or_else(|| no_route(req))?;
    if let Some(call) = catalog_route(req, dialect, decode(account)?, rest)? {
        return Ok(Route::Catalog(call));
    }
    profile_route(req, dialect, rest)
}

/// The MCP endpoint of a profile.
fn mcp_route(req: &Incoming<'_>, namespace: &str, profile: &str) -> Result<Route> {
    let (namespace, profile) = (decode(namespace)?, decode(profile)?);
    api::validate_namespace(&namespace)?;
    api::validate_profile(&profile)?;
    // The endpoint reads no query: `…?dryRun=1` is refused, as on every
    // REST route that reads none, never ignored.
    no_query(req)?;
    Ok(Route::Mcp { namespace, profile })
}

/// A namespace route (the catalog's), if `rest` is one.
fn catalog_route(req: &Incoming<'_>, dialect: Dialect, account: String, rest: &[&str]) -> Result<Option<CatalogCall>> {
    let call = match (req.method, rest) {
        ("POST", ["namespaces"]) => {
            let body: CreateNamespace = api::parse(json_body(req)?)?;
            CatalogCall::Create { account, name: body.name }
        }
        ("GET", ["namespaces"]) => {
            let (per_page, cursor, args) = page_query(req.query, &NAMESPACES_QUERY, dialect)?;
            let order = crate::core::catalog::NamespaceOrder::parse(args.get("order").and_then(Value::as_str), args.get("direction").and_then(Value::as_str))?;
            // The router knows no token: the list shows nothing until
            // [`scope_catalog`] gives it what the caller's grant may see.
            return Ok(Some(CatalogCall::List { account, per_page, cursor, visible: Visible::Only(Vec::new()), order }));
        }
        ("GET", ["namespaces", ns, "profiles"]) => {
            let (per_page, cursor, _) = page_query(req.query, &PROFILES_QUERY, dialect)?;
            return Ok(Some(CatalogCall::ListProfiles { namespace: decode(ns)?, per_page, cursor }));
        }
        ("GET", ["namespaces", ns]) => CatalogCall::Get { account, name: decode(ns)? },
        ("DELETE", ["namespaces", ns]) => CatalogCall::Delete { name: decode(ns)? },
        _ => return Ok(None),
    };
    // Only the lists read a query.
    no_query(req)?;
    Ok(Some(call))
}

/// A route under a profile ([`PROFILE_ROUTES`]).
fn profile_route(req: &Incoming<'_>, dialect: Dialect, rest: &[&str]) -> Result<Route> {
    let ["namespaces", namespace, "profiles", profile, rest @ ..] = rest else {
        return Err(unrouted(req));
    };
    let namespace = decode(namespace)?;
    let profile = decode(profile)?;
    api::validate_namespace(&namespace)?;
    api::validate_profile(&profile)?;
    let route = PROFILE_ROUTES.iter().find(|r| r.method == req.method && r.matched(rest).is_some()).ok_or_else(|| unrouted(req))?;
    let (op, args) = (route.op, route.args(req, rest, dialect)?);
    // A route reads a query only if it says so; any other refuses one
    // rather than ignore it (`POST …/consolidate?dryRun=true` would
    // otherwise consolidate for real).
    if !matches!(route.reads, Reads::Query(_)) {
        no_query(req)?;
    }
    // Nor does a POST that reads no body take one (`{"dryRun": true}` on
    // an undo would otherwise be dropped, and the undo run for real).
    if matches!(route.reads, Reads::Nothing) {
        no_body(req)?;
    }
    Ok(Route::Profile(ProfileCall { namespace, profile, op, args, dialect }))
}

/// Refuses a body on a route that reads none. An empty or blank body is
/// none, and so is `{}` (what a client posting JSON sends for "nothing"),
/// told apart without parsing: a body of megabytes is never read into a
/// tree only to be refused.
fn no_body(req: &Incoming<'_>) -> Result<()> {
    let mut shown = req.body.iter().filter(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    let nothing = matches!((shown.next(), shown.next(), shown.next()), (None, _, _) | (Some(b'{'), Some(b'}'), None));
    if nothing {
        Ok(())
    } else {
        Err(Error::invalid(format!("{} {} takes no body", req.method, req.path)))
    }
}

/// Refuses a query string on a route that reads none.
fn no_query(req: &Incoming<'_>) -> Result<()> {
    match query_pairs(req.query)?.first() {
        None => Ok(()),
        Some((k, _)) => Err(Error::invalid(format!("{} {} takes no query parameters; got {}", req.method, req.path, api::quoted(k)))),
    }
}

/// A 405 for a known path asked with a method it does not take, else a 404.
fn unrouted(req: &Incoming<'_>) -> Error {
    if allowed_methods(req.path).is_some() {
        return Error::method_not_allowed(format!("method {} is not allowed on {}", api::quoted(req.method), api::quoted(req.path)));
    }
    no_route(req)
}

/// What a request's credentials are checked against, read from the path
/// alone, before anything the caller sent is parsed.
#[derive(Clone, Debug, PartialEq)]
pub enum Target {
    /// A namespace named in the path (its profiles, itself, its MCP
    /// endpoint).
    Namespace(String),
    /// The namespaces of the account (create, list): any known token, each
    /// then limited to the namespaces it may touch.
    Account,
}

/// The target of an API or MCP path (`None` for other paths, or a segment
/// that does not decode; routing then refuses it).
pub fn target(path: &str) -> Option<Target> {
    let segments = segments(path)?;
    if let ["mcp", "namespaces", ns, "profiles", _] = segments.as_slice() {
        return decode(ns).ok().map(Target::Namespace);
    }
    match api_path(&segments)?.2 {
        ["namespaces"] => Some(Target::Account),
        ["namespaces", ns, ..] => decode(ns).ok().map(Target::Namespace),
        _ => None,
    }
}

/// The methods a known path answers (the value of an `Allow` header), or
/// `None` for a path no route knows. A request whose method is not listed
/// gets 405 Method Not Allowed. Every path that answers GET answers HEAD
/// (the GET's status and headers, with no body). The MCP endpoint answers
/// methods itself.
pub fn allowed_methods(path: &str) -> Option<String> {
    let segments = segments(path)?;
    let methods: Vec<&str> = match segments.as_slice() {
        ["health"] | ["openapi.json"] => vec!["GET"],
        _ => match api_path(&segments)?.2 {
            ["namespaces"] => vec!["GET", "POST"],
            ["namespaces", _] => vec!["GET", "DELETE"],
            ["namespaces", _, "profiles"] => vec!["GET"],
            ["namespaces", _, "profiles", _, rest @ ..] => PROFILE_ROUTES.iter().filter(|r| r.matched(rest).is_some()).map(|r| r.method).collect(),
            _ => return None,
        },
    };
    let with_head = methods.into_iter().flat_map(|m| if m == "GET" { vec!["GET", "HEAD"] } else { vec![m] }).collect::<Vec<_>>();
    (!with_head.is_empty()).then(|| with_head.join(", "))
}

/// The method a request is routed by: a HEAD as the GET it mirrors.
pub fn routed_method(method: &str) -> &str {
    if method == "HEAD" {
        "GET"
    } else {
        method
    }
}

/// `Some(allow)` when `method` is not one `path` answers (a 405).
pub fn method_not_allowed(method: &str, path: &str) -> Option<String> {
    allowed_methods(path).filter(|allow| !allow.split(", ").any(|m| m == method))
}

fn decode(segment: &str) -> Result<String> {
    percent_decode(segment, "path")
}

/// `body` (a JSON object) with `field` set from the path; a body that
/// names it too is refused.
fn with_field(mut body: Value, field: &str, value: Value) -> Result<Value> {
    let map = body.as_object_mut().ok_or_else(|| Error::invalid("the body must be a JSON object"))?;
    if map.insert(field.to_string(), value).is_some() {
        return Err(Error::invalid(format!("{field} is given by the path, not the body")));
    }
    Ok(body)
}

fn json_body(req: &Incoming<'_>) -> Result<Value> {
    if let Some(ct) = req.content_type {
        let (media, json) = api::json_media(ct);
        if !json {
            return Err(Error::invalid(format!("content-type must be application/json, not {}", api::quoted(&media))));
        }
        if let Some(charset) = api::foreign_charset(ct) {
            return Err(Error::invalid(format!("a JSON body is read as UTF-8, not {}", api::quoted(&charset))));
        }
    }
    if req.body.len() > MAX_BODY_BYTES {
        return Err(Error::too_large(format!("request body is over {MAX_BODY_BYTES} bytes")));
    }
    let text = std::str::from_utf8(req.body).map_err(|_| Error::invalid("request body is not valid UTF-8"))?;
    if text.trim().is_empty() {
        return Err(Error::invalid("request body must be a JSON object"));
    }
    let v = parse_strict(text)?;
    if !v.is_object() {
        return Err(Error::invalid("request body must be a JSON object"));
    }
    Ok(v)
}

/// A request body's JSON ([`crate::core::json::parse_strict`]): a key
/// named twice is refused, not won by its last value.
pub fn parse_strict(text: &str) -> Result<Value> {
    crate::core::json::parse_strict(text).map_err(|e| Error::invalid(format!("invalid JSON body: {e}")))
}

fn import_body(req: &Incoming<'_>) -> Result<String> {
    if req.body.len() > MAX_IMPORT_BYTES {
        return Err(Error::too_large(format!("import is over {MAX_IMPORT_BYTES} bytes")));
    }
    if let Some(charset) = req.content_type.and_then(api::foreign_charset) {
        return Err(Error::invalid(format!("an import is read as UTF-8, not {}", api::quoted(&charset))));
    }
    let text = std::str::from_utf8(req.body).map_err(|_| Error::invalid("import body is not valid UTF-8"))?;
    let json_ct = req.content_type.is_some_and(|c| api::json_media(c).1);
    if json_ct {
        // `{"data": "<ndjson>"}`
        // Nothing else beside `data`: another field would be ignored.
        let shape = || Error::invalid("a JSON import body must be {\"data\": \"<ndjson>\"} and nothing else");
        return match parse_strict(text)? {
            Value::Object(mut o) if o.len() == 1 => match o.remove("data") {
                Some(Value::String(data)) => Ok(data),
                _ => Err(shape()),
            },
            _ => Err(shape()),
        };
    }
    Ok(text.to_string())
}

/// A JSON object body that may be left out (`POST …/summary` with no body
/// is `{}`).
fn optional_json_body(req: &Incoming<'_>) -> Result<Value> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    json_body(req)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The envelope as first written, over a JSON tree: the reference
    /// [`envelope_ok_text`] is held to.
    fn envelope_ok(op: &str, mut result: Value) -> Value {
        // Recall notes travel as envelope messages.
        let mut messages = Vec::new();
        if op == "recall" {
            if let Some(Value::Array(a)) = result.as_object_mut().and_then(|m| m.remove("messages")) {
                messages = a
                    .into_iter()
                    .map(|n| match n {
                        Value::String(message) => json!({ "code": NOTE_CODE, "message": message }),
                        other => other,
                    })
                    .collect();
            }
        }
        let mut env = json!({ "success": true, "errors": [], "messages": messages, "result": result });
        // Paging info belongs to a page of memories (a list) only, not to any
        // result that happens to have a `memories` field (an ingest report,
        // stats, a profile deletion).
        if op == "list" {
            let count = env["result"].get("memories").and_then(Value::as_array).map_or(0, Vec::len);
            let cursor = env["result"].get("cursor").cloned().unwrap_or(Value::Null);
            env["result_info"] = json!({ "cursor": cursor, "count": count });
        }
        env
    }

    /// [`envelope_ok_text`] of a result given as a tree, read back.
    fn envelope(op: &str, result: Value) -> Value {
        serde_json::from_str(&envelope_ok_text(op, &result.to_string())).unwrap()
    }

    #[test]
    fn test_rpc_profile_names_default_their_namespace_and_follow_the_name_rules() {
        assert_eq!(rpc_profile_name("alice", None).unwrap(), ("default".to_string(), "alice".to_string()));
        assert_eq!(rpc_profile_name("team/alice", None).unwrap(), ("team".to_string(), "alice".to_string()));
        assert!(rpc_profile_name("team/alice/x", None).unwrap_err().is_invalid());
        assert!(rpc_profile_name("", None).unwrap_err().is_invalid());
        assert!(rpc_profile_name("/alice", None).unwrap_err().is_invalid());
    }

    #[test]
    fn test_a_binding_scoped_to_a_namespace_addresses_its_profiles_there() {
        assert_eq!(rpc_profile_name("alice", Some("my-agent")).unwrap(), ("my-agent".to_string(), "alice".to_string()));
        assert!(rpc_profile_name("other/alice", Some("my-agent")).unwrap_err().is_invalid());
        assert!(rpc_profile_name("alice", Some("bad name")).unwrap_err().is_invalid());
        let long = "p".repeat(100);
        assert_eq!(rpc_profile_name(&long, Some("ns")).unwrap().1, long);
    }

    #[test]
    fn test_envelope_around_result_text_is_the_envelope_of_the_parsed_result() {
        let results = [
            r#"{"sessionId":"s","messageIds":["a"],"memories":[{"id":"m","messages":[1]}],"dropped":[]}"#,
            r#"{"memories":[{"id":"m"},{"id":"n","score":0.10476190476190475}],"cursor":"c"}"#,
            r#"{"memories":[],"cursor":null}"#,
            r#"{"memories":[{"id":"m"}]}"#,
            r#"{ "answer" : "x", "messages" : [ "a note", {"k": 1} ], "memories": [] }"#,
            r#"{"answer":"x","messages":null}"#,
            r#"{"answer":"x","messages":"not a list"}"#,
            r#"{"quoted \"key\"":1,"ünï":2}"#,
            r#""text with \"quotes\"""#,
            "null",
            "[]",
            "[1, 2]",
        ];
        for op in ["ingest", "stats", "get", "export", "recall", "list"] {
            for r in results {
                let text: Value = serde_json::from_str(&envelope_ok_text(op, r)).unwrap();
                assert_eq!(text, envelope_ok(op, serde_json::from_str(r).unwrap()), "{op} {r}");
                let owned = envelope_ok_owned(op, r.to_string());
                let (len, parts) = (owned.len(), owned.into_parts().concat());
                assert_eq!((len, serde_json::from_str::<Value>(&parts).unwrap()), (parts.len(), text.clone()), "{op} {r} in parts");
                assert_eq!(serde_json::from_str::<Value>(&envelope_ok_owned(op, r.to_string()).joined()).unwrap(), text, "{op} {r} joined");
            }
        }
    }

    fn get(path: &str) -> Result<Route> {
        route(&Incoming { method: "GET", path, query: "", content_type: None, body: b"" })
    }

    const BASE: &str = "/accounts/a/agent-memory/namespaces/ns/profiles/p1";

    #[test]
    fn test_routes_map_to_operations() {
        let Route::Profile(c) = get(&format!("{BASE}/memories")).unwrap() else { panic!() };
        assert_eq!((c.namespace.as_str(), c.profile.as_str(), c.op), ("ns", "p1", Op::List));
        assert_eq!(c.object_name(), "ns/p1");
    }

    #[test]
    fn test_an_imports_file_travels_beside_its_call_unescaped_and_returns_to_its_arguments() {
        let file = "{\"kind\":\"header\"}\n".to_string();
        let posted = ObjectCall::post("ns/p", "import", json!({ "data": file.clone() }), Asks::default()).unwrap();
        assert_eq!(posted.raw.as_deref(), Some(file.as_str()), "the file as it is");
        assert!(!posted.call.contains("header"), "the call does not carry it: {}", posted.call);
        let read = ObjectCall::read_posted(&posted.call, posted.raw.unwrap()).unwrap();
        assert_eq!((read.name.as_str(), read.op.as_str(), read.args), ("ns/p", "import", json!({ "data": file })));
        // Any other call, or an import whose data is not a text, travels whole.
        for (op, args) in [("ingest", json!({ "messages": [] })), ("import", json!({ "data": 1 })), ("recall", json!({ "query": "x" }))] {
            let posted = ObjectCall::post("ns/p", op, args.clone(), Asks::unread(true)).unwrap();
            assert!(posted.raw.is_none(), "{op}");
            assert_eq!(ObjectCall::read(&posted.call).unwrap().args, args);
        }
        // A text beside arguments that already hold data is refused.
        let call = ObjectCall::write("ns/p", "import", json!({ "data": "x" }), Asks::default()).unwrap();
        assert!(ObjectCall::read_posted(&call, "y".into()).unwrap_err().is_invalid());
    }

    #[test]
    fn test_taking_a_calls_arguments_keeps_what_its_envelope_reads() {
        let path = format!("/client/v4{BASE}/memories");
        let Route::Profile(mut c) = route(&Incoming { method: "GET", path: &path, query: "per_page=50&session_id=s1", content_type: None, body: b"" }).unwrap()
        else {
            panic!()
        };
        let args = c.take_args();
        assert_eq!((args["limit"].as_u64(), args["sessionId"].as_str()), (Some(50), Some("s1")));
        assert_eq!(c.per_page(), 50);
        assert_eq!(c.args, json!({ "limit": 50 }), "only what the envelope reads stays");
        let with = envelope_for(&c, r#"{"memories":[],"cursor":null}"#.to_string()).joined();
        assert!(with.contains("\"per_page\":50"), "{with}");
    }

    fn list_with(query: &str) -> Result<Value> {
        let path = format!("{BASE}/memories");
        match route(&Incoming { method: "GET", path: &path, query, content_type: None, body: b"" })? {
            Route::Profile(c) => Ok(c.args),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn test_query_values_decode_plus_and_escapes_exactly() {
        assert_eq!(list_with("key=a+b%2Bc&&limit=5&").unwrap(), json!({ "key": "a b+c", "limit": 5 }));
        assert_eq!(list_with("key=caf%C3%A9").unwrap(), json!({ "key": "café" }));
        assert_eq!(list_with("").unwrap(), json!({}));
    }

    #[test]
    fn test_query_bytes_that_are_not_utf8_or_bad_escapes_are_refused_not_replaced() {
        for q in ["key=%FF", "key=%C3", "key=%G1", "key=%4", "k%FF=x"] {
            let e = list_with(q).unwrap_err();
            assert!(e.is_invalid() && e.message().contains("query"), "{q}: {e}");
        }
    }

    #[test]
    fn test_a_bad_session_id_or_date_in_the_query_is_refused_under_the_name_it_was_sent_as() {
        let long = "a".repeat(65);
        for (q, message) in [
            ("session_id=".to_string(), "session_id must not be empty"),
            ("sessionId=".to_string(), "sessionId must not be empty"),
            (format!("session_id={long}"), "session_id must be at most 64 characters"),
            ("session_id=..".to_string(), "session_id must not be . or .. (a URL path would read it as a directory step)"),
            ("as_of=bogus".to_string(), "as_of must be an ISO-8601 date or date-time in the years 0000-9999"),
            ("asOf=bogus".to_string(), "asOf must be an ISO-8601 date or date-time in the years 0000-9999"),
        ] {
            assert_eq!(list_with(&q).unwrap_err().message(), message, "{q}");
        }
        let summary = format!("{BASE}/summary");
        let e = route(&Incoming { method: "GET", path: &summary, query: "session_id=", content_type: None, body: b"" }).unwrap_err();
        assert_eq!(e.message(), "session_id must not be empty");
        assert_eq!(list_with("session_id=s1&as_of=2026-04-01").unwrap(), json!({ "sessionId": "s1", "asOf": "2026-04-01" }));
    }

    #[test]
    fn test_integers_in_the_query_are_plain_digits() {
        for q in ["limit=+20", "limit=007", "limit=-1", "limit= 5", "limit=5.0", "limit=", "limit=1e2"] {
            assert!(list_with(q).unwrap_err().is_invalid(), "{q} accepted");
        }
        for (q, name) in [("limit=0", "limit"), ("per_page=0", "per_page"), ("per_page=1001", "per_page")] {
            let e = list_with(q).unwrap_err();
            assert_eq!(e.message(), format!("{name} must be 1-1000"), "{q}: refused under the name it was sent as");
        }
        assert_eq!(list_with("per_page=1000").unwrap(), json!({ "limit": 1000 }));
        // Named as this service's OpenAPI document names them on its own
        // paths, and as the published reference does on its.
        let unknown = list_with("page=2").unwrap_err();
        assert_eq!(unknown.message(), "unknown query parameter \"page\"; this route reads limit, cursor, sessionId, type, status, key, filter, asOf");
        let published = BASE.replacen("/accounts/", "/client/v4/accounts/", 1);
        let e = route(&Incoming { method: "GET", path: &format!("{published}/memories"), query: "page=2", content_type: None, body: b"" }).unwrap_err();
        assert_eq!(e.message(), "unknown query parameter \"page\"; this route reads per_page, cursor, session_id, type, status, key, filter, as_of");
        assert_eq!(list_with("per_page=20").unwrap(), json!({ "limit": 20 }));
        let undo = |id: &str| route(&Incoming { method: "POST", path: &format!("{BASE}/consolidations/{id}/undo"), query: "", content_type: None, body: b"" });
        for id in ["+5", "05", "-5", "99999999999999999999"] {
            assert!(undo(id).unwrap_err().is_invalid(), "{id} accepted");
        }
        assert!(undo("5").is_ok());
    }

    #[test]
    fn test_mcp_path_routes_to_a_profile() {
        assert_eq!(
            route(&Incoming { method: "POST", path: "/mcp/namespaces/team/profiles/p1", query: "", content_type: None, body: b"" }).unwrap(),
            Route::Mcp { namespace: "team".into(), profile: "p1".into() }
        );
    }

    #[test]
    fn test_encoded_slash_and_dot_dot_are_refused() {
        assert!(get("/accounts/a/agent-memory/namespaces/ns/profiles/a%2Fb/memories").unwrap_err().is_invalid());
        assert!(get("/accounts/a/agent-memory/namespaces/../profiles/p/memories").unwrap_err().is_invalid());
    }

    #[test]
    fn test_wrong_content_type_is_refused() {
        let r = route(&Incoming { method: "POST", path: &format!("{BASE}/remember"), query: "", content_type: Some("text/plain"), body: b"{}" });
        assert!(r.unwrap_err().is_invalid());
    }

    #[test]
    fn test_a_compressed_body_is_refused_as_unsupported() {
        for e in ["gzip", "br", " deflate ", "gzip, identity"] {
            let err = check_content_encoding(Some(e)).unwrap_err();
            assert_eq!((err.status(), err.code()), (415, 10009), "{e}");
        }
        for e in [None, Some(""), Some("identity"), Some("IDENTITY")] {
            assert!(check_content_encoding(e).is_ok(), "{e:?}");
        }
    }

    #[test]
    fn test_a_json_body_in_another_charset_is_refused_not_read_as_utf8() {
        let with = |ct: &'static str| {
            route(&Incoming { method: "POST", path: &format!("{BASE}/remember"), query: "", content_type: Some(ct), body: br#"{"content": "x"}"# })
        };
        for ct in ["application/json; charset=latin1", "application/json;charset=\"ISO-8859-1\"", "application/json; charset=utf-16"] {
            let e = with(ct).unwrap_err();
            assert!(e.is_invalid() && e.message().contains("read as UTF-8"), "{ct}: {e}");
        }
        for ct in [
            "application/json; charset=utf-8",
            "application/json; charset=UTF-8",
            "application/json;charset=\"utf8\"",
            "application/json; charset=us-ascii",
            "application/json",
        ] {
            assert!(with(ct).is_ok(), "{ct}");
        }
        // An import reads its body as text too, as JSON or NDJSON.
        for ct in ["application/json; charset=latin1", "application/x-ndjson; charset=latin1"] {
            let e = route(&Incoming { method: "POST", path: &format!("{BASE}/import"), query: "", content_type: Some(ct), body: b"{}" }).unwrap_err();
            assert!(e.is_invalid() && e.message().contains("read as UTF-8"), "{ct}: {e}");
        }
    }

    #[test]
    fn test_unlisted_methods_are_405_with_allow_and_head_answers_where_get_does() {
        assert_eq!(method_not_allowed("TRACE", "/health").as_deref(), Some("GET, HEAD"));
        assert_eq!(method_not_allowed("GET", "/health").as_deref(), None);
        assert_eq!(method_not_allowed("PUT", &format!("{BASE}/memories/abc")).as_deref(), Some("GET, HEAD, PATCH, DELETE"));
        assert_eq!(method_not_allowed("HEAD", &format!("{BASE}/memories/abc")).as_deref(), None);
        assert_eq!(method_not_allowed("HEAD", &format!("{BASE}/remember")).as_deref(), Some("POST"));
        assert_eq!(method_not_allowed("DELETE", &format!("{BASE}/memories/abc")).as_deref(), None);
        assert_eq!(method_not_allowed("GET", &format!("{BASE}/remember")).as_deref(), Some("POST"));
        assert_eq!(method_not_allowed("GET", BASE).as_deref(), Some("DELETE"));
        assert_eq!(routed_method("HEAD"), "GET");
        assert_eq!(routed_method("POST"), "POST");
        assert_eq!(method_not_allowed("GET", "/nowhere").as_deref(), None);
        assert_eq!(method_not_allowed("GET", "/mcp/namespaces/a/profiles/b").as_deref(), None);
    }

    #[test]
    fn test_strict_json_refuses_duplicate_keys_and_deep_nesting() {
        assert!(parse_strict(r#"{"query": "a", "query": "b"}"#).unwrap_err().is_invalid());
        assert!(parse_strict(r#"{"a": {"b": 1, "b": 2}}"#).is_err());
        assert!(parse_strict(&format!("{}{}", "[".repeat(5000), "]".repeat(5000))).is_err());
        assert!(parse_strict("{} trailing").is_err());
        assert_eq!(parse_strict(r#"{"a": [1, -2, 1.5, "x", null, true], "b": {}}"#).unwrap(), json!({"a": [1, -2, 1.5, "x", null, true], "b": {}}));
    }

    #[test]
    fn test_target_namespace_is_read_from_the_path_alone() {
        let ns = |n: &str| Some(Target::Namespace(n.to_string()));
        assert_eq!(target(&format!("{BASE}/remember")), ns("ns"));
        assert_eq!(target("/accounts/a/agent-memory/namespaces/a%2Eb/profiles/p"), ns("a.b"));
        assert_eq!(target("/mcp/namespaces/team/profiles/p1"), ns("team"));
        assert_eq!(target("/client/v4/accounts/1/agent-memory/namespaces/team/profiles/p1/recall"), ns("team"));
        assert_eq!(target("/client/v4/accounts/1/agent-memory/namespaces/team"), ns("team"));
        assert_eq!(target("/client/v4/accounts/1/agent-memory/namespaces"), Some(Target::Account));
        assert_eq!(target("/health"), None);
    }

    #[test]
    fn test_result_info_only_for_pages_of_memories() {
        assert!(envelope("stats", json!({ "memories": 3, "messages": 1 })).get("result_info").is_none());
        assert!(envelope("ingest", json!({ "memories": [] })).get("result_info").is_none());
        let recall = envelope("recall", json!({ "answer": "", "candidates": [], "messages": ["channel x failed"] }));
        assert_eq!(recall["messages"], json!([{ "code": NOTE_CODE, "message": "channel x failed" }]));
        assert!(recall["result"].get("messages").is_none());
        let page = envelope("list", json!({ "memories": [], "cursor": "abc" }));
        assert_eq!(page["result_info"], json!({ "cursor": "abc", "count": 0 }));
    }

    #[test]
    fn test_a_body_is_refused_as_soon_as_its_chunks_pass_the_routes_limit_declared_or_not() {
        let path = format!("{BASE}/ingest");
        let declared = BodyReader::new(&path, Some(&(MAX_BODY_BYTES + 1).to_string())).unwrap_err();
        assert_eq!((declared.status(), declared.code()), (413, 10006));
        let mut chunked = BodyReader::new(&path, None).unwrap();
        let chunk = vec![b' '; 1024 * 1024];
        for _ in 0..MAX_BODY_BYTES / chunk.len() {
            chunked.push(&chunk).unwrap();
        }
        chunked.push(&chunk[..MAX_BODY_BYTES % chunk.len()]).unwrap();
        let over = chunked.push(b"x").unwrap_err();
        assert_eq!((over.status(), over.code(), over.message()), (413, 10006, declared.message()), "the same refusal as a declared length");
        assert_eq!(chunked.held(), MAX_BODY_BYTES, "its room grew to the limit, not past it");
        assert_eq!(chunked.finish().len(), MAX_BODY_BYTES, "nothing past the limit is kept");
        // The import route's own limit.
        let mut import = BodyReader::new(&format!("{BASE}/import"), None).unwrap();
        import.push(&vec![b'x'; MAX_IMPORT_BYTES]).unwrap();
        assert_eq!(import.push(b"x").unwrap_err().status(), 413);
        assert_eq!(BodyReader::new(&format!("{BASE}/import"), Some(&(MAX_IMPORT_BYTES + 1).to_string())).unwrap_err().status(), 413);
        let mut small = BodyReader::new(&path, Some("5")).unwrap();
        small.push(b"{}").unwrap();
        small.push(b"   ").unwrap();
        assert_eq!(small.finish(), b"{}   ");
    }

    /// The Worker takes room for a declared length before it reads the
    /// body: the reader holds nothing until the first chunk comes.
    #[test]
    fn test_a_body_reader_holds_nothing_before_its_first_chunk_then_its_declared_length() {
        let path = format!("{BASE}/ingest");
        let mut reader = BodyReader::new(&path, Some("1000000")).unwrap();
        assert_eq!(reader.held(), 0);
        reader.push(b"{").unwrap();
        assert!(reader.held() >= 1_000_000, "the declared length at once: {}", reader.held());
    }

    #[test]
    fn test_only_a_busy_refusal_says_when_to_retry() {
        assert_eq!(retry_after_seconds(&Error::busy("m")), Some(BUSY_RETRY_AFTER_SECONDS));
        for e in [Error::config("m"), Error::storage("m"), Error::too_large("m"), Error::provider("m")] {
            assert_eq!(retry_after_seconds(&e), None, "{e:?}");
        }
    }

    #[test]
    fn test_a_namespace_list_shows_only_what_the_grant_may_see_and_a_page_beyond_it_is_refused_whole() {
        let Route::Catalog(call) = get("/accounts/a/agent-memory/namespaces").unwrap() else { panic!() };
        assert!(matches!(&call, CatalogCall::List { visible: Visible::Only(v), .. } if v.is_empty()), "routed, it shows nothing: {call:?}");
        let team = Tokens::parse(r#"{"team-token": ["team"], "dev-token": ["*"]}"#).unwrap();
        let (team, all) = (team.grant(Some("Bearer team-token")).unwrap(), team.grant(Some("Bearer dev-token")).unwrap());
        assert!(matches!(scope_catalog(call.clone(), &team).unwrap(), CatalogCall::List { visible: Visible::Only(v), .. } if v == ["team"]));
        assert!(matches!(scope_catalog(call.clone(), &all).unwrap(), CatalogCall::List { visible: Visible::All, .. }));
        let ns = |name: &str| json!({ "id": "i", "name": name, "account_id": "a", "created_at": "t", "updated_at": "t" });
        let leaky = json!({ "namespaces": [ns("team"), ns("zulu")], "cursor": "zulu", "per_page": 2 }).to_string();
        assert!(envelope_catalog(&call, &leaky, &team).unwrap_err().is_storage());
        let text = envelope_catalog(&call, &leaky, &all).unwrap();
        assert!(text.contains("\"cursor\":\"zulu\""), "{text}");
    }

    #[test]
    fn test_tokens_grant_namespaces() {
        let t = Tokens::parse(r#"{"token-for-a": ["a"], "dev-token": ["*"]}"#).unwrap();
        assert!(t.authorize(Some("Bearer token-for-a"), "a").is_ok());
        assert!(t.authorize(Some("Bearer token-for-a"), "b").unwrap_err().is_forbidden());
        assert!(t.authorize(None, "a").unwrap_err().is_unauthenticated());
        assert!(t.authorize(Some("Bearer nope-nope"), "a").unwrap_err().is_unauthenticated());
        assert_eq!(Tokens::default().authorize(Some("Bearer dev-token"), "a").unwrap_err().status(), 503);
    }
}

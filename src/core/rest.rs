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

use crate::core::api::{self, MAX_IMPORT_BYTES};
use crate::core::catalog::{CatalogCall, Visible};
use crate::core::error::{Error, Result};
use crate::core::op::Op;
use serde_json::{json, Map, Value};

/// Largest JSON body accepted, in bytes (500 messages of 32 KB, plus room).
pub const MAX_BODY_BYTES: usize = 17 * 1024 * 1024;

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

/// A request body read a chunk at a time, held to its route's
/// [`body_limit`]. A body is refused (413) as soon as it passes the limit,
/// whether its `Content-Length` declared it or it came without one
/// (chunked): a body is never held whole before its size is checked, and an
/// isolate's memory, which never shrinks, never takes more than the limit.
#[derive(Debug)]
pub struct BodyReader {
    bytes: Vec<u8>,
    limit: usize,
    /// The declared length, reserved at the first chunk (not before: the
    /// Worker takes room for it first).
    declared: Option<usize>,
}

impl BodyReader {
    /// The reader of a request to `path` with the `Content-Length` header
    /// `declared` (if any): a declared length over the limit is refused
    /// before anything is read. One that does not read as a number is left
    /// to the platform, which delivers no more than it declares.
    pub fn new(path: &str, declared: Option<&str>) -> Result<BodyReader> {
        let limit = body_limit(path);
        let declared = declared.and_then(|n| n.trim().parse::<u64>().ok());
        match declared {
            Some(n) if n > limit as u64 => Err(body_too_large(limit)),
            Some(n) => Ok(BodyReader { bytes: Vec::new(), limit, declared: Some(usize::try_from(n).unwrap_or(limit)) }),
            None => Ok(BodyReader { bytes: Vec::new(), limit, declared: None }),
        }
    }

    /// Takes the next chunk of the body; 413 once the body read so far is
    /// over the limit (the caller stops reading).
    pub fn push(&mut self, chunk: &[u8]) -> Result<()> {
        if self.bytes.len().saturating_add(chunk.len()) > self.limit {
            return Err(body_too_large(self.limit));
        }
        if let Some(n) = self.declared.take() {
            self.bytes.reserve_exact(n);
        }
        // Without a declared length, the room doubles as a Vec's does, but
        // never past the limit (a 17 MiB body holds 17 MiB, not 32).
        let needed = self.bytes.len().saturating_add(chunk.len());
        if needed > self.bytes.capacity() {
            let room = self.bytes.capacity().saturating_mul(2).clamp(needed, self.limit.max(needed));
            self.bytes.reserve_exact(room.saturating_sub(self.bytes.len()));
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// The bytes the body holds so far, with the room it grew into.
    pub fn held(&self) -> usize {
        self.bytes.capacity()
    }

    /// The bytes of the body that arrived so far.
    pub fn received(&self) -> usize {
        self.bytes.len()
    }

    /// The whole body.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Refuses (415) a body sent compressed: a body is read as the bytes of
/// its JSON or NDJSON text, so one with a `Content-Encoding` other than
/// `identity` would be refused as text that is not UTF-8 (gzip) or, worse,
/// read as sent while the header says otherwise.
pub fn check_content_encoding(encoding: Option<&str>) -> Result<()> {
    match encoding.map(str::trim).filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity")) {
        Some(e) => Err(Error::unsupported_media_type(format!("a request body is read uncompressed: Content-Encoding {} is not taken", api::quoted(e)))),
        None => Ok(()),
    }
}

/// How long a caller refused as busy should wait before it retries: about
/// one large ingest's run.
pub const BUSY_RETRY_AFTER_SECONDS: u32 = 5;

/// The `Retry-After` of an error's response, if it has one (a busy
/// refusal).
pub fn retry_after_seconds(e: &Error) -> Option<u32> {
    e.is_busy().then_some(BUSY_RETRY_AFTER_SECONDS)
}

fn body_too_large(limit: usize) -> Error {
    Error::too_large(format!("request body is over {limit} bytes"))
}

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
    /// dialect whose envelope carries `result: null` ([`envelope_for`]).
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

/// Whether an RPC caller reads no result of operation `op`: the shim's
/// methods give none where the published interface's are void
/// ([`Op::publishes_no_result`]).
pub fn rpc_reads_no_result(op: &str) -> bool {
    Op::parse(op).is_some_and(Op::publishes_no_result)
}

/// The internal call a Worker posts to a profile's Durable Object: the
/// object's name, the operation, and its arguments as JSON.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct ObjectCall {
    pub name: String,
    pub op: String,
    #[serde(default)]
    pub args: Value,
    /// The caller reads no result (see [`Op::publishes_no_result`]): the
    /// object answers `null` and never writes one.
    #[serde(default)]
    pub unread: bool,
    /// The caller streams a large result on into its envelope unread: the
    /// object may answer it in pieces ([`PIECES_HEADER`]). Asked, never
    /// assumed: a Worker of an earlier version reads every reply whole.
    #[serde(default)]
    pub pieces: bool,
}

impl ObjectCall {
    /// The call's JSON text, its arguments consumed: the Worker hands the
    /// text to the platform and keeps no copy while the object runs (the
    /// two may share one Wasm memory, and a call may carry 16 MB).
    pub fn write(name: &str, op: &str, args: Value, asks: Asks) -> Result<String> {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            name: &'a str,
            op: &'a str,
            args: &'a Value,
            unread: bool,
            pieces: bool,
        }
        let out = Out { name, op, args: &args, unread: asks.unread, pieces: asks.pieces };
        // A call of 16 MB written into a buffer grown by doubling left the
        // Wasm memory 20 MiB higher after a few such calls (`make
        // bench-sequential`).
        crate::core::json::to_string_exact(&out).map_err(|e| Error::storage(format!("failed to write an internal call: {e}")))
    }

    /// A call as [`ObjectCall::write`] wrote it; its text is not kept.
    pub fn read(text: &str) -> Result<ObjectCall> {
        serde_json::from_str(text).map_err(|e| Error::invalid(format!("bad internal call: {e}")))
    }

    /// [`ObjectCall::write`], an import's file taken out of its arguments
    /// to travel beside the call as it is: written into the call as a JSON
    /// string it would be escaped into a second, larger copy, and read
    /// back through a third.
    pub fn post(name: &str, op: &str, mut args: Value, asks: Asks) -> Result<Posted> {
        let raw = match (Op::parse(op), &mut args) {
            (Some(Op::Import), Value::Object(o)) if matches!(o.get("data"), Some(Value::String(_))) => match o.remove("data") {
                Some(Value::String(data)) => Some(data),
                _ => None,
            },
            _ => None,
        };
        Ok(Posted { call: ObjectCall::write(name, op, args, asks)?, raw })
    }

    /// A call as [`ObjectCall::post`] sent it: the text that travelled
    /// beside it goes back into its arguments as `data`, moved.
    pub fn read_posted(call: &str, raw: String) -> Result<ObjectCall> {
        let mut out = ObjectCall::read(call)?;
        match &mut out.args {
            Value::Object(o) if !o.contains_key("data") => {
                o.insert("data".to_string(), Value::String(raw));
                Ok(out)
            }
            _ => Err(Error::invalid("bad internal call: a text beside arguments that are not an object without data")),
        }
    }
}

/// How a caller takes an internal call's result ([`ObjectCall::unread`],
/// [`ObjectCall::pieces`]); the default reads it whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Asks {
    pub unread: bool,
    pub pieces: bool,
}

impl Asks {
    /// A caller that reads no result, or reads it whole.
    pub fn unread(unread: bool) -> Asks {
        Asks { unread, pieces: false }
    }
}

/// An internal call as it is sent ([`ObjectCall::post`]): the call's JSON
/// text and, for an import, its file, to be sent as the request's body
/// with the call in the [`CALL_HEADER`] header.
#[derive(Debug)]
pub struct Posted {
    pub call: String,
    pub raw: Option<String>,
}

/// The header an internal call travels in when its body is an import's
/// file ([`Posted`]).
pub const CALL_HEADER: &str = "x-agent-memory-call";

/// The header that says how many bytes an internal call's body holds, so
/// the object takes room for its working memory before it reads it.
pub const CALL_BYTES_HEADER: &str = "x-agent-memory-call-bytes";

/// On an object's successful reply whose body is the result's JSON text
/// itself, sent in pieces ([`crate::core::json::JsonPieces`]) rather than
/// inside `{"ok": …}`: the Worker streams it into its envelope unread
/// ([`envelope_ends`]).
pub const PIECES_HEADER: &str = "x-agent-memory-pieces";

/// The operation an RPC caller names, if callers may call it (404
/// otherwise): the drain is the alarm's and the purge the catalog's,
/// whatever name the JS shim forwards.
pub fn rpc_op(name: &str) -> Result<Op> {
    Op::parse(name).filter(|op| op.is_public()).ok_or_else(|| Error::not_found(format!("no profile method {}", api::quoted(name))))
}

/// Refuses (413) a call's arguments whose JSON, as the RPC entry measured
/// it, is over a REST body's limit ([`MAX_BODY_BYTES`]).
pub fn rpc_size_fits(size: usize) -> Result<()> {
    if size > MAX_BODY_BYTES {
        return Err(Error::too_large(format!("the arguments are over {MAX_BODY_BYTES} bytes as JSON")));
    }
    Ok(())
}

/// Refuses (413) an `import` whose file is over [`MAX_IMPORT_BYTES`], as
/// the REST route refuses its body.
pub fn rpc_import_fits(op: &str, args: &Value) -> Result<()> {
    let file = args.get("data").and_then(Value::as_str).map_or(0, str::len);
    if Op::parse(op) == Some(Op::Import) && file > MAX_IMPORT_BYTES {
        return Err(Error::too_large(format!("the import's file is over {MAX_IMPORT_BYTES} bytes")));
    }
    Ok(())
}

/// Splits a profile name as RPC callers give it: `"ns/profile"`, or
/// `"profile"` in `namespace` (the binding's `props.namespace`, else
/// `default`). Both parts follow the REST name rules; a binding scoped to
/// a namespace takes plain profile names only.
pub fn rpc_profile_name(name: &str, namespace: Option<&str>) -> Result<(String, String)> {
    let (ns, profile) = match (namespace, name.split_once('/')) {
        (Some(ns), None) => (ns, name),
        (Some(_), Some(_)) => return Err(Error::invalid("profile name must not contain '/': this binding is scoped to one namespace")),
        (None, Some((ns, profile))) => (ns, profile),
        (None, None) => ("default", name),
    };
    api::validate_namespace(ns)?;
    api::validate_profile(profile)?;
    Ok((ns.to_string(), profile.to_string()))
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

/// The query string's name-value pairs, in order: `&`-separated (empty
/// pieces skipped), `+` a space, percent-escapes decoded. An escape that
/// is not two hex digits, or bytes that are not UTF-8, are refused rather
/// than replaced.
fn query_pairs(raw: &str) -> Result<Vec<(String, String)>> {
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
fn integer(s: &str) -> Option<u64> {
    let canonical = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'));
    canonical.then(|| s.parse().ok()).flatten()
}

/// The query parameters a GET route reads: each name, as the published
/// reference spells it, with the request field it fills (the field's own
/// name is taken too) and what its value must be. Any other parameter is
/// refused (400), naming the ones the route reads, so a misspelt one is
/// caught rather than ignored; a bad value is refused under the name it
/// was sent as.
struct QuerySpec {
    params: &'static [Param],
}

/// One query parameter a route reads: its published name, the field it
/// fills, and what its value must be.
struct Param(&'static str, &'static str, ParamValue);

/// What a query parameter's value must be, checked under the name it was
/// sent as (the operation checks the field again under its own name).
#[derive(Clone, Copy)]
enum ParamValue {
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
const LIST_QUERY: QuerySpec = QuerySpec {
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
const SUMMARY_QUERY: QuerySpec = QuerySpec { params: &[Param("session_id", "sessionId", ParamValue::Session)] };
/// `GET …/export`'s query.
const EXPORT_QUERY: QuerySpec = QuerySpec { params: &[Param("filter", "filter", ParamValue::Text)] };
/// A catalog list's query (namespaces, a namespace's profiles): a page
/// size under either name and a cursor; the namespace list also an order.
const PROFILES_QUERY: QuerySpec = QuerySpec {
    params: &[
        Param("per_page", "perPage", ParamValue::Count(crate::core::catalog::MAX_PAGE)),
        Param("limit", "perPage", ParamValue::Count(crate::core::catalog::MAX_PAGE)),
        Param("cursor", "cursor", ParamValue::Text),
    ],
};
const NAMESPACES_QUERY: QuerySpec = QuerySpec {
    params: &[
        Param("per_page", "perPage", ParamValue::Count(crate::core::catalog::MAX_PAGE)),
        Param("limit", "perPage", ParamValue::Count(crate::core::catalog::MAX_PAGE)),
        Param("cursor", "cursor", ParamValue::Text),
        Param("order", "order", ParamValue::Text),
        Param("direction", "direction", ParamValue::Text),
    ],
};

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

/// `text` with its percent-escapes decoded; `part` names where it came
/// from in the error.
fn percent_decode(text: &str, part: &str) -> Result<String> {
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

/// Query parameters as a JSON object of the fields `spec` names them
/// by. A parameter the route does not read, or a field given twice (under
/// either name), is refused; numeric fields are parsed as integers of 1
/// to their largest value.
fn query_args(query: &str, spec: &QuerySpec, dialect: Dialect) -> Result<Value> {
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

/// A JSON object body that may be left out (`POST …/summary` with no body
/// is `{}`).
fn optional_json_body(req: &Incoming<'_>) -> Result<Value> {
    if req.body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    json_body(req)
}

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
        let token = header
            .and_then(|h| h.strip_prefix("Bearer ").or_else(|| h.strip_prefix("bearer ")))
            .map(str::trim)
            .ok_or_else(|| Error::unauthenticated("missing bearer token"))?;
        self.0
            .iter()
            .find(|(t, _)| constant_time_eq(t.as_bytes(), token.as_bytes()))
            .map(|(_, s)| Grant(s.clone()))
            .ok_or_else(|| Error::unauthenticated("unknown bearer token"))
    }
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

/// `{ success: true, errors: [], messages, result, result_info? }` around
/// the result of operation `op` (`""` for routes that are not operations),
/// already JSON text: the envelope is written around it, the result
/// neither parsed into a tree nor written again. Recall's notes travel as
/// envelope messages; a list's paging info goes in `result_info` (only a
/// page of memories has it, not any result with a `memories` field). Both
/// are read from the result's top-level fields, each kept as its text.
pub fn envelope_ok_text(op: &str, result: &str) -> String {
    use serde_json::value::RawValue;
    let plain = |info: &str| format!("{PLAIN_HEAD}{result}{info}{PLAIN_TAIL}");
    if !envelope_reads_result(op) {
        return plain("");
    }
    let Ok(mut fields) = serde_json::from_str::<std::collections::BTreeMap<String, &RawValue>>(result) else {
        // Not an object: no notes to move, no memories to count.
        return plain(if op == "list" { ",\"result_info\":{\"count\":0,\"cursor\":null}" } else { "" });
    };
    let is_array = |v: &RawValue| v.get().trim_start().starts_with('[');
    // Recall notes travel as envelope messages.
    let messages = match op {
        "recall" => fields.remove("messages").filter(|m| is_array(m)).map_or_else(|| "[]".to_string(), |m| envelope_messages(m.get())),
        _ => "[]".to_string(),
    };
    let mut out = String::with_capacity(result.len().saturating_add(96));
    out.push_str("{\"errors\":[],\"messages\":");
    out.push_str(&messages);
    out.push_str(",\"result\":{");
    for (i, (k, v)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        out.push_str(v.get());
    }
    out.push('}');
    if op == "list" {
        let count = fields.get("memories").and_then(|m| serde_json::from_str::<Vec<&RawValue>>(m.get()).ok()).map_or(0, |m| m.len());
        let cursor = fields.get("cursor").map_or("null", |c| c.get());
        out.push_str(&format!(",\"result_info\":{{\"count\":{count},\"cursor\":{cursor}}}"));
    }
    out.push_str(",\"success\":true}");
    out
}

/// Whether the envelope of `op`'s result reads its fields: recall's notes
/// become envelope messages, a list's paging its `result_info`.
fn envelope_reads_result(op: &str) -> bool {
    op == Op::Recall.name() || op == Op::List.name()
}

/// What a plain envelope holds before its result's text, and after it.
const PLAIN_HEAD: &str = "{\"errors\":[],\"messages\":[],\"result\":";
const PLAIN_TAIL: &str = ",\"success\":true}";

/// An envelope written around a result's text without copying it: the
/// text before the result, the result, the text after it. A result may be
/// megabytes (a list page of a thousand memories; an ingest's report,
/// larger still, is streamed instead: [`envelope_ends`]); the Worker
/// sends the three pieces as they are ([`Enveloped::into_parts`]), so it
/// holds the result once, never beside an enveloped copy.
#[derive(Debug)]
pub struct Enveloped {
    head: &'static str,
    result: String,
    tail: &'static str,
}

impl Enveloped {
    /// An envelope already written whole.
    fn whole(text: String) -> Enveloped {
        Enveloped { head: "", result: text, tail: "" }
    }

    /// The envelope's length in bytes.
    pub fn len(&self) -> usize {
        self.head.len().saturating_add(self.result.len()).saturating_add(self.tail.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pieces, in order, none empty (the result's text moved, not
    /// copied).
    pub fn into_parts(self) -> Vec<String> {
        [self.head.to_string(), self.result, self.tail.to_string()].into_iter().filter(|p| !p.is_empty()).collect()
    }

    /// The envelope as one text.
    pub fn joined(self) -> String {
        let mut text = self.result;
        text.reserve_exact(self.head.len().saturating_add(self.tail.len()));
        text.insert_str(0, self.head);
        text.push_str(self.tail);
        text
    }
}

/// [`envelope_ok_text`], the result moved into the envelope rather than
/// copied, where the envelope reads nothing of it (every operation but
/// recall and list, whose notes and paging it moves).
pub fn envelope_ok_owned(op: &str, result: String) -> Enveloped {
    if envelope_reads_result(op) {
        return Enveloped::whole(envelope_ok_text(op, &result));
    }
    Enveloped { head: PLAIN_HEAD, result, tail: PLAIN_TAIL }
}

/// The `code` of a note in an envelope's `messages` (a recall stage that
/// ran degraded): the envelope's messages are `{code, message}`, as its
/// errors are.
pub const NOTE_CODE: u32 = 10100;

/// A result's notes (a JSON array of strings) as envelope messages:
/// each note `{code: NOTE_CODE, message}`; an item already an object is
/// kept.
fn envelope_messages(notes: &str) -> String {
    let items: Vec<Value> = serde_json::from_str(notes).unwrap_or_default();
    let items: Vec<Value> = items
        .into_iter()
        .map(|n| match n {
            Value::String(message) => json!({ "code": NOTE_CODE, "message": message }),
            other => other,
        })
        .collect();
    Value::Array(items).to_string()
}

/// The envelope of a profile operation's result (JSON text) as `dialect`
/// answers it. The published API answers `null` for ingest and the
/// deletions of a session or profile, and a list as the array of its
/// entries with `result_info {cursor, per_page, count}` (`cursor` absent
/// on the last page); everything else, and every result of the original
/// prefix, as [`envelope_ok_text`].
pub fn envelope_for(call: &ProfileCall, result: String) -> Enveloped {
    if let Some((head, tail)) = envelope_ends(call) {
        return Enveloped { head, result, tail };
    }
    if call.dialect == Dialect::Original {
        return envelope_ok_owned(call.op.name(), result);
    }
    match call.op {
        op if op.publishes_no_result() => Enveloped::whole(envelope_ok_text("", "null")),
        Op::List => {
            use serde_json::value::RawValue;
            #[derive(serde::Deserialize)]
            struct Page<'a> {
                #[serde(borrow)]
                memories: Vec<&'a RawValue>,
                #[serde(default)]
                cursor: Option<String>,
            }
            Enveloped::whole(match serde_json::from_str::<Page<'_>>(&result) {
                Ok(page) => {
                    let items: Vec<&str> = page.memories.iter().map(|m| m.get()).collect();
                    let info = page_info(call.per_page(), items.len(), page.cursor.filter(|c| !c.is_empty()));
                    envelope_with_info(&format!("[{}]", items.join(",")), &info)
                }
                Err(_) => envelope_ok_text("", &result),
            })
        }
        _ => envelope_ok_owned(call.op.name(), result),
    }
}

/// What [`envelope_for`] writes before and after `call`'s result when it
/// reads nothing of it and writes it as it is: the Worker can then stream
/// a large result into its envelope without reading it. `None` where the
/// envelope reads the result (recall's notes, a list's paging) or stands
/// in for it (`null`, where the published API gives no result).
pub fn envelope_ends(call: &ProfileCall) -> Option<(&'static str, &'static str)> {
    let as_it_is = !envelope_reads_result(call.op.name()) && (call.dialect == Dialect::Original || !call.op.publishes_no_result());
    as_it_is.then_some((PLAIN_HEAD, PLAIN_TAIL))
}

/// The envelope of a namespace call's result (JSON text, as the catalog
/// wrote it): a namespace; a list as an array with `result_info`; `null`
/// for a deletion.
///
/// A page of namespaces was read for `grant` ([`scope_catalog`]); one
/// holding a namespace the grant may not see is refused whole, never
/// trimmed: its cursor and count were made from what it held.
pub fn envelope_catalog(call: &CatalogCall, result: &str, grant: &Grant) -> Result<String> {
    match call {
        CatalogCall::List { .. } => {
            let page: crate::core::catalog::NamespacePage = crate::core::catalog::reply(result)?;
            if !page.namespaces.iter().all(|n| grant.allows(&n.name)) {
                return Err(Error::storage("the catalog listed a namespace this token may not see"));
            }
            let info = json!({ "cursor": page.cursor, "per_page": page.per_page, "count": page.namespaces.len() });
            Ok(envelope_with_info(&serde_json::to_string(&page.namespaces)?, &info))
        }
        CatalogCall::ListProfiles { .. } => {
            let page: crate::core::catalog::ProfilePage = crate::core::catalog::reply(result)?;
            let info = page_info(page.per_page, page.profiles.len(), page.cursor);
            Ok(envelope_with_info(&serde_json::to_string(&page.profiles)?, &info))
        }
        CatalogCall::Delete { .. } => Ok(envelope_ok_text("", "null")),
        _ => Ok(envelope_ok_text("", result)),
    }
}

/// The status a namespace call succeeds with: 201 for a namespace
/// created (the API reference's `201 Namespace created`), else 200.
pub fn catalog_status(call: &CatalogCall) -> u16 {
    match call {
        CatalogCall::Create { .. } => 201,
        _ => 200,
    }
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

/// A catalog list's query (`spec`): its page size (`per_page`, or
/// `limit`), its cursor, and all it holds.
fn page_query(query: &str, spec: &QuerySpec, dialect: Dialect) -> Result<(Option<usize>, Option<String>, Value)> {
    let args = query_args(query, spec, dialect)?;
    let per_page = args.get("perPage").and_then(Value::as_u64).map(api::count);
    let cursor = args.get("cursor").and_then(Value::as_str).map(str::to_string);
    Ok((per_page, cursor, args))
}

/// The published `result_info` of a page of memories or profiles: its
/// `cursor` is the next page's, "omitted on the last page" (the API
/// schema). (A page of namespaces carries `""` there instead, as wrangler
/// reads it.)
fn page_info(per_page: usize, count: usize, cursor: Option<String>) -> Value {
    let mut info = Map::new();
    if let Some(cursor) = cursor {
        info.insert("cursor".into(), Value::String(cursor));
    }
    info.insert("per_page".into(), json!(per_page));
    info.insert("count".into(), json!(count));
    Value::Object(info)
}

/// The success envelope around `result` (JSON text) with `result_info`.
fn envelope_with_info(result: &str, info: &Value) -> String {
    format!("{{\"errors\":[],\"messages\":[],\"result\":{result},\"result_info\":{info},\"success\":true}}")
}

/// `{ success: false, errors: [{code, message}], messages: [], result: null }`.
pub fn envelope_err(e: &Error) -> Value {
    json!({ "success": false, "errors": [{ "code": e.code(), "message": e.message() }], "messages": [], "result": Value::Null })
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

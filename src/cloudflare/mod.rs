//! Cloudflare glue (wasm32 only): the Worker's fetch handler, the RPC
//! entry the JS shim forwards to, the profile Durable Object, and the
//! adapters behind the core's ports. No pipeline logic lives here.

mod catalog_object;
mod config;
mod do_sql;
mod heap;
mod models;
mod profile_object;
mod providers;
mod vectorize;
mod working_set;

use crate::core::catalog::CatalogCall;
use crate::core::error::Error;
use crate::core::mcp::{self, McpRequest};
use crate::core::ports::LocalBoxFuture;
use crate::core::rest::{self, Grant, Incoming, Route, Target, Tokens};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;
use worker::*;

/// The type of an export's file, as the profile object answers it and
/// REST serves it.
pub(crate) const NDJSON: &str = "application/x-ndjson";

/// The OpenAPI document, served at `/openapi.json`.
const OPENAPI: &str = include_str!("../openapi.json");

#[event(fetch)]
async fn fetch(mut req: Request, env: Env, _ctx: Context) -> Result<Response> {
    let url = req.url()?;
    // The method as sent: worker's `Method` reads any method it does not
    // know (PROPFIND, PURGE, ...) as GET, which would let such a request
    // act as a read.
    let method = req.inner().method();
    let content_type = req.headers().get("content-type")?;
    let auth = req.headers().get("authorization")?;
    let accept = req.headers().get("accept")?;
    let mcp_version = req.headers().get("mcp-protocol-version")?;
    // Nothing a caller sends is read before its credentials are checked for
    // the namespace in the path, and no body over the largest accepted size
    // is read at all.
    let mut grant = None;
    if let Some(target) = rest::target(url.path()) {
        match authorize(&env, url.path(), &target, auth.as_deref())? {
            Ok(g) => grant = Some(g),
            Err(refusal) => return Ok(refusal),
        }
    }
    // Only a route that takes a body, asked by a caller its credentials
    // let in, has its body read (and takes room for it).
    let takes_body = grant.is_some() && rest::method_not_allowed(&method, url.path()).is_none();
    let (body, room) = match read_body(&env, &mut req, url.path(), takes_body).await? {
        Ok(read) => read,
        Err(e) => return refusal(url.path(), &e),
    };
    // A HEAD is routed as its GET; the platform sends the answer's status
    // and headers without its body.
    let routed = if url.path().starts_with("/mcp/") { method.as_str() } else { rest::routed_method(&method) };
    let incoming = Incoming { method: routed, path: url.path(), query: url.query().unwrap_or(""), content_type: content_type.as_deref(), body: &body };
    if url.path().starts_with("/mcp/") {
        // Every answer on the MCP endpoint is JSON-RPC: a path or query it
        // refuses too (a client reads `error`, not REST's envelope).
        let (namespace, profile) = match rest::route(&incoming) {
            Ok(Route::Mcp { namespace, profile }) => (namespace, profile),
            Ok(_) => return refusal(url.path(), &Error::not_found("no MCP endpoint here")),
            Err(e) => return refusal(url.path(), &e),
        };
        let mcp = McpRequest {
            method: &method,
            content_type: content_type.as_deref(),
            accept: accept.as_deref(),
            protocol_version: mcp_version.as_deref(),
            body: &body,
        };
        let read = mcp::read_http(&mcp);
        // Parsed: the body goes before the profile is called (see below).
        drop(body);
        drop(room);
        return serve_mcp(&env, &namespace, &profile, read).await;
    }
    if let Some(allow) = rest::method_not_allowed(&method, url.path()) {
        return not_allowed(&method, url.path(), &allow);
    }
    let route = rest::route(&incoming);
    // Routing read the body into the call. The Worker and its profile
    // objects may share one Wasm memory, whose high-water mark is what
    // every copy held at once adds up to: the body goes before the object
    // is called.
    drop(body);
    let reply = match route {
        Ok(route) => handle(&env, route, grant.as_ref(), room).await,
        Err(e) => Err(e),
    };
    match reply {
        Ok(reply) => reply.response(),
        Err(e) => error_response(&e),
    }
}

/// The body of a request (none of a request that does not `take` one: a
/// GET, HEAD or DELETE's is read to be refused), read chunk by chunk through the
/// route's [`rest::BodyReader`]: refused (413) before anything is read when
/// its `Content-Length` is over the limit, and as soon as what arrived
/// passes it when it came without one.
///
/// A large body takes room in the isolate's working set before it is read
/// (twice its declared length: the body, then the call routed from it; a
/// body of none grows its room as it arrives). The room goes with the
/// call to [`post_to_object`], which gives it back once it has dropped its
/// copies, before it waits on the object (which takes room of its own).
async fn read_body(env: &Env, req: &mut Request, path: &str, take: bool) -> Result<std::result::Result<(Vec<u8>, working_set::Room), Error>> {
    use crate::core::resident::worker_room;
    use futures::StreamExt;
    if !take || req.inner().body().is_none() {
        return Ok(Ok((Vec::new(), working_set::Room::new(0))));
    }
    if let Err(e) = rest::check_content_encoding(req.headers().get("content-encoding")?.as_deref()) {
        return Ok(Err(e));
    }
    let declared = req.headers().get("content-length")?;
    let mut reader = match rest::BodyReader::new(path, declared.as_deref()) {
        Ok(reader) => reader,
        Err(e) => return Ok(Err(e)),
    };
    // The configuration is read only for a body that may take room (most
    // are small: a recall's), and once.
    let length = declared.as_deref().and_then(|n| n.trim().parse::<usize>().ok());
    let limits = match length {
        Some(n) if worker_room(n) == 0 => None,
        _ => Some(working_set_limits(env)),
    };
    let mut room = match (length, limits) {
        (Some(n), Some(l)) => match working_set::take(worker_room(n), l.bytes, l.wait_millis, "this request's body").await {
            Ok(room) => room,
            Err(e) => return Ok(Err(e)),
        },
        (None, Some(l)) => working_set::Room::new(l.bytes),
        _ => working_set::Room::new(0),
    };
    // A body that holds room arrives in time or is answered 408: from
    // when it first held room, it has its grace plus its length (declared,
    // or held so far) at the slowest rate.
    let grace = limits.map_or(crate::core::resident::BODY_GRACE_MILLIS, |l| l.body_grace_millis);
    let mut holding_since = room.holds().then(working_set::now_millis);
    let mut stream = req.stream()?;
    loop {
        let next = match holding_since {
            None => stream.next().await,
            Some(since) => {
                let allowed = crate::core::resident::body_deadline_millis(length.unwrap_or(reader.held()), grace);
                // The platform's timer takes an i32 of milliseconds: a
                // grace configured past it waits at most that long a chunk.
                let left = allowed.saturating_sub(working_set::now_millis().saturating_sub(since)).min(i32::MAX as u64);
                match futures::future::select(stream.next(), worker::Delay::from(std::time::Duration::from_millis(left))).await {
                    futures::future::Either::Left((next, _)) => next,
                    futures::future::Either::Right(_) => return Ok(Err(body_too_slow(reader.received(), length, allowed))),
                }
            }
        };
        let Some(chunk) = next else { break };
        if let Err(e) = reader.push(&chunk?).and_then(|()| room.grow(worker_room(reader.held()), "this request's body")) {
            return Ok(Err(e));
        }
        holding_since = holding_since.or_else(|| room.holds().then(working_set::now_millis));
    }
    Ok(Ok((reader.finish(), room)))
}

/// The answer to a body that holds room and did not arrive within
/// `allowed_millis`, `received` bytes of it (of `length`, if declared)
/// having arrived.
fn body_too_slow(received: usize, length: Option<usize>, allowed_millis: u64) -> Error {
    let of = length.map_or(String::new(), |n| format!(" of {n}"));
    Error::timeout(format!(
        "the request's body did not arrive in time: {received} bytes{of} in {:.1} s, slower than {} KiB a second, while it held room other large requests wait for; nothing was done",
        allowed_millis as f64 / 1000.0,
        crate::core::resident::BODY_MIN_BYTES_PER_SECOND / 1024
    ))
}

/// The caller's grant for the namespace in the path, or the response that
/// refuses the request: a configuration that does not read refuses every
/// call; missing or wrong credentials on the MCP endpoint say `Bearer`.
fn authorize(env: &Env, path: &str, target: &Target, auth: Option<&str>) -> Result<std::result::Result<Grant, Response>> {
    let config = match config::Config::shared(env) {
        Ok(config) => config,
        Err(e) => return Ok(Err(refusal(path, &e)?)),
    };
    let authorized = Tokens::parse(config.auth_tokens.as_deref().unwrap_or("{}")).and_then(|t| t.grant(auth)).and_then(|g| {
        if let Target::Namespace(ns) = target {
            g.check(ns)?;
        }
        Ok(g)
    });
    let e = match authorized {
        Ok(g) => return Ok(Ok(g)),
        Err(e) => e,
    };
    let resp = refusal(path, &e)?;
    // A 401 names the scheme it asks for (RFC 9110 section 11.6.1); MCP
    // clients read it on every refusal.
    if e.status() == 401 || path.starts_with("/mcp/") {
        let headers = resp.headers().clone();
        headers.set("www-authenticate", "Bearer")?;
        return Ok(Err(resp.with_headers(headers)));
    }
    Ok(Err(resp))
}

/// A request refused before it reaches a profile: a JSON-RPC error on the
/// MCP endpoint, REST's envelope everywhere else.
fn refusal(path: &str, e: &Error) -> Result<Response> {
    if path.starts_with("/mcp/") {
        mcp_response(mcp::refusal(e))
    } else {
        error_response(e)
    }
}

/// 405 with the `Allow` header.
fn not_allowed(method: &str, path: &str, allow: &str) -> Result<Response> {
    let e = Error::method_not_allowed(format!(
        "method {} is not allowed on {}; allowed: {allow}",
        crate::core::api::quoted(method),
        crate::core::api::quoted(path)
    ));
    let resp = error_response(&e)?;
    let headers = resp.headers().clone();
    headers.set("allow", allow)?;
    Ok(resp.with_headers(headers))
}

/// A successful reply: JSON text; a result in its envelope, or streamed
/// into it; or a file the profile object answered, passed on unread under
/// the name it is offered as.
enum Reply {
    /// JSON with its status (200, or 201 for a namespace created).
    Json(u16, String),
    /// A profile's result in its envelope, sent in pieces when large.
    Enveloped(rest::Enveloped),
    File {
        from_object: Response,
        filename: String,
    },
    /// A large result the object sent in pieces, streamed between the
    /// envelope's two ends without being read whole into the Wasm memory
    /// (each piece passes through as it arrives).
    Piped {
        head: &'static str,
        from_object: Response,
        tail: &'static str,
    },
}

/// An enveloped result at least this long is sent as its pieces
/// (`rest::Enveloped`), never joined into one text beside it.
const SEND_IN_PIECES_BYTES: usize = 64 * 1024;

impl Reply {
    fn json(body: String) -> Reply {
        Reply::Json(200, body)
    }

    fn response(self) -> Result<Response> {
        let headers = Headers::new();
        match self {
            Reply::Json(status, body) => {
                headers.set("content-type", "application/json")?;
                Ok(Response::ok(body)?.with_status(status).with_headers(headers))
            }
            Reply::Enveloped(e) if e.len() < SEND_IN_PIECES_BYTES => Reply::json(e.joined()).response(),
            Reply::Enveloped(e) => {
                headers.set("content-type", "application/json")?;
                let body = js_body(e.into_parts().into_iter().map(String::into_bytes).collect())?;
                Ok(Response::builder().with_headers(headers).stream(body))
            }
            Reply::Piped { head, mut from_object, tail } => {
                headers.set("content-type", "application/json")?;
                let end = |text: &'static str| futures::stream::once(async move { Ok::<Vec<u8>, worker::Error>(text.as_bytes().to_vec()) });
                let body = futures::StreamExt::chain(futures::StreamExt::chain(end(head), from_object.stream()?), end(tail));
                Ok(Response::from_stream(body)?.with_headers(headers))
            }
            // The object's body goes on as the platform streams it: no
            // copy of the file is made in the Wasm memory.
            Reply::File { from_object, filename } => {
                headers.set("content-type", NDJSON)?;
                headers.set("content-disposition", &format!("attachment; filename=\"{filename}\""))?;
                Ok(from_object.with_headers(headers))
            }
        }
    }
}

/// A large result's pieces as a response body, copied out of the Wasm
/// memory now, each dropped once copied, into one buffer the platform
/// sends on by itself. A stream of the pieces would keep every one in the
/// Wasm memory until the caller has read them, which under load is long
/// after the request is done: each such answer at once, outside any room.
pub(crate) fn js_body(pieces: Vec<Vec<u8>>) -> Result<web_sys::ReadableStream> {
    let len = pieces.iter().map(Vec::len).sum::<usize>();
    let buffer = js_sys::Uint8Array::new_with_length(u32::try_from(len).map_err(|_| worker::Error::RustError("a result over 4 GB".into()))?);
    let mut at = 0;
    for piece in pieces {
        let end = at + piece.len() as u32;
        buffer.subarray(at, end).copy_from(&piece);
        at = end;
    }
    web_sys::Response::new_with_opt_buffer_source(Some(&buffer))?.body().ok_or_else(|| worker::Error::RustError("a response without a body".into()))
}

fn json_response(status: u16, v: &Value) -> Result<Response> {
    Ok(Response::from_json(v)?.with_status(status))
}

/// An error in its envelope, at its status; a busy refusal says when to
/// retry (`Retry-After`).
fn error_response(e: &Error) -> Result<Response> {
    let resp = json_response(e.status(), &rest::envelope_err(e))?;
    let Some(seconds) = rest::retry_after_seconds(e) else { return Ok(resp) };
    let headers = resp.headers().clone();
    headers.set("retry-after", &seconds.to_string())?;
    Ok(resp.with_headers(headers))
}

/// Answers a routed request; `room` is what its body took in the working
/// set, given back before anything is awaited.
async fn handle(env: &Env, route: Route, grant: Option<&Grant>, room: working_set::Room) -> std::result::Result<Reply, Error> {
    // Credentials were checked in `fetch` for the namespace in the path,
    // which is the namespace every profile route names; the account's
    // routes check each namespace they touch here.
    match route {
        Route::Catalog(call) => {
            let grant = grant.ok_or_else(|| Error::unauthenticated("missing bearer token"))?;
            let call = rest::scope_catalog(call, grant)?;
            let out = call_catalog(env, &call).await?;
            Ok(Reply::Json(rest::catalog_status(&call), rest::envelope_catalog(&call, &out, grant)?))
        }
        Route::Health => {
            let health = json!({ "status": "ok", "service": "agent-memory", "version": env!("CARGO_PKG_VERSION") });
            Ok(Reply::json(rest::envelope_ok_text("", &health.to_string())))
        }
        Route::Mcp { .. } => Err(Error::not_found("mcp is served separately")),
        Route::OpenApi => Ok(Reply::json(OPENAPI.to_string())),
        Route::Profile(mut call) => {
            let name = call.object_name();
            // Moved, not copied: the call's arguments are written to the
            // object and dropped before it runs (what the envelope reads
            // of them stays).
            let args = call.take_args();
            // A large result is taken in pieces where the envelope writes
            // it as it is (an ingest's report, on the original routes).
            let ends = rest::envelope_ends(&call);
            let asks = rest::Asks { unread: call.unread(), pieces: ends.is_some() };
            match call_object_answer(env, &name, call.op.name(), args, asks, room).await? {
                ObjectAnswer::Json(out) => Ok(Reply::Enveloped(rest::envelope_for(&call, out))),
                ObjectAnswer::Pieces(from_object) => {
                    let (head, tail) = ends.ok_or_else(pieces_unasked)?;
                    Ok(Reply::Piped { head, from_object, tail })
                }
                ObjectAnswer::File(from_object) => Ok(Reply::File { from_object, filename: format!("{}-{}.ndjson", call.namespace, call.profile) }),
            }
        }
    }
}

/// Sends one call to the namespace catalog's Durable Object.
pub async fn call_catalog(env: &Env, call: &CatalogCall) -> std::result::Result<String, Error> {
    let stub = env
        .durable_object("CATALOG")
        .and_then(|ns| ns.get_by_name(catalog_object::CATALOG_NAME))
        .map_err(|e| Error::config(format!("failed to address the namespace catalog: {e}")))?;
    let body = serde_json::to_string(call).map_err(|e| Error::storage(format!("failed to write a catalog call: {e}")))?;
    object_reply(&stub, body).await
}

/// The MCP endpoint: the core's MCP handler over the profile's Durable
/// Object (credentials were checked in `fetch`, as for REST).
async fn serve_mcp(env: &Env, namespace: &str, profile: &str, read: std::result::Result<mcp::McpMessage, mcp::McpReply>) -> Result<Response> {
    let backend = ObjectBackend { env, name: rest::object_name(namespace, profile) };
    mcp_response(mcp::answer(read, &backend).await)
}

/// An MCP reply as the HTTP response.
fn mcp_response(reply: mcp::McpReply) -> Result<Response> {
    let headers = Headers::new();
    if let Some(ct) = reply.content_type {
        headers.set("content-type", ct)?;
    }
    for (k, v) in &reply.headers {
        headers.set(k, v)?;
    }
    if reply.body.is_empty() {
        return Ok(Response::empty()?.with_status(reply.status).with_headers(headers));
    }
    // The pieces copied out one after the other: a tool's result (an
    // ingest's report) is never joined into one more buffer of the reply.
    Ok(Response::builder().with_status(reply.status).with_headers(headers).stream(js_body(reply.body.into_pieces())?))
}

/// MCP's view of a profile: operations sent to its Durable Object.
struct ObjectBackend<'a> {
    env: &'a Env,
    name: String,
}

impl mcp::Backend for ObjectBackend<'_> {
    fn call<'a>(&'a self, op: &'a str, args: Value) -> LocalBoxFuture<'a, std::result::Result<crate::core::json::JsonPieces, Error>> {
        Box::pin(async move {
            // An ingest's large report comes in pieces, read in pieces.
            let asks = rest::Asks { unread: false, pieces: true };
            match call_object_answer(self.env, &self.name, op, args, asks, working_set::Room::new(0)).await? {
                ObjectAnswer::Json(text) => Ok(crate::core::json::JsonPieces::one(text)),
                ObjectAnswer::Pieces(resp) => response_pieces(&resp)
                    .await
                    .map(crate::core::json::JsonPieces::from_pieces)
                    .map_err(|e| Error::storage(format!("failed to read profile object reply: {e}"))),
                ObjectAnswer::File(_) => Err(Error::storage("internal error: the profile answered a file to a tool")),
            }
        })
    }
}

/// Sends one operation to a profile's Durable Object: its result as the
/// JSON text the object wrote, passed on without being parsed (an
/// ingest's or a recall's result carries whole memories); an export's
/// file as a JSON string.
pub async fn call_object_text(env: &Env, name: &str, op: &str, args: Value) -> std::result::Result<String, Error> {
    match call_object_answer(env, name, op, args, rest::Asks::default(), working_set::Room::new(0)).await? {
        ObjectAnswer::Json(text) => Ok(text),
        ObjectAnswer::Pieces(_) => Err(pieces_unasked()),
        ObjectAnswer::File(resp) => {
            let file = response_text(&resp).await.map_err(|e| Error::storage(format!("failed to read profile object reply: {e}")))?;
            serde_json::to_string(&file).map_err(|e| Error::storage(format!("failed to write an export as JSON: {e}")))
        }
    }
}

/// What a profile object answered a call: its result's JSON text, that
/// text in pieces, or a file (an export), the last two not yet read.
enum ObjectAnswer {
    Json(String),
    /// The result's JSON text, sent in pieces ([`rest::PIECES_HEADER`]),
    /// only to a call that asked for them ([`rest::Asks::pieces`]).
    Pieces(Response),
    File(Response),
}

/// An object's answer in pieces to a caller that did not ask for them.
fn pieces_unasked() -> Error {
    Error::storage("internal error: the profile answered in pieces unasked")
}

/// Sends one operation to a profile's Durable Object; `unread`: the caller
/// reads no result, and the object writes none.
async fn call_object_answer(
    env: &Env,
    name: &str,
    op: &str,
    args: Value,
    asks: rest::Asks,
    room: working_set::Room,
) -> std::result::Result<ObjectAnswer, Error> {
    let stub =
        env.durable_object("PROFILES").and_then(|ns| ns.get_by_name(name)).map_err(|e| Error::config(format!("failed to address profile object: {e}")))?;
    // The arguments are consumed here, before the object is awaited.
    let body = rest::ObjectCall::post(name, op, args, asks)?;
    let resp = post_to_object(&stub, body, room).await?;
    if resp.status_code() == 200 && resp.headers().get("content-type").ok().flatten().as_deref() == Some(NDJSON) {
        return Ok(ObjectAnswer::File(resp));
    }
    if asks.pieces && resp.status_code() == 200 && resp.headers().get(rest::PIECES_HEADER).ok().flatten().is_some() {
        return Ok(ObjectAnswer::Pieces(resp));
    }
    read_object_reply(&resp).await.map(ObjectAnswer::Json)
}

/// Posts `body` to a Durable Object and reads its `reply`: the result's
/// JSON text, or the error it carries.
async fn object_reply(stub: &Stub, body: String) -> std::result::Result<String, Error> {
    read_object_reply(&post_to_object(stub, rest::Posted { call: body, raw: None }, working_set::Room::new(0)).await?).await
}

/// Posts a call to a Durable Object (an import's file as the body, the
/// call in [`rest::CALL_HEADER`]; otherwise the call as the body); its
/// response, unread.
/// `room`, the working set's room for what the Worker held of the call,
/// is given back once its copies are dropped, before the object is awaited.
async fn post_to_object(stub: &Stub, posted: rest::Posted, room: working_set::Room) -> std::result::Result<Response, Error> {
    let mut init = RequestInit::new();
    let headers = Headers::new();
    let body = match posted.raw {
        // An import's file as the body, the call in a header.
        Some(raw) => {
            headers.set(rest::CALL_HEADER, &posted.call).map_err(|e| Error::storage(e.to_string()))?;
            raw
        }
        None => posted.call,
    };
    headers.set(rest::CALL_BYTES_HEADER, &body.len().to_string()).map_err(|e| Error::storage(e.to_string()))?;
    init.with_method(Method::Post).with_headers(headers).with_body(Some(JsValue::from_str(&body)));
    // The platform holds its own copy now; ours would sit in the Wasm
    // memory for as long as the object runs.
    drop(body);
    drop(room);
    let req = Request::new_with_init("https://object.internal/call", &init).map_err(|e| Error::storage(e.to_string()))?;
    // What the platform says of a failed call (a stack, a file path) stays
    // out of the answer: the caller learns that the outcome is unknown.
    stub.fetch_with_request(req).await.map_err(|_| Error::storage("internal error: the profile did not answer; the call may or may not have taken effect"))
}

/// An object's `reply` read: the result's JSON text, or the error it
/// carries.
async fn read_object_reply(resp: &Response) -> std::result::Result<String, Error> {
    let mut text = response_text(resp).await.map_err(|e| Error::storage(format!("failed to read profile object reply: {e}")))?;
    // `{"ok":<result>}`, as the object's `reply` writes it.
    const OK: &str = "{\"ok\":";
    if text.starts_with(OK) && text.ends_with('}') {
        text.truncate(text.len() - 1);
        text.drain(..OK.len());
        return Ok(text);
    }
    let v: Value = serde_json::from_str(&text).map_err(|e| Error::storage(format!("failed to read profile object reply: {e}")))?;
    // A reply that is neither is the object's fault, named, never read as
    // some error of its own.
    match (v["error"]["code"].as_u64().and_then(|c| u32::try_from(c).ok()), v["error"]["message"].as_str()) {
        (Some(code), Some(message)) => Err(Error::from_code(code, message.to_string())),
        _ => Err(Error::storage(format!("a profile object reply that is neither a result nor an error: {}", crate::core::api::quoted(&text)))),
    }
}

/// A fetched response's body as UTF-8 text, read by the platform in one
/// step. (worker's `Response::text` reads a fetched body chunk by chunk
/// through a stream reader: several calls across the Wasm boundary per
/// chunk.) Bytes that are not UTF-8 are an error, as they were there.
pub(crate) async fn response_text(resp: &Response) -> std::result::Result<String, String> {
    let bytes = match response_body(resp).await? {
        Body::Js(buffer) => buffer.to_vec(),
        Body::Rust(bytes) => bytes,
    };
    String::from_utf8(bytes).map_err(|e| e.to_string())
}

/// A fetched response's body in pieces of at most
/// [`crate::core::json::PIECE_BYTES`], read by the platform in one step
/// and copied into the Wasm memory a piece at a time: a body of megabytes
/// (an ingest's report) is never one stretch of the memory.
async fn response_pieces(resp: &Response) -> std::result::Result<Vec<Vec<u8>>, String> {
    let buffer = match response_body(resp).await? {
        Body::Js(buffer) => buffer,
        Body::Rust(bytes) => return Ok(vec![bytes]),
    };
    let len = buffer.length();
    let step = u32::try_from(crate::core::json::PIECE_BYTES).unwrap_or(u32::MAX);
    Ok((0..len).step_by(step as usize).map(|at| buffer.subarray(at, at.saturating_add(step).min(len)).to_vec()).collect())
}

/// A response's body as it was read: by the platform, outside the Wasm
/// memory, or already in it.
enum Body {
    Js(js_sys::Uint8Array),
    Rust(Vec<u8>),
}

/// Reads a fetched response's body in one step of the platform.
async fn response_body(resp: &Response) -> std::result::Result<Body, String> {
    match resp.body() {
        ResponseBody::Stream(stream) => {
            let read = async {
                let raw = web_sys::Response::new_with_opt_readable_stream(Some(stream))?;
                let buffer = wasm_bindgen_futures::JsFuture::from(raw.array_buffer()?).await?;
                Ok::<_, JsValue>(js_sys::Uint8Array::new(&buffer))
            };
            read.await.map(Body::Js).map_err(|e| js_error_message(&e))
        }
        ResponseBody::Body(bytes) => Ok(Body::Rust(bytes.clone())),
        ResponseBody::Empty => Ok(Body::Rust(Vec::new())),
    }
}

/// The message of a thrown JavaScript value: an `Error`'s message (not its
/// stack), a string as it is.
pub(crate) fn js_error_message(e: &JsValue) -> String {
    e.dyn_ref::<js_sys::Error>().map(|e| String::from(e.message())).or_else(|| e.as_string()).unwrap_or_else(|| format!("{e:?}"))
}

/// The working set's room for an RPC call's arguments of `size` (the
/// length of their JSON text): twice it, as for a REST body (the values
/// read into Rust, then the call written from them), given back once the
/// call is handed to the object; none below the floor.
async fn rpc_room(env: &Env, size: usize) -> std::result::Result<working_set::Room, Error> {
    use crate::core::resident::worker_room;
    if worker_room(size) == 0 {
        return Ok(working_set::Room::new(0));
    }
    let l = working_set_limits(env);
    working_set::take(worker_room(size), l.bytes, l.wait_millis, "this call's arguments").await
}

/// The working set's settings a large request is held to.
#[derive(Clone, Copy)]
struct Limits {
    bytes: usize,
    wait_millis: u64,
    body_grace_millis: u64,
}

/// The working set's settings as configured (their defaults under a
/// configuration that does not read: the call is refused for that where
/// it is read whole).
fn working_set_limits(env: &Env) -> Limits {
    match config::Config::shared(env) {
        Ok(c) => Limits { bytes: c.working_set_bytes, wait_millis: c.working_set_wait_millis, body_grace_millis: c.body_grace_millis },
        Err(_) => Limits {
            bytes: crate::core::resident::DEFAULT_WORKING_SET_BYTES,
            wait_millis: crate::core::resident::WORKING_SET_WAIT_MILLIS,
            body_grace_millis: crate::core::resident::BODY_GRACE_MILLIS,
        },
    }
}

/// The RPC entry the JS shim forwards every profile method to. Returns the
/// operation's result, or throws an `Error` whose `code` and message are
/// those REST would put in its envelope.
#[wasm_bindgen]
pub async fn rpc(env: Env, profile: JsValue, op: String, args: JsValue, namespace: JsValue, size: JsValue) -> std::result::Result<JsValue, JsValue> {
    let out = async {
        let (ns, p) = rpc_names(&profile, &namespace)?;
        rest::rpc_op(&op)?;
        // Room for the arguments' working memory, taken before they are
        // read into the Wasm memory: `size` is the length of their JSON
        // text as the entry measured it (its UTF-8 bytes), as a REST
        // body's declared length is.
        let size = size.as_f64().map_or(0, |n| n as usize);
        rest::rpc_size_fits(size)?;
        let room = rpc_room(&env, size).await?;
        let args: Value = if args.is_undefined() || args.is_null() {
            Value::Null
        } else {
            serde_wasm_bindgen::from_value(args).map_err(|e| Error::invalid(format!("invalid arguments: {e}")))?
        };
        rest::rpc_import_fits(&op, &args)?;
        match call_object_answer(&env, &rest::object_name(&ns, &p), &op, args, rest::Asks::unread(rest::rpc_reads_no_result(&op)), room).await? {
            ObjectAnswer::Json(text) => js_sys::JSON::parse(&text).map_err(|_| Error::storage("failed to encode result")),
            ObjectAnswer::Pieces(_) => Err(pieces_unasked()),
            // An export's file, read as a string by the platform: it never
            // enters the Wasm memory.
            ObjectAnswer::File(resp) => {
                let raw: web_sys::Response = resp.into();
                let text = async { wasm_bindgen_futures::JsFuture::from(raw.text()?).await };
                text.await.map_err(|e| Error::storage(format!("failed to read profile object reply: {}", js_error_message(&e))))
            }
        }
    }
    .await;
    out.map_err(|e| memory_error(&e))
}

/// What the RPC entry's walk of a call's arguments may read, as REST
/// reads a body: `[bytes of JSON, bytes as a tree, a value's, an
/// object's, a member's, an import's file]` ([`rest::MAX_BODY_BYTES`],
/// [`crate::core::json::MAX_JSON_TREE_BYTES`] and its charges,
/// [`crate::core::api::MAX_IMPORT_BYTES`]).
#[wasm_bindgen(js_name = rpcLimits)]
pub fn rpc_limits() -> Vec<f64> {
    use crate::core::json::{MAX_JSON_TREE_BYTES, TREE_MEMBER_BYTES, TREE_OBJECT_BYTES, TREE_VALUE_BYTES};
    [rest::MAX_BODY_BYTES, MAX_JSON_TREE_BYTES, TREE_VALUE_BYTES, TREE_OBJECT_BYTES, TREE_MEMBER_BYTES, crate::core::api::MAX_IMPORT_BYTES]
        .iter()
        .map(|&n| n as f64)
        .collect()
}

/// Checks a profile name as [`rpc`] reads it, throwing the error a call
/// on it would: `getProfile` calls it, so that a name no profile may have
/// rejects there, as the published types say (the name is "validated
/// against naming rules"), and not at the profile's first call.
#[wasm_bindgen(js_name = checkProfileName)]
pub fn check_profile_name(profile: JsValue, namespace: JsValue) -> std::result::Result<(), JsValue> {
    rpc_names(&profile, &namespace).map(|_| ()).map_err(|e| memory_error(&e))
}

/// A caller's profile name and the binding's `props.namespace`, as the
/// RPC entry takes them: the namespace and profile they name.
fn rpc_names(profile: &JsValue, namespace: &JsValue) -> std::result::Result<(String, String), Error> {
    // Taken as a JsValue: a caller may send anything, and a name that is
    // not a string is an invalid argument, not a trap.
    let profile = profile.as_string().ok_or_else(|| Error::invalid("profile name must be a string"))?;
    let namespace = match namespace.as_string() {
        Some(ns) => Some(ns),
        None if namespace.is_undefined() || namespace.is_null() => None,
        None => return Err(Error::invalid("the binding's props.namespace must be a string")),
    };
    rest::rpc_profile_name(&profile, namespace.as_deref())
}

/// The `Error` the binding throws: named `MemoryError`, its message
/// ending in the code, with `code` and `status` beside it.
fn memory_error(e: &Error) -> JsValue {
    let err = js_sys::Error::new(&format!("{} ({})", e.message(), e.code()));
    err.set_name("MemoryError");
    // The message carries the code whatever happens; a property that
    // cannot be set is that error, thrown instead.
    let set = |key: &str, value: JsValue| js_sys::Reflect::set(&err, &JsValue::from_str(key), &value);
    match set("code", JsValue::from(e.code())).and_then(|_| set("status", JsValue::from(e.status()))) {
        Ok(_) => err.into(),
        Err(thrown) => thrown,
    }
}

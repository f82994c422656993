//! The MCP endpoint (Streamable HTTP transport), pure: JSON-RPC 2.0
//! framing, protocol-version negotiation, the tool catalogue, and rendering
//! results for a model. The Worker's glue only moves bytes: it hands the
//! HTTP method, three headers and the body to [`handle_http`], and sends
//! every tool's operation to the profile's Durable Object through a
//! [`Backend`] (which runs [`crate::core::ops::Profile::dispatch`]).
//!
//! The server is stateless: it issues no `Mcp-Session-Id` (one sent by a
//! client is ignored), offers no server-initiated stream (`GET` is 405),
//! and answers every POST with a single JSON body, or with a single SSE
//! event when the client accepts only `text/event-stream`.
//!
//! Errors follow MCP conventions: malformed JSON-RPC is a protocol error
//! (-32700, -32600), so are unknown methods (-32601) and tool arguments
//! that break the tool's advertised input schema (-32602, including an
//! unknown tool name); a failing operation (validation by the core, not
//! found, a full profile, a provider failure) is a tool result with
//! `isError: true`, its stable error code in the text and in
//! `structuredContent.error`, so the model can read it and correct itself.

use crate::core::api;
use crate::core::error::{Error, Result};
use crate::core::json::JsonPieces;
use crate::core::ops::{Op, Profile};
use crate::core::ports::LocalBoxFuture;
use crate::core::rest::MAX_BODY_BYTES;
use serde_json::{json, Map, Value};

mod render;
pub use render::MAX_RENDERED_ITEMS;

/// Protocol versions this server speaks, newest first.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-06-18", "2025-03-26", "2024-11-05"];
/// The version answered when the client asks for one this server lacks.
pub const LATEST_PROTOCOL_VERSION: &str = PROTOCOL_VERSIONS[0];
/// Most messages in one JSON-RPC batch.
pub const MAX_BATCH: usize = 100;
/// `serverInfo.name`.
pub const SERVER_NAME: &str = "agent-memory";

/// Most bytes of replies one batch gathers ([`json_bytes`]) before its
/// remaining requests are answered with [`BATCH_REPLY_FULL`] instead of
/// being run: a batch holds every reply until the last is made, and a
/// few hundred bytes of `list` calls would otherwise gather gigabytes in
/// the Wasm memory the isolate's profiles share (a hundred pages of 32 KB
/// memories trapped it). A single call's reply is bounded (a list by its
/// page, `store::PAGE_TEXT_BYTES`; a recall by its 100 candidates, about
/// 3 MB of summaries at most), so a batch holds at most this and one
/// reply more.
pub const MAX_BATCH_REPLY_BYTES: usize = 4 << 20;

/// JSON-RPC error codes.
/// A request of a batch left unrun: the batch's replies reached
/// [`MAX_BATCH_REPLY_BYTES`] (a server error, in JSON-RPC's range for them).
pub const BATCH_REPLY_FULL: i64 = -32000;
pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;

const JSON: &str = "application/json";
const SSE: &str = "text/event-stream";

/// Runs profile operations for the endpoint. The Worker implements it by
/// sending `op` and `args` to the profile's Durable Object; natively a
/// [`Profile`] implements it directly.
pub trait Backend {
    /// Runs operation `op` (a name of `Profile::dispatch`) with JSON
    /// arguments and returns its result as the JSON text the profile
    /// wrote. The endpoint reads of it only what its text for the model
    /// needs and passes the rest on as it is (an ingest's result can hold
    /// thousands of memories).
    fn call<'a>(&'a self, op: &'a str, args: Value) -> LocalBoxFuture<'a, Result<JsonPieces>>;
}

impl Backend for Profile<'_> {
    fn call<'a>(&'a self, op: &'a str, args: Value) -> LocalBoxFuture<'a, Result<JsonPieces>> {
        Box::pin(async move { self.dispatch_json(op, args).await.map(JsonPieces::one) })
    }
}

/// An HTTP request to the endpoint, as the glue sees it.
#[derive(Clone, Copy, Debug, Default)]
pub struct McpRequest<'a> {
    /// The HTTP method (`POST`, `GET`, ...).
    pub method: &'a str,
    /// The `Content-Type` header.
    pub content_type: Option<&'a str>,
    /// The `Accept` header.
    pub accept: Option<&'a str>,
    /// The `MCP-Protocol-Version` header.
    pub protocol_version: Option<&'a str>,
    pub body: &'a [u8],
}

/// The HTTP response to send back.
#[derive(Clone, Debug, PartialEq)]
pub struct McpReply {
    pub status: u16,
    /// `None` when there is no body (202).
    pub content_type: Option<&'static str>,
    /// Further headers (`Allow`, `Cache-Control`).
    pub headers: Vec<(&'static str, String)>,
    /// The body in pieces, sent one after the other; none when there is
    /// no body.
    pub body: JsonPieces,
}

impl McpReply {
    fn json(status: u16, v: &Value) -> McpReply {
        McpReply::text(status, JsonPieces::one(v.to_string()), false)
    }

    /// A body of JSON text `json`, as it is or as one SSE event.
    fn text(status: u16, json: JsonPieces, as_sse: bool) -> McpReply {
        if as_sse {
            McpReply {
                status,
                content_type: Some(SSE),
                headers: vec![("Cache-Control", "no-cache".into())],
                body: json.between("event: message\ndata: ".into(), "\n\n"),
            }
        } else {
            McpReply { status, content_type: Some(JSON), headers: vec![], body: json }
        }
    }

    fn accepted() -> McpReply {
        McpReply { status: 202, content_type: None, headers: vec![], body: JsonPieces::default() }
    }

    /// The body whole.
    pub fn body_text(&self) -> String {
        self.body.text()
    }

    /// The JSON-RPC payload of the body (plain JSON or the data of the
    /// single SSE event); `None` without a body.
    pub fn message(&self) -> Option<Value> {
        let body = self.body.text();
        if body.is_empty() {
            return None;
        }
        if self.content_type == Some(SSE) {
            let data: String = body.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim_start).collect::<Vec<_>>().join("\n");
            return serde_json::from_str(&data).ok();
        }
        serde_json::from_str(&body).ok()
    }

    /// A header's value (case-insensitive name), including `Content-Type`.
    pub fn header(&self, name: &str) -> Option<&str> {
        if name.eq_ignore_ascii_case("content-type") {
            return self.content_type;
        }
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Handles one HTTP request to the endpoint: the method, `Content-Type`
/// and `MCP-Protocol-Version` checks, then [`handle`] for a POST.
///
/// * `GET` (no server-initiated stream), `DELETE` (no session to end) and
///   every other method but POST: 405 with `Allow: POST`;
/// * a `Content-Type` other than JSON: 415; a body over the REST limit: 413;
/// * an `MCP-Protocol-Version` header naming an unsupported version: 400.
///
/// Authentication and routing to the profile are the caller's (as for
/// REST): call this only for an authorized request.
pub async fn handle_http(req: &McpRequest<'_>, backend: &dyn Backend) -> McpReply {
    answer(read_http(req), backend).await
}

/// A POST read and checked, its body parsed: the JSON-RPC message to
/// [`answer`], or the reply refusing the request. (The Worker drops the
/// body between the two: what it holds while the profile runs counts
/// against the Wasm memory it shares with the profile objects.)
pub struct McpMessage {
    message: Value,
    as_sse: bool,
}

/// [`handle_http`]'s checks and the body's parse, without the answer.
pub fn read_http(req: &McpRequest<'_>) -> std::result::Result<McpMessage, McpReply> {
    if !req.method.eq_ignore_ascii_case("POST") {
        let e = Error::method_not_allowed(format!("method {} is not allowed: this endpoint takes JSON-RPC messages by POST only", api::quoted(req.method)));
        let mut reply = refused(&e, -32000);
        reply.headers.push(("Allow", "POST".into()));
        return Err(reply);
    }
    if let Some(ct) = req.content_type {
        let (media, json) = api::json_media(ct);
        if !json {
            let e = Error::unsupported_media_type(format!("content-type must be application/json, not {}", api::quoted(&media)));
            return Err(refused(&e, INVALID_REQUEST));
        }
        if let Some(charset) = api::foreign_charset(ct) {
            let e = Error::unsupported_media_type(format!("a JSON body is read as UTF-8, not {}", api::quoted(&charset)));
            return Err(refused(&e, INVALID_REQUEST));
        }
    }
    if let Some(v) = req.protocol_version {
        if !PROTOCOL_VERSIONS.contains(&v.trim()) {
            let e = Error::invalid(format!("unsupported MCP-Protocol-Version {}; supported: {}", api::quoted(v), PROTOCOL_VERSIONS.join(", ")));
            return Err(refused(&e, INVALID_REQUEST));
        }
    }
    read(req.body, req.accept)
}

/// Handles the body of a POST: one JSON-RPC message or a batch.
///
/// Answers 202 with no body when the input holds only notifications (or
/// responses); 200 with the response (or an array of responses for a
/// batch) otherwise; 400 for a body that is not JSON (-32700) or a single
/// message that is not valid JSON-RPC (-32600); 406 when `accept` allows
/// neither `application/json` nor `text/event-stream`.
pub async fn handle(body: &[u8], accept: Option<&str>, backend: &dyn Backend) -> McpReply {
    answer(read(body, accept), backend).await
}

/// [`handle`]'s reading of a body: the JSON-RPC message, or the reply
/// refusing it (not acceptable, too large, not JSON).
pub fn read(body: &[u8], accept: Option<&str>) -> std::result::Result<McpMessage, McpReply> {
    let Some(as_sse) = negotiate(accept) else {
        return Err(refused(&Error::not_acceptable("the client must accept application/json or text/event-stream"), INVALID_REQUEST));
    };
    let reply = |status: u16, v: &Value| McpReply::text(status, JsonPieces::one(v.to_string()), as_sse);
    if body.len() > MAX_BODY_BYTES {
        return Err(refused(&Error::too_large(format!("request body is over {MAX_BODY_BYTES} bytes")), INVALID_REQUEST));
    }
    // A message that is not JSON-RPC answers as invalid input does.
    let bad_request = Error::invalid("").status();
    let parsed = std::str::from_utf8(body)
        .map_err(|_| "body is not valid UTF-8".to_string())
        // Strict as REST's bodies: a key given twice is refused, not won by
        // its last value.
        .and_then(|t| crate::core::rest::parse_strict(t).map_err(|e| e.message().to_string()));
    let message = match parsed {
        Ok(v) => v,
        Err(e) => return Err(reply(bad_request, &error_response(Value::Null, PARSE_ERROR, &format!("parse error: {e}")))),
    };
    Ok(McpMessage { message, as_sse })
}

/// Answers what [`read`] (or [`read_http`]) made of a request: its
/// refusal as it is; for a message let through, 202 with no body when it
/// holds only notifications (or responses), 200 with the response, or an
/// array of them for a batch, 400 for a single message that is not valid
/// JSON-RPC (-32600).
pub async fn answer(read: std::result::Result<McpMessage, McpReply>, backend: &dyn Backend) -> McpReply {
    let McpMessage { message, as_sse } = match read {
        Ok(message) => message,
        Err(refusal) => return refusal,
    };
    let bad_request = Error::invalid("").status();
    let refuse = |message: &str| McpReply::text(bad_request, JsonPieces::one(error_response(Value::Null, INVALID_REQUEST, message).to_string()), as_sse);
    match message {
        Value::Array(batch) => {
            if batch.is_empty() {
                return refuse("invalid request: empty batch");
            }
            if batch.len() > MAX_BATCH {
                return refuse(&format!("invalid request: at most {MAX_BATCH} messages per batch"));
            }
            let mut out: Vec<String> = Vec::new();
            let mut gathered = 0usize;
            for m in batch {
                if gathered >= MAX_BATCH_REPLY_BYTES && runs_something(&m) {
                    out.push(Response::error(echo_id(&m), BATCH_REPLY_FULL, &batch_full_message()).json.text());
                    continue;
                }
                if let Some(r) = process(m, backend).await {
                    gathered = gathered.saturating_add(r.json.len());
                    // Held until the batch is answered: joined (the
                    // replies are bounded, see MAX_BATCH_REPLY_BYTES).
                    out.push(r.json.text());
                }
            }
            if out.is_empty() {
                McpReply::accepted()
            } else {
                McpReply::text(200, JsonPieces::one(format!("[{}]", out.join(","))), as_sse)
            }
        }
        single => match process(single, backend).await {
            None => McpReply::accepted(),
            Some(r) => {
                let status = if matches!(r.error, Some(PARSE_ERROR | INVALID_REQUEST)) { bad_request } else { 200 };
                McpReply::text(status, r.json, as_sse)
            }
        },
    }
}

fn batch_full_message() -> String {
    format!(
        "not run: this batch's replies reached {MAX_BATCH_REPLY_BYTES} bytes before this request's turn; nothing of it was done. Send this request again, alone or in a later batch (the requests answered before it ran)"
    )
}

/// Whether a batch's message would run something: anything but a
/// notification (which needs no action) or a response to the server.
fn runs_something(m: &Value) -> bool {
    match m.get("method").and_then(Value::as_str) {
        Some(method) => m.get("id").is_some() || !method.starts_with("notifications/"),
        None => !(m.get("result").is_some() || m.get("error").is_some()),
    }
}

/// A message's id when it is one a reply may echo, else null.
fn echo_id(m: &Value) -> Value {
    match m.get("id") {
        Some(id @ Value::String(_)) => id.clone(),
        Some(id) if id.is_i64() || id.is_u64() => id.clone(),
        _ => Value::Null,
    }
}

/// A request refused before any JSON-RPC message was read: the status
/// `e` maps to, and a JSON-RPC error with `rpc_code` and `e`'s message.
/// A request the endpoint refuses before reading it (its path or query):
/// the error's status, with a JSON-RPC error of no id as the body.
pub fn refusal(e: &Error) -> McpReply {
    refused(e, INVALID_REQUEST)
}

fn refused(e: &Error, rpc_code: i64) -> McpReply {
    McpReply::json(e.status(), &error_response(Value::Null, rpc_code, e.message()))
}

/// `Some(false)`: answer JSON; `Some(true)`: answer one SSE event; `None`:
/// neither is acceptable.
fn negotiate(accept: Option<&str>) -> Option<bool> {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return Some(false);
    };
    let (mut json, mut sse) = (false, false);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        let refused = parts.any(|p| {
            let p = p.trim();
            p.strip_prefix("q=").and_then(|q| q.trim().parse::<f32>().ok()).is_some_and(|q| q <= 0.0)
        });
        if refused {
            continue;
        }
        match media.as_str() {
            "*/*" => {
                json = true;
                sse = true;
            }
            "application/json" | "application/*" => json = true,
            "text/event-stream" | "text/*" => sse = true,
            _ => {}
        }
    }
    if json {
        Some(false)
    } else if sse {
        Some(true)
    } else {
        None
    }
}

fn error_response(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

/// One JSON-RPC response as it is sent: its JSON text, and its error
/// code if it is an error.
struct Response {
    json: JsonPieces,
    error: Option<i64>,
}

impl Response {
    fn error(id: Value, code: i64, message: &str) -> Response {
        Response { json: JsonPieces::one(error_response(id, code, message).to_string()), error: Some(code) }
    }

    /// A result given as JSON text, which goes in as it is.
    fn result(id: &Value, result: JsonPieces) -> Response {
        Response { json: result.between(format!("{{\"id\":{id},\"jsonrpc\":\"2.0\",\"result\":"), "}"), error: None }
    }
}

/// Processes one message; `None` for notifications and responses.
async fn process(message: Value, backend: &dyn Backend) -> Option<Response> {
    let Value::Object(mut m) = message else {
        return Some(Response::error(Value::Null, INVALID_REQUEST, "invalid request: a message must be a JSON object"));
    };
    let id = m.remove("id");
    let id_ok = matches!(&id, Some(Value::String(_))) || id.as_ref().is_some_and(|v| v.is_i64() || v.is_u64());
    let echo = if id_ok { id.clone().unwrap_or(Value::Null) } else { Value::Null };
    if m.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Some(Response::error(echo, INVALID_REQUEST, "invalid request: jsonrpc must be \"2.0\""));
    }
    let method = match m.remove("method") {
        Some(Value::String(s)) => s,
        Some(_) => return Some(Response::error(echo, INVALID_REQUEST, "invalid request: method must be a string")),
        None => {
            // A response to a request of ours: this server sends none, so
            // there is nothing to match it with; accept it.
            if id_ok && (m.contains_key("result") || m.contains_key("error")) {
                return None;
            }
            return Some(Response::error(echo, INVALID_REQUEST, "invalid request: method is required"));
        }
    };
    // Members past jsonrpc, id, method and params would be ignored.
    if let Some(k) = m.keys().find(|k| !matches!(k.as_str(), "jsonrpc" | "params")) {
        return Some(Response::error(echo, INVALID_REQUEST, &format!("invalid request: unknown member {}", crate::core::api::quoted(k))));
    }
    let Some(id) = id else {
        // A notification: `notifications/initialized`, `notifications/cancelled`
        // and the rest need no action from a stateless server. A request
        // sent without its id would be dropped unanswered: refused.
        if !method.starts_with("notifications/") {
            return Some(Response::error(
                Value::Null,
                INVALID_REQUEST,
                &format!("invalid request: {} is a request and needs an id", crate::core::api::quoted(&method)),
            ));
        }
        return None;
    };
    if !id_ok {
        return Some(Response::error(Value::Null, INVALID_REQUEST, "invalid request: id must be a string or an integer"));
    }
    let params = match m.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(p)) => p,
        Some(_) => return Some(Response::error(id, INVALID_PARAMS, "invalid params: params must be an object")),
    };
    Some(match request(&method, params, backend).await {
        Ok(result) => Response::result(&id, result),
        Err((code, message)) => Response::error(id, code, &message),
    })
}

/// A request's result as JSON text, or its JSON-RPC error.
type RpcResult = std::result::Result<JsonPieces, (i64, String)>;

async fn request(method: &str, params: Map<String, Value>, backend: &dyn Backend) -> RpcResult {
    match method {
        "initialize" => initialize(&params).map(|v| JsonPieces::one(v.to_string())),
        "ping" => only(&params, &[]).map(|()| JsonPieces::one("{}".to_string())),
        "tools/list" => match params.get("cursor") {
            // One page holds every tool: this server gives no cursor.
            Some(c) => {
                Err((INVALID_PARAMS, format!("invalid params: cursor {} is not one this server gave (tools/list has one page)", api::quoted(&c.to_string()))))
            }
            None => only(&params, &[]).map(|()| JsonPieces::one(json!({ "tools": tools() }).to_string())),
        },
        "tools/call" => call_tool(params, backend).await,
        other => Err((METHOD_NOT_FOUND, format!("method not found: {}", api::quoted(other)))),
    }
}

/// Refuses a key of `params` other than `allowed` and the protocol's own
/// `_meta`: it would be ignored. (`initialize` takes what later protocol
/// versions add.)
fn only(params: &Map<String, Value>, allowed: &[&str]) -> std::result::Result<(), (i64, String)> {
    match params.keys().find(|k| k.as_str() != "_meta" && !allowed.contains(&k.as_str())) {
        Some(k) => Err((INVALID_PARAMS, format!("invalid params: unknown key {}", api::quoted(k)))),
        None => Ok(()),
    }
}

fn initialize(params: &Map<String, Value>) -> std::result::Result<Value, (i64, String)> {
    let asked = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| (INVALID_PARAMS, "invalid params: protocolVersion must be a string".to_string()))?;
    let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).copied().unwrap_or(LATEST_PROTOCOL_VERSION);
    Ok(json!({
        "protocolVersion": version,
        "capabilities": { "tools": { "listChanged": false } },
        "serverInfo": { "name": SERVER_NAME, "title": "Agent Memory", "version": env!("CARGO_PKG_VERSION") },
        "instructions": INSTRUCTIONS,
    }))
}

/// What the model is told about the server at initialization.
pub const INSTRUCTIONS: &str = "\
This server is your long-term memory of one user or project (a memory profile). It keeps facts \
(what is true now), events (what happened, with dates), instructions (how to work) and tasks \
(what is being worked on), across conversations.
- Before answering anything that may depend on earlier conversations (preferences, decisions, \
conventions, people, dates, open work), call `recall` with a specific natural-language question. \
An empty answer means nothing is stored on that topic.
- When the user states something worth keeping (a preference, a decision, a correction, an \
instruction, a dated event), call `remember` with one self-contained statement in your own words. \
To correct a memory, remember the corrected statement: it supersedes the old one.
- To let the service extract memories from a whole exchange, call `ingest` with the messages \
verbatim and one `sessionId` per conversation; repeated messages are ignored.
- When the user asks you to forget something, find its id with `recall` or `list`, then call `forget`.
- Use `list` to browse or audit memories, not to answer questions.
Never store secrets, credentials or passwords.";

/// A tool: its wire definition and the operation it runs.
struct Tool {
    name: &'static str,
    op: Op,
    title: &'static str,
    description: &'static str,
    /// Whether it only reads (`readOnlyHint`); a writing tool also says
    /// whether it destroys and whether a repeat is harmless.
    read_only: bool,
    destructive: bool,
    idempotent: bool,
}

/// The tools, each one operation of [`Op`]. Their schemas are generated
/// from the argument records below and the operations' result records
/// ([`generate_tools`]); `src/mcp.tools.json` holds what that gives.
const TOOLS: [Tool; 5] = [
    Tool {
        name: "recall",
        op: Op::Recall,
        title: "Recall memories",
        description: "Search long-term memory and get an answer built only from stored memories. \
    Call it before answering anything that may depend on earlier conversations: the user's preferences, \
    project decisions and conventions, people, past events and their dates, open tasks. Ask one specific \
    natural-language question (\"Which package manager does the user prefer?\"), not a list of keywords. \
    Returns `answer` (short; empty when nothing relevant is stored, which is not an error) and `candidates`: \
    the supporting memories, best first, each with its `id` (for `forget`), type, summary, session and score.",
        read_only: true,
        destructive: false,
        idempotent: true,
    },
    Tool {
        name: "remember",
        op: Op::Remember,
        title: "Remember",
        description: "Store one memory now, in your own words. Use it when the user states a preference \
    (\"The user prefers pnpm over npm\"), makes a decision, gives an instruction on how to work (\"Always run \
    cargo fmt before committing\"), mentions a dated event, or starts a task worth tracking. Write one \
    self-contained statement, with names and absolute dates instead of pronouns \
    and \"yesterday\". A newer memory on the same topic (or with the same `key`) supersedes the older one, \
    so to correct a memory, remember the corrected statement. Never store secrets or credentials. \
    Returns the stored memory record, with its `id` and the id it `supersedes`, if any.",
        read_only: false,
        destructive: false,
        idempotent: false,
    },
    Tool {
        name: "forget",
        op: Op::Forget,
        title: "Forget a memory",
        description: "Mark one memory forgotten so recall and list (by default) no longer return it. Use it \
    when the user asks you to forget something, or a memory is simply wrong. Takes the memory's `id` from a \
    recall or list result. Returns the memory record with status \"forgotten\". To replace a memory with a \
    corrected one, call remember instead: the new memory supersedes the old.",
        read_only: false,
        destructive: true,
        idempotent: true,
    },
    Tool {
        name: "list",
        op: Op::List,
        title: "List memories",
        description: "Browse stored memories, newest first, optionally filtered by type, status and session. \
    Use it to review or audit memory (\"what do you know about me?\", \"which tasks are open?\") or to find an id \
    to forget; to answer a question, use recall. Shows active memories unless `status` says otherwise. \
    Returns `memories` (full records) and, when more remain, a `cursor`: call list again with it for the next page.",
        read_only: true,
        destructive: false,
        idempotent: true,
    },
    Tool {
        name: "ingest",
        op: Op::Ingest,
        title: "Ingest a conversation",
        description: "Send conversation messages so the service extracts memories from them itself (facts, \
    events, instructions, tasks), resolving relative dates against the message timestamps and superseding \
    outdated memories. Use it after a meaningful exchange or at the end of a conversation, with the messages \
    verbatim and in order, and the same `sessionId` for every call about one conversation; sending a message \
    again is harmless. Up to 500 messages per call, 32 KB each. Returns the message ids, how many messages \
    were new, the memories created, how many older ones were superseded, and the extracted items dropped (with the reason).",
        read_only: false,
        destructive: false,
        idempotent: true,
    },
];

/// Each tool's name and the operation it runs.
pub fn tool_ops() -> Vec<(&'static str, Op)> {
    TOOLS.iter().map(|t| (t.name, t.op)).collect()
}

/// The tool definitions `tools/list` returns: `src/mcp.tools.json`, what
/// [`generate_tools`] gives (tests/contract.rs fails when they differ).
pub fn tools() -> Vec<Value> {
    // Built in; tests/contract.rs fails on a file that does not read (it
    // would list no tools) as on one that differs.
    serde_json::from_str(include_str!("../mcp.tools.json")).unwrap_or_default()
}

/// The recall tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RecallArgs {
    /// The question, in natural language: at most 1,024 bytes of UTF-8
    /// (`maxLength` counts characters, so it bounds the text only loosely).
    #[schemars(length(min = 1, max = crate::core::api::MAX_QUERY_BYTES))]
    pub query: String,
    /// ISO-8601 date that relative phrases in the query ("last week",
    /// "yesterday") refer to; defaults to today.
    #[serde(default)]
    pub reference_date: Option<String>,
    /// Most memories to return (default 10).
    #[serde(default)]
    #[schemars(range(min = 1, max = crate::core::api::MAX_RECALL_LIMIT))]
    pub limit: Option<u32>,
    /// Only memories passing this filter: fields (metadata keys, or type,
    /// sessionId, agentId, userId, createdAt, updatedAt, eventDate) mapped
    /// to a value or to {eq, ne, in, nin, gt, gte, lt, lte}; AND and OR
    /// take arrays of filters, NOT one. Example:
    /// {"AND": [{"agentId": "reviewer"}, {"priority": {"gte": 2}}]}.
    #[serde(default)]
    pub filter: Option<serde_json::Map<String, Value>>,
    /// Recall what was active at this ISO-8601 instant.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// The remember tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RememberArgs {
    /// The statement to remember (not blank; at most 32 KB).
    #[schemars(length(min = 1, max = crate::core::api::MAX_MESSAGE_BYTES))]
    pub content: String,
    /// The conversation it came from (at most 64 characters); without
    /// one, the memory belongs to no session.
    #[serde(default)]
    #[schemars(length(min = 1, max = crate::core::api::MAX_SESSION_ID_CHARS))]
    pub session_id: Option<String>,
    /// fact: true now; event: happened at a time; instruction: how to
    /// work; task: current work. Inferred when omitted.
    #[serde(default, rename = "type")]
    pub kind: Option<crate::core::model::MemoryType>,
    /// Stable topic key in stored form, lowercase words joined by "_" and
    /// segments by ".", such as "user.package_manager"; a later memory
    /// with the same key replaces this one. Inferred when omitted.
    #[serde(default)]
    #[schemars(length(min = 1, max = crate::core::api::MAX_KEY_CHARS))]
    pub key: Option<String>,
    /// Flat metadata to attach: string keys to strings, numbers or
    /// booleans (agentId and userId are strings).
    #[serde(default)]
    pub metadata: Option<crate::core::model::Metadata>,
}

/// The forget tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForgetArgs {
    /// The memory's id, as remember, list or recall gave it (a ULID; 32
    /// hexadecimal characters for a memory made before ULIDs).
    pub id: String,
}

/// The list tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListArgs {
    /// Only memories of this type.
    #[serde(default, rename = "type")]
    pub kind: Option<crate::core::model::MemoryType>,
    /// Only memories in this state (default "active"; "all" for every
    /// state).
    #[serde(default)]
    pub status: Option<crate::core::api::ListStatus>,
    /// Only memories from this conversation.
    #[serde(default)]
    #[schemars(length(min = 1, max = crate::core::api::MAX_SESSION_ID_CHARS))]
    pub session_id: Option<String>,
    /// Page size (default 20).
    #[serde(default)]
    #[schemars(range(min = 1, max = crate::core::api::MAX_PAGE_SIZE))]
    pub limit: Option<u32>,
    /// The cursor a previous list call returned.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Only memories passing this filter (as for recall).
    #[serde(default)]
    pub filter: Option<serde_json::Map<String, Value>>,
    /// What was active at this ISO-8601 instant.
    #[serde(default)]
    pub as_of: Option<String>,
}

/// The ingest tool's arguments.
#[derive(serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IngestArgs {
    /// The messages, verbatim and in order.
    #[schemars(length(min = 1, max = crate::core::api::MAX_MESSAGES_PER_INGEST))]
    pub messages: Vec<crate::core::model::MessageInput>,
    /// Names the conversation (at most 64 characters); reuse it for every
    /// call about the same conversation.
    #[schemars(length(min = 1, max = crate::core::api::MAX_SESSION_ID_CHARS))]
    pub session_id: String,
    /// Flat metadata attached to every memory extracted from these
    /// messages, and to the messages (flat, as for remember).
    #[serde(default)]
    pub metadata: Option<crate::core::model::Metadata>,
}

/// Whether `args` fit the arguments record of tool `name`: the typed parse
/// is the check (names, types, required fields, no unknown fields); the
/// operation checks the values. serde's message is given with the
/// caller's input in it quoted and cut ([`crate::core::error::serde_message`]).
fn decode_args(name: &str, args: &Value) -> std::result::Result<(), String> {
    fn fits<T: serde::de::DeserializeOwned>(args: &Value) -> std::result::Result<(), String> {
        T::deserialize(args).map(|_| ()).map_err(|e| crate::core::error::serde_message(&e))
    }
    match name {
        "recall" => fits::<RecallArgs>(args),
        "remember" => fits::<RememberArgs>(args),
        "forget" => fits::<ForgetArgs>(args),
        "list" => fits::<ListArgs>(args),
        "ingest" => fits::<IngestArgs>(args),
        other => Err(format!("no arguments record for tool {other}")),
    }
}

/// The tool definitions, generated: each tool's prose and hints from
/// [`TOOLS`], its `inputSchema` from its arguments record and its
/// `outputSchema` from its operation's result record (nothing required at
/// the top, and an `error` beside, so that an `isError` result's
/// `{ error }` conforms too). Native code only (tests/contract.rs).
pub fn generate_tools() -> Vec<Value> {
    use crate::core::model::{IngestReport, Memory, MemoryList};
    use crate::core::recall::RecallResponse;
    use schemars::{generate::SchemaSettings, JsonSchema};
    fn schema<T: JsonSchema>(output: bool) -> Value {
        let settings = SchemaSettings::draft2020_12();
        let settings = if output { settings.for_serialize() } else { settings.for_deserialize() };
        let mut v = settings.into_generator().into_root_schema_for::<T>().to_value();
        if let Some(obj) = v.as_object_mut() {
            obj.remove("$schema");
            obj.remove("title");
            if output {
                obj.remove("required");
                if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
                    props.insert("error".into(), error_schema());
                }
            }
        }
        plain(&mut v);
        v
    }
    TOOLS
        .iter()
        .map(|t| {
            let (input, output) = match t.name {
                "recall" => (schema::<RecallArgs>(false), schema::<RecallResponse>(true)),
                "remember" => (schema::<RememberArgs>(false), schema::<Memory>(true)),
                "forget" => (schema::<ForgetArgs>(false), schema::<Memory>(true)),
                "list" => (schema::<ListArgs>(false), schema::<MemoryList>(true)),
                _ => (schema::<IngestArgs>(false), schema::<IngestReport>(true)),
            };
            let annotations = if t.read_only {
                json!({ "title": t.title, "readOnlyHint": true, "openWorldHint": false })
            } else {
                json!({
                    "title": t.title,
                    "readOnlyHint": false,
                    "destructiveHint": t.destructive,
                    "idempotentHint": t.idempotent,
                    "openWorldHint": false
                })
            };
            json!({
                "name": t.name,
                "title": t.title,
                "description": t.description,
                "inputSchema": input,
                "outputSchema": output,
                "annotations": annotations,
            })
        })
        .collect()
}

/// What MCP clients' validators read plainly: number formats (`uint`,
/// `int64`) they may not know go, and a string enum whose cases carry
/// descriptions (`oneOf` of `const`s) becomes an `enum`.
fn plain(v: &mut Value) {
    match v {
        Value::Object(obj) => {
            obj.remove("format");
            let consts: Option<Vec<Value>> =
                obj.get("oneOf").and_then(Value::as_array).and_then(|cases| cases.iter().map(|c| c.get("const").cloned()).collect());
            if let Some(consts) = consts {
                obj.remove("oneOf");
                obj.insert("type".into(), json!("string"));
                obj.insert("enum".into(), Value::Array(consts));
            }
            obj.values_mut().for_each(plain);
        }
        Value::Array(a) => a.iter_mut().for_each(plain),
        _ => {}
    }
}

/// `{ error: { code, status, message } }`, present on `isError` results.
fn error_schema() -> Value {
    json!({
        "type": "object",
        "description": "Present only when isError is true.",
        "properties": {
            "code": { "type": "integer" },
            "status": { "type": "integer" },
            "message": { "type": "string" }
        }
    })
}

async fn call_tool(mut params: Map<String, Value>, backend: &dyn Backend) -> RpcResult {
    let name = match params.remove("name") {
        Some(Value::String(s)) => s,
        _ => return Err((INVALID_PARAMS, "invalid params: name must be a string".into())),
    };
    let tool = TOOLS.iter().find(|t| t.name == name).ok_or_else(|| {
        let names: Vec<&str> = TOOLS.iter().map(|t| t.name).collect();
        (INVALID_PARAMS, format!("unknown tool: {} (tools: {})", api::quoted(&name), names.join(", ")))
    })?;
    let mut args = match params.remove("arguments") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(a)) => a,
        Some(_) => return Err((INVALID_PARAMS, "invalid params: arguments must be an object".into())),
    };
    // `_meta` is the protocol's own; any other key would be ignored.
    if let Some(k) = params.keys().find(|k| k.as_str() != "_meta") {
        return Err((INVALID_PARAMS, format!("invalid params: unknown key {} (tools/call takes name, arguments and _meta)", api::quoted(k))));
    }
    // An optional argument sent as null means "not given".
    args.retain(|_, v| !v.is_null());
    let args = Value::Object(args);
    decode_args(tool.name, &args).map_err(|e| (INVALID_PARAMS, format!("invalid arguments for tool {}: {e}", tool.name)))?;
    let done = backend.call(tool.op.name(), args).await.and_then(|result| tool_result(tool.name, result));
    Ok(done.unwrap_or_else(|e| JsonPieces::one(tool_error(&e).to_string())))
}

/// A tool's result for the model: the text rendered from `result` (the
/// operation's JSON text), and `result` itself, as it is, for
/// `structuredContent`. No JSON tree of the whole result is made: an
/// ingest's can hold 16,000 memories, and a tree of them is several times
/// their text in the Wasm memory the isolate's profiles share.
fn tool_result(tool: &str, result: JsonPieces) -> Result<JsonPieces> {
    let text = render::render(tool, &result)?;
    let text = serde_json::to_string(&text).map_err(|e| Error::storage(format!("failed to write a tool's text: {e}")))?;
    let bare = result.first_byte() != Some(b'{');
    let head =
        format!("{{\"content\":[{{\"text\":{text},\"type\":\"text\"}}],\"isError\":false,\"structuredContent\":{}", if bare { "{\"result\":" } else { "" });
    Ok(result.between(head, if bare { "}}" } else { "}" }))
}

fn tool_error(e: &Error) -> Value {
    let text = format!("Error {} ({}): {}", e.code(), e.label(), e.message());
    json!({
        "content": [{ "type": "text", "text": text }],
        "structuredContent": { "error": { "code": e.code(), "status": e.status(), "message": e.message() } },
        "isError": true
    })
}

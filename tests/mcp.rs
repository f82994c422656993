//! Native tests of the MCP endpoint over a native profile: initialization
//! and version negotiation, the tool catalogue, the five tools end to end,
//! protocol errors versus `isError` results, batches, notifications, and
//! the HTTP framing (405, 415, 400 on a bad version header, SSE, 406).

mod support;

use agent_memory::core::mcp::{self, handle, handle_http, McpReply, McpRequest};
use serde_json::{json, Value};
use support::{block_on, database, with_profile, NativeSql, APRIL_15};

const ACCEPT: &str = "application/json, text/event-stream";

/// POSTs `body` (raw bytes) at time `now`.
fn post_raw(sql: &NativeSql, now: i64, body: &[u8]) -> McpReply {
    with_profile(sql, now, |p| block_on(handle(body, Some(ACCEPT), p)))
}

fn post(sql: &NativeSql, body: Value) -> McpReply {
    post_raw(sql, APRIL_15, body.to_string().as_bytes())
}

fn request(id: i64, method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params })
}

/// Runs a request that must succeed at the JSON-RPC level; returns `result`.
fn rpc(sql: &NativeSql, now: i64, method: &str, params: Value) -> Value {
    let reply = post_raw(sql, now, request(1, method, params).to_string().as_bytes());
    assert_eq!(reply.status, 200, "{}", reply.body_text());
    assert_eq!(reply.content_type, Some("application/json"));
    let msg = reply.message().expect("a JSON body");
    assert_eq!(msg["jsonrpc"], "2.0");
    assert_eq!(msg["id"], 1);
    assert!(msg.get("error").is_none(), "unexpected error: {msg}");
    msg["result"].clone()
}

/// Calls a tool; returns the `CallToolResult`.
fn call(sql: &NativeSql, now: i64, tool: &str, arguments: Value) -> Value {
    rpc(sql, now, "tools/call", json!({ "name": tool, "arguments": arguments }))
}

/// Calls a tool that must fail at the protocol level; returns the error.
fn call_error(sql: &NativeSql, tool: &str, arguments: Value) -> Value {
    let reply = post(sql, request(7, "tools/call", json!({ "name": tool, "arguments": arguments })));
    assert_eq!(reply.status, 200, "{}", reply.body_text());
    let msg = reply.message().unwrap();
    assert_eq!(msg["id"], 7);
    assert!(msg.get("result").is_none(), "expected an error: {msg}");
    msg["error"].clone()
}

fn text(result: &Value) -> &str {
    assert_eq!(result["content"][0]["type"], "text");
    result["content"][0]["text"].as_str().unwrap()
}

fn tool_definition(name: &str) -> Value {
    mcp::tools().into_iter().find(|t| t["name"] == name).unwrap()
}

/// A successful result: not an error, and its structured content reads
/// as the record the tool's output schema is generated from.
fn ok(tool: &str, result: Value) -> Value {
    assert_eq!(result["isError"], false, "{result}");
    let content = result["structuredContent"].clone();
    let read = match tool {
        "recall" => serde_json::from_value::<agent_memory::core::recall::RecallResponse>(content).map(drop),
        "remember" | "forget" => serde_json::from_value::<agent_memory::core::model::Memory>(content).map(drop),
        "list" => serde_json::from_value::<agent_memory::core::model::MemoryList>(content).map(drop),
        "ingest" => serde_json::from_value::<agent_memory::core::model::IngestReport>(content).map(drop),
        other => panic!("no record for tool {other}"),
    };
    read.unwrap_or_else(|e| panic!("{tool} output: {e}"));
    assert!(tool_definition(tool)["outputSchema"]["properties"].is_object());
    result
}

fn ids(memories: &Value) -> Vec<String> {
    memories.as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn test_initialize_negotiates_the_protocol_version() {
    let sql = database();
    for version in mcp::PROTOCOL_VERSIONS {
        let r = rpc(&sql, APRIL_15, "initialize", json!({ "protocolVersion": version, "capabilities": {}, "clientInfo": { "name": "t", "version": "1" } }));
        assert_eq!(r["protocolVersion"], version);
    }
    let r = rpc(&sql, APRIL_15, "initialize", json!({ "protocolVersion": "2099-01-01", "capabilities": {} }));
    assert_eq!(r["protocolVersion"], mcp::LATEST_PROTOCOL_VERSION);
    assert_eq!(r["protocolVersion"], "2025-06-18");
    assert_eq!(r["capabilities"], json!({ "tools": { "listChanged": false } }));
    assert_eq!(r["serverInfo"]["name"], "agent-memory");
    assert_eq!(r["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
    let instructions = r["instructions"].as_str().unwrap();
    for tool in ["recall", "remember", "forget", "list", "ingest"] {
        assert!(instructions.contains(tool), "instructions do not mention {tool}");
    }
}

#[test]
fn test_initialize_without_a_version_is_invalid_params() {
    let sql = database();
    let msg = post(&sql, request(1, "initialize", json!({ "capabilities": {} }))).message().unwrap();
    assert_eq!(msg["error"]["code"], mcp::INVALID_PARAMS);
}

#[test]
fn test_notifications_get_202_without_body() {
    let sql = database();
    for method in ["notifications/initialized", "notifications/cancelled", "notifications/whatever"] {
        let reply = post(&sql, json!({ "jsonrpc": "2.0", "method": method }));
        assert_eq!((reply.status, reply.body_text().as_str(), reply.content_type), (202, "", None), "{method}");
    }
    // A batch of notifications, and a client's response, are accepted too.
    let reply = post(
        &sql,
        json!([
            { "jsonrpc": "2.0", "method": "notifications/initialized" },
            { "jsonrpc": "2.0", "id": "s-1", "result": {} }
        ]),
    );
    assert_eq!((reply.status, reply.body_text().as_str()), (202, ""));
}

#[test]
fn test_ping_answers_an_empty_result() {
    let sql = database();
    assert_eq!(rpc(&sql, APRIL_15, "ping", Value::Null), json!({}));
    // `params` may be absent altogether; string ids are echoed.
    let msg = post(&sql, json!({ "jsonrpc": "2.0", "id": "abc", "method": "ping" })).message().unwrap();
    assert_eq!(msg, json!({ "jsonrpc": "2.0", "id": "abc", "result": {} }));
}

#[test]
fn test_tools_list_has_the_five_tools_with_schemas() {
    let sql = database();
    let r = rpc(&sql, APRIL_15, "tools/list", json!({}));
    let tools = r["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["recall", "remember", "forget", "list", "ingest"]);
    for t in tools {
        let name = t["name"].as_str().unwrap();
        assert!(t["description"].as_str().unwrap().len() > 100, "{name}: description too thin");
        let input = &t["inputSchema"];
        assert_eq!(input["type"], "object", "{name}");
        assert_eq!(input["additionalProperties"], false, "{name}");
        for required in input["required"].as_array().into_iter().flatten() {
            assert!(input["properties"].get(required.as_str().unwrap()).is_some(), "{name}: {required}");
        }
        assert_eq!(t["outputSchema"]["type"], "object", "{name}");
        assert!(t["annotations"].is_object(), "{name}");
    }
    let required = |name: &str| tools.iter().find(|t| t["name"] == name).unwrap()["inputSchema"]["required"].clone();
    assert_eq!(required("recall"), json!(["query"]));
    assert_eq!(required("remember"), json!(["content"]));
    assert_eq!(required("forget"), json!(["id"]));
    assert_eq!(required("ingest"), json!(["messages", "sessionId"]));
    assert!(required("list").is_null());
    assert_eq!(tools[0]["annotations"]["readOnlyHint"], true);
    assert_eq!(tools[2]["annotations"]["destructiveHint"], true);
}

#[test]
fn test_remember_recall_forget_round_trip() {
    let sql = database();
    let remembered =
        ok("remember", call(&sql, APRIL_15, "remember", json!({ "content": "The user prefers pnpm over npm for every project.", "sessionId": "setup" })));
    let memory = &remembered["structuredContent"];
    let id = memory["id"].as_str().unwrap().to_string();
    assert_eq!(memory["sessionId"], "setup");
    assert_eq!(memory["status"], "active");
    assert!(text(&remembered).contains(&id), "{}", text(&remembered));

    let found = ok("recall", call(&sql, APRIL_15 + 1000, "recall", json!({ "query": "Which package manager does the user prefer?" })));
    let candidates = &found["structuredContent"]["candidates"];
    assert!(ids(candidates).contains(&id), "{found}");
    assert_eq!(found["structuredContent"]["answer"], found["structuredContent"]["result"]);
    let rendered = text(&found);
    assert!(rendered.contains("1. [") && rendered.contains(&format!("id {id}")), "{rendered}");
    assert!(rendered.to_lowercase().contains("pnpm"), "{rendered}");

    let forgotten = ok("forget", call(&sql, APRIL_15 + 2000, "forget", json!({ "id": id })));
    assert_eq!(forgotten["structuredContent"]["status"], "forgotten");
    assert!(text(&forgotten).starts_with("Forgot"), "{}", text(&forgotten));

    let after = ok("recall", call(&sql, APRIL_15 + 3000, "recall", json!({ "query": "Which package manager does the user prefer?", "limit": 5 })));
    assert!(!ids(&after["structuredContent"]["candidates"]).contains(&id), "{after}");
}

#[test]
fn test_list_filters_pages_and_defaults_to_active() {
    let sql = database();
    let contents = [
        ("The user's favourite editor is Helix with its default keymap.", "fact"),
        ("Always run cargo fmt before committing any Rust change.", "instruction"),
        ("Migrate the billing service to the new queue this sprint.", "task"),
    ];
    let mut made = Vec::new();
    for (i, (content, kind)) in contents.iter().enumerate() {
        let r = ok("remember", call(&sql, APRIL_15 + i as i64 * 1000, "remember", json!({ "content": content, "type": kind, "sessionId": "s1" })));
        assert_eq!(r["structuredContent"]["type"], *kind);
        made.push(r["structuredContent"]["id"].as_str().unwrap().to_string());
    }
    let now = APRIL_15 + 10_000;

    // Newest first, two per page, then the rest by cursor.
    let page1 = ok("list", call(&sql, now, "list", json!({ "limit": 2 })));
    assert_eq!(ids(&page1["structuredContent"]["memories"]), [made[2].clone(), made[1].clone()]);
    let cursor = page1["structuredContent"]["cursor"].as_str().unwrap().to_string();
    assert!(text(&page1).contains(&cursor), "{}", text(&page1));
    assert!(text(&page1).contains("1. [task, active]"), "{}", text(&page1));
    let page2 = ok("list", call(&sql, now, "list", json!({ "limit": 2, "cursor": cursor })));
    assert_eq!(ids(&page2["structuredContent"]["memories"]), [made[0].clone()]);
    assert!(page2["structuredContent"].get("cursor").is_none());

    // Filters.
    let tasks = ok("list", call(&sql, now, "list", json!({ "type": "task" })));
    assert_eq!(ids(&tasks["structuredContent"]["memories"]), [made[2].clone()]);
    let other = ok("list", call(&sql, now, "list", json!({ "sessionId": "elsewhere" })));
    assert_eq!(text(&other), "No memories match.");

    // Forgotten memories leave the default listing, not the full one.
    ok("forget", call(&sql, now, "forget", json!({ "id": made[0] })));
    let active = ok("list", call(&sql, now, "list", json!({})));
    assert_eq!(ids(&active["structuredContent"]["memories"]).len(), 2);
    let all = ok("list", call(&sql, now, "list", json!({ "status": "all", "sessionId": null })));
    assert_eq!(ids(&all["structuredContent"]["memories"]).len(), 3);
    let gone = ok("list", call(&sql, now, "list", json!({ "status": "forgotten" })));
    assert_eq!(ids(&gone["structuredContent"]["memories"]), [made[0].clone()]);
}

#[test]
fn test_ingest_extracts_memories_that_recall_finds() {
    let sql = database();
    let messages = json!([
        { "role": "user", "content": "Set up the project with React and TypeScript." },
        { "role": "assistant", "content": "Done. Scaffolded a React + TS project targeting Workers." },
        { "role": "user", "content": "Use pnpm, not npm. And dark mode by default.", "timestamp": "2026-04-15T09:00:00Z" },
        { "role": "assistant", "content": "Got it -- pnpm and dark mode as default." }
    ]);
    let r = ok("ingest", call(&sql, APRIL_15, "ingest", json!({ "messages": messages, "sessionId": "setup" })));
    let report = &r["structuredContent"];
    assert_eq!(report["sessionId"], "setup");
    assert_eq!(report["messageIds"].as_array().unwrap().len(), 4);
    assert_eq!(report["messagesStored"], 4);
    assert!(report["memoriesStored"].as_u64().unwrap() >= 1, "{report}");
    let rendered = text(&r);
    assert!(rendered.starts_with("Ingested 4 messages into session setup (4 new)."), "{rendered}");
    assert!(rendered.contains("Created:\n1. ["), "{rendered}");

    // Sending the same messages again stores nothing new.
    let again = ok("ingest", call(&sql, APRIL_15 + 1000, "ingest", json!({ "messages": messages, "sessionId": "setup" })));
    assert_eq!(again["structuredContent"]["messagesStored"], 0);

    let found = ok("recall", call(&sql, APRIL_15 + 2000, "recall", json!({ "query": "Which package manager should be used?" })));
    assert!(found["structuredContent"]["count"].as_u64().unwrap() >= 1, "{found}");
}

#[test]
fn test_unknown_tool_is_a_protocol_error() {
    let sql = database();
    let e = call_error(&sql, "delete_everything", json!({}));
    assert_eq!(e["code"], mcp::INVALID_PARAMS);
    assert!(e["message"].as_str().unwrap().contains("unknown tool: \"delete_everything\""), "{e}");
    // No tool name at all.
    let msg = post(&sql, request(3, "tools/call", json!({ "arguments": {} }))).message().unwrap();
    assert_eq!(msg["error"]["code"], mcp::INVALID_PARAMS);
}

#[test]
fn test_arguments_breaking_the_input_schema_are_invalid_params() {
    let sql = database();
    // The shape: each tool's arguments record refuses what does not fit.
    let cases = [
        ("recall", json!({}), "missing field `query`"),
        ("recall", json!({ "query": 42 }), "invalid type: integer `42`, expected a string"),
        ("recall", json!({ "query": "q", "limit": "ten" }), "invalid type: string \"ten\""),
        ("recall", json!({ "query": "q", "explainPlease": true }), "unknown field \"explainPlease\""),
        ("remember", json!({ "content": "A long enough statement to store.", "type": "opinion" }), "unknown variant \"opinion\""),
        ("forget", json!({ "id": ["x"] }), "invalid type: sequence, expected a string"),
        ("list", json!({ "status": "deleted" }), "unknown variant \"deleted\""),
        ("ingest", json!({ "messages": [{ "role": "user" }], "sessionId": "s" }), "missing field `content`"),
        ("ingest", json!({ "messages": [{ "role": "user", "content": "hi" }] }), "missing field `sessionId`"),
    ];
    for (tool, args, expected) in cases {
        let e = call_error(&sql, tool, args.clone());
        assert_eq!(e["code"], mcp::INVALID_PARAMS, "{tool} {args}");
        let message = e["message"].as_str().unwrap();
        assert!(message.starts_with(&format!("invalid arguments for tool {tool}: ")) && message.contains(expected), "{tool} {args}: {e}");
    }
    // Values out of range fit the shape: the operation refuses them, as a
    // tool error the agent reads.
    for (tool, args) in [("recall", json!({ "query": "q", "limit": 0 })), ("ingest", json!({ "messages": [], "sessionId": "s" }))] {
        let r = call(&sql, APRIL_15, tool, args.clone());
        assert_eq!(r["isError"], true, "{tool} {args}: {r}");
        assert_eq!(r["structuredContent"]["error"]["code"], 10001, "{tool} {args}");
    }
    // `arguments` must be an object.
    let msg = post(&sql, request(4, "tools/call", json!({ "name": "list", "arguments": [1] }))).message().unwrap();
    assert_eq!(msg["error"]["code"], mcp::INVALID_PARAMS);
}

#[test]
fn test_operation_failures_are_is_error_results() {
    let sql = database();
    // The core's validation: nothing to remember.
    let r = call(&sql, APRIL_15, "remember", json!({ "content": "   " }));
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(r["structuredContent"]["error"]["code"], 10001);
    assert_eq!(r["structuredContent"]["error"]["status"], 400);
    assert!(text(&r).starts_with("Error 10001 (invalid input): content must not be blank"), "{}", text(&r));
    // Not found.
    let r = call(&sql, APRIL_15, "forget", json!({ "id": "0123456789abcdef0123456789abcdef" }));
    assert_eq!(r["isError"], true);
    assert_eq!(r["structuredContent"]["error"]["code"], 10004);
    assert!(text(&r).contains("not found"), "{}", text(&r));
    // A malformed id is the core's call too (ids are opaque: a well-formed
    // one nobody holds is a 404, one with other characters a 400).
    let r = call(&sql, APRIL_15, "forget", json!({ "id": "no such id" }));
    assert_eq!(r["structuredContent"]["error"]["code"], 10001);
    // Error results still conform to the output schema: nothing is
    // required at its top, and `error` is one of its properties.
    let schema = tool_definition("forget")["outputSchema"].clone();
    assert!(schema.get("required").is_none() && schema["properties"]["error"].is_object(), "{schema}");
    // An empty recall is a result, not an error.
    let r = ok("recall", call(&sql, APRIL_15, "recall", json!({ "query": "What is the user's favourite colour?" })));
    assert_eq!(r["structuredContent"]["count"], 0);
    assert_eq!(text(&r), "No stored memory matches this query.");
}

#[test]
fn test_invalid_json_is_a_parse_error() {
    let sql = database();
    for body in [&b"{not json"[..], b"", b"\xff\xfe"] {
        let reply = post_raw(&sql, APRIL_15, body);
        assert_eq!(reply.status, 400);
        let msg = reply.message().unwrap();
        assert_eq!(msg["error"]["code"], mcp::PARSE_ERROR);
        assert_eq!(msg["id"], Value::Null);
    }
}

#[test]
fn test_invalid_requests_are_refused() {
    let sql = database();
    let cases = [
        json!({ "id": 1, "method": "ping" }),
        json!({ "jsonrpc": "1.0", "id": 1, "method": "ping" }),
        json!({ "jsonrpc": "2.0", "id": 1, "method": 5 }),
        json!({ "jsonrpc": "2.0", "id": null, "method": "ping" }),
        json!({ "jsonrpc": "2.0", "id": 1.5, "method": "ping" }),
        json!({ "jsonrpc": "2.0", "id": 1 }),
        json!("ping"),
        json!([]),
    ];
    for body in cases {
        let reply = post(&sql, body.clone());
        assert_eq!(reply.status, 400, "{body}");
        assert_eq!(reply.message().unwrap()["error"]["code"], mcp::INVALID_REQUEST, "{body}");
    }
}

/// Caller text a protocol error names (a method, a tool, a `tools/call`
/// key, an argument's name or a value of the wrong type) is quoted cut to
/// 64 characters, however long it was sent.
#[test]
fn test_caller_text_in_protocol_errors_is_quoted_cut_to_64_characters() {
    let sql = database();
    let long = "x".repeat(100_000);
    let quoted = format!("\"{}…\"", "x".repeat(agent_memory::core::error::MAX_QUOTED_CHARS));
    let mut unknown_argument = json!({ "query": "q" });
    unknown_argument[&long] = json!(true);
    let mut unknown_key = json!({ "name": "list", "arguments": {} });
    unknown_key[&long] = json!(1);
    let errors = [
        ("method", post(&sql, request(1, &long, json!({}))).message().unwrap()["error"].clone()),
        ("tool", call_error(&sql, &long, json!({}))),
        ("tools/call key", post(&sql, request(2, "tools/call", unknown_key)).message().unwrap()["error"].clone()),
        ("argument", call_error(&sql, "recall", unknown_argument)),
        ("type", call_error(&sql, "remember", json!({ "content": "The deploy window is Tuesday at ten.", "type": long }))),
        ("wrong type", call_error(&sql, "recall", json!({ "query": "q", "limit": long }))),
    ];
    for (what, e) in errors {
        let message = e["message"].as_str().unwrap();
        assert!(message.contains(&quoted), "{what}: {}", message.chars().take(300).collect::<String>());
        assert!(message.len() < 1000, "{what}: {} bytes", message.len());
    }
    // A name holding serde's own words, a value holding quotes and a line
    // break: cut all the same, escaped.
    let mut tricky = json!({ "query": "q" });
    tricky[format!("a`, expected `b`{long}")] = json!(true);
    let message = call_error(&sql, "recall", tricky)["message"].as_str().unwrap().to_string();
    assert!(message.contains("unknown field \"a`, expected `b`xxx") && message.len() < 1000, "{}", message.chars().take(300).collect::<String>());
    let message = call_error(&sql, "recall", json!({ "query": "q", "limit": format!("\"\n{long}") }))["message"].as_str().unwrap().to_string();
    assert!(message.contains("string \"\\\"\\nxxx") && message.len() < 1000, "{}", message.chars().take(300).collect::<String>());
}

#[test]
fn test_unknown_method_is_method_not_found() {
    let sql = database();
    let reply = post(&sql, request(9, "resources/list", json!({})));
    assert_eq!(reply.status, 200);
    let msg = reply.message().unwrap();
    assert_eq!(msg["id"], 9);
    assert_eq!(msg["error"]["code"], mcp::METHOD_NOT_FOUND);
}

#[test]
fn test_batch_answers_each_request_in_order() {
    let sql = database();
    let reply = post(
        &sql,
        json!([
            request(1, "ping", json!({})),
            { "jsonrpc": "2.0", "method": "notifications/initialized" },
            request(2, "tools/list", json!({})),
            request(3, "no/such", json!({})),
            { "jsonrpc": "2.0", "id": 4 },
            request(5, "tools/call", json!({ "name": "list", "arguments": {} }))
        ]),
    );
    assert_eq!(reply.status, 200);
    let msgs = reply.message().unwrap();
    let msgs = msgs.as_array().unwrap();
    let got: Vec<Value> = msgs.iter().map(|m| m["id"].clone()).collect();
    assert_eq!(got, [json!(1), json!(2), json!(3), json!(4), json!(5)]);
    assert_eq!(msgs[0]["result"], json!({}));
    assert_eq!(msgs[1]["result"]["tools"].as_array().unwrap().len(), 5);
    assert_eq!(msgs[2]["error"]["code"], mcp::METHOD_NOT_FOUND);
    assert_eq!(msgs[3]["error"]["code"], mcp::INVALID_REQUEST);
    assert_eq!(msgs[4]["result"]["isError"], false);
}

/// A batch holds every reply until its last is made: once its replies
/// reach `MAX_BATCH_REPLY_BYTES`, each request left is answered with
/// `BATCH_REPLY_FULL`, its id echoed, and not run.
#[test]
fn test_a_batch_whose_replies_reach_their_limit_answers_the_rest_unrun() {
    let sql = database();
    // Ingested, a long statement is its own summary, which a list shows
    // (a remembered note's summary is its lead).
    for i in 0..40 {
        let messages = json!([{ "role": "user", "content": support::long_statement(i as u64) }]);
        call(&sql, APRIL_15 + i as i64, "ingest", json!({ "messages": messages, "sessionId": format!("s{i}") }));
    }
    let mut batch: Vec<Value> = (0..10).map(|i| request(i, "tools/call", json!({ "name": "list", "arguments": { "limit": 100 } }))).collect();
    batch.push(request(10, "tools/call", json!({ "name": "remember", "arguments": { "content": "The deploy key rotates every month." } })));
    batch.push(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let reply = post_raw(&sql, APRIL_15 + 100, Value::Array(batch).to_string().as_bytes());
    assert_eq!(reply.status, 200);
    let msgs = reply.message().unwrap();
    let msgs = msgs.as_array().unwrap();
    let ids: Vec<Value> = msgs.iter().map(|m| m["id"].clone()).collect();
    assert_eq!(ids, (0..11).map(|i| json!(i)).collect::<Vec<_>>(), "every request answered, in order");
    let ran = msgs.iter().take_while(|m| m.get("result").is_some()).count();
    assert!((1..10).contains(&ran), "some lists ran, not all: {ran}");
    for m in &msgs[ran..] {
        assert_eq!(m["error"]["code"], mcp::BATCH_REPLY_FULL, "{}", m);
    }
    let replies: usize = msgs[..ran].iter().map(|m| m.to_string().len()).sum();
    assert!(replies >= mcp::MAX_BATCH_REPLY_BYTES, "stopped only once the replies reached the limit: {replies}");
    let recalled = call(&sql, APRIL_15 + 200, "recall", json!({ "query": "When does the deploy key rotate?" }));
    assert_eq!(recalled["isError"], false, "{recalled}");
    assert!(!text(&recalled).contains("deploy key"), "the remember left unrun stored nothing: {}", text(&recalled));
}

fn http<'a>(method: &'a str, content_type: Option<&'a str>, accept: Option<&'a str>, version: Option<&'a str>, body: &'a [u8]) -> McpRequest<'a> {
    McpRequest { method, content_type, accept, protocol_version: version, body }
}

#[test]
fn test_streamable_http_takes_posts_of_utf8_json_at_a_supported_version_and_answers_json_without_a_session() {
    let sql = database();
    let ping = request(1, "ping", json!({})).to_string();
    let run = |req: McpRequest<'_>| with_profile(&sql, APRIL_15, |p| block_on(handle_http(&req, p)));

    // No server-initiated stream, no session to delete.
    for method in ["GET", "DELETE", "PUT"] {
        let reply = run(http(method, None, Some(SSE_ONLY), None, b""));
        assert_eq!(reply.status, 405, "{method}");
        assert_eq!(reply.header("allow"), Some("POST"));
    }
    let reply = run(http("POST", Some("text/plain"), Some(ACCEPT), None, ping.as_bytes()));
    assert_eq!(reply.status, 415);
    // JSON in another charset is not read as UTF-8, as REST refuses it too.
    let reply = run(http("POST", Some("application/json; charset=latin1"), Some(ACCEPT), None, ping.as_bytes()));
    assert_eq!(reply.status, 415);
    let reply = run(http("POST", Some("application/json"), Some(ACCEPT), Some("2023-01-01"), ping.as_bytes()));
    assert_eq!(reply.status, 400);
    assert!(reply.message().unwrap()["error"]["message"].as_str().unwrap().contains("2025-06-18"));

    // A supported version header, a charset parameter: answered as JSON, no session id.
    let reply = run(http("POST", Some("application/json; charset=utf-8"), Some(ACCEPT), Some("2025-06-18"), ping.as_bytes()));
    assert_eq!((reply.status, reply.header("content-type")), (200, Some("application/json")));
    assert_eq!(reply.header("mcp-session-id"), None);
    assert_eq!(reply.message().unwrap()["result"], json!({}));

    // No Accept header at all: JSON.
    let reply = run(http("POST", None, None, None, ping.as_bytes()));
    assert_eq!((reply.status, reply.content_type), (200, Some("application/json")));
}

const SSE_ONLY: &str = "text/event-stream";

#[test]
fn test_event_stream_only_clients_get_one_sse_event() {
    let sql = database();
    let body = request(1, "ping", json!({})).to_string();
    let reply = with_profile(&sql, APRIL_15, |p| block_on(handle(body.as_bytes(), Some(SSE_ONLY), p)));
    assert_eq!((reply.status, reply.content_type), (200, Some("text/event-stream")));
    assert_eq!(reply.body_text(), "event: message\ndata: {\"id\":1,\"jsonrpc\":\"2.0\",\"result\":{}}\n\n");
    assert_eq!(reply.message().unwrap()["result"], json!({}));
    // Notifications stay a bodiless 202.
    let note = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string();
    let reply = with_profile(&sql, APRIL_15, |p| block_on(handle(note.as_bytes(), Some(SSE_ONLY), p)));
    assert_eq!((reply.status, reply.body_text().as_str()), (202, ""));
}

#[test]
fn test_unacceptable_accept_is_406() {
    let sql = database();
    let body = request(1, "ping", json!({})).to_string();
    for accept in ["text/html", "application/json;q=0, text/html"] {
        let reply = with_profile(&sql, APRIL_15, |p| block_on(handle(body.as_bytes(), Some(accept), p)));
        assert_eq!(reply.status, 406, "{accept}");
    }
    let reply = with_profile(&sql, APRIL_15, |p| block_on(handle(body.as_bytes(), Some("*/*"), p)));
    assert_eq!((reply.status, reply.content_type), (200, Some("application/json")));
}

/// A key given twice is refused (as REST refuses it), never decided by
/// its last value; so is a `tools/call` parameter other than `name`,
/// `arguments` and `_meta`, which would be ignored.
#[test]
fn test_duplicate_keys_and_unknown_tool_call_params_are_refused() {
    let sql = database();
    let twice = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list","arguments":{"status":"forgotten","status":"active"}}}"#;
    let reply = post_raw(&sql, APRIL_15, twice);
    let msg = reply.message().expect("a JSON body");
    assert_eq!(msg["error"]["code"], -32700, "{msg}");
    assert!(msg["error"]["message"].as_str().unwrap().contains("status"), "{msg}");
    let misplaced = request(2, "tools/call", json!({"name": "list", "args": {"status": "forgotten"}}));
    let msg = post(&sql, misplaced).message().expect("a JSON body");
    assert_eq!(msg["error"]["code"], -32602, "{msg}");
    assert!(msg["error"]["message"].as_str().unwrap().contains("unknown key \"args\""), "{msg}");
    // `_meta` is the protocol's and stays accepted.
    let with_meta = request(3, "tools/call", json!({"name": "list", "arguments": {}, "_meta": {"progressToken": 1}}));
    let msg = post(&sql, with_meta).message().expect("a JSON body");
    assert!(msg.get("error").is_none(), "{msg}");
}

/// A request sent without its id, or a message with a member JSON-RPC
/// does not have, is refused (-32600) instead of being dropped unanswered
/// or having the member ignored; nothing is stored.
#[test]
fn test_a_request_without_an_id_or_with_an_unknown_member_is_refused_and_stores_nothing() {
    let sql = database();
    let remember = json!({ "name": "remember", "arguments": { "content": "The deploy window is Tuesday at ten." } });
    let no_id = post(&sql, json!({ "jsonrpc": "2.0", "method": "tools/call", "params": remember }));
    let msg = no_id.message().expect("a JSON body");
    assert_eq!((no_id.status, msg["error"]["code"].as_i64()), (400, Some(-32600)), "{msg}");
    assert!(msg["error"]["message"].as_str().unwrap().contains("needs an id"), "{msg}");
    let batch =
        post(&sql, json!([{ "jsonrpc": "2.0", "method": "tools/call", "params": remember }, { "jsonrpc": "2.0", "method": "notifications/initialized" }]));
    assert_eq!(batch.status, 200, "{}", batch.body_text());
    assert_eq!(batch.message().unwrap()[0]["error"]["code"], -32600);
    let extra = post(&sql, json!({ "jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": remember, "extra": { "sensitive": true } }));
    let msg = extra.message().expect("a JSON body");
    assert_eq!((msg["id"].as_i64(), msg["error"]["code"].as_i64()), (Some(7), Some(-32600)), "{msg}");
    assert!(msg["error"]["message"].as_str().unwrap().contains("\"extra\""), "{msg}");
    with_profile(&sql, APRIL_15, |p| assert_eq!(p.stats().unwrap().memories, 0, "nothing stored"));
    // The same call with its id is answered.
    let ok = post(&sql, json!({ "jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": remember }));
    assert!(ok.message().unwrap().get("error").is_none(), "{}", ok.body_text());
}

#[test]
fn test_a_memory_remembered_without_a_session_is_told_as_in_no_session() {
    let sql = database();
    let without = call(&sql, APRIL_15, "remember", json!({ "content": "The linter is ruff." }));
    assert!(text(&without).contains(" in no session, status active"), "{}", text(&without));
    let with = call(&sql, APRIL_15, "remember", json!({ "content": "The formatter is black.", "sessionId": "s1" }));
    assert!(text(&with).contains(" in session s1, status active"), "{}", text(&with));
    // A list says so too, not "session ,".
    let reply = call(&sql, APRIL_15, "list", json!({}));
    let listed = text(&reply);
    assert!(listed.contains(", no session, created") && listed.contains(", session s1, created"), "{listed}");
    assert!(!listed.contains("session ,"), "{listed}");
}

/// The endpoint reads no query string: `…?dryRun=1` is refused (400, as
/// REST refuses one on a route that reads none), never ignored.
#[test]
fn test_a_query_string_on_the_mcp_endpoint_is_refused_not_ignored() {
    use agent_memory::core::rest::{route, Incoming, Route};
    let at = |query| route(&Incoming { method: "POST", path: "/mcp/namespaces/t/profiles/p", query, content_type: Some("application/json"), body: b"{}" });
    assert_eq!(at("").unwrap(), Route::Mcp { namespace: "t".into(), profile: "p".into() });
    let e = at("dryRun=1").unwrap_err();
    assert_eq!((e.status(), e.code()), (400, 10001), "{e}");
    assert!(e.message().contains("takes no query parameters; got \"dryRun\""), "{e}");
    for query in ["x", "a=1&b=2", "%zz"] {
        assert!(at(query).unwrap_err().is_invalid(), "{query}");
    }
}

/// A batch is read as one body: its calls together may take what a body
/// may as a tree (core::json::MAX_JSON_TREE_BYTES). Twenty ingests of 500
/// messages are read; a hundred are refused as one body with too many
/// values, never read into memory whole.
#[test]
fn test_a_batch_of_large_calls_is_read_up_to_what_a_body_may_take_as_a_tree() {
    let batch = |calls: usize| {
        let call = |id: usize| {
            let messages: Vec<Value> = (0..500).map(|i| json!({ "role": "user", "content": format!("Note {i} of call {id}.") })).collect();
            json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": { "name": "ingest", "arguments": { "messages": messages, "sessionId": format!("s{id}") } } })
        };
        Value::Array((0..calls).map(call).collect()).to_string()
    };
    let accept = Some("application/json, text/event-stream");
    assert!(mcp::read(batch(20).as_bytes(), accept).is_ok(), "twenty ingests of 500 messages");
    let Err(refused) = mcp::read(batch(mcp::MAX_BATCH).as_bytes(), accept) else { panic!("a hundred ingests of 500 messages were read") };
    assert_eq!(refused.status, 400);
    assert!(refused.body_text().contains("too many values"), "{}", refused.body_text());
}

/// `ping` and `tools/list` take no key but the protocol's `_meta` (and a
/// cursor tools/list never gave is refused): a key they would ignore is
/// an invalid-params error, as `tools/call` refuses one.
#[test]
fn test_ping_and_tools_list_refuse_keys_they_would_ignore() {
    let sql = database();
    assert_eq!(rpc(&sql, APRIL_15, "ping", json!({ "_meta": { "progressToken": 1 } })), json!({}));
    for (method, params) in [("ping", json!({ "junk": 1 })), ("tools/list", json!({ "cursor": "zzz" })), ("tools/list", json!({ "page": 2 }))] {
        let msg = post(&sql, request(1, method, params.clone())).message().unwrap();
        assert_eq!(msg["error"]["code"], -32602, "{method} {params}: {msg}");
    }
}

/// An ingest's text lists at most 100 created memories and says how many
/// more the structured result holds; the structured result lists all.
#[test]
fn test_an_ingests_text_lists_a_bounded_part_of_what_it_created() {
    let sql = database();
    let cities = ["Lisbon", "Porto", "Madrid", "Seville", "Lyon", "Turin", "Bergen", "Ghent", "Krakow", "Tallinn", "Riga", "Vilnius"];
    let messages: Vec<Value> = (0..150)
        .map(|i| json!({ "role": "user", "content": format!("My colleague Person{i} moved to {} in {} and works on the Project{i} launch.", cities[i % cities.len()], 1990 + i) }))
        .collect();
    let r = ok("ingest", call(&sql, APRIL_15, "ingest", json!({ "messages": messages, "sessionId": "many" })));
    let created = r["structuredContent"]["memories"].as_array().unwrap().len();
    assert!(created > 100, "the fixture creates more than the text lists: {created}");
    let rendered = text(&r);
    assert!(rendered.contains("\n100. ["), "{rendered}");
    assert!(!rendered.contains("\n101. ["), "{rendered}");
    assert!(rendered.contains(&format!("... and {} more (the structured result lists all {created}).", created - 100)), "{rendered}");
}

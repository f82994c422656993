//! The served OpenAPI document is generated: its shell
//! (`src/openapi.shell.json`: paths, parameters, the envelope, prose) and
//! the schemas `schemars` derives from the Rust records
//! (`core::contract`). `UPDATE_CONTRACTS=1 cargo test --test contract`
//! writes `src/openapi.json`; without it, any difference fails.

use agent_memory::core::contract;
use serde_json::Value;
use std::path::Path;

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every `$ref` in `v`.
fn refs<'v>(v: &'v Value, out: &mut Vec<&'v str>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match (k.as_str(), x) {
                    ("$ref", Value::String(s)) => out.push(s),
                    _ => refs(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| refs(x, out)),
        _ => {}
    }
}

#[test]
fn test_the_served_openapi_document_is_what_the_types_generate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let generated = contract::openapi(&read(&root.join("openapi.shell.json")));
    let served_path = root.join("openapi.json");
    if std::env::var_os("UPDATE_CONTRACTS").is_some() {
        std::fs::write(&served_path, serde_json::to_string_pretty(&generated).unwrap() + "\n").unwrap();
    }
    let served = read(&served_path);
    assert!(
        served == generated,
        "src/openapi.json differs from what the Rust records generate: run `UPDATE_CONTRACTS=1 cargo test --test contract` and review the diff"
    );
    // Every reference resolves.
    let mut found = Vec::new();
    refs(&served, &mut found);
    assert!(found.len() > 50, "{} references", found.len());
    for r in found {
        let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("an external reference: {r}"));
        assert!(served.pointer(pointer).is_some(), "{r} resolves to nothing");
    }
}

#[test]
fn test_the_records_schemas_carry_their_limits_and_named_strings() {
    let s = contract::schemas();
    let recall = &s["RecallRequest"];
    assert_eq!(recall["properties"]["query"]["maxLength"], agent_memory::core::api::MAX_QUERY_BYTES);
    assert_eq!(recall["properties"]["limit"]["maximum"], agent_memory::core::api::MAX_RECALL_LIMIT);
    assert_eq!(recall["additionalProperties"], false, "requests refuse unknown fields");
    assert_eq!(s["Memory"]["properties"]["id"]["$ref"], "#/components/schemas/Id");
    assert_eq!(s["MemoryType"]["enum"], serde_json::json!(["fact", "event", "instruction", "task"]));
    assert!(s.contains_key("RecallResult") && s.contains_key("ExplanationNode"));
    // The named strings' limits are the validators'.
    assert_eq!(s["Name"]["maxLength"], agent_memory::core::api::MAX_NAME_CHARS);
    assert_eq!(s["SessionId"]["maxLength"], agent_memory::core::api::MAX_SESSION_ID_CHARS);
    assert_eq!(s["ProfileName"]["maxLength"], agent_memory::core::api::MAX_PROFILE_NAME_CHARS);
    assert_eq!(s["Id"]["maxLength"], agent_memory::core::api::MAX_ID_CHARS);
    // The namespace records and the list's entries are documented too.
    assert_eq!(s["Namespace"]["properties"]["name"]["$ref"], "#/components/schemas/Name");
    assert_eq!(s["MemoryList"]["properties"]["memories"]["items"]["$ref"], "#/components/schemas/MemoryEntry");
    assert!(s["MemoryEntry"]["properties"].get("content").is_none(), "list entries carry no content");
}

#[test]
fn test_the_mcp_tool_definitions_are_what_the_types_generate() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/mcp.tools.json");
    let generated = Value::Array(agent_memory::core::mcp::generate_tools());
    if std::env::var_os("UPDATE_CONTRACTS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&generated).unwrap() + "\n").unwrap();
    }
    assert!(
        read(&path) == generated,
        "src/mcp.tools.json differs from what the tools' records generate: run `UPDATE_CONTRACTS=1 cargo test --test contract` and review the diff"
    );
    let tools = generated.as_array().unwrap();
    assert_eq!(tools.len(), 5);
    let recall = &tools[0];
    assert_eq!(recall["inputSchema"]["required"], serde_json::json!(["query"]));
    assert_eq!(recall["inputSchema"]["additionalProperties"], false);
    assert_eq!(recall["inputSchema"]["properties"]["limit"]["maximum"], 100);
    let ingest = tools.iter().find(|t| t["name"] == "ingest").unwrap();
    assert_eq!(ingest["inputSchema"]["required"], serde_json::json!(["messages", "sessionId"]));
    assert!(!serde_json::to_string(&generated).unwrap().contains("\"format\""), "no number formats a client may not know");
}

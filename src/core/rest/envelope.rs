//! The response envelope, `{success, errors, messages, result,
//! result_info?}`, written around a result that is already JSON text: the
//! result is moved into it, or streamed between its two ends, never parsed
//! and written again where the envelope reads nothing of it.

use super::auth::Grant;
use super::call::{Dialect, ProfileCall};
use crate::core::catalog::CatalogCall;
use crate::core::error::{Error, Result};
use crate::core::op::Op;
use serde_json::{json, Map, Value};

/// How long a caller refused as busy should wait before it retries: about
/// one large ingest's run.
pub const BUSY_RETRY_AFTER_SECONDS: u32 = 5;

/// The `Retry-After` of an error's response, if it has one (a busy
/// refusal).
pub fn retry_after_seconds(e: &Error) -> Option<u32> {
    e.is_busy().then_some(BUSY_RETRY_AFTER_SECONDS)
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
/// A page of namespaces was read for `grant` ([`scope_catalog`](super::scope_catalog)); one
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

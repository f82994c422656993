//! The contracts, generated from the records' types: the schemas of the
//! OpenAPI document (`src/openapi.json`, served at `/openapi.json`) are
//! what `schemars` derives from the request and response records, their
//! doc comments and their `#[schemars]` limits. The rest of the document
//! (paths, parameters, the envelope, error responses, prose) is
//! `src/openapi.shell.json`; [`openapi`] puts the two together, and
//! `tests/contract.rs` fails when `src/openapi.json` is not exactly that
//! (`UPDATE_CONTRACTS=1 cargo test --test contract` writes it).
//!
//! What it does not do: run in the Worker. The Worker serves the
//! committed document as it is; only native code (the test) calls this.

use crate::core::api::{IngestRequest, ListRequest, RecallRequest, RememberRequest, SummaryRequest};
use crate::core::catalog::{Namespace, ProfileEntry};
use crate::core::model::{
    DeleteReport, IngestReport, Memory, MemoryDetail, MemoryEntry, MemoryList, Message, ProfileDeleteReport, ProfileRestoreReport, SessionDeleteReport, Stats,
    Summary,
};
use crate::core::portable::ImportReport;
use crate::core::recall::fuse::{Channel, Contribution, ExplanationNode};
use crate::core::recall::RecallResponse;
use crate::core::resident::IsolateMemory;
use schemars::generate::SchemaSettings;
use schemars::SchemaGenerator;
use serde_json::{Map, Value};

/// Where the document keeps its schemas (a JSON pointer).
const SCHEMAS: &str = "/components/schemas";

fn generator(settings: SchemaSettings) -> SchemaGenerator {
    let mut settings = settings;
    settings.definitions_path = SCHEMAS.into();
    settings.into_generator()
}

/// The schemas of every record the API reads or writes, by name: requests
/// as they are read (deserialized), responses as they are written.
pub fn schemas() -> Map<String, Value> {
    let mut requests = generator(SchemaSettings::draft2020_12().for_deserialize());
    requests.subschema_for::<IngestRequest>();
    requests.subschema_for::<RememberRequest>();
    requests.subschema_for::<RecallRequest>();
    requests.subschema_for::<ListRequest>();
    requests.subschema_for::<SummaryRequest>();
    requests.subschema_for::<crate::core::api::ConsolidateRequest>();
    // Named in paths (namespace and profile), held by no request record.
    requests.subschema_for::<crate::core::wire::Name>();
    requests.subschema_for::<crate::core::wire::ProfileName>();
    let mut responses = generator(SchemaSettings::draft2020_12().for_serialize());
    responses.subschema_for::<IngestReport>();
    responses.subschema_for::<Memory>();
    responses.subschema_for::<MemoryDetail>();
    responses.subschema_for::<Message>();
    responses.subschema_for::<MemoryList>();
    responses.subschema_for::<MemoryEntry>();
    responses.subschema_for::<RecallResponse>();
    responses.subschema_for::<Contribution>();
    responses.subschema_for::<ExplanationNode>();
    responses.subschema_for::<Channel>();
    responses.subschema_for::<Stats>();
    responses.subschema_for::<IsolateMemory>();
    responses.subschema_for::<Summary>();
    responses.subschema_for::<DeleteReport>();
    responses.subschema_for::<SessionDeleteReport>();
    responses.subschema_for::<ProfileDeleteReport>();
    responses.subschema_for::<ProfileRestoreReport>();
    responses.subschema_for::<ImportReport>();
    responses.subschema_for::<Namespace>();
    responses.subschema_for::<ProfileEntry>();
    responses.subschema_for::<crate::core::model::ConsolidationReport>();
    let mut out = requests.take_definitions(true);
    for (name, schema) in responses.take_definitions(true) {
        // A record both read and written (an enum) is one schema.
        out.entry(name).or_insert(schema);
    }
    for schema in out.values_mut() {
        plain_enum(schema);
    }
    out
}

/// A string enum whose cases carry doc comments comes out of `schemars`
/// as `oneOf` one `const` per case: written instead as `enum` (what
/// clients and the console read), each case's description folded into
/// the schema's.
fn plain_enum(schema: &mut Value) {
    let Some(cases) = schema.get("oneOf").and_then(Value::as_array) else { return };
    let consts: Option<Vec<(Value, String)>> =
        cases.iter().map(|c| Some((c.get("const")?.clone(), c.get("description").and_then(Value::as_str).unwrap_or("").to_string()))).collect();
    let Some(consts) = consts else { return };
    let Some(obj) = schema.as_object_mut() else { return };
    obj.remove("oneOf");
    let mut description = obj.get("description").and_then(Value::as_str).unwrap_or("").to_string();
    for (value, about) in consts.iter().filter(|(_, about)| !about.is_empty()) {
        description.push_str(&format!("\n- `{}`: {about}", value.as_str().unwrap_or("")));
    }
    if !description.is_empty() {
        obj.insert("description".into(), Value::String(description.trim_start().to_string()));
    }
    obj.insert("type".into(), Value::String("string".into()));
    obj.insert("enum".into(), Value::Array(consts.into_iter().map(|(v, _)| v).collect()));
}

/// The OpenAPI document: `shell` (everything but the records' schemas)
/// with the generated schemas added to its own (the envelope's).
pub fn openapi(shell: &Value) -> Value {
    let mut doc = shell.clone();
    if let Some(own) = doc.pointer_mut(SCHEMAS).and_then(Value::as_object_mut) {
        for (name, schema) in schemas() {
            own.insert(name, schema);
        }
    }
    doc
}

//! Keeps the Rust types of `src/core`, the WIT package in `wit/` and the
//! OpenAPI document `src/openapi.json` in agreement.
//!
//! How: each Rust record is built fully populated (every `Option` is
//! `Some`, every list non-empty) and serialized with serde_json; its
//! top-level JSON keys must be exactly the fields of the WIT record with the
//! same meaning, converted from kebab-case to camelCase (`source-message-ids`
//! is `sourceMessageIds`; a `%`-escaped WIT name such as `%type` or
//! `%result` is the name without `%`). The same record built bare (every
//! `Option` `None`, a memory's session empty) must leave out exactly the
//! WIT `option<...>` fields, but for those documented as written as `null`
//! (a memory's `session-id`): those it must write, as `null`. A response
//! writes `null` nowhere else.
//! Values are checked recursively against the WIT types (strings, numbers,
//! lists, nested records, enum cases), so a renamed or retyped field on
//! either side fails a test. The one documented exception: a WIT `list<...>`
//! field whose doc comment says "Left out of the JSON object when empty"
//! may be absent (serde's `skip_serializing_if = "Vec::is_empty"`).
//! The JSON forms the header of `wit/types.wit` documents are checked as
//! such: a `list<tuple<string, T>>` (metadata) is a JSON object whose
//! values are `T`s; a variant whose cases all carry a payload
//! (`metadata-value`) is the payload of one case, untagged; an alias is
//! its target, but for a `string` alias documented "as JSON text"
//! (`filter-json`): a JSON object, or a string holding one.
//!
//! The WIT package is read with `wit-parser` (the Bytecode Alliance's
//! parser, which also refuses an undefined or misused type), and flattened
//! here into records, enums, variants, resources, aliases and functions, each type
//! written as WIT text (`option<string>`, `result<memory,error>`).

mod support;

use agent_memory::core::api::{
    ConsolidateRequest, ExportRequest, IngestRequest, ListRequest, RecallOptions, RecallRequest, RememberRequest, ResponseLength, SummaryRequest, UpdateRequest,
};
use agent_memory::core::catalog::{CatalogCall, Namespace};
use agent_memory::core::error::Error;
use agent_memory::core::model::{
    ConsolidationRecord, ConsolidationReport, DeleteReport, Dropped, IngestReport, Memory, MemoryDetail, MemoryEntry, MemoryList, MemoryType, Message,
    MessageInput, MetaValue, Metadata, Stats, Status,
};
use agent_memory::core::portable::ImportReport;
use agent_memory::core::provider::QueryAnalysis;
use agent_memory::core::recall::fuse::{Channel, Contribution, ExplanationNode};
use agent_memory::core::recall::scope::{NarrowingReport, NarrowingWay, Sampled};
use agent_memory::core::recall::{ChannelReport, Explain, RecallCandidate, RecallResponse};
use agent_memory::core::rest::{self, Incoming, Route};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};
use support::{block_on, database, with_profile, APRIL_15, DAY};

// ---------------------------------------------------------------------------
// The WIT package, read with wit-parser.

#[derive(Clone, Debug)]
struct Field {
    /// Kebab-case, without the `%` escape.
    name: String,
    ty: String,
    doc: String,
}

#[derive(Clone, Debug)]
struct Func {
    name: String,
    params: Vec<(String, String)>,
    result: Option<String>,
    doc: String,
}

#[derive(Debug, Default)]
struct Wit {
    packages: BTreeSet<String>,
    interfaces: BTreeSet<String>,
    records: BTreeMap<String, Vec<Field>>,
    enums: BTreeMap<String, Vec<String>>,
    /// Cases, with the payload type in `ty` ("" when none).
    variants: BTreeMap<String, Vec<Field>>,
    resources: BTreeSet<String>,
    /// Type aliases (`type metadata = list<...>`), with the target in `ty`.
    aliases: BTreeMap<String, Field>,
    /// Functions by owner: `resource profile` or `interface service`.
    funcs: BTreeMap<String, Vec<Func>>,
}

/// A type as WIT text: a named type by its name, the others structurally
/// (`option<T>`, `list<T>`, `result<T,E>` with `_` for a missing side).
fn wit_type(resolve: &wit_parser::Resolve, ty: &wit_parser::Type) -> String {
    use wit_parser::Type;
    let id = match ty {
        Type::Id(id) => *id,
        other => {
            return match other {
                Type::Bool => "bool",
                Type::U8 => "u8",
                Type::U16 => "u16",
                Type::U32 => "u32",
                Type::U64 => "u64",
                Type::S8 => "s8",
                Type::S16 => "s16",
                Type::S32 => "s32",
                Type::S64 => "s64",
                Type::F32 => "f32",
                Type::F64 => "f64",
                Type::Char => "char",
                Type::String => "string",
                t => panic!("WIT type {t:?} is not used here"),
            }
            .to_string()
        }
    };
    let def = &resolve.types[id];
    match &def.name {
        Some(name) => name.clone(),
        None => structure(resolve, &def.kind),
    }
}

/// An unnamed type (or what a named alias stands for) as WIT text.
fn structure(resolve: &wit_parser::Resolve, kind: &wit_parser::TypeDefKind) -> String {
    use wit_parser::{Handle, Type, TypeDefKind};
    let side = |t: &Option<Type>| t.as_ref().map_or("_".to_string(), |t| wit_type(resolve, t));
    match kind {
        TypeDefKind::Option(t) => format!("option<{}>", wit_type(resolve, t)),
        TypeDefKind::List(t) => format!("list<{}>", wit_type(resolve, t)),
        TypeDefKind::Result(r) => format!("result<{},{}>", side(&r.ok), side(&r.err)),
        TypeDefKind::Tuple(t) => format!("tuple<{}>", t.types.iter().map(|t| wit_type(resolve, t)).collect::<Vec<_>>().join(",")),
        TypeDefKind::Handle(Handle::Own(r) | Handle::Borrow(r)) => resolve.types[*r].name.clone().unwrap_or_default(),
        TypeDefKind::Type(t) => wit_type(resolve, t),
        k => panic!("WIT type {k:?} is not used here"),
    }
}

fn docs(d: &wit_parser::Docs) -> String {
    d.contents.clone().unwrap_or_default()
}

/// The package in `wit/`, flattened.
fn read_wit() -> Wit {
    use wit_parser::{FunctionKind, TypeDefKind};
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("wit");
    let mut resolve = wit_parser::Resolve::default();
    let (package, _) = resolve.push_dir(&dir).unwrap_or_else(|e| panic!("wit/ does not resolve: {e:?}"));
    let mut wit = Wit::default();
    wit.packages.insert(resolve.packages[package].name.to_string());
    for (iface_id, iface) in resolve.interfaces.iter().filter(|(_, i)| i.package == Some(package)) {
        let Some(name) = &iface.name else { continue };
        wit.interfaces.insert(name.clone());
        for (type_name, id) in &iface.types {
            let def = &resolve.types[*id];
            // Types `use`d from another interface are that one's.
            if def.owner != wit_parser::TypeOwner::Interface(iface_id) {
                continue;
            }
            match &def.kind {
                TypeDefKind::Record(r) => {
                    let fields = r.fields.iter().map(|f| Field { name: f.name.clone(), ty: wit_type(&resolve, &f.ty), doc: docs(&f.docs) }).collect();
                    wit.records.insert(type_name.clone(), fields);
                }
                TypeDefKind::Enum(e) => {
                    wit.enums.insert(type_name.clone(), e.cases.iter().map(|c| c.name.clone()).collect());
                }
                TypeDefKind::Variant(v) => {
                    let cases = v
                        .cases
                        .iter()
                        .map(|c| Field { name: c.name.clone(), ty: c.ty.as_ref().map_or(String::new(), |t| wit_type(&resolve, t)), doc: docs(&c.docs) })
                        .collect();
                    wit.variants.insert(type_name.clone(), cases);
                }
                TypeDefKind::Resource => {
                    wit.resources.insert(type_name.clone());
                }
                // An alias of a primitive or of a structure; a `use` is an
                // alias of a named type, which its own interface defines.
                TypeDefKind::Type(wit_parser::Type::Id(_)) => {}
                TypeDefKind::Type(_) | TypeDefKind::List(_) | TypeDefKind::Option(_) | TypeDefKind::Tuple(_) | TypeDefKind::Result(_) => {
                    let target = structure(&resolve, &def.kind);
                    wit.aliases.insert(type_name.clone(), Field { name: type_name.clone(), ty: target, doc: docs(&def.docs) });
                }
                _ => {}
            }
        }
        for f in iface.functions.values() {
            let (owner, fname) = match &f.kind {
                FunctionKind::Freestanding => (format!("interface {name}"), f.name.clone()),
                FunctionKind::Method(r) | FunctionKind::Static(r) => {
                    let resource = resolve.types[*r].name.clone().unwrap_or_default();
                    (format!("resource {resource}"), f.name.rsplit('.').next().unwrap_or(&f.name).to_string())
                }
                k => panic!("WIT function kind {k:?} is not used here"),
            };
            let params = f.params.iter().filter(|p| p.name != "self").map(|p| (p.name.clone(), wit_type(&resolve, &p.ty))).collect();
            let result = f.result.as_ref().map(|t| wit_type(&resolve, t));
            wit.funcs.entry(owner).or_default().push(Func { name: fname, params, result, doc: docs(&f.docs) });
        }
    }
    wit
}

fn wit() -> &'static Wit {
    static WIT: std::sync::OnceLock<Wit> = std::sync::OnceLock::new();
    WIT.get_or_init(read_wit)
}

fn kebab_to_camel(s: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in s.chars() {
        if c == '-' {
            up = true;
        } else if up {
            out.extend(c.to_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn camel_to_kebab(s: &str) -> String {
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if c.is_uppercase() {
            if i > 0 {
                out.push('-');
            }
            out.extend(c.to_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

fn inner<'a>(ty: &'a str, wrapper: &str) -> Option<&'a str> {
    ty.strip_prefix(wrapper)?.strip_prefix('<')?.strip_suffix('>')
}

/// Splits `a,b<c,d>` at top-level commas.
fn split_top(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Whether the field is an option written as `null` when it is `none`,
/// never left out (its doc comment says so; the types' header explains).
fn written_as_null(f: &Field) -> bool {
    f.ty.starts_with("option<") && f.doc.to_lowercase().contains("written as `null`")
}

/// A type with its aliases resolved at the top (`metadata` is
/// `list<tuple<string,metadata-value>>`).
fn unaliased(ty: &str) -> &str {
    match wit().aliases.get(ty) {
        Some(a) => unaliased(&a.ty),
        None => ty,
    }
}

/// Whether the field may be absent from the JSON object.
fn may_be_absent(f: &Field) -> bool {
    let ty = unaliased(&f.ty);
    ty.starts_with("option<") || (ty.starts_with("list<") && f.doc.to_lowercase().contains("left out of the json object when empty"))
}

/// `T` of a `list<tuple<string,T>>`: a list of name/value pairs, a JSON
/// object in JSON (the types' header says so).
fn pairs_value(ty: &str) -> Option<&str> {
    match split_top(inner(inner(ty, "list")?, "tuple")?).as_slice() {
        ["string", t] => Some(t),
        _ => None,
    }
}

/// Whether an alias is documented as JSON text (a filter): in JSON, the
/// object itself or a string holding one.
fn json_text(alias: &Field) -> bool {
    alias.ty == "string" && alias.doc.contains("as JSON text")
}

fn record<'a>(name: &str) -> &'a [Field] {
    wit().records.get(name).unwrap_or_else(|| panic!("wit/ has no record {name}"))
}

fn record_keys(name: &str) -> BTreeSet<String> {
    record(name).iter().map(|f| kebab_to_camel(&f.name)).collect()
}

/// Checks a JSON value against a WIT type; pushes one line per mismatch.
fn check(ty: &str, v: &Value, path: &str, errs: &mut Vec<String>) {
    let w = wit();
    let mut bad = |what: &str| errs.push(format!("{path}: expected {what} (WIT {ty}), got {v}"));
    match ty {
        "string" | "char" => {
            if !v.is_string() {
                bad("a string");
            }
        }
        "bool" => {
            if !v.is_boolean() {
                bad("a boolean");
            }
        }
        "u8" | "u16" | "u32" | "u64" => {
            if !v.is_u64() {
                bad("an unsigned integer");
            }
        }
        "s8" | "s16" | "s32" | "s64" => {
            if !v.is_i64() {
                bad("an integer");
            }
        }
        "f32" | "f64" => {
            if !v.is_number() {
                bad("a number");
            }
        }
        _ if ty.starts_with("option<") => {
            if !v.is_null() {
                check(inner(ty, "option").unwrap(), v, path, errs);
            }
        }
        _ if pairs_value(ty).is_some() => match v.as_object() {
            Some(obj) => {
                for (k, x) in obj {
                    check(pairs_value(ty).unwrap(), x, &format!("{path}.{k}"), errs);
                }
            }
            None => bad("an object (a list of name/value pairs)"),
        },
        _ if ty.starts_with("list<") => match v.as_array() {
            Some(items) => {
                for (i, item) in items.iter().enumerate() {
                    check(inner(ty, "list").unwrap(), item, &format!("{path}[{i}]"), errs);
                }
            }
            None => bad("an array"),
        },
        _ if ty.starts_with("tuple<") => match v.as_array() {
            Some(items) if items.len() == split_top(inner(ty, "tuple").unwrap()).len() => {
                for (i, (t, item)) in split_top(inner(ty, "tuple").unwrap()).into_iter().zip(items).enumerate() {
                    check(t, item, &format!("{path}[{i}]"), errs);
                }
            }
            _ => bad("a tuple array"),
        },
        _ if w.enums.contains_key(ty) => {
            let cases: Vec<String> = w.enums[ty].iter().map(|c| kebab_to_camel(c)).collect();
            if !v.as_str().is_some_and(|s| cases.iter().any(|c| c == s)) {
                bad(&format!("one of {cases:?}"));
            }
        }
        _ if w.aliases.get(ty).is_some_and(json_text) => {
            let parsed = v.as_str().map(serde_json::from_str::<Value>);
            if !(v.is_object() || matches!(parsed, Some(Ok(Value::Object(_))))) {
                bad("a JSON object, or a string holding one");
            }
        }
        _ if w.aliases.contains_key(ty) => check(&w.aliases[ty].ty, v, path, errs),
        // Untagged: the payload of one of the cases.
        _ if w.variants.contains_key(ty) => {
            let cases = &w.variants[ty];
            let fits = |c: &Field| {
                let mut scratch = Vec::new();
                check(&c.ty, v, path, &mut scratch);
                scratch.is_empty()
            };
            if cases.iter().any(|c| c.ty.is_empty()) {
                errs.push(format!("{path}: variant {ty} has a case without payload, which has no untagged JSON form"));
            } else if !cases.iter().any(fits) {
                bad(&format!("the payload of one of {:?}", cases.iter().map(|c| format!("{}({})", c.name, c.ty)).collect::<Vec<_>>()));
            }
        }
        _ if w.records.contains_key(ty) => {
            let Some(obj) = v.as_object() else {
                bad("an object");
                return;
            };
            let fields = &w.records[ty];
            for f in fields {
                let key = kebab_to_camel(&f.name);
                match obj.get(&key) {
                    None | Some(Value::Null) if may_be_absent(f) => {}
                    None => errs.push(format!("{path}: missing `{key}` (WIT {ty}.{})", f.name)),
                    Some(x) => check(&f.ty, x, &format!("{path}.{key}"), errs),
                }
            }
            for key in obj.keys() {
                if !fields.iter().any(|f| kebab_to_camel(&f.name) == *key) {
                    errs.push(format!("{path}: `{key}` is not a field of WIT record {ty} (fields: {:?})", record_keys(ty)));
                }
            }
        }
        _ => errs.push(format!("{path}: WIT type {ty} is not defined in wit/")),
    }
}

fn to_json<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object().expect("an object").iter().filter(|(_, x)| !x.is_null()).map(|(k, _)| k.clone()).collect()
}

fn diff(rust: &BTreeSet<String>, wit: &BTreeSet<String>) -> String {
    diff_as(rust, wit, "Rust", "WIT")
}

fn diff_as(a: &BTreeSet<String>, b: &BTreeSet<String>, a_name: &str, b_name: &str) -> String {
    format!("only in {a_name}: {:?}; only in {b_name}: {:?}", a.difference(b).collect::<Vec<_>>(), b.difference(a).collect::<Vec<_>>())
}

/// Where a response disagrees with the WIT type `ty` about `null`: the
/// service leaves an absent option out rather than writing `null`, except
/// at a field documented as written as `null`, which it never leaves out.
/// Pushes the path of every other JSON null, and of every such field left
/// out.
fn nulls(ty: &str, v: &Value, path: &str, out: &mut Vec<String>) {
    let w = wit();
    match v {
        Value::Null => out.push(format!("{path} (null)")),
        Value::Array(a) => {
            let item_types: Vec<&str> = match (inner(ty, "list"), inner(ty, "tuple")) {
                (Some(t), _) => vec![t; a.len()],
                (None, Some(ts)) => split_top(ts),
                _ => vec![""; a.len()],
            };
            for (i, x) in a.iter().enumerate() {
                nulls(item_types.get(i).copied().unwrap_or(""), x, &format!("{path}[{i}]"), out);
            }
        }
        Value::Object(o) => {
            let fields = w.records.get(ty).map_or(&[][..], Vec::as_slice);
            for (k, x) in o {
                let field = fields.iter().find(|f| kebab_to_camel(&f.name) == *k);
                match (field, x) {
                    (Some(f), Value::Null) if written_as_null(f) => {}
                    (Some(f), x) => nulls(inner(&f.ty, "option").unwrap_or(&f.ty), x, &format!("{path}.{k}"), out),
                    // Not a field of the record: `check` reports it.
                    (None, x) => nulls("", x, &format!("{path}.{k}"), out),
                }
            }
            for f in fields.iter().filter(|f| written_as_null(f)) {
                if !o.contains_key(&kebab_to_camel(&f.name)) {
                    out.push(format!("{path}.{} (left out; WIT says it is written as null)", kebab_to_camel(&f.name)));
                }
            }
        }
        _ => {}
    }
}

fn assert_no_nulls(ty: &str, v: &Value, what: &str) {
    let mut found = Vec::new();
    nulls(ty, v, what, &mut found);
    assert!(
        found.is_empty(),
        "{what} writes null where WIT has option<...> (leave the field out instead), or leaves out a field WIT says is written as null: {found:?}"
    );
}

/// A response record: the full instance has every WIT field, the bare one
/// lacks exactly the optional ones (left out, not null, but for the fields
/// written as null), and both fit the WIT types.
fn assert_record<T: Serialize>(wit_record: &str, full: &T, bare: &T) {
    assert_no_nulls(wit_record, &to_json(full), wit_record);
    assert_no_nulls(wit_record, &to_json(bare), wit_record);
    assert_request_record(wit_record, full, bare);
}

/// A request record: as a response record, except that serde may write an
/// absent option as null (requests are only ever deserialized, and
/// deserializing accepts both).
fn assert_request_record<T: Serialize>(wit_record: &str, full: &T, bare: &T) {
    let (full, bare) = (to_json(full), to_json(bare));
    let expected = record_keys(wit_record);
    assert_eq!(keys(&full), expected, "record {wit_record}: {}", diff(&keys(&full), &expected));
    let required: BTreeSet<String> = record(wit_record).iter().filter(|f| !may_be_absent(f)).map(|f| kebab_to_camel(&f.name)).collect();
    assert_eq!(
        keys(&bare),
        required,
        "record {wit_record}: with every Option None, Rust keeps {:?} but WIT's non-option fields are {:?}",
        keys(&bare),
        required
    );
    for v in [&full, &bare] {
        let mut errs = Vec::new();
        check(wit_record, v, wit_record, &mut errs);
        assert!(errs.is_empty(), "record {wit_record} disagrees with Rust:\n{}", errs.join("\n"));
    }
}

// ---------------------------------------------------------------------------
// Fully populated (and bare) Rust values.

const ID: &str = "0123456789abcdef0123456789abcdef";
const ID2: &str = "0123456789abcdef0123456789abcde0";
const MSG: &str = "fedcba9876543210fedcba9876543210";
const TS: &str = "2026-04-15T10:00:00.000Z";

fn some(full: bool, s: &str) -> Option<String> {
    full.then(|| s.to_string())
}

fn memory(full: bool) -> Memory {
    Memory {
        id: ID.into(),
        kind: MemoryType::Fact,
        key: some(full, "user.package_manager"),
        summary: "The user prefers pnpm.".into(),
        content: "The user prefers pnpm over npm.".into(),
        session_id: if full { "s1" } else { "" }.into(),
        source_message_ids: vec![MSG.into()],
        search_queries: vec!["Which package manager does the user prefer?".into()],
        status: Status::Superseded,
        supersedes: some(full, ID2),
        superseded_by: some(full, ID2),
        event_date: some(full, "2026-04-14"),
        created_at: TS.into(),
        updated_at: TS.into(),
        expires_at: some(full, "2026-05-01T00:00:00.000Z"),
        metadata: metadata(full),
        valid_from: some(full, "2026-04-14T09:00:00.000Z"),
        valid_to: some(full, "2026-04-15T09:00:00.000Z"),
    }
}

/// Metadata of every kind of value (empty when bare: left out).
fn metadata(full: bool) -> Metadata {
    if !full {
        return Metadata::new();
    }
    [
        ("agentId", MetaValue::Text("planner".into())),
        ("priority", MetaValue::Number(2.into())),
        ("weight", MetaValue::Number(serde_json::Number::from_f64(0.5).unwrap())),
        ("pinned", MetaValue::Bool(true)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// A filter of every form the grammar has.
fn filter() -> Value {
    json!({
        "agentId": "planner",
        "priority": { "gte": 2 },
        "OR": [{ "type": { "in": ["fact", "event"] } }, { "pinned": true }],
        "NOT": { "createdAt": { "lt": "2026-01-01" } }
    })
}

fn entry(full: bool) -> MemoryEntry {
    MemoryEntry::from(memory(full))
}

fn namespace() -> Namespace {
    Namespace { id: ID.into(), name: "ns".into(), account_id: "acc".into(), created_at: TS.into(), updated_at: TS.into() }
}

fn message(full: bool) -> Message {
    Message {
        id: MSG.into(),
        session_id: "s1".into(),
        role: "user".into(),
        content: "Use pnpm, not npm.".into(),
        timestamp: some(full, "2026-04-15"),
        position: 2,
        created_at: TS.into(),
        metadata: metadata(full),
    }
}

fn message_input(full: bool) -> MessageInput {
    MessageInput { role: "user".into(), content: "Use pnpm, not npm.".into(), timestamp: some(full, "2026-04-15") }
}

fn contribution() -> Contribution {
    Contribution { channel: Channel::Key, rank: 1, weight: 2.0, contribution: 2.0 / 61.0 }
}

fn candidate(full: bool) -> RecallCandidate {
    RecallCandidate {
        id: ID.into(),
        kind: MemoryType::Event,
        summary: "Deployed on April 14.".into(),
        session_id: if full { "s1" } else { "" }.into(),
        score: 0.0328,
        event_date: some(full, "2026-04-14"),
        source_message_ids: vec![MSG.into()],
        metadata: metadata(full),
        trace: full.then(|| vec![contribution()]),
        explanation: full.then(|| {
            vec![
                ExplanationNode { depth: 0, value: 0.0328, description: "fused score".into() },
                ExplanationNode { depth: 1, value: 0.0328, description: "key channel".into() },
            ]
        }),
    }
}

fn explain(full: bool) -> Explain {
    Explain {
        analysis: QueryAnalysis {
            keys: vec!["user.package_manager".into()],
            terms: vec!["package".into(), "manager".into()],
            hyde: "The user prefers pnpm.".into(),
        },
        channels: vec![ChannelReport { channel: Channel::Vector, weight: 0.8, ids: vec![ID.into()], error: Some("down".into()) }],
        k: 60.0,
        temporal_facts: vec!["2026-04-14 was a Tuesday.".into()],
        reference_date: "2026-04-15".into(),
        narrowing: full.then_some(NarrowingReport {
            way: NarrowingWay::Walk,
            sample: Some(Sampled { tested: 256, passed: 250, span: 8000 }),
            read_ahead_after: Some(9000),
        }),
    }
}

fn recall_response(full: bool) -> RecallResponse {
    RecallResponse {
        result: "The user prefers pnpm over npm.".into(),
        answer: "The user prefers pnpm over npm.".into(),
        count: 1,
        candidates: vec![candidate(full)],
        explain: full.then(|| explain(true)),
        messages: if full { vec!["channel vector failed: down".into()] } else { vec![] },
    }
}

fn parked_job(full: bool) -> agent_memory::core::model::ParkedJob {
    agent_memory::core::model::ParkedJob {
        kind: "unvector".into(),
        subject: some(full, ID),
        attempts: 8,
        retry_at: some(full, "2026-04-16T00:00:00.000Z"),
        error: "parked after 8 attempts: the index is down".into(),
    }
}

fn stats_of(full: bool) -> Stats {
    Stats {
        messages: 4,
        sessions: 1,
        memories: 3,
        by_type: MemoryType::ALL.iter().map(|t| (t.as_str().to_string(), 1)).collect(),
        by_status: Status::ALL.iter().map(|s| (s.as_str().to_string(), 1)).collect(),
        pending_jobs: 1,
        failed_jobs: 0,
        parked_jobs: 1,
        parked: vec![parked_job(full)],
        drain_error: full.then(|| "2026-04-15T00:00:00.000Z: the turn directory: disk full".into()),
        vectors: 2,
        storage_bytes: 4096,
        spooled_exports: 1,
        resident_bytes: 1024,
        isolate: full.then(|| agent_memory::core::resident::IsolateMemory {
            wasm_memory_bytes: 1 << 24,
            budget_bytes: 1 << 25,
            resident_bytes: 2048,
            resident_profiles: 2,
            evictions: 1,
            working_set_bytes: 1 << 20,
            working_set_limit_bytes: 1 << 26,
            working_set_waits: 3,
            busy_refusals: 1,
            warmups_refused: 2,
            heap_live_bytes: 1 << 22,
            heap_peak_bytes: 1 << 23,
            heap_blocks: 5000,
        }),
    }
}

fn ingest_report() -> IngestReport {
    IngestReport {
        session_id: "s1".into(),
        message_ids: vec![MSG.into()],
        messages_stored: 1,
        memories_stored: 1,
        memories_superseded: 0,
        memories: vec![memory(true), memory(false)],
        dropped: vec![Dropped { content: "pnpm".into(), reason: "unsupported".into() }],
    }
}

fn remember_request(full: bool) -> RememberRequest {
    RememberRequest {
        content: "API rate limit was increased to 10,000 req/s per zone.".into(),
        session_id: some(full, "s1"),
        kind: full.then_some(MemoryType::Fact),
        key: some(full, "api.rate_limit"),
        expires_at: some(full, "2026-05-01T00:00:00Z"),
        ttl_seconds: full.then_some(60),
        sensitive: full.then_some(false),
        metadata: metadata(full),
    }
}

fn recall_options(full: bool) -> RecallOptions {
    RecallOptions {
        reference_date: some(full, "2026-04-15"),
        limit: full.then_some(5),
        response_length: full.then_some(ResponseLength::Short),
        thinking_level: full.then_some(agent_memory::core::model::ThinkingLevel::High),
        explain: full.then_some(true),
        include_inactive: full.then_some(false),
        session_id: some(full, "s1"),
        filter: full.then(filter),
        as_of: some(full, "2026-04-15T09:30:00Z"),
    }
}

fn list_request(full: bool) -> ListRequest {
    ListRequest {
        limit: full.then_some(10),
        cursor: some(full, ID),
        session_id: some(full, "s1"),
        kind: full.then_some(MemoryType::Task),
        status: full.then_some(agent_memory::core::api::ListStatus::All),
        key: some(full, "user.package_manager"),
        // As the query parameter carries it: JSON text.
        filter: full.then(|| Value::String(filter().to_string())),
        as_of: some(full, "2026-04-15"),
    }
}

fn export_request(full: bool) -> ExportRequest {
    ExportRequest { filter: full.then(filter) }
}

fn consolidation_record(full: bool) -> ConsolidationRecord {
    ConsolidationRecord {
        id: 7,
        run_id: "c-01hzy0000000000000000000000".into(),
        action: "merge".into(),
        target: ID.into(),
        members: vec![ID2.into(), ID.into()],
        reason: "two wordings of one statement".into(),
        at: TS.into(),
        undone_at: some(full, "2026-04-16T10:00:00.000Z"),
    }
}

fn consolidation_report() -> ConsolidationReport {
    ConsolidationReport {
        run_id: "c-01hzy0000000000000000000000".into(),
        dry_run: false,
        done: true,
        examined: 2,
        active_before: 2,
        active_after: 1,
        actions: vec![consolidation_record(true), consolidation_record(false)],
        replaced_run: Some(r#"{"id":"c-1","cursor":"#.into()),
    }
}

fn consolidate_request(full: bool) -> ConsolidateRequest {
    ConsolidateRequest { dry_run: full.then_some(true), max_windows: full.then_some(3) }
}

fn update_request() -> UpdateRequest {
    UpdateRequest { id: ID.into(), metadata: metadata(true) }
}

/// A memory detail; `full` also gives it its consolidations (left out
/// when empty).
fn detail(full: bool) -> MemoryDetail {
    MemoryDetail {
        memory: memory(full),
        versions: vec![memory(true), memory(false)],
        more_versions: full,
        source_messages: vec![message(true), message(false)],
        more_source_messages: !full,
        consolidations: if full { vec![consolidation_record(true), consolidation_record(false)] } else { vec![] },
    }
}

// ---------------------------------------------------------------------------
// Records.

#[test]
fn test_memory_record_fields_match_wit() {
    assert_record("memory", &memory(true), &memory(false));
}

#[test]
fn test_message_input_record_fields_match_wit() {
    assert_record("message-input", &message_input(true), &message_input(false));
}

#[test]
fn test_message_record_fields_match_wit() {
    assert_record("message", &message(true), &message(false));
}

#[test]
fn test_memory_detail_record_fields_match_wit() {
    assert_record("memory-detail", &detail(true), &detail(false));
    assert!(to_json(&detail(false)).get("consolidations").is_none(), "no consolidations: left out");
    // memory-detail starts with the fields of memory (serde flattens it).
    let names = |r: &str| record(r).iter().map(|f| (f.name.clone(), f.ty.clone())).collect::<Vec<_>>();
    assert_eq!(names("memory-detail")[..names("memory").len()], names("memory")[..]);
}

#[test]
fn test_recall_candidate_record_fields_match_wit() {
    assert_record("recall-candidate", &candidate(true), &candidate(false));
    assert_record("contribution", &contribution(), &contribution());
}

#[test]
fn test_recall_result_record_fields_match_wit() {
    assert_record("recall-result", &recall_response(true), &recall_response(false));
    assert_record("explain", &explain(true), &explain(false));
    let n = |full: bool| NarrowingReport {
        way: NarrowingWay::Walk,
        sample: full.then_some(Sampled { tested: 256, passed: 3, span: 8000 }),
        read_ahead_after: full.then_some(9000),
    };
    assert_record("narrowing-report", &n(true), &n(false));
    let a = explain(true).analysis;
    assert_record("query-analysis", &a, &a);
    let c = |full: bool| ChannelReport { channel: Channel::Fts, weight: 1.0, ids: vec![ID.into()], error: some(full, "x") };
    assert_record("channel-report", &c(true), &c(false));
}

#[test]
fn test_memory_list_record_fields_match_wit() {
    let page = |full: bool| MemoryList { memories: vec![entry(true), entry(false)], cursor: some(full, ID) };
    assert_record("memory-list", &page(true), &page(false));
    assert_record("memory-entry", &entry(true), &entry(false));
    // memory-entry is memory without some fields: the others, in order,
    // with the same types (and the same null convention).
    let names = |r: &str| record(r).iter().map(|f| (f.name.clone(), f.ty.clone(), written_as_null(f))).collect::<Vec<_>>();
    let left_out = ["content", "source-message-ids", "search-queries", "supersedes", "superseded-by", "valid-from", "valid-to"];
    let kept: Vec<_> = names("memory").into_iter().filter(|(n, _, _)| !left_out.contains(&n.as_str())).collect();
    assert_eq!(names("memory-entry"), kept);
    // An entry is the memory without those fields.
    let mut whole = to_json(&memory(true));
    for f in left_out {
        whole.as_object_mut().unwrap().remove(&kebab_to_camel(f));
    }
    assert_eq!(to_json(&entry(true)), whole);
}

#[test]
fn test_delete_report_record_fields_match_wit() {
    let report = |full: bool| DeleteReport { memory: memory(full), deleted_memories: vec![ID.into(), ID2.into()], deleted_messages: vec![MSG.into()] };
    assert_record("delete-report", &report(true), &report(false));
    // delete-report starts with the fields of memory (serde flattens it).
    let names = |r: &str| record(r).iter().map(|f| (f.name.clone(), f.ty.clone(), written_as_null(f))).collect::<Vec<_>>();
    assert_eq!(names("delete-report")[..names("memory").len()], names("memory")[..]);
}

#[test]
fn test_session_id_is_the_one_option_written_as_null() {
    // Where WIT says `session-id` is written as null, Rust writes null for
    // a memory without a session, and reads it back as that.
    let w = wit();
    let mut written_null: Vec<String> =
        w.records.iter().flat_map(|(r, fields)| fields.iter().filter(|f| written_as_null(f)).map(move |f| format!("{r}.{}", f.name))).collect();
    written_null.sort();
    assert_eq!(
        written_null,
        ["delete-report.session-id", "memory-detail.session-id", "memory-entry.session-id", "memory.session-id", "recall-candidate.session-id"]
    );
    for v in [to_json(&memory(false)), to_json(&entry(false)), to_json(&candidate(false))] {
        assert_eq!(v["sessionId"], Value::Null, "{v}");
    }
    let back: Memory = serde_json::from_value(to_json(&memory(false))).unwrap();
    assert_eq!(back, memory(false));
    // A field not documented so is left out instead: the check tells them apart.
    let mut errs = Vec::new();
    nulls("memory", &json!({ "key": null }), "memory", &mut errs);
    assert!(errs.iter().any(|e| e.contains("memory.key (null)")) && errs.iter().any(|e| e.contains("sessionId (left out")), "{errs:?}");
}

#[test]
fn test_ingest_report_record_fields_match_wit() {
    assert_record("ingest-report", &ingest_report(), &ingest_report());
    let d = Dropped { content: "c".into(), reason: "r".into() };
    assert_record("dropped", &d, &d);
}

#[test]
fn test_stats_record_fields_match_wit() {
    assert_record("stats", &stats_of(true), &stats_of(false));
    let isolate = stats_of(true).isolate.unwrap();
    assert_record("isolate-memory", &isolate, &isolate);
    assert_record("parked-job", &parked_job(true), &parked_job(false));
    // The per-type and per-status counts name every case of their enum.
    let cases = |e: &str| wit().enums[e].iter().map(|c| kebab_to_camel(c)).collect::<BTreeSet<_>>();
    assert_eq!(record_keys("type-counts"), cases("memory-type"));
    assert_eq!(record_keys("status-counts"), cases("status"));
}

#[test]
fn test_consolidation_records_match_wit() {
    assert_record("consolidation-record", &consolidation_record(true), &consolidation_record(false));
    // A report with no actions still writes the list.
    let empty = ConsolidationReport { actions: vec![], replaced_run: None, ..consolidation_report() };
    assert_record("consolidation-report", &consolidation_report(), &empty);
}

#[test]
fn test_import_report_record_fields_match_wit() {
    let r = ImportReport { messages: 1, memories: 2, consolidations_left_out: 3 };
    assert_record("import-report", &r, &r);
}

#[test]
fn test_request_records_match_wit() {
    assert_request_record("remember-request", &remember_request(true), &remember_request(false));
    assert_request_record("recall-options", &recall_options(true), &recall_options(false));
    assert_request_record("list-filter", &list_request(true), &list_request(false));
    assert_request_record("export-options", &export_request(true), &export_request(false));
    let summary = |full: bool| SummaryRequest { session_id: some(full, "s1") };
    assert_request_record("summary-options", &summary(true), &summary(false));
    assert_record("message-input", &message_input(true), &message_input(false));

    // ingest(messages, options) is IngestRequest: `messages` plus the
    // fields of ingest-options.
    let profile = &wit().funcs["resource profile"];
    let ingest = profile.iter().find(|f| f.name == "ingest").expect("profile.ingest");
    assert_eq!(ingest.params, vec![("messages".into(), "list<message-input>".into()), ("options".into(), "ingest-options".into())]);
    let ingest_request = |full: bool| IngestRequest { messages: vec![message_input(true)], session_id: some(full, "s1"), metadata: metadata(full) };
    let req = ingest_request(true);
    let mut expected = record_keys("ingest-options");
    expected.insert("messages".into());
    assert_eq!(keys(&to_json(&req)), expected, "IngestRequest: {}", diff(&keys(&to_json(&req)), &expected));
    // Without `messages`, the request is ingest-options.
    let options_of = |full: bool| {
        let mut v = to_json(&ingest_request(full));
        v.as_object_mut().unwrap().remove("messages");
        v
    };
    assert_request_record("ingest-options", &options_of(true), &options_of(false));

    // recall(query, options) is RecallRequest: `query` plus the options.
    let recall = profile.iter().find(|f| f.name == "recall").expect("profile.recall");
    assert_eq!(recall.params, vec![("query".into(), "string".into()), ("options".into(), "recall-options".into())]);
    let req = RecallRequest { query: "what?".into(), options: recall_options(true) };
    let mut expected = record_keys("recall-options");
    expected.insert("query".into());
    assert_eq!(keys(&to_json(&req)), expected, "RecallRequest: {}", diff(&keys(&to_json(&req)), &expected));

    // export(options) is ExportRequest.
    let export = profile.iter().find(|f| f.name == "export").expect("profile.export");
    assert_eq!(export.params, vec![("options".into(), "export-options".into())]);

    // consolidate(options) is ConsolidateRequest.
    assert_request_record("consolidate-options", &consolidate_request(true), &consolidate_request(false));
    let consolidate = profile.iter().find(|f| f.name == "consolidate").expect("profile.consolidate");
    assert_eq!(consolidate.params, vec![("options".into(), "consolidate-options".into())]);

    // update(id, metadata) is UpdateRequest, field by field.
    let update = profile.iter().find(|f| f.name == "update").expect("profile.update");
    assert_eq!(update.params, vec![("id".into(), "string".into()), ("metadata".into(), "metadata".into())]);
    let req = to_json(&update_request());
    let params: BTreeSet<String> = update.params.iter().map(|(n, _)| kebab_to_camel(n)).collect();
    assert_eq!(keys(&req), params, "UpdateRequest: {}", diff(&keys(&req), &params));
    for (name, ty) in &update.params {
        let mut errs = Vec::new();
        check(ty, &req[kebab_to_camel(name)], name, &mut errs);
        assert!(errs.is_empty(), "update's {name}: {errs:?}");
    }

    // undo-consolidation(id) takes a consolidation record's id.
    let undo = profile.iter().find(|f| f.name == "undo-consolidation").expect("profile.undo-consolidation");
    let id_type = &record("consolidation-record").iter().find(|f| f.name == "id").unwrap().ty;
    assert_eq!(undo.params, vec![("id".into(), id_type.clone())]);
}

#[test]
fn test_the_json_forms_of_metadata_and_filters_are_checked() {
    // Metadata is a JSON object of strings, numbers and booleans; the
    // list-of-pairs form, a nested value or null is not.
    let mut errs = Vec::new();
    check("metadata", &to_json(&metadata(true)), "m", &mut errs);
    assert!(errs.is_empty(), "{errs:?}");
    for bad in [json!([["agentId", "planner"]]), json!({ "a": { "b": 1 } }), json!({ "a": [1] }), json!({ "a": null })] {
        let mut errs = Vec::new();
        check("metadata", &bad, "m", &mut errs);
        assert!(!errs.is_empty(), "{bad} passed as metadata");
    }
    // A filter is the object, or a string holding one; not other JSON text.
    for (v, ok) in [(filter(), true), (json!(filter().to_string()), true), (json!("[1]"), false), (json!("{"), false), (json!(3), false)] {
        let mut errs = Vec::new();
        check("filter-json", &v, "f", &mut errs);
        assert_eq!(errs.is_empty(), ok, "{v}: {errs:?}");
    }
    // And what Rust reads back is what it wrote.
    let back: Memory = serde_json::from_value(to_json(&memory(true))).unwrap();
    assert_eq!(back, memory(true));
}

// ---------------------------------------------------------------------------
// Enums and the error.

/// Every case of a Rust enum, serialized. The `match` makes adding a
/// variant a compile error here until it is listed.
fn serialized<T: Serialize>(all: &[T]) -> BTreeSet<String> {
    all.iter().map(|v| to_json(v).as_str().expect("a unit variant").to_string()).collect()
}

fn wit_cases(name: &str) -> BTreeSet<String> {
    wit().enums.get(name).unwrap_or_else(|| panic!("wit/ has no enum {name}")).iter().map(|c| kebab_to_camel(c)).collect()
}

#[test]
fn test_enum_cases_match_wit() {
    let memory_types: Vec<MemoryType> = MemoryType::ALL.to_vec();
    for t in &memory_types {
        match t {
            MemoryType::Fact | MemoryType::Event | MemoryType::Instruction | MemoryType::Task => {}
        }
    }
    let statuses: Vec<Status> = Status::ALL.to_vec();
    for s in &statuses {
        match s {
            Status::Active | Status::Superseded | Status::Forgotten | Status::Expired => {}
        }
    }
    let lengths = [ResponseLength::Short, ResponseLength::Medium, ResponseLength::Long];
    for l in &lengths {
        match l {
            ResponseLength::Short | ResponseLength::Medium | ResponseLength::Long => {}
        }
    }
    use agent_memory::core::model::ThinkingLevel;
    let levels = [ThinkingLevel::Low, ThinkingLevel::Medium, ThinkingLevel::High];
    for l in &levels {
        match l {
            ThinkingLevel::Low | ThinkingLevel::Medium | ThinkingLevel::High => {}
        }
    }
    let channels: Vec<Channel> = Channel::ALL.to_vec();
    for c in &channels {
        match c {
            Channel::Key | Channel::Fts | Channel::Hyde | Channel::Vector | Channel::Messages => {}
        }
    }
    for (wit_name, rust) in [
        ("memory-type", serialized(&memory_types)),
        ("status", serialized(&statuses)),
        ("response-length", serialized(&lengths)),
        ("thinking-level", serialized(&levels)),
        ("channel", serialized(&channels)),
    ] {
        assert_eq!(rust, wit_cases(wit_name), "enum {wit_name}: {}", diff(&rust, &wit_cases(wit_name)));
    }
    // The Rust enum's own name table agrees with serde.
    for t in MemoryType::ALL {
        assert_eq!(to_json(&t), json!(t.as_str()));
    }
    for s in Status::ALL {
        assert_eq!(to_json(&s), json!(s.as_str()));
    }
    for c in Channel::ALL {
        assert_eq!(to_json(&c), json!(c.name()));
    }
}

/// The private kind of an error, from its derived `Debug`
/// (`Error { kind: NotFound, message: .. }`), in kebab-case.
fn kind_of(e: &Error) -> String {
    let dbg = format!("{e:?}");
    let kind = dbg.split("kind: ").nth(1).and_then(|s| s.split([',', ' ', '}']).next()).unwrap_or_else(|| panic!("cannot read the kind of {dbg}"));
    camel_to_kebab(kind)
}

/// `Code 10001, HTTP 400.` from a case's doc comment.
fn documented(doc: &str, label: &str) -> u32 {
    let at = doc.find(label).unwrap_or_else(|| panic!("doc comment {doc:?} does not say `{label} N`"));
    doc[at + label.len()..].trim_start().chars().take_while(char::is_ascii_digit).collect::<String>().parse().unwrap()
}

#[test]
fn test_error_variant_matches_error_kinds() {
    let cases = wit().variants.get("error").expect("wit/ has a variant error");
    // Every kind the codes reach (unknown codes fall back to storage).
    let mut kinds_by_code: BTreeMap<String, BTreeSet<u32>> = BTreeMap::new();
    for code in 10000..=10099 {
        let e = Error::from_code(code, "m");
        if e.code() == code {
            kinds_by_code.entry(kind_of(&e)).or_default().insert(code);
        }
    }
    let rust: BTreeSet<String> = kinds_by_code.keys().cloned().collect();
    let wit_names: BTreeSet<String> = cases.iter().map(|c| c.name.clone()).collect();
    assert_eq!(rust, wit_names, "error kinds vs WIT variant error: {}", diff(&rust, &wit_names));
    for c in cases {
        assert_eq!(c.ty, "string", "error case {} must carry a message string", c.name);
        let code = documented(&c.doc, "Code");
        let status = documented(&c.doc, "HTTP");
        let e = Error::from_code(code, "the message");
        assert_eq!(kind_of(&e), c.name, "WIT says code {code} is {}", c.name);
        assert_eq!(e.code(), code);
        assert_eq!(u32::from(e.status()), status, "WIT says {} is HTTP {status}", c.name);
        assert_eq!(e.message(), "the message");
        let env = rest::envelope_err(&e);
        assert_eq!(env["errors"][0], json!({ "code": code, "message": "the message" }));
    }
    // Constructors agree with the codes too.
    for (e, name) in [
        (Error::invalid("m"), "invalid"),
        (Error::unauthenticated("m"), "unauthenticated"),
        (Error::forbidden("m"), "forbidden"),
        (Error::not_found("m"), "not-found"),
        (Error::conflict("m"), "conflict"),
        (Error::already_exists("m"), "already-exists"),
        (Error::too_large("m"), "too-large"),
        (Error::method_not_allowed("m"), "method-not-allowed"),
        (Error::not_acceptable("m"), "not-acceptable"),
        (Error::unsupported_media_type("m"), "unsupported-media-type"),
        (Error::storage("m"), "storage"),
        (Error::provider("m"), "provider"),
        (Error::config("m"), "config"),
        (Error::busy("m"), "busy"),
        (Error::timeout("m"), "timeout"),
    ] {
        assert_eq!(kind_of(&e), name);
        assert_eq!(kind_of(&Error::from_code(e.code(), "m")), name);
    }
}

// ---------------------------------------------------------------------------
// Functions.

#[test]
fn test_wit_package_is_well_formed() {
    let w = wit();
    assert_eq!(w.packages, BTreeSet::from(["agent-memory:memory@0.1.0".to_string()]), "one versioned package");
    // One interface per file, named like the file.
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("wit");
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(&path).unwrap();
        // The interfaces a file declares (a declaration starts a line).
        let declared: BTreeSet<String> = text
            .lines()
            .filter_map(|l| l.trim_start().strip_prefix("interface "))
            .map(|rest| rest.split(|c: char| c.is_whitespace() || c == '{').next().unwrap_or("").to_string())
            .collect();
        if stem == "world" {
            assert!(declared.is_empty(), "world.wit holds worlds only");
        } else {
            assert_eq!(declared, BTreeSet::from([stem.clone()]), "{stem}.wit holds interface {stem}");
            assert!(w.interfaces.contains(&stem), "wit-parser read interface {stem}");
        }
    }
    // Every type used is defined.
    let primitive = ["string", "char", "bool", "u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f32", "f64"];
    let mut used = Vec::new();
    let mut collect = |ty: &str| {
        let mut stack = vec![ty.to_string()];
        while let Some(t) = stack.pop() {
            if let Some((_, args)) = t.split_once('<') {
                stack.extend(split_top(&args[..args.len() - 1]).into_iter().map(str::to_string).filter(|s| s != "_"));
            } else if !t.is_empty() {
                used.push(t);
            }
        }
    };
    for fields in w.records.values().chain(w.variants.values()) {
        fields.iter().for_each(|f| collect(&f.ty));
    }
    w.aliases.values().for_each(|a| collect(&a.ty));
    for funcs in w.funcs.values() {
        for f in funcs {
            f.params.iter().for_each(|(_, t)| collect(t));
            if let Some(r) = &f.result {
                collect(r);
            }
        }
    }
    for t in used {
        assert!(
            primitive.contains(&t.as_str())
                || w.records.contains_key(&t)
                || w.enums.contains_key(&t)
                || w.variants.contains_key(&t)
                || w.resources.contains(&t)
                || w.aliases.contains_key(&t),
            "WIT type {t} is used but not defined"
        );
    }
    // Every function returns result<T, error> and documents its empty case
    // and its errors.
    for (owner, funcs) in &w.funcs {
        for f in funcs {
            let r = f.result.as_deref().unwrap_or("");
            assert!(r.starts_with("result<") && r.ends_with(",error>"), "{owner}.{} returns {r}, not result<T, error>", f.name);
            assert!(f.doc.contains("Errors:") || f.doc.contains("Errors: none"), "{owner}.{} documents no errors", f.name);
            let lower = f.doc.to_lowercase();
            assert!(
                lower.contains("not an error") || lower.contains("empty") || lower.contains("not-found") || lower.contains("changes nothing"),
                "{owner}.{} does not document its empty case",
                f.name
            );
        }
    }
}

fn profile_functions() -> Vec<Func> {
    wit().funcs.get("resource profile").expect("resource profile has functions").clone()
}

fn ok_type(f: &Func) -> String {
    let r = f.result.as_deref().unwrap();
    split_top(inner(r, "result").unwrap())[0].to_string()
}

#[test]
fn test_every_profile_function_returns_its_wit_type() {
    let sql = database();
    let target = database();
    with_profile(&sql, APRIL_15, |p| {
        let run = |op: &str, args: Value| block_on(p.dispatch(op, args)).unwrap_or_else(|e| panic!("{op}: {e}"));
        // The control: an unknown operation is refused as such.
        let e = block_on(p.dispatch("noSuchOperation", json!({}))).unwrap_err();
        assert!(e.is_not_found() && e.message().contains("no operation named"));

        let ingest = run(
            "ingest",
            json!({ "sessionId": "s1", "messages": [
                { "role": "user", "content": "Set up the project with React and TypeScript.", "timestamp": "2026-04-14" },
                { "role": "assistant", "content": "Done. Scaffolded a React + TS project targeting Workers." },
                { "role": "user", "content": "Use pnpm, not npm. And dark mode by default." },
                { "role": "assistant", "content": "Got it -- pnpm and dark mode as default." }
            ]}),
        );
        let remembered = run(
            "remember",
            json!({ "content": "API rate limit was increased to 10,000 req/s per zone after the April 10 incident.", "key": "api.rate_limit" }),
        );
        let id = remembered["id"].as_str().unwrap().to_string();
        let export = run("export", json!({}));
        let mut results: BTreeMap<&str, Value> = BTreeMap::new();
        results.insert("ingest", ingest);
        results.insert("remember", remembered);
        results.insert("recall", run("recall", json!({ "query": "What package manager does the user prefer?", "explain": true })));
        results.insert("list", run("list", json!({ "limit": 1 })));
        results.insert("get", run("get", json!({ "id": id })));
        results.insert("get-summary", run("getSummary", json!({})));
        results.insert("stats", run("stats", json!({})));
        results.insert("export", export.clone());
        let updated = run("update", json!({ "id": id, "metadata": { "agentId": "planner", "priority": 2, "pinned": true } }));
        assert_eq!(updated["metadata"], json!({ "agentId": "planner", "priority": 2, "pinned": true }));
        results.insert("update", updated);
        results.insert("forget", run("forget", json!({ "id": id })));
        results.insert("delete", run("delete", json!({ "id": id })));
        results.insert("delete-session", run("deleteSession", json!({ "sessionId": "s1" })));
        with_profile(&target, APRIL_15, |q| {
            let r = block_on(q.dispatch("import", json!({ "data": export }))).unwrap();
            results.insert("import", r);
        });
        // Consolidation: two wordings of one statement merge a day later;
        // the merge shows in the survivor's detail, and is undone.
        let merged = database();
        fn dispatch(q: &agent_memory::core::ops::Profile<'_>, op: &str, args: Value) -> Value {
            block_on(q.dispatch(op, args)).unwrap_or_else(|e| panic!("{op}: {e}"))
        }
        with_profile(&merged, APRIL_15, |q| {
            dispatch(q, "remember", json!({ "content": "The user prefers dark mode in the code editor.", "key": "user.editor_theme" }));
            dispatch(q, "remember", json!({ "content": "In the code editor, the user prefers the dark mode.", "key": "user.theme" }));
        });
        with_profile(&merged, APRIL_15 + DAY, |q| {
            let report = dispatch(q, "consolidate", json!({ "maxWindows": 10 }));
            let record = report["actions"][0].clone();
            assert!(record["id"].as_i64().is_some_and(|id| id > 0), "a consolidation was recorded: {report}");
            let survivor = dispatch(q, "get", json!({ "id": record["target"] }));
            assert_eq!(survivor["consolidations"][0], record, "the survivor's detail lists its consolidation");
            let mut errs = Vec::new();
            check("memory-detail", &survivor, "get (consolidated)", &mut errs);
            assert!(errs.is_empty(), "{}", errs.join("\n"));
            assert_no_nulls("memory-detail", &survivor, "get (consolidated)");
            results.insert("consolidate", report);
            results.insert("undo-consolidation", dispatch(q, "undoConsolidation", json!({ "id": record["id"] })));
            assert!(results["undo-consolidation"]["undoneAt"].is_string());
        });

        let funcs = profile_functions();
        let names: BTreeSet<&str> = funcs.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, results.keys().copied().collect(), "WIT profile functions vs the operations run here");
        for f in &funcs {
            // The dispatch table knows the function under its camelCase name.
            let op = kebab_to_camel(&f.name);
            if let Err(e) = block_on(p.dispatch(&op, json!({ "id": "not-an-id" }))) {
                assert!(!e.message().contains("no operation named"), "WIT function {} is not operation {op}", f.name);
            }
            assert_no_nulls(&ok_type(f), &results[f.name.as_str()], &f.name);
            let mut errs = Vec::new();
            check(&ok_type(f), &results[f.name.as_str()], &f.name, &mut errs);
            assert!(errs.is_empty(), "{} returns JSON that disagrees with WIT:\n{}", f.name, errs.join("\n"));
        }
        // And the service's delete-profile: of a profile never written,
        // not-found, as WIT documents; of a written one (even one the
        // deletions above emptied), its report.
        let service = &wit().funcs["interface service"];
        let delete_profile = service.iter().find(|f| f.name == "delete-profile").expect("service.delete-profile");
        let never = database();
        let e = with_profile(&never, APRIL_15, |q| block_on(q.dispatch("deleteProfile", json!({})))).unwrap_err();
        assert!(e.is_not_found() && delete_profile.doc.contains("`not-found`"), "{e}");
        run("remember", json!({ "content": "The user prefers dark mode in every editor.", "sessionId": "s2" }));
        let mut errs = Vec::new();
        check(&ok_type(delete_profile), &run("deleteProfile", json!({})), "delete-profile", &mut errs);
        let restore_profile = service.iter().find(|f| f.name == "restore-profile").expect("service.restore-profile");
        check(&ok_type(restore_profile), &run("restoreProfile", json!({})), "restore-profile", &mut errs);
        assert!(errs.is_empty(), "{}", errs.join("\n"));
        let get_profile = service.iter().find(|f| f.name == "get-profile").expect("service.get-profile");
        assert_eq!(ok_type(get_profile), "profile");
    });
}

// ---------------------------------------------------------------------------
// The OpenAPI document.

fn openapi() -> Value {
    serde_json::from_str(include_str!("../src/openapi.json")).expect("src/openapi.json is JSON")
}

fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
    let s = &doc["components"]["schemas"][name];
    assert!(s.is_object(), "openapi: no components.schemas.{name}");
    s
}

fn schema_keys(s: &Value, what: &str) -> BTreeSet<String> {
    match what {
        "properties" => s["properties"].as_object().map(|o| o.keys().cloned().collect()).unwrap_or_default(),
        _ => s["required"].as_array().map(|a| a.iter().map(|v| v.as_str().unwrap().to_string()).collect()).unwrap_or_default(),
    }
}

/// Whether a property's schema admits `null`.
fn admits_null(s: &Value) -> bool {
    let null_type = |t: &Value| t == "null" || t.as_array().is_some_and(|a| a.iter().any(|t| t == "null"));
    null_type(&s["type"]) || s["anyOf"].as_array().or(s["oneOf"].as_array()).is_some_and(|a| a.iter().any(|x| null_type(&x["type"])))
}

/// A response record's schema: its properties are what Rust writes of the
/// full instance, and `required` what it writes of the bare one, a
/// property written as null (a memory's `sessionId` without a session)
/// included: its schema admits null.
fn assert_schema<T: Serialize>(doc: &Value, name: &str, full: &T, bare: &T) {
    let s = schema(doc, name);
    let bare_json = to_json(bare);
    for (k, _) in bare_json.as_object().expect("an object").iter().filter(|(_, v)| v.is_null()) {
        assert!(admits_null(&s["properties"][k]), "openapi schema {name}: Rust writes {k}: null, which its schema refuses");
    }
    let bare_all: BTreeSet<String> = bare_json.as_object().unwrap().keys().cloned().collect();
    assert_schema_keys(doc, name, &keys(&to_json(full)), &bare_all);
}

/// A request record's schema: as a response's, except that serde writes
/// an absent option as null, which a request may as well leave out (it is
/// only ever read): `required` is what the bare instance holds besides.
fn assert_request_schema<T: Serialize>(doc: &Value, name: &str, full: &T, bare: &T) {
    assert_schema_keys(doc, name, &keys(&to_json(full)), &keys(&to_json(bare)));
}

fn assert_schema_keys(doc: &Value, name: &str, full: &BTreeSet<String>, bare: &BTreeSet<String>) {
    let s = schema(doc, name);
    let props = schema_keys(s, "properties");
    assert_eq!(*full, props, "openapi schema {name}: {}", diff_as(full, &props, "Rust", "OpenAPI properties"));
    let required = schema_keys(s, "required");
    assert_eq!(*bare, required, "openapi schema {name}: required should be what Rust always writes: {}", diff_as(bare, &required, "Rust", "OpenAPI required"));
}

#[test]
fn test_openapi_schemas_match_rust_serialization() {
    let doc = openapi();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_schema(&doc, "Memory", &memory(true), &memory(false));
    assert_schema(&doc, "Message", &message(true), &message(false));
    assert_schema(&doc, "MessageInput", &message_input(true), &message_input(false));
    assert_schema(&doc, "MemoryDetail", &detail(true), &detail(false));
    assert_schema(&doc, "ConsolidationRecord", &consolidation_record(true), &consolidation_record(false));
    assert_schema(&doc, "ConsolidationReport", &consolidation_report(), &ConsolidationReport { replaced_run: None, ..consolidation_report() });
    assert_schema(&doc, "RecallCandidate", &candidate(true), &candidate(false));
    assert_schema(&doc, "RecallResult", &recall_response(true), &recall_response(false));
    assert_schema(&doc, "Contribution", &contribution(), &contribution());
    assert_schema(&doc, "Explain", &explain(true), &explain(false));
    assert_schema(&doc, "QueryAnalysis", &explain(true).analysis, &explain(true).analysis);
    let page = |full: bool| MemoryList { memories: vec![], cursor: some(full, ID) };
    assert_schema(&doc, "MemoryList", &page(true), &page(false));
    assert_schema(&doc, "MemoryEntry", &entry(true), &entry(false));
    let report = |full: bool| DeleteReport { memory: memory(full), deleted_memories: vec![], deleted_messages: vec![] };
    assert_schema(&doc, "DeleteReport", &report(true), &report(false));
    assert_schema(&doc, "Namespace", &namespace(), &namespace());
    // The named strings of paths.
    assert_eq!(schema(&doc, "ProfileName")["maxLength"], agent_memory::core::api::MAX_PROFILE_NAME_CHARS);
    assert_eq!(schema(&doc, "Name")["maxLength"], agent_memory::core::api::MAX_NAME_CHARS);
    assert_eq!(doc["components"]["parameters"]["profile"]["schema"]["$ref"], "#/components/schemas/ProfileName");
    assert_eq!(doc["components"]["parameters"]["namespace"]["schema"]["$ref"], "#/components/schemas/Name");
    assert_schema(&doc, "IngestReport", &ingest_report(), &ingest_report());
    assert_schema(&doc, "Stats", &stats_of(true), &stats_of(false));
    let isolate = stats_of(true).isolate.unwrap();
    assert_schema(&doc, "IsolateMemory", &isolate, &isolate);
    assert_schema(&doc, "ParkedJob", &parked_job(true), &parked_job(false));
    let import = ImportReport { messages: 1, memories: 1, consolidations_left_out: 1 };
    assert_schema(&doc, "ImportReport", &import, &import);
    // Request bodies: every field the Rust record accepts, none required
    // but the ones without a default.
    assert_request_schema(&doc, "RememberRequest", &remember_request(true), &RememberRequest { content: "c".into(), ..remember_request(false) });
    let recall = |full: bool| RecallRequest { query: "q".into(), options: recall_options(full) };
    assert_request_schema(&doc, "RecallRequest", &recall(true), &recall(false));
    let ingest = |full: bool| IngestRequest { messages: vec![], session_id: some(full, "s1"), metadata: metadata(full) };
    assert_request_schema(&doc, "IngestRequest", &ingest(true), &ingest(false));
    assert_request_schema(&doc, "ConsolidateRequest", &consolidate_request(true), &consolidate_request(false));
    // update's body is UpdateRequest without the id, which the path gives.
    let mut update_body = to_json(&update_request());
    update_body.as_object_mut().unwrap().remove("id");
    assert_request_schema(&doc, "UpdateMemoryRequest", &update_body, &update_body);
    assert_eq!(schema(&doc, "UpdateMemoryRequest")["additionalProperties"], false);
    // Enums.
    let enum_of = |name: &str| -> BTreeSet<String> { schema(&doc, name)["enum"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect() };
    assert_eq!(enum_of("MemoryType"), wit_cases("memory-type"));
    assert_eq!(enum_of("Status"), wit_cases("status"));
    assert_eq!(enum_of("ResponseLength"), wit_cases("response-length"));
    assert_eq!(enum_of("ThinkingLevel"), wit_cases("thinking-level"));
    assert_eq!(enum_of("Channel"), wit_cases("channel"));
    // Query parameters of GET memories, summary and export are the request records.
    let base = "/accounts/{account}/agent-memory/namespaces/{namespace}/profiles/{profile}";
    let query_params = |path: &str| -> BTreeSet<String> {
        doc["paths"][format!("{base}{path}")]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| {
                let p = match p["$ref"].as_str() {
                    Some(r) => &doc["components"]["parameters"][r.rsplit('/').next().unwrap()],
                    None => p,
                };
                assert_eq!(p["in"], "query");
                p["name"].as_str().unwrap().to_string()
            })
            .collect()
    };
    assert_eq!(query_params("/memories"), keys(&to_json(&list_request(true))));
    assert_eq!(query_params("/summary"), keys(&to_json(&SummaryRequest { session_id: Some("s".into()) })));
    assert_eq!(query_params("/export"), keys(&to_json(&export_request(true))));
    // A filter travels in the query as JSON text.
    for path in ["/memories", "/export"] {
        let param = &doc["components"]["parameters"]["filter"];
        assert!(query_params(path).contains("filter") && param["schema"]["type"] == "string", "{path}: filter is JSON text");
        assert_eq!(param["schema"]["contentMediaType"], "application/json");
    }
}

#[test]
fn test_openapi_routes_reach_every_profile_function() {
    use agent_memory::core::op::Op;
    let doc = openapi();
    let mut ops = BTreeSet::new();
    let mut service_routes = BTreeSet::new();
    let mut namespace_ops = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            if method == "parameters" {
                continue;
            }
            let concrete = path
                .replace("{account}", "acc")
                .replace("{namespace}", "ns")
                .replace("{profile}", "p1")
                .replace("{id}", ID)
                .replace("{sessionId}", "s1")
                .replace("{consolidationId}", "7");
            let method = method.to_uppercase();
            let import = path.ends_with("/import");
            // The one body a route needs: a namespace's creation names it,
            // an update the new metadata.
            let body: &[u8] = match (method.as_str(), import, path.ends_with("/namespaces")) {
                ("POST", false, true) => br#"{"name": "ns"}"#,
                ("POST", false, false) => b"{}",
                ("PATCH", _, _) => br#"{"metadata": {}}"#,
                _ => b"",
            };
            let req = Incoming {
                method: &method,
                path: &concrete,
                query: "",
                content_type: Some(if import { "application/x-ndjson" } else { "application/json" }),
                body,
            };
            let routed = rest::route(&req).unwrap_or_else(|e| panic!("openapi {method} {path} does not route: {e}"));
            // A success is 200, but a namespace created is 201 (as the
            // published API reference has it).
            let success = if op["operationId"] == "createNamespace" { "201" } else { "200" };
            assert!(op["responses"][success].is_object(), "{method} {path} documents no {success} response");
            match routed {
                Route::Profile(call) => {
                    // An operation a path takes by two methods (summary: GET,
                    // and POST as the published API makes it) names its
                    // POST form `{name}Post`; operationIds stay unique.
                    let expected = match op["operationId"].as_str() {
                        Some(id) if method == "POST" && id == format!("{}Post", call.op.name()) => id.to_string(),
                        _ => call.op.name().to_string(),
                    };
                    assert_eq!(op["operationId"], expected.as_str(), "operationId of {method} {path}");
                    for status in ["400", "401", "403", "default"] {
                        assert!(op["responses"][status].is_object(), "{method} {path} documents no {status} response");
                    }
                    ops.insert(call.op.name().to_string());
                }
                Route::Catalog(call) => {
                    // The namespace routes are the catalog's calls, one
                    // each; none of them a profile's operation.
                    let (name, statuses): (&str, &[&str]) = match call {
                        CatalogCall::Create { ref name, .. } => {
                            assert_eq!(name, "ns");
                            ("createNamespace", &["409"])
                        }
                        CatalogCall::List { per_page: None, cursor: None, .. } => ("listNamespaces", &[]),
                        CatalogCall::Get { ref name, .. } => {
                            assert_eq!(name, "ns");
                            ("getNamespace", &["404"])
                        }
                        CatalogCall::Delete { ref name } => {
                            assert_eq!(name, "ns");
                            ("deleteNamespace", &["404"])
                        }
                        CatalogCall::ListProfiles { ref namespace, per_page: None, cursor: None } => {
                            assert_eq!(namespace, "ns");
                            ("listProfiles", &["404"])
                        }
                        other => panic!("openapi {method} {path} reaches the catalog's internal call {other:?}"),
                    };
                    assert_eq!(op["operationId"], name, "operationId of {method} {path}");
                    assert_eq!(op["tags"], json!(["namespace"]), "{method} {path} is tagged namespace");
                    for status in ["400", "401", "403", "default"].iter().chain(statuses) {
                        assert!(op["responses"][status].is_object(), "{method} {path} documents no {status} response");
                    }
                    assert!(namespace_ops.insert(name), "{name} is documented twice");
                    assert!(Op::parse(name).is_none(), "{name} is also a profile operation");
                }
                Route::Health => assert!(service_routes.insert("health")),
                Route::OpenApi => assert!(service_routes.insert("openapi")),
                Route::Mcp { .. } => assert!(service_routes.insert("mcp")),
            }
        }
    }
    assert_eq!(
        namespace_ops,
        BTreeSet::from(["createNamespace", "listNamespaces", "getNamespace", "deleteNamespace", "listProfiles"]),
        "the namespace operations are documented"
    );
    // A duplicate namespace's 409 is the already-exists error.
    let create = &doc["paths"]["/accounts/{account}/agent-memory/namespaces"]["post"];
    assert_eq!(create["responses"]["409"]["$ref"], "#/components/responses/AlreadyExists");
    assert!(doc["components"]["responses"]["AlreadyExists"]["description"].as_str().unwrap().contains("(code 10008)"));
    // Every operationId is unique.
    let ids: Vec<&str> = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().iter().filter(|(m, _)| *m != "parameters").filter_map(|(_, op)| op["operationId"].as_str()))
        .collect();
    assert_eq!(ids.len(), ids.iter().collect::<BTreeSet<_>>().len(), "duplicate operationIds: {ids:?}");
    let mut expected: BTreeSet<String> = profile_functions().iter().map(|f| kebab_to_camel(&f.name)).collect();
    expected.insert("deleteProfile".into());
    expected.insert("restoreProfile".into());
    assert_eq!(ops, expected, "REST operations vs WIT functions: {}", diff_as(&ops, &expected, "OpenAPI", "WIT"));
    assert_eq!(service_routes.len(), 3, "GET /health, GET /openapi.json and the MCP endpoint are documented");
    // Every status an error can map to has a documented error response.
    let responses = doc["components"]["responses"].as_object().unwrap();
    for c in wit().variants["error"].iter() {
        let status = documented(&c.doc, "HTTP");
        let described = responses.values().any(|r| r["description"].as_str().is_some_and(|d| d.contains(&format!("(code {}", documented(&c.doc, "Code")))));
        assert!(described, "openapi: no error response describes {} (HTTP {status})", c.name);
    }
}

// ---------------------------------------------------------------------------
// The operations: one enum, every way in.

/// The methods a class of `src/entry.mjs` defines (`name(args) {`, or
/// `async name(args) {`).
fn entry_methods(class: &str) -> BTreeSet<String> {
    let text = std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/entry.mjs")).unwrap();
    let start = text.find(&format!("class {class} ")).unwrap_or_else(|| panic!("entry.mjs has no class {class}"));
    let body = &text[start..];
    let body = &body[..body[1..].find("\nclass ").or_else(|| body[1..].find("\nexport class ")).map_or(body.len(), |e| e + 1)];
    body.lines()
        .filter_map(|l| {
            let l = l.strip_prefix("  ")?;
            let l = l.strip_prefix("async ").unwrap_or(l);
            let name: String = l.chars().take_while(|c| c.is_ascii_alphanumeric()).collect();
            (!name.is_empty() && l[name.len()..].starts_with('(') && name != "constructor").then_some(name)
        })
        .collect()
}

#[test]
fn test_every_operation_is_offered_by_rest_rpc_mcp_and_openapi_and_nothing_else_is() {
    use agent_memory::core::op::Op;
    let public: BTreeSet<String> = Op::ALL.into_iter().filter(|op| op.is_public()).map(|op| op.name().to_string()).collect();
    // OpenAPI: one operationId per operation.
    let doc = openapi();
    let mut documented = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.contains("/profiles/{profile}") || path.starts_with("/mcp") {
            continue;
        }
        for (method, op) in item.as_object().unwrap() {
            if method != "parameters" {
                // The POST form of an operation a path also takes by GET
                // (`{name}Post`) is that operation.
                let id = op["operationId"].as_str().unwrap();
                let id = if method == "post" { id.strip_suffix("Post").filter(|n| public.contains(*n)).unwrap_or(id) } else { id };
                documented.insert(id.to_string());
            }
        }
    }
    assert_eq!(documented, public, "OpenAPI operations vs Op: {}", diff_as(&documented, &public, "OpenAPI", "Op"));
    // RPC: the shim's methods (a profile's, and the entrypoint's own).
    let mut rpc = entry_methods("Profile");
    rpc.extend(entry_methods("MemoryService").into_iter().filter(|m| m != "getProfile"));
    rpc.remove("#call");
    assert_eq!(rpc, public, "RPC methods vs Op: {}", diff_as(&rpc, &public, "entry.mjs", "Op"));
    // WIT: the profile's functions and the service's.
    let mut wit_ops: BTreeSet<String> = profile_functions().iter().map(|f| kebab_to_camel(&f.name)).collect();
    wit_ops.extend(wit().funcs["interface service"].iter().filter(|f| f.name != "get-profile").map(|f| kebab_to_camel(&f.name)));
    assert_eq!(wit_ops, public, "WIT functions vs Op: {}", diff_as(&wit_ops, &public, "WIT", "Op"));
    // MCP: every tool runs a public operation of the same name.
    for (tool, op) in agent_memory::core::mcp::tool_ops() {
        assert!(op.is_public() && op.name() == tool, "MCP tool {tool} runs {op:?}");
    }
    // The dispatch table answers every name, and no other.
    let sql = database();
    with_profile(&sql, APRIL_15, |p| {
        for op in Op::ALL {
            if let Err(e) = block_on(p.dispatch(op.name(), json!({ "id": "not-an-id" }))) {
                assert!(!e.message().contains("no operation named"), "{} is not dispatched", op.name());
            }
        }
    });
}

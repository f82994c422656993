//! Metadata and the filters over it: what a caller attaches to a memory,
//! and how `recall`, `list` and `export` narrow what they read.
//!
//! **Metadata** is a flat map of string keys to strings, numbers or
//! booleans ([`Metadata`], limits [`MAX_METADATA_KEYS`] and the others
//! below). `agentId` and `userId` are plain metadata with reserved names:
//! their values must be strings, and the database indexes them.
//!
//! **A filter** has the shape mem0's users know: an object whose keys are
//! fields, each mapped to a value (equality) or to an operator object
//! (`eq`, `ne`, `in`, `nin`, `gt`, `gte`, `lt`, `lte`); the logical keys
//! `AND` and `OR` take arrays of such objects and `NOT` takes one. Keys
//! side by side in one object must all hold. Fields are metadata keys or
//! the built-ins [`BUILT_INS`] (`createdAt`, `updatedAt` and `eventDate`
//! take ISO-8601 dates or date-times, `type` a memory type).
//!
//! The semantics are those of one SQL expression per leaf, and
//! [`Filter::matches`] computes the same in Rust:
//! * a memory without the field matches `ne` and `nin`, and nothing else;
//! * values compare within their kind only: a number never equals or
//!   orders against a string; booleans are the numbers 1 and 0 (as SQLite's
//!   JSON functions read them);
//! * numbers compare exactly, as SQLite compares them: an integer is kept
//!   as one (never rounded to a float, so 2^53 + 1 is not 2^53) and an
//!   integer against a float by their exact values. An integer outside
//!   SQLite's (i64's) range is a float to SQLite: stored metadata holding
//!   one compares as that float on every path, and a filter naming one is
//!   refused (it could not be told from its neighbours);
//! * `NOT` is the exact complement of what it holds.
//!
//! What a filter does *not* do: it does not search inside values (no
//! prefix, substring or pattern operators), and it does not reach
//! messages, only the memories drawn from them.

use crate::core::error::{Error, Result};
use crate::core::model::{Memory, MemoryType};
use serde_json::Value;

/// Keys a memory's metadata may hold at most.
pub const MAX_METADATA_KEYS: usize = 32;
/// Characters of a metadata key at most (`[A-Za-z0-9_-]`, a letter or `_`
/// first).
pub const MAX_METADATA_KEY_CHARS: usize = 64;
/// Bytes of a string value at most.
pub const MAX_METADATA_VALUE_BYTES: usize = 512;
/// Bytes of a memory's metadata as JSON at most.
pub const MAX_METADATA_BYTES: usize = 4096;
/// How deeply `AND`, `OR` and `NOT` may nest.
pub const MAX_FILTER_DEPTH: usize = 5;
/// Conditions (leaves) a filter holds at most.
pub const MAX_FILTER_CONDITIONS: usize = 64;
/// Values an `in` or `nin` list holds at most.
pub const MAX_FILTER_LIST: usize = 100;
/// Bytes of a filter as JSON at most.
pub const MAX_FILTER_BYTES: usize = 16 * 1024;

/// The built-in fields a filter may name besides metadata keys.
pub const BUILT_INS: [&str; 7] = ["type", "sessionId", "agentId", "userId", "createdAt", "updatedAt", "eventDate"];
/// Metadata keys with a meaning of their own: string values, indexed.
pub const SCOPE_KEYS: [&str; 2] = ["agentId", "userId"];

pub use crate::core::model::{MetaValue, Metadata};

/// Whether a metadata map is empty (for `skip_serializing_if`).
pub fn is_empty(m: &Metadata) -> bool {
    m.is_empty()
}

/// Checks metadata against the limits; `what` names it in errors.
pub fn validate_metadata(what: &str, m: &Metadata) -> Result<()> {
    if m.len() > MAX_METADATA_KEYS {
        return Err(Error::invalid(format!("{what} has more than {MAX_METADATA_KEYS} keys")));
    }
    for (k, v) in m {
        validate_key(what, k)?;
        if BUILT_INS.contains(&k.as_str()) && !SCOPE_KEYS.contains(&k.as_str()) {
            return Err(Error::invalid(format!("{what}: {} is a built-in field, not a metadata key", crate::core::error::quoted(k))));
        }
        match v {
            MetaValue::Text(s) if s.len() > MAX_METADATA_VALUE_BYTES => {
                return Err(Error::invalid(format!("{what}.{k} is over {MAX_METADATA_VALUE_BYTES} bytes")));
            }
            MetaValue::Text(_) => {}
            _ if SCOPE_KEYS.contains(&k.as_str()) => return Err(Error::invalid(format!("{what}.{k} must be a string"))),
            _ => {}
        }
    }
    let bytes = serde_json::to_string(m).map_or(usize::MAX, |s| s.len());
    if bytes > MAX_METADATA_BYTES {
        return Err(Error::invalid(format!("{what} is over {MAX_METADATA_BYTES} bytes as JSON")));
    }
    Ok(())
}

fn validate_key(what: &str, k: &str) -> Result<()> {
    let mut chars = k.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    if !first_ok || k.chars().count() > MAX_METADATA_KEY_CHARS || !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') {
        return Err(Error::invalid(format!(
            "{what}: key {} must be 1-{MAX_METADATA_KEY_CHARS} characters of [A-Za-z0-9_-], starting with a letter or _",
            crate::core::error::quoted(k)
        )));
    }
    if matches!(k, "AND" | "OR" | "NOT") {
        return Err(Error::invalid(format!("{what}: {k} is reserved for filters")));
    }
    Ok(())
}

/// The condition a memory row `m` meets to have been active at the
/// instant bound as `?{at}` (ISO-8601 UTC as stored): stated by then, not
/// yet superseded then, and unexpired then. Forgotten memories never are.
pub fn valid_at(at: usize) -> String {
    format!(
        "m.status IN ('active', 'superseded', 'expired') AND COALESCE(m.valid_from, m.created_at) <= ?{at} \
         AND (m.valid_to IS NULL OR m.valid_to > ?{at}) AND (m.expires_at IS NULL OR m.expires_at > ?{at})"
    )
}

/// A filter given as a JSON object, or as its text (a query parameter).
pub fn from_json(v: &Value) -> Result<Filter> {
    match v {
        Value::String(s) => Filter::parse_text(s),
        other => Filter::parse(other),
    }
}

/// An `asOf` instant as stored (ISO-8601 UTC with milliseconds).
pub fn as_of(s: &str) -> Result<String> {
    crate::core::time::parse_millis(s).map(crate::core::time::iso).ok_or_else(|| Error::invalid("asOf must be an ISO-8601 date or date-time"))
}

/// A comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cmp {
    Eq,
    Ne,
    Gt,
    Gte,
    Lt,
    Lte,
    In,
    Nin,
}

impl Cmp {
    fn parse(s: &str) -> Option<Cmp> {
        Some(match s {
            "eq" => Cmp::Eq,
            "ne" => Cmp::Ne,
            "gt" => Cmp::Gt,
            "gte" => Cmp::Gte,
            "lt" => Cmp::Lt,
            "lte" => Cmp::Lte,
            "in" => Cmp::In,
            "nin" => Cmp::Nin,
            _ => return None,
        })
    }
}

/// A scalar a filter compares with: booleans are already numbers. The
/// numbers are SQLite's two kinds, so that Rust and SQL compare alike.
#[derive(Clone, Debug, PartialEq)]
pub enum Scalar {
    /// An integer in i64's range, compared exactly (SQLite's INTEGER).
    Int(i64),
    /// Any other number, finite (SQLite's REAL).
    Real(f64),
    Text(String),
}

impl Scalar {
    /// As the filter's SQL parameter holds it: an integer is written
    /// without a fraction, which SQLite's JSON functions read back as an
    /// INTEGER; a float with one (or an exponent), read back as a REAL.
    fn json(&self) -> Value {
        match self {
            Scalar::Int(n) => Value::from(*n),
            Scalar::Real(n) => serde_json::json!(n),
            Scalar::Text(s) => Value::String(s.clone()),
        }
    }

    /// A number of stored metadata as SQLite's `json_extract` reads it: an
    /// integer in i64's range is an INTEGER, anything else a REAL.
    fn of_number(n: &serde_json::Number) -> Scalar {
        match n.as_i64() {
            Some(i) => Scalar::Int(i),
            None => Scalar::Real(n.as_f64().unwrap_or(f64::NAN)),
        }
    }
}

/// A parsed, checked filter.
#[derive(Clone, Debug, PartialEq)]
pub enum Filter {
    /// Every one holds (an object's keys side by side, or `AND`).
    All(Vec<Filter>),
    /// At least one holds.
    Any(Vec<Filter>),
    Not(Box<Filter>),
    Leaf {
        field: String,
        cmp: Cmp,
        values: Vec<Scalar>,
    },
}

impl Filter {
    /// Parses and checks a filter given as JSON.
    pub fn parse(v: &Value) -> Result<Filter> {
        let bytes = serde_json::to_string(v).map_or(usize::MAX, |s| s.len());
        if bytes > MAX_FILTER_BYTES {
            return Err(Error::invalid(format!("filter is over {MAX_FILTER_BYTES} bytes")));
        }
        let mut leaves = 0usize;
        let f = parse_object(v, 0, &mut leaves)?;
        if leaves > MAX_FILTER_CONDITIONS {
            return Err(Error::invalid(format!("filter has more than {MAX_FILTER_CONDITIONS} conditions")));
        }
        Ok(f)
    }

    /// Parses a filter sent as text (a query parameter).
    pub fn parse_text(s: &str) -> Result<Filter> {
        if s.len() > MAX_FILTER_BYTES {
            return Err(Error::invalid(format!("filter is over {MAX_FILTER_BYTES} bytes")));
        }
        // Strict as a request body: a field named twice is refused, not
        // decided by its last value.
        let v = crate::core::json::parse_strict(s).map_err(|e| Error::invalid(format!("filter is not JSON: {e}")))?;
        Filter::parse(&v)
    }

    /// Whether `m` passes.
    pub fn matches(&self, m: &Memory) -> bool {
        match self {
            Filter::All(fs) => fs.iter().all(|f| f.matches(m)),
            Filter::Any(fs) => fs.iter().any(|f| f.matches(m)),
            Filter::Not(f) => !f.matches(m),
            Filter::Leaf { field, cmp, values } => leaf_matches(field_of(m, field).as_ref(), *cmp, values),
        }
    }

    /// The filter as one SQL expression over the memory row `m`, reading
    /// its values from the JSON array bound as `?{param}` (given by
    /// [`Filter::param`]): a single parameter, whatever the filter holds.
    pub fn sql(&self, param: usize) -> String {
        let mut at = 0usize;
        self.sql_at(param, &mut at, true)
    }

    /// Whether every memory passing holds one of a few values of a scope
    /// key (`agentId` or `userId` `eq` or `in`, alone or in the top-level
    /// conjunction): an index on that key, then the id, reads exactly
    /// those memories, in id order for one value (schema version 16).
    pub fn pins_scope_key(&self) -> bool {
        match self {
            Filter::Leaf { field, cmp: Cmp::Eq | Cmp::In, .. } => SCOPE_KEYS.contains(&field.as_str()),
            Filter::All(fs) => fs.iter().any(Filter::pins_scope_key),
            _ => false,
        }
    }

    /// The JSON array of the values [`Filter::sql`] reads, as text.
    pub fn param(&self) -> String {
        let mut out = Vec::new();
        self.values_into(&mut out);
        Value::Array(out).to_string()
    }

    fn values_into(&self, out: &mut Vec<Value>) {
        match self {
            Filter::All(fs) | Filter::Any(fs) => fs.iter().for_each(|f| f.values_into(out)),
            Filter::Not(f) => f.values_into(out),
            Filter::Leaf { cmp, values, .. } => match cmp {
                Cmp::In | Cmp::Nin => out.push(Value::Array(values.iter().map(Scalar::json).collect())),
                _ => out.push(values.first().map_or(Value::Null, Scalar::json)),
            },
        }
    }

    /// `positive`: not under a `NOT`, where an expression that is NULL
    /// (unknown) and one that is false reject a memory alike.
    fn sql_at(&self, param: usize, at: &mut usize, positive: bool) -> String {
        let join = |fs: &[Filter], op: &str, empty: &str, at: &mut usize| {
            if fs.is_empty() {
                return empty.to_string();
            }
            let parts: Vec<String> = fs.iter().map(|f| f.sql_at(param, at, positive)).collect();
            format!("({})", parts.join(op))
        };
        match self {
            Filter::All(fs) => join(fs, " AND ", "1", at),
            Filter::Any(fs) => join(fs, " OR ", "0", at),
            Filter::Not(f) => format!("(NOT {})", f.sql_at(param, at, !positive)),
            Filter::Leaf { field, cmp, values } => {
                let i = *at;
                *at = at.saturating_add(1);
                let e = column_of(field);
                let v = format!("(?{param} ->> '$[{i}]')");
                let numeric = matches!(values.first(), Some(Scalar::Int(_) | Scalar::Real(_)));
                let kind = match numeric {
                    true => format!("typeof({e}) IN ('integer', 'real')"),
                    false => format!("typeof({e}) = 'text'"),
                };
                // A metadata field is parsed from its JSON at each reading
                // (a filter over every memory read it twice). For one,
                // `BETWEEN` the value and the end of its kind in SQLite's
                // order (numbers, then text, then blobs) tests the kind and
                // the bound with one reading. Not for a column: one of TEXT
                // affinity would turn a number it is compared with into text.
                let (lowest, highest) = match numeric {
                    true => (NUMBER_LOWEST, NUMBER_HIGHEST),
                    false => (TEXT_LOWEST, TEXT_HIGHEST),
                };
                let metadata = !BUILT_INS.contains(&field.as_str());
                let test = match cmp {
                    Cmp::Eq => format!("({e} IS {v})"),
                    Cmp::Ne => format!("({e} IS NOT {v})"),
                    // `IN` lets an index on the field serve it (a scope key's);
                    // it is NULL for a memory without the field, which only a
                    // `NOT` would turn into a match: there, `EXISTS`.
                    Cmp::In if positive => format!("({e} IN (SELECT value FROM json_each(?{param}, '$[{i}]')))"),
                    Cmp::In => format!("EXISTS (SELECT 1 FROM json_each(?{param}, '$[{i}]') f WHERE f.value IS {e})"),
                    Cmp::Nin => format!("(NOT EXISTS (SELECT 1 FROM json_each(?{param}, '$[{i}]') f WHERE f.value IS {e}))"),
                    Cmp::Gt => format!("COALESCE({kind} AND {e} > {v}, 0)"),
                    Cmp::Gte if metadata => format!("COALESCE({e} BETWEEN {v} AND {highest}, 0)"),
                    Cmp::Gte => format!("COALESCE({kind} AND {e} >= {v}, 0)"),
                    Cmp::Lt => format!("COALESCE({kind} AND {e} < {v}, 0)"),
                    Cmp::Lte if metadata => format!("COALESCE({e} BETWEEN {lowest} AND {v}, 0)"),
                    Cmp::Lte => format!("COALESCE({kind} AND {e} <= {v}, 0)"),
                };
                // A memory remembered without a session holds '' as its
                // session: it has no sessionId, which only `ne` and `nin`
                // match. The column stays bare, for its index.
                match (field.as_str(), cmp) {
                    ("sessionId", Cmp::Ne | Cmp::Nin) => format!("({test} OR {e} = '')"),
                    ("sessionId", _) => format!("({test} AND {e} <> '')"),
                    _ => test,
                }
            }
        }
    }
}

/// The least and the greatest number in SQLite's order: the literals
/// overflow to negative and positive infinity.
const NUMBER_LOWEST: &str = "-9e999";
const NUMBER_HIGHEST: &str = "9e999";
/// The least text (every number sorts before it) and the least blob
/// (every text sorts before it; a field read from JSON is never a blob).
const TEXT_LOWEST: &str = "''";
const TEXT_HIGHEST: &str = "x''";

/// The SQL expression reading `field` of the memory row `m`.
fn column_of(field: &str) -> String {
    match field {
        "type" => "m.type".into(),
        "sessionId" => "m.session_id".into(),
        "agentId" => "m.agent_id".into(),
        "userId" => "m.user_id".into(),
        "createdAt" => "m.created_at".into(),
        "updatedAt" => "m.updated_at".into(),
        "eventDate" => "m.event_date".into(),
        // Keys are [A-Za-z0-9_-]: quoted, a path of one step.
        k => format!("json_extract(m.metadata, '$.\"{k}\"')"),
    }
}

/// `field` of `m` as a filter compares it.
fn field_of(m: &Memory, field: &str) -> Option<Scalar> {
    let text = |s: &str| Some(Scalar::Text(s.to_string()));
    match field {
        "type" => text(m.kind.as_str()),
        "sessionId" => Some(m.session_id.as_str()).filter(|s| !s.is_empty()).and_then(text),
        "createdAt" => text(&m.created_at),
        "updatedAt" => text(&m.updated_at),
        "eventDate" => m.event_date.as_deref().and_then(text),
        k => m.metadata.get(k).map(|v| match v {
            MetaValue::Bool(b) => Scalar::Int(i64::from(*b)),
            MetaValue::Number(n) => Scalar::of_number(n),
            MetaValue::Text(s) => Scalar::Text(s.clone()),
        }),
    }
}

fn same(a: &Scalar, b: &Scalar) -> bool {
    order(a, b) == Some(std::cmp::Ordering::Equal)
}

/// How `a` orders against `b`, as SQLite orders them; `None` across kinds
/// (a number and a string).
fn order(a: &Scalar, b: &Scalar) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Scalar::Int(x), Scalar::Int(y)) => Some(x.cmp(y)),
        (Scalar::Real(x), Scalar::Real(y)) => x.partial_cmp(y),
        (Scalar::Int(x), Scalar::Real(y)) => int_against_real(*x, *y),
        (Scalar::Real(x), Scalar::Int(y)) => int_against_real(*y, *x).map(std::cmp::Ordering::reverse),
        (Scalar::Text(x), Scalar::Text(y)) => Some(x.as_bytes().cmp(y.as_bytes())),
        _ => None,
    }
}

/// How the integer `i` orders against the float `r` by their exact values
/// (SQLite's `sqlite3IntFloatCompare`): never by rounding `i` to a float,
/// which would make 2^53 + 1 equal 2^53.
fn int_against_real(i: i64, r: f64) -> Option<std::cmp::Ordering> {
    use std::cmp::Ordering::*;
    // 2^63: the floats at or beyond it lie outside i64's range.
    const TWO_63: f64 = 9_223_372_036_854_775_808.0;
    if r.is_nan() {
        return None;
    }
    if r < -TWO_63 {
        return Some(Greater);
    }
    if r >= TWO_63 {
        return Some(Less);
    }
    // Within range, the integral part is exact as an i64.
    let whole = r.trunc() as i64;
    Some(match i.cmp(&whole) {
        Equal => 0.0f64.partial_cmp(&r.fract()).unwrap_or(Equal),
        o => o,
    })
}

fn leaf_matches(have: Option<&Scalar>, cmp: Cmp, values: &[Scalar]) -> bool {
    use std::cmp::Ordering::*;
    let Some(v) = values.first() else { return false };
    match cmp {
        Cmp::Eq => have.is_some_and(|h| same(h, v)),
        Cmp::Ne => !have.is_some_and(|h| same(h, v)),
        Cmp::In => have.is_some_and(|h| values.iter().any(|v| same(h, v))),
        Cmp::Nin => !have.is_some_and(|h| values.iter().any(|v| same(h, v))),
        Cmp::Gt => have.and_then(|h| order(h, v)).is_some_and(|o| o == Greater),
        Cmp::Gte => have.and_then(|h| order(h, v)).is_some_and(|o| o != Less),
        Cmp::Lt => have.and_then(|h| order(h, v)).is_some_and(|o| o == Less),
        Cmp::Lte => have.and_then(|h| order(h, v)).is_some_and(|o| o != Greater),
    }
}

fn parse_object(v: &Value, depth: usize, leaves: &mut usize) -> Result<Filter> {
    if depth > MAX_FILTER_DEPTH {
        return Err(Error::invalid(format!("filter nests more than {MAX_FILTER_DEPTH} levels")));
    }
    let Value::Object(map) = v else {
        return Err(Error::invalid("filter must be an object of fields, AND, OR or NOT"));
    };
    let mut all = Vec::new();
    for (k, v) in map {
        match k.as_str() {
            "AND" | "OR" => {
                let Value::Array(items) = v else {
                    return Err(Error::invalid(format!("filter: {k} takes an array of filters")));
                };
                if items.is_empty() {
                    return Err(Error::invalid(format!("filter: {k} must not be empty")));
                }
                let fs = items.iter().map(|i| parse_object(i, depth.saturating_add(1), leaves)).collect::<Result<Vec<_>>>()?;
                all.push(if k == "AND" { Filter::All(fs) } else { Filter::Any(fs) });
            }
            "NOT" => all.push(Filter::Not(Box::new(parse_object(v, depth.saturating_add(1), leaves)?))),
            field => all.extend(parse_field(field, v, leaves)?),
        }
    }
    if all.is_empty() {
        return Err(Error::invalid("filter must not be empty"));
    }
    Ok(if all.len() == 1 { all.remove(0) } else { Filter::All(all) })
}

fn parse_field(field: &str, v: &Value, leaves: &mut usize) -> Result<Vec<Filter>> {
    if !BUILT_INS.contains(&field) {
        validate_key("filter", field)?;
    }
    let ops: Vec<(Cmp, &Value)> = match v {
        Value::Object(ops) => {
            if ops.is_empty() {
                return Err(Error::invalid(format!("filter: {field} has an empty operator object")));
            }
            ops.iter()
                .map(|(op, val)| {
                    Cmp::parse(op).map(|c| (c, val)).ok_or_else(|| {
                        Error::invalid(format!("filter: unknown operator {} (eq, ne, in, nin, gt, gte, lt, lte)", crate::core::error::quoted(op)))
                    })
                })
                .collect::<Result<_>>()?
        }
        other => vec![(Cmp::Eq, other)],
    };
    let mut out = Vec::new();
    for (cmp, val) in ops {
        *leaves = leaves.saturating_add(1);
        let values = match (cmp, val) {
            (Cmp::In | Cmp::Nin, Value::Array(items)) => {
                if items.is_empty() || items.len() > MAX_FILTER_LIST {
                    return Err(Error::invalid(format!("filter: {field} takes a list of 1-{MAX_FILTER_LIST} values")));
                }
                items.iter().map(|i| scalar(field, i)).collect::<Result<Vec<_>>>()?
            }
            (Cmp::In | Cmp::Nin, _) => return Err(Error::invalid(format!("filter: in and nin take a list ({field})"))),
            (_, val) => vec![scalar(field, val)?],
        };
        let ordered = matches!(cmp, Cmp::Gt | Cmp::Gte | Cmp::Lt | Cmp::Lte);
        if ordered && matches!(val, Value::Bool(_)) {
            return Err(Error::invalid(format!("filter: {field} cannot be ordered against a boolean")));
        }
        out.push(Filter::Leaf { field: field.to_string(), cmp, values });
    }
    Ok(out)
}

/// A value to compare `field` with: checked and, for the built-ins,
/// written as they are stored.
fn scalar(field: &str, v: &Value) -> Result<Scalar> {
    let s = match v {
        Value::Bool(b) => Scalar::Int(i64::from(*b)),
        Value::Number(n) if n.is_u64() && n.as_i64().is_none() => {
            return Err(Error::invalid(format!(
                "filter: {field} has the integer {n}, above {}: integers in a filter must fit in 64 bits, signed, to compare exactly",
                i64::MAX
            )))
        }
        Value::Number(n) => match Scalar::of_number(n) {
            Scalar::Real(f) if !f.is_finite() => return Err(Error::invalid(format!("filter: {field} has a number out of range"))),
            s => s,
        },
        Value::String(s) if s.len() <= MAX_METADATA_VALUE_BYTES => Scalar::Text(s.clone()),
        Value::String(_) => return Err(Error::invalid(format!("filter: a value of {field} is over {MAX_METADATA_VALUE_BYTES} bytes"))),
        _ => return Err(Error::invalid(format!("filter: {field} takes a string, number or boolean (or an operator object)"))),
    };
    let text = match &s {
        Scalar::Text(t) => Some(t.as_str()),
        Scalar::Int(_) | Scalar::Real(_) => None,
    };
    match field {
        "type" => match text.and_then(MemoryType::parse) {
            Some(_) => Ok(s),
            None => Err(Error::invalid("filter: type is fact, event, instruction or task")),
        },
        "createdAt" | "updatedAt" => {
            let millis =
                text.and_then(crate::core::time::parse_millis).ok_or_else(|| Error::invalid(format!("filter: {field} takes an ISO-8601 date or date-time")))?;
            Ok(Scalar::Text(crate::core::time::iso(millis)))
        }
        "eventDate" => {
            // A date-time's own day, where it was said, as ingest, import
            // and the model's reader store one.
            let day = text.and_then(crate::core::time::local_date_of).ok_or_else(|| Error::invalid("filter: eventDate takes an ISO-8601 date"))?;
            Ok(Scalar::Text(day.format("%Y-%m-%d").to_string()))
        }
        "sessionId" | "agentId" | "userId" if text.is_none() => Err(Error::invalid(format!("filter: {field} takes a string"))),
        _ => Ok(s),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mem(meta: serde_json::Value) -> Memory {
        let mut m = Memory::sample("m1", "x");
        m.metadata = serde_json::from_value(meta).unwrap();
        m
    }

    #[test]
    fn test_a_missing_field_matches_ne_and_nin_only() {
        let m = mem(json!({}));
        for (f, want) in [
            (json!({"p": 1}), false),
            (json!({"p": {"ne": 1}}), true),
            (json!({"p": {"in": [1]}}), false),
            (json!({"p": {"nin": [1]}}), true),
            (json!({"p": {"gt": 0}}), false),
            (json!({"NOT": {"p": {"gt": 0}}}), true),
        ] {
            assert_eq!(Filter::parse(&f).unwrap().matches(&m), want, "{f}");
        }
    }

    #[test]
    fn test_values_compare_within_their_kind_and_booleans_are_numbers() {
        let m = mem(json!({"n": 2, "s": "2", "b": true}));
        assert!(!Filter::parse(&json!({"n": "2"})).unwrap().matches(&m));
        assert!(!Filter::parse(&json!({"s": {"gt": 1}})).unwrap().matches(&m));
        assert!(Filter::parse(&json!({"b": 1})).unwrap().matches(&m));
        assert!(Filter::parse(&json!({"AND": [{"n": {"gte": 2}}, {"s": {"in": ["1", "2"]}}]})).unwrap().matches(&m));
    }

    #[test]
    fn test_bad_filters_are_refused() {
        for bad in [
            json!([]),
            json!({}),
            json!({"p": {"like": "a%"}}),
            json!({"p": {"in": 1}}),
            json!({"p": {"in": []}}),
            json!({"p": null}),
            json!({"p": {"gt": true}}),
            json!({"type": "thought"}),
            json!({"createdAt": {"gt": "yesterday"}}),
            json!({"bad key": 1}),
            json!({"AND": {}}),
            json!({"NOT": {"NOT": {"NOT": {"NOT": {"NOT": {"NOT": {"p": 1}}}}}}}),
        ] {
            assert!(Filter::parse(&bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn test_a_filter_text_naming_a_key_twice_is_refused() {
        for text in [r#"{"agentId":"alice","agentId":"bob"}"#, r#"{"p":{"gte":1,"gte":5}}"#, r#"{"OR":[{"a":1,"a":2}]}"#] {
            let e = from_json(&Value::String(text.into())).unwrap_err();
            assert!(e.is_invalid() && e.message().contains("duplicate key"), "{text}: {e}");
        }
        assert!(from_json(&Value::String(r#"{"agentId":"alice","userId":"bob"}"#.into())).is_ok());
    }

    #[test]
    fn test_metadata_limits_and_reserved_names() {
        let ok: Metadata = serde_json::from_value(json!({"agentId": "a", "priority": 2, "draft": false})).unwrap();
        assert!(validate_metadata("metadata", &ok).is_ok());
        for bad in [json!({"agentId": 3}), json!({"type": "x"}), json!({"a b": 1}), json!({"s": "x".repeat(600)})] {
            let m: Metadata = serde_json::from_value(bad.clone()).unwrap();
            assert!(validate_metadata("metadata", &m).is_err(), "{bad} accepted");
        }
    }
}

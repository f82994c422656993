//! The internal call a Worker posts to a profile's Durable Object
//! ([`ObjectCall`]), the headers it travels with, and the checks the RPC
//! entry (the service binding) makes before it sends one.

use super::body::MAX_BODY_BYTES;
use crate::core::api::{self, MAX_IMPORT_BYTES};
use crate::core::error::{Error, Result};
use crate::core::op::Op;
use serde_json::Value;

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
/// ([`envelope_ends`](super::envelope_ends)).
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

//! The named string schemas the contracts reference by name (`Id`,
//! `Name`, `SessionId`): a record's field says which it holds with
//! `#[schemars(with = "crate::core::wire::Id")]`. What they accept is what
//! `core::api`'s validators accept (tests/contract.rs holds the limits to
//! its constants). Below `api` and `model`, which both use it.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

/// A memory or message id.
pub struct Id;
/// A namespace or profile name.
pub struct Name;
/// A session id.
pub struct SessionId;

impl JsonSchema for Id {
    fn schema_name() -> Cow<'static, str> {
        "Id".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "pattern": "^[0-9a-f]{32}$",
            "description": "32 lowercase hexadecimal characters. Memory ids sort by creation time; message ids are the first 128 bits of SHA-256(session id, role, content)."
        })
    }
}

impl JsonSchema for Name {
    fn schema_name() -> Cow<'static, str> {
        "Name".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": 32,
            "pattern": "^[A-Za-z0-9._-]{1,32}$",
            "description": "A namespace or profile name: 1-32 characters of [A-Za-z0-9._-], and not `.` or `..`."
        })
    }
}

impl JsonSchema for SessionId {
    fn schema_name() -> Cow<'static, str> {
        "SessionId".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
            "description": "1-64 characters, no control characters."
        })
    }
}

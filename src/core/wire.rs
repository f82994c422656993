//! The named string schemas the contracts reference by name (`Id`,
//! `Name`, `SessionId`): a record's field says which it holds with
//! `#[schemars(with = "crate::core::wire::Id")]`. What they accept is what
//! `core::api`'s validators accept (tests/contract.rs holds the limits to
//! its constants). Below `api` and `model`, which both use it.

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use std::borrow::Cow;

/// A memory or message id.
pub struct Id;
/// A namespace name.
pub struct Name;
/// A profile name.
pub struct ProfileName;
/// A session id.
pub struct SessionId;
/// A list cursor as a caller sends it back: an id, or empty.
pub struct Cursor;

impl JsonSchema for Id {
    fn schema_name() -> Cow<'static, str> {
        "Id".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": 64,
            "pattern": "^[0-9A-Za-z]{1,64}$",
            "description": "New memory ids are ULIDs (26 characters of Crockford base32, lowercase, sorting by creation time); memories made before them keep their 32 lowercase hexadecimal characters. Message ids are the first 128 bits of SHA-256(session id, role, content), as 32 lowercase hexadecimal characters. Treat ids as opaque."
        })
    }
}

impl JsonSchema for Cursor {
    fn schema_name() -> Cow<'static, str> {
        "Cursor".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "maxLength": 77,
            "pattern": "^([0-9A-Za-z]{1,64}\\.[0-9a-f]{12})?$",
            "description": "The `cursor` of the previous page: opaque, sealed to the profile that returned it. Empty asks for the first page (a client that sends back an empty cursor gets it, not a 400); a value this profile did not return is refused."
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
            "description": "A namespace name: 1-32 characters of [A-Za-z0-9._-], and not `.` or `..`."
        })
    }
}

impl JsonSchema for ProfileName {
    fn schema_name() -> Cow<'static, str> {
        "ProfileName".into()
    }
    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "string",
            "minLength": 1,
            "maxLength": 100,
            "pattern": "^[A-Za-z0-9._@+-]{1,100}$",
            "description": "A profile name: 1-100 characters of [A-Za-z0-9._@+-] (an email serves), and not `.` or `..`."
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

/// A session id that may be absent: a memory remembered without a
/// session is stored with an empty session id (no caller can give one:
/// `validate_session_id` refuses it) and reads as `null`, as the published
/// interface types `sessionId: string | null`.
pub mod nullable_session {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(session: &str, s: S) -> Result<S::Ok, S::Error> {
        if session.is_empty() {
            s.serialize_none()
        } else {
            s.serialize_str(session)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
        Ok(Option::<String>::deserialize(d)?.unwrap_or_default())
    }
}

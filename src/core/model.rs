//! The records of the interface contract (SPEC.md section 8).
//!
//! Field names here are the wire names (camelCase); `tests/wit_agreement.rs`
//! keeps them in agreement with the WIT package in `wit/`.

use serde::{Deserialize, Serialize};

/// The four kinds of memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryType {
    /// What is true now: atomic, stable.
    Fact,
    /// What happened at a specific time.
    Event,
    /// How to do something.
    Instruction,
    /// What is being worked on now; ephemeral, never vectorized.
    Task,
}

impl MemoryType {
    pub const ALL: [MemoryType; 4] = [MemoryType::Fact, MemoryType::Event, MemoryType::Instruction, MemoryType::Task];

    pub fn as_str(self) -> &'static str {
        match self {
            MemoryType::Fact => "fact",
            MemoryType::Event => "event",
            MemoryType::Instruction => "instruction",
            MemoryType::Task => "task",
        }
    }

    pub fn parse(s: &str) -> Option<MemoryType> {
        MemoryType::ALL.into_iter().find(|t| t.as_str() == s)
    }

    /// Facts and instructions carry a topic key and can be superseded.
    pub fn is_keyed(self) -> bool {
        matches!(self, MemoryType::Fact | MemoryType::Instruction)
    }
}

/// Where a memory stands in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Active,
    Superseded,
    Forgotten,
    Expired,
}

impl Status {
    pub const ALL: [Status; 4] = [Status::Active, Status::Superseded, Status::Forgotten, Status::Expired];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Superseded => "superseded",
            Status::Forgotten => "forgotten",
            Status::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

/// How widely recall searches (`thinkingLevel`): each level multiplies
/// the candidates every channel returns and the full-text pools they are
/// drawn from ([`ThinkingLevel::breadth`]). The answer's length is
/// [`ResponseLength`]'s.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ThinkingLevel {
    /// The default: every channel's usual depth.
    #[default]
    Low,
    /// Twice the candidates per channel and twice the pools.
    Medium,
    /// Four times the candidates per channel and the pools.
    High,
}

impl ThinkingLevel {
    /// How many times the usual candidates and pools this level searches.
    pub fn breadth(self) -> usize {
        match self {
            ThinkingLevel::Low => 1,
            ThinkingLevel::Medium => 2,
            ThinkingLevel::High => 4,
        }
    }
}

/// How long a recall's synthesized answer should be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ResponseLength {
    Short,
    #[default]
    Medium,
    Long,
}

/// Most bytes in one message's content.
pub const MAX_MESSAGE_BYTES: usize = 32 * 1024;
/// Longest role of a message.
pub const MAX_ROLE_CHARS: usize = 64;

/// A message as a caller sends it: a JSON object.
#[derive(Clone, Debug, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageInput {
    #[schemars(length(min = 1, max = MAX_ROLE_CHARS))]
    pub role: String,
    /// The message's text, verbatim; it may be empty (an assistant turn
    /// that said nothing). At most 32,768 bytes of UTF-8 (`maxLength`
    /// counts characters, so it bounds the text only loosely).
    #[schemars(length(max = MAX_MESSAGE_BYTES))]
    pub content: String,
    /// ISO-8601 date or date-time; relative dates in the content resolve
    /// against it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

/// [`MessageInput`]'s fields as serde's derive reads them.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MessageInputFields {
    role: String,
    content: String,
    #[serde(default)]
    timestamp: Option<String>,
}

/// Serde's derive also reads a struct from an array, field by field
/// (`["user", "hi"]` as role and content): a message is read from a JSON
/// object only, so that shape is refused rather than guessed at.
impl<'de> Deserialize<'de> for MessageInput {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let object = serde_json::Map::<String, serde_json::Value>::deserialize(d)?;
        let f: MessageInputFields = serde_json::from_value(serde_json::Value::Object(object)).map_err(serde::de::Error::custom)?;
        Ok(MessageInput { role: f.role, content: f.content, timestamp: f.timestamp })
    }
}

/// A raw message as stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[schemars(with = "crate::core::wire::Id")]
    pub id: String,
    #[schemars(with = "crate::core::wire::SessionId")]
    pub session_id: String,
    pub role: String,
    pub content: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
    /// Position of the message in its session (0-based, first seen).
    pub position: i64,
    pub created_at: String,
    /// The metadata of the call that stored it.
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

/// A memory record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Memory {
    #[schemars(with = "crate::core::wire::Id")]
    pub id: String,
    #[serde(rename = "type")]
    pub kind: MemoryType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub summary: String,
    pub content: String,
    /// `null` for a memory remembered without a session.
    #[serde(with = "crate::core::wire::nullable_session")]
    #[schemars(with = "Option<crate::core::wire::SessionId>")]
    pub session_id: String,
    #[schemars(with = "Vec<crate::core::wire::Id>")]
    pub source_message_ids: Vec<String>,
    pub search_queries: Vec<String>,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::core::wire::Id>")]
    pub supersedes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::core::wire::Id>")]
    pub superseded_by: Option<String>,
    /// When the remembered thing happened or was said (ISO date), if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_date: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// What the caller attached: a flat map of string keys to strings,
    /// numbers or booleans (`agentId` and `userId` are strings).
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
    /// From when what it says held (ISO-8601): when its source messages
    /// were said, else when it was stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_from: Option<String>,
    /// Until when it held: when the memory that superseded it was said.
    /// Absent while it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_to: Option<String>,
}

impl Memory {
    /// When it was said, as stored: the start of its validity, else when
    /// it was stored.
    pub fn said_from(&self) -> &str {
        self.valid_from.as_deref().unwrap_or(&self.created_at)
    }

    /// When it was said, in milliseconds: the start of its validity, else
    /// when it was stored (0 for neither readable). Versions are ordered
    /// by it.
    pub fn said_at(&self) -> i64 {
        crate::core::time::parse_millis(self.said_from()).unwrap_or(0)
    }
}

#[cfg(test)]
impl Memory {
    /// An active, unkeyed fact with this id and content; unit tests adjust
    /// the fields they care about.
    pub(crate) fn sample(id: &str, content: &str) -> Memory {
        Memory {
            id: id.into(),
            kind: MemoryType::Fact,
            key: None,
            summary: content.into(),
            content: content.into(),
            session_id: "s".into(),
            source_message_ids: vec![],
            search_queries: vec![],
            status: Status::Active,
            supersedes: None,
            superseded_by: None,
            event_date: None,
            created_at: String::new(),
            updated_at: String::new(),
            expires_at: None,
            metadata: Metadata::new(),
            valid_from: None,
            valid_to: None,
        }
    }
}

/// A memory together with its version chain and source messages, as `get`
/// returns it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryDetail {
    #[serde(flatten)]
    pub memory: Memory,
    /// Oldest first; includes this memory. At most the 100 nearest it
    /// (one older, one newer, in turn) and 1 MiB of their texts.
    pub versions: Vec<Memory>,
    /// Whether versions were left out: `get` of the oldest (or newest)
    /// given reads on from there.
    pub more_versions: bool,
    /// At most 1 MiB of their texts (one message always).
    pub source_messages: Vec<Message>,
    /// Whether source messages were left out.
    pub more_source_messages: bool,
    /// The consolidations this memory took part in, oldest first: what it
    /// was consolidated from, or into.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub consolidations: Vec<ConsolidationRecord>,
}

/// One change a consolidation made (or, in a dry run, would make): an
/// auditable, reversible operation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsolidationRecord {
    /// Its id, for `undo` (0 in a dry run).
    pub id: i64,
    pub run_id: String,
    /// `merge`, `supersede`, `fold` or `retire`.
    pub action: String,
    /// The memory that holds the result: the survivor of a merge, the
    /// newest of a supersession, the memory a fold created, the retired
    /// task.
    #[schemars(with = "crate::core::wire::Id")]
    pub target: String,
    /// The memories it was made from (the target included when it was one
    /// of them).
    #[schemars(with = "Vec<crate::core::wire::Id>")]
    pub members: Vec<String>,
    pub reason: String,
    pub at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub undone_at: Option<String>,
}

/// What `consolidate` did (or, with `dryRun`, would do).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsolidationReport {
    pub run_id: String,
    pub dry_run: bool,
    /// Whether the run went over the whole profile; if not, the alarm
    /// goes on with it in the background (a dry run, which keeps no
    /// cursor: it previewed the first `maxWindows` windows only).
    pub done: bool,
    /// Active memories read.
    pub examined: usize,
    pub active_before: i64,
    pub active_after: i64,
    pub actions: Vec<ConsolidationRecord>,
    /// The record of a run in progress that did not read, as it was
    /// stored, which this run replaced. The replaced run's windows kept
    /// their changes (each was committed with its records).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaced_run: Option<String>,
}

/// A page of memories, as the store reads it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ListPage {
    pub memories: Vec<Memory>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::core::wire::Cursor>")]
    pub cursor: Option<String>,
}

/// A memory in a list: the memory without its `content`, as the
/// published interface lists them (`get` gives the whole memory).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemoryEntry {
    #[schemars(with = "crate::core::wire::Id")]
    pub id: String,
    #[serde(rename = "type")]
    pub kind: MemoryType,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    pub summary: String,
    /// `null` for a memory remembered without a session.
    #[serde(with = "crate::core::wire::nullable_session")]
    #[schemars(with = "Option<crate::core::wire::SessionId>")]
    pub session_id: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_date: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

impl From<Memory> for MemoryEntry {
    fn from(m: Memory) -> MemoryEntry {
        let Memory { id, kind, key, summary, session_id, status, event_date, created_at, updated_at, expires_at, metadata, .. } = m;
        MemoryEntry { id, kind, key, summary, session_id, status, event_date, created_at, updated_at, expires_at, metadata }
    }
}

/// What `list` returns: a page of entries, and the cursor of the next
/// page (absent on the last one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct MemoryList {
    pub memories: Vec<MemoryEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<crate::core::wire::Cursor>")]
    pub cursor: Option<String>,
}

impl From<ListPage> for MemoryList {
    fn from(page: ListPage) -> MemoryList {
        MemoryList { memories: page.memories.into_iter().map(MemoryEntry::from).collect(), cursor: page.cursor }
    }
}

/// What `ingest` reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngestReport {
    #[schemars(with = "crate::core::wire::SessionId")]
    pub session_id: String,
    /// Ids of every message of the call, in order (new or already stored).
    #[schemars(with = "Vec<crate::core::wire::Id>")]
    pub message_ids: Vec<String>,
    pub messages_stored: usize,
    pub memories_stored: usize,
    pub memories_superseded: usize,
    /// The memories this call created.
    pub memories: Vec<Memory>,
    /// Extracted items that verification dropped, with the reason.
    pub dropped: Vec<Dropped>,
}

/// An extracted item that did not pass verification.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Dropped {
    pub content: String,
    pub reason: String,
}

/// Profile statistics, for the console.
/// Most parked jobs [`Stats::parked`] shows.
pub const PARKED_SHOWN: usize = 10;

/// A background job parked after its attempts ([`Stats::parked`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ParkedJob {
    /// `embed`, `unvector`, `extract`, `index_text`, `consolidate`, or a
    /// kind this version does not run.
    pub kind: String,
    /// What it works on: a memory id, a session id, a run; none for some.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    pub attempts: i64,
    /// When it is tried once more (none: this version cannot run it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_at: Option<String>,
    /// Its last error, with how many attempts it had used when parked.
    pub error: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub messages: i64,
    pub sessions: i64,
    pub memories: i64,
    pub by_type: std::collections::BTreeMap<String, i64>,
    pub by_status: std::collections::BTreeMap<String, i64>,
    /// Background jobs waiting (not parked).
    pub pending_jobs: i64,
    /// Of those, jobs that failed at least once and wait for a retry.
    pub failed_jobs: i64,
    /// Jobs parked after their attempt cap (tried once more a day later,
    /// and parked again if that fails), or of an unknown kind (never
    /// run), kept with their last error.
    #[serde(default)]
    pub parked_jobs: i64,
    /// The oldest parked jobs (at most [`PARKED_SHOWN`]), each with its
    /// last error: what background work is stuck, and why.
    #[serde(default)]
    pub parked: Vec<ParkedJob>,
    /// Why the last background drain failed, in whole or in part beside
    /// its jobs (the time, then the error); absent once one runs clean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drain_error: Option<String>,
    pub vectors: i64,
    pub storage_bytes: i64,
    /// Exports being read out, each a copy of the profile (or of what its
    /// filter kept) held in the database until it is read.
    #[serde(default)]
    pub spooled_exports: i64,
    /// What this profile keeps in memory between requests (its turn
    /// directory and vector codes); 0 when nothing is resident.
    #[serde(default)]
    pub resident_bytes: u64,
    /// The memory of the isolate the profile runs in (absent natively).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub isolate: Option<crate::core::resident::IsolateMemory>,
}

/// What `getSummary` returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Summary {
    /// A Markdown digest of the active memories.
    pub summary: String,
}

/// What `delete` returns: the deleted memory (as the published interface
/// returns it), every memory that cited one of its source messages, and
/// those messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteReport {
    #[serde(flatten)]
    pub memory: Memory,
    #[schemars(with = "Vec<crate::core::wire::Id>")]
    pub deleted_memories: Vec<String>,
    #[schemars(with = "Vec<crate::core::wire::Id>")]
    pub deleted_messages: Vec<String>,
}

/// What `deleteSession` returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionDeleteReport {
    #[schemars(with = "crate::core::wire::SessionId")]
    pub session_id: String,
    pub deleted_memories: u64,
    pub deleted_messages: u64,
}

/// What `deleteProfile` returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProfileDeleteReport {
    pub deleted: bool,
    /// When the profile was marked for deletion (ISO-8601).
    pub marked_at: String,
    /// When the profile is purged unless restored before (ISO-8601).
    pub purge_at: String,
}

/// What `restoreProfile` returns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ProfileRestoreReport {
    pub restored: bool,
}

/// A metadata value.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum MetaValue {
    Bool(bool),
    Number(serde_json::Number),
    Text(String),
}

/// A memory's metadata: flat, keys in order.
pub type Metadata = std::collections::BTreeMap<String, MetaValue>;

/// Optional metadata of a request: `null` (an `undefined` over RPC) is
/// not given, as for every other optional field, on every way in.
pub fn metadata_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Metadata, D::Error> {
    Ok(<Option<Metadata> as serde::Deserialize>::deserialize(d)?.unwrap_or_default())
}

/// Whose a memory is: its `agentId` and `userId` (metadata of reserved
/// names, always strings). Memories of different owners are never merged,
/// folded or superseded into one another; their other metadata (a
/// priority, a label) does not make them someone else's.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Owner {
    pub agent_id: Option<String>,
    pub user_id: Option<String>,
}

impl Owner {
    pub fn of(metadata: &Metadata) -> Owner {
        let text = |k: &str| match metadata.get(k) {
            Some(MetaValue::Text(t)) => Some(t.clone()),
            _ => None,
        };
        Owner { agent_id: text("agentId"), user_id: text("userId") }
    }
}

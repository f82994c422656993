//! Export and import: a profile as NDJSON, one record per line.
//!
//! ```text
//! {"kind":"header","format":"agent-memory-export","version":1,"profile":"ns/p","exportedAt":"..."}
//! {"kind":"message", ...Message}
//! {"kind":"memory", ...Memory}
//! {"kind":"restatement","memoryId":"...","messageId":"..."}
//! {"kind":"withheld","messageId":"...","fingerprint":"..."}
//! {"kind":"consolidation","id":1,"action":"fold",...,"before":[...Memory]}
//! ```
//! A restatement records that a message said a memory again word for
//! word (core::store::restatements): deleting the messages the memory
//! cites then moves it to that message. A withheld record is what such a
//! message said of a memory since deleted by id, by its fingerprint: a
//! retry of the message's session does not store it anew. A consolidation
//! record is a change consolidation made and not undone, with the memories as they were
//! before it: an imported profile can undo it, and a later value of a
//! folded member's key reopens the fold, as in the profile exported.
//! Import validates the whole file before writing anything, then writes
//! everything in one transaction; records already present are left as
//! they are (`INSERT OR IGNORE`), but for one held active that a new
//! active version in the file supersedes: it is superseded by it; and a
//! file's active memory meeting another active holder of its key by key
//! alone ends as ingest would have left them (`import::settle_keys`). A file is taken only when it is
//! consistent: each line as strict as a request body, each record once,
//! each passing its write route's checks, its dates as the service writes
//! them, its links to other versions held by the file or the profile.
//!
//! One file per stage: `export` writes a profile's file to the spool and
//! reads it out, `parse` reads and validates a file whole, `import` writes
//! a parsed file in one transaction. This file holds the records the
//! three share.

use crate::core::model::{Memory, Message};
use serde::{Deserialize, Serialize};

mod export;
mod import;
mod parse;

pub use export::{read_whole, spool_export, Spooled, SpooledParts, ABANDONED_EXPORT_MILLIS, EXPORT_PART_BYTES, MAX_SPOOLED_EXPORTS};
pub use import::{adds, import};
pub use parse::{check_links, parse};

pub const FORMAT: &str = "agent-memory-export";
pub const VERSION: i64 = 1;

/// A change consolidation made, with the memories as they were before it
/// and those it created (an export's `consolidation` record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConsolidationEntry {
    pub id: i64,
    pub run_id: String,
    pub action: String,
    pub target: String,
    pub members: Vec<String>,
    #[serde(default)]
    pub created: Vec<String>,
    pub reason: String,
    pub at: String,
    pub before: Vec<Memory>,
}

impl ConsolidationEntry {
    pub(super) fn of(r: crate::core::model::ConsolidationRecord, before: Vec<Memory>, created: Vec<String>) -> ConsolidationEntry {
        ConsolidationEntry { id: r.id, run_id: r.run_id, action: r.action, target: r.target, members: r.members, created, reason: r.reason, at: r.at, before }
    }

    /// Every memory it names: its target, members and those it created.
    pub(super) fn involved(&self) -> impl Iterator<Item = &String> {
        std::iter::once(&self.target).chain(&self.members).chain(&self.created)
    }

    pub(super) fn record(&self) -> crate::core::model::ConsolidationRecord {
        crate::core::model::ConsolidationRecord {
            id: self.id,
            run_id: self.run_id.clone(),
            action: self.action.clone(),
            target: self.target.clone(),
            members: self.members.clone(),
            reason: self.reason.clone(),
            at: self.at.clone(),
            undone_at: None,
        }
    }
}

/// What a message said again of a memory since deleted by id, by the
/// memory's fingerprint (an export's `withheld` record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Withheld {
    pub message_id: String,
    pub fingerprint: String,
}

/// A message that said a memory again word for word (an export's
/// `restatement` record).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Restatement {
    pub memory_id: String,
    pub message_id: String,
}

/// A parsed, validated export file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Parsed {
    pub messages: Vec<Message>,
    pub memories: Vec<Memory>,
    pub restatements: Vec<Restatement>,
    pub withheld: Vec<Withheld>,
    pub consolidations: Vec<ConsolidationEntry>,
    /// The memories and messages its restatements and withheld records
    /// name that the file does not hold: the profile must ([`check_links`]).
    pub outside_restated: Vec<Link>,
    /// The versions its memories name (`supersedes`, `supersededBy`) that
    /// the file does not hold: the profile must ([`check_links`]).
    pub outside: Vec<Link>,
}

impl Parsed {
    /// Whether the file holds no records (a header alone).
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.memories.is_empty() && self.restatements.is_empty() && self.withheld.is_empty() && self.consolidations.is_empty()
    }
}

/// A memory's link to another version, as a file gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    /// The line of the memory that names it.
    pub line: usize,
    /// `supersedes` or `supersededBy`.
    pub field: &'static str,
    pub id: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    pub messages: usize,
    pub memories: usize,
    /// The file's consolidation records not written: those touching a
    /// memory the profile held before the import (left as it is: an undo
    /// would write the file's copy over it; an export imported again
    /// leaves each of its records out so), and those recording a change
    /// held already (the same run, action, target and time).
    #[serde(default)]
    pub consolidations_left_out: usize,
}

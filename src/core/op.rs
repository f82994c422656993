//! The operations on a profile: the one list every way in reads. An
//! operation's name (as REST's `operationId`, the RPC method and the
//! object's internal call carry it), whether it writes, and what it needs
//! of the profile's resident state are said here once.

use crate::core::api;
use crate::core::error::{Error, Result};

/// An operation on a profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Op {
    Ingest,
    Remember,
    Recall,
    List,
    Get,
    Forget,
    Delete,
    DeleteSession,
    GetSummary,
    Export,
    Import,
    Stats,
    DeleteProfile,
    RestoreProfile,
    /// Replaces a memory's metadata.
    Update,
    Consolidate,
    UndoConsolidation,
    /// The alarm's background drain; no way in offers it to callers.
    Drain,
    /// Wipes the profile at once: a namespace's deletion sends it to each
    /// of its profiles; no way in offers it to callers.
    Purge,
}

impl Op {
    pub const ALL: [Op; 19] = [
        Op::Ingest,
        Op::Remember,
        Op::Recall,
        Op::List,
        Op::Get,
        Op::Forget,
        Op::Delete,
        Op::DeleteSession,
        Op::GetSummary,
        Op::Export,
        Op::Import,
        Op::Stats,
        Op::DeleteProfile,
        Op::RestoreProfile,
        Op::Update,
        Op::Consolidate,
        Op::UndoConsolidation,
        Op::Drain,
        Op::Purge,
    ];

    /// Its name: REST's `operationId`, the RPC method, the internal call.
    pub fn name(self) -> &'static str {
        match self {
            Op::Ingest => "ingest",
            Op::Remember => "remember",
            Op::Recall => "recall",
            Op::List => "list",
            Op::Get => "get",
            Op::Forget => "forget",
            Op::Delete => "delete",
            Op::DeleteSession => "deleteSession",
            Op::GetSummary => "getSummary",
            Op::Export => "export",
            Op::Import => "import",
            Op::Stats => "stats",
            Op::DeleteProfile => "deleteProfile",
            Op::RestoreProfile => "restoreProfile",
            Op::Update => "update",
            Op::Consolidate => "consolidate",
            Op::UndoConsolidation => "undoConsolidation",
            Op::Drain => "drain",
            Op::Purge => "purge",
        }
    }

    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether callers reach it (REST, RPC); the drain is the alarm's
    /// own, the purge the catalog's.
    pub fn is_public(self) -> bool {
        !matches!(self, Op::Drain | Op::Purge)
    }

    /// Whether it may write: the object checks its alarm after it.
    pub fn writes(self) -> bool {
        !matches!(self, Op::Recall | Op::List | Op::Get | Op::GetSummary | Op::Export | Op::Stats)
    }

    /// Whether it reads the profile's resident state (turn directory,
    /// vector codes) when there is one: a profile without asks for it to
    /// be built after the response, within the isolate's budget. Every
    /// other operation runs the same with or without it (writes keep a
    /// resident state in step).
    pub fn uses_state(self) -> bool {
        matches!(self, Op::Recall)
    }

    /// Whether it may create a profile (a profile is created by its first
    /// write): a profile marked for deletion is purged before it runs, and
    /// a namespace nobody created is created by it.
    pub fn creates(self) -> bool {
        matches!(self, Op::Ingest | Op::Remember | Op::Import)
    }

    /// Whether a profile marked for deletion still answers it: the
    /// deletion itself (again), its undoing, and the drain that purges.
    pub fn answers_while_marked(self) -> bool {
        matches!(self, Op::DeleteProfile | Op::RestoreProfile | Op::Drain | Op::Purge)
    }

    /// Whether Cloudflare's published interface gives no result for it
    /// (`Promise<void>`; `result: null` over REST): the Worker then asks
    /// the profile for none ([`crate::core::rest::ObjectCall::unread`]),
    /// and an ingest's report of every memory it stored is never written.
    pub fn publishes_no_result(self) -> bool {
        matches!(self, Op::Ingest | Op::DeleteSession | Op::DeleteProfile)
    }
}

/// An operation with its arguments as typed records: what every way in
/// hands the profile after reading the caller's JSON. Decoding checks the
/// arguments' shape (names, types, required fields, no unknown fields);
/// each operation then checks their values (limits, lengths) itself.
#[derive(Clone, Debug, PartialEq)]
pub enum Call {
    Ingest(api::IngestRequest),
    Remember(api::RememberRequest),
    Recall(api::RecallRequest),
    List(api::ListRequest),
    Get {
        id: String,
    },
    Forget {
        id: String,
    },
    Delete {
        id: String,
    },
    DeleteSession {
        session_id: String,
    },
    GetSummary(api::SummaryRequest),
    Export(api::ExportRequest),
    Import {
        data: String,
    },
    Stats,
    /// `never_written_ok`: a profile nothing was ever written to answers
    /// `null` (nothing to mark) rather than 404. The binding asks it: its
    /// `getProfile` "creates" a profile, so deleting one that was only
    /// read must not throw; the HTTP reference lists 404.
    DeleteProfile {
        never_written_ok: bool,
    },
    RestoreProfile,
    Update(api::UpdateRequest),
    Consolidate(api::ConsolidateRequest),
    UndoConsolidation {
        id: i64,
    },
    Drain,
    Purge,
}

/// The arguments of `undoConsolidation`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct UndoArgs {
    id: i64,
}

/// The arguments of the operations that name one memory.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct IdArgs {
    id: String,
}

/// The arguments of `deleteSession`.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionArgs {
    session_id: String,
}

/// The arguments of `import`: the NDJSON text.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportArgs {
    data: String,
}

/// The arguments of `deleteProfile`.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct DeleteProfileArgs {
    #[serde(default)]
    never_written_ok: bool,
}

/// The arguments of the operations that take none (an empty object).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

impl Call {
    /// `op` with its JSON `args` (`null` is no arguments), or an invalid-input
    /// error naming what does not fit. Memory ids are read in either case
    /// (ULIDs are written in capitals elsewhere); this service's are
    /// lowercase.
    pub fn decode(op: Op, args: serde_json::Value) -> Result<Call> {
        let args = if args.is_null() { serde_json::Value::Object(Default::default()) } else { args };
        Ok(match op {
            Op::Ingest => Call::Ingest(api::parse(args)?),
            Op::Remember => Call::Remember(api::parse(args)?),
            Op::Recall => Call::Recall(api::parse(args)?),
            Op::List => Call::List(api::parse(args)?),
            Op::Get => Call::Get { id: memory_id(args)? },
            Op::Forget => Call::Forget { id: memory_id(args)? },
            Op::Delete => Call::Delete { id: memory_id(args)? },
            Op::DeleteSession => Call::DeleteSession { session_id: api::parse::<SessionArgs>(args)?.session_id },
            Op::GetSummary => Call::GetSummary(api::parse(args)?),
            Op::Export => Call::Export(api::parse(args)?),
            Op::Import => Call::Import { data: api::parse::<ImportArgs>(args)?.data },
            Op::Stats => none(args, Call::Stats)?,
            Op::DeleteProfile => Call::DeleteProfile { never_written_ok: api::parse::<DeleteProfileArgs>(args)?.never_written_ok },
            Op::RestoreProfile => none(args, Call::RestoreProfile)?,
            Op::Update => {
                let mut req: api::UpdateRequest = api::parse(args)?;
                req.id.make_ascii_lowercase();
                Call::Update(req)
            }
            Op::Consolidate => Call::Consolidate(api::parse(args)?),
            Op::UndoConsolidation => match api::parse::<UndoArgs>(args)?.id {
                id if id >= 1 => Call::UndoConsolidation { id },
                _ => return Err(Error::invalid("a consolidation id is a positive integer")),
            },
            Op::Drain => none(args, Call::Drain)?,
            Op::Purge => none(args, Call::Purge)?,
        })
    }

    /// Its operation.
    pub fn op(&self) -> Op {
        match self {
            Call::Ingest(_) => Op::Ingest,
            Call::Remember(_) => Op::Remember,
            Call::Recall(_) => Op::Recall,
            Call::List(_) => Op::List,
            Call::Get { .. } => Op::Get,
            Call::Forget { .. } => Op::Forget,
            Call::Delete { .. } => Op::Delete,
            Call::DeleteSession { .. } => Op::DeleteSession,
            Call::GetSummary(_) => Op::GetSummary,
            Call::Export(_) => Op::Export,
            Call::Import { .. } => Op::Import,
            Call::Stats => Op::Stats,
            Call::DeleteProfile { .. } => Op::DeleteProfile,
            Call::RestoreProfile => Op::RestoreProfile,
            Call::Update(_) => Op::Update,
            Call::Consolidate(_) => Op::Consolidate,
            Call::UndoConsolidation { .. } => Op::UndoConsolidation,
            Call::Drain => Op::Drain,
            Call::Purge => Op::Purge,
        }
    }
}

/// `call` when `args` is an empty object.
fn none(args: serde_json::Value, call: Call) -> Result<Call> {
    api::parse::<NoArgs>(args)?;
    Ok(call)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_every_operation_reads_back_by_its_name() {
        for op in Op::ALL {
            assert_eq!(Op::parse(op.name()), Some(op));
        }
        assert_eq!(Op::parse("noSuchOperation"), None);
    }
}

/// The memory id of an id-only call, lowercased (see [`Call::decode`]).
fn memory_id(args: serde_json::Value) -> Result<String> {
    Ok(api::parse::<IdArgs>(args)?.id.to_ascii_lowercase())
}

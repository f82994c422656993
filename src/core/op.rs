//! The operations on a profile: the one list every way in reads. An
//! operation's name (as REST's `operationId`, the RPC method and the
//! object's internal call carry it), whether it writes, and what it needs
//! of the profile's resident state are said here once.

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
    /// The alarm's background drain; no way in offers it to callers.
    Drain,
}

impl Op {
    pub const ALL: [Op; 15] = [
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
        Op::Drain,
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
            Op::Drain => "drain",
        }
    }

    pub fn parse(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether callers reach it (REST, RPC); the drain is the alarm's own.
    pub fn is_public(self) -> bool {
        self != Op::Drain
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

    /// Whether a profile marked for deletion still answers it: the
    /// deletion itself (again), its undoing, and the drain that purges.
    pub fn answers_while_marked(self) -> bool {
        matches!(self, Op::DeleteProfile | Op::RestoreProfile | Op::Drain)
    }
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

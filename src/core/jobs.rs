//! Background work, typed: what each outbox row asks for. The outbox
//! stores a job as its kind and one subject column (a memory id, a session
//! id or a full-text table); this module is the one place that turns them
//! into [`Work`] and back. The drain ([`crate::core::background`]) runs
//! them; the store writes and reads the rows.

use crate::core::error::{Error, Result};

/// The kinds of background work, as the outbox's `kind` column names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum JobKind {
    /// Embed a memory and upsert its vector.
    Embed,
    /// Remove a memory's vector.
    Unvector,
    /// Judge a session's uncited messages again after a model fault.
    Extract,
    /// Write a full-text table's waiting rows.
    IndexText,
    /// Go on with a consolidation run, window by window.
    Consolidate,
}

impl JobKind {
    pub const ALL: [JobKind; 5] = [JobKind::Embed, JobKind::Unvector, JobKind::Extract, JobKind::IndexText, JobKind::Consolidate];

    pub fn as_str(self) -> &'static str {
        match self {
            JobKind::Embed => "embed",
            JobKind::Unvector => "unvector",
            JobKind::Extract => "extract",
            JobKind::IndexText => "index_text",
            JobKind::Consolidate => "consolidate",
        }
    }

    pub fn parse(s: &str) -> Option<JobKind> {
        JobKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

/// What a job does, with its subject typed.
#[derive(Clone, Debug, PartialEq)]
pub enum Work {
    Embed {
        memory_id: String,
    },
    Unvector {
        memory_id: String,
    },
    Extract {
        session_id: String,
    },
    /// The table named may be one this version does not have (a newer
    /// version queued it).
    IndexText {
        table: String,
    },
    /// The run's id (its progress is in the profile's `meta`).
    Consolidate {
        run_id: String,
    },
}

impl Work {
    pub fn kind(&self) -> JobKind {
        match self {
            Work::Embed { .. } => JobKind::Embed,
            Work::Unvector { .. } => JobKind::Unvector,
            Work::Extract { .. } => JobKind::Extract,
            Work::IndexText { .. } => JobKind::IndexText,
            Work::Consolidate { .. } => JobKind::Consolidate,
        }
    }

    /// The outbox's subject column.
    pub fn subject(&self) -> &str {
        match self {
            Work::Embed { memory_id } | Work::Unvector { memory_id } => memory_id,
            Work::Extract { session_id } => session_id,
            Work::IndexText { table } => table,
            Work::Consolidate { run_id } => run_id,
        }
    }

    /// The work of a row of kind `kind` about `subject`; `None` for a kind
    /// this version does not know (such a row is parked, never run).
    pub fn of(kind: &str, subject: String) -> Option<Work> {
        Some(match JobKind::parse(kind)? {
            JobKind::Embed => Work::Embed { memory_id: subject },
            JobKind::Unvector => Work::Unvector { memory_id: subject },
            JobKind::Extract => Work::Extract { session_id: subject },
            JobKind::IndexText => Work::IndexText { table: subject },
            JobKind::Consolidate => Work::Consolidate { run_id: subject },
        })
    }
}

/// A job read from the outbox.
#[derive(Clone, Debug, PartialEq)]
pub struct Job {
    pub id: i64,
    /// Attempts recorded so far (each before it ran).
    pub attempts: i64,
    pub work: Work,
}

impl Job {
    /// A job from its row's columns; a kind this version does not know is
    /// a storage error (the store reads only known kinds).
    pub fn from_columns(id: i64, kind: &str, subject: String, attempts: i64) -> Result<Job> {
        let work = Work::of(kind, subject).ok_or_else(|| Error::storage(format!("an outbox row has the unknown kind {}", crate::core::api::quoted(kind))))?;
        Ok(Job { id, attempts, work })
    }

    /// The memory a job of `Embed` or `Unvector` is about.
    pub fn memory_id(&self) -> Option<&str> {
        match &self.work {
            Work::Embed { memory_id } | Work::Unvector { memory_id } => Some(memory_id),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_every_kind_reads_back_as_itself() {
        for kind in JobKind::ALL {
            let w = Work::of(kind.as_str(), "x".into()).unwrap();
            assert_eq!((w.kind(), w.subject()), (kind, "x"));
        }
        assert_eq!(Work::of("reindex_v9", "x".into()), None);
        assert!(Job::from_columns(1, "reindex_v9", "x".into(), 0).unwrap_err().is_storage());
    }
}

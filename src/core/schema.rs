//! The profile database schema: one versioned migration set, run unchanged
//! by the Durable Object and by native SQLite in tests.
//!
//! Each migration is a list of statements run in order inside one
//! transaction, and recorded in `schema_migrations`. Migrations only ever
//! get appended.

use crate::core::error::Result;
use crate::core::ports::{Sql, SqlValue};

/// `(version, statements)`, oldest first.
pub const MIGRATIONS: &[(i64, &[&str])] = &[
    (
        1,
        &[
            // Raw messages, content-addressed. `rowid` keys the FTS index.
            "CREATE TABLE IF NOT EXISTS messages (
            id TEXT PRIMARY KEY,
            session_id TEXT NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            timestamp TEXT,
            position INTEGER NOT NULL,
            created_at TEXT NOT NULL
        )",
            "CREATE INDEX IF NOT EXISTS messages_by_session ON messages(session_id, position)",
            "CREATE VIRTUAL TABLE IF NOT EXISTS messages_fts USING fts5(role, content, tokenize='porter unicode61')",
            // Memories: the record of SPEC.md section 8.
            "CREATE TABLE IF NOT EXISTS memories (
            id TEXT PRIMARY KEY,
            type TEXT NOT NULL,
            key TEXT,
            summary TEXT NOT NULL,
            content TEXT NOT NULL,
            session_id TEXT NOT NULL,
            source_message_ids TEXT NOT NULL,
            search_queries TEXT NOT NULL,
            status TEXT NOT NULL,
            supersedes TEXT,
            superseded_by TEXT,
            event_date TEXT,
            fingerprint TEXT NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            expires_at TEXT
        )",
            "CREATE INDEX IF NOT EXISTS memories_by_key ON memories(key, status)",
            "CREATE INDEX IF NOT EXISTS memories_by_status ON memories(status, id)",
            "CREATE INDEX IF NOT EXISTS memories_by_session ON memories(session_id, id)",
            "CREATE INDEX IF NOT EXISTS memories_by_fingerprint ON memories(fingerprint)",
            "CREATE INDEX IF NOT EXISTS memories_by_expiry ON memories(expires_at) WHERE expires_at IS NOT NULL",
            // Which messages each memory came from (also in the JSON column; this
            // table answers the reverse question quickly).
            "CREATE TABLE IF NOT EXISTS memory_sources (
            memory_id TEXT NOT NULL,
            message_id TEXT NOT NULL,
            PRIMARY KEY (memory_id, message_id)
        ) WITHOUT ROWID",
            "CREATE INDEX IF NOT EXISTS memory_sources_by_message ON memory_sources(message_id)",
            "CREATE VIRTUAL TABLE IF NOT EXISTS memories_fts USING fts5(content, key, queries, tokenize='porter unicode61')",
            // The local vector index: one float32 little-endian vector per
            // memory, plus a binary code for the fast first pass.
            "CREATE TABLE IF NOT EXISTS vectors (
            memory_id TEXT PRIMARY KEY,
            vector BLOB NOT NULL,
            code BLOB NOT NULL
        )",
            // Background work, recorded in the same transaction as the writes
            // that need it, drained by the Durable Object alarm.
            "CREATE TABLE IF NOT EXISTS outbox (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            kind TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            last_error TEXT,
            created_at TEXT NOT NULL
        )",
            "CREATE INDEX IF NOT EXISTS outbox_by_due ON outbox(next_attempt_at)",
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        ],
    ),
    (
        2,
        &[
            // Query plans that stay flat as a profile grows. Without table
            // statistics SQLite took `memories_by_status` (status, id) for any
            // query with `status = ?`, which in a profile of active memories
            // reads every memory: topic-key lookups (recall's key channel and
            // supersession at ingest), the message channel's citation join,
            // `keep_live`, and the expiry checks run after every write.
            // (key, status, id) serves key lookups in id order; without the
            // status index the citation join starts from the message ids, and
            // expiry queries use `memories_by_expiry`.
            "CREATE INDEX IF NOT EXISTS memories_by_key_status ON memories(key, status, id)",
            "DROP INDEX IF EXISTS memories_by_key",
            "DROP INDEX IF EXISTS memories_by_status",
            // The local vector index's memory copy, saved so a cold start
            // reads a few large rows instead of one row per vector
            // (core::local::vector::write_snapshot). Derived data: a missing
            // or outdated snapshot is rebuilt from `vectors`.
            "CREATE TABLE IF NOT EXISTS vector_snapshot (part INTEGER PRIMARY KEY, data BLOB NOT NULL)",
        ],
    ),
    (
        3,
        &[
            // The roles that speak in the profile's messages, each once. Recall
            // reads them to tell a word naming a speaker from other words (see
            // core::recall::query::TextQuery::speakers) without scanning
            // every message. Derived data, kept in step with `messages`.
            "CREATE TABLE IF NOT EXISTS speakers (role TEXT PRIMARY KEY) WITHOUT ROWID",
            "INSERT OR IGNORE INTO speakers (role) SELECT DISTINCT role FROM messages",
        ],
    ),
    (
        4,
        &[
            // How many messages and memories were ever deleted, counted by
            // triggers on every path that deletes one: recall's turn
            // directory (core::recall::directory) reads that half again when
            // a count moved.
            "CREATE TABLE IF NOT EXISTS deletions (messages INTEGER NOT NULL, memories INTEGER NOT NULL)",
            "INSERT INTO deletions (messages, memories) SELECT 0, 0 WHERE NOT EXISTS (SELECT 1 FROM deletions)",
            "CREATE TRIGGER IF NOT EXISTS messages_deleted AFTER DELETE ON messages \
         BEGIN UPDATE deletions SET messages = messages + 1; END",
            "CREATE TRIGGER IF NOT EXISTS memories_deleted AFTER DELETE ON memories \
         BEGIN UPDATE deletions SET memories = memories + 1; END",
            // An update of what the directory holds counts as a deletion.
            "CREATE TRIGGER IF NOT EXISTS messages_changed AFTER UPDATE OF session_id, role, content, timestamp, position ON messages \
         BEGIN UPDATE deletions SET messages = messages + 1; END",
            "CREATE TRIGGER IF NOT EXISTS memories_changed AFTER UPDATE OF content, key, search_queries ON memories \
         BEGIN UPDATE deletions SET memories = memories + 1; END",
            // The directory in the object's memory, saved so a cold start
            // reads a few large rows instead of every message and memory
            // (core::recall::directory). Derived data: a missing or outdated
            // snapshot is rebuilt.
            "CREATE TABLE IF NOT EXISTS directory_snapshot (part INTEGER PRIMARY KEY, data BLOB NOT NULL)",
            // The directory also knows the speakers: version 3's table goes.
            "DROP TABLE IF EXISTS speakers",
        ],
    ),
    (
        5,
        &[
            // Which messages each memory cites, keyed by the message's rowid
            // instead of its id. Message ids are content hashes: an index by
            // them puts every new citation on a random page of a large
            // B-tree, while new messages take the highest rowids, so their
            // citations land at the end (docs/bench/ingest-io.md). `citations`
            // holds the citations of stored messages; `citations_waiting` the
            // rest (a memory imported before its messages, or one whose
            // message was deleted), moved across by the triggers below when
            // such a message is stored or deleted. Together they are what
            // `memory_sources` was; the JSON column on `memories` stays the
            // record of a memory's sources.
            "CREATE TABLE IF NOT EXISTS citations (
            memory_id TEXT NOT NULL,
            message_rowid INTEGER NOT NULL,
            PRIMARY KEY (memory_id, message_rowid)
        ) WITHOUT ROWID",
            "CREATE INDEX IF NOT EXISTS citations_by_message ON citations(message_rowid)",
            "CREATE TABLE IF NOT EXISTS citations_waiting (
            message_id TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            PRIMARY KEY (message_id, memory_id)
        ) WITHOUT ROWID",
            "CREATE INDEX IF NOT EXISTS citations_waiting_by_memory ON citations_waiting(memory_id)",
            "INSERT OR IGNORE INTO citations (memory_id, message_rowid) \
         SELECT s.memory_id, m.rowid FROM memory_sources s JOIN messages m ON m.id = s.message_id",
            "INSERT OR IGNORE INTO citations_waiting (message_id, memory_id) \
         SELECT s.message_id, s.memory_id FROM memory_sources s \
         WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = s.message_id)",
            "DROP TABLE IF EXISTS memory_sources",
            "CREATE TRIGGER IF NOT EXISTS citations_stored AFTER INSERT ON messages \
         WHEN EXISTS (SELECT 1 FROM citations_waiting WHERE message_id = new.id) BEGIN \
         INSERT OR IGNORE INTO citations (memory_id, message_rowid) \
         SELECT memory_id, new.rowid FROM citations_waiting WHERE message_id = new.id; \
         DELETE FROM citations_waiting WHERE message_id = new.id; END",
            "CREATE TRIGGER IF NOT EXISTS citations_unstored AFTER DELETE ON messages BEGIN \
         INSERT OR IGNORE INTO citations_waiting (message_id, memory_id) \
         SELECT old.id, memory_id FROM citations WHERE message_rowid = old.rowid; \
         DELETE FROM citations WHERE message_rowid = old.rowid; END",
        ],
    ),
    (
        6,
        &[
            // Ingest finds a memory already stored with the same meaning
            // through the turn directory, which holds every memory's
            // fingerprint in the object's memory (core::recall::fingerprints):
            // the index, whose every insert landed on a random page, goes.
            "DROP INDEX IF EXISTS memories_by_fingerprint",
            // A fingerprint changed is a change of what the directory holds.
            "DROP TRIGGER IF EXISTS memories_changed",
            "CREATE TRIGGER IF NOT EXISTS memories_changed AFTER UPDATE OF content, key, search_queries, fingerprint ON memories \
         BEGIN UPDATE deletions SET memories = memories + 1; END",
        ],
    ),
    (
        7,
        &[
            // Topic keys too: supersession at ingest, recall's key channel and
            // a list filtered by key find the memories holding a key through
            // the turn directory (core::recall::keyed). Every query that
            // names a key also names the rowids; none else used this index.
            "DROP INDEX IF EXISTS memories_by_key_status",
        ],
    ),
    (
        8,
        &[
            // A job over its attempt cap, or of a kind this version does not
            // know, is parked: kept with its last error, counted in `stats`,
            // never taken again and never due (core::background). The index
            // serves "what is due" and "when is the next one due" over the
            // jobs that are not parked.
            "ALTER TABLE outbox ADD COLUMN parked INTEGER NOT NULL DEFAULT 0",
            "CREATE INDEX IF NOT EXISTS outbox_live_by_due ON outbox(parked, next_attempt_at)",
            "DROP INDEX IF EXISTS outbox_by_due",
        ],
    ),
    (
        9,
        &[
            // The SQLite paths (core::recall::lean): a profile whose state does
            // not fit the isolate's memory budget, or that was evicted, answers
            // from these. Versions 6 and 7 moved the fingerprint and topic-key
            // lookups into the turn directory; measured side by side
            // (docs/bench/paths.md) the indexes cost ingest little and make
            // dedup, supersession, the key channel and `list?key=` one
            // statement each with nothing in memory, so they come back and the
            // directory no longer holds either column.
            "CREATE INDEX IF NOT EXISTS memories_by_fingerprint ON memories(fingerprint)",
            "CREATE INDEX IF NOT EXISTS memories_by_key ON memories(key) WHERE key IS NOT NULL",
            // The profile's speakers, read in order without the directory.
            "CREATE INDEX IF NOT EXISTS messages_by_role ON messages(role)",
        ],
    ),
    (
        10,
        &[
            // Metadata: what a caller attached to a memory or message, a flat
            // JSON object (core::filter), NULL when there is none. The scope
            // keys agentId and userId are read through generated columns
            // with an index each, so a filter on one reads only its rows.
            "ALTER TABLE memories ADD COLUMN metadata TEXT",
            "ALTER TABLE messages ADD COLUMN metadata TEXT",
            "ALTER TABLE memories ADD COLUMN agent_id GENERATED ALWAYS AS (metadata ->> '$.agentId') VIRTUAL",
            "ALTER TABLE memories ADD COLUMN user_id GENERATED ALWAYS AS (metadata ->> '$.userId') VIRTUAL",
            "CREATE INDEX IF NOT EXISTS memories_by_agent ON memories(agent_id)",
            "CREATE INDEX IF NOT EXISTS memories_by_user ON memories(user_id)",
            // Validity: from when what a memory says held (when its source
            // messages were said, else when it was stored) until when the
            // memory superseding it was said. `asOf` reads them.
            "ALTER TABLE memories ADD COLUMN valid_from TEXT",
            "ALTER TABLE memories ADD COLUMN valid_to TEXT",
            "UPDATE memories SET valid_from = COALESCE((SELECT strftime('%Y-%m-%dT%H:%M:%fZ', MIN(unixepoch(g.timestamp, 'subsec')), 'unixepoch') \
         FROM citations s JOIN messages g ON g.rowid = s.message_rowid WHERE s.memory_id = memories.id AND g.timestamp IS NOT NULL), created_at)",
            "UPDATE memories SET valid_to = (SELECT n.valid_from FROM memories n WHERE n.id = memories.superseded_by) \
         WHERE status = 'superseded' AND superseded_by IS NOT NULL",
            // Vectorize filters by the metadata a vector was written with
            // (core::ports::VectorMeta): every vector is written again, with
            // it, by the alarm. (The local index reads the memories' rows; for
            // it this only rewrites the same vectors.)
            "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) \
         SELECT 'embed', id, 0, 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now') FROM memories WHERE status = 'active' AND type <> 'task'",
        ],
    ),
    (
        11,
        &[
            // Consolidation (core::consolidate): every change it made, with
            // the memories as they were before (`before`, a JSON array of
            // records) and those it created (`created`), so that `undo` puts
            // them back exactly. `consolidation_members` answers "what was
            // this memory consolidated from or into" for `get`.
            "CREATE TABLE IF NOT EXISTS consolidations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            run_id TEXT NOT NULL,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            members TEXT NOT NULL,
            created TEXT NOT NULL,
            reason TEXT NOT NULL,
            before TEXT NOT NULL,
            at TEXT NOT NULL,
            undone_at TEXT
        )",
            "CREATE TABLE IF NOT EXISTS consolidation_members (
            memory_id TEXT NOT NULL,
            consolidation_id INTEGER NOT NULL,
            PRIMARY KEY (memory_id, consolidation_id)
        ) WITHOUT ROWID",
        ],
    ),
    (
        12,
        &[
            // The turn directory has held no fingerprint since version 9, and
            // a fingerprint now changes with a memory's metadata (`update`):
            // that change must not make the directory re-read every memory.
            "DROP TRIGGER IF EXISTS memories_changed",
            "CREATE TRIGGER IF NOT EXISTS memories_changed AFTER UPDATE OF content, key, search_queries ON memories \
         BEGIN UPDATE deletions SET memories = memories + 1; END",
        ],
    ),
    (
        13,
        &[
            // A memory superseded by one said before it (ingested later, so
            // it won) was written valid until its successor's start, before
            // its own: an interval that ends before it begins, which an import
            // refuses. It ends where it begins instead, as the writers now
            // write it (valid at no instant, as before).
            "UPDATE memories SET valid_to = COALESCE(valid_from, created_at) \
         WHERE valid_to IS NOT NULL AND valid_to < COALESCE(valid_from, created_at)",
        ],
    ),
    (
        14,
        &[
            // Which live holders of a key a new statement may replace
            // (core::ingest::supersede::Reach): those of its session, or
            // those saying the same words dates aside. A keyed memory's
            // `undated_digest` is ids::undated_digest of its content, and
            // these indexes find both kinds without reading every holder of
            // the key. Memories stored before have none; ingest reads those
            // holders in full and writes theirs (Store::active_key_holders).
            "ALTER TABLE memories ADD COLUMN undated_digest TEXT",
            "CREATE INDEX IF NOT EXISTS memories_active_by_key_session ON memories(key, session_id) WHERE status = 'active' AND key IS NOT NULL",
            "CREATE INDEX IF NOT EXISTS memories_active_by_key_words ON memories(key, undated_digest) WHERE status = 'active' AND key IS NOT NULL",
        ],
    ),
    (
        15,
        &[
            // An export's file, written whole in one moment and read out a
            // part at a time (core::store::spool): the object never holds
            // more of it than one part.
            "CREATE TABLE IF NOT EXISTS export_spool (
            export INTEGER NOT NULL,
            part INTEGER NOT NULL,
            data BLOB NOT NULL,
            spooled_at INTEGER NOT NULL,
            UNIQUE (export, part)
        )",
            // The ids a filtered export keeps, while it is written: the
            // memories that pass and the messages they cite.
            "CREATE TABLE IF NOT EXISTS export_kept (
            export INTEGER NOT NULL,
            kind TEXT NOT NULL,
            id TEXT NOT NULL,
            PRIMARY KEY (export, kind, id)
        ) WITHOUT ROWID",
        ],
    ),
    (
        16,
        &[
            // A filter pinning a scope key (core::filter::Filter::
            // pins_scope_key) reads its memories from the index alone, in
            // id order: the id, status and expiry beside the key. A recall
            // reading what passes ahead of ranking (one agent's tenth of
            // 100k memories) read every row of them for those three.
            "DROP INDEX IF EXISTS memories_by_agent",
            "DROP INDEX IF EXISTS memories_by_user",
            "CREATE INDEX IF NOT EXISTS memories_by_agent ON memories(agent_id, id, status, expires_at)",
            "CREATE INDEX IF NOT EXISTS memories_by_user ON memories(user_id, id, status, expires_at)",
        ],
    ),
    (
        17,
        &[
            // A statement said again word for word in a later message is not
            // stored again (core::ingest::persist): the memory keeps citing
            // where it was first said, so recall scores it as before, and the
            // later message is recorded here. When the messages a memory
            // cites are deleted but one that said it again is not, the memory
            // moves to that one (Store::rehome) instead of going with them.
            // Rows leave with their memory or their message.
            "CREATE TABLE IF NOT EXISTS restatements (
            memory_id TEXT NOT NULL,
            message_rowid INTEGER NOT NULL,
            PRIMARY KEY (memory_id, message_rowid)
        ) WITHOUT ROWID",
            "CREATE INDEX IF NOT EXISTS restatements_by_message ON restatements(message_rowid)",
            "CREATE TRIGGER IF NOT EXISTS restatements_unstored AFTER DELETE ON messages BEGIN \
         DELETE FROM restatements WHERE message_rowid = old.rowid; END",
            "CREATE TRIGGER IF NOT EXISTS restatements_of_deleted AFTER DELETE ON memories BEGIN \
         DELETE FROM restatements WHERE memory_id = old.id; END",
        ],
    ),
    (
        18,
        &[
            // Messages a model fault left partly judged (a batch of their
            // candidates failed verification or classification, or a chunk
            // holding them failed extraction): the alarm's `extract` job
            // judges them again even when another of their candidates was
            // stored, which made them look done (core::ingest::retry_session).
            // A row leaves with its message, or once a retry judges it
            // without a fault.
            "CREATE TABLE IF NOT EXISTS rejudge (message_rowid INTEGER PRIMARY KEY)",
            "CREATE TRIGGER IF NOT EXISTS rejudge_unstored AFTER DELETE ON messages BEGIN \
         DELETE FROM rejudge WHERE message_rowid = old.rowid; END",
        ],
    ),
    (
        19,
        &[
            // What a message said again of a memory since deleted by id
            // (Profile::delete): the memory's fingerprint, no text. The
            // message stays, and its restatement row went with the memory,
            // so a retry of its session would have judged it anew and stored
            // the deleted statement again (core::ingest::retry_session). A
            // row leaves with its message, which holds those words itself.
            "CREATE TABLE IF NOT EXISTS withheld (
            message_rowid INTEGER NOT NULL,
            fingerprint TEXT NOT NULL,
            PRIMARY KEY (message_rowid, fingerprint)
        ) WITHOUT ROWID",
            "CREATE TRIGGER IF NOT EXISTS withheld_unstored AFTER DELETE ON messages BEGIN \
         DELETE FROM withheld WHERE message_rowid = old.rowid; END",
        ],
    ),
    (
        20,
        &[
            // A consolidation's members with their topic keys, as they were
            // when it was made: ingest looks up the live folds holding a
            // key it is about to state (Store::folds_holding) by it. Through
            // the memories' key index it read every version of the key ever
            // stated, superseded ones included, on each ingest. Rows before
            // this version take their member's key now (a superseded
            // member's key does not change); a target or a created memory
            // has none.
            "ALTER TABLE consolidation_members ADD COLUMN key TEXT",
            "UPDATE consolidation_members SET key = (SELECT m.key FROM memories m WHERE m.id = consolidation_members.memory_id) \
         WHERE EXISTS (SELECT 1 FROM consolidations c, json_each(c.members) j \
         WHERE c.id = consolidation_members.consolidation_id AND j.value = consolidation_members.memory_id)",
            "CREATE INDEX IF NOT EXISTS consolidation_members_by_key ON consolidation_members(key) WHERE key IS NOT NULL",
        ],
    ),
    (
        21,
        &[
            // The memories of given consolidations: a run's check of the
            // groupings a person undid (Store::undone_groupings, each
            // window) and a deletion's erasing of the records holding what
            // it deleted (Store::erase_consolidations_of) read them by
            // consolidation, which the primary key (memory first) does not
            // order by: each scanned every membership of the profile.
            "CREATE INDEX IF NOT EXISTS consolidation_members_by_consolidation ON consolidation_members(consolidation_id)",
        ],
    ),
    (
        22,
        &[
            // Jobs by their subject: finishing, reviving or checking a
            // consolidation's or a session's job, dropping a deleted
            // memory's, and queuing a full-text batch unless one is queued
            // name the subject (`memory_id`, a memory, session or table), and
            // each scanned the whole outbox, which an ingest of thousands of
            // memories fills with their embedding jobs until the alarm
            // drains them.
            "CREATE INDEX IF NOT EXISTS outbox_by_subject ON outbox(memory_id, kind)",
        ],
    ),
    (
        23,
        &[
            // The versions linked to a memory: a deletion closes the chain
            // around what it deletes (Store::delete_memories reads the
            // versions replaced by or replacing each deleted one, and
            // clears their links), which scanned every memory of the
            // profile three times. Only linked memories are indexed.
            "CREATE INDEX IF NOT EXISTS memories_by_superseded_by ON memories(superseded_by) WHERE superseded_by IS NOT NULL",
            "CREATE INDEX IF NOT EXISTS memories_by_supersedes ON memories(supersedes) WHERE supersedes IS NOT NULL",
        ],
    ),
    (
        24,
        &[
            // The ends of chains with no active value (the last version
            // forgotten or expired): a person's value of a key no active
            // memory holds goes after its chain's end (Store::lapsed_ends),
            // which through the key's index read every version of the key.
            "CREATE INDEX IF NOT EXISTS memories_lapsed_by_key ON memories(key) WHERE superseded_by IS NULL AND status IN ('forgotten', 'expired') AND key IS NOT NULL",
        ],
    ),
    (
        25,
        &[
            // `dates::undated` reads word boundaries as ASCII does (a
            // Unicode one sent a text with any accented letter to the
            // regex engine's slow path: 9 ms for 30 KB, 0.3 without): the
            // digests of texts with a character outside printable ASCII
            // may read otherwise, and are read again where next needed
            // (ids::undated_digest).
            "UPDATE memories SET undated_digest = NULL WHERE undated_digest IS NOT NULL AND content GLOB '*[^ -~]*'",
        ],
    ),
];

/// Brings the database up to the newest schema version, and what a build
/// older than a version wrote since (a rollback) up to what this build
/// reads. Idempotent.
pub fn migrate(sql: &dyn Sql) -> Result<()> {
    migrate_set(sql, "schema_migrations", MIGRATIONS)?;
    key_new_fold_members(sql)
}

/// The `meta` key of the last consolidation whose members
/// [`key_new_fold_members`] has looked at.
pub const META_MEMBERS_KEYED_THROUGH: &str = "members_keyed_through";

/// Keys the members of the consolidations recorded since this was last
/// run, as version 20 keyed those before it: a build before version 20,
/// run after it (a rollback), records a fold's members without their
/// keys, and ingest would not find that fold by a later value of a key
/// (Store::folds_holding). Reads two values at a start when nothing was
/// recorded since; the rows since, through their index, when something was.
fn key_new_fold_members(sql: &dyn Sql) -> Result<()> {
    let rows = sql.query(
        "SELECT COALESCE((SELECT CAST(value AS INTEGER) FROM meta WHERE key = ?1), 0), COALESCE((SELECT MAX(id) FROM consolidations), 0)",
        &[META_MEMBERS_KEYED_THROUGH.into()],
    )?;
    let (through, last) = match rows.first().map(Vec::as_slice) {
        Some([through, last]) => match (through.as_i64(), last.as_i64()) {
            (Some(through), Some(last)) => (through, last),
            _ => return Err(crate::core::error::Error::storage("the consolidations' high-water mark does not read as an integer")),
        },
        _ => return Err(crate::core::error::Error::storage("the consolidations' high-water mark did not read")),
    };
    if last <= through {
        return Ok(());
    }
    sql.transaction(&mut || {
        sql.execute(
            "UPDATE consolidation_members SET key = (SELECT m.key FROM memories m WHERE m.id = consolidation_members.memory_id) \
             WHERE consolidation_id > ?1 AND key IS NULL AND EXISTS (SELECT 1 FROM consolidations c, json_each(c.members) j \
             WHERE c.id = consolidation_members.consolidation_id AND j.value = consolidation_members.memory_id)",
            &[SqlValue::Integer(through)],
        )?;
        sql.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", &[META_MEMBERS_KEYED_THROUGH.into(), last.to_string().into()])
    })
}

/// Runs the migrations of `set` not yet recorded in `sql`'s table `log`
/// (the profiles' [`MIGRATIONS`] in `schema_migrations`, or another
/// database's own, such as the catalog's, in a table of its own).
pub fn migrate_set(sql: &dyn Sql, log: &str, set: &[(i64, &[&str])]) -> Result<()> {
    sql.execute(&format!("CREATE TABLE IF NOT EXISTS {log} (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"), &[])?;
    let rows = sql.query(&format!("SELECT COALESCE(MAX(version), 0) FROM {log}"), &[])?;
    // Never read as 0 when it does not read: that would run every
    // migration again over the tables they made.
    let current = crate::core::ports::aggregate_i64(&rows, "the schema's version")?.unwrap_or(0);
    for (version, statements) in set.iter().filter(|(v, _)| *v > current) {
        sql.transaction(&mut || {
            for stmt in statements.iter() {
                sql.execute(stmt, &[])?;
            }
            sql.execute(&format!("INSERT INTO {log} (version, applied_at) VALUES (?, datetime('now'))"), &[SqlValue::Integer(*version)])
        })?;
    }
    Ok(())
}

/// The newest schema version.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |(v, _)| *v)
}

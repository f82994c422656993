//! Profile operations: the one core behind every way in.
//!
//! REST handlers, the RPC entrypoint, the MCP endpoint and the console all
//! end in [`Profile::dispatch`] (or the typed methods it calls), running
//! inside the profile's Durable Object, or natively in tests. The
//! [`Profile`] itself (what a call borrows) lives below the pipelines, in
//! [`crate::core::context`]; this module only dispatches.
//!
//! Here: a call's checks before anything is written ([`Prepared`]), the
//! one dispatch table, and the pipelines' entries (ingest, remember,
//! recall) with the profile's capacity rule. The operations on memories
//! one at a time or a session at a time are in `memories.rs`; those on the
//! profile whole (export, import, stats, deletion, the drain) in
//! `lifecycle.rs`.

mod lifecycle;
mod memories;

use crate::core::api::{self, IngestRequest, RecallRequest, RememberRequest};
pub use crate::core::context::{Limits, MemoryView, Profile, DEFAULT_DELETE_GRACE_MILLIS};
use crate::core::error::{Error, Result};
use crate::core::json::{JsonPieces, PIECE_BYTES};
use crate::core::model::{IngestReport, Memory};
pub use crate::core::op::{Call, Op};
use crate::core::store::META_WRITTEN;
use crate::core::{ingest, portable, recall, remember};
use serde_json::{json, Value};

pub use crate::core::running::INGEST_GUARD_MILLIS;

/// A call checked before anything is written ([`Profile::prepare`]).
pub struct Prepared {
    call: Call,
    /// An import's records, parsed (its text is not kept).
    import: Option<portable::Parsed>,
    /// The write will find the profile empty: it is marked for deletion,
    /// or its namespace was deleted and its purge has not run yet (either
    /// way the write purges it first). What it holds now counts for
    /// nothing: neither its room nor an import's links.
    empty_first: bool,
    /// Its caller reads no result ([`Prepared::unread`]).
    unread: bool,
    /// Its caller takes a large result in pieces ([`Prepared::in_pieces`]).
    pieces: bool,
}

impl Prepared {
    /// Marks a call whose caller reads no result, for an operation whose
    /// published result is void ([`Op::publishes_no_result`]; others are
    /// left as they are): it answers `null`, and the result (an ingest's
    /// report of every memory stored) is never written out.
    pub fn unread(self) -> Prepared {
        let unread = self.op().publishes_no_result();
        Prepared { unread, ..self }
    }

    /// Whether it may create the profile ([`Op::creates`]): a write, but
    /// not an import of a file that holds no records (a header alone, an
    /// empty profile's export), which writes nothing: it neither purges a
    /// profile marked for deletion (it is answered as a read there, 404)
    /// nor lists the profile in its namespace.
    pub fn creates(&self) -> bool {
        self.call.op().creates() && !self.import.as_ref().is_some_and(portable::Parsed::is_empty)
    }

    pub fn op(&self) -> Op {
        self.call.op()
    }

    /// Marks a call whose caller streams a large result on as it arrives
    /// (the Worker, into its REST envelope): an ingest's report of 64 KiB
    /// or more is then answered in pieces ([`Answer::Pieces`]).
    pub fn in_pieces(self) -> Prepared {
        Prepared { pieces: true, ..self }
    }
}

/// An ingest request as stored: sensitive spans redacted (they never reach
/// storage, not even as raw messages), then validated.
fn prepare_ingest(mut req: IngestRequest) -> Result<IngestRequest> {
    for m in &mut req.messages {
        // The role too: it is shown as the speaker's name, in memories
        // (`Jane: ...`) and in keys drawn from it.
        for text in [&mut m.content, &mut m.role] {
            if let std::borrow::Cow::Owned(r) = api::redact_private(text) {
                *text = r;
            }
        }
    }
    req.validate()?;
    Ok(req)
}

/// A remember request as stored: redacted, then validated, its expiry
/// too (later than `now`, the call's time), so that none of its checks
/// runs after the purge of a profile marked for deletion.
fn prepare_remember(mut req: RememberRequest, now: i64) -> Result<RememberRequest> {
    api::redact_statement("content", &mut req.content)?;
    req.validate()?;
    if let Some(key) = &req.key {
        crate::core::text::check_key_as_given(key, req.kind)?;
    }
    crate::core::remember::expiry(now, req.expires_at.as_deref(), req.ttl_seconds)?;
    Ok(req)
}

impl<'a> Profile<'a> {
    /// Runs operation `op` with JSON arguments and returns its JSON result.
    /// (The Durable Object and the Worker pass results on as text:
    /// [`Profile::dispatch_json`].)
    pub async fn dispatch(&self, op: &str, args: Value) -> Result<Value> {
        let text = self.dispatch_json(op, args).await?;
        serde_json::from_str(&text).map_err(|e| Error::storage(format!("failed to read a result back: {e}")))
    }

    /// [`Profile::dispatch`], its result as JSON text: each operation's
    /// typed result serialized once, without a JSON tree in between (an
    /// ingest's or a recall's result carries whole memories). The single
    /// dispatch table of the service.
    pub async fn dispatch_json(&self, op: &str, args: Value) -> Result<String> {
        let op = Op::parse(op).ok_or_else(|| Error::not_found(format!("no operation named {}", api::quoted(op))))?;
        self.run(op, args).await
    }

    /// Runs `op` with JSON arguments; its result as JSON text.
    pub async fn run(&self, op: Op, args: Value) -> Result<String> {
        self.execute(Call::decode(op, args)?).await
    }

    /// Runs a decoded call; its result as JSON text.
    pub async fn execute(&self, call: Call) -> Result<String> {
        let prepared = self.prepare(call)?;
        self.admit(&prepared)?;
        self.execute_prepared(prepared).await
    }

    /// Checks a call before anything is written: its request redacted
    /// and validated, an import parsed whole. A call refused here changes
    /// nothing (not even the purge of a profile marked for deletion, nor,
    /// in the Durable Object, the namespace catalog).
    pub fn prepare(&self, call: Call) -> Result<Prepared> {
        self.prepare_as(call, false)
    }

    /// [`Profile::prepare`] for a profile that the platform knows will be
    /// purged before the write (`purge_pending`: its namespace was deleted
    /// and the catalog still holds its purge), so what it holds now counts
    /// for nothing, as for one marked for deletion.
    pub fn prepare_as(&self, call: Call, purge_pending: bool) -> Result<Prepared> {
        let empty_first = purge_pending || self.store().deletion_mark()?.is_some();
        let (call, import) = match call {
            Call::Ingest(req) => (Call::Ingest(prepare_ingest(req)?), None),
            Call::Remember(req) => (Call::Remember(prepare_remember(req, self.now)?), None),
            Call::Import { data } => (Call::Import { data: String::new() }, Some(self.prepare_import(&data, empty_first)?)),
            call => (call, None),
        };
        Ok(Prepared { call, import, empty_first, unread: false, pieces: false })
    }

    /// Whether the profile has room for what a prepared call adds: an
    /// import's memories, or the one memory of a remember, counted against
    /// what the profile will hold when the call runs (nothing, for one
    /// the write purges first: see [`Prepared`]). Asked before anything is
    /// written (the purge, and in the Durable Object the catalog), so a
    /// call refused for room changes nothing.
    ///
    /// An import counts only the memories the profile does not hold yet
    /// (it skips the rest). A remember into a profile that is not empty
    /// first is checked when it runs, once it is known whether it repeats
    /// a stored memory (a repeat adds nothing, so a full profile still
    /// answers a re-sent remember with its memory).
    pub fn admit(&self, prepared: &Prepared) -> Result<()> {
        let adding = match (&prepared.call, &prepared.import) {
            (_, Some(parsed)) if prepared.empty_first => parsed.memories.len(),
            (_, Some(parsed)) => self.import_adds(parsed)?,
            (Call::Remember(_), _) if prepared.empty_first => 1,
            _ => return Ok(()),
        };
        let adding = i64::try_from(adding).unwrap_or(i64::MAX);
        if prepared.empty_first {
            return match adding > self.limits.max_memories {
                true => Err(self.full(0)),
                false => Ok(()),
            };
        }
        self.check_capacity(adding)
    }

    /// How many of an import's memories the profile does not hold yet
    /// (by id, or an active one by its statement: [`portable::adds`]).
    fn import_adds(&self, parsed: &portable::Parsed) -> Result<usize> {
        portable::adds(&self.store(), parsed)
    }

    /// An import parsed whole, its links to versions outside the file
    /// found in the profile (none count when it is `empty_first`: the
    /// import purges it first). The write checks the links again, in its
    /// transaction.
    fn prepare_import(&self, data: &str, empty_first: bool) -> Result<portable::Parsed> {
        let parsed = portable::parse(data)?;
        let store = self.store();
        portable::check_links((!empty_first).then_some(&store), &parsed)?;
        Ok(parsed)
    }

    /// [`Profile::execute_prepared`], an export's file given as it is: the
    /// Durable Object answers it as NDJSON, and the Worker passes that on
    /// without reading it (a JSON string of it would be a second copy, and
    /// reading it a third, in a Wasm memory the profiles share); and an
    /// ingest's large report in pieces, for a caller that asked for them.
    pub async fn answer_prepared(&self, prepared: Prepared) -> Result<Answer> {
        match prepared.call {
            Call::Export(req) => {
                self.check_marked(Op::Export, false)?;
                Ok(Answer::File(self.spool_export(req)?))
            }
            // An ingest's report holds every memory it stored: megabytes,
            // written in pieces (see [`JsonPieces`]) for a caller that
            // takes them.
            Call::Ingest(req) if prepared.pieces && !prepared.unread => {
                self.begin(Op::Ingest, true)?;
                let pieces = JsonPieces::write(&self.ingest(req).await?).map_err(encode_failed)?;
                Ok(if pieces.len() < PIECE_BYTES { Answer::Json(pieces.into_text().map_err(encode_failed)?) } else { Answer::Pieces(pieces) })
            }
            call => Ok(Answer::Json(self.execute_prepared(Prepared { call, ..prepared }).await?)),
        }
    }

    /// What comes before any call runs: one a profile marked for deletion
    /// does not answer is refused (see [`Profile::check_marked`]), and a
    /// write that may create the profile records that it was written.
    fn begin(&self, op: Op, creates: bool) -> Result<()> {
        self.check_marked(op, creates)?;
        if creates {
            let store = self.store();
            if store.meta_get(META_WRITTEN)?.is_none() {
                store.meta_set(META_WRITTEN, "1")?;
            }
        }
        Ok(())
    }

    /// Refuses a call a profile marked for deletion does not answer (404);
    /// a write that may create the profile purges what is marked and runs.
    fn check_marked(&self, op: Op, creates: bool) -> Result<()> {
        if !op.answers_while_marked() && self.store().deletion_mark()?.is_some() {
            if !creates {
                return Err(Error::not_found("profile not found: it is marked for deletion (restoreProfile, or POST …/restore, brings it back within its grace period; a write starts it anew)"));
            }
            // A profile is created by its first write, and one deleted
            // counts as gone: a write purges what is marked now (it can no
            // longer be restored) and lands in an empty profile.
            self.purge_now()?;
        }
        Ok(())
    }

    /// Runs a prepared call that [`Profile::admit`] let in; its result as
    /// JSON text.
    pub async fn execute_prepared(&self, prepared: Prepared) -> Result<String> {
        let creates = prepared.creates();
        let Prepared { call, import, unread, .. } = prepared;
        self.begin(call.op(), creates)?;
        match call {
            Call::Ingest(req) => to_json_unless(unread, &self.ingest(req).await?),
            Call::Remember(req) => to_json(&self.remember(req).await?),
            Call::Recall(req) => to_json(&self.recall(req).await?),
            Call::List(req) => to_json(&crate::core::model::MemoryList::from(self.list(req)?)),
            Call::Get { id } => to_json(&self.get(&id)?),
            Call::Forget { id } => to_json(&self.forget(&id)?),
            Call::Delete { id } => {
                let report = self.delete(&id)?;
                self.drop_vectors(&report.deleted_memories).await;
                to_json(&report)
            }
            Call::DeleteSession { session_id } => {
                let (report, ids) = self.delete_session_memories(&session_id)?;
                self.drop_vectors(&ids).await;
                to_json_unless(unread, &report)
            }
            Call::GetSummary(req) => to_json(&self.summary(req)?),
            Call::Export(req) => to_json(&self.export(req)?),
            // `prepare` parsed it (and kept no text).
            Call::Import { .. } => to_json(&self.import_parsed(&import.ok_or_else(|| Error::storage("an import that was not prepared"))?)?),
            Call::Stats => to_json(&self.stats()?),
            Call::DeleteProfile { never_written_ok } => match self.mark_deleted() {
                Err(e) if never_written_ok && e.is_not_found() => Ok("null".to_string()),
                report => to_json_unless(unread, &report?),
            },
            Call::RestoreProfile => to_json(&self.restore()?),
            Call::Update(req) => to_json(&self.update(req)?),
            Call::Consolidate(req) => to_json(&self.consolidate(req).await?),
            Call::UndoConsolidation { id } => to_json(&self.undo_consolidation(id)?),
            Call::Drain => to_json(&self.drain().await?),
            Call::Purge => {
                self.purge_now()?;
                to_json(&json!({ "purged": true }))
            }
        }
    }

    pub async fn ingest(&self, req: IngestRequest) -> Result<IngestReport> {
        let req = prepare_ingest(req)?;
        // A full profile refuses new conversations (409) before anything is
        // stored; re-sending one already stored stays a harmless no-op.
        let identified = ingest::identify_call(self, &req)?;
        let new = self.new_messages(&identified.ids)?;
        if new == 0 {
            return ingest::run(self, req, identified).await;
        }
        self.check_capacity(1)?;
        let session_id = identified.session_id.clone();
        let store = self.store();
        store.check_room(&session_id, new)?;
        // Ingest stores the raw messages, then awaits the judging stages,
        // then stores memories. Should the object die in between (restart,
        // eviction, deploy), a client's retry finds the messages stored and
        // changes nothing, so their memories would never be extracted. A
        // re-extraction job, written before and removed after, covers that
        // gap: it survives only a call that did not finish or failed, and
        // the alarm then judges the session's uncited messages.
        let guard = store.transaction(|| {
            store.enqueue_at(&crate::core::jobs::Work::Extract { session_id: session_id.clone() }, self.now.saturating_add(INGEST_GUARD_MILLIS))
        })?;
        // Listed while it runs: a guard due before it ends waits for it.
        let running = crate::core::running::enter(self.name, &session_id, self.now);
        let out = ingest::run(self, req, identified).await;
        drop(running);
        // Removed once the call finished. A call that failed keeps it: its
        // messages may be stored, and the caller's retry then finds
        // nothing new to extract (a crash never reaches this line either).
        if out.is_ok() {
            store.finish_jobs(&[guard])?;
        }
        out
    }

    pub async fn remember(&self, req: RememberRequest) -> Result<Memory> {
        // Room is checked when the memory is known (`remember::run`): a
        // re-sent remember adds nothing.
        remember::run(self, prepare_remember(req, self.now)?).await
    }

    pub async fn recall(&self, req: RecallRequest) -> Result<recall::RecallResponse> {
        req.validate()?;
        recall::run(self, req).await
    }

    /// How many distinct messages of a call (their `ids`) are not stored yet.
    fn new_messages(&self, ids: &[String]) -> Result<usize> {
        let existing = self.store().existing_message_ids(ids)?;
        Ok(ids.iter().filter(|id| !existing.contains(*id)).collect::<std::collections::HashSet<_>>().len())
    }

    /// The 409 of a profile holding `count` memories with no room left.
    fn full(&self, count: i64) -> Error {
        Error::conflict(format!("profile is full: it holds {count} memories and its limit is {}", self.limits.max_memories))
    }

    /// The profile's one capacity rule: when `adding` more memories might
    /// pass its limit, how many it holds and how many more fit (below
    /// zero when over it); `None` when they surely fit.
    pub(crate) fn room(&self, adding: i64) -> Result<Option<(i64, i64)>> {
        let limit = self.limits.max_memories;
        Ok(self.store().memory_count_near(limit, adding)?.map(|count| (count, limit.saturating_sub(count))))
    }

    /// A 409 unless `adding` more memories fit ([`Profile::room`]).
    pub(crate) fn check_capacity(&self, adding: i64) -> Result<()> {
        match self.room(adding)? {
            Some((count, room)) if adding > room => Err(self.full(count)),
            _ => Ok(()),
        }
    }
}

/// What a call answers.
#[derive(Debug)]
pub enum Answer {
    /// The result as JSON text.
    Json(String),
    /// A large result's JSON text in pieces ([`JsonPieces`]).
    Pieces(JsonPieces),
    /// An export: the NDJSON file, spooled in parts for the object to
    /// stream out ([`portable::spool_export`]).
    File(portable::Spooled),
}

/// A result that could not be written as JSON.
fn encode_failed(e: impl std::fmt::Display) -> Error {
    Error::storage(format!("failed to encode a result: {e}"))
}

/// [`to_json`], or `null` for a caller that reads no result.
fn to_json_unless<T: serde::Serialize>(unread: bool, result: &T) -> Result<String> {
    if unread {
        return Ok("null".to_string());
    }
    to_json(result)
}

/// An operation's result as JSON text, in a buffer of its length
/// ([`crate::core::json::to_string_exact`]): an ingest's report or a
/// recall's can be megabytes.
fn to_json<T: serde::Serialize>(result: &T) -> Result<String> {
    crate::core::json::to_string_exact(result).map_err(encode_failed)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;

    use crate::core::local::embed::HashEmbedder;
    use crate::core::local::vector::SqlVectorIndex;
    use crate::core::model::MessageInput;
    use crate::core::ports::LocalBoxFuture;
    use crate::core::ports::Sql;
    use crate::core::provider::Reasoner;
    use crate::core::provider::{Candidate, Classification, Pass, QueryAnalysis, SynthesisInput, Transcript, Verdict};
    use crate::core::recall::directory::TurnDirectory;
    use crate::core::rules::Rules;
    use crate::core::schema;
    use crate::core::store::FullText;
    use std::task::{Context, Poll};

    mod native_sql {
        use crate::core as core_path;
        include!("../../../tests/support/native_sql.rs");
    }
    use native_sql::NativeSql;

    const NOW: i64 = 1_776_247_200_000;

    fn database() -> NativeSql {
        let sql = NativeSql::memory();
        schema::migrate(&sql).unwrap();
        sql
    }

    fn profile<'a>(sql: &'a NativeSql, reasoner: &'a dyn Reasoner, index: &'a SqlVectorIndex<'a>, now: i64, max: i64) -> Profile<'a> {
        // One directory per profile value; a test's few are leaked.
        let turns = Box::leak(Box::new(TurnDirectory::new()));
        Profile {
            name: "t/p",
            sql,
            reasoner,
            embedder: &HashEmbedder,
            index,
            turns: Some(turns),
            now,
            limits: Limits { max_memories: max, ..Limits::default() },
            memory: MemoryView::default(),
            room: &crate::core::ports::Unshared,
        }
    }

    /// A reasoner whose extraction never finishes: an object that dies
    /// mid-ingest, once the future is dropped.
    struct Stuck;
    impl Reasoner for Stuck {
        fn extract<'a>(&'a self, _: &'a Transcript, _: Pass) -> LocalBoxFuture<'a, Result<Vec<Candidate>>> {
            Box::pin(std::future::pending())
        }
        fn verify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Verdict>>> {
            Rules.verify(t, c)
        }
        fn classify<'a>(&'a self, t: &'a Transcript, c: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Classification>>> {
            Rules.classify(t, c)
        }
        fn analyze<'a>(&'a self, q: &'a str) -> LocalBoxFuture<'a, Result<QueryAnalysis>> {
            Rules.analyze(q)
        }
        fn synthesize<'a>(&'a self, i: &'a SynthesisInput) -> LocalBoxFuture<'a, Result<String>> {
            Rules.synthesize(i)
        }
        fn consolidate<'a>(&'a self, g: &'a [crate::core::provider::Group]) -> LocalBoxFuture<'a, Result<Vec<crate::core::provider::Consolidation>>> {
            Rules.consolidate(g)
        }
    }

    /// A model that is down: every stage fails.
    struct Down;
    impl Reasoner for Down {
        fn extract<'a>(&'a self, _: &'a Transcript, _: Pass) -> LocalBoxFuture<'a, Result<Vec<Candidate>>> {
            Box::pin(async { Err(Error::provider("model down")) })
        }
        fn verify<'a>(&'a self, _: &'a Transcript, _: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Verdict>>> {
            Box::pin(async { Err(Error::provider("model down")) })
        }
        fn classify<'a>(&'a self, _: &'a Transcript, _: &'a [Candidate]) -> LocalBoxFuture<'a, Result<Vec<Classification>>> {
            Box::pin(async { Err(Error::provider("model down")) })
        }
        fn analyze<'a>(&'a self, _: &'a str) -> LocalBoxFuture<'a, Result<QueryAnalysis>> {
            Box::pin(async { Err(Error::provider("model down")) })
        }
        fn synthesize<'a>(&'a self, _: &'a SynthesisInput) -> LocalBoxFuture<'a, Result<String>> {
            Box::pin(async { Err(Error::provider("model down")) })
        }
        fn consolidate<'a>(&'a self, _: &'a [crate::core::provider::Group]) -> LocalBoxFuture<'a, Result<Vec<crate::core::provider::Consolidation>>> {
            Box::pin(async { Err(Error::provider("model down")) })
        }
    }

    #[test]
    fn test_remember_and_recall_keep_answering_when_the_model_is_down() {
        let sql = database();
        let index = SqlVectorIndex { sql: &sql };
        let p = profile(&sql, &Down, &index, NOW, 1_000);
        let m = futures::executor::block_on(p.remember(RememberRequest {
            content: "The staging database runs PostgreSQL 16 on port 5433.".into(),
            session_id: None,
            kind: None,
            key: None,
            expires_at: None,
            ttl_seconds: None,
            sensitive: None,
            metadata: Default::default(),
        }))
        .expect("remember falls back to the rules when the model is down");
        let r = futures::executor::block_on(p.recall(RecallRequest { query: "Which port does the staging database use?".into(), options: Default::default() }))
            .unwrap();
        assert!(r.candidates.iter().any(|c| c.id == m.id));
        assert!(r.messages.iter().any(|n| n.contains("analysis failed")), "{:?}", r.messages);
        assert!(r.messages.iter().any(|n| n.contains("synthesis failed")), "{:?}", r.messages);
        assert!(r.result.contains("5433"));
    }

    fn conversation() -> IngestRequest {
        IngestRequest {
            session_id: Some("s1".into()),
            messages: vec![
                MessageInput { role: "user".into(), content: "I moved to Lisbon in 2021 and work as a baker.".into(), timestamp: None },
                MessageInput { role: "user".into(), content: "My sister Ana lives in Porto with two cats.".into(), timestamp: None },
            ],
            metadata: Default::default(),
        }
    }

    /// An ingest of [`conversation`] polled once: its messages stored, it
    /// awaits its model (a [`Stuck`] reasoner's profile) until dropped.
    fn stuck_ingest<'p>(p: &'p Profile<'_>) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<IngestReport>> + 'p>> {
        let mut fut: std::pin::Pin<Box<dyn std::future::Future<Output = Result<IngestReport>> + 'p>> = Box::pin(p.ingest(conversation()));
        let waker = futures::task::noop_waker();
        assert!(matches!(fut.as_mut().poll(&mut Context::from_waker(&waker)), Poll::Pending));
        fut
    }

    #[test]
    fn test_an_ingest_interrupted_after_storing_messages_is_extracted_by_the_alarm() {
        let sql = database();
        let index = SqlVectorIndex { sql: &sql };
        {
            // Polled once (messages stored, extraction pending), then
            // dropped: the object died mid-call and the caller saw no answer.
            let p = profile(&sql, &Stuck, &index, NOW, 1_000);
            drop(stuck_ingest(&p));
        }
        let p = profile(&sql, &Rules, &index, NOW + 1_000, 1_000);
        assert_eq!(p.stats().unwrap().messages, 2, "the raw messages were stored");
        assert_eq!(p.stats().unwrap().memories, 0);
        // The client retries: nothing new to store, and nothing extracted yet.
        let again = futures::executor::block_on(p.ingest(conversation())).unwrap();
        assert_eq!((again.messages_stored, again.memories_stored), (0, 0));
        // The guard job is still there; once due, the alarm's drain heals it.
        assert_eq!(p.stats().unwrap().pending_jobs, 1);
        let later = profile(&sql, &Rules, &index, NOW + INGEST_GUARD_MILLIS + 1_000, 1_000);
        let report = futures::executor::block_on(later.drain()).unwrap();
        assert_eq!(report.extracted, 1);
        assert!(later.stats().unwrap().memories >= 2, "memories extracted after the interruption");
    }

    #[test]
    fn test_an_ingest_running_past_its_guard_is_not_judged_again_by_the_alarm() {
        let sql = database();
        let index = SqlVectorIndex { sql: &sql };
        let p = profile(&sql, &Stuck, &index, NOW, 1_000);
        // Still awaiting its model when the guard falls due.
        let fut = stuck_ingest(&p);
        let due = NOW + INGEST_GUARD_MILLIS + 1_000;
        let later = profile(&sql, &Rules, &index, due, 1_000);
        let report = futures::executor::block_on(later.drain()).unwrap();
        assert_eq!((report.extracted, report.waiting), (0, 1), "{report:?}");
        assert_eq!(later.stats().unwrap().memories, 0, "the running call's messages are not judged twice");
        assert_eq!(report.next_at, Some(due + INGEST_GUARD_MILLIS), "the guard waits another guard's time");
        // The call dies (its future goes): the guard, due again, heals it.
        drop(fut);
        let healed = profile(&sql, &Rules, &index, due + INGEST_GUARD_MILLIS + 1_000, 1_000);
        let report = futures::executor::block_on(healed.drain()).unwrap();
        assert_eq!((report.extracted, report.waiting), (1, 0), "{report:?}");
        assert!(healed.stats().unwrap().memories >= 2);
    }

    #[test]
    fn test_a_finished_ingest_leaves_no_guard_job() {
        let sql = database();
        let index = SqlVectorIndex { sql: &sql };
        let p = profile(&sql, &Rules, &index, NOW, 1_000);
        let report = futures::executor::block_on(p.ingest(conversation())).unwrap();
        assert!(report.memories_stored >= 2);
        let jobs = p.store().due_jobs(100, 100).unwrap();
        assert!(jobs.iter().all(|j| j.work.kind() == crate::core::jobs::JobKind::Embed), "{jobs:?}");
        let later = profile(&sql, &Rules, &index, NOW + INGEST_GUARD_MILLIS + 1_000, 1_000);
        assert!(later.store().due_jobs(100, 100).unwrap().iter().all(|j| j.work.kind() != crate::core::jobs::JobKind::Extract));
    }

    #[test]
    fn test_a_full_profile_refuses_new_conversations_but_not_resends() {
        let sql = database();
        let index = SqlVectorIndex { sql: &sql };
        let p = profile(&sql, &Rules, &index, NOW, 1);
        futures::executor::block_on(p.ingest(conversation())).unwrap();
        let resent = futures::executor::block_on(p.ingest(conversation())).unwrap();
        assert_eq!(resent.messages_stored, 0);
        let mut other = conversation();
        other.session_id = Some("s2".into());
        let err = futures::executor::block_on(p.ingest(other)).unwrap_err();
        assert_eq!(err.status(), 409);
        assert_eq!(p.stats().unwrap().sessions, 1, "the refused call stored nothing");
    }

    #[test]
    fn test_capacity_counts_the_memories_held_not_the_rowids_used() {
        let sql = database();
        let index = SqlVectorIndex { sql: &sql };
        let p = profile(&sql, &Rules, &index, NOW, 3);
        let remember = |content: &str| {
            let req: crate::core::api::RememberRequest = serde_json::from_value(serde_json::json!({ "content": content })).unwrap();
            futures::executor::block_on(p.remember(req))
        };
        let a = remember("The staging cluster runs in the Oslo region.").unwrap();
        let b = remember("Deploys to production need two approvals.").unwrap();
        remember("The on-call rotation changes every Monday at nine.").unwrap();
        assert_eq!(remember("Backups are kept for thirty days.").unwrap_err().status(), 409, "three of three");
        p.delete(&a.id).unwrap();
        p.delete(&b.id).unwrap();
        // Rowids up to 3 are taken, one memory is held: two fit again.
        remember("Backups are kept for thirty days.").unwrap();
        remember("The design review is on Thursdays.").unwrap();
        assert_eq!(remember("Lunch is at noon on Fridays.").unwrap_err().status(), 409);
    }

    /// Every table's text, shadow tables of the FTS indexes included.
    fn all_text(sql: &NativeSql) -> String {
        let tables: Vec<String> = sql
            .query("SELECT name FROM sqlite_master WHERE type = 'table'", &[])
            .unwrap()
            .into_iter()
            .filter_map(|r| r[0].opt_string())
            .filter(|t| !t.ends_with("_fts") && !t.starts_with("sqlite_"))
            .collect();
        let mut out = String::new();
        for t in tables {
            for row in sql.query(&format!("SELECT * FROM \"{t}\""), &[]).unwrap() {
                for v in row {
                    match v {
                        crate::core::ports::SqlValue::Text(s) => out.push_str(&s),
                        crate::core::ports::SqlValue::Blob(b) => out.push_str(&String::from_utf8_lossy(&b)),
                        _ => {}
                    }
                    out.push('\n');
                }
            }
        }
        out
    }

    #[test]
    fn test_hard_deletes_leave_no_text_in_any_table_or_index() {
        let sql = database();
        let index = SqlVectorIndex { sql: &sql };
        let p = profile(&sql, &Rules, &index, NOW, 1_000);
        let mut req = conversation();
        req.messages[0].content = "My locker word is quokkanebula and I use it daily at the gym.".into();
        futures::executor::block_on(p.ingest(req)).unwrap();
        let other = IngestRequest {
            session_id: Some("s2".into()),
            messages: vec![MessageInput { role: "user".into(), content: "The staging host wombatquasar runs Debian 12.".into(), timestamp: None }],
            metadata: Default::default(),
        };
        futures::executor::block_on(p.ingest(other)).unwrap();
        futures::executor::block_on(p.drain()).unwrap();
        // Their full-text rows written (as a reader would), so the indexes
        // hold the words too and the deletes have them to remove.
        for which in FullText::BOTH {
            which.catch_up(&sql).unwrap();
        }
        let index_text = || {
            let shadows: Vec<String> = sql
                .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%\\_fts\\_%' ESCAPE '\\'", &[])
                .unwrap()
                .into_iter()
                .filter_map(|r| r[0].opt_string())
                .collect();
            assert!(shadows.len() >= 4, "{shadows:?}");
            shadows.iter().map(|t| format!("{:?}", sql.query(&format!("SELECT * FROM \"{t}\""), &[]).unwrap())).collect::<String>()
        };
        assert!(index_text().contains("quokkanebula") && index_text().contains("wombatquasar"), "the indexes hold both");
        assert!(all_text(&sql).contains("quokkanebula") && all_text(&sql).contains("wombatquasar"));
        let target = p.list(api::ListRequest::default()).unwrap().memories.into_iter().find(|m| m.content.contains("quokkanebula")).unwrap();
        p.delete(&target.id).unwrap();
        assert!(!all_text(&sql).contains("quokkanebula"), "delete left text behind");
        p.delete_session("s2").unwrap();
        assert!(!all_text(&sql).contains("wombatquasar"), "deleteSession left text behind");
        p.wipe().unwrap();
        assert!(!all_text(&sql).contains("Lisbon"), "deleteProfile left text behind");
    }

    #[test]
    fn test_private_spans_never_reach_storage() {
        let sql = database();
        let index = SqlVectorIndex { sql: &sql };
        let p = profile(&sql, &Rules, &index, NOW, 1_000);
        let mut req = conversation();
        req.messages[0].content = "My door code is <private>7719</private> and I live in Lisbon.".into();
        req.messages[1].role = "<private>Jane Quokkason</private>".into();
        futures::executor::block_on(p.ingest(req)).unwrap();
        let m = futures::executor::block_on(p.remember(RememberRequest {
            content: "The alarm PIN is <private>2468</private>; ask the owner first.".into(),
            session_id: None,
            kind: None,
            key: None,
            expires_at: None,
            ttl_seconds: None,
            sensitive: None,
            metadata: Default::default(),
        }))
        .unwrap();
        assert!(!m.content.contains("2468"));
        let export = p.export(Default::default()).unwrap();
        assert!(!export.contains("7719") && !export.contains("2468"), "{export}");
        assert!(!all_text(&sql).to_lowercase().contains("quokkason"), "a private role reached storage");
    }
}

//! Shared by native tests and the LoCoMo harness: a profile over native
//! SQLite with the local defaults.

#![allow(dead_code)]

pub mod native_sql {
    use agent_memory::core as core_path;
    include!("native_sql.rs");
}

use agent_memory::core::local::embed::HashEmbedder;
use agent_memory::core::local::vector::SqlVectorIndex;
use agent_memory::core::ops::{Limits, Profile};
use agent_memory::core::recall::directory::TurnDirectory;
use agent_memory::core::rules::Rules;
pub use native_sql::NativeSql;

/// A counting global allocator (heap tests and benchmarks).
pub mod heap;

/// An OpenAI-compatible embedder over HTTP (`LOCOMO_EMBEDDER=openai`).
pub mod openai_embed;

/// A migrated, empty profile database.
pub fn database() -> NativeSql {
    let sql = NativeSql::memory();
    agent_memory::core::schema::migrate(&sql).expect("migrate");
    sql
}

/// A profile database migrated up to schema `version` only, as a
/// version before it left it (to test the migrations after).
pub fn database_at(version: i64) -> NativeSql {
    use agent_memory::core::ports::Sql;
    let sql = NativeSql::memory();
    sql.execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)", &[]).unwrap();
    for (v, statements) in agent_memory::core::schema::MIGRATIONS.iter().filter(|(v, _)| *v <= version) {
        for s in statements.iter() {
            sql.execute(s, &[]).unwrap();
        }
        sql.execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, 'then')", &[(*v).into()]).unwrap();
    }
    sql
}

/// Runs `f` with a profile over `sql` at time `now` (epoch millis).
pub fn with_profile<T>(sql: &dyn agent_memory::core::ports::Sql, now: i64, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    with_profile_in(sql, now, &TurnDirectory::new(), f)
}

/// [`with_profile`] with a turn directory kept by the caller across
/// calls, as the Durable Object keeps it.
#[allow(dead_code)]
pub fn with_profile_in<T>(sql: &dyn agent_memory::core::ports::Sql, now: i64, turns: &TurnDirectory, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    with_profile_limits(sql, now, turns, Limits::default(), f)
}

/// [`with_profile_in`] under `limits`.
pub fn with_profile_limits<T>(
    sql: &dyn agent_memory::core::ports::Sql,
    now: i64,
    turns: &TurnDirectory,
    limits: Limits,
    f: impl FnOnce(&Profile<'_>) -> T,
) -> T {
    with_profile_embedding(sql, now, turns, limits, &HashEmbedder, f)
}

/// [`with_profile_limits`] with another embedder than the local default.
pub fn with_profile_embedding<T>(
    sql: &dyn agent_memory::core::ports::Sql,
    now: i64,
    turns: &TurnDirectory,
    limits: Limits,
    embedder: &dyn agent_memory::core::ports::Embedder,
    f: impl FnOnce(&Profile<'_>) -> T,
) -> T {
    with_parts(sql, now, turns, limits, Parts { embedder, ..Parts::default() }, f)
}

/// [`with_profile`] deciding with `reasoner`, under `limits`, over any
/// [`Sql`](agent_memory::core::ports::Sql) (a fault-injecting one too).
pub fn with_reasoner<T>(
    sql: &dyn agent_memory::core::ports::Sql,
    now: i64,
    limits: Limits,
    reasoner: &dyn agent_memory::core::provider::Reasoner,
    f: impl FnOnce(&Profile<'_>) -> T,
) -> T {
    with_parts(sql, now, &TurnDirectory::new(), limits, Parts { reasoner, ..Parts::default() }, f)
}

/// [`with_reasoner`] taking working-memory room from `room` (one shared
/// with other profiles, as a Worker's isolate is).
#[allow(dead_code)]
pub fn with_room<T>(
    sql: &dyn agent_memory::core::ports::Sql,
    now: i64,
    limits: Limits,
    reasoner: &dyn agent_memory::core::provider::Reasoner,
    room: &dyn agent_memory::core::ports::WorkingRoom,
    f: impl FnOnce(&Profile<'_>) -> T,
) -> T {
    with_parts(sql, now, &TurnDirectory::new(), limits, Parts { reasoner, room, ..Parts::default() }, f)
}

/// The providers of a test's profile: the local defaults unless named.
#[derive(Clone, Copy)]
pub struct Parts<'a> {
    pub reasoner: &'a dyn agent_memory::core::provider::Reasoner,
    pub embedder: &'a dyn agent_memory::core::ports::Embedder,
    pub room: &'a dyn agent_memory::core::ports::WorkingRoom,
}

impl Default for Parts<'_> {
    fn default() -> Self {
        Parts { reasoner: &Rules, embedder: &HashEmbedder, room: &agent_memory::core::ports::Unshared }
    }
}

/// A profile over `sql` at `now` with `parts` and nothing resident: no turn
/// directory, its vectors read from `sql` (a profile over the memory
/// budget, or just evicted, answers so).
#[allow(dead_code)]
pub fn with_nothing_resident<T>(sql: &dyn agent_memory::core::ports::Sql, now: i64, parts: Parts<'_>, f: impl FnOnce(&Profile<'_>) -> T) -> T {
    let index = SqlVectorIndex { sql };
    let Parts { reasoner, embedder, room } = parts;
    let p = Profile { name: "test/p", sql, reasoner, embedder, index: &index, turns: None, now, limits: Limits::default(), memory: Default::default(), room };
    f(&p)
}

/// A profile over `sql` at `now` with `parts`, its vectors in `sql`.
pub fn with_parts<T>(
    sql: &dyn agent_memory::core::ports::Sql,
    now: i64,
    turns: &TurnDirectory,
    limits: Limits,
    parts: Parts<'_>,
    f: impl FnOnce(&Profile<'_>) -> T,
) -> T {
    let index = SqlVectorIndex { sql };
    let Parts { reasoner, embedder, room } = parts;
    let p = Profile { name: "test/p", sql, reasoner, embedder, index: &index, turns: Some(turns), now, limits, memory: Default::default(), room };
    f(&p)
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    futures::executor::block_on(f)
}

/// 2026-04-15T10:00:00Z
pub const APRIL_15: i64 = 1_776_247_200_000;

/// One day in milliseconds.
pub const DAY: i64 = 86_400_000;

pub fn msg(role: &str, content: &str) -> agent_memory::core::model::MessageInput {
    agent_memory::core::model::MessageInput { role: role.into(), content: content.into(), timestamp: None }
}

/// The example conversation of SPEC.md section 2, in session `setup`.
pub fn spec_conversation() -> agent_memory::core::api::IngestRequest {
    agent_memory::core::api::IngestRequest {
        messages: vec![
            msg("user", "Set up the project with React and TypeScript."),
            msg("assistant", "Done. Scaffolded a React + TS project targeting Workers."),
            msg("user", "Use pnpm, not npm. And dark mode by default."),
            msg("assistant", "Got it -- pnpm and dark mode as default."),
        ],
        session_id: Some("setup".into()),
        metadata: Default::default(),
    }
}

/// xorshift64*: a fixed, dependency-free generator for generated test data.
#[allow(dead_code)]
pub struct Rng(pub u64);

#[allow(dead_code)]
impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    /// Approximately normal (sum of uniforms).
    pub fn normal(&mut self) -> f32 {
        (0..4).map(|_| self.unit()).sum::<f32>() - 2.0
    }
    pub fn pick<'a>(&mut self, xs: &'a [&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

/// SQL that fails the `n`-th statement containing `pattern` (counting
/// from 1), once, with a storage error "injected failure": as a cut there
/// would stop the call.
pub struct FailingAt<'a> {
    pub inner: &'a dyn agent_memory::core::ports::Sql,
    pub pattern: &'static str,
    pub n: std::cell::Cell<usize>,
}

impl agent_memory::core::ports::Sql for FailingAt<'_> {
    fn query(&self, sql: &str, params: &[agent_memory::core::ports::SqlValue]) -> agent_memory::core::error::Result<Vec<agent_memory::core::ports::Row>> {
        if sql.contains(self.pattern) {
            match self.n.get() {
                0 => {}
                1 => {
                    self.n.set(0);
                    return Err(agent_memory::core::error::Error::storage("injected failure"));
                }
                k => self.n.set(k - 1),
            }
        }
        self.inner.query(sql, params)
    }
    fn transaction(&self, f: &mut dyn FnMut() -> agent_memory::core::error::Result<()>) -> agent_memory::core::error::Result<()> {
        self.inner.transaction(f)
    }
    fn database_size(&self) -> i64 {
        self.inner.database_size()
    }
}

/// SQL that keeps the statements `keep` picks, with their parameters
/// (to count them, or to ask SQLite how it runs them).
pub struct Recorded<'a> {
    pub inner: &'a dyn agent_memory::core::ports::Sql,
    pub keep: fn(&str) -> bool,
    pub seen: std::cell::RefCell<Vec<(String, Vec<agent_memory::core::ports::SqlValue>)>>,
}

impl<'a> Recorded<'a> {
    pub fn new(inner: &'a dyn agent_memory::core::ports::Sql, keep: fn(&str) -> bool) -> Recorded<'a> {
        Recorded { inner, keep, seen: Default::default() }
    }
}

impl agent_memory::core::ports::Sql for Recorded<'_> {
    fn query(&self, sql: &str, params: &[agent_memory::core::ports::SqlValue]) -> agent_memory::core::error::Result<Vec<agent_memory::core::ports::Row>> {
        if (self.keep)(sql) {
            self.seen.borrow_mut().push((sql.to_string(), params.to_vec()));
        }
        self.inner.query(sql, params)
    }
    fn transaction(&self, f: &mut dyn FnMut() -> agent_memory::core::error::Result<()>) -> agent_memory::core::error::Result<()> {
        self.inner.transaction(f)
    }
    fn database_size(&self) -> i64 {
        self.inner.database_size()
    }
}

/// Every row of every table but the migration record, as text: what
/// "nothing changed" compares.
pub fn snapshot(sql: &NativeSql) -> String {
    use agent_memory::core::ports::Sql;
    let tables: Vec<String> = sql
        .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", &[])
        .unwrap()
        .into_iter()
        .filter_map(|r| r[0].opt_string())
        .collect();
    tables.iter().map(|t| format!("{t}: {:?}\n", sql.query(&format!("SELECT * FROM \"{t}\""), &[]).unwrap())).collect()
}

/// A statement of about 30 KB (3,000 words), distinct for each `i`: a
/// memory near the content limit.
pub fn long_statement(i: u64) -> String {
    let words: String = (0..3_000).map(|w| format!("w{i}x{w} ")).collect();
    format!("Record {i}: {words}")
}

/// The steps of `statement`'s plan that scan a stored table whole
/// ([`native_sql::whole_table_scans`]). Empty when every table is searched
/// through an index.
pub fn table_scans(sql: &dyn agent_memory::core::ports::Sql, statement: &str, params: &[agent_memory::core::ports::SqlValue]) -> Vec<String> {
    let plan = sql.query(&format!("EXPLAIN QUERY PLAN {statement}"), params).expect("a plan");
    native_sql::whole_table_scans(plan.iter().filter_map(|r| r.last().and_then(|v| v.opt_string())).collect())
}

/// Whether the memories of `p` whose content holds `marker` (every state:
/// one key's versions) form one line: each superseded by at most one other
/// and named back by it, none ending before it begins, at most one active,
/// and `asOf` at noon of each of January 2024's `days` finding at most one.
/// The first broken rule, said, when not.
pub fn one_line_of(p: &Profile<'_>, marker: &str, days: std::ops::RangeInclusive<u8>) -> Result<(), String> {
    use agent_memory::core::api::{ListRequest, ListStatus};
    use agent_memory::core::model::Status;
    let every = ListRequest { limit: Some(1000), status: Some(ListStatus::All), ..ListRequest::default() };
    let all: Vec<_> = p.list(every).map_err(|e| e.to_string())?.memories.into_iter().filter(|m| m.content.contains(marker)).collect();
    let mut successors = std::collections::HashSet::new();
    for m in &all {
        if let Some(next) = &m.superseded_by {
            if !successors.insert(next.clone()) {
                return Err(format!("two versions superseded by {next}"));
            }
            let back = all.iter().find(|n| &n.id == next).and_then(|n| n.supersedes.clone());
            if back.as_deref() != Some(m.id.as_str()) {
                return Err(format!("{} is not named back", m.content));
            }
        }
        if m.valid_to.is_some() && m.valid_to < m.valid_from {
            return Err(format!("{} ends before it begins", m.content));
        }
    }
    if all.iter().filter(|m| m.status == Status::Active).count() > 1 {
        return Err(format!("two active: {:?}", all.iter().map(|m| (&m.content, m.status)).collect::<Vec<_>>()));
    }
    for day in days {
        let req: ListRequest = serde_json::from_value(serde_json::json!({ "asOf": format!("2024-01-{day:02}T12:00:00Z") })).map_err(|e| e.to_string())?;
        let values: Vec<String> =
            p.list(req).map_err(|e| e.to_string())?.memories.into_iter().filter(|m| m.content.contains(marker)).map(|m| m.content).collect();
        if values.len() > 1 {
            return Err(format!("day {day}: {values:?}"));
        }
    }
    Ok(())
}

/// A reasoner keying agents' statements as the user's ([`OneSubject`]).
mod one_subject {
    use agent_memory::core::provider::Reasoner;
    use agent_memory::core::rules::Rules;

    /// The rule-based reasoner, but keying every statement as the user's
    /// (`project.x` becomes `user.x`), as a language model may key an
    /// agent's statement of the user's matter: an agent's and a person's
    /// values then share keys.
    pub struct OneSubject;

    /// Classifications keyed as the user's ([`OneSubject`]).
    pub fn keyed_as_the_users(out: &mut [agent_memory::core::provider::Classification]) {
        for cls in out {
            cls.key = cls.key.take().map(|k| k.replace("project.", "user."));
        }
    }

    impl Reasoner for OneSubject {
        fn extract<'a>(
            &'a self,
            t: &'a agent_memory::core::provider::Transcript,
            pass: agent_memory::core::provider::Pass,
        ) -> agent_memory::core::ports::LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<agent_memory::core::provider::Candidate>>> {
            Rules.extract(t, pass)
        }
        fn verify<'a>(
            &'a self,
            t: &'a agent_memory::core::provider::Transcript,
            c: &'a [agent_memory::core::provider::Candidate],
        ) -> agent_memory::core::ports::LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<agent_memory::core::provider::Verdict>>> {
            Rules.verify(t, c)
        }
        fn classify<'a>(
            &'a self,
            t: &'a agent_memory::core::provider::Transcript,
            c: &'a [agent_memory::core::provider::Candidate],
        ) -> agent_memory::core::ports::LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<agent_memory::core::provider::Classification>>> {
            Box::pin(async move {
                let mut out = Rules.classify(t, c).await?;
                keyed_as_the_users(&mut out);
                Ok(out)
            })
        }
        fn analyze<'a>(
            &'a self,
            q: &'a str,
        ) -> agent_memory::core::ports::LocalBoxFuture<'a, agent_memory::core::error::Result<agent_memory::core::provider::QueryAnalysis>> {
            Rules.analyze(q)
        }
        fn synthesize<'a>(
            &'a self,
            i: &'a agent_memory::core::provider::SynthesisInput,
        ) -> agent_memory::core::ports::LocalBoxFuture<'a, agent_memory::core::error::Result<String>> {
            Rules.synthesize(i)
        }
        fn consolidate<'a>(
            &'a self,
            g: &'a [agent_memory::core::provider::Group],
        ) -> agent_memory::core::ports::LocalBoxFuture<'a, agent_memory::core::error::Result<Vec<agent_memory::core::provider::Consolidation>>> {
            Rules.consolidate(g)
        }
    }
}
#[allow(unused_imports)]
pub use one_subject::{keyed_as_the_users, OneSubject};

//! The outbox: background jobs queued with the writes that need them,
//! claimed before they run, finished, failed or parked.

use super::*;

/// An outbox row (`id, kind, memory_id, attempts`) as a job; a row that
/// does not read as one is a storage error, never a job of made-up values.
pub(super) fn job_from_row(r: &[SqlValue]) -> Result<Job> {
    let bad = || Error::storage("an outbox row is not a job");
    match r {
        [id, kind, subject, attempts] => Job::from_columns(
            id.as_i64().ok_or_else(bad)?,
            kind.as_str().ok_or_else(bad)?,
            subject.opt_string().ok_or_else(bad)?,
            attempts.as_i64().ok_or_else(bad)?,
        ),
        _ => Err(bad()),
    }
}

/// Every job kind this version runs, as a JSON list parameter.
pub(super) fn known_kinds() -> Result<SqlValue> {
    json_param(&JobKind::ALL.map(JobKind::as_str))
}

/// How long a job parked after its attempts waits for one more
/// ([`Store::revive_parked`]): a day, so that a job that keeps failing
/// costs one attempt a day, never a spin.
pub const PARKED_RETRY_MILLIS: i64 = 24 * 60 * 60 * 1000;

/// An outbox row that a day's wait may revive: a job of a kind this
/// version runs that reads as one; parameter `?n` is [`known_kinds`].
fn revivable(n: usize) -> String {
    format!(
        "(kind IN (SELECT value FROM json_each(?{n})) AND typeof(kind) = 'text' AND typeof(memory_id) IN ('text', 'null') \
         AND typeof(attempts) = 'integer' AND typeof(next_attempt_at) = 'integer')"
    )
}

impl<'a> Store<'a> {
    pub fn enqueue(&self, work: &Work) -> Result<()> {
        self.enqueue_at(work, self.now).map(|_| ())
    }

    /// When the guard of an ingest of `session` that is still running
    /// falls due, if one is: its job of the session's extraction, queued
    /// before its messages were stored, due later, never tried and never
    /// put off (`Ops::ingest` removes it by id when the call ends). Such
    /// an ingest is judging messages it stored; a retry of the session
    /// waits for it rather than judge them too.
    pub fn ingest_running_until(&self, session: &str) -> Result<Option<i64>> {
        let rows = self.sql.query(
            "SELECT MIN(next_attempt_at) FROM outbox WHERE memory_id = ?1 AND kind = ?2 \
             AND attempts = 0 AND parked = 0 AND last_error IS NULL AND next_attempt_at > ?3",
            &[session.into(), JobKind::Extract.as_str().into(), SqlValue::Integer(self.now)],
        )?;
        Ok(rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64))
    }

    /// [`Store::enqueue`], unless the same work is queued, due and not
    /// tried yet: that one reads its subject when it runs, so it will see
    /// what this call wrote. (One tried already may be running now, having
    /// read its subject before this write, or backing off; one due later
    /// is an ingest's guard, removed by id when its call ends: a new one
    /// is queued.) Faulted ingests of one session then queue one judging
    /// of it, not one each.
    pub fn enqueue_unless_waiting(&self, work: &Work) -> Result<()> {
        self.sql.execute(
            "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) SELECT ?1, ?2, 0, ?3, ?4 \
             WHERE NOT EXISTS (SELECT 1 FROM outbox WHERE memory_id = ?2 AND kind = ?1 AND attempts = 0 AND parked = 0 AND next_attempt_at <= ?3)",
            &[work.kind().as_str().into(), work.subject().into(), SqlValue::Integer(self.now), iso(self.now).into()],
        )
    }

    /// Queues a job of `kind` for each of `memory_ids`, due now, in one
    /// statement.
    pub fn enqueue_many(&self, kind: JobKind, memory_ids: &[&str]) -> Result<()> {
        if memory_ids.is_empty() {
            return Ok(());
        }
        // In chunks, in order: an import's ids alone can be over one
        // value's 2 MB.
        for chunk in json_chunks(memory_ids)? {
            self.sql.execute(
                "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) \
                 SELECT ?1, j.value, 0, ?2, ?3 FROM json_each(?4) j ORDER BY j.key",
                &[kind.as_str().into(), SqlValue::Integer(self.now), iso(self.now).into(), chunk],
            )?;
        }
        Ok(())
    }

    /// The memories whose vectors a removal job (due, backing off or
    /// parked) is still to take out of the index, each once.
    pub fn removals_pending(&self) -> Result<Vec<String>> {
        self.sql
            .query("SELECT DISTINCT memory_id FROM outbox WHERE kind = ? ORDER BY memory_id", &[JobKind::Unvector.as_str().into()])?
            .into_iter()
            .map(|r| r.first().and_then(|v| v.opt_string()).ok_or_else(|| Error::storage("an outbox row has no memory id")))
            .collect()
    }

    /// Queues a job due at `due` (epoch millis); returns its id.
    pub fn enqueue_at(&self, work: &Work, due: i64) -> Result<i64> {
        let rows = self.sql.query(
            "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, created_at) VALUES (?, ?, 0, ?, ?) RETURNING id",
            &[work.kind().as_str().into(), work.subject().into(), SqlValue::Integer(due), iso(self.now).into()],
        )?;
        rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("failed to queue a job"))
    }

    /// Jobs due now, not parked and of a kind this version runs, oldest
    /// first.
    ///
    /// At most `extracts` of them are session extractions (the drain runs
    /// a few a time, each a model call): read by id with the rest, a
    /// backlog of them (a model outage during a bulk ingest) filled every
    /// read, and the jobs queued after it (vectors, removals, full text)
    /// waited until fewer than `limit` were left.
    pub fn due_jobs(&self, limit: usize, extracts: usize) -> Result<Vec<Job>> {
        let count = |n: usize| SqlValue::Integer(i64::try_from(n).unwrap_or(i64::MAX));
        self.sql
            .query(
                "SELECT * FROM (SELECT id, kind, memory_id, attempts FROM outbox \
                   WHERE parked = 0 AND next_attempt_at <= ?1 AND kind = ?4 ORDER BY id LIMIT ?5) \
                 UNION ALL SELECT * FROM (SELECT id, kind, memory_id, attempts FROM outbox \
                   WHERE parked = 0 AND next_attempt_at <= ?1 AND kind <> ?4 AND kind IN (SELECT value FROM json_each(?3)) ORDER BY id LIMIT ?2) \
                 ORDER BY id",
                &[SqlValue::Integer(self.now), count(limit), known_kinds()?, JobKind::Extract.as_str().into(), count(extracts)],
            )?
            .into_iter()
            .map(|r| job_from_row(&r))
            .collect()
    }

    /// Records an attempt of each of `ids` before it runs, and moves it
    /// out of reach until its backoff has passed: `retry_base` millis
    /// after the first attempt, doubling with each one (capped at ten
    /// minutes). A run that dies (a trap, an out-of-memory) has counted
    /// its attempt, so a job that kills every run reaches its cap and is
    /// parked instead of killing the next one.
    pub fn claim_jobs(&self, ids: &[i64], retry_base: i64) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.sql.execute(
            "UPDATE outbox SET attempts = attempts + 1, \
             next_attempt_at = ?1 + min(600000, ?2 * (1 << min(attempts, 12))) \
             WHERE id IN (SELECT value FROM json_each(?3))",
            &[SqlValue::Integer(self.now), SqlValue::Integer(retry_base.max(1)), json_param(ids)?],
        )
    }

    /// Parks every job that has used `max_attempts` attempts, every job of
    /// a kind this version does not run, and every row that does not read
    /// as a job, with the reason; how many.
    /// A parked job is not retried with the others; one that used its
    /// attempts is tried once more [`PARKED_RETRY_MILLIS`] later
    /// ([`Store::revive_parked`]), and parked again if that fails. Every
    /// parked job stays visible (`stats().parked_jobs`, and the first few
    /// with their errors in `stats().parked`).
    pub fn park_jobs(&self, max_attempts: i64) -> Result<i64> {
        let over = self.sql.query(
            "UPDATE outbox SET parked = 1, next_attempt_at = ?2, \
             last_error = 'parked after ' || attempts || ' attempts: ' || COALESCE(last_error, 'no error was recorded') \
             WHERE parked = 0 AND attempts >= ?1 RETURNING id",
            &[SqlValue::Integer(max_attempts), SqlValue::Integer(self.now.saturating_add(PARKED_RETRY_MILLIS))],
        )?;
        let unknown = self.sql.query(
            "UPDATE outbox SET parked = 1, last_error = 'parked: this version knows no job of kind ' || quote(kind) \
             WHERE parked = 0 AND kind NOT IN (SELECT value FROM json_each(?1)) RETURNING id",
            &[known_kinds()?],
        )?;
        // A row [`job_from_row`] cannot read would fail every batch it
        // falls in, and the jobs behind it with it: parked, never claimed.
        let unreadable = self.sql.query(
            "UPDATE outbox SET parked = 1, \
             last_error = 'parked: the row does not read as a job (' || typeof(kind) || ' kind, ' || typeof(memory_id) || ' subject, ' || typeof(attempts) || ' attempts, ' || typeof(next_attempt_at) || ' time)' \
             WHERE parked = 0 AND (typeof(kind) <> 'text' OR typeof(memory_id) NOT IN ('text', 'null') OR typeof(attempts) <> 'integer' OR typeof(next_attempt_at) <> 'integer') RETURNING id",
            &[],
        )?;
        Ok(i64::try_from(over.len().saturating_add(unknown.len()).saturating_add(unreadable.len())).unwrap_or(i64::MAX))
    }

    /// Gives each parked job whose day is up one more attempt (it is due
    /// now, one attempt short of `max_attempts`, so a failure parks it
    /// again for another day): a removal parked while the vector index
    /// was down would otherwise leave a deleted memory's vector in the
    /// index for good, and a parked consolidation would stop the
    /// profile's scheduled runs. Jobs of an unknown kind and rows that do
    /// not read stay parked. One parked with attempts to spare (of a kind
    /// an older build, after a rollback, did not know) keeps them. How
    /// many.
    pub fn revive_parked(&self, max_attempts: i64) -> Result<i64> {
        let revived = self.sql.query(
            &format!(
                "UPDATE outbox SET parked = 0, attempts = max(0, min(attempts, ?1 - 1)), next_attempt_at = ?2 \
                 WHERE parked = 1 AND next_attempt_at <= ?2 AND {} RETURNING id",
                revivable(3)
            ),
            &[SqlValue::Integer(max_attempts), SqlValue::Integer(self.now), known_kinds()?],
        )?;
        Ok(i64::try_from(revived.len()).unwrap_or(i64::MAX))
    }

    /// The parked jobs, oldest first, at most `limit`: each one's kind,
    /// subject, attempts, when it is tried again (none for a job this
    /// version cannot run) and its last error.
    pub fn parked_jobs(&self, limit: usize) -> Result<Vec<crate::core::model::ParkedJob>> {
        let rows = self.sql.query(
            &format!(
                // Cast, as a row parked because it does not read as a job
                // is shown too.
                "SELECT COALESCE(CAST(kind AS TEXT), ''), CAST(memory_id AS TEXT), CAST(attempts AS INTEGER), CASE WHEN {} THEN next_attempt_at END, \
                 COALESCE(last_error, '') FROM outbox WHERE parked = 1 ORDER BY id LIMIT ?1",
                revivable(2)
            ),
            &[SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX)), known_kinds()?],
        )?;
        rows.into_iter()
            .map(|r| match r.as_slice() {
                [SqlValue::Text(kind), subject @ (SqlValue::Text(_) | SqlValue::Null), SqlValue::Integer(attempts), retry @ (SqlValue::Integer(_) | SqlValue::Null), SqlValue::Text(error)] => {
                    Ok(crate::core::model::ParkedJob {
                        kind: kind.clone(),
                        subject: subject.opt_string(),
                        attempts: *attempts,
                        retry_at: retry.as_i64().map(iso),
                        error: error.clone(),
                    })
                }
                _ => Err(Error::storage("failed to read a parked job")),
            })
            .collect()
    }

    pub fn finish_jobs(&self, ids: &[i64]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        self.sql.execute("DELETE FROM outbox WHERE id IN (SELECT value FROM json_each(?1))", &[json_param(ids)?])
    }

    /// Records why a claimed job failed ([`Store::claim_jobs`] counted the
    /// attempt and set the retry).
    pub fn record_failure(&self, id: i64, error: &str) -> Result<()> {
        let error: String = error.chars().take(1000).collect();
        self.sql.execute("UPDATE outbox SET last_error = ? WHERE id = ?", &[error.into(), SqlValue::Integer(id)])
    }

    /// Jobs in the outbox that are not parked (cheap: the drain asks after
    /// every batch).
    pub fn pending_jobs(&self) -> Result<i64> {
        self.count("SELECT COUNT(*) FROM outbox WHERE parked = 0")
    }

    /// The earliest time a job is due, in millis: a job that is not
    /// parked, or a parked one's next try ([`Store::revive_parked`]).
    pub fn next_job_at(&self) -> Result<Option<i64>> {
        // A waiting row whose time is not an integer is due at once: the
        // drain parks it as a row that does not read (it would otherwise
        // wait unseen, never due, or make the minimum unreadable).
        let rows = self.sql.query(
            &format!(
                "SELECT MIN(CASE WHEN typeof(next_attempt_at) = 'integer' THEN next_attempt_at ELSE 0 END) FROM outbox                  WHERE parked = 0 OR (parked = 1 AND {})",
                revivable(1)
            ),
            &[known_kinds()?],
        )?;
        crate::core::ports::aggregate_i64(&rows, "the outbox's next attempt time")
    }

    /// The one number a `SELECT COUNT(*) …` (or `MAX`) statement answers.
    pub(super) fn count(&self, statement: &str) -> Result<i64> {
        self.count_params(statement, &[])
    }

    /// [`Store::count`] of a statement with parameters.
    pub(super) fn count_params(&self, statement: &str, params: &[SqlValue]) -> Result<i64> {
        self.sql
            .query(statement, params)?
            .first()
            .and_then(|r| r.first())
            .and_then(SqlValue::as_i64)
            .ok_or_else(|| Error::storage("a count returned no number"))
    }

    /// When background work is next due (epoch millis): the earliest
    /// pending job or expiry, if any.
    pub fn next_due(&self) -> Result<Option<i64>> {
        Ok(match (self.next_job_at()?, self.next_expiry()?) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        })
    }
}

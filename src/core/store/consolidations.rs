//! Consolidations: the record of every change a consolidation made, the
//! memories as they were before it, and the writes that make and undo
//! one (a memory's sources rewritten, a memory put back as it was).

use super::*;
use crate::core::model::ConsolidationRecord;

/// A member of a live fold stating a key ([`Store::folds_holding`]).
#[derive(Clone, Debug, PartialEq)]
pub struct FoldedMember {
    /// The fold's consolidation record.
    pub fold: i64,
    pub key: String,
    pub owner: crate::core::model::Owner,
    pub session_id: String,
    pub content: String,
}

/// The `meta` key holding the consolidation run in progress (JSON).
pub const META_CONSOLIDATION: &str = "consolidation_run";

/// A recorded change, the memories as they were before it, and the ids of
/// those it created.
pub type Recorded = (ConsolidationRecord, Vec<Memory>, Vec<String>);

/// A change about to be recorded.
pub struct NewConsolidation<'a> {
    pub run_id: &'a str,
    pub action: &'a str,
    pub target: &'a str,
    pub members: &'a [String],
    /// The memories it created (a fold's).
    pub created: &'a [String],
    pub reason: &'a str,
    /// Every memory it changed, as it was before.
    pub before: &'a [Memory],
}

impl<'a> Store<'a> {
    /// Erases the consolidation records that involve any of `ids` (their
    /// copies of the memories as they were hold the memories' words): a
    /// hard delete leaves no copy of what it deleted.
    pub fn erase_consolidations_of(&self, ids: &[String]) -> Result<()> {
        for chunk in json_chunks(ids)? {
            let records: Vec<i64> = self
                .sql
                .query("SELECT DISTINCT c.consolidation_id FROM json_each(?1) j CROSS JOIN consolidation_members c ON c.memory_id = j.value", &[chunk])?
                .iter()
                .map(|r| r.first().and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("a consolidation id that is not a number")))
                .collect::<Result<_>>()?;
            if records.is_empty() {
                continue;
            }
            let param = json_param(&records)?;
            self.sql.execute("DELETE FROM consolidations WHERE id IN (SELECT value FROM json_each(?1))", std::slice::from_ref(&param))?;
            self.sql.execute("DELETE FROM consolidation_members WHERE consolidation_id IN (SELECT value FROM json_each(?1))", &[param])?;
        }
        Ok(())
    }

    /// Records a change; returns it as a record.
    pub fn record_consolidation(&self, c: &NewConsolidation<'_>) -> Result<ConsolidationRecord> {
        let at = iso(self.now);
        let rows = self.sql.query(
            "INSERT INTO consolidations (run_id, action, target, members, created, reason, before, at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            &[
                c.run_id.into(),
                c.action.into(),
                c.target.into(),
                json_param(c.members)?,
                json_param(c.created)?,
                c.reason.into(),
                SqlValue::Text(serde_json::to_string(c.before)?),
                at.as_str().into(),
            ],
        )?;
        let id = self.index_consolidation(&rows, c.target, c.members, c.created, c.before)?;
        Ok(ConsolidationRecord {
            id,
            run_id: c.run_id.to_string(),
            action: c.action.to_string(),
            target: c.target.to_string(),
            members: c.members.to_vec(),
            reason: c.reason.to_string(),
            at,
            undone_at: None,
        })
    }

    /// The consolidations `memory_id` took part in, oldest first.
    pub fn consolidations_of(&self, memory_id: &str) -> Result<Vec<ConsolidationRecord>> {
        let rows = self.sql.query(
            "SELECT c.id, c.run_id, c.action, c.target, c.members, c.reason, c.at, c.undone_at FROM consolidation_members x \
             CROSS JOIN consolidations c ON c.id = x.consolidation_id WHERE x.memory_id = ? ORDER BY c.id",
            &[memory_id.into()],
        )?;
        rows.into_iter().map(consolidation_from_row).collect()
    }

    /// A consolidation with the memories as they were before it and those
    /// it created.
    pub fn consolidation(&self, id: i64) -> Result<Option<Recorded>> {
        let rows = self.sql.query(
            "SELECT id, run_id, action, target, members, reason, at, undone_at, before, created FROM consolidations WHERE id = ?",
            &[SqlValue::Integer(id)],
        )?;
        let Some(mut r) = rows.into_iter().next() else { return Ok(None) };
        let created = r.pop().ok_or_else(|| Error::storage("a consolidation row is short"))?;
        let before = r.pop().ok_or_else(|| Error::storage("a consolidation row is short"))?;
        let before: Vec<Memory> = serde_json::from_str(before.as_str().unwrap_or_default())
            .map_err(|_| Error::storage("a consolidation's record of the memories before it does not read"))?;
        let created: Vec<String> = serde_json::from_str(created.as_str().unwrap_or_default())
            .map_err(|_| Error::storage("a consolidation's record of what it created does not read"))?;
        Ok(Some((consolidation_from_row(r)?, before, created)))
    }

    /// The ids of the consolidations after `after`, in order, at most
    /// `limit` (an export reads them a page at a time).
    pub fn consolidation_ids_after(&self, after: i64, limit: usize) -> Result<Vec<i64>> {
        let rows = self.sql.query(
            "SELECT id FROM consolidations WHERE id > ?1 ORDER BY id LIMIT ?2",
            &[SqlValue::Integer(after), SqlValue::Integer(i64::try_from(limit).unwrap_or(i64::MAX))],
        )?;
        rows.iter().map(|r| r.first().and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("a consolidation id does not read"))).collect()
    }

    /// Writes back a consolidation an export recorded (an import's
    /// `consolidation` record), unless the profile holds it already (the
    /// same run, action, target and time): under its own id when that is
    /// after every id the profile holds, else the next one. Called in the
    /// file's id order, so the records keep the order they were made in,
    /// which undo, forget and delete read them by.
    pub fn put_consolidation(&self, r: &ConsolidationRecord, before: &[Memory], created: &[String]) -> Result<bool> {
        let held = self.count_params(
            "SELECT COUNT(*) FROM consolidation_members m CROSS JOIN consolidations c ON c.id = m.consolidation_id \
             WHERE m.memory_id = ?3 AND c.run_id = ?1 AND c.action = ?2 AND c.target = ?3 AND c.at = ?4",
            &[r.run_id.as_str().into(), r.action.as_str().into(), r.target.as_str().into(), r.at.as_str().into()],
        )?;
        if held > 0 {
            return Ok(false);
        }
        let last = self.count("SELECT COALESCE(MAX(id), 0) FROM consolidations")?;
        let taken = r.id <= last;
        let rows = self.sql.query(
            "INSERT INTO consolidations (id, run_id, action, target, members, created, reason, before, at, undone_at) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
            &[
                if taken { SqlValue::Null } else { SqlValue::Integer(r.id) },
                r.run_id.as_str().into(),
                r.action.as_str().into(),
                r.target.as_str().into(),
                json_param(&r.members)?,
                json_param(created)?,
                r.reason.as_str().into(),
                SqlValue::Text(serde_json::to_string(before)?),
                r.at.as_str().into(),
                r.undone_at.as_deref().map_or(SqlValue::Null, SqlValue::from),
            ],
        )?;
        self.index_consolidation(&rows, &r.target, &r.members, created, before)?;
        Ok(true)
    }

    /// The id an insert of a consolidation returned (`rows`), with every
    /// memory it involves indexed to it (`consolidation_members`), each
    /// member with its topic key as it was (`before`), by which
    /// [`Store::folds_holding`] finds it.
    fn index_consolidation(&self, rows: &[Row], target: &str, members: &[String], created: &[String], before: &[Memory]) -> Result<i64> {
        let id = rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("a consolidation was not recorded"))?;
        let key_of = |id: &str| if members.iter().any(|m| m == id) { before.iter().find(|m| m.id == id).and_then(|m| m.key.as_deref()) } else { None };
        let mut involved: Vec<&str> = members.iter().chain(created).map(String::as_str).collect();
        involved.push(target);
        involved.sort();
        involved.dedup();
        let rows: Vec<(&str, Option<&str>)> = involved.into_iter().map(|id| (id, key_of(id))).collect();
        self.sql.execute(
            "INSERT OR IGNORE INTO consolidation_members (memory_id, consolidation_id, key) SELECT value ->> 0, ?2, value ->> 1 FROM json_each(?1)",
            &[json_param(&rows)?, SqlValue::Integer(id)],
        )?;
        Ok(id)
    }

    /// The later consolidations, not undone, that involve any of `ids`.
    pub fn later_consolidations(&self, after: i64, ids: &[String]) -> Result<Vec<i64>> {
        let rows = self.sql.query(
            "SELECT DISTINCT x.consolidation_id FROM json_each(?1) j CROSS JOIN consolidation_members x ON x.memory_id = j.value \
             CROSS JOIN consolidations c ON c.id = x.consolidation_id WHERE c.id > ?2 AND c.undone_at IS NULL ORDER BY 1",
            &[json_param(ids)?, SqlValue::Integer(after)],
        )?;
        rows.iter().map(|r| r.first().and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("a consolidation id does not read"))).collect()
    }

    pub fn mark_undone(&self, id: i64) -> Result<()> {
        self.sql.execute("UPDATE consolidations SET undone_at = ? WHERE id = ?", &[iso(self.now).into(), SqlValue::Integer(id)])
    }

    /// A consolidation window: up to `limit` active memories after the id
    /// `after`, up to the id `end` and, given `end_row`, written no later
    /// than the row `end_row` (ids need not sort by time: an import keeps
    /// any id), in id order, whose contents take `bytes` at most (the one
    /// that crosses it is the last; the first is always read).
    pub fn active_window(&self, after: &str, end: &str, end_row: Option<i64>, limit: usize, bytes: usize) -> Result<Vec<Memory>> {
        let bytes = i64::try_from(bytes).unwrap_or(i64::MAX);
        self.memories_where(
            &format!(
                "m.id IN (SELECT id FROM (SELECT id, len, SUM(len) OVER (ORDER BY id ROWS UNBOUNDED PRECEDING) AS upto FROM \
                 (SELECT id, LENGTH(CAST(content AS BLOB)) AS len FROM memories \
                  WHERE status = 'active' AND id > ?1 AND id <= ?2 AND (?3 IS NULL OR rowid <= ?3) ORDER BY id LIMIT {limit})) \
                 WHERE upto - len < ?4) ORDER BY m.id"
            ),
            &[after.into(), end.into(), end_row.map_or(SqlValue::Null, SqlValue::Integer), SqlValue::Integer(bytes)],
        )
    }

    /// The newest memory's id (ids sort by time), and the last row
    /// written: where a run that begins now stops.
    pub fn newest_memory(&self) -> Result<(Option<String>, i64)> {
        let rows = self.sql.query("SELECT MAX(id), COALESCE(MAX(rowid), 0) FROM memories", &[])?;
        let row = rows.first().ok_or_else(|| Error::storage("the newest memory does not read"))?;
        let id = row.first().and_then(SqlValue::opt_string);
        let last = row.get(1).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("the last memory row does not read"))?;
        Ok((id, last))
    }

    /// The members of each undone consolidation that involved one of
    /// `ids`: groupings a person took back, which a run does not make
    /// again.
    pub fn undone_groupings(&self, ids: &[String]) -> Result<Vec<std::collections::HashSet<String>>> {
        let rows = self.sql.query(
            "SELECT x.consolidation_id, x.memory_id FROM consolidation_members x WHERE x.consolidation_id IN \
             (SELECT DISTINCT y.consolidation_id FROM json_each(?1) j CROSS JOIN consolidation_members y ON y.memory_id = j.value \
              CROSS JOIN consolidations c ON c.id = y.consolidation_id WHERE c.undone_at IS NOT NULL) ORDER BY 1",
            &[json_param(ids)?],
        )?;
        let mut out: Vec<(i64, std::collections::HashSet<String>)> = Vec::new();
        for r in rows {
            let (Some(id), Some(member)) = (r.first().and_then(SqlValue::as_i64), r.get(1).and_then(SqlValue::opt_string)) else {
                return Err(Error::storage("an undone consolidation's member does not read"));
            };
            match out.last_mut() {
                Some((last, set)) if *last == id => {
                    set.insert(member);
                }
                _ => out.push((id, std::iter::once(member).collect())),
            }
        }
        Ok(out.into_iter().map(|(_, set)| set).collect())
    }

    /// Removes the queued job doing `work`, if any.
    /// Whether `work`'s job was ever claimed to run (an attempt counted):
    /// the alarm may be running it now.
    pub fn work_claimed(&self, work: &Work) -> Result<bool> {
        Ok(self.count_params(
            "SELECT COUNT(*) FROM outbox WHERE kind = ? AND memory_id = ? AND attempts > 0",
            &[work.kind().as_str().into(), work.subject().into()],
        )? > 0)
    }

    pub fn finish_work(&self, work: &Work) -> Result<()> {
        self.sql.execute("DELETE FROM outbox WHERE kind = ? AND memory_id = ?", &[work.kind().as_str().into(), work.subject().into()])
    }

    /// Makes the job doing `work` due now, its attempts forgotten and
    /// unparked, or queues one if there is none: what an explicit call
    /// that leaves the rest to the alarm needs to be true.
    pub fn revive_work(&self, work: &Work) -> Result<()> {
        let revived = self.sql.query(
            "UPDATE outbox SET parked = 0, attempts = 0, next_attempt_at = ?, last_error = NULL WHERE kind = ? AND memory_id = ? RETURNING id",
            &[SqlValue::Integer(self.now), work.kind().as_str().into(), work.subject().into()],
        )?;
        if revived.is_empty() {
            self.enqueue(work)?;
        }
        Ok(())
    }

    /// Makes a claimed job due again now, its attempts forgotten: it
    /// yielded, it did not fail.
    pub fn requeue_job(&self, id: i64) -> Result<()> {
        self.sql.execute(
            "UPDATE outbox SET attempts = 0, next_attempt_at = ?, last_error = NULL WHERE id = ?",
            &[SqlValue::Integer(self.now), SqlValue::Integer(id)],
        )
    }

    /// Puts job `id` off until `at`, with `why`, its attempt (claimed
    /// before it ran) not counted: it did nothing, and was not at fault.
    pub fn defer_job(&self, id: i64, at: i64, why: &str) -> Result<()> {
        let why: String = why.chars().take(1000).collect();
        self.sql.execute(
            "UPDATE outbox SET attempts = max(attempts - 1, 0), next_attempt_at = ?, last_error = ? WHERE id = ?",
            &[SqlValue::Integer(at), why.into(), SqlValue::Integer(id)],
        )
    }

    /// How many memories are active.
    pub fn active_count(&self) -> Result<i64> {
        self.count("SELECT COUNT(*) FROM memories WHERE status = 'active'")
    }

    /// Replaces a memory's metadata; queues its vector again when it has
    /// one (Vectorize filters by what it was written with).
    pub fn set_metadata(&self, id: &str, metadata: &crate::core::model::Metadata) -> Result<Memory> {
        let m = self.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))?;
        let text = (!metadata.is_empty()).then(|| serde_json::to_string(metadata)).transpose()?;
        // The fingerprint holds the metadata (whose the memory is).
        let fingerprint = crate::core::ids::fingerprint(m.kind.as_str(), &m.content, metadata);
        self.sql.execute(
            "UPDATE memories SET metadata = ?, fingerprint = ?, updated_at = ? WHERE id = ?",
            &[text.map(SqlValue::Text).unwrap_or(SqlValue::Null), fingerprint.into(), iso(self.now).into(), id.into()],
        )?;
        if m.status == Status::Active && m.kind != MemoryType::Task {
            self.enqueue(&Work::Embed { memory_id: id.to_string() })?;
        }
        self.get_memory(id)?.ok_or_else(|| Error::not_found(format!("no memory with id {id}")))
    }

    /// What a deletion of memory `id` by id takes with it, apart from what
    /// cites its messages: the memories merged or folded into it by
    /// consolidations not undone (and, through them, into those, down to
    /// the first wordings), and of `sources`, its messages, those it was
    /// drawn from itself: the ones it cited before its first merge (none
    /// for a fold, which no message gave), not those it took from the
    /// wordings merged or folded into it, which stay with the other
    /// memories they gave.
    pub fn consolidated_into(&self, id: &str, sources: &[String]) -> Result<(Vec<String>, Vec<String>)> {
        let mut members: Vec<String> = Vec::new();
        let mut taken: std::collections::HashSet<String> = std::collections::HashSet::new();
        let mut at = 0;
        let mut targets = vec![id.to_string()];
        // Each memory is a target once; a chain ends at the first wordings.
        while let Some(target) = targets.get(at).cloned() {
            at = at.saturating_add(1);
            // Through the target's memberships: the records' `undone_at`
            // sits after their copies of the memories, so a scan of the
            // records read every copy.
            let records = self.sql.query(
                "SELECT c.id FROM consolidation_members m CROSS JOIN consolidations c ON c.id = m.consolidation_id \
                 WHERE m.memory_id = ?1 AND c.target = ?1 AND c.action IN ('merge', 'fold') AND c.undone_at IS NULL ORDER BY c.id",
                &[target.as_str().into()],
            )?;
            for record in records {
                let record = record.first().and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("a consolidation id that does not read"))?;
                let Some((_, before, _)) = self.consolidation(record)? else { continue };
                for m in before.into_iter().filter(|m| m.id != target) {
                    if m.id != id && !members.contains(&m.id) {
                        targets.push(m.id.clone());
                        members.push(m.id);
                    }
                    taken.extend(m.source_message_ids);
                }
            }
        }
        let own = self.own_sources(id)?.unwrap_or_default();
        let drawn = sources.iter().filter(|s| !taken.contains(*s) || own.contains(s)).cloned().collect();
        Ok((members, drawn))
    }

    /// The messages memory `id` cited before its first merge (a merge not
    /// undone whose survivor it is), as that merge's record copied it;
    /// `None` when it survived no merge.
    fn own_sources(&self, id: &str) -> Result<Option<Vec<String>>> {
        let first = self.sql.query(
            "SELECT c.id FROM consolidation_members m CROSS JOIN consolidations c ON c.id = m.consolidation_id \
             WHERE m.memory_id = ?1 AND c.target = ?1 AND c.action = 'merge' AND c.undone_at IS NULL ORDER BY c.id LIMIT 1",
            &[id.into()],
        )?;
        let Some(record) =
            first.first().and_then(|r| r.first()).map(|v| v.as_i64().ok_or_else(|| Error::storage("a consolidation id that is not a number"))).transpose()?
        else {
            return Ok(None);
        };
        let Some((_, before, _)) = self.consolidation(record)? else { return Ok(None) };
        Ok(before.into_iter().find(|m| m.id == id).map(|m| m.source_message_ids))
    }

    /// Of the memories `ids`, which a deletion would take with the messages
    /// it removed, keeps each that is the survivor of a merge and cites all
    /// its own messages still (those it cited before its first merge):
    /// only a merged wording's messages went, and what remains was said
    /// apart from them. It keeps the sources that remain. Call after the
    /// messages are deleted, on memories not of a deleted session; returns
    /// the ids kept.
    pub fn keep_merged(&self, ids: &[String]) -> Result<Vec<String>> {
        let mut kept = Vec::new();
        for id in ids {
            let Some(own) = self.own_sources(id)? else { continue };
            let stored = self.existing_message_ids(&own)?;
            if own.iter().any(|m| !stored.contains(m)) {
                continue;
            }
            let Some(now) = self.get_memory(id)? else { continue };
            let remaining = self.existing_message_ids(&now.source_message_ids)?;
            let sources: Vec<String> = now.source_message_ids.into_iter().filter(|m| remaining.contains(m)).collect();
            self.set_sources(id, &sources)?;
            kept.push(id.clone());
        }
        Ok(kept)
    }

    /// Undoes consolidation `id`: its memories back exactly as they were, what
    /// it created deleted. Refused while a later consolidation that involves
    /// them stands (undo that one first), when one of them changed since in
    /// another way (forgotten, deleted, superseded, expired, its metadata
    /// updated: putting it back would overwrite that), and when already undone.
    pub fn undo_consolidation(&self, id: i64) -> Result<ConsolidationRecord> {
        self.undo_consolidation_within(id, &|_| Ok(true))
    }

    /// [`Store::undo_consolidation`], a memory it puts back active checked
    /// against the other holders of its key that its speaker reaches:
    /// `any_session` says whether a member's holders in other sessions
    /// count (a person's do; an agent's statement reaches its own
    /// session's, and another session's agent may hold its own value).
    pub fn undo_consolidation_within(&self, id: i64, any_session: &dyn Fn(&Memory) -> Result<bool>) -> Result<ConsolidationRecord> {
        let (mut rec, before, created) = self.consolidation(id)?.ok_or_else(|| Error::not_found(format!("no consolidation with id {id}")))?;
        if rec.undone_at.is_some() {
            return Err(Error::invalid(format!("consolidation {id} is already undone")));
        }
        let mut involved: Vec<String> = rec.members.clone();
        involved.extend(created.iter().cloned());
        involved.push(rec.target.clone());
        if let Some(later) = self.later_consolidations(id, &involved)?.first() {
            return Err(Error::invalid(format!("consolidation {later} changed these memories since; undo it first")));
        }
        self.unchanged_since(&rec, &involved, &before)?;
        self.no_other_holder(&before, &involved, any_session)?;
        if !created.is_empty() {
            self.delete_memories(&created)?;
        }
        for m in &before {
            self.restore_memory(m)?;
        }
        self.mark_undone(id)?;
        rec.undone_at = Some(iso(self.now));
        Ok(rec)
    }

    /// Refuses (409) when a memory `rec` involved is gone or was changed after
    /// it: every change to a memory sets its `updatedAt`, so one is unchanged
    /// only when its stamp is the consolidation's (it changed it) or the one
    /// it had before (it did not). A later-or-earlier comparison would miss a
    /// call begun before the consolidation that wrote after it (its stamp is
    /// its own start).
    fn unchanged_since(&self, rec: &ConsolidationRecord, involved: &[String], before: &[Memory]) -> Result<()> {
        for id in involved {
            // What the consolidation left: its own stamp on what it changed,
            // the stamp as it was on what it did not.
            let left = |m: &Memory| m.updated_at == rec.at || before.iter().any(|b| b.id == m.id && b.updated_at == m.updated_at);
            match self.get_memory(id)? {
                None => return Err(Error::conflict(format!("memory {id} was deleted after consolidation {}; it cannot be undone", rec.id))),
                Some(m) if !left(&m) => {
                    return Err(Error::conflict(format!(
                        "memory {id} changed after consolidation {} (now {}); undoing it would overwrite that",
                        rec.id,
                        m.status.as_str()
                    )));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }

    /// Refuses (409) to put back an active keyed memory whose owner holds its
    /// key in another active memory now (a value said after the
    /// consolidation, while this one was retired and superseded nothing): the
    /// owner would hold two values of one key, as `update` refuses too.
    fn no_other_holder(&self, before: &[Memory], involved: &[String], any_session: &dyn Fn(&Memory) -> Result<bool>) -> Result<()> {
        for m in before.iter().filter(|m| m.status == Status::Active) {
            let Some(key) = m.key.as_deref() else { continue };
            if let Some(h) = self.holder_beside(m, any_session(m)?, &|h| involved.iter().any(|i| i == h))? {
                return Err(Error::conflict(format!(
                    "memory {h} holds the key {} of memory {} now; undoing would leave two values of it: forget that one first",
                    crate::core::api::quoted(key),
                    m.id
                )));
            }
        }
        Ok(())
    }

    /// The members of live folds that state one of `keys`: each with its
    /// fold's record, its key, owner, session and words (for the caller to
    /// weigh its reach against a new statement of the key).
    pub fn folds_holding(&self, keys: &[&str]) -> Result<Vec<FoldedMember>> {
        let mut distinct: Vec<&str> = keys.to_vec();
        distinct.sort_unstable();
        distinct.dedup();
        let mut out = Vec::new();
        for chunk in json_chunks(&distinct)? {
            // Through the members' keys as they were folded (the index on
            // them): through the memories' key index, every version ever
            // stated of a key was read, and a key the user restates in every
            // call took each ingest longer than the last.
            let rows: Vec<(i64, String, Option<String>, String, String)> = json_rows_paged(
                self.sql,
                "SELECT json_array(c.id, m.key, m.metadata, m.session_id, m.content) AS r FROM json_each(?1) k \
                 CROSS JOIN consolidation_members cm ON cm.key = k.value CROSS JOIN memories m ON m.id = cm.memory_id \
                 CROSS JOIN consolidations c ON c.id = cm.consolidation_id \
                 WHERE m.key = k.value AND m.status = 'superseded' AND c.action = 'fold' AND c.undone_at IS NULL AND c.target = m.superseded_by",
                &[chunk],
            )?;
            for (fold, key, metadata, session_id, content) in rows {
                let metadata: crate::core::model::Metadata = match metadata {
                    Some(m) => serde_json::from_str(&m).map_err(|e| Error::storage(format!("a memory's metadata does not read: {e}")))?,
                    None => Default::default(),
                };
                out.push(FoldedMember { fold, key, owner: crate::core::model::Owner::of(&metadata), session_id, content });
            }
        }
        Ok(out)
    }

    /// The live folds holding memory `id`: the fold it was folded into,
    /// and the fold that one was folded into, and so on (their records'
    /// ids).
    pub fn folds_around(&self, id: &str) -> Result<Vec<i64>> {
        let mut folds = Vec::new();
        let mut at = id.to_string();
        // Each step goes to a later fold; a chain has no loop.
        while let Some(row) = self
            .sql
            .query(
                "SELECT c.id, c.target FROM memories m CROSS JOIN consolidation_members cm ON cm.memory_id = m.id \
                 CROSS JOIN consolidations c ON c.id = cm.consolidation_id \
                 WHERE m.id = ?1 AND m.status = 'superseded' AND c.action = 'fold' AND c.undone_at IS NULL AND c.target = m.superseded_by",
                &[at.as_str().into()],
            )?
            .into_iter()
            .next()
        {
            let [fold, target]: [SqlValue; 2] = row.try_into().map_err(|_| Error::storage("a fold row that is not two columns"))?;
            let fold = fold.as_i64().ok_or_else(|| Error::storage("a consolidation id that is not a number"))?;
            if folds.contains(&fold) {
                break;
            }
            folds.push(fold);
            at = text(target, "a fold's target")?;
        }
        Ok(folds)
    }

    /// Undoes the folds `folds` (their records' ids), latest first (an
    /// earlier fold's undo waits for a later one's; members weighed as in
    /// [`Store::undo_consolidation_within`]), leaving as it is each that
    /// cannot be undone (a later consolidation involves it, or it changed
    /// since). Returns how many were undone.
    pub fn open_folds(&self, mut folds: Vec<i64>, any_session: &dyn Fn(&Memory) -> Result<bool>) -> Result<usize> {
        folds.sort_unstable();
        folds.dedup();
        let mut opened: usize = 0;
        for fold in folds.into_iter().rev() {
            match self.undo_consolidation_within(fold, any_session) {
                Ok(_) => opened = opened.saturating_add(1),
                Err(e) if e.is_conflict() || e.is_invalid() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(opened)
    }

    /// Rewrites a memory's sources: the JSON column and its citations.
    pub fn set_sources(&self, id: &str, sources: &[String]) -> Result<()> {
        self.sql.execute("UPDATE memories SET source_message_ids = ? WHERE id = ?", &[SqlValue::Text(serde_json::to_string(sources)?), id.into()])?;
        self.sql.execute("DELETE FROM citations WHERE memory_id = ?", &[id.into()])?;
        self.sql.execute("DELETE FROM citations_waiting WHERE memory_id = ?", &[id.into()])?;
        let pairs: Vec<(&str, &String)> = sources.iter().map(|m| (id, m)).collect();
        self.cite(json_param(&pairs)?)
    }

    /// Retires `id` into `into`: superseded by it, valid until `until`,
    /// but never ending before it starts.
    pub fn retire_into(&self, id: &str, into: &str, until: Option<&str>) -> Result<()> {
        self.sql.execute(
            "UPDATE memories SET status = 'superseded', superseded_by = ?1, \
             valid_to = MAX(COALESCE(?2, valid_from, created_at), COALESCE(valid_from, created_at)), updated_at = ?3 WHERE id = ?4",
            &[into.into(), until.map(SqlValue::from).unwrap_or(SqlValue::Null), iso(self.now).into(), id.into()],
        )?;
        self.enqueue(&Work::Unvector { memory_id: id.to_string() })
    }

    /// Marks `newer` as the version after `older` (a supersession the
    /// topic keys missed, or an import's) unless it names one already,
    /// other than a version `older` itself replaced (directly or through
    /// others): an imported version whose file names A as the one before
    /// it, where the profile has since replaced A by B, follows B (the
    /// chain reads A, B, newer; B is not cut out of it).
    pub fn link_versions(&self, older: &str, newer: &str) -> Result<()> {
        self.sql.execute(
            "UPDATE memories SET supersedes = ?1, updated_at = ?2 WHERE id = ?3 AND (supersedes IS NULL OR ?1 IN ( \
               WITH RECURSIVE later(id) AS ( \
                 SELECT superseded_by FROM memories WHERE id = (SELECT supersedes FROM memories WHERE id = ?3) \
                 UNION SELECT m.superseded_by FROM memories m JOIN later ON m.id = later.id WHERE m.superseded_by IS NOT NULL) \
               SELECT id FROM later))",
            &[older.into(), iso(self.now).into(), newer.into()],
        )
    }

    /// Retires a task: expired now.
    pub fn retire_task(&self, id: &str) -> Result<()> {
        let now = iso(self.now);
        self.sql.execute("UPDATE memories SET status = 'expired', expires_at = ?1, updated_at = ?1 WHERE id = ?2", &[now.into(), id.into()])?;
        self.enqueue(&Work::Unvector { memory_id: id.to_string() })
    }

    /// Puts a memory back exactly as `m` records it (every column a
    /// consolidation may change), with its citations; queues its vector
    /// when it wants one again. A validity recorded (before schema 13)
    /// as ending before it begins comes back ending where it begins, as
    /// migration 13 left every stored one.
    pub fn restore_memory(&self, m: &Memory) -> Result<()> {
        self.sql.execute(
            "UPDATE memories SET status = ?1, supersedes = ?2, superseded_by = ?3, updated_at = ?4, expires_at = ?5, \
             valid_from = ?6, valid_to = CASE WHEN ?7 < COALESCE(?6, created_at) THEN COALESCE(?6, created_at) ELSE ?7 END \
             WHERE id = ?8",
            &[
                m.status.as_str().into(),
                m.supersedes.as_deref().map(SqlValue::from).unwrap_or(SqlValue::Null),
                m.superseded_by.as_deref().map(SqlValue::from).unwrap_or(SqlValue::Null),
                m.updated_at.as_str().into(),
                m.expires_at.as_deref().map(SqlValue::from).unwrap_or(SqlValue::Null),
                m.valid_from.as_deref().map(SqlValue::from).unwrap_or(SqlValue::Null),
                m.valid_to.as_deref().map(SqlValue::from).unwrap_or(SqlValue::Null),
                m.id.as_str().into(),
            ],
        )?;
        self.set_sources(&m.id, &m.source_message_ids)?;
        if m.status == Status::Active && m.kind != MemoryType::Task {
            self.enqueue(&Work::Embed { memory_id: m.id.clone() })?;
        }
        Ok(())
    }
}

fn consolidation_from_row(r: Row) -> Result<ConsolidationRecord> {
    let bad = || Error::storage("a consolidation row does not read");
    let [id, run_id, action, target, members, reason, at, undone_at] = <[SqlValue; 8]>::try_from(r).map_err(|_| bad())?;
    Ok(ConsolidationRecord {
        id: id.as_i64().ok_or_else(bad)?,
        run_id: run_id.opt_string().ok_or_else(bad)?,
        action: action.opt_string().ok_or_else(bad)?,
        target: target.opt_string().ok_or_else(bad)?,
        members: serde_json::from_str(members.as_str().ok_or_else(bad)?).map_err(|_| bad())?,
        reason: reason.opt_string().ok_or_else(bad)?,
        at: at.opt_string().ok_or_else(bad)?,
        undone_at: undone_at.opt_string(),
    })
}

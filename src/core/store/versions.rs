//! Version chains: a key's values, each superseded by the next and named
//! back by it, valid from when it was said until the earliest of those
//! after it. Superseding, merging two chains into one line (an import, a
//! deletion leaving a chain end), splicing deleted versions out as if
//! never said, and the chain ends with no active value (forgotten or
//! expired) that a later value follows.
//!
//! A chain follows its links, not its keys: consolidation's contradiction
//! links one key's value to a later statement under another key (the
//! later replaces the earlier, which supersession by key missed), and the
//! walks here go along that link like any other.
//!
//! What it does not do: it never reads a chain whole on the hot path (a
//! value said in order reads one row back), and never walks more than
//! [`Store::MAX_CHAIN_WALK`] versions (a longer chain is treated as ending
//! there).

use super::*;

/// The deleted versions as [`Store::splice_out`] sees them: what each
/// supersedes and is superseded by, and when it was said.
struct Deleted {
    links: std::collections::HashMap<String, Links>,
    starts: std::collections::HashMap<String, String>,
}

/// A version's links: the one it supersedes, the one superseding it.
type Links = (Option<String>, Option<String>);

impl Deleted {
    fn read(store: &Store<'_>, deleted: &[String]) -> Result<Deleted> {
        let mut d = Deleted { links: Default::default(), starts: Default::default() };
        for chunk in json_chunks(deleted)? {
            let rows: Vec<(String, Option<String>, Option<String>, String)> = json_rows(
                store.sql,
                "SELECT json_group_array(json_array(m.id, m.supersedes, m.superseded_by, COALESCE(m.valid_from, m.created_at))) FROM json_each(?1) j CROSS JOIN memories m ON m.id = j.value",
                &[chunk],
            )?;
            for (id, before, after, start) in rows {
                d.starts.insert(id.clone(), start);
                d.links.insert(id, (before, after));
            }
        }
        Ok(d)
    }

    /// The first remaining version along a chain from `start`, by `next`
    /// (bounded: a chain through the deleted ones visits each at most
    /// once).
    fn remaining(&self, start: Option<&String>, next: fn(&Links) -> Option<&String>) -> Option<String> {
        let mut at = start?;
        for _ in 0..=self.links.len() {
            match self.links.get(at) {
                Some(l) => at = next(l)?,
                None => return Some(at.clone()),
            }
        }
        None
    }

    /// The earliest any deleted version from `first` on (to the next
    /// remaining one) was said.
    fn said_from(&self, first: &str) -> String {
        let mut at = Some(first.to_string());
        let mut earliest: Option<String> = None;
        for _ in 0..=self.links.len() {
            let Some(id) = at.take() else { break };
            let Some(start) = self.starts.get(&id) else { break };
            earliest = Some(earliest.map_or(start.clone(), |e| e.min(start.clone())));
            at = self.links.get(&id).and_then(|l| l.1.clone());
        }
        earliest.unwrap_or_default()
    }
}

/// What splicing leaves to do once every link is rewritten.
#[derive(Default)]
struct Spliced {
    /// Active again: their vectors are wanted back.
    reinstated: Vec<String>,
    /// Chain ends to go before another chain's end of their key.
    joins: Vec<(String, String)>,
    /// Versions spliced past deleted ones: their new end (none while
    /// active), and when the earliest deleted one was said.
    reopen: Vec<(String, Option<String>, String)>,
}

/// A version's link back ([`Store::link_back`]): the version it names
/// back, when it was said, until when it is valid.
type LinkBack = (Option<String>, String, Option<String>);

/// A walk back of [`Store::close_earlier_versions_all`]: when the
/// replacing version was said, and the first version before the replaced
/// one, with its link back.
type Walk = (String, Option<(String, LinkBack)>);

/// What walks forward along chains found: the earliest time said from
/// each version walked on ([`Store::earliest_start_from`]).
type Known = rustc_hash::FxHashMap<String, String>;

impl<'a> Store<'a> {
    /// Marks `old` superseded by `new` (both ids), queueing removal of the
    /// old vector; a value forgotten or expired keeps that status. It was
    /// valid until `new` was said, but never ends before it starts: a
    /// successor said before it (ingested later, so it wins) leaves it an
    /// empty interval.
    pub fn supersede(&self, old: &str, new: &str) -> Result<()> {
        self.sql.execute(
            "UPDATE memories SET status = CASE WHEN status = 'active' THEN 'superseded' ELSE status END, superseded_by = ?1, updated_at = ?2, \
             valid_to = MAX(COALESCE(valid_from, created_at), (SELECT COALESCE(n.valid_from, n.created_at) FROM memories n WHERE n.id = ?1)) \
             WHERE id = ?3",
            &[new.into(), iso(self.now).into(), old.into()],
        )?;
        self.enqueue(&Work::Unvector { memory_id: old.to_string() })
    }

    /// Ends, no later than `new` begins, every earlier version of `old`'s
    /// chain still valid after that: a version said before those it
    /// replaced (a backdated conversation ingested after newer ones) is
    /// the value from when it was said, so no version before it holds
    /// past then and `asOf` finds one value at any instant. A version
    /// never ends before it begins. The walk back stops at the first
    /// version that ends by then (said in order, a chain's versions end in
    /// order): a value said after the one it replaces reads one row.
    pub fn close_earlier_versions(&self, old: &str, new: &str) -> Result<()> {
        self.close_earlier_versions_all(&[(old, new)])
    }

    /// [`Store::close_earlier_versions`] of each `(old, new)` replacement,
    /// each version read at most once. The walks go by when each `new` was
    /// said, earliest first, and a walk stops at a version an earlier one
    /// reached: each ends a version at the later of when it was said and
    /// when `new` was, so what an earlier-said replacement ended, a later
    /// one cannot end sooner. One walk per replacement read the whole
    /// chain again when each was said before all the others (a
    /// conversation of 8,192 restatements ingested newest first took
    /// 7.5 s natively and 49 s in workerd).
    pub fn close_earlier_versions_all(&self, replaced: &[(&str, &str)]) -> Result<()> {
        let mut walks = self.replacements_read(replaced)?;
        walks.sort_by(|a, b| a.0.cmp(&b.0));
        // Each version walked, with when the replacement it was walked for was said.
        let mut reached: rustc_hash::FxHashMap<String, String> = Default::default();
        for (start, first) in walks {
            let mut next = first;
            while let Some((id, (before, said, valid_to))) = next.take() {
                if reached.get(&id).is_some_and(|by| *by <= start) {
                    break;
                }
                // Ended by then: so are the versions before it.
                let Some(valid_to) = valid_to.filter(|v| *v > start) else { break };
                let ends = said.max(start.clone());
                if valid_to > ends {
                    self.sql.execute(
                        "UPDATE memories SET valid_to = ?1, updated_at = ?2 WHERE id = ?3",
                        &[ends.into(), iso(self.now).into(), id.as_str().into()],
                    )?;
                }
                reached.insert(id, start.clone());
                if let Some(before) = before {
                    next = self.link_back(&before)?.map(|link| (before, link));
                }
            }
        }
        Ok(())
    }

    /// For each `(old, new)` replacement whose both versions are stored:
    /// when `new` was said, and the version before `old` with its link
    /// back (`None` when `old` names none), read in one statement per
    /// chunk: in the order said, that one version is all a walk reads.
    fn replacements_read(&self, replaced: &[(&str, &str)]) -> Result<Vec<Walk>> {
        type Read = (String, Option<String>, Option<String>, Option<String>, Option<String>);
        let mut out = Vec::with_capacity(replaced.len());
        for chunk in json_chunks(replaced)? {
            let rows: Vec<Read> = json_rows_paged(
                self.sql,
                "SELECT json_array(COALESCE(n.valid_from, n.created_at), p.id, p.supersedes, COALESCE(p.valid_from, p.created_at), p.valid_to) AS r \
                 FROM json_each(?1) j JOIN memories o ON o.id = json_extract(j.value, '$[0]') JOIN memories n ON n.id = json_extract(j.value, '$[1]') \
                 LEFT JOIN memories p ON p.id = o.supersedes",
                &[chunk],
            )?;
            for (start, id, before, said, valid_to) in rows {
                let first = match (id, said) {
                    (Some(id), Some(said)) => Some((id, (before, said, valid_to))),
                    (None, _) => None,
                    (Some(_), None) => return Err(Error::storage("a version with no time said")),
                };
                out.push((start, first));
            }
        }
        Ok(out)
    }

    /// The version `id` names back (`supersedes`), when `id` was said, and
    /// until when it is valid; `None` when `id` is not stored.
    fn link_back(&self, id: &str) -> Result<Option<LinkBack>> {
        let rows = self.sql.query("SELECT supersedes, COALESCE(valid_from, created_at), valid_to FROM memories WHERE id = ?", &[id.into()])?;
        let Some(row) = rows.into_iter().next() else { return Ok(None) };
        let [before, said, valid_to]: [SqlValue; 3] = row.try_into().map_err(|_| Error::storage("a version's link row has the wrong columns"))?;
        Ok(Some((rows::opt_text(before, "a version named back")?, rows::text(said, "a time said")?, rows::opt_text(valid_to, "an end of validity")?)))
    }

    /// [`Store::supersede`] of `old` by `new` when `old` is active and
    /// superseded by nothing; whether it was.
    pub fn supersede_if_active(&self, old: &str, new: &str) -> Result<bool> {
        let active = self.sql.query("SELECT 1 FROM memories WHERE id = ? AND status = 'active' AND superseded_by IS NULL", &[old.into()])?;
        if active.is_empty() {
            return Ok(false);
        }
        self.supersede(old, new)?;
        Ok(true)
    }

    /// Most versions [`Store::merge_versions`] walks back along a chain.
    const MAX_CHAIN_WALK: usize = 10_000;

    /// `head` and the versions before it, newest first: each one's
    /// `supersedes`, while that version is superseded by the one before it
    /// (a link back that the older version does not return ends the
    /// chain), at most [`Store::MAX_CHAIN_WALK`].
    pub(super) fn chain_back(&self, head: &str) -> Result<Vec<Memory>> {
        let first = self.get_memory(head)?.ok_or_else(|| Error::storage("a version that is not stored"))?;
        let mut seen: std::collections::HashSet<String> = std::collections::HashSet::from([first.id.clone()]);
        let mut chain = vec![first];
        while chain.len() < Self::MAX_CHAIN_WALK {
            let Some(last) = chain.last() else { break };
            let Some(prev) = last.supersedes.as_deref() else { break };
            match self.get_memory(prev)? {
                Some(p) if p.superseded_by.as_deref() == Some(last.id.as_str()) && seen.insert(p.id.clone()) => chain.push(p),
                _ => break,
            }
        }
        Ok(chain)
    }

    /// Merges the version chain that ends in `older` (a value of a key,
    /// superseded by nothing) into the one through `newer` (a value said
    /// later: one of them imported; or a chain's version that a deletion
    /// or an import left `older` before) in the order they were said: one
    /// line of versions, each superseded by the next and valid until it was
    /// said (never ending before it begins), up to `newer`, then the
    /// versions after it as they were. A chain stays a line:
    /// two versions superseded by one would leave a later deletion of that
    /// one to bring back the older of them, and `asOf` would find two
    /// values between. A version is valid until the earliest of those after
    /// it was said. Whether they were merged (not when `older` is
    /// superseded already, or the two chains share a version). Many ends
    /// going into one chain: [`super::Merges`], which writes the line once.
    pub fn merge_versions(&self, older: &str, newer: &str) -> Result<bool> {
        let (Some(o), Some(n)) = (self.get_memory(older)?, self.get_memory(newer)?) else { return Ok(false) };
        if older == newer || o.superseded_by.is_some() {
            return Ok(false);
        }
        if n.supersedes.is_none() && n.superseded_by.is_none() {
            // `newer` is a chain of its own: `older` (and its own history)
            // goes before it, read no further than the versions that end
            // after it begins.
            self.supersede(older, newer)?;
            self.sql.execute("UPDATE memories SET supersedes = ?1, updated_at = ?2 WHERE id = ?3", &[older.into(), iso(self.now).into(), newer.into()])?;
            self.close_earlier_versions(older, newer)?;
            return Ok(true);
        }
        let (mine, theirs) = (self.chain_back(older)?, self.chain_back(newer)?);
        let in_theirs: std::collections::HashSet<&str> = theirs.iter().map(|t| t.id.as_str()).collect();
        if mine.iter().any(|m| in_theirs.contains(m.id.as_str())) {
            return Ok(false);
        }
        let (newest, earlier) = theirs.split_first().ok_or_else(|| Error::storage("a chain with no versions"))?;
        self.write_line(newest, merged_line(&[mine.as_slice()], earlier))?;
        Ok(true)
    }

    /// Writes `line` (versions oldest first, by when each was said) and
    /// `newest` after it as one chain: each superseded by the next and
    /// named back by it, valid until the earliest of those after it was
    /// said (never ending before it begins), then `newest`'s successors as
    /// they were ([`Store::merge_versions`]).
    pub(super) fn write_line<'m>(&self, newest: &'m Memory, mut line: Vec<&'m Memory>) -> Result<()> {
        line.push(newest);
        let now = iso(self.now);
        // The first keeps a link back out of the line (a chain's end that
        // did not agree), never one into it.
        if let Some(first) = line.first().filter(|f| f.supersedes.as_deref().is_some_and(|s| line.iter().any(|m| m.id == s))) {
            self.sql.execute("UPDATE memories SET supersedes = NULL, updated_at = ?1 WHERE id = ?2", &[now.as_str().into(), first.id.as_str().into()])?;
        }
        // Each valid until the earliest of the versions after it was said
        // (a chain ingest left may hold a backdated one), never ending
        // before it begins.
        let mut untils: Vec<String> = Vec::with_capacity(line.len());
        // `newer` may have versions after it (a chain's middle): none
        // before it holds past when the earliest of those was said.
        let mut earliest: Option<String> = match newest.superseded_by.as_deref() {
            Some(next) => self.earliest_start_from(next, &|_| None, &mut Known::default())?,
            None => None,
        };
        for m in line.iter().rev() {
            untils.push(earliest.clone().unwrap_or_default());
            let s = m.said_from().to_string();
            earliest = Some(earliest.map_or(s.clone(), |e| e.min(s)));
        }
        untils.reverse();
        for (pair, until) in line.windows(2).zip(&untils) {
            let [before, after] = pair else { continue };
            let ends = before.said_from().to_string().max(until.clone());
            if before.superseded_by.as_deref() != Some(after.id.as_str())
                || before.status == Status::Active
                || before.valid_to.as_deref() != Some(ends.as_str())
            {
                self.sql.execute(
                    "UPDATE memories SET superseded_by = ?1, updated_at = ?2, \
                     status = CASE WHEN status = 'active' THEN 'superseded' ELSE status END, valid_to = ?4 WHERE id = ?3",
                    &[after.id.as_str().into(), now.as_str().into(), before.id.as_str().into(), ends.as_str().into()],
                )?;
                self.enqueue(&Work::Unvector { memory_id: before.id.clone() })?;
            }
            if after.supersedes.as_deref() != Some(before.id.as_str()) {
                self.sql.execute(
                    "UPDATE memories SET supersedes = ?1, updated_at = ?2 WHERE id = ?3",
                    &[before.id.as_str().into(), now.as_str().into(), after.id.as_str().into()],
                )?;
            }
        }
        Ok(())
    }

    /// Clears `id`'s link to the version after it, to merge its chain
    /// into another ([`Store::merge_versions`] takes a chain's end).
    pub fn unlink_successor(&self, id: &str) -> Result<()> {
        self.sql.execute("UPDATE memories SET superseded_by = NULL WHERE id = ?1", &[id.into()])
    }

    /// Sets `id`'s link to the version after it, `next`, back as it was.
    pub fn link_successor(&self, id: &str, next: &str) -> Result<()> {
        self.sql.execute("UPDATE memories SET superseded_by = ?1 WHERE id = ?2", &[next.into(), id.into()])
    }

    /// Takes the memories `deleted` (about to be hard-deleted) out of their
    /// version chains, as if they had never been said: a remaining version
    /// they superseded is superseded by the next remaining one after them
    /// (valid until it was said, never ending before it starts), or, with
    /// none, goes before another chain's end of its key ([`Store::end_beside`])
    /// or is active again (valid with no end, its vector wanted back); a
    /// remaining version that superseded them supersedes the one before
    /// them that remains, or nothing. The versions before a splice get
    /// back the time the deleted ones took ([`Store::reopen_before`]).
    pub fn splice_out(&self, deleted: &[String]) -> Result<()> {
        if deleted.is_empty() {
            return Ok(());
        }
        let d = Deleted::read(self, deleted)?;
        let mut left = Spliced::default();
        let mut known = Default::default();
        for chunk in json_chunks(deleted)? {
            for (id, link, target) in self.linked_to(chunk)? {
                if d.links.contains_key(&id) {
                    continue;
                }
                if link == "after" {
                    self.relink_after(&d, id, &target, &mut left, &mut known)?;
                } else {
                    self.relink_before(&d, &id, &target)?;
                }
            }
        }
        // Once no remaining version names a deleted one, each such end's
        // chain merges into the other end's, one line in the order they
        // were said (it may have a history of its own); one that cannot
        // (the two share a version) is superseded by it. Each end's line
        // is written once, however many join it.
        let mut merges = super::Merges::default();
        for (id, end) in left.joins {
            merges.release(self, &id)?;
            self.unlink_successor(&id)?;
            if !merges.merge(self, &id, &end)? {
                merges.finish(self)?;
                self.supersede_quietly(&id, &end, &self.until(&d, &end, &mut Known::default())?)?;
            }
        }
        merges.finish(self)?;
        for (id, to, deleted_from) in left.reopen {
            self.reopen_before(&id, to, &deleted_from)?;
        }
        let wanting = self.wanting_vectors(&left.reinstated)?;
        let embed: Vec<&str> = left.reinstated.iter().filter(|id| wanting.contains(*id)).map(String::as_str).collect();
        self.enqueue_many(JobKind::Embed, &embed)
    }

    /// The remaining versions linked to one of the deleted in `chunk`:
    /// (id, which link, deleted id). A version a fold made replaced every
    /// member: many rows an id.
    fn linked_to(&self, chunk: SqlValue) -> Result<Vec<(String, String, String)>> {
        json_rows_paged(
            self.sql,
            "SELECT json_array(m.id, m.link, m.target) AS r FROM (\
             SELECT p.id, 'after' AS link, p.superseded_by AS target FROM json_each(?1) j CROSS JOIN memories p ON p.superseded_by = j.value \
             UNION ALL SELECT n.id, 'before', n.supersedes FROM json_each(?1) j CROSS JOIN memories n ON n.supersedes = j.value) m",
            &[chunk],
        )
    }

    /// `id`, superseded by the deleted `target`: superseded by the next
    /// remaining version; with none, left to join another chain's end of
    /// its key, or active again.
    fn relink_after(&self, d: &Deleted, id: String, target: &str, left: &mut Spliced, known: &mut Known) -> Result<()> {
        let Some((_, after)) = d.links.get(target) else { return Ok(()) };
        if let Some(next) = d.remaining(after.as_ref(), |l| l.1.as_ref()) {
            let to = self.until(d, &next, known)?;
            self.supersede_quietly(&id, &next, &to)?;
            left.reopen.push((id, Some(to), d.said_from(target)));
            return Ok(());
        }
        // Another chain's end of its key and owner (a value said while
        // this one was replaced, which replaced nothing): never a second
        // active value of the key.
        if let Some(end) = self.get_memory(&id)?.map(|m| self.end_beside(&m, &|h| d.links.contains_key(h))).transpose()?.flatten() {
            left.joins.push((id, end));
            return Ok(());
        }
        // Valid with no end again; a value forgotten or expired keeps
        // that status (its expiry still ends it).
        self.sql.execute(
            "UPDATE memories SET status = CASE WHEN status = 'superseded' THEN 'active' ELSE status END, superseded_by = NULL, valid_to = NULL, updated_at = ?1 WHERE id = ?2",
            &[iso(self.now).into(), id.as_str().into()],
        )?;
        left.reopen.push((id.clone(), None, d.said_from(target)));
        left.reinstated.push(id);
        Ok(())
    }

    /// `id`, superseding the deleted `target`: supersedes the one before
    /// it that remains, or nothing. A changed link is a change: an undo of
    /// a consolidation that copied the memory before it sees it (409),
    /// rather than writing back a link to a deleted memory.
    fn relink_before(&self, d: &Deleted, id: &str, target: &str) -> Result<()> {
        let Some((before, _)) = d.links.get(target) else { return Ok(()) };
        let before = d.remaining(before.as_ref(), |l| l.0.as_ref());
        self.sql.execute(
            "UPDATE memories SET supersedes = ?1, updated_at = ?2 WHERE id = ?3",
            &[before.map_or(SqlValue::Null, SqlValue::from), iso(self.now).into(), id.into()],
        )
    }

    /// Until when a version now superseded by `by` is valid: the earliest
    /// any remaining version from `by` on was said.
    /// `known`: what walks of the same splice found ([`Store::earliest_start_from`]).
    fn until(&self, d: &Deleted, by: &str, known: &mut Known) -> Result<String> {
        let skip = |id: &str| d.links.get(id).map(|l| l.1.clone());
        self.earliest_start_from(by, &skip, known)?.ok_or_else(|| Error::storage("a version that is not stored"))
    }

    /// Gives back to the versions before `id` (spliced past deleted
    /// versions, now valid until `to`, or with no end) the time a deleted
    /// version said from `deleted_from` took from them: each is valid
    /// until the earliest of the remaining versions after it was said
    /// (never ending before it begins), as if the deleted ones had never
    /// been said. A backdated value deleted leaves no gap where it held.
    /// The walk back stops once a remaining version was said no later
    /// than the deleted ones: no version before it was ended by them. In
    /// the order said, that is the first step. At most
    /// [`Store::MAX_CHAIN_WALK`] versions are read.
    fn reopen_before(&self, id: &str, to: Option<String>, deleted_from: &str) -> Result<()> {
        let Some(mut at) = self.get_memory(id)? else { return Ok(()) };
        let mut earliest = to;
        for _ in 0..Self::MAX_CHAIN_WALK {
            let start = at.said_from().to_string();
            let bound = earliest.map_or(start.clone(), |e| e.min(start));
            if bound.as_str() <= deleted_from {
                break;
            }
            let Some(prev) = at.supersedes.as_deref() else { break };
            let Some(p) = self.get_memory(prev)?.filter(|p| p.superseded_by.as_deref() == Some(at.id.as_str())) else { break };
            let ends = p.said_from().to_string().max(bound.clone());
            if p.valid_to.as_deref() != Some(ends.as_str()) {
                self.sql.execute(
                    "UPDATE memories SET valid_to = ?1, updated_at = ?2 WHERE id = ?3",
                    &[ends.as_str().into(), iso(self.now).into(), p.id.as_str().into()],
                )?;
            }
            earliest = Some(bound);
            at = p;
        }
        Ok(())
    }

    /// Marks `id` superseded by `by`, valid until `until` (when `by` was
    /// said, or a later version if that was said earlier: see
    /// [`Store::earliest_start_from`]), never ending before it starts; a
    /// value forgotten or expired keeps that status. Its vector is gone
    /// already: it was superseded before.
    fn supersede_quietly(&self, id: &str, by: &str, until: &str) -> Result<()> {
        self.sql.execute(
            "UPDATE memories SET status = CASE WHEN status = 'active' THEN 'superseded' ELSE status END, superseded_by = ?1, updated_at = ?2, \
             valid_to = MAX(COALESCE(valid_from, created_at), ?4) WHERE id = ?3",
            &[by.into(), iso(self.now).into(), id.into(), until.into()],
        )
    }

    /// The earliest time any of `from` and the versions after it were said
    /// (`validFrom`, else `createdAt`), passing over those `skip` names (to
    /// the version after each, by `after`): a version is valid only until
    /// then, since a backdated one after it was the value from when it was
    /// said ([`Store::close_earlier_versions`]). At most
    /// [`Store::MAX_CHAIN_WALK`] versions are read. `known` keeps what each
    /// version walked found, and a walk stops at one known: a splice's
    /// relinks change no link a walk follows from a remaining version on
    /// and no time said, so they share one map and each remaining version
    /// is read once however many relinks walk past it (deleting every
    /// seventh of 4,000 versions walked the chain to its end once for
    /// each: 2.47 s natively, now 35 ms). A caller whose links change
    /// between walks gives each a map of its own.
    fn earliest_start_from(&self, from: &str, skip: &dyn Fn(&str) -> Option<Option<String>>, known: &mut Known) -> Result<Option<String>> {
        let mut path: Vec<(String, Option<String>)> = Vec::new();
        let mut at = Some(from.to_string());
        let mut earliest: Option<String> = None;
        while let Some(id) = at.take() {
            if let Some(e) = known.get(&id) {
                earliest = Some(e.clone());
                break;
            }
            if path.len() >= Self::MAX_CHAIN_WALK {
                break;
            }
            if let Some(after) = skip(&id) {
                at = after;
                path.push((id, None));
                continue;
            }
            let rows = self.sql.query("SELECT superseded_by, COALESCE(valid_from, created_at) FROM memories WHERE id = ?", &[id.as_str().into()])?;
            let Some(row) = rows.into_iter().next() else { break };
            let [after, said]: [SqlValue; 2] = row.try_into().map_err(|_| Error::storage("a version's link row has the wrong columns"))?;
            at = rows::opt_text(after, "a version named after")?;
            path.push((id, Some(rows::text(said, "a time said")?)));
        }
        for (id, said) in path.into_iter().rev() {
            if let Some(said) = said {
                earliest = Some(earliest.map_or(said.clone(), |e| e.min(said)));
            }
            if let Some(e) = &earliest {
                known.insert(id, e.clone());
            }
        }
        Ok(known.get(from).cloned())
    }

    /// An active memory, not `m` and not one `skip` names, by which `m`'s
    /// owner holds `m`'s key, if it has one: from any session, or only from
    /// those `m`'s speaker reaches (`any_session` false: its own session's,
    /// and those saying its words dates aside).
    pub fn holder_beside(&self, m: &Memory, any_session: bool, skip: &dyn Fn(&str) -> bool) -> Result<Option<String>> {
        let Some(key) = m.key.as_deref() else { return Ok(None) };
        let probe = KeyProbe { key, session_id: &m.session_id, undated_digest: crate::core::ids::undated_digest(&m.content), any_session };
        let holders = self.active_key_holders(&[probe])?;
        let owner = crate::core::model::Owner::of(&m.metadata);
        Ok(holders.get(&(key.to_string(), owner)).into_iter().flatten().find(|h| h.id != m.id && !skip(&h.id)).map(|h| h.id.clone()))
    }

    /// The end of another chain of `m`'s key and owner, not one `skip`
    /// names: an active holder from any session ([`Store::holder_beside`]),
    /// else the newest lapsed end ([`Store::lapsed_ends`]). A chain end
    /// deleted from under `m` leaves `m` to go before it: the values said
    /// after `m` stay after it, as if the deleted one had never been said.
    pub fn end_beside(&self, m: &Memory, skip: &dyn Fn(&str) -> bool) -> Result<Option<String>> {
        if let Some(holder) = self.holder_beside(m, true, skip)? {
            return Ok(Some(holder));
        }
        let Some(key) = m.key.as_deref() else { return Ok(None) };
        let ends = self.lapsed_ends(&[key])?;
        let owner = crate::core::model::Owner::of(&m.metadata);
        Ok(ends.get(&(key.to_string(), owner)).into_iter().flatten().find(|e| e.id != m.id && !skip(&e.id)).map(|e| e.id.clone()))
    }

    /// The versions of `keys` superseded by nothing whose values were
    /// forgotten or expired (the ends of chains with no active value), by
    /// key and owner, newest first, each with its session and words (to
    /// weigh a speaker's reach as for active holders): a value said later
    /// of such a key goes after its end, so the key's versions stay one
    /// line (and `asOf` finds one value at any instant) with no active
    /// holder to supersede. Found by a partial index of such ends alone.
    pub fn lapsed_ends(&self, keys: &[&str]) -> Result<KeyHolders> {
        let mut out = KeyHolders::new();
        let text = |v: &SqlValue| match v {
            SqlValue::Null => Ok(None),
            SqlValue::Text(t) => Ok(Some(t.clone())),
            _ => Err(Error::storage("a memory's agentId or userId is not text")),
        };
        for chunk in json_chunks(keys)? {
            let rows = self.sql.query(
                "SELECT DISTINCT m.key, m.id, m.session_id, m.content, m.agent_id, m.user_id FROM json_each(?1) j CROSS JOIN memories m ON m.key = j.value \
                 WHERE m.superseded_by IS NULL AND m.status IN ('forgotten', 'expired') ORDER BY m.id DESC",
                &[chunk],
            )?;
            for r in rows {
                match r.as_slice() {
                    [SqlValue::Text(key), SqlValue::Text(id), SqlValue::Text(session), SqlValue::Text(content), agent, user] => {
                        let owner = crate::core::model::Owner { agent_id: text(agent)?, user_id: text(user)? };
                        let ends = out.entry((key.clone(), owner)).or_default();
                        if !ends.iter().any(|e| e.id == *id) {
                            ends.push(KeyHolder { id: id.clone(), session_id: session.clone(), content: content.clone() });
                        }
                    }
                    _ => return Err(Error::storage("failed to read a lapsed version's key, id, session, words and owner")),
                }
            }
        }
        Ok(out)
    }
}

/// Chains merged into one line by when each version was said, oldest
/// first: `chains` (each newest first, as [`Store::chain_back`] reads
/// them) in the order they were merged in, then `earlier` (the receiving
/// chain's versions before its newest, newest first). Each chain keeps its
/// own order; at each step the earliest said of the chains' next versions
/// goes, at one instant the chain merged in last first, the receiving
/// chain last: what merging each chain in turn into the line so far
/// ([`Store::merge_versions`]) leaves.
pub(super) fn merged_line<'m>(chains: &[&'m [Memory]], earlier: &'m [Memory]) -> Vec<&'m Memory> {
    use std::cmp::Reverse;
    // Each chain oldest first, with its precedence at one instant (lower
    // goes first): the chain merged in last is 0, the receiving one last.
    let mut queues: Vec<std::iter::Peekable<std::iter::Rev<std::slice::Iter<'m, Memory>>>> =
        chains.iter().rev().copied().chain([earlier]).map(|c| c.iter().rev().peekable()).collect();
    let mut heads: std::collections::BinaryHeap<Reverse<(i64, usize)>> =
        queues.iter_mut().enumerate().filter_map(|(q, it)| it.peek().map(|m| Reverse((m.said_at(), q)))).collect();
    let mut line: Vec<&Memory> = Vec::with_capacity(chains.iter().map(|c| c.len()).sum::<usize>().saturating_add(earlier.len()));
    while let Some(Reverse((_, q))) = heads.pop() {
        let Some(queue) = queues.get_mut(q) else { continue };
        if let Some(m) = queue.next() {
            line.push(m);
        }
        if let Some(next) = queue.peek() {
            heads.push(Reverse((next.said_at(), q)));
        }
    }
    line
}

//! Many chain ends merged into other chains' lines, each line written
//! once: what [`Store::merge_versions`] does one end at a time, which
//! reads both chains whole each time, so that a file (or a deletion)
//! joining thousands of versions to one chain cost the square of them.
//!
//! [`Merges::merge`] gathers the ends that go into one receiving version
//! and [`Merges::finish`] writes each line once ([`merged_line`]): what
//! merging them in turn would leave. Merges into different lines are
//! independent and kept open side by side; a merge that meets an open
//! line other than its own (its end, or a version of its chain, is in
//! that line) writes that line first, so each read sees the store as the
//! merges before it left it.
//!
//! What it does not do: see the store change under it. Between calls,
//! nothing but [`Merges`] changes a version in an open line: a caller
//! writes its lines ([`Merges::finish`]) before any other write to the
//! chains, or first [`Merges::release`] one version it changes.

use super::versions::merged_line;
use super::*;
use std::collections::HashMap;

/// Merges of chain ends into other chains, gathered per receiving version
/// (see the module docs).
#[derive(Default)]
pub struct Merges {
    /// The open lines, by receiving version.
    open: HashMap<String, Line>,
    /// The receiving versions in the order their lines were opened (one
    /// written already is passed over).
    order: Vec<String>,
    /// Each version in an open line: the receiving version of its line.
    member: HashMap<String, String>,
}

/// One receiving version's line as gathered.
struct Line {
    /// The receiving version's chain, newest (itself) first.
    theirs: Vec<Memory>,
    /// The chains merged in, each newest first, in the order they came.
    chains: Vec<Vec<Memory>>,
}

impl Merges {
    /// [`Store::merge_versions`] of `older` into `newer`'s chain, gathered:
    /// whether they will be merged (written by [`Merges::finish`]).
    pub fn merge(&mut self, store: &Store<'_>, older: &str, newer: &str) -> Result<bool> {
        self.release(store, older)?;
        if self.member.get(newer).is_some_and(|line| line != newer) {
            self.release(store, newer)?;
        }
        let Some(o) = store.get_memory(older)? else { return Ok(false) };
        if older == newer || o.superseded_by.is_some() {
            return Ok(false);
        }
        if !self.open.contains_key(newer) && store.get_memory(newer)?.is_none() {
            return Ok(false);
        }
        let mine = self.current_chain(store, older)?;
        // `newer`'s line as gathered; else (never opened, or written by
        // the walk above) its chain as the store holds it, opened only
        // for a chain that joins it.
        if !self.open.contains_key(newer) {
            let theirs = self.current_chain(store, newer)?;
            let in_mine: std::collections::HashSet<&str> = mine.iter().map(|m| m.id.as_str()).collect();
            if theirs.iter().any(|t| in_mine.contains(t.id.as_str())) {
                // The two chains share a version: not merged, as
                // `merge_versions` leaves them.
                return Ok(false);
            }
            for t in &theirs {
                self.member.insert(t.id.clone(), newer.to_string());
            }
            self.open.insert(newer.to_string(), Line { theirs, chains: Vec::new() });
            self.order.push(newer.to_string());
        }
        for m in &mine {
            self.member.insert(m.id.clone(), newer.to_string());
        }
        self.open.get_mut(newer).ok_or_else(|| Error::storage("an open line that is not kept"))?.chains.push(mine);
        Ok(true)
    }

    /// Writes the open line holding `id`, if one does, so that `id` may
    /// be read or changed.
    pub fn release(&mut self, store: &Store<'_>, id: &str) -> Result<()> {
        match self.member.get(id).cloned() {
            Some(newer) => self.write(store, &newer),
            None => Ok(()),
        }
    }

    /// Writes every open line, in the order they were opened (open lines
    /// share no version: any order leaves the same chains).
    pub fn finish(&mut self, store: &Store<'_>) -> Result<()> {
        for newer in std::mem::take(&mut self.order) {
            self.write(store, &newer)?;
        }
        Ok(())
    }

    /// `id`'s chain as the store holds it, newest first, once every open
    /// line holding one of its versions is written.
    fn current_chain(&mut self, store: &Store<'_>, id: &str) -> Result<Vec<Memory>> {
        loop {
            let chain = store.chain_back(id)?;
            match chain.iter().find_map(|v| self.member.get(&v.id).cloned()) {
                Some(newer) => self.write(store, &newer)?,
                None => return Ok(chain),
            }
        }
    }

    /// Writes the open line of receiving version `newer`: one chain merged
    /// in as [`Store::merge_versions`] merges it; several as one line.
    fn write(&mut self, store: &Store<'_>, newer: &str) -> Result<()> {
        let Some(line) = self.open.remove(newer) else { return Ok(()) };
        for v in line.theirs.iter().chain(line.chains.iter().flatten()) {
            self.member.remove(&v.id);
        }
        let Some((first, rest)) = line.chains.split_first() else { return Ok(()) };
        // One chain goes as `merge_versions` merges it; so does the first
        // of several into a receiving version with no links (ending the
        // versions before it that outlast it, wherever their links lead),
        // the rest joining the line that leaves, read afresh. Else all
        // join the line as gathered, written once.
        let alone = matches!(line.theirs.as_slice(), [n] if n.supersedes.is_none() && n.superseded_by.is_none());
        let (chains, theirs) = if rest.is_empty() || alone {
            let older = first.first().ok_or_else(|| Error::storage("a chain with no versions"))?;
            if !store.merge_versions(&older.id, newer)? {
                return Err(Error::storage("a gathered merge of version chains no longer applies"));
            }
            if rest.is_empty() {
                return Ok(());
            }
            (rest, store.chain_back(newer)?)
        } else {
            (line.chains.as_slice(), line.theirs)
        };
        let (newest, earlier) = theirs.split_first().ok_or_else(|| Error::storage("a chain with no versions"))?;
        let chains: Vec<&[Memory]> = chains.iter().map(Vec::as_slice).collect();
        store.write_line(newest, merged_line(&chains, earlier))
    }
}

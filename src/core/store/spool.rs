//! The export spool: an export's file written to the profile's database in
//! numbered parts, so that it is read out a part at a time while the
//! profile it was read from goes on changing (`core::portable::spool_export`).
//! A spooled export is removed once it is read out, when its reading is
//! cancelled, by a wipe, and by [`Store::clear_export_spool`] when a new
//! instance of the profile's object starts (no reading survives its
//! instance).

use super::{json_chunks_of, Store};
use crate::core::error::{Error, Result};
use crate::core::ports::SqlValue;
use std::collections::HashSet;

/// What kind of record a filtered export keeps ([`Store::keep_for_export`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kept {
    Memory,
    Message,
}

impl Kept {
    fn name(self) -> &'static str {
        match self {
            Kept::Memory => "memory",
            Kept::Message => "message",
        }
    }
}

/// The `meta` key holding the number of the next spooled export. A wipe
/// keeps it: a number is never reused, so removing one export's parts
/// never reaches another's.
pub const META_NEXT_EXPORT: &str = "next_export";

impl Store<'_> {
    /// A new export's number (one never handed out before in this profile).
    pub fn next_export(&self) -> Result<i64> {
        let rows = self.sql.query(
            "INSERT INTO meta (key, value) VALUES (?1, '1') \
             ON CONFLICT (key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) RETURNING CAST(value AS INTEGER)",
            &[META_NEXT_EXPORT.into()],
        )?;
        rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("failed to number an export"))
    }

    /// Writes part `part` of export `export`.
    pub fn put_export_part(&self, export: i64, part: i64, data: Vec<u8>) -> Result<()> {
        self.sql.execute(
            "INSERT INTO export_spool (export, part, data, spooled_at) VALUES (?, ?, ?, ?)",
            &[SqlValue::Integer(export), SqlValue::Integer(part), SqlValue::Blob(data), SqlValue::Integer(self.now)],
        )
    }

    /// Removes the exports spooled before `before` (epoch millis).
    pub fn drop_exports_before(&self, before: i64) -> Result<()> {
        self.sql
            .execute("DELETE FROM export_spool WHERE export IN (SELECT DISTINCT export FROM export_spool WHERE spooled_at < ?)", &[SqlValue::Integer(before)])
    }

    /// Part `part` of export `export`; a storage error if it is not there
    /// (the export was removed while it was read: the profile was wiped).
    pub fn export_part(&self, export: i64, part: i64) -> Result<Vec<u8>> {
        let rows = self.sql.query("SELECT data FROM export_spool WHERE export = ? AND part = ?", &[SqlValue::Integer(export), SqlValue::Integer(part)])?;
        match rows.into_iter().next().and_then(|r| r.into_iter().next()) {
            Some(SqlValue::Blob(data)) => Ok(data),
            Some(_) => Err(Error::storage(format!("part {part} of export {export} is not a blob"))),
            None => Err(Error::storage(format!("part {part} of export {export} is gone: the profile was emptied while it was read"))),
        }
    }

    /// How many exports are spooled (being read out).
    pub fn spooled_exports(&self) -> Result<i64> {
        let rows = self.sql.query("SELECT COUNT(DISTINCT export) FROM export_spool", &[])?;
        rows.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("failed to count the spooled exports"))
    }

    /// Removes export `export`'s parts.
    pub fn drop_export(&self, export: i64) -> Result<()> {
        self.sql.execute("DELETE FROM export_spool WHERE export = ?", &[SqlValue::Integer(export)])
    }

    /// Removes every spooled export, and every id an export was keeping.
    pub fn clear_export_spool(&self) -> Result<()> {
        self.sql.execute("DELETE FROM export_spool", &[])?;
        self.sql.execute("DELETE FROM export_kept", &[])
    }

    /// Records that export `export` keeps the records `ids` of `kind`
    /// (`memory` or `message`): a filtered export's choice, held in the
    /// database rather than in memory, however many records pass.
    pub fn keep_for_export<'i>(&self, export: i64, kind: Kept, ids: impl Iterator<Item = &'i str>) -> Result<()> {
        for chunk in json_chunks_of(ids.map(Ok)) {
            self.sql.execute(
                "INSERT OR IGNORE INTO export_kept (export, kind, id) SELECT ?1, ?2, value FROM json_each(?3)",
                &[SqlValue::Integer(export), kind.name().into(), chunk?],
            )?;
        }
        Ok(())
    }

    /// Which of `ids` of `kind` export `export` keeps.
    pub fn kept_by_export<'i>(&self, export: i64, kind: Kept, ids: impl Iterator<Item = &'i str>) -> Result<HashSet<String>> {
        let mut kept = HashSet::new();
        for chunk in json_chunks_of(ids.map(Ok)) {
            let rows = self.sql.query(
                "SELECT id FROM export_kept WHERE export = ?1 AND kind = ?2 AND id IN (SELECT value FROM json_each(?3))",
                &[SqlValue::Integer(export), kind.name().into(), chunk?],
            )?;
            for row in rows {
                match row.into_iter().next() {
                    Some(SqlValue::Text(id)) => kept.insert(id),
                    _ => return Err(Error::storage("a kept id of an export is not text")),
                };
            }
        }
        Ok(kept)
    }

    /// Forgets which records export `export` keeps.
    pub fn drop_export_kept(&self, export: i64) -> Result<()> {
        self.sql.execute("DELETE FROM export_kept WHERE export = ?", &[SqlValue::Integer(export)])
    }
}

//! The export spool: an export's file written to the profile's database in
//! numbered parts, so that it is read out a part at a time while the
//! profile it was read from goes on changing (`core::portable::spool_export`).
//! A spooled export is removed once it is read out, when its reading is
//! cancelled, by a wipe, and by [`Store::clear_export_spool`] when a new
//! instance of the profile's object starts (no reading survives its
//! instance).

use super::Store;
use crate::core::error::{Error, Result};
use crate::core::ports::SqlValue;

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
            "INSERT INTO export_spool (export, part, data) VALUES (?, ?, ?)",
            &[SqlValue::Integer(export), SqlValue::Integer(part), SqlValue::Blob(data)],
        )
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

    /// Removes export `export`'s parts.
    pub fn drop_export(&self, export: i64) -> Result<()> {
        self.sql.execute("DELETE FROM export_spool WHERE export = ?", &[SqlValue::Integer(export)])
    }

    /// Removes every spooled export.
    pub fn clear_export_spool(&self) -> Result<()> {
        self.sql.execute("DELETE FROM export_spool", &[])
    }
}

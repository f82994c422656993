//! A byte stream stored as numbered parts of a table `(part INTEGER
//! PRIMARY KEY, data BLOB)`, written and read one part at a time so that
//! neither side holds the whole stream: the turn directory's snapshot
//! ([`super::directory`]). Part 0 is written last by whoever owns the
//! stream (its header), so a write cut short leaves no readable stream.
//! Little-endian throughout.

use crate::core::error::{Error, Result};
use crate::core::ports::{Sql, SqlValue};

/// Bytes per part: well under the platform's 2 MB cap on a value.
pub const PART_BYTES: usize = 512 * 1024;

/// Writes parts 1, 2, ... of `table` as the stream grows.
pub struct PartWriter<'a> {
    sql: &'a dyn Sql,
    table: &'static str,
    buf: Vec<u8>,
    next: i64,
}

impl<'a> PartWriter<'a> {
    /// Starts a stream in `table`, removing what it held.
    pub fn new(sql: &'a dyn Sql, table: &'static str) -> Result<PartWriter<'a>> {
        sql.execute(&format!("DELETE FROM {table}"), &[])?;
        Ok(PartWriter { sql, table, buf: Vec::with_capacity(PART_BYTES + 64), next: 1 })
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.sql.execute(
                &format!("INSERT INTO {} (part, data) VALUES (?, ?)", self.table),
                &[SqlValue::Integer(self.next), SqlValue::Blob(std::mem::take(&mut self.buf))],
            )?;
            self.buf.reserve(PART_BYTES + 64);
            self.next += 1;
        }
        Ok(())
    }

    pub fn bytes(&mut self, b: &[u8]) -> Result<()> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= PART_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    pub fn u8(&mut self, v: u8) -> Result<()> {
        self.bytes(&[v])
    }

    pub fn u16(&mut self, v: u16) -> Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    pub fn u32(&mut self, v: u32) -> Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    pub fn i64(&mut self, v: i64) -> Result<()> {
        self.bytes(&v.to_le_bytes())
    }

    /// A length (u32) and the bytes.
    pub fn text(&mut self, b: &[u8]) -> Result<()> {
        self.u32(b.len() as u32)?;
        self.bytes(b)
    }

    /// Ends the stream: the last part, then `header` as part 0.
    /// Returns the number of parts after the header.
    pub fn finish(mut self, header: &[u8]) -> Result<i64> {
        self.flush()?;
        self.sql.execute(
            &format!("INSERT INTO {} (part, data) VALUES (0, ?)", self.table),
            &[SqlValue::Blob(header.to_vec())],
        )?;
        Ok(self.next - 1)
    }
}

/// Reads the stream of `table` after its header, part by part.
pub struct PartReader<'a> {
    sql: &'a dyn Sql,
    table: &'static str,
    buf: Vec<u8>,
    pos: usize,
    next: i64,
    last: i64,
}

impl<'a> PartReader<'a> {
    /// The header (part 0) and a reader of parts `1..=parts`, or `None`
    /// when there is no header.
    pub fn open(sql: &'a dyn Sql, table: &'static str) -> Result<Option<(Vec<u8>, PartReader<'a>)>> {
        let header = sql.query(&format!("SELECT data FROM {table} WHERE part = 0"), &[])?;
        let Some(header) = header.first().and_then(|r| r[0].as_blob()).map(<[u8]>::to_vec) else { return Ok(None) };
        let last = sql.query(&format!("SELECT COALESCE(MAX(part), 0) FROM {table}"), &[])?;
        let last = last.first().and_then(|r| r[0].as_i64()).unwrap_or(0);
        Ok(Some((header, PartReader { sql, table, buf: Vec::new(), pos: 0, next: 1, last })))
    }

    fn corrupt() -> Error {
        Error::storage("failed to read a snapshot: it ends early")
    }

    /// Makes `n` bytes available at `pos`.
    fn need(&mut self, n: usize) -> Result<()> {
        while self.buf.len() - self.pos < n {
            if self.next > self.last {
                return Err(PartReader::corrupt());
            }
            let rows = self.sql.query(&format!("SELECT data FROM {} WHERE part = ?", self.table), &[SqlValue::Integer(self.next)])?;
            let data = rows.first().and_then(|r| r[0].as_blob()).ok_or_else(PartReader::corrupt)?;
            self.buf.drain(..self.pos);
            self.pos = 0;
            self.buf.extend_from_slice(data);
            self.next += 1;
        }
        Ok(())
    }

    pub fn bytes(&mut self, n: usize) -> Result<&[u8]> {
        self.need(n)?;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.bytes(2)?.try_into().expect("two bytes")))
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes(4)?.try_into().expect("four bytes")))
    }

    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.bytes(8)?.try_into().expect("eight bytes")))
    }

    /// A length (u32) and that many bytes.
    pub fn text(&mut self) -> Result<Vec<u8>> {
        let n = self.u32()? as usize;
        Ok(self.bytes(n)?.to_vec())
    }

    /// Whether every part was read to its end.
    pub fn at_end(&self) -> bool {
        self.next > self.last && self.pos == self.buf.len()
    }
}

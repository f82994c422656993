//! Byte streams stored as numbered parts of a table `(part INTEGER
//! PRIMARY KEY, data BLOB)`, written and read one part at a time so that
//! neither side holds a whole stream: the turn directory's snapshot
//! segments ([`super::directory`]). Stream `s` takes the parts from
//! `s * STREAM_PARTS`; its first part is its header, written last, so a
//! write cut short leaves no readable stream. Little-endian throughout.

use crate::core::error::{Error, Result};
use crate::core::ports::{Sql, SqlValue};

/// Bytes per part: well under the platform's 2 MB cap on a value.
pub const PART_BYTES: usize = 512 * 1024;
/// Part numbers per stream (a stream of 512 GB at most).
pub const STREAM_PARTS: i64 = 1 << 20;

/// The header parts of `table`'s streams 0, 1, ... up to the first
/// missing one: `(stream, header)`, one lookup each.
pub fn headers(sql: &dyn Sql, table: &'static str) -> Result<Vec<(i64, Vec<u8>)>> {
    let mut out = Vec::new();
    loop {
        let stream = out.len() as i64;
        let rows = sql.query(&format!("SELECT data FROM {table} WHERE part = ?"), &[SqlValue::Integer(stream * STREAM_PARTS)])?;
        let Some(header) = rows.first().and_then(|r| r[0].as_blob()) else { return Ok(out) };
        out.push((stream, header.to_vec()));
    }
}

/// Writes the parts of stream `stream` of `table` after its header, as
/// the stream grows.
pub struct PartWriter<'a> {
    sql: &'a dyn Sql,
    table: &'static str,
    buf: Vec<u8>,
    base: i64,
    next: i64,
}

impl<'a> PartWriter<'a> {
    /// Starts stream `stream` in `table`, removing what it held.
    pub fn new(sql: &'a dyn Sql, table: &'static str, stream: i64) -> Result<PartWriter<'a>> {
        let base = stream * STREAM_PARTS;
        sql.execute(
            &format!("DELETE FROM {table} WHERE part >= ?1 AND part < ?2"),
            &[SqlValue::Integer(base), SqlValue::Integer(base + STREAM_PARTS)],
        )?;
        Ok(PartWriter { sql, table, buf: Vec::with_capacity(PART_BYTES + 64), base, next: 1 })
    }

    fn flush(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            self.sql.execute(
                &format!("INSERT INTO {} (part, data) VALUES (?, ?)", self.table),
                &[SqlValue::Integer(self.base + self.next), SqlValue::Blob(std::mem::take(&mut self.buf))],
            )?;
            self.buf.reserve(PART_BYTES + 64);
            self.next += 1;
        }
        Ok(())
    }

    pub fn bytes(&mut self, mut b: &[u8]) -> Result<()> {
        while !b.is_empty() {
            let room = PART_BYTES - self.buf.len();
            let (now, rest) = b.split_at(room.min(b.len()));
            self.buf.extend_from_slice(now);
            b = rest;
            if self.buf.len() >= PART_BYTES {
                self.flush()?;
            }
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

    /// Ends the stream: the last part, then `header` as its first.
    /// Returns the number of parts after the header.
    pub fn finish(mut self, header: &[u8]) -> Result<i64> {
        self.flush()?;
        self.sql.execute(
            &format!("INSERT INTO {} (part, data) VALUES (?, ?)", self.table),
            &[SqlValue::Integer(self.base), SqlValue::Blob(header.to_vec())],
        )?;
        Ok(self.next - 1)
    }
}

/// Reads stream `stream` of `table` after its header, part by part.
pub struct PartReader<'a> {
    sql: &'a dyn Sql,
    table: &'static str,
    buf: Vec<u8>,
    pos: usize,
    next: i64,
    last: i64,
}

impl<'a> PartReader<'a> {
    /// A reader of the parts after the header of stream `stream`.
    pub fn open(sql: &'a dyn Sql, table: &'static str, stream: i64) -> Result<PartReader<'a>> {
        let base = stream * STREAM_PARTS;
        let last = sql.query(
            &format!("SELECT COALESCE(MAX(part), ?1) FROM {table} WHERE part >= ?1 AND part < ?2"),
            &[SqlValue::Integer(base), SqlValue::Integer(base + STREAM_PARTS)],
        )?;
        let last = last.first().and_then(|r| r[0].as_i64()).unwrap_or(base);
        Ok(PartReader { sql, table, buf: Vec::new(), pos: 0, next: base + 1, last })
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

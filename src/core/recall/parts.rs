//! Byte streams stored as numbered parts of a table `(part INTEGER
//! PRIMARY KEY, data BLOB)`, written and read one part at a time so that
//! neither side holds a whole stream: the turn directory's snapshot
//! segments ([`super::directory`]). Stream `s` takes the parts from
//! `s * STREAM_PARTS`; its first part is its header, written last, so a
//! write cut short leaves no readable stream. Little-endian throughout.

use crate::core::error::{Error, Result};
use crate::core::ports::{Sql, SqlValue};

/// The first part number of stream `stream`, and the one past its last.
fn stream_bounds(stream: i64) -> Result<(i64, i64)> {
    let base = stream.checked_mul(STREAM_PARTS);
    base.and_then(|b| Some((b, b.checked_add(STREAM_PARTS)?))).ok_or_else(|| Error::storage(format!("snapshot stream {stream} is out of range")))
}

/// The blob in the first column of the first row, if there is one.
fn first_blob(rows: &[Vec<SqlValue>]) -> Option<&[u8]> {
    rows.first().and_then(|r| r.first()).and_then(|v| v.as_blob())
}

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
        let (base, _) = stream_bounds(stream)?;
        let rows = sql.query(&format!("SELECT data FROM {table} WHERE part = ?"), &[SqlValue::Integer(base)])?;
        let Some(header) = first_blob(&rows) else { return Ok(out) };
        out.push((stream, header.to_vec()));
    }
}

/// Writes `buf` (emptied) as part `next` of the stream at `base` of
/// `table`, unless it is empty.
fn put_part(sql: &dyn Sql, table: &str, base: i64, next: &mut i64, buf: &mut Vec<u8>) -> Result<()> {
    if buf.is_empty() {
        return Ok(());
    }
    // `next` stays below STREAM_PARTS: a stream never runs into the next
    // one's parts.
    if *next >= STREAM_PARTS {
        return Err(Error::storage("failed to write a snapshot: the stream is too long"));
    }
    sql.execute(
        &format!("INSERT INTO {table} (part, data) VALUES (?, ?)"),
        &[SqlValue::Integer(base.saturating_add(*next)), SqlValue::Blob(std::mem::take(buf))],
    )?;
    buf.reserve(PART_BYTES + 64);
    *next = next.saturating_add(1);
    Ok(())
}

/// Appends `bytes` to `buf`, handing `buf` to `full` each time it holds
/// `part_bytes` (which must empty it): a stream cut into parts of that
/// size, one part held at a time.
pub fn fill_parts(buf: &mut Vec<u8>, part_bytes: usize, mut bytes: &[u8], mut full: impl FnMut(&mut Vec<u8>) -> Result<()>) -> Result<()> {
    while !bytes.is_empty() {
        // `full` empties the buffer on reaching part_bytes: room is never
        // 0 here (with part_bytes 0, each byte is a part).
        let room = part_bytes.saturating_sub(buf.len()).max(1);
        let (now, rest) = bytes.split_at(room.min(bytes.len()));
        buf.extend_from_slice(now);
        bytes = rest;
        if buf.len() >= part_bytes {
            full(buf)?;
        }
    }
    Ok(())
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
        let (base, end) = stream_bounds(stream)?;
        sql.execute(&format!("DELETE FROM {table} WHERE part >= ?1 AND part < ?2"), &[SqlValue::Integer(base), SqlValue::Integer(end)])?;
        Ok(PartWriter { sql, table, buf: Vec::with_capacity(PART_BYTES + 64), base, next: 1 })
    }

    fn flush(&mut self) -> Result<()> {
        put_part(self.sql, self.table, self.base, &mut self.next, &mut self.buf)
    }

    pub fn bytes(&mut self, b: &[u8]) -> Result<()> {
        let PartWriter { sql, table, buf, base, next } = self;
        fill_parts(buf, PART_BYTES, b, |full| put_part(*sql, table, *base, next, full))
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
        let n = u32::try_from(b.len()).map_err(|_| Error::storage("failed to write a snapshot: a text is over 4 GB"))?;
        self.u32(n)?;
        self.bytes(b)
    }

    /// Ends the stream: the last part, then `header` as its first.
    /// Returns the number of parts after the header.
    pub fn finish(mut self, header: &[u8]) -> Result<i64> {
        self.flush()?;
        self.sql
            .execute(&format!("INSERT INTO {} (part, data) VALUES (?, ?)", self.table), &[SqlValue::Integer(self.base), SqlValue::Blob(header.to_vec())])?;
        Ok(self.next.saturating_sub(1))
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
        let (base, end) = stream_bounds(stream)?;
        let last = sql.query(
            &format!("SELECT COALESCE(MAX(part), ?1) FROM {table} WHERE part >= ?1 AND part < ?2"),
            &[SqlValue::Integer(base), SqlValue::Integer(end)],
        )?;
        let last = last.first().and_then(|r| r.first()).and_then(SqlValue::as_i64).ok_or_else(|| Error::storage("failed to read a snapshot: no last part"))?;
        // `base` is below `end`: `base + 1` does not overflow.
        Ok(PartReader { sql, table, buf: Vec::new(), pos: 0, next: base.saturating_add(1), last })
    }

    fn corrupt() -> Error {
        Error::storage("failed to read a snapshot: it ends early")
    }

    /// Makes `n` bytes available at `pos`.
    fn need(&mut self, n: usize) -> Result<()> {
        // `pos` is at most the buffer's length.
        while self.buf.len().saturating_sub(self.pos) < n {
            if self.next > self.last {
                return Err(PartReader::corrupt());
            }
            let rows = self.sql.query(&format!("SELECT data FROM {} WHERE part = ?", self.table), &[SqlValue::Integer(self.next)])?;
            let data = first_blob(&rows).ok_or_else(PartReader::corrupt)?;
            self.buf.drain(..self.pos.min(self.buf.len()));
            self.pos = 0;
            self.buf.extend_from_slice(data);
            self.next = self.next.saturating_add(1);
        }
        Ok(())
    }

    pub fn bytes(&mut self, n: usize) -> Result<&[u8]> {
        self.need(n)?;
        let end = self.pos.checked_add(n).ok_or_else(PartReader::corrupt)?;
        let out = self.buf.get(self.pos..end).ok_or_else(PartReader::corrupt)?;
        self.pos = end;
        Ok(out)
    }

    /// The next `N` bytes, as an array.
    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        self.bytes(N)?.try_into().map_err(|_| PartReader::corrupt())
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(u8::from_le_bytes(self.array()?))
    }

    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::BTreeMap;

    #[test]
    fn test_fill_parts_cuts_a_stream_into_whole_parts_wherever_its_pushes_split() {
        let stream: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        for pushes in [1usize, 3, 7, 64, 999] {
            let (mut buf, mut parts) = (Vec::new(), Vec::new());
            for chunk in stream.chunks(pushes) {
                fill_parts(&mut buf, 64, chunk, |full| {
                    parts.push(std::mem::take(full));
                    Ok(())
                })
                .unwrap();
            }
            assert!(parts.iter().all(|p| p.len() == 64), "whole parts only (pushes of {pushes})");
            assert_eq!(buf.len(), 1000 % 64, "the rest waits");
            parts.push(buf);
            assert_eq!(parts.concat(), stream, "pushes of {pushes}");
        }
    }

    /// Parts in a map, answering the four statements of this module.
    #[derive(Default)]
    struct Parts(RefCell<BTreeMap<i64, SqlValue>>);

    impl Sql for Parts {
        fn query(&self, sql: &str, params: &[SqlValue]) -> Result<Vec<Vec<SqlValue>>> {
            let int = |i: usize| params.get(i).and_then(SqlValue::as_i64).unwrap_or_default();
            let mut parts = self.0.borrow_mut();
            if sql.starts_with("DELETE") {
                parts.retain(|p, _| !(int(0)..int(1)).contains(p));
                Ok(Vec::new())
            } else if sql.starts_with("INSERT") {
                parts.insert(int(0), params[1].clone());
                Ok(Vec::new())
            } else if sql.starts_with("SELECT COALESCE") {
                let last = parts.range(int(0)..int(1)).next_back().map_or(int(0), |(p, _)| *p);
                Ok(vec![vec![SqlValue::Integer(last)]])
            } else {
                Ok(parts.get(&int(0)).map(|d| vec![vec![d.clone()]]).unwrap_or_default())
            }
        }
        fn transaction(&self, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
            f()
        }
        fn database_size(&self) -> i64 {
            0
        }
    }

    /// Writes stream 0: a u32, a text over two parts, an i64.
    fn written(sql: &Parts) -> Vec<u8> {
        let text: Vec<u8> = (0..PART_BYTES + 100).map(|i| i as u8).collect();
        let mut w = PartWriter::new(sql, "t", 0).unwrap();
        w.u32(7).unwrap();
        w.text(&text).unwrap();
        w.i64(-5).unwrap();
        assert_eq!(w.finish(b"head").unwrap(), 2);
        text
    }

    #[test]
    fn test_a_stream_reads_back_as_written() {
        let sql = Parts::default();
        let text = written(&sql);
        assert_eq!(headers(&sql, "t").unwrap(), vec![(0, b"head".to_vec())]);
        let mut r = PartReader::open(&sql, "t", 0).unwrap();
        assert_eq!(r.u32().unwrap(), 7);
        assert_eq!(r.text().unwrap(), text);
        assert_eq!(r.i64().unwrap(), -5);
        assert!(r.at_end());
        assert!(r.u8().unwrap_err().is_storage());
    }

    #[test]
    fn test_a_truncated_or_corrupt_stream_is_an_error_not_a_panic() {
        // The last part gone: the reader runs out.
        let sql = Parts::default();
        written(&sql);
        sql.0.borrow_mut().remove(&2);
        let mut r = PartReader::open(&sql, "t", 0).unwrap();
        assert_eq!(r.u32().unwrap(), 7);
        assert!(r.text().unwrap_err().is_storage());

        // A part cut short in the middle of a number.
        let sql = Parts::default();
        written(&sql);
        sql.0.borrow_mut().insert(1, SqlValue::Blob(vec![7, 0]));
        sql.0.borrow_mut().remove(&2);
        assert!(PartReader::open(&sql, "t", 0).unwrap().u32().unwrap_err().is_storage());

        // A text whose length claims more than the stream holds.
        let sql = Parts::default();
        sql.0.borrow_mut().insert(1, SqlValue::Blob(u32::MAX.to_le_bytes().to_vec()));
        assert!(PartReader::open(&sql, "t", 0).unwrap().text().unwrap_err().is_storage());

        // A part that is not a blob.
        let sql = Parts::default();
        sql.0.borrow_mut().insert(1, SqlValue::Text("x".into()));
        assert!(PartReader::open(&sql, "t", 0).unwrap().u8().unwrap_err().is_storage());
    }

    #[test]
    fn test_a_stream_number_out_of_range_is_an_error() {
        let sql = Parts::default();
        assert!(PartReader::open(&sql, "t", i64::MAX).is_err());
        assert!(PartWriter::new(&sql, "t", i64::MAX / 2).is_err());
    }
}

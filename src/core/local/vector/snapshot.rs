//! The snapshot (`vector_snapshot`: the packed codes in parts): its
//! header and record layout, when a new one is due as the index grows,
//! and writing one from the rows a part at a time, as the lean path does
//! between requests. The warm copy writes and reads its own
//! (`packed::write_snapshot`, `packed::read_snapshot`).

use super::code::{body_len, key_of, KEY_BYTES};
use super::rows::{code_page, BEFORE_FIRST_ROWID, PAGE};
use crate::core::error::Result;
use crate::core::ports::{Sql, SqlValue};

/// Snapshot parts hold at most this many bytes (a row stays far under the
/// platform's 2 MB).
pub(super) const SNAPSHOT_PART: usize = 512 * 1024;
/// Profiles with fewer vectors load row by row (fast enough) and keep no
/// snapshot.
pub const SNAPSHOT_MIN: usize = 4096;
pub(super) const SNAPSHOT_MAGIC: &[u8; 4] = b"VS01";
/// Bytes of the snapshot's header (part 0).
pub(super) const HEAD_BYTES: usize = 22;
/// Vectors written since the last snapshot that make the next one due
/// (with a tenth of all vectors, whichever is more).
pub(super) const SNAPSHOT_GROWTH_MIN: usize = 2000;

/// Part 0 of the snapshot: magic, dims, count, the last vectors rowid it
/// covers, parts.
pub(super) fn header_bytes(dims: usize, n: usize, covered: i64, parts: usize) -> Vec<u8> {
    let mut header = Vec::with_capacity(HEAD_BYTES);
    header.extend(SNAPSHOT_MAGIC);
    header.extend((dims as u16).to_le_bytes());
    header.extend((n as u32).to_le_bytes());
    header.extend(covered.to_le_bytes());
    header.extend((parts as u32).to_le_bytes());
    header
}

/// Bytes of one snapshot record for vectors of `dims` dimensions: key,
/// then the code's body (1/norm, SimHash, 4-bit vector).
pub(super) fn record_len(dims: usize) -> usize {
    KEY_BYTES + body_len(dims)
}

/// The snapshot's header (part 0).
pub(super) struct Head {
    pub(super) dims: usize,
    /// Records (slots) it holds.
    pub(super) n: usize,
    /// The last `vectors` rowid it covers.
    pub(super) covered: i64,
    pub(super) parts: i64,
}

/// Reads the snapshot's header; `None` without one in this format.
/// Reads no part.
pub(super) fn snapshot_head(sql: &dyn Sql) -> Result<Option<Head>> {
    let head = sql.query("SELECT data FROM vector_snapshot WHERE part = 0", &[])?;
    let Some(h) = head.first().and_then(|r| r.first()).and_then(SqlValue::as_blob) else { return Ok(None) };
    if h.len() != HEAD_BYTES || &h[0..4] != SNAPSHOT_MAGIC {
        return Ok(None);
    }
    Ok(Some(Head {
        dims: u16::from_le_bytes([h[4], h[5]]) as usize,
        n: u32::from_le_bytes([h[6], h[7], h[8], h[9]]) as usize,
        covered: i64::from_le_bytes(h[10..18].try_into().unwrap_or_default()),
        parts: u32::from_le_bytes([h[18], h[19], h[20], h[21]]) as i64,
    }))
}

/// `load`'s check of a copy built from the snapshot: whether its `slots`
/// agree with the rows of `vectors` (within 5%, or 64). A wipe or bulk
/// delete since the snapshot makes them disagree.
pub(super) fn count_agrees(sql: &dyn Sql, slots: usize) -> Result<bool> {
    let actual = count(sql, "SELECT COUNT(*) FROM vectors", &[])?;
    Ok((slots as i64 - actual).abs() <= (actual / 20).max(64))
}

/// The single integer a `SELECT COUNT(*)`-like statement yields (0 for
/// NULL; a storage error for a value that is not an integer).
pub(super) fn count(sql: &dyn Sql, statement: &str, params: &[SqlValue]) -> Result<i64> {
    Ok(crate::core::ports::aggregate_i64(&sql.query(statement, params)?, "a count of vectors")?.unwrap_or(0))
}

/// Vectors written since the last snapshot that make the next one due,
/// for `n` vectors: a tenth, at least [`SNAPSHOT_GROWTH_MIN`].
pub(super) fn snapshot_growth(n: usize) -> usize {
    (n / 10).max(SNAPSHOT_GROWTH_MIN)
}

/// Vectors from which a profile without its codes in memory keeps a
/// snapshot: every lean query streams the codes, and reading them from the
/// rows costs a value per row (~20 ms at 1,000 vectors in a Durable
/// Object), from the snapshot a value per 512 KB part.
pub const LEAN_SNAPSHOT_MIN: usize = 256;

/// Rows written after the lean snapshot that make the next one due: a
/// tenth of the snapshot, and at least [`LEAN_SNAPSHOT_MIN`] (at most
/// [`snapshot_growth`], which the lean read path allows for).
pub(super) fn lean_snapshot_growth(n: usize) -> usize {
    (n / 10).max(LEAN_SNAPSHOT_MIN).min(snapshot_growth(n))
}

/// Snapshot upkeep without a memory copy. When the table holds at least
/// [`SNAPSHOT_MIN`] vectors and the rows after the snapshot's covered
/// rowid are at least a tenth of them (and 2,000), rewrites the snapshot
/// whole from the rows, in the format [`write_snapshot`](super::write_snapshot) writes. A
/// snapshot `load` could not use counts as none (every row is after it):
/// a header missing or unreadable, parts missing or of another size than
/// its count, or more of its records gone from the table than `load`'s
/// count check allows (a record rewritten since counts as gone: the
/// check errs towards rewriting). Returns whether it wrote.
///
/// Streams the rows in rowid order a page at a time and writes each part
/// as it fills: one part and one page in memory. The slots are those of a
/// load from the rows (the first row's dimension count; rows with an old
/// code are recoded and rewritten). Writes nothing while an id is of
/// neither form `ids::key_of_id` reads (as `write_snapshot`: such ids are
/// read from the rows).
pub fn maintain_snapshot_lean(sql: &dyn Sql) -> Result<bool> {
    let total = count(sql, "SELECT COUNT(*) FROM vectors", &[])?;
    let n = usize::try_from(total).unwrap_or(0);
    if n < LEAN_SNAPSHOT_MIN || !snapshot_due_lean(sql, n)? {
        return Ok(false);
    }
    // An id of neither form `ids::key_of_id` reads (32 hex characters of a
    // value below 2^127, or a ULID whose top bit is clear): the rows only.
    // (It tested for hex alone, so no profile of ULIDs got a snapshot.)
    let odd = sql.query(
        "SELECT 1 FROM vectors WHERE NOT ( \
           (length(memory_id) = 32 AND memory_id NOT GLOB '*[^0-9a-f]*' AND memory_id < '8') \
           OR (length(memory_id) = 26 AND memory_id NOT GLOB '*[^0-9a-hjkmnp-tv-z]*' AND memory_id < '4')) LIMIT 1",
        &[],
    )?;
    if !odd.is_empty() {
        return Ok(false);
    }
    write_snapshot_from_rows(sql)
}

/// Whether a snapshot is due for a table of `n` vectors (see
/// [`maintain_snapshot_lean`]). Reads the header and counts, no part.
pub(super) fn snapshot_due_lean(sql: &dyn Sql, n: usize) -> Result<bool> {
    // Derived data: a header that does not read is no snapshot
    // (`snapshot_head`); a failed read of it is the store's error.
    let Some(head) = snapshot_head(sql)? else { return Ok(true) };
    let after = count(sql, "SELECT COUNT(*) FROM vectors WHERE rowid > ?", &[SqlValue::Integer(head.covered)])?;
    let after = usize::try_from(after).unwrap_or(0);
    if after >= lean_snapshot_growth(n) {
        return Ok(true);
    }
    let stored =
        sql.query("SELECT COUNT(*), COALESCE(SUM(length(data)), 0) FROM vector_snapshot WHERE part BETWEEN 1 AND ?", &[SqlValue::Integer(head.parts)])?;
    let (parts, bytes) = stored.first().map_or((0, 0), |r| (r[0].as_i64().unwrap_or(0), r[1].as_i64().unwrap_or(0)));
    // In u64: on Wasm, 4 GiB of snapshot overflows a usize.
    let expected = (head.n as u64).checked_mul(record_len(head.dims) as u64);
    let whole = parts == head.parts && u64::try_from(bytes).ok() == expected;
    // Records whose row at or before `covered` is gone.
    let gone = head.n.saturating_sub(n.saturating_sub(after));
    Ok(!whole || gone > (n / 20).max(64))
}

/// Rewrites the snapshot whole from the rows (see
/// [`maintain_snapshot_lean`]); whether it wrote (not for an empty table
/// or an id that is neither hex nor a ULID).
pub(super) fn write_snapshot_from_rows(sql: &dyn Sql) -> Result<bool> {
    // The header goes first out and last in: a snapshot cut short has none
    // and is not read.
    sql.execute("DELETE FROM vector_snapshot", &[])?;
    let (mut after, mut dims, mut n, mut parts) = (BEFORE_FIRST_ROWID, None, 0usize, 0usize);
    let mut part: Vec<u8> = Vec::new();
    let write_part = |part: &mut Vec<u8>, parts: &mut usize| -> Result<()> {
        *parts += 1;
        sql.execute(
            "INSERT OR REPLACE INTO vector_snapshot (part, data) VALUES (?, ?)",
            &[SqlValue::Integer(*parts as i64), SqlValue::Blob(std::mem::take(part))],
        )
    };
    loop {
        let (rows, last, full) = code_page(sql, after, PAGE)?;
        for r in &rows {
            let d = *dims.get_or_insert(r.dims);
            if r.dims != d {
                continue; // as a load from the rows leaves it out
            }
            let (key, hex) = key_of(&r.id);
            if !hex {
                sql.execute("DELETE FROM vector_snapshot", &[])?;
                return Ok(false);
            }
            let record = record_len(d);
            let part_bytes = (SNAPSHOT_PART / record).max(1) * record;
            if part.is_empty() {
                part.reserve_exact(part_bytes);
            }
            part.extend(key.to_le_bytes());
            part.extend(r.body());
            n += 1;
            if part.len() >= part_bytes {
                write_part(&mut part, &mut parts)?;
            }
        }
        if let Some(l) = last {
            after = l;
        }
        if !full {
            break;
        }
    }
    if !part.is_empty() {
        write_part(&mut part, &mut parts)?;
    }
    let Some(dims) = dims.filter(|_| n > 0) else { return Ok(false) };
    sql.execute("INSERT INTO vector_snapshot (part, data) VALUES (0, ?)", &[SqlValue::Blob(header_bytes(dims, n, after, parts))])?;
    Ok(true)
}

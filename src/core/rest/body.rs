//! A request's body as the Worker reads it: held to a size limit a chunk
//! at a time ([`BodyReader`]), and read uncompressed.
//!
//! What it does not do: pick the limit. The router knows which routes
//! read an import's file ([`super::body_limit`]).

use crate::core::api;
use crate::core::error::{Error, Result};

/// Largest JSON body accepted, in bytes (500 messages of 32 KB, plus room).
pub const MAX_BODY_BYTES: usize = 17 * 1024 * 1024;

/// A request body read a chunk at a time, held to its route's
/// [`super::body_limit`]. A body is refused (413) as soon as it passes the limit,
/// whether its `Content-Length` declared it or it came without one
/// (chunked): a body is never held whole before its size is checked, and an
/// isolate's memory, which never shrinks, never takes more than the limit.
#[derive(Debug)]
pub struct BodyReader {
    bytes: Vec<u8>,
    limit: usize,
    /// The declared length, reserved at the first chunk (not before: the
    /// Worker takes room for it first).
    declared: Option<usize>,
}

impl BodyReader {
    /// The reader of a body of at most `limit` bytes with the
    /// `Content-Length` header `declared` (if any): a declared length over
    /// the limit is refused before anything is read. One that does not
    /// read as a number is left to the platform, which delivers no more
    /// than it declares.
    pub(super) fn limited(limit: usize, declared: Option<&str>) -> Result<BodyReader> {
        let declared = declared.and_then(|n| n.trim().parse::<u64>().ok());
        match declared {
            Some(n) if n > limit as u64 => Err(body_too_large(limit)),
            Some(n) => Ok(BodyReader { bytes: Vec::new(), limit, declared: Some(usize::try_from(n).unwrap_or(limit)) }),
            None => Ok(BodyReader { bytes: Vec::new(), limit, declared: None }),
        }
    }

    /// Takes the next chunk of the body; 413 once the body read so far is
    /// over the limit (the caller stops reading).
    pub fn push(&mut self, chunk: &[u8]) -> Result<()> {
        if self.bytes.len().saturating_add(chunk.len()) > self.limit {
            return Err(body_too_large(self.limit));
        }
        if let Some(n) = self.declared.take() {
            self.bytes.reserve_exact(n);
        }
        // Without a declared length, the room doubles as a Vec's does, but
        // never past the limit (a 17 MiB body holds 17 MiB, not 32).
        let needed = self.bytes.len().saturating_add(chunk.len());
        if needed > self.bytes.capacity() {
            let room = self.bytes.capacity().saturating_mul(2).clamp(needed, self.limit.max(needed));
            self.bytes.reserve_exact(room.saturating_sub(self.bytes.len()));
        }
        self.bytes.extend_from_slice(chunk);
        Ok(())
    }

    /// The bytes the body holds so far, with the room it grew into.
    pub fn held(&self) -> usize {
        self.bytes.capacity()
    }

    /// The bytes of the body that arrived so far.
    pub fn received(&self) -> usize {
        self.bytes.len()
    }

    /// The whole body.
    pub fn finish(self) -> Vec<u8> {
        self.bytes
    }
}

/// Refuses (415) a body sent compressed: a body is read as the bytes of
/// its JSON or NDJSON text, so one with a `Content-Encoding` other than
/// `identity` would be refused as text that is not UTF-8 (gzip) or, worse,
/// read as sent while the header says otherwise.
pub fn check_content_encoding(encoding: Option<&str>) -> Result<()> {
    match encoding.map(str::trim).filter(|e| !e.is_empty() && !e.eq_ignore_ascii_case("identity")) {
        Some(e) => Err(Error::unsupported_media_type(format!("a request body is read uncompressed: Content-Encoding {} is not taken", api::quoted(e)))),
        None => Ok(()),
    }
}

fn body_too_large(limit: usize) -> Error {
    Error::too_large(format!("request body is over {limit} bytes"))
}

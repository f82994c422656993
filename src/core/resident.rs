//! One memory budget for what every profile of an isolate keeps between
//! requests.
//!
//! On Cloudflare the Durable Objects of one Worker can share an isolate,
//! and a Rust Worker's objects then share one Wasm linear memory, which
//! grows and never shrinks. What a profile keeps between requests (its
//! turn directory, its vector codes) is a cache over its SQLite database,
//! rebuilt from there (and from the snapshots kept there) whenever it is
//! missing. [`Budget`] decides which profiles' caches stay: every profile
//! reports what it holds after each request, the least recently used are
//! evicted until the total fits, and a profile that alone holds more than
//! the budget keeps nothing between requests.
//!
//! What it does not do: it does not free anything itself (the owner of the
//! state clears it when told), it cannot see memory it is not told about
//! (a request's temporary working set), and a profile that is in the
//! middle of a request is never evicted (its owner says which are busy).

use crate::core::turns::Line;
use serde::{Deserialize, Serialize};
use std::rc::{Rc, Weak};

/// Heap bytes a profile's state holds per stored memory, measured
/// (docs/bench/multi/): its vector code (a 512-bit SimHash, a 4-bit
/// 256-dimension vector, its key and slot), its words in the directory's
/// memory index and its rowid, rounded up.
pub const BYTES_PER_MEMORY: usize = CODE_BYTES_PER_MEMORY + WORD_BYTES_PER_MEMORY;
/// ... of which its vector code: 64 bytes of SimHash, 128 of vector, its
/// key, 1/norm and slot (core::local::vector).
pub const CODE_BYTES_PER_MEMORY: usize = 256;
/// ... and its words and rowid in the directory.
pub const WORD_BYTES_PER_MEMORY: usize = 384;
/// ... and per stored message: its place in the directory (id, session,
/// position, role, date) and its words.
pub const BYTES_PER_MESSAGE: usize = 520;

/// What a profile's state will hold, estimated from its counts before it
/// is built (a profile that alone would not fit is never built).
pub fn estimate(messages: u64, memories: u64) -> usize {
    words_estimate(messages, memories).saturating_add(usize::try_from(memories).unwrap_or(usize::MAX).saturating_mul(CODE_BYTES_PER_MEMORY))
}

/// What the directory holds per byte of text (messages' and memories'
/// contents), in twentieths, beside [`WORDS_PER_COUNTED_TWENTIETHS`] of
/// what the counts say: fitted on the four development styles, where it
/// says 0.96-1.04 of what the directory held (the counts alone said
/// 0.66-0.85: long turns make more words than their count).
pub const WORDS_PER_TEXT_BYTE_TWENTIETHS: u64 = 15;
pub const WORDS_PER_COUNTED_TWENTIETHS: u64 = 17;

/// Before a profile's state is first measured: its directory from the
/// bytes of its texts and its counts, its codes from its memories. A
/// profile of very long messages (an import of 32 KB turns) is expected
/// at several times what its counts alone say.
pub fn estimate_with_text(messages: u64, memories: u64, text_bytes: u64) -> usize {
    let counted = words_estimate(messages, memories) as u128;
    let words = (text_bytes as u128)
        .saturating_mul(WORDS_PER_TEXT_BYTE_TWENTIETHS as u128)
        .saturating_add(counted.saturating_mul(WORDS_PER_COUNTED_TWENTIETHS as u128))
        / 20;
    let codes = (memories as u128).saturating_mul(CODE_BYTES_PER_MEMORY as u128);
    usize::try_from(words.saturating_add(codes)).unwrap_or(usize::MAX)
}

/// What the directory (the words of every message and memory, and where
/// each message sits) will hold, estimated from the counts.
pub fn words_estimate(messages: u64, memories: u64) -> usize {
    let bytes = (messages as u128).saturating_mul(BYTES_PER_MESSAGE as u128).saturating_add((memories as u128).saturating_mul(WORD_BYTES_PER_MEMORY as u128));
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// What a profile's state held when it was last built afresh: its
/// directory's bytes beside what [`words_estimate`] said for it, its
/// vector codes' count and dimensions, and the highest memory rowid then.
/// Kept in the profile's database ([`META_STATE_MEASURED`]): row counts
/// miss how long a profile's texts are (on long assistant turns the
/// words take half again what the counts say), so an isolate that never
/// built the state expects what was held, plus the growth since at the
/// measured bytes per estimated byte (held to [`MIN_WORDS_RATIO`] ..
/// [`MAX_WORDS_RATIO`]: a small profile's fixed costs would otherwise
/// make it look ten times larger per row than it is). The vector codes
/// are not scaled: their size follows from their count (at most one more
/// per memory row since) and dimensions. A profile's first build ever
/// goes by its counts and its texts' size ([`estimate_with_text`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Measured {
    pub held: u64,
    pub estimated: u64,
    /// 0 when the profile kept no vector codes (or none yet).
    pub code_dims: u32,
    pub vectors: u64,
    /// The highest memory rowid the state was built to.
    pub memories: u64,
}

/// The meta key of a profile's [`Measured`] (a wipe removes it).
pub const META_STATE_MEASURED: &str = "state_measured";

/// How far what a profile's directory holds may move from what its stored
/// measurement says, as a share of it, before it is measured again: a
/// write now and then, not one a build.
pub const REMEASURE_DRIFT: f64 = 0.25;

/// The bounds of a measured directory's bytes per estimated byte, applied
/// to its growth since: the development styles measured 1.2 to 1.5, and
/// 32 KB messages 0.8 (prose) to 1.4. Too high a bound refuses a profile
/// measured small for good (only a build measures it again); too low,
/// one grown while warm is built once over its expectation, and measured.
pub const MIN_WORDS_RATIO: f64 = 0.5;
pub const MAX_WORDS_RATIO: f64 = 1.5;

impl Measured {
    /// `held estimated code_dims vectors memories`.
    pub fn encode(&self) -> String {
        format!("{} {} {} {} {}", self.held, self.estimated, self.code_dims, self.vectors, self.memories)
    }

    pub fn decode(text: &str) -> Result<Measured, String> {
        let mut parts = text.split(' ');
        let mut next = || parts.next().map(str::parse::<u64>);
        match (next(), next(), next(), next(), next(), next()) {
            (Some(Ok(held)), Some(Ok(estimated)), Some(Ok(dims)), Some(Ok(vectors)), Some(Ok(memories)), None) => match u32::try_from(dims) {
                Ok(code_dims) => Ok(Measured { held, estimated, code_dims, vectors, memories }),
                Err(_) => Err(format!("meta {META_STATE_MEASURED} has dimensions out of range: {text:?}")),
            },
            _ => Err(format!("meta {META_STATE_MEASURED} is not five counts: {text:?}")),
        }
    }

    /// The measured bytes per estimated byte, within its bounds.
    fn ratio(&self) -> f64 {
        if self.estimated == 0 {
            return MAX_WORDS_RATIO;
        }
        (self.held as f64 / self.estimated as f64).clamp(MIN_WORDS_RATIO, MAX_WORDS_RATIO)
    }

    /// What the directory will hold for `words` (the counts'
    /// [`words_estimate`] now): what it held, plus the growth since at the
    /// measured ratio; for fewer rows than then, `words` at that ratio.
    pub fn scale(&self, words: usize) -> usize {
        let (words, estimated) = (words as f64, self.estimated as f64);
        let bytes = if words >= estimated { self.held as f64 + (words - estimated) * self.ratio() } else { words * self.ratio() };
        bytes as usize
    }

    /// The vector codes there will be with `memories` the highest memory
    /// rowid: those measured, and at most one per row since.
    pub fn vectors_at(&self, memories: u64) -> u64 {
        self.vectors.saturating_add(memories.saturating_sub(self.memories))
    }

    /// Whether `now` (measured for the counts now) is more than
    /// [`REMEASURE_DRIFT`] away from what this one says for them, or its
    /// codes changed.
    pub fn drifted(&self, now: &Measured) -> bool {
        let said = self.scale(usize::try_from(now.estimated).unwrap_or(usize::MAX)) as f64;
        self.code_dims != now.code_dims || self.vectors_at(now.memories) < now.vectors || (now.held as f64 - said).abs() > REMEASURE_DRIFT * said.max(1.0)
    }
}

/// What a profile's state will hold: [`estimate`] from its counts, or,
/// when it was measured, its directory as [`Measured::scale`] says plus
/// its vector codes (`codes_of` their count and dimensions: the owner
/// knows how they are laid out, and whether it keeps any).
pub fn expected(messages: u64, memories: u64, measured: Option<Measured>, codes_of: impl FnOnce(u64, u32) -> usize) -> usize {
    match measured {
        None => estimate(messages, memories),
        Some(m) => m.scale(words_estimate(messages, memories)).saturating_add(codes_of(m.vectors_at(memories), m.code_dims)),
    }
}

/// The budget when none is configured (`MEMORY_BUDGET_MB`): what the
/// profiles of one isolate may keep between requests together.
pub const DEFAULT_BUDGET_BYTES: usize = 32 * 1024 * 1024;

/// How long the budget goes by what a profile held, or was refused for:
/// a profile refused as too large is not asked about again (its alarm set
/// to build a state that will not fit) on each cold request for this
/// long, and after it one that shrank (a wipe, deletions) is judged by its
/// estimate again.
pub const KNOWN_FOR_MILLIS: u64 = 10 * 60_000;

/// The slowest a body that holds room in the working set may arrive,
/// after [`BODY_GRACE_MILLIS`]: 1 Mbit/s. A caller that sends a large
/// body slowly would otherwise hold room other large requests wait for
/// (and are refused for after `WORKING_SET_WAIT_MS`) for as long as it
/// likes; past this it is answered 408, nothing done. A body of the
/// published 17 MB limit has 146 s.
pub const BODY_MIN_BYTES_PER_SECOND: u64 = 128 * 1024;

/// How long a body that holds room may take beyond its length at
/// [`BODY_MIN_BYTES_PER_SECOND`] (`BODY_GRACE_MS`).
pub const BODY_GRACE_MILLIS: u64 = 10_000;

/// How long a body of `bytes` (declared, or held so far when none was)
/// may take to arrive from when it took its room, with `grace_millis` of
/// grace.
pub fn body_deadline_millis(bytes: usize, grace_millis: u64) -> u64 {
    let bytes = u64::try_from(bytes).unwrap_or(u64::MAX);
    grace_millis.saturating_add(bytes.saturating_mul(1_000) / BODY_MIN_BYTES_PER_SECOND)
}

/// The room requests of one isolate may take at once for their working
/// memory (`MEMORY_WORKING_SET_MB`), beside what profiles keep between
/// requests (the 32 MB default budget) in the Wasm memory's 128 MB: the
/// Worker's room for one ingest at the published limits (twice its 15.7
/// MiB), or that ingest run by its profile object alone (the first in
/// line gets its room once nothing is held). Four such ingests sent at
/// once take turns and leave the memory's mark at 65 MiB; unbounded, at
/// 112 MiB (docs/bench/peaks.md).
pub const DEFAULT_WORKING_SET_BYTES: usize = 32 * 1024 * 1024;

/// Requests smaller than this take no room: what they hold is lost in
/// the isolate's slack, and counting them would make every call wait on
/// the large ones.
pub const WORKING_SET_FLOOR_BYTES: usize = 256 * 1024;

/// The Worker's working memory for a body, per byte: the body, then the
/// call routed from it (the body is dropped once routed).
pub const WORKER_WORKING_SET_PER_BYTE: usize = 2;

/// The working memory of a profile object's call, per byte of the call it
/// was posted: an ingest peaks at 2.6 times its body, an import at twice
/// its file (`make bench-heap`), the text itself included.
pub const OBJECT_WORKING_SET_PER_BYTE: usize = 3;

/// The room the Worker takes for a body of `bytes` (0 under the floor).
pub fn worker_room(bytes: usize) -> usize {
    room_over_floor(bytes.saturating_mul(WORKER_WORKING_SET_PER_BYTE))
}

/// The room a profile object takes for a call of `bytes` (0 for a call
/// under the floor, as for a body under it).
pub fn object_room(bytes: usize) -> usize {
    if bytes < WORKING_SET_FLOOR_BYTES {
        return 0;
    }
    bytes.saturating_mul(OBJECT_WORKING_SET_PER_BYTE)
}

fn room_over_floor(bytes: usize) -> usize {
    if bytes < WORKING_SET_FLOOR_BYTES {
        0
    } else {
        bytes
    }
}

/// How long a request waits for room before it is refused as busy (503,
/// nothing done).
pub const WORKING_SET_WAIT_MILLIS: u64 = 30_000;

/// A request that waits for room must ask again within this long, or it
/// loses its place in line (its request ended without saying so; see
/// [`Line`]).
pub use crate::core::turns::STALE_WAITER_MILLIS;

/// Room held longer than this is taken back: its request cannot still be
/// running, and a request that ended without giving it back (a promise
/// that never settled) must not hold it for the isolate's life.
pub const MAX_HOLD_MILLIS: u64 = 15 * 60_000;

/// The room that requests of one isolate hold at once for their working
/// memory (a body being read, a call being run), so that concurrent large
/// requests take turns rather than together pass the Wasm memory's size,
/// which would abort every request of the isolate.
///
/// A request takes its room whole before it holds anything, and waits
/// for it holding nothing, in line: first come, first served, so a large
/// request is not passed over forever by smaller ones. No request waits
/// on another that waits on it. The first in line gets its room once
/// nothing is held, however large: one request alone is bounded by the
/// body limits. A body of no declared length grows its room as it
/// arrives, without waiting or a place in line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkingSet {
    limit: usize,
    /// Room held: ticket, bytes, when taken, whether for background work.
    rooms: Vec<(u64, usize, u64, bool)>,
    /// Requests waiting for room.
    line: Line,
    next_ticket: u64,
    waits: u64,
    refusals: u64,
}

/// The share of the working set background work may hold at once (one
/// piece of it may always go when the room is free): requests of up to
/// half the working set never wait on it.
pub const BACKGROUND_SHARE_DIVISOR: usize = 2;

impl WorkingSet {
    pub fn new(limit: usize) -> WorkingSet {
        WorkingSet { limit, ..WorkingSet::default() }
    }

    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// A ticket for a request about to take room.
    pub fn ticket(&mut self) -> u64 {
        self.next_ticket = self.next_ticket.wrapping_add(1);
        self.next_ticket
    }

    /// Takes `bytes` of room for `ticket` at `now` (milliseconds) if it is
    /// first in line and the room is free (or nothing is held): whether it
    /// did. One that did not is in line, and asks again. Below
    /// [`WORKING_SET_FLOOR_BYTES`] nothing is taken, and the answer is yes.
    pub fn try_take(&mut self, ticket: u64, bytes: usize, now: u64) -> bool {
        self.reclaim(now);
        if bytes < WORKING_SET_FLOOR_BYTES {
            return true;
        }
        let first = self.line.ask(ticket, now);
        let held = self.held();
        if !first || (held > 0 && held.saturating_add(bytes) > self.limit) {
            return false;
        }
        self.line.serve_first();
        self.rooms.push((ticket, bytes, now, false));
        true
    }

    /// Grows `ticket`'s room by `more` at `now`, without waiting or a place
    /// in line: whether it did (it does when the room is free, or when the
    /// request holds all that is held).
    pub fn try_grow(&mut self, ticket: u64, more: usize, now: u64) -> bool {
        self.reclaim(now);
        let held = self.held();
        let own = self.rooms.iter().filter(|r| r.0 == ticket).fold(0usize, |n, r| n.saturating_add(r.1));
        if held > own && held.saturating_add(more) > self.limit {
            return false;
        }
        self.rooms.push((ticket, more, now, false));
        true
    }

    /// Takes `bytes` of room for background work (a consolidation window)
    /// for `ticket` at `now`, if no request waits for room and either
    /// nothing is held or the room is free and background work would hold
    /// at most a [`BACKGROUND_SHARE_DIVISOR`]th of the limit: whether it
    /// did. It takes no place in line: requests go
    /// first, and background work asks again.
    pub fn try_take_background(&mut self, ticket: u64, bytes: usize, now: u64) -> bool {
        self.reclaim(now);
        if bytes < WORKING_SET_FLOOR_BYTES {
            return true;
        }
        let held = self.held();
        let background = self.rooms.iter().filter(|r| r.3).fold(0usize, |n, r| n.saturating_add(r.1));
        let share = self.limit / BACKGROUND_SHARE_DIVISOR;
        // One piece goes alone when nothing is held, whatever its size;
        // beside anything held, background work keeps within its share.
        if !self.line.is_empty() || (held > 0 && (held.saturating_add(bytes) > self.limit || background.saturating_add(bytes) > share)) {
            return false;
        }
        self.rooms.push((ticket, bytes, now, true));
        true
    }

    /// Gives back all the room `ticket` holds, and its place in line.
    pub fn leave(&mut self, ticket: u64) {
        self.rooms.retain(|r| r.0 != ticket);
        self.line.leave(ticket);
    }

    /// Forgets waiters that stopped asking ([`Line::forget_stale`]) and
    /// room held too long.
    fn reclaim(&mut self, now: u64) {
        self.line.forget_stale(now);
        self.rooms.retain(|r| now.saturating_sub(r.2) <= MAX_HOLD_MILLIS);
    }

    /// Counts a request that had to wait for room.
    pub fn note_wait(&mut self) {
        self.waits = self.waits.saturating_add(1);
    }

    /// Counts a request refused as busy.
    pub fn note_refusal(&mut self) {
        self.refusals = self.refusals.saturating_add(1);
    }

    /// The room held now.
    pub fn held(&self) -> usize {
        self.rooms.iter().fold(0usize, |n, r| n.saturating_add(r.1))
    }
}

/// The profiles of one isolate, least recently used first, and what each
/// keeps between requests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Budget {
    limit: usize,
    /// Least recently used first.
    entries: Vec<(String, usize)>,
    /// What each profile held when it was last resident, or was refused
    /// for, and when (isolate milliseconds): what it will build again.
    /// Known for [`KNOWN_FOR_MILLIS`]; a cold request, holding nothing,
    /// leaves it as it is.
    last: std::collections::HashMap<String, (usize, u64)>,
    evictions: u64,
    warmups_refused: u64,
}

/// The memory of one isolate as `stats` shows it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IsolateMemory {
    /// The current size of the Wasm linear memory (it never shrinks: its
    /// high-water mark).
    pub wasm_memory_bytes: u64,
    pub budget_bytes: u64,
    /// What every resident profile keeps, together.
    pub resident_bytes: u64,
    pub resident_profiles: u64,
    /// Profiles' caches cleared to keep within the budget, since the
    /// isolate started.
    pub evictions: u64,
    /// The room requests hold now for their working memory, and the most
    /// they may hold at once ([`WorkingSet`]).
    pub working_set_bytes: u64,
    pub working_set_limit_bytes: u64,
    /// Requests (and consolidation windows) that waited for room, and
    /// those refused as busy after waiting, since the isolate started.
    pub working_set_waits: u64,
    pub busy_refusals: u64,
    /// Profiles not let build their state since the isolate started: it
    /// was expected over the budget, or beside the profiles busy with
    /// requests. They answer from SQLite; one too large is not asked
    /// about again for ten minutes.
    pub warmups_refused: u64,
    /// What the allocator has handed out and not had back, the most at
    /// once since the isolate started, and the blocks live now: the Wasm
    /// memory's size beside the peak is what fragmentation and the
    /// allocator's bookkeeping cost; the live bytes beside
    /// `resident_bytes` what the budget's figures miss.
    pub heap_live_bytes: u64,
    pub heap_peak_bytes: u64,
    pub heap_blocks: u64,
}

/// The allocator's counts ([`IsolateMemory`]'s `heap_*`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct HeapCounts {
    pub live: u64,
    pub peak: u64,
    pub blocks: u64,
}

impl Budget {
    pub fn new(limit_bytes: usize) -> Budget {
        Budget { limit: limit_bytes, ..Budget::default() }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Changes the limit (the configuration is read per request).
    pub fn set_limit(&mut self, limit_bytes: usize) {
        self.limit = limit_bytes;
    }

    /// Records that `name` was just used, at `now`, and now keeps `bytes`,
    /// and returns the profiles whose caches must be cleared so the total
    /// fits, least recently used first (they are counted as evicted and
    /// hold nothing from now on). `busy` profiles are passed over; when
    /// the total is still over with every other profile busy, `name`
    /// itself is evicted, as it is when it alone is over the budget.
    /// While another call of `name` is still under way (`busy(name)`: the
    /// alarm building the state [`Budget::make_room`] held room for), what
    /// `name` is counted for does not shrink: that call settles it.
    pub fn touch(&mut self, name: &str, bytes: usize, now: u64, busy: impl Fn(&str) -> bool) -> Vec<String> {
        let held = self.entries.iter().find(|(n, _)| n == name).map_or(0, |(_, b)| *b);
        let bytes = if busy(name) { bytes.max(held) } else { bytes };
        self.entries.retain(|(n, _)| n != name);
        if bytes == 0 {
            // A cold request: what it held, or was refused for, still
            // says what it would build.
            return Vec::new();
        }
        self.remember(name, bytes, now);
        self.entries.push((name.to_string(), bytes));
        let mut evicted = Vec::new();
        if bytes > self.limit {
            evicted.push(name.to_string());
            self.entries.pop();
        }
        evicted.extend(self.evict_until(self.limit, name, now, &busy));
        // The others in the middle of requests cannot go: `name`, done
        // with its own, goes instead, so the total never stays over.
        if self.resident_bytes() > self.limit && self.entries.iter().any(|(n, _)| n == name) && !busy(name) {
            self.entries.retain(|(n, _)| n != name);
            evicted.push(name.to_string());
        }
        self.evictions = self.evictions.saturating_add(evicted.len() as u64);
        evicted
    }

    /// Records what `name` holds or would build, as of `now`, and forgets
    /// what is no longer known of the others (so the map stays the size of
    /// the profiles seen lately).
    fn remember(&mut self, name: &str, bytes: usize, now: u64) {
        if self.last.len() > self.entries.len().saturating_mul(2).saturating_add(64) {
            self.last.retain(|_, (_, at)| now.saturating_sub(*at) < KNOWN_FOR_MILLIS);
        }
        self.last.insert(name.to_string(), (bytes, now));
    }

    /// What `name` held, or was refused for, if still known at `now`.
    fn known(&self, name: &str, now: u64) -> Option<usize> {
        self.last.get(name).filter(|(_, at)| now.saturating_sub(*at) < KNOWN_FOR_MILLIS).map(|(b, _)| *b)
    }

    /// Before `name` builds its state at `now`, expected to hold `estimate`
    /// bytes (or what it held last time, if more and still known): `None` when that would not
    /// fit the budget alone, or beside the profiles busy with requests,
    /// which cannot be evicted (the profile stays on its SQLite paths), else
    /// the profiles to clear first so it fits beside the rest, least
    /// recently used first (none when `name` is resident already). Making
    /// room first keeps the budget plus one profile's state from ever
    /// being held at once.
    pub fn make_room(&mut self, name: &str, estimate: usize, now: u64, busy: impl Fn(&str) -> bool) -> Option<Vec<String>> {
        let coming = self.known(name, now).unwrap_or(0).max(estimate);
        if coming > self.limit {
            // Remembered, so its next cold calls do not ask again.
            self.remember(name, coming, now);
            self.warmups_refused = self.warmups_refused.saturating_add(1);
            return None;
        }
        if self.entries.iter().any(|(n, _)| n == name) {
            return Some(Vec::new());
        }
        // Room that only busy profiles could give is not there: the
        // profile stays on its SQLite paths this time, and nobody is
        // evicted for nothing.
        let staying = self.entries.iter().filter(|(n, _)| busy(n)).fold(0usize, |sum, (_, b)| sum.saturating_add(*b));
        if staying.saturating_add(coming) > self.limit {
            self.warmups_refused = self.warmups_refused.saturating_add(1);
            return None;
        }
        let evicted = self.evict_until(self.limit.saturating_sub(coming), name, now, busy);
        self.evictions = self.evictions.saturating_add(evicted.len() as u64);
        // The room is held for it until it settles ([`Budget::touch`] says
        // what it built): another profile admitted while this one awaits
        // (its drain calls the index, the embedder, a model) counts it.
        self.entries.push((name.to_string(), coming));
        Some(evicted)
    }

    /// Whether `name` may still fit at `now`: not known to need more than
    /// the budget (what it held, or was refused for, lately).
    pub fn may_fit(&self, name: &str, now: u64) -> bool {
        self.known(name, now).is_none_or(|b| b <= self.limit)
    }

    /// Removes the least recently used profiles but `keep` and the busy
    /// ones until the resident total is at most `target`; their names.
    /// What each held is known from `now` (it will build that again).
    fn evict_until(&mut self, target: usize, keep: &str, now: u64, busy: impl Fn(&str) -> bool) -> Vec<String> {
        let mut evicted = Vec::new();
        let mut i = 0;
        while self.resident_bytes() > target && i < self.entries.len() {
            let evictable = self.entries.get(i).is_some_and(|(n, _)| n != keep && !busy(n));
            if evictable {
                let (n, b) = self.entries.remove(i);
                self.last.insert(n.clone(), (b, now));
                evicted.push(n);
            } else {
                i = i.saturating_add(1);
            }
        }
        evicted
    }

    /// Whether anything of `name` is known at `now` (what it held, or was
    /// refused for): what [`Budget::forget_if_lowered`] would forget.
    pub fn knows(&self, name: &str, now: u64) -> bool {
        self.known(name, now).is_some()
    }

    /// After a write or a drain of `name` that took its highest message and
    /// memory rowids (what its estimate reads) from `before` to `after`:
    /// when either went down (a wipe, or its newest rows deleted), forgets
    /// what it held or was refused for, so it is judged by what its rows
    /// say from now on, not kept cold for up to [`KNOWN_FOR_MILLIS`]. A
    /// resident state is still counted (its writes keep it in step; the
    /// next [`Budget::touch`] says its size).
    pub fn forget_if_lowered(&mut self, name: &str, before: (u64, u64), after: (u64, u64)) {
        if after.0 < before.0 || after.1 < before.1 {
            self.last.remove(name);
        }
    }

    /// Stops counting the profiles `gone` says no longer hold anything
    /// (their object was freed, and its state with it), remembering what
    /// each held as of `now`. Not evictions: nothing is cleared.
    pub fn release(&mut self, now: u64, gone: impl Fn(&str) -> bool) {
        let Budget { entries, last, .. } = self;
        entries.retain(|(n, b)| {
            let keep = !gone(n);
            if !keep {
                last.insert(n.clone(), (*b, now));
            }
            keep
        });
    }

    /// What `name` keeps, as last reported.
    pub fn bytes_of(&self, name: &str) -> usize {
        self.entries.iter().find(|(n, _)| n == name).map_or(0, |(_, b)| *b)
    }

    pub fn resident_bytes(&self) -> usize {
        self.entries.iter().fold(0usize, |sum, (_, b)| sum.saturating_add(*b))
    }

    pub fn resident_profiles(&self) -> usize {
        self.entries.len()
    }

    pub fn evictions(&self) -> u64 {
        self.evictions
    }

    /// The isolate's figures, with the Wasm memory's size read by the
    /// caller.
    pub fn report(&self, wasm_memory_bytes: u64, heap: HeapCounts, working: &WorkingSet) -> IsolateMemory {
        IsolateMemory {
            wasm_memory_bytes,
            budget_bytes: self.limit as u64,
            resident_bytes: self.resident_bytes() as u64,
            resident_profiles: self.resident_profiles() as u64,
            evictions: self.evictions,
            working_set_bytes: working.held() as u64,
            working_set_limit_bytes: working.limit as u64,
            working_set_waits: working.waits,
            busy_refusals: working.refusals,
            warmups_refused: self.warmups_refused,
            heap_live_bytes: heap.live,
            heap_peak_bytes: heap.peak,
            heap_blocks: heap.blocks,
        }
    }
}

/// A profile's state as [`Residents`] sees it: its owner (a profile
/// object) holds it, the registry only a weak reference.
pub trait ProfileState {
    /// Whether a request (or alarm) of the profile is under way: its
    /// state is never cleared then.
    fn busy(&self) -> bool;
    /// Frees what the state keeps (rebuilt from SQLite when needed).
    fn clear(&self);
}

/// The profiles' states of one isolate by name, under one [`Budget`]:
/// what its profile objects share (on Cloudflare, a thread-local).
///
/// An isolate runs one object per name, but an object the runtime
/// destroyed (Cloudflare's after ten seconds idle) is freed, with its
/// state, only when the garbage collector takes it. Until then a new
/// object of the name may build a second state. So the registry clears
/// a destroyed object's state when the next object of its name claims the
/// name, and stops counting the states of objects already freed.
pub struct Residents<S> {
    pub budget: Budget,
    by_name: std::collections::HashMap<String, Weak<S>>,
}

impl<S> Default for Residents<S> {
    fn default() -> Residents<S> {
        Residents { budget: Budget::default(), by_name: std::collections::HashMap::new() }
    }
}

impl<S: ProfileState> Residents<S> {
    /// After (or before) a request of profile `name`, whose object holds
    /// `state`: records it as the name's, clearing the state of an earlier
    /// object of the name (destroyed, waiting for the collector, and no
    /// longer counted), unless a request of that object is still under
    /// way; stops counting the states of freed objects; sets the limit;
    /// then clears the states `decide` evicts, told which profiles are
    /// busy.
    pub fn settle(&mut self, limit: usize, name: &str, state: &Rc<S>, now: u64, decide: impl FnOnce(&mut Budget, &dyn Fn(&str) -> bool) -> Vec<String>) {
        self.claim(name, state);
        let Residents { budget, by_name } = self;
        budget.set_limit(limit);
        budget.release(now, |n| by_name.get(n).is_none_or(|r| r.strong_count() == 0));
        let busy = |n: &str| by_name.get(n).and_then(Weak::upgrade).is_some_and(|r| r.busy());
        for evicted in decide(budget, &busy) {
            if let Some(r) = by_name.get(&evicted).and_then(Weak::upgrade) {
                r.clear();
            }
        }
    }

    fn claim(&mut self, name: &str, state: &Rc<S>) {
        if let Some(earlier) = self.by_name.get(name).and_then(Weak::upgrade) {
            if !Rc::ptr_eq(&earlier, state) && !earlier.busy() {
                earlier.clear();
            }
        }
        self.by_name.retain(|_, r| r.strong_count() > 0);
        self.by_name.insert(name.to_string(), Rc::downgrade(state));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MB: usize = 1024 * 1024;
    fn idle(_: &str) -> bool {
        false
    }

    /// A profile object's state: whether a request of it is under way,
    /// and how often it was cleared.
    #[derive(Default)]
    struct Object {
        busy: std::cell::Cell<bool>,
        cleared: std::cell::Cell<u32>,
    }

    impl ProfileState for Object {
        fn busy(&self) -> bool {
            self.busy.get()
        }
        fn clear(&self) {
            self.cleared.set(self.cleared.get() + 1);
        }
    }

    /// `name`'s request on `object`, keeping `bytes` after it.
    fn request(r: &mut Residents<Object>, name: &str, object: &Rc<Object>, bytes: usize) {
        r.settle(10 * MB, name, object, 0, |budget, busy| budget.touch(name, bytes, 0, busy));
    }

    #[test]
    fn test_a_new_object_of_a_name_clears_the_state_the_destroyed_one_still_holds() {
        let mut r = Residents::default();
        let first = Rc::new(Object::default());
        request(&mut r, "a", &first, 4 * MB);
        request(&mut r, "a", &first, 4 * MB);
        assert_eq!(first.cleared.get(), 0, "an object's own next request clears nothing");
        // The runtime destroyed `first`; the collector has not freed it yet.
        let second = Rc::new(Object::default());
        request(&mut r, "a", &second, 4 * MB);
        assert_eq!((first.cleared.get(), second.cleared.get()), (1, 0));
        assert_eq!((r.budget.resident_bytes(), r.budget.resident_profiles()), (4 * MB, 1), "the name is counted once");
        assert_eq!(r.budget.evictions(), 0, "a claim is not an eviction");
    }

    #[test]
    fn test_a_destroyed_object_with_a_request_under_way_keeps_its_state() {
        let mut r = Residents::default();
        let first = Rc::new(Object::default());
        request(&mut r, "a", &first, 4 * MB);
        first.busy.set(true);
        let second = Rc::new(Object::default());
        request(&mut r, "a", &second, 4 * MB);
        assert_eq!(first.cleared.get(), 0);
    }

    #[test]
    fn test_a_freed_objects_state_is_no_longer_counted() {
        let mut r = Residents::default();
        let (a, b) = (Rc::new(Object::default()), Rc::new(Object::default()));
        request(&mut r, "a", &a, 4 * MB);
        request(&mut r, "b", &b, 4 * MB);
        assert_eq!(r.budget.resident_bytes(), 8 * MB);
        drop(a);
        request(&mut r, "b", &b, 4 * MB);
        assert_eq!((r.budget.resident_bytes(), r.budget.resident_profiles(), r.budget.evictions()), (4 * MB, 1, 0));
    }

    #[test]
    fn test_the_profiles_evicted_are_cleared_and_a_busy_one_is_passed_over() {
        let mut r = Residents::default();
        let (a, b, c) = (Rc::new(Object::default()), Rc::new(Object::default()), Rc::new(Object::default()));
        request(&mut r, "a", &a, 4 * MB);
        request(&mut r, "b", &b, 4 * MB);
        a.busy.set(true);
        request(&mut r, "c", &c, 4 * MB);
        assert_eq!((a.cleared.get(), b.cleared.get(), c.cleared.get()), (0, 1, 0), "a, the oldest, is busy: b goes");
        assert_eq!((r.budget.resident_bytes(), r.budget.evictions()), (8 * MB, 1));
    }

    #[test]
    fn test_the_least_recently_used_profiles_are_evicted_until_the_total_fits() {
        let mut b = Budget::new(10 * MB);
        assert!(b.touch("a", 4 * MB, 0, idle).is_empty());
        assert!(b.touch("b", 4 * MB, 0, idle).is_empty());
        assert!(b.touch("a", 4 * MB, 0, idle).is_empty(), "a used again: b is now the oldest");
        assert_eq!(b.touch("c", 4 * MB, 0, idle), vec!["b".to_string()]);
        assert_eq!((b.resident_bytes(), b.resident_profiles(), b.evictions()), (8 * MB, 2, 1));
        assert_eq!(b.bytes_of("b"), 0);
    }

    #[test]
    fn test_a_released_profile_is_no_longer_counted_nor_evicted_and_its_size_is_known() {
        let mut b = Budget::new(10 * MB);
        b.touch("a", 4 * MB, 0, idle);
        b.touch("b", 4 * MB, 0, idle);
        b.release(5, |n| n == "a");
        assert_eq!((b.resident_bytes(), b.resident_profiles(), b.evictions()), (4 * MB, 1, 0));
        assert!(b.touch("c", 4 * MB, 6, idle).is_empty(), "a's room is free: nobody is evicted for c");
        assert_eq!(b.known("a", 6), Some(4 * MB), "what a held says what it would build again");
    }

    #[test]
    fn test_a_profile_over_the_budget_alone_keeps_nothing_and_evicts_nobody() {
        let mut b = Budget::new(10 * MB);
        b.touch("small", 2 * MB, 0, idle);
        assert_eq!(b.touch("huge", 40 * MB, 0, idle), vec!["huge".to_string()]);
        assert_eq!((b.resident_bytes(), b.bytes_of("small")), (2 * MB, 2 * MB));
    }

    #[test]
    fn test_busy_profiles_are_passed_over() {
        let mut b = Budget::new(10 * MB);
        b.touch("busy", 6 * MB, 0, idle);
        b.touch("idle", 3 * MB, 0, idle);
        assert_eq!(b.touch("new", 4 * MB, 0, |n| n == "busy"), vec!["idle".to_string()]);
        assert_eq!(b.resident_bytes(), 10 * MB);
    }

    #[test]
    fn test_the_total_never_stays_over_the_budget_while_the_others_are_busy() {
        let mut b = Budget::new(10 * MB);
        b.touch("a", 6 * MB, 0, idle);
        b.touch("b", 3 * MB, 0, idle);
        let busy = |n: &str| n == "a" || n == "b";
        // c built its state while a and b were in requests: c goes.
        assert_eq!(b.touch("c", 4 * MB, 0, busy), vec!["c".to_string()]);
        assert!(b.resident_bytes() <= 10 * MB);
        assert_eq!(b.bytes_of("c"), 0);
        // And d is not let build beside them: it stays on SQLite.
        assert_eq!(b.make_room("d", 2 * MB, 0, busy), None);
        assert_eq!((b.resident_profiles(), b.evictions()), (2, 1), "nobody evicted for d");
        assert_eq!(b.report(0, HeapCounts::default(), &WorkingSet::new(0)).warmups_refused, 1);
        // Once they are idle, room is made as usual.
        assert_eq!(b.make_room("d", 2 * MB, 0, idle), Some(vec!["a".to_string()]));
        assert!(b.may_fit("d", 0), "refused while others were busy is not refused for good");
    }

    #[test]
    fn test_room_is_made_before_a_profile_builds_its_state_again() {
        let mut b = Budget::new(10 * MB);
        b.touch("a", 4 * MB, 0, idle);
        b.touch("b", 4 * MB, 0, idle);
        b.touch("c", 4 * MB, 0, idle);
        assert_eq!(b.resident_profiles(), 2, "a was evicted for c");
        // a comes back: room for its 4 MB is made before it builds them.
        assert_eq!(b.make_room("a", 0, 0, idle), Some(vec!["b".to_string()]));
        assert_eq!(b.resident_bytes(), 8 * MB, "c's, and the room held for a");
        assert_eq!(b.make_room("c", 0, 0, idle), Some(vec![]), "c is resident");
        assert!(b.touch("a", 4 * MB, 0, idle).is_empty());
        assert_eq!(b.evictions(), 2);
    }

    #[test]
    fn test_warm_ups_admitted_at_once_each_count_the_room_held_for_the_others() {
        let mut b = Budget::new(32 * MB);
        // a and b are admitted and await their drains (busy) before they
        // build: the second is refused the room the first holds.
        let busy = |n: &str| n == "a" || n == "b";
        assert_eq!(b.make_room("a", 30 * MB, 0, busy), Some(vec![]));
        assert_eq!(b.resident_bytes(), 30 * MB);
        assert_eq!(b.make_room("b", 30 * MB, 1, busy), None);
        // A request of a that ends while a's alarm still builds (a is
        // busy) holds nothing yet: the room stays held.
        assert!(b.touch("a", 0, 1, busy).is_empty());
        assert_eq!(b.resident_bytes(), 30 * MB);
        // a built less than it was held room for: the rest is free again.
        assert!(b.touch("a", 20 * MB, 2, idle).is_empty());
        assert_eq!(b.resident_bytes(), 20 * MB);
        // c is admitted and settles having built nothing: its room goes.
        assert_eq!(b.make_room("c", 10 * MB, 3, idle), Some(vec![]));
        assert!(b.touch("c", 0, 4, idle).is_empty());
        assert_eq!(b.resident_bytes(), 20 * MB);
    }

    #[test]
    fn test_a_profile_whose_estimate_is_over_the_budget_is_refused_and_evicts_nobody() {
        let mut b = Budget::new(10 * MB);
        b.touch("small", 2 * MB, 0, idle);
        assert!(b.may_fit("huge", 0), "unknown until it asks");
        assert_eq!(b.make_room("huge", 40 * MB, 0, idle), None);
        assert!(!b.may_fit("huge", 0), "a refusal is remembered");
        assert_eq!(b.make_room("new", 9 * MB, 0, idle), Some(vec!["small".to_string()]));
        // What a profile held last time counts when it is more than the estimate.
        b.touch("grown", 12 * MB, 0, idle);
        assert_eq!(b.make_room("grown", MB, 0, idle), None);
    }

    #[test]
    fn test_a_refusal_outlives_the_profiles_cold_requests_and_is_forgotten_in_time() {
        let mut b = Budget::new(10 * MB);
        assert_eq!(b.make_room("huge", 40 * MB, 0, idle), None);
        // Its cold requests hold nothing: they do not erase the refusal,
        // so they do not ask the alarm again each time.
        for at in [1, 2, 3] {
            assert!(b.touch("huge", 0, at, idle).is_empty());
            assert!(!b.may_fit("huge", at), "still refused at {at}");
        }
        assert!(!b.may_fit("huge", KNOWN_FOR_MILLIS - 1));
        assert_eq!(b.report(0, HeapCounts::default(), &WorkingSet::new(0)).warmups_refused, 1);
        // In time it is judged by its estimate again (it may have shrunk).
        assert!(b.may_fit("huge", KNOWN_FOR_MILLIS));
        assert_eq!(b.make_room("huge", 2 * MB, KNOWN_FOR_MILLIS, idle), Some(vec![]));
        // What an evicted profile held is known through its cold requests
        // too, from when it was evicted.
        b.touch("a", 6 * MB, 0, idle);
        b.touch("b", 6 * MB, KNOWN_FOR_MILLIS - 1, idle);
        assert_eq!(b.bytes_of("a"), 0, "a was evicted for b");
        b.touch("a", 0, KNOWN_FOR_MILLIS + 1, idle);
        assert_eq!(b.make_room("a", MB, KNOWN_FOR_MILLIS + 2, idle), Some(vec!["b".to_string()]), "room made for its 6 MB, not its estimate's 1");
    }

    #[test]
    fn test_a_wiped_profile_is_judged_by_its_estimate_at_once() {
        let mut b = Budget::new(10 * MB);
        assert_eq!(b.make_room("huge", 40 * MB, 0, idle), None);
        b.touch("evicted", 8 * MB, 0, idle);
        b.touch("other", 8 * MB, 1, idle);
        assert_eq!(b.make_room("evicted", MB, 2, idle), Some(vec!["other".to_string()]), "room made for its old 8 MB");
        b.touch("evicted", 0, 3, idle);
        b.touch("third", 6 * MB, 4, idle);
        assert!(b.knows("huge", 4) && b.knows("evicted", 4));
        b.forget_if_lowered("huge", (500, 900), (500, 900));
        assert!(!b.may_fit("huge", 4), "rows that did not go down forget nothing");
        for name in ["huge", "evicted"] {
            b.forget_if_lowered(name, (500, 900), (3, 40));
        }
        assert!(b.may_fit("huge", 5), "a wipe is not a refusal");
        assert_eq!(b.make_room("huge", MB, 5, idle), Some(vec![]));
        assert_eq!(b.make_room("evicted", MB, 6, idle), Some(vec![]), "its old 8 MB no longer counts: third stays");
    }

    #[test]
    fn test_what_is_known_of_profiles_not_seen_lately_is_let_go() {
        let mut b = Budget::new(MB);
        for i in 0..1_000 {
            b.make_room(&format!("p{i}"), 2 * MB, 0, idle);
        }
        b.make_room("late", 2 * MB, KNOWN_FOR_MILLIS, idle);
        b.make_room("later", 2 * MB, KNOWN_FOR_MILLIS, idle);
        assert!(b.last.len() <= 3, "{} known", b.last.len());
        assert!(!b.may_fit("late", KNOWN_FOR_MILLIS));
    }

    fn measured(held: u64, estimated: u64) -> Measured {
        Measured { held, estimated, code_dims: 0, vectors: 0, memories: 0 }
    }

    #[test]
    fn test_a_measured_profile_is_expected_at_what_it_held_plus_its_growth_at_the_measured_ratio() {
        let words = words_estimate(1_000, 1_000);
        let no_codes = |_: u64, _: u32| 0;
        assert_eq!(expected(1_000, 1_000, None, no_codes), estimate(1_000, 1_000), "unmeasured: the counts alone");
        // Measured at 1.5 times its estimate (long turns), then grown tenfold.
        let m = measured(words as u64 * 3 / 2, words as u64);
        let grown = words_estimate(10_000, 10_000);
        assert_eq!(expected(10_000, 10_000, Some(m), no_codes), words * 3 / 2 + (grown - words) * 3 / 2);
        // Measured small, where fixed costs make it ten times its
        // estimate: its growth is taken at the bound, not tenfold.
        let m = measured(10 * 1_000, 1_000);
        assert_eq!(m.scale(1_000_000), 10_000 + 999_000 * 3 / 2);
        // Under its estimate (short turns): expected under it too.
        let m = measured(words as u64 / 2, words as u64);
        assert_eq!(m.scale(words), words / 2);
        // Fewer rows than measured (a wipe): the rows at the ratio.
        assert_eq!(measured(1_400, 1_000).scale(100), 140);
        // Nothing estimated then: what was held, the growth at the bound.
        assert_eq!(measured(5, 0).scale(4), 5 + 6);
    }

    #[test]
    fn test_the_codes_are_expected_from_their_count_not_the_rows() {
        // 30k vectors at rowid 100k (the rest superseded, forgotten or
        // deleted), then 50 more rows: at most 50 more codes.
        let m = Measured { held: 0, estimated: 0, code_dims: 256, vectors: 30_000, memories: 100_000 };
        assert_eq!(m.vectors_at(100_050), 30_050);
        assert_eq!(expected(0, 100_050, Some(m), |n, dims| n as usize * dims as usize), m.scale(words_estimate(0, 100_050)) + 30_050 * 256);
    }

    #[test]
    fn test_a_measurement_is_taken_again_only_when_it_drifted_by_over_a_quarter() {
        let stored = Measured { held: 2_000, estimated: 1_000, code_dims: 256, vectors: 10, memories: 10 };
        let at = |held, estimated| Measured { held, estimated, ..stored };
        // Grown at the same ratio: still what it says.
        assert!(!stored.drifted(&at(10_000, 5_000)));
        assert!(!stored.drifted(&at(2_400, 1_000)));
        assert!(stored.drifted(&at(2_600, 1_000)));
        assert!(stored.drifted(&at(1_400, 1_000)));
        assert!(stored.drifted(&Measured { code_dims: 384, ..stored }), "other codes");
        assert!(stored.drifted(&Measured { vectors: 20, ..stored }), "more codes than the rows allow");
    }

    #[test]
    fn test_a_measurement_reads_back_and_a_corrupt_one_is_an_error() {
        let m = Measured { held: 12_345_678, estimated: 6_000_000, code_dims: 256, vectors: 7, memories: 9 };
        assert_eq!(Measured::decode(&m.encode()), Ok(m));
        for bad in ["", "1", "1 2 3", "1 2 3 4", "1 2 3 4 5 6", "a 2 3 4 5", "-1 2 3 4 5", "1  2 3 4 5", "1 2 4294967296 4 5"] {
            assert!(Measured::decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn test_room_is_taken_whole_or_not_at_all_and_the_first_request_always_gets_it() {
        let mut w = WorkingSet::new(10 * MB);
        let (big, small, tiny) = (w.ticket(), w.ticket(), w.ticket());
        assert!(w.try_take(big, 40 * MB, 0), "alone, a request over the limit runs");
        assert!(!w.try_take(small, MB, 0), "beside it, nothing large");
        assert!(w.try_take(tiny, WORKING_SET_FLOOR_BYTES - 1, 0), "a small request takes no room");
        assert_eq!(w.held(), 40 * MB);
        w.leave(big);
        assert!(w.try_take(small, 6 * MB, 10), "its turn, and room");
        let more = w.ticket();
        assert!(w.try_take(more, 4 * MB, 10), "up to the limit");
        let over = w.ticket();
        assert!(!w.try_take(over, MB, 10), "over it: refused, nothing taken");
        assert_eq!(w.held(), 10 * MB);
        w.leave(small);
        w.leave(more);
        w.leave(over);
        assert_eq!(w.held(), 0);
    }

    #[test]
    fn test_requests_wait_in_line_so_a_large_one_is_not_passed_over_forever() {
        let mut w = WorkingSet::new(10 * MB);
        let (a, large, small) = (w.ticket(), w.ticket(), w.ticket());
        assert!(w.try_take(a, 4 * MB, 0));
        assert!(!w.try_take(large, 9 * MB, 1), "no room: in line");
        assert!(!w.try_take(small, MB, 2), "room, but behind the large one");
        w.leave(a);
        assert!(!w.try_take(small, MB, 3), "still behind it");
        assert!(w.try_take(large, 9 * MB, 4), "first in line, room made");
        assert!(w.try_take(small, MB, 5), "then the next");
    }

    #[test]
    fn test_a_waiter_that_stopped_asking_and_room_held_too_long_are_reclaimed() {
        let mut w = WorkingSet::new(10 * MB);
        let (a, gone, next) = (w.ticket(), w.ticket(), w.ticket());
        assert!(w.try_take(a, 8 * MB, 0));
        assert!(!w.try_take(gone, 4 * MB, 0), "in line");
        assert!(!w.try_take(next, MB, 0));
        // `gone` never asks again while `next` goes on asking: after a
        // while it leaves the line.
        let mut now = 0;
        while now < STALE_WAITER_MILLIS {
            now += 500;
            assert!(!w.try_take(next, MB, now), "behind `gone` at {now}");
        }
        assert!(w.try_take(next, MB, STALE_WAITER_MILLIS + 1), "the line moved on");
        // `a` never gave its room back.
        let late = w.ticket();
        assert!(!w.try_take(late, 5 * MB, MAX_HOLD_MILLIS));
        assert!(w.try_take(late, 5 * MB, MAX_HOLD_MILLIS + 1), "held too long: taken back");
        assert_eq!(w.held(), 6 * MB);
    }

    #[test]
    fn test_waiters_are_not_forgotten_while_the_isolate_was_blocked() {
        let mut w = WorkingSet::new(10 * MB);
        let (a, first, second) = (w.ticket(), w.ticket(), w.ticket());
        assert!(w.try_take(a, 8 * MB, 0));
        assert!(!w.try_take(first, 4 * MB, 1));
        assert!(!w.try_take(second, MB, 2));
        // Nobody could ask for 5 s (a long synchronous stretch): `first`
        // keeps its place.
        w.leave(a);
        assert!(!w.try_take(second, MB, 5_000), "first asked first");
        assert!(w.try_take(first, 4 * MB, 5_001));
        assert!(w.try_take(second, MB, 5_002));
        w.leave(first);
        w.leave(second);
        // Nor over two stretches of 1.5 s with an ask between them.
        let (b, c, d) = (w.ticket(), w.ticket(), w.ticket());
        assert!(w.try_take(b, 7 * MB, 6_000));
        assert!(!w.try_take(c, 4 * MB, 6_001));
        assert!(!w.try_take(d, 4 * MB, 6_002));
        assert!(!w.try_take(d, 4 * MB, 7_500));
        w.leave(b);
        assert!(!w.try_take(d, 4 * MB, 9_000), "c asked first");
        assert!(w.try_take(c, 4 * MB, 9_001));
    }

    #[test]
    fn test_background_work_takes_room_after_requests_and_at_most_half_of_it() {
        let mut w = WorkingSet::new(10 * MB);
        let (b1, b2, b3, request) = (w.ticket(), w.ticket(), w.ticket(), w.ticket());
        assert!(w.try_take_background(b1, 3 * MB, 0));
        assert!(!w.try_take_background(b2, 3 * MB, 0), "6 MB of background would pass half of 10");
        assert!(w.try_take_background(b2, 2 * MB, 0), "5 MB is half");
        // A request that does not fit waits in line; background work does
        // not pass it.
        assert!(!w.try_take(request, 6 * MB, 1));
        w.leave(b2);
        assert!(!w.try_take_background(b3, MB, 2), "a request waits");
        assert!(w.try_take(request, 6 * MB, 3));
        // Beside a request, background work keeps within its share even
        // when it holds nothing.
        w.leave(b1);
        assert!(!w.try_take_background(b3, 6 * MB, 4), "beside 6 MB held, 6 more would pass half");
        assert!(w.try_take_background(b3, 4 * MB, 4));
        w.leave(b3);
        // One piece of background work may go alone when nothing is held,
        // however large.
        w.leave(request);
        let big = w.ticket();
        assert!(w.try_take_background(big, 12 * MB, 5));
        assert_eq!(w.held(), 12 * MB);
        w.leave(big);
        assert_eq!(w.held(), 0);
    }

    #[test]
    fn test_a_body_grows_its_room_without_waiting_and_alone_without_limit() {
        let mut w = WorkingSet::new(2 * MB);
        let (body, other) = (w.ticket(), w.ticket());
        assert!(w.try_grow(body, MB, 0));
        assert!(w.try_grow(body, 4 * MB, 0), "the only holder grows past the limit");
        assert!(!w.try_take(other, MB, 0));
        w.leave(body);
        assert!(w.try_take(other, MB, 0));
        assert!(!w.try_grow(body, 2 * MB, 0), "beside another, not past the limit");
        assert_eq!(w.held(), MB);
    }

    #[test]
    fn test_before_a_measurement_long_texts_raise_the_estimate_above_the_counts() {
        // No text: under the counts alone (their overheads are in both).
        assert!(estimate_with_text(1_000, 1_000, 0) < estimate(1_000, 1_000));
        // Turns of ~700 bytes (the long-answers style): about 1.3 times
        // the counts; of 32 KB (an import of long turns): about 24 times.
        let at = |per_message: u64| estimate_with_text(1_000, 1_000, 1_000 * per_message) as f64 / estimate(1_000, 1_000) as f64;
        assert!((1.2..1.6).contains(&at(700)), "{}", at(700));
        assert!(at(32_768) > 20.0, "{}", at(32_768));
        assert_eq!(estimate_with_text(u64::MAX, u64::MAX, u64::MAX), usize::MAX);
    }

    #[test]
    fn test_a_body_has_its_grace_plus_its_length_at_the_slowest_rate() {
        assert_eq!(body_deadline_millis(0, BODY_GRACE_MILLIS), BODY_GRACE_MILLIS);
        assert_eq!(body_deadline_millis(BODY_MIN_BYTES_PER_SECOND as usize * 3, 500), 3_500);
        // The published 17 MB limit.
        assert_eq!(body_deadline_millis(17 * 1024 * 1024, BODY_GRACE_MILLIS) / 1_000, 146);
        assert_eq!(body_deadline_millis(usize::MAX, u64::MAX), u64::MAX);
    }

    #[test]
    fn test_the_room_of_a_body_and_of_a_call() {
        assert_eq!(worker_room(WORKING_SET_FLOOR_BYTES / 2 - 1), 0);
        assert_eq!(worker_room(WORKING_SET_FLOOR_BYTES / 2), WORKING_SET_FLOOR_BYTES);
        assert_eq!(object_room(WORKING_SET_FLOOR_BYTES - 1), 0, "a call under the floor takes none");
        assert_eq!(object_room(WORKING_SET_FLOOR_BYTES), 3 * WORKING_SET_FLOOR_BYTES);
    }

    #[test]
    fn test_the_report_shows_the_working_set() {
        let mut w = WorkingSet::new(8 * MB);
        let t = w.ticket();
        assert!(w.try_take(t, 2 * MB, 0));
        w.note_wait();
        w.note_refusal();
        let r = Budget::new(MB).report(7, HeapCounts::default(), &w);
        assert_eq!((r.working_set_bytes, r.working_set_limit_bytes, r.working_set_waits, r.busy_refusals), (2 * MB as u64, 8 * MB as u64, 1, 1));
    }

    #[test]
    fn test_a_zero_budget_keeps_nothing() {
        let mut b = Budget::new(0);
        assert_eq!(b.touch("a", 1, 0, idle), vec!["a".to_string()]);
        assert!(b.touch("b", 0, 0, idle).is_empty(), "nothing held, nothing to clear");
        assert_eq!((b.resident_bytes(), b.resident_profiles()), (0, 0));
    }
}

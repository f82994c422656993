//! The profile Durable Object: one per `{namespace}/{profile}`, owning
//! that profile's SQLite database. Migrations run in `new()`. Every
//! operation arrives as `{name, op, args}` and goes to the core's
//! dispatch table; the alarm drains the outbox. The local vector index's
//! codes live here between calls.

use crate::cloudflare::config::Config;
use crate::cloudflare::do_sql::DoSql;
use crate::cloudflare::providers::Providers;
use crate::cloudflare::NDJSON;
use crate::core::catalog::CatalogCall;
use crate::core::error::Error;
#[cfg(feature = "bench")]
use crate::core::local::bench;
use crate::core::local::vector::Packed;
use crate::core::ops::MemoryView;
use crate::core::ops::{Answer, Limits, Op, Profile};
use crate::core::portable::SpooledParts;
use crate::core::ports::VectorIndex;
use crate::core::recall::directory::TurnDirectory;
use crate::core::resident::{Budget, Measured, ProfileState, Residents};
use crate::core::store::{META_CATALOGED, META_NAME};
use serde_json::{json, Value};
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use worker::*;

use crate::core::rest::Asks;
/// The internal request a Worker sends its profile object.
use crate::core::rest::ObjectCall as Call;

#[durable_object]
pub struct ProfileObject {
    state: State,
    env: Env,
    sql: DoSql,
    /// Set when the configuration does not read or migrations failed:
    /// every call reports it, and the alarm drains nothing.
    broken: Option<Error>,
    /// Read once per isolate and shared by its objects ([`Config::shared`]).
    config: Rc<Config>,
    /// What the profile keeps in memory between requests, within the
    /// isolate's budget (see [`Resident`]).
    resident: Rc<Resident>,
    /// The isolate's working set, as the pipelines take room in it
    /// (a consolidation window while its reasoner decides).
    room: crate::cloudflare::working_set::Isolate,
    /// Whether the profile's name is known to be stored in `meta` (saves
    /// a write, and so a storage flush, on every call).
    name_saved: Cell<bool>,
    /// Whether this instance has set its alarm for what is due (done after
    /// every write, and on the first call of any kind).
    alarm_checked: Cell<bool>,
    /// `BENCH=1` in a build with the `bench` feature: answer the
    /// benchmark operations (core::local::bench). The production build has
    /// neither.
    #[cfg(feature = "bench")]
    bench: bool,
}

fn now() -> i64 {
    js_sys::Date::now() as i64
}

/// How soon after a recall that found its profile cold the alarm builds
/// the profile's state, in milliseconds.
const WARM_DELAY_MS: i64 = 1;

/// What a profile object keeps in memory between requests: caches over
/// its SQLite database, each rebuilt from there (and from the snapshots
/// kept there) when missing. The isolate's [`Budget`] decides whose stay.
///
/// A profile is *warm* while its directory is loaded: its requests use
/// the directory and the vector codes in memory. Otherwise it answers from
/// SQLite alone (the same answers, core::recall::places), and a recall
/// asks the alarm to warm it up after the response, if its estimated
/// state fits the budget: no request ever waits for a load.
#[derive(Default)]
pub struct Resident {
    /// The local vector index's codes, loaded on the first vector query
    /// and kept in step by its writes (see core::local::vector).
    packed: RefCell<Packed>,
    /// Where each message sits and the words of every message and
    /// memory: loaded on first use (from its snapshot when there is one),
    /// kept in step at the start of each recall and by the alarm's drain,
    /// which also saves it (see core::recall::directory).
    turns: TurnDirectory,
    /// Requests (and alarms) of the profile under way: a busy profile is
    /// never evicted.
    busy: Cell<u32>,
    /// A recall found the profile cold: the next alarm builds its state,
    /// if it fits.
    warm_wanted: Cell<bool>,
    /// Before its state is first measured: the estimate from its texts'
    /// size, for the highest rowids it was read at.
    unmeasured: Cell<Option<((u64, u64), usize)>>,
    /// The benchmark keeps the profile on SQLite alone (`benchLean`), to
    /// measure those paths beside the resident ones.
    #[cfg(feature = "bench")]
    pinned_lean: Cell<bool>,
}

impl Resident {
    /// Whether the profile's state is loaded (see [`Resident`]).
    fn is_warm(&self) -> bool {
        self.turns.is_loaded()
    }

    /// Whether the profile may be warmed up.
    fn may_warm(&self) -> bool {
        #[cfg(feature = "bench")]
        if self.pinned_lean.get() {
            return false;
        }
        true
    }

    fn heap_bytes(&self) -> usize {
        self.turns.heap_bytes().saturating_add(self.packed.try_borrow().map_or(0, |p| p.heap_bytes()))
    }

    /// What the directory holds against the counts' estimate for the
    /// rowids it read, and the vector codes' dimensions, when the state is
    /// loaded whole (with the `local_index`, its vector codes too).
    fn measured_whole(&self, local_index: bool) -> Option<Measured> {
        let (messages, memories) = self.turns.read_up_to()?;
        let (code_dims, vectors) = match self.packed.try_borrow() {
            Ok(p) if local_index && !p.is_loaded() => return None,
            Ok(p) if local_index => (u32::try_from(p.dims()).ok()?, p.len() as u64),
            Ok(_) => (0, 0),
            Err(_) => return None,
        };
        let estimated = crate::core::resident::words_estimate(messages, memories) as u64;
        Some(Measured { held: self.turns.heap_bytes() as u64, estimated, code_dims, vectors, memories })
    }

    /// Frees what the profile keeps (whatever is not lent out right now).
    fn clear(&self) {
        self.turns.try_clear();
        if let Ok(mut packed) = self.packed.try_borrow_mut() {
            packed.clear();
        }
    }
}

/// Marks a profile busy for as long as it lives.
struct Busy(Rc<Resident>);

impl Busy {
    fn new(resident: &Rc<Resident>) -> Busy {
        resident.busy.set(resident.busy.get().saturating_add(1));
        Busy(resident.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.set(self.0.busy.get().saturating_sub(1));
    }
}

impl ProfileState for Resident {
    fn busy(&self) -> bool {
        self.busy.get() > 0
    }
    fn clear(&self) {
        Resident::clear(self)
    }
}

thread_local! {
    /// Every profile object of this isolate (they share the Wasm memory
    /// and so this value): the budget, and where each one's state is.
    static ISOLATE: RefCell<Residents<Resident>> = RefCell::new(Residents::default());
}

/// The size of the Wasm linear memory (its high-water mark: it never
/// shrinks).
fn wasm_memory_bytes() -> u64 {
    #[cfg(target_arch = "wasm32")]
    let pages = core::arch::wasm32::memory_size(0);
    #[cfg(not(target_arch = "wasm32"))]
    let pages = 0usize;
    (pages as u64).saturating_mul(65_536)
}

/// The time for the isolate's [`Budget`], in milliseconds.
fn isolate_millis() -> u64 {
    u64::try_from(now()).unwrap_or(0)
}

/// After a request of profile `name`: records what it keeps now, and
/// clears the least recently used profiles' state (its own too, when it
/// alone is over the budget) until the isolate's total fits `limit`.
fn settle(name: &str, resident: &Rc<Resident>, limit: usize) {
    let bytes = resident.heap_bytes();
    evict(limit, name, resident, |budget, busy| budget.touch(name, bytes, isolate_millis(), busy));
}

/// Whether profile `name` may still be warmed: not known to need more than
/// the budget.
fn may_fit(name: &str) -> bool {
    ISOLATE.with(|i| i.try_borrow().map_or(true, |i| i.budget.may_fit(name, isolate_millis())))
}

/// Before profile `name` builds its state, estimated at `estimate` bytes:
/// whether it may (it fits the budget alone); if so, the least recently
/// used profiles' state is cleared first so that it fits beside the rest.
fn admit(name: &str, resident: &Rc<Resident>, limit: usize, estimate: usize) -> bool {
    let mut admitted = false;
    evict(limit, name, resident, |budget, busy| match budget.make_room(name, estimate, isolate_millis(), busy) {
        Some(evicted) => {
            admitted = true;
            evicted
        }
        None => Vec::new(),
    });
    admitted
}

/// Whether the isolate knows what profile `name` held, or was refused for.
fn known(name: &str) -> bool {
    ISOLATE.with(|i| i.try_borrow().is_ok_and(|i| i.budget.knows(name, isolate_millis())))
}

/// Records `resident` as profile `name`'s state in the isolate's
/// registry, asks the budget (at `limit`) which profiles to evict
/// (`decide`, told which are busy: a request of theirs is under way) and
/// clears their state ([`Residents::settle`]).
fn evict(limit: usize, name: &str, resident: &Rc<Resident>, decide: impl FnOnce(&mut Budget, &dyn Fn(&str) -> bool) -> Vec<String>) {
    ISOLATE.with(|isolate| {
        if let Ok(mut isolate) = isolate.try_borrow_mut() {
            isolate.settle(limit, name, resident, isolate_millis(), decide);
        }
    });
}

/// The isolate's figures and what `resident` keeps, for `stats`.
fn memory_view(resident: &Resident, working_set_limit: usize) -> MemoryView {
    let working = crate::cloudflare::working_set::report(working_set_limit);
    let isolate = ISOLATE.with(|i| i.try_borrow().ok().map(|i| i.budget.report(wasm_memory_bytes(), crate::cloudflare::heap::counts(), &working)));
    MemoryView { resident_bytes: resident.heap_bytes() as u64, isolate }
}

/// Operations that use the profile's resident state when it is warm, and
/// ask for it when it is not.
fn wants_state(op: &str) -> bool {
    Op::parse(op).is_some_and(Op::uses_state)
}

/// Operations that write nothing, so need no alarm check after them.
fn read_only(op: &str) -> bool {
    Op::parse(op).is_some_and(|op| !op.writes()) || is_bench_read(op)
}

/// A benchmark operation that writes nothing (the `bench` feature only).
#[cfg(feature = "bench")]
fn is_bench_read(op: &str) -> bool {
    bench::is_bench_op(op) && op != "benchDrain"
}

#[cfg(not(feature = "bench"))]
fn is_bench_read(_: &str) -> bool {
    false
}

impl ProfileObject {
    /// The core's view of this profile for one call or alarm, at the
    /// current time.
    fn profile<'a>(&'a self, name: &'a str, providers: &'a Providers, index: &'a dyn VectorIndex, warm: bool) -> Profile<'a> {
        Profile {
            name,
            sql: &self.sql,
            reasoner: providers.reasoner(),
            embedder: providers.embedder(),
            index,
            turns: warm.then_some(&self.resident.turns),
            now: now(),
            limits: Limits {
                max_memories: self.config.max_memories,
                delete_grace_millis: self.config.delete_grace_millis,
                job_retry_base_millis: self.config.job_retry_base_millis,
                consolidate_every: self.config.consolidate_every,
            },
            memory: MemoryView::default(),
            room: &self.room,
        }
    }

    /// Runs one call; its result as JSON text.
    async fn run(&self, call: Call) -> std::result::Result<Answer, Error> {
        if let Some(e) = &self.broken {
            return Err(e.clone());
        }
        let name = call.name.clone();
        let warm = self.resident.is_warm();
        let asks_warmth = !warm && wants_state(&call.op) && may_fit(&name);
        let before = (!read_only(&call.op)).then(|| self.rowids_if_known(&name)).flatten();
        let busy = Busy::new(&self.resident);
        let out = self.run_call(call, warm).await;
        drop(busy);
        self.forget_if_shrunk(&name, before);
        settle(&name, &self.resident, self.config.memory_budget_bytes);
        if asks_warmth && out.is_ok() {
            self.ask_warmth().await?;
        }
        out
    }

    /// The profile's highest message and memory rowids (what its state's
    /// estimate reads) before a write or a drain, read only when the
    /// isolate knows something of it to forget; `None` otherwise, or when
    /// they do not read.
    fn rowids_if_known(&self, name: &str) -> Option<(u64, u64)> {
        known(name).then(|| self.highest_rowids()).flatten()
    }

    fn highest_rowids(&self) -> Option<(u64, u64)> {
        match crate::core::store::Store::new(&self.sql, now()).highest_rowids() {
            Ok(rowids) => Some(rowids),
            Err(e) => {
                // Only the budget's check for a wipe goes without them.
                console_error!("profile rowids do not read ({e}): the isolate's budget is not told of a wipe by this call");
                None
            }
        }
    }

    /// After a write or a drain from rowids `before` ([`Self::rowids_if_known`]):
    /// one that lowered them (a wipe, even one whose drain then failed; the
    /// newest rows deleted) has the budget forget what the profile held
    /// ([`crate::core::resident::Budget::forget_if_lowered`]).
    fn forget_if_shrunk(&self, name: &str, before: Option<(u64, u64)>) {
        let (Some(before), Some(after)) = (before, before.and_then(|_| self.highest_rowids())) else { return };
        ISOLATE.with(|i| {
            if let Ok(mut i) = i.try_borrow_mut() {
                i.budget.forget_if_lowered(name, before, after);
            }
        });
    }

    /// Asks the next alarm, set to ring at once unless one is due sooner,
    /// to build the profile's state (see [`Resident`]).
    async fn ask_warmth(&self) -> std::result::Result<(), Error> {
        self.resident.warm_wanted.set(true);
        let storage = self.state.storage();
        let alarm_error = |e: worker::Error| Error::storage(format!("failed to set the profile's alarm: {e}"));
        let current = storage.get_alarm().await.map_err(alarm_error)?;
        if current.is_none_or(|at| at > now().saturating_add(WARM_DELAY_MS)) {
            storage.set_alarm(WARM_DELAY_MS).await.map_err(alarm_error)?;
        }
        Ok(())
    }

    async fn run_call(&self, call: Call, warm: bool) -> std::result::Result<Answer, Error> {
        let providers = Providers::new(&self.config, &self.env, &call.name)?;
        let index = providers.index(&self.sql, &self.resident.packed, warm);
        let mut profile = self.profile(&call.name, &providers, index.as_ref(), warm);
        if Op::parse(&call.op) == Some(Op::Stats) {
            profile.memory = memory_view(&self.resident, self.config.working_set_bytes);
        }
        let out = match self.bench_call(&profile, &call).await {
            Some(out) => out.map(Answer::Json),
            None => self.checked_then_run(&profile, &call.name, &call.op, call.args, Asks { unread: call.unread, pieces: call.pieces }).await,
        };
        let after = self.after_call(&profile, &call.name, &call.op, out.is_ok()).await;
        if let (Err(_), Ok(Answer::File(spooled))) = (&after, &out) {
            // The export is not answered: it leaves the spool.
            if let Err(e) = profile.store().drop_export(spooled.export) {
                console_error!("failed to remove an export left unanswered (the next instance clears it): {e}");
            }
        }
        match (out, after) {
            // The call's own refusal is what the caller needs (a 400 stays
            // a 400); the alarm's failure beside it is logged, and the
            // next write sets the alarm again.
            (Err(e), Err(alarm)) => {
                console_error!("profile {}: after a failed {}, its alarm could not be set either: {alarm}", call.name, call.op);
                Err(e)
            }
            (out, after) => after.and(out),
        }
    }

    /// What follows a call: the profile's name stored on its first
    /// success, and its alarm set after a write.
    async fn after_call(&self, profile: &Profile<'_>, name: &str, op: &str, succeeded: bool) -> std::result::Result<(), Error> {
        if succeeded {
            self.save_name(profile, name)?;
        }
        // An instance's first call sets the alarm, a read's too: a job
        // parked as of a kind the last build did not know (a rollback) is
        // due again under this one, and no write may come to set it.
        if !read_only(op) {
            self.schedule(profile).await?;
            self.alarm_checked.set(true);
        } else if !self.alarm_checked.get() {
            // A read that did its work is answered: the alarm is the
            // instance's own business, logged when it cannot be set and
            // tried again on the next call.
            match self.schedule(profile).await {
                Ok(()) => self.alarm_checked.set(true),
                Err(e) => console_error!("profile {name}: its alarm could not be set on this instance's first call ({e}); tried again on the next"),
            }
        }
        Ok(())
    }

    /// Stores the profile's name, once: the alarm needs it (its providers
    /// address the profile's vectors by it), so a call that cannot store
    /// it fails.
    fn save_name(&self, profile: &Profile<'_>, name: &str) -> std::result::Result<(), Error> {
        if !self.name_saved.get() {
            let store = profile.store();
            if store.meta_get(META_NAME)?.as_deref() != Some(name) {
                store.meta_set(META_NAME, name)?;
            }
            self.name_saved.set(true);
        }
        Ok(())
    }

    /// Before an ingest runs: the name stored and an alarm set for no later
    /// than its re-extraction guard falls due
    /// ([`crate::core::ops::INGEST_GUARD_MILLIS`]). An ingest the object
    /// does not live to finish (a restart, an eviction, a deploy) leaves
    /// its messages stored and its guard queued, and only an alarm drains
    /// the guard: without one set before, nothing would until another
    /// write came.
    async fn arm_ingest_guard(&self, profile: &Profile<'_>, name: &str) -> std::result::Result<(), Error> {
        self.save_name(profile, name)?;
        self.alarm_by(now().saturating_add(crate::core::ops::INGEST_GUARD_MILLIS)).await
    }

    /// Decodes and checks a call (its input, and the profile's room for
    /// what it adds) before anything is written, then (for a write that
    /// may create the profile) records it in the catalog, then runs it: a
    /// call refused with 4xx creates no namespace and purges nothing.
    async fn checked_then_run(&self, profile: &Profile<'_>, name: &str, op: &str, args: Value, asks: Asks) -> std::result::Result<Answer, Error> {
        let op = Op::parse(op).ok_or_else(|| Error::not_found(format!("no operation named {}", crate::core::api::quoted(op))))?;
        let call = crate::core::op::Call::decode(op, args)?;
        let purge_pending = op.creates() && self.purge_pending(profile, name).await?;
        let mut prepared = profile.prepare_as(call, purge_pending)?;
        if asks.unread {
            prepared = prepared.unread();
        }
        if asks.pieces {
            prepared = prepared.in_pieces();
        }
        profile.admit(&prepared)?;
        if prepared.creates() {
            self.catalog(profile, name, false).await?;
        }
        if op == Op::RestoreProfile {
            self.relist(profile, name).await?;
        }
        if op == Op::Ingest {
            self.arm_ingest_guard(profile, name).await?;
        }
        let answer = profile.answer_prepared(prepared).await?;
        // A profile marked for deletion leaves its namespace's list of
        // profiles. (Over the binding, deleting a profile never written
        // marks nothing.) A failed catalog call is an error the caller
        // retries: the deletion again keeps its mark and unlists it.
        if op == Op::DeleteProfile && profile.store().deletion_mark()?.is_some() {
            self.uncatalog(profile, name).await?;
        }
        Ok(answer)
    }

    /// Before a restore of a profile marked for deletion: lists it again
    /// (keeping when it was first recorded), so that a failed catalog call
    /// leaves it marked, to be restored again. A profile whose namespace
    /// was deleted meanwhile is purged instead (the restore then finds
    /// nothing to restore), and its namespace is not created again.
    async fn relist(&self, profile: &Profile<'_>, name: &str) -> std::result::Result<(), Error> {
        if profile.store().deletion_mark()?.is_none() {
            return Ok(());
        }
        if self.purge_pending(profile, name).await? {
            profile.purge_now()
        } else {
            self.catalog(profile, name, true).await
        }
    }

    /// Whether the catalog will have a write purge this profile first (its
    /// namespace was deleted and its purge has not run): asked, without
    /// registering anything, before the write is checked, so the check
    /// counts what the profile holds now for nothing. Once registered, a
    /// profile asks no more.
    async fn purge_pending(&self, profile: &Profile<'_>, name: &str) -> std::result::Result<bool, Error> {
        if profile.store().meta_get(META_CATALOGED)?.is_some() {
            return Ok(false);
        }
        let answer: crate::core::catalog::Registration = self.ask_catalog(name, |namespace, profile| CatalogCall::PurgePending { namespace, profile }).await?;
        Ok(answer.purge_first)
    }

    /// The catalog's reply to `call`, made for this profile (`name` is
    /// `{namespace}/{profile}`).
    async fn ask_catalog<T: serde::de::DeserializeOwned>(&self, name: &str, call: impl FnOnce(String, String) -> CatalogCall) -> std::result::Result<T, Error> {
        let (namespace, profile) = name.split_once('/').ok_or_else(|| Error::storage("a profile object's name has no namespace"))?;
        let text = crate::cloudflare::call_catalog(&self.env, &call(namespace.to_string(), profile.to_string())).await?;
        crate::core::catalog::reply(&text)
    }

    /// Before a write that may create the profile, or its restore
    /// (`restored`): records it in the namespace catalog (which creates a
    /// namespace nobody created), once. A profile of a deleted namespace
    /// whose purge has not run yet is purged first.
    async fn catalog(&self, profile: &Profile<'_>, name: &str, restored: bool) -> std::result::Result<(), Error> {
        let store = profile.store();
        if store.meta_get(META_CATALOGED)?.is_some() {
            return Ok(());
        }
        let registration: crate::core::catalog::Registration =
            self.ask_catalog(name, |namespace, profile| CatalogCall::Register { namespace, profile, restored }).await?;
        if registration.purge_first {
            profile.purge_now()?;
        }
        store.meta_set(META_CATALOGED, "1")
    }

    /// Once the profile is marked for deletion: it leaves the catalog's
    /// list, and forgets it was recorded, so that its restore or its next
    /// write records it again.
    async fn uncatalog(&self, profile: &Profile<'_>, name: &str) -> std::result::Result<(), Error> {
        profile.store().meta_delete(META_CATALOGED)?;
        self.ask_catalog::<()>(name, |namespace, profile| CatalogCall::Unregister { namespace, profile }).await?;
        // A write that came in while the catalog answered started the
        // profile anew and recorded it, perhaps before this removal reached
        // the catalog: it is recorded again.
        if profile.store().deletion_mark()?.is_none() {
            profile.store().meta_delete(META_CATALOGED)?;
            self.catalog(profile, name, false).await?;
        }
        Ok(())
    }

    /// A benchmark operation's answer, when `call` is one and the Worker
    /// answers them (`BENCH=1` in a build with the `bench` feature).
    #[cfg(feature = "bench")]
    async fn bench_call(&self, profile: &Profile<'_>, call: &Call) -> Option<std::result::Result<String, Error>> {
        if !(self.bench && bench::is_bench_op(&call.op)) {
            return None;
        }
        Some(self.bench_op(profile, call).await.map(|v| v.to_string()))
    }

    /// The production build answers no benchmark operation.
    #[cfg(not(feature = "bench"))]
    async fn bench_call(&self, _: &Profile<'_>, _: &Call) -> Option<std::result::Result<String, Error>> {
        None
    }

    /// The benchmark operations, plus two that need the platform: the
    /// Wasm memory size and dropping the index's memory copy.
    #[cfg(feature = "bench")]
    async fn bench_op(&self, profile: &Profile<'_>, call: &Call) -> std::result::Result<Value, Error> {
        match call.op.as_str() {
            "benchMemory" => {
                #[cfg(target_arch = "wasm32")]
                let wasm = core::arch::wasm32::memory_size(0) * 65_536;
                #[cfg(not(target_arch = "wasm32"))]
                let wasm = 0usize;
                let p = self.resident.packed.borrow();
                Ok(
                    json!({ "wasmBytes": wasm, "indexBytes": p.heap_bytes(), "indexVectors": p.len(), "indexLoaded": p.is_loaded(), "directoryBytes": self.resident.turns.heap_bytes() }),
                )
            }
            "benchShortlist" => {
                // Passes 1 and 2 of the local index, without SQL.
                let q = call.args.get("query").and_then(Value::as_str).unwrap_or_default().to_string();
                let e = profile.embedder.embed(&[q]).await?;
                let repeat = call.args.get("repeat").and_then(Value::as_u64).unwrap_or(1);
                let mut packed = self.resident.packed.borrow_mut();
                if !packed.is_loaded() {
                    crate::core::local::vector::load(&self.sql, &mut packed)?;
                }
                let mut n = 0;
                for _ in 0..repeat {
                    n = packed.shortlist(&e[0], crate::core::local::vector::FIRST_PASS, 74).len();
                }
                Ok(json!({ "out": n }))
            }
            "benchReset" => {
                self.resident.clear();
                Ok(json!({}))
            }
            "benchLean" => {
                // On SQLite alone until `benchWarm`.
                self.resident.clear();
                self.resident.pinned_lean.set(true);
                Ok(json!({}))
            }
            "benchWarm" => {
                // Builds the profile's state now (as the alarm does when
                // asked), whatever the budget says.
                self.resident.pinned_lean.set(false);
                let directory = self.resident.turns.sync(&self.sql)?.heap_bytes();
                let mut packed = self.resident.packed.borrow_mut();
                if !packed.is_loaded() {
                    crate::core::local::vector::load(&self.sql, &mut packed)?;
                }
                Ok(json!({ "directoryBytes": directory, "indexBytes": packed.heap_bytes() }))
            }
            op => bench::dispatch(profile, op, &call.args).await,
        }
    }

    /// Makes sure an alarm is set for the earliest pending job or expiry,
    /// no sooner than the drain delay after this write (see
    /// [`crate::core::background::next_alarm`]).
    async fn schedule(&self, profile: &Profile<'_>) -> std::result::Result<(), Error> {
        let Some(due) = profile.next_due()? else { return Ok(()) };
        self.alarm_by(due).await
    }

    /// Makes sure the alarm rings no later than `due` (epoch millis), and
    /// no sooner than the drain delay from now
    /// ([`crate::core::background::next_alarm`]).
    async fn alarm_by(&self, due: i64) -> std::result::Result<(), Error> {
        let storage = self.state.storage();
        let alarm_error = |e: worker::Error| Error::storage(format!("failed to set the profile's alarm: {e}"));
        let current = storage.get_alarm().await.map_err(alarm_error)?;
        let now = now();
        if let Some(at) = crate::core::background::next_alarm(due, now, current) {
            // An integer is an offset from now (worker's ScheduledTime).
            storage.set_alarm((at - now).max(1)).await.map_err(alarm_error)?;
        }
        Ok(())
    }
}

/// How long a broken object's alarm waits before it looks again.
const BROKEN_RETRY_MILLIS: i64 = 15 * 60 * 1000;
/// When the alarm comes back after a drain that failed as a whole (a
/// storage error; a job's own failure is retried by the job's backoff).
const DRAIN_RETRY_MILLIS: i64 = 5 * 60 * 1000;

impl DurableObject for ProfileObject {
    fn new(state: State, env: Env) -> Self {
        let sql = DoSql::new(state.storage());
        // No export is being read out of a new instance: what an earlier
        // one left spooled goes.
        let migrated = crate::core::store::migrate(&sql).and_then(|()| crate::core::store::Store::new(&sql, now()).clear_export_spool());
        // A configuration that does not read refuses every call, with its
        // error; the defaults only stand in for it.
        let (config, broken) = match Config::shared(&env) {
            Ok(config) => (config, migrated.err()),
            Err(e) => (Rc::new(Config::defaults()), Some(e)),
        };
        #[cfg(feature = "bench")]
        let bench = env.var("BENCH").map(|v| v.to_string() == "1").unwrap_or(false);
        let room = crate::cloudflare::working_set::Isolate::new(config.working_set_bytes, config.working_set_wait_millis);
        let resident = Rc::new(Resident::default());
        resident.turns.hold_within(config.memory_budget_bytes);
        ProfileObject {
            state,
            env,
            sql,
            broken,
            room,
            config,
            resident,
            name_saved: Cell::new(false),
            alarm_checked: Cell::new(false),
            #[cfg(feature = "bench")]
            bench,
        }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        // Read as text and parsed by serde_json, never by the platform's
        // JSON.parse: an integer above 2^53 (a 64-bit id in metadata) stays
        // the number the caller sent.
        let header = req.headers().get(crate::core::rest::CALL_HEADER).ok().flatten();
        // Room for the call's working memory, taken before its text is
        // read: an internal call always says its size, and one that does
        // not is refused, never let in as taking no room.
        let Some(bytes) = req.headers().get(crate::core::rest::CALL_BYTES_HEADER).ok().flatten().and_then(|n| n.parse::<usize>().ok()) else {
            return reply(Err(Error::storage("an internal call that does not say its size")));
        };
        let need = crate::core::resident::object_room(bytes);
        let room = match crate::cloudflare::working_set::take(need, self.config.working_set_bytes, self.config.working_set_wait_millis, "this call").await {
            Ok(room) => room,
            Err(e) => return reply(Err(e)),
        };
        let call = match req.text().await.map(|t| match &header {
            // An import's file, its call beside it.
            Some(call) => Call::read_posted(call, t),
            None => Call::read(&t),
        }) {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return reply(Err(e)),
            Err(e) => return reply(Err(Error::invalid(format!("bad internal call: {e}")))),
        };
        let answered = answer(self.run(call).await, &self.state);
        drop(room);
        answered
    }

    async fn alarm(&self) -> Result<Response> {
        if self.broken.is_some() {
            // Nothing drains under a configuration that does not read (or
            // a schema that did not migrate); the alarm comes back later
            // rather than failing until the platform drops it, so the
            // work waiting (removals, a purge) resumes once it is fixed.
            self.state.storage().set_alarm(BROKEN_RETRY_MILLIS).await?;
            return Response::ok("not drained: the object is broken (see any call's error)");
        }
        // Without its name the profile cannot reach its vectors: the alarm
        // refuses to run rather than drain under an empty one. A name that
        // did not read (storage) comes back as a failed drain does.
        let name = match crate::core::store::Store::new(&self.sql, now()).meta_get(META_NAME) {
            Ok(Some(name)) => name,
            Ok(None) => return Err(worker::Error::RustError("the profile's name is not stored: nothing to drain".into())),
            Err(e) => return self.drain_later("the profile", &format!("its name did not read: {e}")).await,
        };
        let was_warm = self.resident.is_warm();
        let warm = if was_warm {
            true
        } else if self.resident.warm_wanted.replace(false) && self.resident.may_warm() {
            match self.admit(&name) {
                Ok(admitted) => admitted,
                Err(e) => return self.drain_later(&name, &format!("its admission to memory failed: {e}")).await,
            }
        } else {
            false
        };
        let before = self.rowids_if_known(&name);
        let busy = Busy::new(&self.resident);
        let report = self.drain(&name, warm).await;
        drop(busy);
        if warm && !was_warm {
            self.measure(&name);
        }
        self.forget_if_shrunk(&name, before);
        settle(&name, &self.resident, self.config.memory_budget_bytes);
        match report {
            Ok(report) => {
                if let Some(trouble) = report.trouble() {
                    console_error!("profile {name}: the drain finished, but {trouble}");
                }
                if let Some(at) = report.next_at {
                    self.state.storage().set_alarm((at - now()).max(1)).await?;
                }
                Response::ok("drained")
            }
            // The error is kept in the profile (`stats().drain_error`).
            Err(e) => self.drain_later(&name, &format!("the drain failed: {e}")).await,
        }
    }
}

impl ProfileObject {
    /// The alarm's answer when it could not drain: logged, and the alarm
    /// set again in [`DRAIN_RETRY_MILLIS`]. The platform retries a failing
    /// alarm a few times, then drops it, and only a later write would set
    /// it again: the alarm comes back on its own instead.
    async fn drain_later(&self, name: &str, why: &str) -> Result<Response> {
        console_error!("profile {name}: {why}; retried in {} s", DRAIN_RETRY_MILLIS / 1000);
        self.state.storage().set_alarm(DRAIN_RETRY_MILLIS).await?;
        Response::ok("not drained: retried later")
    }
}

impl ProfileObject {
    /// The alarm's work: the drain (failed jobs are recorded on the jobs;
    /// the next alarm retries them after their backoff).
    /// A `warm` profile's drain keeps its directory in step (and so builds
    /// it, when it was asked for) and its vector codes loaded.
    async fn drain(&self, name: &str, warm: bool) -> std::result::Result<crate::core::background::DrainReport, Error> {
        let providers = Providers::new(&self.config, &self.env, name)?;
        let index = providers.index(&self.sql, &self.resident.packed, warm);
        let report = self.profile(name, &providers, index.as_ref(), warm).drain().await?;
        if warm && providers.local_index() {
            let mut packed = self.resident.packed.borrow_mut();
            if !packed.is_loaded() {
                // A cache over SQLite: a load that fails leaves the codes
                // unloaded (recall reads them from SQLite) and must not
                // undo the drain's report, whose next time sets the alarm.
                if let Err(e) = crate::core::local::vector::load(&self.sql, &mut packed) {
                    console_error!("profile {name}: the vector codes were not loaded after the drain: {e}");
                }
            }
        }
        Ok(report)
    }

    /// Whether profile `name` may build its state now: what it is
    /// expected to hold (its counts, scaled by its last measurement) fits
    /// the budget, room made for it.
    fn admit(&self, name: &str) -> Result<bool> {
        let store = crate::core::store::Store::new(&self.sql, now());
        let (messages, memories) = store.highest_rowids().map_err(|e| worker::Error::RustError(e.to_string()))?;
        // A measurement that does not read goes by the counts alone this
        // time (the state is measured again once built, over it), rather
        // than failing the drain it is asked for in.
        let measured = store.state_measured().unwrap_or_else(|e| {
            console_error!("profile {name}: its state's last measurement does not read ({e}); estimated from its counts");
            None
        });
        let local_index = self.config.index == crate::cloudflare::config::IndexKind::Local;
        let codes = |n: u64, dims: u32| if local_index { Packed::heap_bytes_for(usize::try_from(n).unwrap_or(usize::MAX), dims as usize) } else { 0 };
        let expected = match measured {
            Some(m) => crate::core::resident::expected(messages, memories, Some(m), codes),
            None => self.unmeasured_estimate(name, &store, messages, memories),
        };
        Ok(admit(name, &self.resident, self.config.memory_budget_bytes, expected))
    }

    /// A never-measured profile's state, from its counts and its texts'
    /// size (read in the alarm, once for the rows it has: a profile
    /// refused as too large asks again every ten minutes). A read that
    /// fails goes by the counts alone, rather than failing the drain.
    fn unmeasured_estimate(&self, name: &str, store: &crate::core::store::Store<'_>, messages: u64, memories: u64) -> usize {
        if let Some(((m, n), bytes)) = self.resident.unmeasured.get() {
            if (m, n) == (messages, memories) {
                return bytes;
            }
        }
        let bytes = match store.text_bytes() {
            Ok(text) => crate::core::resident::estimate_with_text(messages, memories, text),
            Err(e) => {
                console_error!("profile {name}: its texts' size does not read ({e}); its state estimated from its counts");
                return crate::core::resident::estimate(messages, memories);
            }
        };
        self.resident.unmeasured.set(Some(((messages, memories), bytes)));
        bytes
    }

    /// After the alarm built the profile's state afresh: records what it
    /// holds when it has moved from the stored measurement (see
    /// [`Measured`]), for the isolates that build it next. Only a fresh
    /// build is measured: one fed since holds its growth's slack, and one
    /// not yet in step with a wipe holds what the wipe removed. A cache's
    /// figure: a write that fails costs the drain nothing.
    fn measure(&self, name: &str) {
        let local_index = self.config.index == crate::cloudflare::config::IndexKind::Local;
        let Some(measured) = self.resident.measured_whole(local_index) else { return };
        let store = crate::core::store::Store::new(&self.sql, now());
        // One that does not read is said, and replaced.
        let recorded = match store.state_measured() {
            Ok(Some(stored)) if !stored.drifted(&measured) => Ok(()),
            Ok(_) => store.set_state_measured(&measured),
            Err(e) => {
                console_error!("profile {name}: its state's last measurement does not read ({e}); replaced");
                store.set_state_measured(&measured)
            }
        };
        if let Err(e) = recorded {
            console_error!("profile {name}: its state's size was not recorded (the next isolate estimates it from its counts): {e}");
        }
    }
}

/// The reply to the Worker: `{"ok": result}` (the result's JSON text
/// spliced in as it is) or `{"error": {code, message}}`.
/// A profile call's reply: [`reply`]; for an export the NDJSON file as it
/// is (typed `application/x-ndjson`, which the Worker passes on unread;
/// see [`crate::core::ops::Answer`]), streamed from the spool; for a
/// result in pieces, the pieces as they are, marked by
/// [`crate::core::rest::PIECES_HEADER`].
fn answer(out: std::result::Result<Answer, Error>, state: &State) -> Result<Response> {
    match out {
        Ok(Answer::File(spooled)) => {
            // Each part is read as the platform asks for it, copied out and
            // dropped. Made first: should the reply fail, the export leaves
            // the spool as the parts are dropped.
            let parts = SpooledParts::new(DoSql::new(state.storage()), spooled, |e| {
                console_error!("failed to remove an export read out in part (the next instance clears it): {e}")
            });
            let headers = Headers::new();
            headers.set("content-type", NDJSON)?;
            let stream = futures::stream::iter(parts.map(|part| part.map_err(|e| worker::Error::RustError(e.to_string()))));
            Ok(Response::from_stream(stream)?.with_headers(headers))
        }
        // The result's text as it is, copied out of the Wasm memory now
        // (see [`crate::cloudflare::js_body`]); the header says so.
        Ok(Answer::Pieces(pieces)) => {
            let headers = Headers::new();
            headers.set("content-type", "application/json")?;
            headers.set(crate::core::rest::PIECES_HEADER, "1")?;
            Ok(Response::builder().with_headers(headers).stream(crate::cloudflare::js_body(pieces.into_pieces())?))
        }
        Ok(Answer::Json(text)) => reply(Ok(text)),
        Err(e) => reply(Err(e)),
    }
}

pub(crate) fn reply(out: std::result::Result<String, Error>) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    match out {
        // Copied out around the result as it is: a result of megabytes
        // (an ingest's report, a recall's) is written in a buffer of its
        // length, which one more byte would grow to twice that.
        Ok(result) => {
            let pieces = vec![b"{\"ok\":".to_vec(), result.into_bytes(), b"}".to_vec()];
            Ok(Response::builder().with_headers(headers).stream(crate::cloudflare::js_body(pieces)?))
        }
        Err(e) => Ok(Response::ok(json!({ "error": { "code": e.code(), "message": e.message() } }).to_string())?.with_headers(headers)),
    }
}

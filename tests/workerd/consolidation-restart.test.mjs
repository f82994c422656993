// A consolidation run survives a restart of workerd: "a restart of workerd
// in the middle of a consolidation run loses and duplicates nothing, and
// the run resumes".
//
// One profile gets 1,300 facts, each said twice in other words (2,600
// memories, three windows of the run). `consolidate {"maxWindows": 1}`
// merges the first window's pairs now and leaves the rest to the Durable
// Object's alarm; workerd is then killed (SIGKILL, miniflare's dispose) and
// started again on the same storage. The alarm finishes the run: every
// pair ends as one active memory citing both sources, each pair in exactly
// one record, and the whole ends as an uninterrupted run of the same import
// in a second profile.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker } from "./helpers.mjs";
import { messageId } from "../bench/corpus.mjs";
import { restClient, parseExport, waitFor, profileDatabases } from "./reliability-support.mjs";

const TOKEN = "dev-token";
const NS = "consrestart";
const CUT = "cut";
const WHOLE = "whole";
/** Reworded pairs: 2,600 memories, windows of 1,000 (500 pairs each). */
const PAIRS = 1300;
const WINDOW_PAIRS = 500;
const DAY = 86_400_000;
const SESSION = "ledgers";

/** Three letters from `i` (a name; a number would be a token they all share). */
function name(i, salt) {
  let s = "";
  for (let k = 0; k < 3; k++) s += String.fromCharCode(97 + ((Math.floor(i / 26 ** k) + salt * (k + 1)) % 26));
  return s;
}

/** 32 hex characters, increasing with `n`. */
const hexId = (n) => n.toString(16).padStart(32, "0");

/**
 * The import: each fact said twice, a minute apart, 90+ days ago, each
 * statement from its own message; the two memories of a pair have adjacent
 * ids (one window holds both).
 */
function fixture() {
  const start = Date.now() - 120 * DAY;
  const lines = [JSON.stringify({ kind: "header", format: "agent-memory-export", version: 1, profile: `${NS}/${CUT}` })];
  const memories = [];
  const pairs = [];
  for (let i = 0; i < PAIRS; i++) {
    const [server, ledger, team] = [name(i, 1), name(i, 7), name(i, 13)];
    const contents = [`Server ${server}x stores the ${ledger}y ledger for team ${team}z.`, `For team ${team}z, server ${server}x stores the ${ledger}y ledger.`];
    const pair = [];
    contents.forEach((content, k) => {
      const n = 2 * i + k;
      const at = new Date(start + n * 60_000).toISOString();
      const text = `Note for the record: ${content}`;
      const msg = messageId(SESSION, "user", text);
      lines.push(JSON.stringify({ kind: "message", id: msg, sessionId: SESSION, role: "user", content: text, timestamp: at, position: n, createdAt: at }));
      const id = hexId(0x1000 + n);
      memories.push(
        JSON.stringify({
          kind: "memory",
          id,
          type: "fact",
          summary: content,
          content,
          sessionId: SESSION,
          sourceMessageIds: [msg],
          searchQueries: [],
          status: "active",
          createdAt: at,
          updatedAt: at,
          validFrom: at,
        }),
      );
      pair.push({ id, source: msg });
    });
    pairs.push(pair);
  }
  return { ndjson: [...lines, ...memories].join("\n") + "\n", pairs };
}

const sorted = (xs) => [...xs].sort();
const groupKey = (members) => sorted(members).join("+");

async function importInto(api, profile, ndjson) {
  const r = await api.ok("POST", NS, profile, "/import", { raw: ndjson, headers: { "content-type": "application/x-ndjson" } });
  assert.equal(r.memories, 2 * PAIRS, `${profile}: every memory imported`);
  assert.equal(r.messages, 2 * PAIRS, `${profile}: every message imported`);
}

/** Polls stats until the outbox is empty (a consolidation job counts as pending). */
async function drained(api, profile, what) {
  return waitFor(
    async () => {
      const s = await api.ok("GET", NS, profile, "/stats");
      return s.pendingJobs === 0 ? s : null;
    },
    { timeoutMs: 60000, intervalMs: 250, what },
  );
}

/** `fn` over `items`, `width` at a time. */
async function pool(items, width, fn) {
  const out = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

/** Every memory of a profile with the consolidations `get` shows for it. */
async function details(api, profile, ids) {
  return pool(ids, 16, (id) => api.ok("GET", NS, profile, `/memories/${id}`));
}

/** The stopped profile object whose stored name is `${NS}/${profile}`. */
async function stoppedDatabase(persistDir, profile) {
  const { DatabaseSync } = await import("node:sqlite");
  for (const file of profileDatabases(persistDir)) {
    const db = new DatabaseSync(file, { readOnly: true });
    try {
      const row = db.prepare("SELECT value FROM meta WHERE key = 'name'").get();
      if (row?.value === `${NS}/${profile}`) {
        return {
          run: db.prepare("SELECT value FROM meta WHERE key = 'consolidation_run'").get()?.value ?? "",
          jobs: db.prepare("SELECT kind, memory_id AS subject FROM outbox WHERE kind = 'consolidate'").all().map((r) => ({ ...r })),
          records: db.prepare("SELECT id FROM consolidations WHERE undone_at IS NULL ORDER BY id").all().map((r) => r.id),
          active: db.prepare("SELECT COUNT(*) AS n FROM memories WHERE status = 'active'").get().n,
        };
      }
    } finally {
      db.close();
    }
  }
  throw new Error(`no stored profile ${NS}/${profile} under ${persistDir}`);
}

describe("a consolidation run cut short by a workerd restart", () => {
  let dir;
  let w;
  let api;
  let data;
  /** What the cut run's profile ended as (test 1), for test 2. */
  let cutGroups;
  let cutTargets;

  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "agent-memory-consolidation-restart-"));
    w = await startWorker({ persistDir: dir });
    api = restClient(w, TOKEN);
    data = fixture();
    // The same import into both profiles; their embeddings and full-text
    // rows done before a run begins.
    await importInto(api, CUT, data.ndjson);
    await importInto(api, WHOLE, data.ndjson);
    for (const p of [CUT, WHOLE]) {
      const s = await drained(api, p, `${p}: the import's background work`);
      assert.equal(s.byStatus.active, 2 * PAIRS);
      assert.equal(s.vectors, 2 * PAIRS);
    }
  });

  after(async () => {
    await w?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("after a kill mid-run the alarm resumes it: every pair merged exactly once, nothing lost or repeated", async (t) => {
    // One window now; the alarm has the rest.
    const began = Date.now();
    const first = await api.ok("POST", NS, CUT, "/consolidate", { body: { maxWindows: 1 } });
    const windowMs = Date.now() - began;
    assert.equal(first.done, false, "one window of 1,000 leaves the rest of the run");
    assert.equal(first.dryRun, false);
    assert.equal(first.examined, 1000);
    assert.equal(first.activeBefore, 2 * PAIRS);
    assert.equal(first.actions.length, WINDOW_PAIRS, "each pair of the first window merged");
    assert.equal(first.activeAfter, 2 * PAIRS - WINDOW_PAIRS);
    for (const a of first.actions) {
      assert.equal(a.action, "merge");
      assert.equal(a.runId, first.runId);
    }

    // Hard stop at once (miniflare's dispose SIGKILLs workerd), before the
    // alarm (due 100 ms after the write) could go on with the run.
    await w.miniflare.dispose();

    // The stopped profile is mid-run: its cursor and its job are stored,
    // and the first window's records with them.
    const stopped = await stoppedDatabase(dir, CUT);
    const run = JSON.parse(stopped.run || "null");
    assert.ok(run, "the run in progress is in the profile's meta");
    assert.equal(run.id, first.runId);
    assert.deepEqual(stopped.jobs, [{ kind: "consolidate", subject: first.runId }], "the run's job is queued");
    // The alarm is due 100 ms after the call: the kill normally comes
    // first (then exactly the first window's records are stored), but a
    // slow machine may let it do a window or be cut inside one; either way
    // the run is unfinished here.
    assert.ok(stopped.records.length >= WINDOW_PAIRS && stopped.records.length < PAIRS, `the run was not finished at the kill (${stopped.records.length} records)`);
    for (const a of first.actions) assert.ok(stopped.records.includes(a.id), `the first window's record ${a.id} is stored`);
    assert.equal(stopped.active, 2 * PAIRS - stopped.records.length, "each stored record retired one memory");
    t.diagnostic(`first window: ${windowMs} ms; at the kill: ${stopped.records.length} of ${PAIRS} pairs merged, cursor ${run.cursor}`);

    // Same storage, a new runtime: the alarm finishes the run.
    const restartedAt = new Date().toISOString();
    await w.restart();
    const stats = await drained(api, CUT, "the alarm to finish the consolidation run after the restart");
    const drainedMs = Date.now() - Date.parse(restartedAt);
    assert.equal(stats.parkedJobs, 0, "no job parked");
    assert.equal(stats.failedJobs, 0, "no job failed");
    assert.equal(stats.byStatus.active, PAIRS, "one active memory per pair");
    assert.equal(stats.memories, 2 * PAIRS, "no memory lost or added");
    assert.equal(stats.messages, 2 * PAIRS, "no message lost or added");
    assert.equal(stats.vectors, PAIRS, "only the survivors keep a vector");

    // Every pair: one survivor citing both sources, the other retired into it.
    const exported = parseExport(await api.ok("GET", NS, CUT, "/export"));
    const byId = new Map(exported.filter((r) => r.kind === "memory").map((m) => [m.id, m]));
    assert.equal(byId.size, 2 * PAIRS);
    const survivors = new Map();
    for (const [a, b] of data.pairs) {
      const ms = [byId.get(a.id), byId.get(b.id)];
      const active = ms.filter((m) => m.status === "active");
      assert.equal(active.length, 1, `pair ${a.id}/${b.id} ends as one active memory: ${ms.map((m) => m.status)}`);
      const [keep] = active;
      const gone = ms.find((m) => m !== keep);
      assert.equal(gone.status, "superseded");
      assert.equal(gone.supersededBy, keep.id, "the other memory is retired into the survivor");
      assert.deepEqual(sorted(keep.sourceMessageIds), sorted([a.source, b.source]), `survivor ${keep.id} cites both messages, once each`);
      survivors.set(groupKey([a.id, b.id]), keep.id);
    }

    // Every memory took part in exactly one standing record: its pair's merge.
    const all = data.pairs.flat().map((m) => m.id);
    const got = await details(api, CUT, all);
    const records = new Map();
    for (const [i, d] of got.entries()) {
      const standing = d.consolidations.filter((c) => !c.undoneAt);
      assert.equal(standing.length, 1, `${all[i]} is in ${standing.length} standing consolidations: ${JSON.stringify(standing)}`);
      const [c] = standing;
      assert.equal(c.runId, first.runId, "one run from start to end");
      assert.equal(c.action, "merge");
      assert.ok(c.members.includes(all[i]));
      const prev = records.get(c.id);
      if (prev) assert.deepEqual(prev, c, `record ${c.id} reads the same from each member`);
      records.set(c.id, c);
    }
    assert.equal(records.size, PAIRS, "one record per pair: the first window's and the alarm's, none repeated");
    for (const c of records.values()) {
      const key = groupKey(c.members);
      assert.ok(survivors.has(key), `record ${c.id} is of one imported pair: ${key}`);
      assert.equal(c.target, survivors.get(key), `record ${c.id} names the survivor`);
    }
    const firstIds = new Set(first.actions.map((a) => a.id));
    for (const a of first.actions) assert.deepEqual(records.get(a.id), a, `the first window's record ${a.id} stands as reported`);
    const alarm = [...records.values()].filter((c) => !firstIds.has(c.id));
    assert.equal(first.actions.length + alarm.length, PAIRS, "the first window's records and the alarm's add up to the pairs");
    // What was stored at the kill stands; the rest was made after the restart.
    const atKill = new Set(stopped.records);
    for (const id of atKill) assert.ok(records.has(id), `record ${id}, stored at the kill, stands`);
    const resumed = [...records.values()].filter((c) => !atKill.has(c.id));
    assert.equal(atKill.size + resumed.length, PAIRS, "the records stored at the kill and the resumed run's add up to the pairs");
    for (const c of resumed) assert.ok(c.at >= restartedAt, `record ${c.id} was made by the resumed run (at ${c.at}, restart at ${restartedAt})`);
    t.diagnostic(`resumed after the restart: ${resumed.length} merges; the outbox empty ${drainedMs} ms after the restart began`);

    // Nothing is left for a run to do.
    const dry = await api.ok("POST", NS, CUT, "/consolidate", { body: { dryRun: true } });
    assert.equal(dry.actions.length, 0, `a dry run after the resumed run finds work: ${JSON.stringify(dry.actions.slice(0, 3))}`);
    assert.equal(dry.activeBefore, PAIRS);
    // The run is over, its job and cursor gone: a new call begins a new run
    // (a run in progress would be continued under its id), which finds nothing.
    const again = await api.ok("POST", NS, CUT, "/consolidate", { body: {} });
    assert.notEqual(again.runId, first.runId, "the interrupted run is finished, not still in progress");
    assert.equal(again.done, true);
    assert.deepEqual(again.actions, []);

    cutGroups = sorted([...records.values()].map((c) => groupKey(c.members)));
    cutTargets = sorted([...records.values()].map((c) => c.target));
  });

  test("the resumed run ends as an uninterrupted run of the same import", async () => {
    assert.ok(cutGroups, "the interrupted run's outcome (previous test)");
    const whole = await api.ok("POST", NS, WHOLE, "/consolidate", { body: {} });
    assert.equal(whole.done, true);
    assert.equal(whole.examined, 2 * PAIRS);
    const s = await drained(api, WHOLE, "the uninterrupted run's background work");
    const cut = await api.ok("GET", NS, CUT, "/stats");
    assert.equal(s.byStatus.active, cut.byStatus.active, "the same active count");
    assert.equal(whole.activeAfter, cut.byStatus.active);
    assert.equal(s.vectors, cut.vectors);
    assert.deepEqual(sorted(whole.actions.map((a) => groupKey(a.members))), cutGroups, "the same groups consolidated");
    assert.deepEqual(sorted(whole.actions.map((a) => a.target)), cutTargets, "the same survivors");
  });
});

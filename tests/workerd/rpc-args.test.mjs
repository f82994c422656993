// What the RPC shim (src/entry.mjs) takes as arguments, beyond what
// rpc.test.mjs checks: a call with an argument too many is refused with
// 10001 (a MemoryError, status 400) instead of the argument being dropped,
// and the profile is exactly as it was.
// Every refusal is paired with the well-formed call, which works.
//
// Values JSON cannot carry over the test's HTTP hop to the consumer Worker
// are sent as tags it revives (tests/workerd/consumer/index.mjs):
// {$undefined: true}, {$bigint: "1"}, {$map: [...]}, {$hole: true}, ...
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";
import { waitFor } from "./reliability-support.mjs";
import { VARS, CODE, CONVERSATION, rpcCode, rpcRejects, counts, exportRecords } from "./fixtures.mjs";

let w;
before(async () => {
  w = await startWorker({ vars: VARS });
});
after(async () => {
  await w?.dispose();
});

const UNDEFINED = { $undefined: true };
const HEADER = '{"kind":"header","format":"agent-memory-export","version":1}\n';
const CONTENT = "The build server runs on port 8100.";
const MESSAGES = [{ role: "user", content: "I moved to Lisbon last spring and I prefer yarn over npm." }];

/** A profile with a remembered memory (metadata team=core) and session s9 from an ingest, settled. */
async function seed(p) {
  const m = await w.call(p, "remember", { content: "The staging database is called db-blue.", metadata: { team: "core" } });
  await w.call(p, "ingest", CONVERSATION, { sessionId: "s9" });
  await waitFor(async () => (await w.call(p, "stats")).pendingJobs === 0, { what: `${p}: the outbox to drain` });
  return m;
}

/** Everything the profile holds: counts, every memory (status "all"), the export's records. */
async function state(p) {
  return {
    stats: counts(await w.call(p, "stats")),
    list: (await w.call(p, "list", { status: "all", limit: 1000 })).memories,
    exported: exportRecords(await w.call(p, "export")),
  };
}

/** The call must fail with 10001 (a MemoryError) whose message matches `message`; returns the error. */
async function refused(promise, message) {
  const err = await rpcRejects(promise);
  assert.equal(rpcCode(err), CODE.invalid, `${err.name}: ${err.message}`);
  assert.match(String(err.message), /MemoryError/, String(err.message));
  if (message) assert.match(String(err.message), message);
  return err;
}

// ---------------------------------------------------------------------------
// Arguments beyond a method's parameters

// [the call refused, the same call with nothing extra, what the good call did].
// `m` is the seeded memory.
const EXTRA = [
  ["deleteSession(sessionId, {dryRun})", ["deleteSession", "s9", { dryRun: true }], ["deleteSession", "s9"], (b, a) => assert.ok(a.stats.messages < b.stats.messages, "s9 deleted")],
  ["remember(memory, {sensitive})", ["remember", { content: CONTENT }, { sensitive: true }], ["remember", { content: CONTENT }], (b, a) => assert.equal(a.stats.memories, b.stats.memories + 1)],
  ["ingest(messages, {sessionId}, {metadata})", ["ingest", MESSAGES, { sessionId: "sx" }, { metadata: { agentId: "a" } }], ["ingest", MESSAGES, { sessionId: "sx", metadata: { agentId: "a" } }],
    (b, a) => assert.ok(a.list.some((x) => x.sessionId === "sx" && x.metadata?.agentId === "a"), JSON.stringify(a.list))],
  ["forget(id, {hard})", (m) => ["forget", m.id, { hard: true }], (m) => ["forget", m.id], (b, a, m) => assert.equal(a.list.find((x) => x.id === m.id).status, "forgotten")],
  ["update(id, metadata, {merge})", (m) => ["update", m.id, { a: 1 }, { merge: true }], (m) => ["update", m.id, { a: 1 }], (b, a, m) => assert.deepEqual(a.list.find((x) => x.id === m.id).metadata, { a: 1 })],
  ["recall(query, {limit}, {includeInactive})", ["recall", "Where does the user live?", { limit: 1 }, { includeInactive: true }], ["recall", "Where does the user live?", { limit: 1, includeInactive: true }]],
  ["list({limit}, {status})", ["list", { limit: 1 }, { status: "all" }], ["list", { limit: 1, status: "all" }]],
  ["get(id, extra)", (m) => ["get", m.id, { versions: false }], (m) => ["get", m.id]],
  ["delete(id, extra)", (m) => ["delete", m.id, { soft: true }], (m) => ["delete", m.id], (b, a, m) => assert.ok(!a.list.some((x) => x.id === m.id))],
  ["getSummary(options, extra)", ["getSummary", {}, { sessionId: "s9" }], ["getSummary", { sessionId: "s9" }]],
  ["stats(extra)", ["stats", { bogus: 1 }], ["stats"]],
  ["export(options, extra)", ["export", {}, "x"], ["export", {}]],
  ["import(data, {replace})", ["import", HEADER, { replace: true }], ["import", HEADER]],
  ["consolidate(options, extra)", ["consolidate", { dryRun: true }, { maxWindows: 1 }], ["consolidate", { dryRun: true, maxWindows: 1 }]],
];

test("a profile method given more arguments than it takes is refused with 10001, naming the method, and changes nothing", async (t) => {
  for (const [i, [name, bad, good, effect]] of EXTRA.entries()) {
    await t.test(name, async () => {
      const p = `args-extra-${i}`;
      const m = await seed(p);
      const [op, ...args] = typeof bad === "function" ? bad(m) : bad;
      const before = await state(p);
      await refused(w.call(p, op, ...args), new RegExp(`${op}\\(.*\\) takes .*, was given ${args.length}`));
      assert.deepEqual(await state(p), before, "nothing changed");
      // The positive control: the same call with nothing extra works.
      const [gop, ...gargs] = typeof good === "function" ? good(m) : good;
      await w.call(p, gop, ...gargs);
      if (effect) effect(before, await state(p), m);
    });
  }
});

test("undoConsolidation(id, extra) is refused with 10001 before the service looks the id up", async () => {
  const p = "args-extra-undo";
  await seed(p);
  const before = await state(p);
  await refused(w.call(p, "undoConsolidation", 1, { force: true }), /undoConsolidation\(id\) takes 1 argument, was given 2/);
  assert.deepEqual(await state(p), before, "nothing changed");
  // Without the extra argument the call reaches the service: no such consolidation.
  assert.equal(rpcCode(await rpcRejects(w.call(p, "undoConsolidation", 1))), CODE.notFound);
});

test("an explicit undefined beyond a method's parameters is refused too; within them it is an omitted argument", async () => {
  const p = "args-trailing-undefined";
  await seed(p);
  const before = await state(p);
  await refused(w.call(p, "deleteSession", "s9", UNDEFINED), /deleteSession\(sessionId\) takes 1 argument, was given 2/);
  await refused(w.call(p, "stats", UNDEFINED), /stats\(\) takes no arguments, was given 1/);
  await refused(w.call(p, "list", UNDEFINED, UNDEFINED), /list\(options\) takes 1 argument, was given 2/);
  await refused(w.call(p, "recall", "Where does the user live?", UNDEFINED, UNDEFINED), /recall\(query, options\) takes at most 2 arguments, was given 3/);
  assert.deepEqual(await state(p), before, "nothing changed");
  // Positive control: undefined for a parameter that is there is "not given".
  assert.deepEqual((await w.call(p, "list", UNDEFINED)).memories, (await w.call(p, "list")).memories);
  assert.equal(typeof (await w.call(p, "recall", "Where does the user live?", UNDEFINED)).answer, "string");
  assert.equal(await w.call(p, "ingest", MESSAGES, UNDEFINED), null);
  assert.equal((await state(p)).stats.messages, before.stats.messages + 1);
});

test("the namespace's getProfile, deleteProfile and restoreProfile given an argument too many are refused with 10001 and change nothing", async () => {
  const p = "args-extra-service";
  await seed(p);
  const before = await state(p);
  await refused(w.service("getProfile", p, { namespace: "other" }), /getProfile\(name\) takes 1 argument, was given 2/);
  await refused(w.service("deleteProfile", p, { hard: true }), /deleteProfile\(name\) takes 1 argument, was given 2/);
  await refused(w.service("deleteProfile", p, UNDEFINED), /deleteProfile\(name\) takes 1 argument, was given 2/);
  assert.deepEqual(await state(p), before, "not deleted");
  // Positive control: deleteProfile(name) deletes; restoreProfile with an
  // argument too many restores nothing; restoreProfile(name) restores.
  assert.equal(await w.service("deleteProfile", p), null);
  assert.equal(rpcCode(await rpcRejects(w.call(p, "stats"))), CODE.notFound);
  await refused(w.service("restoreProfile", p, { at: "now" }), /restoreProfile\(name\) takes 1 argument, was given 2/);
  assert.equal(rpcCode(await rpcRejects(w.call(p, "stats"))), CODE.notFound, "still deleted");
  assert.deepEqual(await w.service("restoreProfile", p), { restored: true });
  assert.deepEqual(await state(p), before);
});

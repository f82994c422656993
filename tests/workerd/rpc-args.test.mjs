// What the RPC shim (src/entry.mjs) takes as arguments, beyond what
// rpc.test.mjs checks: a call with an argument too many, a string that is
// not well-formed UTF-16, a BigInt, an object JSON cannot hold, or
// arguments nested deeper than the service reads JSON are
// refused with 10001 (a MemoryError, status 400) instead of being dropped
// or turned into something else, and the profile is exactly as it was.
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

// ---------------------------------------------------------------------------
// Strings that are not well-formed UTF-16

// [where, the call (m: the seeded memory), what the message names]
const LONE = [
  ["remember content", () => ["remember", { content: "The gate code is \ud800 4711." }], /remember\.content holds a lone surrogate \(U\+D800 at index 17\)/],
  ["remember sessionId", () => ["remember", { content: CONTENT, sessionId: "s\ud800" }], /remember\.sessionId/],
  ["remember key", () => ["remember", { content: CONTENT, key: "port\udfff" }], /remember\.key .*U\+DFFF/],
  ["a metadata value", () => ["remember", { content: CONTENT, metadata: { k: "x\udfff" } }], /remember\.metadata\.k holds a lone surrogate \(U\+DFFF at index 1\)/],
  ["a metadata key", () => ["remember", { content: CONTENT, metadata: { ["k\ud800"]: "x" } }], /a key of remember\.metadata holds a lone surrogate/],
  ["a reversed pair", () => ["remember", { content: "Pair \udc00\ud800 reversed." }], /remember\.content .*U\+DC00 at index 5/],
  ["an ingest message", () => ["ingest", [{ role: "user", content: "hello \ud800 world, I live in Paris." }], { sessionId: "s" }], /ingest\.messages\[0\]\.content/],
  ["an ingest sessionId", () => ["ingest", MESSAGES, { sessionId: "s\ud800" }], /ingest\.sessionId/],
  ["ingest metadata", () => ["ingest", MESSAGES, { metadata: { agentId: "\udbff" } }], /ingest\.metadata\.agentId/],
  ["a recall query", () => ["recall", "Where \ud800?"], /recall\.query/],
  ["a list filter", () => ["list", { filter: { team: "c\ud800" } }], /list\.filter\.team/],
  ["an id", (m) => ["get", `${m.id}\ud800`], /get\.id/],
  ["a forget id", (m) => ["forget", `${m.id}\udc00`], /forget\.id/],
  ["deleteSession's sessionId", () => ["deleteSession", "s9\ud800"], /deleteSession\.sessionId/],
  ["update's metadata", (m) => ["update", m.id, { team: "c\udc00re" }], /update\.metadata\.team/],
  ["an export filter", () => ["export", { filter: { team: "\ud800" } }], /export\.filter\.team/],
  ["a getSummary sessionId", () => ["getSummary", { sessionId: "s9\ud800" }], /getSummary\.sessionId/],
];

test("a lone surrogate in any string argument is refused with 10001, naming where, and changes nothing", async (t) => {
  const p = "args-lone-surrogate";
  const m = await seed(p);
  const before = await state(p);
  for (const [where, call, message] of LONE) {
    await t.test(where, async () => {
      const [op, ...args] = call(m);
      await refused(w.call(p, op, ...args), message);
      assert.deepEqual(await state(p), before, "nothing changed");
    });
  }
  // The profile name, over getProfile and over deleteProfile.
  await refused(w.call(`${p}\ud800`, "stats"), /profile name holds a lone surrogate/);
  await refused(w.service("deleteProfile", `${p}\udc00`), /profile name holds a lone surrogate/);
  assert.deepEqual(await state(p), before, "nothing changed");
});

test("an import whose records hold a lone surrogate is refused with 10001 and imports nothing", async () => {
  const src = "args-lone-import-src";
  await seed(src);
  const text = await w.call(src, "export");
  const bad = text.replace("db-blue", "db-\ud800blue");
  assert.notEqual(bad, text);
  const p = "args-lone-import";
  const before = await state(p);
  await refused(w.call(p, "import", bad), /import\.data holds a lone surrogate \(U\+D800 at index \d+\)/);
  assert.deepEqual(await state(p), before, "nothing imported");
  // Positive control: the export as it was imports whole.
  const counted = counts(await w.call(src, "stats"));
  assert.deepEqual(await w.call(p, "import", text), { messages: counted.messages, memories: counted.memories, consolidationsLeftOut: 0 });
  assert.deepEqual((await state(p)).exported, (await state(src)).exported);
});

test("well-formed strings with astral characters (surrogate pairs) are taken and come back exactly", async () => {
  const p = "args-astral";
  const content = "The team mascot is a crab 🦀 named Ferris 𝓕.";
  const m = await w.call(p, "remember", { content, sessionId: "s🦀", metadata: { emoji: "🦀𝓕" } });
  assert.equal(m.content, content);
  assert.equal(m.sessionId, "s🦀");
  assert.deepEqual(m.metadata, { emoji: "🦀𝓕" });
  assert.equal((await w.call(p, "get", m.id)).content, content);
  assert.equal(await w.call(p, "deleteSession", "s🦀"), null);
  assert.deepEqual((await w.call(p, "list", { status: "all" })).memories, []);
});

// ---------------------------------------------------------------------------
// BigInt

test("a BigInt anywhere in the arguments is refused with 10001, naming where, and changes nothing", async (t) => {
  const p = "args-bigint";
  const m = await seed(p);
  const before = await state(p);
  for (const [where, [op, ...args], message] of [
    ["a metadata value", ["remember", { content: CONTENT, metadata: { n: { $bigint: "12345678901234567890" } } }], /remember\.metadata\.n is a BigInt \(12345678901234567890n\)/],
    ["a small metadata value", ["remember", { content: CONTENT, metadata: { n: { $bigint: "1" } } }], /remember\.metadata\.n is a BigInt/],
    ["ttlSeconds", ["remember", { content: CONTENT, ttlSeconds: { $bigint: "60" } }], /remember\.ttlSeconds is a BigInt/],
    ["ingest metadata", ["ingest", MESSAGES, { sessionId: "sb", metadata: { n: { $bigint: "7" } } }], /ingest\.metadata\.n is a BigInt/],
    ["a list limit", ["list", { limit: { $bigint: "5" } }], /list\.limit is a BigInt/],
    ["a recall limit", ["recall", "Where?", { limit: { $bigint: "5" } }], /recall\.limit is a BigInt/],
    ["update's metadata", ["update", m.id, { n: { $bigint: "9007199254740993" } }], /update\.metadata\.n is a BigInt/],
    ["a filter value", ["export", { filter: { n: { gt: { $bigint: "1" } } } }], /export\.filter\.n\.gt is a BigInt/],
    ["an id", ["undoConsolidation", { $bigint: "1" }], /undoConsolidation\.id is a BigInt/],
  ]) {
    await t.test(where, async () => {
      await refused(w.call(p, op, ...args), message);
      assert.deepEqual(await state(p), before, "nothing changed");
    });
  }
  // Positive control: the same number as a JavaScript number is stored.
  const ok = await w.call(p, "remember", { content: CONTENT, metadata: { n: 12345 }, ttlSeconds: 60 });
  assert.deepEqual(ok.metadata, { n: 12345 });
});

// ---------------------------------------------------------------------------
// Values JSON cannot hold

test("a Map or an array where an object is taken is refused with 10001 instead of being read as an object, and changes nothing", async (t) => {
  const p = "args-not-plain";
  const m = await seed(p);
  const before = await state(p);
  for (const [where, [op, ...args], message] of [
    ["a Map as metadata", ["remember", { content: CONTENT, metadata: { $map: [["team", "core"]] } }], /remember\.metadata is a Map/],
    ["a Map as the memory", ["remember", { $map: [["content", CONTENT]] }], /remember: the memory must be an object/],
    ["an array as the memory", ["remember", [CONTENT]], /remember: the memory must be an object/],
    ["a Map as list options", ["list", { $map: [["status", "all"]] }], /list: options must be an object/],
    ["a Map as update's metadata", ["update", m.id, { $map: [["a", 1]] }], /update: the metadata must be an object/],
    ["an array as a message", ["ingest", [["user", "I live in Oslo and I like tea."]], { sessionId: "sm" }], /ingest\.messages\[0\] must be an object/],
    ["a Map as a message", ["ingest", [{ $map: [["role", "user"], ["content", "I live in Oslo and I like tea."]] }], { sessionId: "sm" }], /ingest\.messages\[0\] must be an object/],
    ["a Map as ingest metadata", ["ingest", MESSAGES, { sessionId: "sm", metadata: { $map: [["agentId", "a"]] } }], /ingest\.metadata is a Map/],
  ]) {
    await t.test(where, async () => {
      await refused(w.call(p, op, ...args), message);
      assert.deepEqual(await state(p), before, "nothing changed");
    });
  }
  // Positive controls: the same as plain objects.
  const ok = await w.call(p, "remember", { content: CONTENT, metadata: { team: "core" } });
  assert.deepEqual(ok.metadata, { team: "core" });
  assert.ok((await w.call(p, "list", { status: "all", limit: 1000 })).memories.length > before.list.length);
  assert.deepEqual((await w.call(p, "update", m.id, { a: 1 })).metadata, { a: 1 });
});

test("values JSON cannot hold (Set, Date where no date is taken, Error, bytes, functions, holes, undefined in arrays) are refused with 10001 naming where, and change nothing", async (t) => {
  const p = "args-not-json";
  await seed(p);
  const before = await state(p);
  for (const [where, [op, ...args], message] of [
    ["a Set in metadata", ["remember", { content: CONTENT, metadata: { s: { $set: ["a"] } } }], /remember\.metadata\.s is a Set/],
    ["a Date in metadata", ["remember", { content: CONTENT, metadata: { when: { $date: "2030-01-01T00:00:00Z" } } }], /remember\.metadata\.when is a Date/],
    ["a Date as expiresAt", ["remember", { content: CONTENT, expiresAt: { $date: "2030-01-01T00:00:00Z" } }], /remember\.expiresAt is a Date/],
    ["a Date in a filter", ["list", { filter: { createdAt: { gt: { $date: "2020-01-01T00:00:00Z" } } } }], /list\.filter\.createdAt\.gt is a Date/],
    ["an Error as content", ["remember", { content: { $error: CONTENT } }], /remember\.content is an Error/],
    ["bytes as import data", ["import", { $bytes: [...new TextEncoder().encode(HEADER)] }], /import\.data is a Uint8Array/],
    ["a function in metadata", ["remember", { content: CONTENT, metadata: { f: { $function: true } } }], /remember\.metadata\.f is a function/],
    ["a hole in the messages", ["ingest", [{ $hole: true }, MESSAGES[0]], { sessionId: "sh" }], /ingest\.messages\[0\] must be an object/],
    ["undefined in a filter's list", ["list", { filter: { team: { in: ["core", UNDEFINED] } } }], /list\.filter\.team\.in\[1\] is undefined/],
    ["a hole in a filter's list", ["export", { filter: { team: { in: [{ $hole: true }, "core"] } } }], /export\.filter\.team\.in\[0\] is a hole/],
  ]) {
    await t.test(where, async () => {
      await refused(w.call(p, op, ...args), message);
      assert.deepEqual(await state(p), before, "nothing changed");
    });
  }
  // Positive controls: the same values as JSON data, and the Dates the
  // service takes (a message's timestamp, asOf).
  const ok = await w.call(p, "remember", { content: CONTENT, metadata: { team: "core", when: "2030-01-01" }, expiresAt: "2030-01-01T00:00:00Z" });
  assert.deepEqual(ok.metadata, { team: "core", when: "2030-01-01" });
  assert.equal(new Date(ok.expiresAt).toISOString(), "2030-01-01T00:00:00.000Z");
  const listed = await w.call(p, "list", { filter: { team: { in: ["core"] } }, asOf: { $date: new Date().toISOString() } });
  assert.ok(listed.memories.some((x) => x.id === ok.id), JSON.stringify(listed));
  assert.equal(await w.call(p, "ingest", [{ role: "user", content: "I now live in Porto.", timestamp: { $date: "2026-03-02T09:30:00Z" } }], { sessionId: "sh" }), null);
  assert.equal((await w.call(p, "stats")).messages, before.stats.messages + 1);
});

// ---------------------------------------------------------------------------
// Nesting

/** `leaf` inside `depth` levels: objects {a: …}, or arrays […] with `array` (built by the consumer). */
const nested = (depth, leaf = 1, array = false) => ({ $deep: [depth, leaf, array ? "array" : "object"] });

// 2,000 levels: about the most a caller's runtime sends. Much deeper
// (5,000) never leaves the caller: its own serialization of the arguments
// (as structuredClone) throws a RangeError before the call is made.
test("arguments nested deeper than the service reads JSON (serde_json's 128 levels, the call's own included) are refused with 10001, saying so, and change nothing", async (t) => {
  const p = "args-deep";
  await seed(p);
  const before = await state(p);
  for (const [where, [op, ...args], message] of [
    ["a filter 2,000 deep in recall", ["recall", "Where does the user live?", { filter: nested(2000) }], /recall\.filter(\.a)+[.a…]* is nested more than 126 levels deep/],
    ["a filter 2,000 deep in list", ["list", { filter: nested(2000) }], /list\.filter(\.a)+[.a…]* is nested more than 126 levels deep/],
    ["a filter 2,000 deep in export", ["export", { filter: nested(2000) }], /export\.filter(\.a)+[.a…]* is nested more than 126 levels deep/],
    ["remember's metadata 2,000 deep", ["remember", { content: CONTENT, metadata: { n: nested(2000) } }], /remember\.metadata\.n(\.a)+[.a…]* is nested more than 126 levels deep/],
    ["remember's metadata, arrays 2,000 deep", ["remember", { content: CONTENT, metadata: { n: nested(2000, 1, true) } }], /remember\.metadata\.n(\[0\])+[[\]0…]* is nested more than 126 levels deep/],
    ["ingest's metadata 2,000 deep", ["ingest", MESSAGES, { sessionId: "sd", metadata: { n: nested(2000) } }], /ingest\.metadata\.n(\.a)+[.a…]* is nested more than 126 levels deep/],
    ["a message 2,000 deep", ["ingest", [{ role: "user", content: nested(2000) }], { sessionId: "sd" }], /ingest\.messages\[0\]\.content(\.a)+[.a…]* is nested more than 126 levels deep/],
    // 125 levels inside memory.metadata.n: 127 in all, 128 with the
    // call's own object, where serde_json stops.
    ["remember's metadata just past the limit", ["remember", { content: CONTENT, metadata: { n: nested(125) } }], /remember\.metadata\.n(\.a)+[.a…]* is nested more than 126 levels deep/],
  ]) {
    await t.test(where, async () => {
      const err = await refused(w.call(p, op, ...args), message);
      assert.ok(String(err.message).length < 300, `a short message: ${String(err.message).length} characters`);
      assert.deepEqual(await state(p), before, "nothing changed");
    });
  }
  // Positive controls: at the limit, the value reaches the service, which
  // refuses it as metadata (a value is a string, number or boolean), as
  // it does over REST, not as too deep; a filter at the limit is refused
  // by the filter's own rule.
  const within = await refused(w.call(p, "remember", { content: CONTENT, metadata: { n: nested(124) } }));
  assert.match(String(within.message), /MetaValue/);
  const filter = await refused(w.call(p, "list", { filter: nested(125) }));
  assert.match(String(filter.message), /filter nests more than 5 levels|filter/);
  assert.doesNotMatch(String(filter.message), /is nested more than/);
  assert.deepEqual(await state(p), before, "nothing changed");
});

// ---------------------------------------------------------------------------
// Size, as the arguments are read

/** `leaf` under `depth` levels of {l: v, r: v}, one object twice a level (built by the consumer). */
const shared = (depth, leaf = 1) => ({ $shared: [depth, leaf] });
const wasmMemory = async () => (await w.call("args-size-probe", "stats")).isolate.wasmMemoryBytes;

// Workers RPC keeps shared references: an object referenced twice crosses
// once, and is read (by the entry's walk, then into the Wasm memory) as
// often as it is referenced. 2^20 leaves took 460 MiB of Wasm memory, 2^24
// trapped the Wasm (out of memory), 2^40 never answered.
test("arguments whose objects share references are refused as too large (10006) as soon as their reading passes what a call may take as a tree, and change nothing", async (t) => {
  const p = "args-shared";
  await seed(p);
  const before = await state(p);
  const memory = await wasmMemory();
  for (const depth of [20, 24, 40]) {
    await t.test(`2^${depth} leaves in remember's metadata`, async () => {
      const started = Date.now();
      const err = await rpcRejects(w.call(p, "remember", { content: CONTENT, metadata: { n: shared(depth) } }));
      assert.equal(rpcCode(err), CODE.tooLarge, `${err.name}: ${err.message}`);
      assert.match(String(err.message), /too many values: as read, they would take more than 8388608 bytes .*an object referenced in several places counts each time/);
      assert.ok(Date.now() - started < 5_000, `refused in ${Date.now() - started} ms`);
    });
  }
  await t.test("2^24 leaves as an ingest's metadata, beside calls on other profiles", async () => {
    const bystanders = [0, 1, 2].map((i) => w.call(`args-bystander-${i}`, "remember", { content: `Bystander ${i} deploys on Fridays.` }));
    const err = await rpcRejects(w.call(p, "ingest", MESSAGES, { sessionId: "sh", metadata: { n: shared(24) } }));
    assert.equal(rpcCode(err), CODE.tooLarge, `${err.name}: ${err.message}`);
    for (const b of await Promise.all(bystanders)) assert.ok(b.id, JSON.stringify(b));
  });
  const grown = (await wasmMemory()) - memory;
  assert.ok(grown < 16 * 2 ** 20, `the Wasm memory grew by ${(grown / 2 ** 20).toFixed(1)} MiB`);
  assert.deepEqual(await state(p), before, "nothing changed");
  // Positive control: the same call within the values a call holds is
  // taken.
  const ok = await w.call(p, "remember", { content: CONTENT, metadata: { team: "core", size: 3 } });
  assert.ok(ok.id, JSON.stringify(ok));
});

test("an import over RPC is held to the import route's 8 MiB, refused as too large (10006) as REST refuses it (413), and imports nothing", async () => {
  const p = "args-import-size";
  const file = HEADER + " ".repeat(8 * 1024 * 1024) + "\n";
  const err = await rpcRejects(w.call(p, "import", file));
  assert.equal(rpcCode(err), CODE.tooLarge, `${err.name}: ${err.message}`);
  assert.match(String(err.message), /import's file is over 8388608 bytes/);
  // Counted in UTF-8 bytes, as REST counts a body: 2.8 million characters of three bytes each.
  const wide = HEADER + "€".repeat(Math.ceil((8 * 1024 * 1024) / 3)) + "\n";
  const wideErr = await rpcRejects(w.call(p, "import", wide));
  assert.equal(rpcCode(wideErr), CODE.tooLarge, `${wideErr.name}: ${wideErr.message}`);
  const stats = await w.call(p, "stats");
  assert.deepEqual([stats.memories, stats.messages], [0, 0], "nothing imported");
  // The same file within the limit is taken.
  const within = HEADER + " ".repeat(1024) + "\n";
  assert.deepEqual(await w.call(p, "import", within), { messages: 0, memories: 0, consolidationsLeftOut: 0 });
});

test("arguments over a REST body's 17 MiB as JSON are refused as too large (10006) before they are read into the service", async () => {
  const p = "args-over-body";
  const err = await rpcRejects(w.call(p, "recall", "q".repeat(18 * 1024 * 1024)));
  assert.equal(rpcCode(err), CODE.tooLarge, `${err.name}: ${err.message}`);
  assert.match(String(err.message), /over 17825792 bytes as JSON/);
});

// Metadata, filters and asOf through the BUILT Worker in workerd, over its
// three ways in: REST (/accounts/...), Workers RPC through a real Service
// binding (the consumer Worker, helpers' `call`) and MCP (the official SDK
// client over real HTTP). The native property test is tests/filters.rs;
// this one checks that the same property holds at every surface:
//
// 1. One profile is filled over REST (one NDJSON import) with 150 memories
//    carrying seeded random metadata (agentId, userId, priority, draft,
//    team, each present or not), types, sessions and creation times; the
//    embedding outbox is left to drain (GET .../stats until pendingJobs 0).
// 2. 12 fixed edge cases and 40 seeded random filters (leaves, AND/OR/NOT,
//    two fields side by side; values sometimes of another kind than the
//    field holds): for
//    each, over REST, RPC and MCP, `list` (every page) returns exactly the
//    memories the filter passes as computed here in JS with the documented
//    semantics, and `recall` (a one-word query, limit 20) returns only
//    passing memories, the same ids in the same order on all three.
// 3. asOf: what was active on day 5 and day 15 of a fact said on day 1 and
//    superseded on day 10 (message timestamps), over REST list and recall
//    (RPC and MCP agree; RPC also takes asOf as a Date); GET
//    .../memories/{id} shows each version's validFrom/validTo.
// 4. Bad filters and metadata: 400 in the error envelope (RPC and MCP
//    refuse them too), and nothing is written.
//
//   cd /work/main && source scripts/env.sh && node --test tests/workerd/filters.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startWorker } from "./helpers.mjs";
import { restClient, waitFor } from "./reliability-support.mjs";

const TOKEN = "dev-token"; // .dev.vars.example: may touch every namespace
const NS = "default";
const PROFILE = "filters-property";
const MEMORIES = 150;
const FILTERS = 40;

let w;
let api;
let mcp;
const mcpClients = [];

before(async () => {
  w = await startWorker();
  api = restClient(w, TOKEN);
});
after(async () => {
  for (const c of mcpClients) await c.close().catch(() => {});
  await w?.dispose();
});

/** A connected MCP SDK client for a profile of NS. */
async function connectMcp(profile) {
  const client = new Client({ name: "agent-memory-filters-test", version: "0.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(`mcp/namespaces/${NS}/profiles/${profile}`, w.url), {
    requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
  });
  await client.connect(transport, { timeout: 10_000 });
  mcpClients.push(client);
  return client;
}

/** An MCP tool call that must succeed; returns its structured content. */
async function tool(client, name, args) {
  const r = await client.callTool({ name, arguments: args });
  assert.equal(r.isError, false, `MCP ${name} ${JSON.stringify(args)} failed: ${JSON.stringify(r.content)}`);
  return r.structuredContent;
}

/** A REST call that must answer 200 with the success envelope; returns result. */
async function rest(method, profile, suffix, opts = {}, client = api) {
  const r = await client.send(method, NS, profile, suffix, opts);
  assert.equal(r.status, 200, `${method} ${suffix} ${JSON.stringify(opts)} -> ${r.status} ${r.text.slice(0, 400)}`);
  assert.equal(r.body?.success, true, r.text.slice(0, 400));
  return r.body.result;
}

/** Fills `p` with `memories` by one NDJSON import, and waits for its outbox to drain. */
async function fill(p, memories, client = api) {
  const header = { kind: "header", format: "agent-memory-export", version: 1, profile: `${NS}/${p}` };
  const raw = [header, ...memories.map((m) => ({ kind: "memory", ...m }))].map((l) => JSON.stringify(l)).join("\n") + "\n";
  const report = await rest("POST", p, "/import", { raw, headers: { "content-type": "application/x-ndjson" } }, client);
  assert.equal(report.memories, memories.length, JSON.stringify(report));
  await drained(p, client);
}

/** Each channel's hits, as `explain` lists them. */
function channelIds(recall) {
  return recall.explain.channels.map((c) => [c.channel, c.ids]);
}

/** 2e's profile and recalls, which 2f asks again with nothing resident. */
const broad = { all: [], recalls: [] };

/** The error envelope with `status`; returns errors[0]. */
function failsWith(r, status, what) {
  const where = `${what} -> ${r.status} ${r.text.slice(0, 400)}`;
  assert.equal(r.status, status, where);
  assert.match(r.headers.get("content-type") ?? "", /^application\/json/, where);
  assert.equal(r.body?.success, false, where);
  assert.equal(r.body.result, null, where);
  assert.ok(Array.isArray(r.body.errors) && r.body.errors.length >= 1, where);
  for (const e of r.body.errors) {
    assert.equal(typeof e.code, "number", where);
    assert.equal(typeof e.message, "string", where);
    assert.notEqual(e.message, "", where);
  }
  return r.body.errors[0];
}

/** Waits until the profile's background work is done. */
async function drained(profile, client = api) {
  return waitFor(
    async () => {
      const s = await rest("GET", profile, "/stats", {}, client);
      return s.pendingJobs === 0 ? s : null;
    },
    { timeoutMs: 30_000, intervalMs: 100, what: `${profile}: pendingJobs 0` },
  );
}

// ---------------------------------------------------------------------------
// Seeded data

/** mulberry32: the same data and filters on every run. */
function rng(seed) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    below: (n) => Math.floor(next() * n),
    pick: (xs) => xs[Math.floor(next() * xs.length)],
    chance: (p) => next() < p,
  };
}

const AGENTS = ["reviewer", "coder", "chat", "planner"];
const USERS = ["ana", "bo", "cy"];
const TEAMS = ["core", "web", "ops"];
const SESSIONS = ["s1", "s2", "s3", "s4", "s5"];
const TYPES = ["fact", "event", "instruction"];
/** Words a memory's text is made of; queries are one of them. */
const WORDS = [
  "fox", "heron", "badger", "otter", "lynx", "raven", "maple", "cedar", "birch", "willow", "harbor", "canyon",
  "meadow", "glacier", "copper", "silver", "amber", "cobalt", "lantern", "compass", "anchor", "quill", "ember", "tide",
];
const DAY = 86_400_000;
/** Creation times spread over the 60 days before this instant. */
const END = Date.parse("2026-04-15T00:00:00.000Z");
const START = END - 60 * DAY;

const CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz";
/** A lowercase ULID for `millis`, its tail from `r`. */
function ulid(millis, r) {
  let time = "";
  for (let t = millis, i = 0; i < 10; i++, t = Math.floor(t / 32)) time = CROCKFORD[t % 32] + time;
  let tail = "";
  for (let i = 0; i < 16; i++) tail += CROCKFORD[r.below(32)];
  return time + tail;
}

function randomMetadata(r) {
  const m = {};
  if (r.chance(0.8)) m.agentId = r.pick(AGENTS);
  if (r.chance(0.6)) m.userId = r.pick(USERS);
  if (r.chance(0.7)) m.priority = r.below(5);
  if (r.chance(0.5)) m.draft = r.chance(0.5);
  if (r.chance(0.6)) m.team = r.pick(TEAMS);
  return m;
}

/** Six words (each at most twice, sorted, "plain" filling up) and a unique tail. */
function randomText(r, i) {
  const words = Array.from({ length: 6 }, () => r.pick(WORDS)).sort();
  const kept = [];
  for (const w of words) if (kept.filter((k) => k === w).length < 2) kept.push(w);
  while (kept.length < 6) kept.push("plain");
  return `${kept.join(" ")} item${i}`;
}

/** `n` memory records as the export format holds them, oldest first. */
function randomMemories(r, n) {
  return Array.from({ length: n }, (_, i) => {
    const created = START + Math.floor((i * 60 * DAY) / n);
    const content = randomText(r, i);
    const createdAt = new Date(created).toISOString();
    const m = {
      id: ulid(created, r),
      type: r.pick(TYPES),
      summary: content,
      content,
      sessionId: r.pick(SESSIONS),
      sourceMessageIds: [],
      searchQueries: [],
      status: "active",
      createdAt,
      updatedAt: createdAt,
    };
    const metadata = randomMetadata(r);
    if (Object.keys(metadata).length) m.metadata = metadata;
    return m;
  });
}

function exportOf(memories) {
  const header = { kind: "header", format: "agent-memory-export", version: 1, profile: `${NS}/${PROFILE}` };
  return [header, ...memories.map((m) => ({ kind: "memory", ...m }))].map((l) => JSON.stringify(l)).join("\n") + "\n";
}

/** A random leaf: a field, an operator, a value (sometimes of another kind than the field holds). */
function randomLeaf(r) {
  const field = r.pick(["agentId", "userId", "priority", "draft", "team", "type", "sessionId", "createdAt", "missing"]);
  const value = () => {
    switch (field) {
      case "agentId": return r.pick(AGENTS);
      case "userId": return r.pick(USERS);
      case "team": return r.chance(0.1) ? r.below(3) : r.pick(TEAMS);
      case "priority": return r.chance(0.2) ? String(r.below(5)) : r.below(5);
      case "missing": return r.below(5);
      // Booleans are the numbers 1 and 0: sometimes asked as numbers.
      case "draft": return r.chance(0.3) ? r.below(2) : r.chance(0.5);
      case "type": return r.pick(TYPES);
      case "sessionId": return r.pick(SESSIONS);
      default: return new Date(START + r.below(60) * DAY).toISOString();
    }
  };
  const ordered = ["priority", "createdAt", "missing"].includes(field);
  const ops = ordered ? ["eq", "ne", "in", "nin", "gt", "gte", "lt", "lte", "plain"] : ["eq", "ne", "in", "nin", "plain"];
  const op = r.pick(ops);
  if (op === "plain") return { [field]: value() };
  if (op === "in" || op === "nin") return { [field]: { [op]: Array.from({ length: 1 + r.below(3) }, value) } };
  return { [field]: { [op]: value() } };
}

function randomFilter(r, depth = 0) {
  if (depth >= 3 || r.chance(0.4)) return randomLeaf(r);
  const some = () => Array.from({ length: 1 + r.below(3) }, () => randomFilter(r, depth + 1));
  switch (r.below(4)) {
    case 0: return { AND: some() };
    case 1: return { OR: some() };
    case 2: return { NOT: randomFilter(r, depth + 1) };
    default: {
      // Two fields side by side in one object: both must hold (when both
      // leaves name the same field, the second replaces the first).
      return { ...randomLeaf(r), ...randomLeaf(r) };
    }
  }
}

// ---------------------------------------------------------------------------
// The filter semantics, in JS (src/core/filter.rs's module docs):
// a missing field matches only ne and nin; values compare within their
// kind (a number never equals or orders against a string); booleans are
// the numbers 1 and 0; NOT is the exact complement.

/** A comparable: {n: number} or {s: string}; undefined when absent. */
function scalar(v) {
  if (typeof v === "boolean") return { n: v ? 1 : 0 };
  if (typeof v === "number") return { n: v };
  if (typeof v === "string") return { s: v };
  throw new Error(`not a scalar: ${JSON.stringify(v)}`);
}

function fieldOf(m, field) {
  switch (field) {
    case "type": return { s: m.type };
    case "sessionId": return { s: m.sessionId ?? "" };
    case "createdAt": return { s: m.createdAt };
    case "updatedAt": return { s: m.updatedAt };
    case "eventDate": return m.eventDate === undefined ? undefined : { s: m.eventDate };
    default: return m.metadata && field in m.metadata ? scalar(m.metadata[field]) : undefined;
  }
}

const same = (a, b) => ("n" in a && "n" in b ? a.n === b.n : "s" in a && "s" in b ? a.s === b.s : false);
/** -1, 0, 1, or undefined across kinds. Strings order by UTF-16 code units (the data is ASCII: as bytes). */
const order = (a, b) => {
  if ("n" in a && "n" in b) return Math.sign(a.n - b.n);
  if ("s" in a && "s" in b) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
  return undefined;
};

function leafMatches(have, op, raw) {
  const values = Array.isArray(raw) ? raw.map(scalar) : [scalar(raw)];
  const o = have === undefined ? undefined : order(have, values[0]);
  switch (op) {
    case "eq": return have !== undefined && same(have, values[0]);
    case "ne": return !(have !== undefined && same(have, values[0]));
    case "in": return have !== undefined && values.some((v) => same(have, v));
    case "nin": return !(have !== undefined && values.some((v) => same(have, v)));
    case "gt": return o === 1;
    case "gte": return o === 1 || o === 0;
    case "lt": return o === -1;
    case "lte": return o === -1 || o === 0;
    default: throw new Error(`unknown operator ${op}`);
  }
}

function passes(filter, m) {
  return Object.entries(filter).every(([k, v]) => {
    if (k === "AND") return v.every((f) => passes(f, m));
    if (k === "OR") return v.some((f) => passes(f, m));
    if (k === "NOT") return !passes(v, m);
    const have = fieldOf(m, k);
    if (v !== null && typeof v === "object" && !Array.isArray(v)) {
      return Object.entries(v).every(([op, x]) => leafMatches(have, op, x));
    }
    return leafMatches(have, "eq", v);
  });
}

test("the JS semantics agree with the documented cases (src/core/filter.rs unit tests)", () => {
  const none = { metadata: {} };
  for (const [f, want] of [
    [{ p: 1 }, false],
    [{ p: { ne: 1 } }, true],
    [{ p: { in: [1] } }, false],
    [{ p: { nin: [1] } }, true],
    [{ p: { gt: 0 } }, false],
    [{ NOT: { p: { gt: 0 } } }, true],
  ]) assert.equal(passes(f, none), want, JSON.stringify(f));
  const m = { metadata: { n: 2, s: "2", b: true } };
  assert.equal(passes({ n: "2" }, m), false);
  assert.equal(passes({ s: { gt: 1 } }, m), false);
  assert.equal(passes({ b: 1 }, m), true);
  assert.equal(passes({ AND: [{ n: { gte: 2 } }, { s: { in: ["1", "2"] } }] }, m), true);
});

// ---------------------------------------------------------------------------
// The three surfaces

const REST_PAGE = 50;
const RPC_PAGE = 37;
const MCP_PAGE = 41;

/** Every page of a list; `page(cursor)` answers {memories, cursor}. */
async function allPages(page, what) {
  const out = [];
  let cursor;
  for (let n = 0; n < 100; n++) {
    const r = await page(cursor);
    assert.ok(Array.isArray(r.memories), `${what}: memories is an array: ${JSON.stringify(r).slice(0, 300)}`);
    out.push(...r.memories);
    if (!r.cursor) return out;
    assert.notEqual(r.cursor, cursor, `${what}: the cursor moves on`);
    cursor = r.cursor;
  }
  assert.fail(`${what}: paging never ended`);
}

const surfaces = {
  rest: {
    list: (profile, filter, extra = {}) =>
      allPages(
        (cursor) =>
          rest("GET", profile, "/memories", {
            query: { limit: String(REST_PAGE), filter: JSON.stringify(filter), ...extra, ...(cursor ? { cursor } : {}) },
          }),
        `REST list ${JSON.stringify(filter)}`,
      ),
    recall: (profile, query, options) => rest("POST", profile, "/recall", { body: { query, ...options } }),
  },
  rpc: {
    list: (profile, filter, extra = {}) =>
      allPages((cursor) => w.call(profile, "list", { limit: RPC_PAGE, filter, ...extra, ...(cursor ? { cursor } : {}) }), `RPC list ${JSON.stringify(filter)}`),
    recall: (profile, query, options) => w.call(profile, "recall", query, options),
  },
  mcp: {
    list: (profile, filter, extra = {}) =>
      allPages(
        (cursor) => tool(mcp, "list", { limit: MCP_PAGE, filter, status: "all", ...extra, ...(cursor ? { cursor } : {}) }),
        `MCP list ${JSON.stringify(filter)}`,
      ),
    recall: (profile, query, options) => tool(mcp, "recall", { query, ...options }),
  },
};

/**
 * Fixed filters on the kinds' edges: a number never equals or orders
 * against a string, booleans are 1 and 0, a missing field matches only
 * ne and nin.
 */
const EDGE_CASES = [
  { priority: "2" },
  { priority: { gt: "1" } },
  { priority: { ne: "2" } },
  { team: { lt: 5 } },
  { draft: 1 },
  { draft: { in: [0] } },
  { draft: { gte: 1 } },
  { draft: { nin: [true] } },
  { missing: { ne: 1 } },
  { missing: { nin: ["x"] } },
  { NOT: { priority: { gte: 0 } } },
  { priority: { in: [1, "3", 4] } },
];

// State the property test's steps share.
const data = { memories: [], byId: new Map() };

test("1. one REST import fills a profile with 150 memories carrying random metadata; the outbox drains", async () => {
  const r = rng(0x5eedf117);
  data.memories = randomMemories(r, MEMORIES);
  data.byId = new Map(data.memories.map((m) => [m.id, m]));
  assert.equal(data.byId.size, MEMORIES, "ids are unique");
  const report = await rest("POST", PROFILE, "/import", { raw: exportOf(data.memories), headers: { "content-type": "application/x-ndjson" } });
  assert.equal(report.memories, MEMORIES, JSON.stringify(report));
  const stats = await drained(PROFILE);
  assert.equal(stats.memories, MEMORIES, JSON.stringify(stats));
  mcp = await connectMcp(PROFILE);

  // Metadata is stored and listed as it was given, on every surface.
  const restAll = await allPages((cursor) => rest("GET", PROFILE, "/memories", { query: { limit: "1000", ...(cursor ? { cursor } : {}) } }), "REST list");
  assert.equal(restAll.length, MEMORIES);
  for (const e of restAll) assert.deepEqual(e.metadata ?? {}, data.byId.get(e.id).metadata ?? {}, `REST entry ${e.id}`);
  const rpcAll = await allPages((cursor) => w.call(PROFILE, "list", { limit: 1000, ...(cursor ? { cursor } : {}) }), "RPC list");
  const mcpAll = await allPages((cursor) => tool(mcp, "list", { limit: 1000, ...(cursor ? { cursor } : {}) }), "MCP list");
  const meta = (xs) => xs.map((e) => [e.id, e.metadata ?? {}]);
  assert.deepEqual(meta(rpcAll), meta(restAll), "RPC lists the same entries and metadata as REST");
  assert.deepEqual(meta(mcpAll), meta(restAll), "MCP lists the same entries and metadata as REST");
  const detail = await rest("GET", PROFILE, `/memories/${data.memories[7].id}`);
  assert.deepEqual(detail.metadata ?? {}, data.memories[7].metadata ?? {}, "GET .../memories/{id} carries metadata");
  const kinds = new Set(data.memories.flatMap((m) => Object.values(m.metadata ?? {}).map((v) => typeof v)));
  assert.deepEqual([...kinds].sort(), ["boolean", "number", "string"], "the data holds every kind of value");
});

test("2. 12 edge-case and 40 random filters: list is exactly the passing memories and recall returns only passing ones, the same on REST, RPC and MCP", async () => {
  assert.equal(data.memories.length, MEMORIES, "prerequisite: the profile was filled");
  const r = rng(0xf117e25);
  const byId = data.byId;
  let nonemptyRecalls = 0;
  let nonemptyLists = 0;
  let partial = 0;
  const newestFirst = (a, b) => (a < b ? 1 : a > b ? -1 : 0);
  // The kinds' edge cases first, then the random filters.
  const filters = [...EDGE_CASES, ...Array.from({ length: FILTERS }, () => randomFilter(r))];
  for (const [n, filter] of filters.entries()) {
    const label = `filter #${n} ${JSON.stringify(filter)}`;
    const want = data.memories.filter((m) => passes(filter, m)).map((m) => m.id).sort(newestFirst);
    if (want.length > 0) nonemptyLists++;
    if (want.length > 0 && want.length < MEMORIES) partial++;

    // list: exactly the passing memories, newest first, on every surface.
    const listed = {};
    for (const [name, s] of Object.entries(surfaces)) {
      const entries = await s.list(PROFILE, filter);
      listed[name] = entries.map((e) => e.id);
      assert.deepEqual([...listed[name]].sort(newestFirst), want, `${name} list with ${label}`);
      for (const e of entries) assert.deepEqual(e.metadata ?? {}, byId.get(e.id).metadata ?? {}, `${name} list entry ${e.id}: its metadata`);
    }
    assert.deepEqual(listed.rpc, listed.rest, `RPC and REST list in the same order with ${label}`);
    assert.deepEqual(listed.mcp, listed.rest, `MCP and REST list in the same order with ${label}`);

    // recall: nothing that fails the filter, the same ids in the same order.
    const query = r.pick(WORDS);
    const recalled = {};
    for (const [name, s] of Object.entries(surfaces)) {
      const res = await s.recall(PROFILE, query, { limit: 20, filter });
      assert.ok(Array.isArray(res.candidates), `${name} recall: candidates: ${JSON.stringify(res).slice(0, 300)}`);
      recalled[name] = res.candidates.map((c) => c.id);
      assert.ok(res.candidates.length <= 20, `${name} recall honours limit 20`);
      for (const c of res.candidates) {
        const m = byId.get(c.id);
        assert.ok(m, `${name} recall of ${query} with ${label} returned ${c.id}, which is not in the profile`);
        assert.ok(passes(filter, m), `${name} recall of ${query} with ${label} returned ${c.id} (${JSON.stringify(m.metadata)}, ${m.type}, ${m.sessionId}, ${m.createdAt}), which fails it`);
        assert.deepEqual(c.metadata ?? {}, m.metadata ?? {}, `${name} recall candidate ${c.id}: its metadata`);
      }
    }
    assert.deepEqual(recalled.rpc, recalled.rest, `RPC and REST recall of ${query} with ${label}`);
    assert.deepEqual(recalled.mcp, recalled.rest, `MCP and REST recall of ${query} with ${label}`);
    // A passing memory holding the word is found when there is one.
    const withWord = want.filter((id) => byId.get(id).content.split(" ").includes(query));
    if (withWord.length > 0) {
      nonemptyRecalls++;
      assert.ok(recalled.rest.some((id) => withWord.includes(id)), `recall of ${query} with ${label} finds none of the ${withWord.length} passing memories holding it: ${recalled.rest}`);
    }
    // No filtered-out memory takes a slot: with at most 20 passing, every
    // one holding the word is among the 20.
    if (want.length <= 20) {
      for (const id of withWord) assert.ok(recalled.rest.includes(id), `recall of ${query} with ${label} (${want.length} passing) misses ${id}: ${recalled.rest}`);
    }
  }
  // The filters are not degenerate: most pass some memories but not all.
  const total = filters.length;
  assert.ok(nonemptyLists * 2 > total, `only ${nonemptyLists} of ${total} filters pass anything`);
  assert.ok(partial * 3 > total, `only ${partial} of ${total} filters pass some but not all memories`);
  assert.ok(nonemptyRecalls * 3 > total, `only ${nonemptyRecalls} of ${total} filtered recalls had a passing memory holding the word`);
});

test("2b. a narrow filter (no agent, priority 4): recall with limit 5 returns only passing memories, the same on REST, RPC and MCP", async () => {
  // The filter keeps only memories without an agentId with priority 4: a
  // few of the 150, most outranked for "fox" by memories it drops.
  const filter = { AND: [{ agentId: { nin: AGENTS } }, { priority: 4 }] };
  const want = new Set(data.memories.filter((m) => passes(filter, m)).map((m) => m.id));
  assert.ok(want.size > 0 && want.size < 20, `a few memories pass: ${want.size}`);
  const query = "fox";
  const results = [];
  for (const [name, s] of Object.entries(surfaces)) {
    const ids = (await s.recall(PROFILE, query, { limit: 5, filter })).candidates.map((c) => c.id);
    for (const id of ids) assert.ok(want.has(id), `${name}: ${id} fails ${JSON.stringify(filter)}`);
    results.push(ids);
  }
  assert.deepEqual(results[1], results[0]);
  assert.deepEqual(results[2], results[0]);
  const withFox = [...want].filter((id) => data.byId.get(id).content.includes("fox"));
  assert.ok(withFox.length > 0, "a memory passing the filter says fox");
  assert.ok(results[0].some((id) => withFox.includes(id)), `a passing fox memory is recalled: ${results[0]}`);
});

test("2c. export with a filter (REST: URL-encoded JSON; RPC: an object) holds exactly the passing memories", async () => {
  const filter = { OR: [{ agentId: "reviewer" }, { AND: [{ draft: true }, { priority: { gte: 3 } }] }] };
  const r = await api.send("GET", NS, PROFILE, "/export", { query: { filter: JSON.stringify(filter) } });
  assert.equal(r.status, 200, r.text.slice(0, 300));
  const lines = r.text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
  assert.equal(lines[0].kind, "header");
  const got = lines.filter((l) => l.kind === "memory").map((l) => l.id).sort();
  const want = data.memories.filter((m) => passes(filter, m)).map((m) => m.id).sort();
  assert.ok(want.length > 0 && want.length < MEMORIES, `the filter narrows: ${want.length}`);
  assert.deepEqual(got, want);
  for (const l of lines.filter((l) => l.kind === "memory")) assert.deepEqual(l.metadata ?? {}, data.byId.get(l.id).metadata ?? {});
  // RPC: export({filter}) with the filter as an object.
  const text = await w.call(PROFILE, "export", { filter });
  assert.equal(typeof text, "string", `RPC export resolves to the NDJSON text: ${JSON.stringify(text).slice(0, 200)}`);
  const viaRpc = text.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l)).filter((l) => l.kind === "memory").map((l) => l.id).sort();
  assert.deepEqual(viaRpc, want, "RPC export with a filter");
});

test("2d. the published routes (/client/v4/...) take the same filter: list with per_page and cursor, recall", async () => {
  const filter = { AND: [{ priority: { gte: 2 } }, { NOT: { team: "web" } }] };
  const want = data.memories.filter((m) => passes(filter, m)).map((m) => m.id).sort();
  assert.ok(want.length > 0 && want.length < MEMORIES, `the filter narrows: ${want.length}`);
  const base = `/client/v4/accounts/1234567890/agent-memory/namespaces/${NS}/profiles/${PROFILE}`;
  const headers = { authorization: `Bearer ${TOKEN}` };
  const got = [];
  let cursor = "";
  for (let page = 0; page < 50; page++) {
    const qs = new URLSearchParams({ per_page: "25", filter: JSON.stringify(filter), ...(cursor ? { cursor } : {}) });
    const res = await w.fetch(`${base}/memories?${qs}`, { headers });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body).slice(0, 400));
    assert.ok(Array.isArray(body.result), JSON.stringify(body).slice(0, 400));
    got.push(...body.result.map((m) => m.id));
    // Absent on the last page, as the API schema says.
    cursor = body.result_info.cursor;
    if (cursor === undefined) break;
  }
  assert.deepEqual([...got].sort(), want);
  const res = await w.fetch(`${base}/recall`, {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify({ query: "cedar", filter }),
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body).slice(0, 400));
  const ids = body.result.candidates.map((c) => c.id);
  assert.ok(ids.length > 0, "something passing the filter is recalled");
  for (const id of ids) assert.ok(want.includes(id), `published recall returned ${id}, which fails ${JSON.stringify(filter)}`);
  const own = (await surfaces.rest.recall(PROFILE, "cedar", { filter })).candidates.map((c) => c.id);
  assert.deepEqual(ids, own, "the published and the original recall route answer the same");
});

test("2e. a broad filter over 8,000 memories walks the channels' rankings, a narrow one reads what passes ahead (explain says which and why); each recall equals one over a profile holding only the passing memories", async () => {
  const r = rng(0xb20ad);
  const N = 8000;
  // One memory in eighty is bo's, the rest ana's: {userId: "ana"} passes
  // ~99% (walking ~2,000 deep tests ~2,030, fewer than the ~7,900 rows
  // read ahead counted at a third), {userId: "bo"} ~1%.
  const all = randomMemories(r, N).map((m, i) => ({ ...m, metadata: { userId: i % 80 === 7 ? "bo" : "ana" } }));
  broad.all = all;
  await fill("filters-broad", all);
  const unfiltered = await rest("POST", "filters-broad", "/recall", { body: { query: "heron", limit: 20, explain: true } });
  assert.equal(unfiltered.explain.narrowing, undefined, "an unfiltered recall is not narrowed");
  for (const [user, way] of [["ana", "walk"], ["bo", "ahead"]]) {
    const passing = all.filter((m) => m.metadata.userId === user);
    const alone = `filters-alone-${user}`;
    await fill(alone, passing);
    for (const query of ["heron", "cedar", "tide"]) {
      const filter = { userId: user };
      const got = await rest("POST", "filters-broad", "/recall", { body: { query, limit: 20, filter, explain: true } });
      const { narrowing } = got.explain;
      assert.equal(narrowing?.way, way, `${JSON.stringify(filter)}: ${JSON.stringify(narrowing)}`);
      assert.equal(narrowing.sample.tested, 256, JSON.stringify(narrowing));
      assert.equal(narrowing.sample.span, N, JSON.stringify(narrowing));
      const share = narrowing.sample.passed / narrowing.sample.tested;
      assert.ok(Math.abs(share - passing.length / N) < 0.05, `the sample saw ${share} pass, ${passing.length / N} do`);
      const ids = got.candidates.map((c) => c.id);
      assert.ok(ids.length > 0, `${query} with ${JSON.stringify(filter)} finds something`);
      const want = (await rest("POST", alone, "/recall", { body: { query, limit: 20 } })).candidates.map((c) => c.id);
      assert.deepEqual(ids, want, `${query} with ${JSON.stringify(filter)} (${way}) against a profile of the ${passing.length} passing memories`);
      broad.recalls.push({ query, filter, way, ids, channels: channelIds(got) });
    }
  }
});

test("2f. with nothing resident (MEMORY_BUDGET_MB=0: SQLite alone, the vector codes streamed for each query) the filtered recalls of 2e answer the same, walking and reading ahead", async () => {
  assert.equal(broad.recalls.length, 6, "2e ran");
  const cold = await startWorker({ vars: { MEMORY_BUDGET_MB: "0" } });
  try {
    const client = restClient(cold, TOKEN);
    await fill("filters-broad", broad.all, client);
    for (const { query, filter, way, ids, channels } of broad.recalls) {
      const got = await rest("POST", "filters-broad", "/recall", { body: { query, limit: 20, filter, explain: true } }, client);
      assert.equal(got.explain.narrowing?.way, way, JSON.stringify(got.explain.narrowing));
      const what = `${query} with ${JSON.stringify(filter)} (${way}) with nothing resident`;
      // Each channel's own hits too: the vector channel's first pass is
      // drawn from the passing memories, as the resident copy draws it.
      assert.deepEqual(channelIds(got), channels, `${what}: each channel's hits`);
      assert.ok(channels.find(([c]) => c === "vector")[1].length >= 50, `${what}: the vector channel fills its depth`);
      assert.deepEqual(got.candidates.map((c) => c.id), ids, what);
    }
    const stats = await rest("GET", "filters-broad", "/stats", {}, client);
    assert.equal(stats.residentBytes, 0, "nothing was resident");
  } finally {
    await cold.dispose();
  }
});

// ---------------------------------------------------------------------------
// asOf

test("3. asOf: a fact said on day 1 and superseded on day 10 is what was active on day 5; its successor on day 15 (REST)", async () => {
  const P = "filters-as-of";
  const base = Date.parse("2026-03-16T00:00:00.000Z");
  const day = (d) => new Date(base + d * DAY).toISOString();
  // A fact remembered now: active at no instant before now.
  const city = await rest("POST", P, "/remember", {
    body: { content: "The user lives in Lisbon.", key: "user.city", type: "fact", metadata: { agentId: "chat", userId: "ana" } },
  });
  assert.equal(city.key, "user.city");
  assert.deepEqual(city.metadata, { agentId: "chat", userId: "ana" });
  // Said on day 1 and day 10 (the messages' timestamps), ingested now.
  await rest("POST", P, "/ingest", {
    body: { sessionId: "early", messages: [{ role: "user", content: "Use pnpm, not npm, for this project.", timestamp: day(1) }] },
  });
  await rest("POST", P, "/ingest", {
    body: { sessionId: "later", messages: [{ role: "user", content: "Actually, switch to npm for this project.", timestamp: day(10) }] },
  });
  await drained(P);

  const everything = await allPages((cursor) => rest("GET", P, "/memories", { query: { limit: "100", status: "all", ...(cursor ? { cursor } : {}) } }), "list");
  const old = everything.find((m) => m.summary.includes("pnpm"));
  const neu = everything.find((m) => m.summary.includes("switch to npm"));
  assert.ok(old && neu, `both facts are stored: ${JSON.stringify(everything, null, 1)}`);
  assert.equal(old.status, "superseded", JSON.stringify(old));
  assert.equal(neu.status, "active", JSON.stringify(neu));

  const listedAt = async (instant) =>
    (await allPages((cursor) => rest("GET", P, "/memories", { query: { limit: "100", asOf: instant, ...(cursor ? { cursor } : {}) } }), `list asOf ${instant}`)).map((m) => m.id);
  const recalledAt = async (instant) =>
    (await rest("POST", P, "/recall", { body: { query: "Which package manager does the project use?", asOf: instant } })).candidates.map((c) => c.id);

  for (const [what, ids] of [["list", await listedAt(day(5))], ["recall", await recalledAt(day(5))]]) {
    assert.ok(ids.includes(old.id), `${what} asOf day 5 holds the day-1 fact: ${ids}`);
    assert.ok(!ids.includes(neu.id), `${what} asOf day 5 lacks the day-10 fact: ${ids}`);
    assert.ok(!ids.includes(city.id), `${what} asOf day 5 lacks what was remembered now: ${ids}`);
  }
  for (const [what, ids] of [["list", await listedAt(day(15))], ["recall", await recalledAt(day(15))]]) {
    assert.ok(ids.includes(neu.id), `${what} asOf day 15 holds the day-10 fact: ${ids}`);
    assert.ok(!ids.includes(old.id), `${what} asOf day 15 lacks the superseded day-1 fact: ${ids}`);
  }
  assert.deepEqual(await listedAt(day(0)), [], "nothing was said yet on day 0");
  // The published query name as_of reads the same.
  const published = await api.send("GET", NS, P, "/memories", { query: { as_of: day(5), limit: "100" } });
  assert.equal(published.status, 200, published.text);
  assert.deepEqual(published.body.result.memories.map((m) => m.id), await listedAt(day(5)));
  // Now (a second ahead): the remembered fact and the successor.
  const later = new Date(Date.now() + 1000).toISOString();
  const now = await listedAt(later);
  assert.ok(now.includes(city.id) && now.includes(neu.id) && !now.includes(old.id), `asOf now: ${now}`);
  // asOf and a filter together.
  const both = await allPages(
    (cursor) => rest("GET", P, "/memories", { query: { asOf: later, filter: JSON.stringify({ agentId: "chat" }), ...(cursor ? { cursor } : {}) } }),
    "list asOf + filter",
  );
  assert.deepEqual(both.map((m) => m.id), [city.id]);

  // GET .../memories/{id}: each version's interval.
  const detail = await rest("GET", P, `/memories/${neu.id}`);
  assert.equal(detail.validFrom, day(10), JSON.stringify(detail));
  assert.equal(detail.validTo, undefined, "the successor still holds");
  const versions = (detail.versions ?? []).map((v) => [v.id, v.validFrom ?? null, v.validTo ?? null]);
  assert.deepEqual(
    versions.filter(([id]) => id === old.id || id === neu.id).sort(),
    [[old.id, day(1), day(10)], [neu.id, day(10), null]].sort(),
    `versions: ${JSON.stringify(detail.versions)}`,
  );
  const oldDetail = await rest("GET", P, `/memories/${old.id}`);
  assert.equal(oldDetail.validFrom, day(1));
  assert.equal(oldDetail.validTo, day(10));
  // RPC and MCP see the same at day 5.
  const rpcIds = (await allPages((cursor) => w.call(P, "list", { asOf: day(5), ...(cursor ? { cursor } : {}) }), "RPC list asOf")).map((m) => m.id);
  assert.deepEqual(rpcIds, await listedAt(day(5)), "RPC list asOf day 5");
  const client = await connectMcp(P);
  const mcpIds = (await allPages((cursor) => tool(client, "list", { asOf: day(5), ...(cursor ? { cursor } : {}) }), "MCP list asOf")).map((m) => m.id);
  assert.deepEqual(mcpIds, await listedAt(day(5)), "MCP list asOf day 5");
  const rpcRecall = (await w.call(P, "recall", "Which package manager does the project use?", { asOf: day(5) })).candidates.map((c) => c.id);
  assert.deepEqual(rpcRecall, await recalledAt(day(5)), "RPC recall asOf day 5");
  // asOf as a Date object, as a Worker passes it over the binding.
  const rpcRecallDate = (await w.call(P, "recall", "Which package manager does the project use?", { asOf: { $date: day(5) } })).candidates.map((c) => c.id);
  assert.deepEqual(rpcRecallDate, rpcRecall, "RPC recall with asOf as a Date");
  const rpcListDate = (await allPages((cursor) => w.call(P, "list", { asOf: { $date: day(15) }, ...(cursor ? { cursor } : {}) }), "RPC list asOf Date")).map((m) => m.id);
  assert.deepEqual(rpcListDate, await listedAt(day(15)), "RPC list with asOf as a Date");
});

// ---------------------------------------------------------------------------
// Bad input

test("4. bad filters and metadata: 400 in the error envelope on REST, refused on RPC and MCP; nothing is written", async () => {
  const P = "filters-bad";
  const checks = [
    ["POST /recall with an unknown operator", () => api.post(NS, P, "/recall", { query: "fox", filter: { priority: { like: "a%" } } })],
    ["POST /recall with an empty AND", () => api.post(NS, P, "/recall", { query: "fox", filter: { AND: [] } })],
    ["GET /memories?filter=not-json", () => api.get(NS, P, "/memories", { query: { filter: "not-json" } })],
    ["GET /memories with an unknown operator", () => api.get(NS, P, "/memories", { query: { filter: JSON.stringify({ p: { like: 1 } }) } })],
    ["GET /memories?asOf=yesterday", () => api.get(NS, P, "/memories", { query: { asOf: "yesterday" } })],
    ["GET /export?filter=not-json", () => api.get(NS, P, "/export", { query: { filter: "not-json" } })],
    ["POST /remember with metadata {agentId: 3}", () => api.post(NS, P, "/remember", { content: "The user prefers tea over coffee.", metadata: { agentId: 3 } })],
    ["POST /remember with metadata {type: 'x'}", () => api.post(NS, P, "/remember", { content: "The user prefers tea over coffee.", metadata: { type: "x" } })],
    ["POST /remember with a nested metadata value", () => api.post(NS, P, "/remember", { content: "The user prefers tea over coffee.", metadata: { a: { b: 1 } } })],
    ["POST /ingest with metadata {userId: true}", () => api.post(NS, P, "/ingest", { sessionId: "s", messages: [{ role: "user", content: "I prefer tea over coffee." }], metadata: { userId: true } })],
  ];
  for (const [what, send] of checks) {
    const e = failsWith(await send(), 400, what);
    assert.equal(e.code, 10001, `${what}: code ${e.code} (${e.message})`);
  }

  // RPC refuses the same input with code 10001 ("... (10001)").
  const rpcRefuses = async (what, op, ...args) => {
    await assert.rejects(w.call(P, op, ...args), (e) => {
      assert.match(String(e.message), /10001/, `${what}: ${e.message}`);
      return true;
    }, what);
  };
  await rpcRefuses("RPC recall with an unknown operator", "recall", "fox", { filter: { priority: { like: "a%" } } });
  await rpcRefuses("RPC list with filter text not-json", "list", { filter: "not-json" });
  await rpcRefuses("RPC remember with metadata {agentId: 3}", "remember", { content: "The user prefers tea over coffee.", metadata: { agentId: 3 } });

  // MCP: a tool error with code 10001 (or the arguments refused outright).
  const client = await connectMcp(P);
  for (const [what, name, args] of [
    ["MCP recall with an unknown operator", "recall", { query: "fox", filter: { priority: { like: "a%" } } }],
    ["MCP list with an unknown operator", "list", { filter: { priority: { like: "a%" } } }],
    ["MCP remember with metadata {agentId: 3}", "remember", { content: "The user prefers tea over coffee.", metadata: { agentId: 3 } }],
  ]) {
    const r = await client.callTool({ name, arguments: args });
    assert.equal(r.isError, true, `${what}: ${JSON.stringify(r)}`);
    assert.equal(r.structuredContent.error.code, 10001, `${what}: ${JSON.stringify(r.structuredContent)}`);
  }

  // Nothing was written.
  const listed = await rest("GET", P, "/memories", { query: { limit: "100" } });
  assert.deepEqual(listed.memories, [], JSON.stringify(listed));
  const stats = await rest("GET", P, "/stats");
  assert.equal(stats.memories, 0, JSON.stringify(stats));
  assert.equal(stats.messages, 0, JSON.stringify(stats));
  // And valid metadata is taken on every surface.
  const viaRest = await rest("POST", P, "/remember", { body: { content: "The user prefers tea over coffee.", metadata: { agentId: "chat", priority: 2, draft: false } } });
  const viaRpc = await w.call(P, "remember", { content: "The user drinks green tea every afternoon.", metadata: { agentId: "coder", priority: 3 } });
  const viaMcp = await tool(client, "remember", { content: "The user keeps a tea kettle on the desk.", metadata: { agentId: "planner", draft: true } });
  assert.deepEqual(viaRest.metadata, { agentId: "chat", priority: 2, draft: false });
  assert.deepEqual(viaRpc.metadata, { agentId: "coder", priority: 3 });
  assert.deepEqual(viaMcp.metadata, { agentId: "planner", draft: true });
  const narrowed = await rest("GET", P, "/memories", { query: { filter: JSON.stringify({ priority: { gte: 2 } }) } });
  assert.deepEqual(narrowed.memories.map((m) => m.id).sort(), [viaRest.id, viaRpc.id].sort());
});

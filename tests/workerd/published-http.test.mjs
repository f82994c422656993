// The published HTTP API of Cloudflare Agent Memory, sent exactly as its
// reference documents it (docs/compat/published-interface.md §2 and §6):
// paths under /client/v4/accounts/<account id>/agent-memory, the documented
// request bodies verbatim, the documented query names (per_page, cursor,
// session_id, type), `Authorization: Bearer dev-token` and
// `Content-Type: application/json`.
//
// Every response is checked against the SHAPE of the documented example
// (§2.2, copied verbatim below): `shapeOf(example)` turns an example into
// the keys it requires and their JSON types; a response must carry every
// documented key with the same type. Extra keys are allowed (extensions).
// Error responses must use the documented error envelope (§2.4).
//
// The tests run in the order of a realistic flow (create a namespace, write,
// read, delete) and share the state that flow builds.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";

const ACCOUNT_ID = "1234567890";
const BASE = `/client/v4/accounts/${ACCOUNT_ID}/agent-memory`;
const TOKEN = "dev-token";

const NAMESPACE = "support-agent"; // the documented example name
const OTHER_NAMESPACE = "billing-agent";
const PROFILE = "alice";
const SESSION = "chat-2026-04-21"; // the documented example session
const OTHER_SESSION = "chat-2026-04-22";

// ---------------------------------------------------------------------------
// §2.2 documented example responses, verbatim.

const EXAMPLE_NAMESPACE = JSON.parse(`{
	"result": {
		"id": "01JSGCEXAMPLE000000000000",
		"name": "support-agent",
		"created_at": "2026-04-21T00:00:00.000Z",
		"updated_at": "2026-04-21T00:00:00.000Z"
	},
	"success": true,
	"errors": [],
	"messages": []
}`);

const EXAMPLE_NAMESPACE_LIST = JSON.parse(`{
	"result": [
		{
			"id": "01JSGCEXAMPLE000000000000",
			"name": "support-agent",
			"created_at": "2026-04-21T00:00:00.000Z",
			"updated_at": "2026-04-21T00:00:00.000Z"
		}
	],
	"success": true,
	"errors": [],
	"messages": [],
	"result_info": {
		"cursor": "next-cursor",
		"per_page": 50,
		"count": 1
	}
}`);

const EXAMPLE_NULL = JSON.parse(`{
	"result": null,
	"success": true,
	"errors": [],
	"messages": []
}`);

const EXAMPLE_MEMORY = JSON.parse(`{
	"result": {
		"id": "01JSGCEXAMPLE000000000000",
		"type": "instruction",
		"summary": "The user prefers concise answers.",
		"content": "The user prefers concise answers.",
		"sessionId": "chat-2026-04-21",
		"createdAt": "2026-04-21T00:00:00.000Z",
		"updatedAt": "2026-04-21T00:00:00.000Z"
	},
	"success": true,
	"errors": [],
	"messages": []
}`);

const EXAMPLE_RECALL = JSON.parse(`{
	"result": {
		"answer": "The user prefers concise answers.",
		"count": 1,
		"candidates": [
			{
				"id": "01JSGCEXAMPLE000000000000",
				"summary": "The user prefers concise answers.",
				"sessionId": "chat-2026-04-21",
				"score": 0.87
			}
		]
	},
	"success": true,
	"errors": [],
	"messages": []
}`);

const EXAMPLE_MEMORY_LIST = JSON.parse(`{
	"result": [
		{
			"id": "01JSGCEXAMPLE000000000000",
			"type": "instruction",
			"summary": "The user prefers concise answers.",
			"sessionId": "chat-2026-04-21",
			"createdAt": "2026-04-21T00:00:00.000Z",
			"updatedAt": "2026-04-21T00:00:00.000Z"
		}
	],
	"success": true,
	"errors": [],
	"messages": [],
	"result_info": {
		"cursor": "next-cursor",
		"per_page": 50,
		"count": 1
	}
}`);

// The API schema's list profiles operation (agent-memory-profile-list):
// its example values, in the published envelope.
const EXAMPLE_PROFILE_LIST = JSON.parse(`{
	"result": [
		{
			"name": "my-profile",
			"createdAt": "2025-09-21T14:30:00Z"
		}
	],
	"success": true,
	"errors": [],
	"messages": [],
	"result_info": {
		"count": 1,
		"cursor": "eyJ2IjoxLCJuIjoibXktcHJvZmlsZSJ9",
		"per_page": 20
	}
}`);

/** A list example as its last page: the API schema's `result_info.cursor` is "omitted on the last page". */
function lastPage(example) {
  const copy = structuredClone(example);
  delete copy.result_info.cursor;
  return copy;
}

const EXAMPLE_SUMMARY = JSON.parse(`{
	"result": {
		"summary": "## Summary\\n\\nThe user prefers concise answers."
	},
	"success": true,
	"errors": [],
	"messages": []
}`);

const EXAMPLE_ERROR = JSON.parse(`{
	"result": null,
	"success": false,
	"errors": [
		{
			"code": 10008,
			"message": "Namespace name already exists"
		}
	],
	"messages": []
}`);

// ---------------------------------------------------------------------------
// §2.2 documented request bodies, verbatim (sent as these exact strings).

const BODY_CREATE_NAMESPACE = `{"name": "support-agent"}`;
const BODY_INGEST = `{
    "messages": [
      {
        "role": "user",
        "content": "I prefer concise answers.",
        "timestamp": "2026-04-21T00:00:00.000Z"
      }
    ],
    "sessionId": "chat-2026-04-21"
  }`;
const BODY_REMEMBER = `{"content": "The user prefers concise answers.", "sessionId": "chat-2026-04-21"}`;
const BODY_RECALL = `{"query": "How should I answer this user?", "thinkingLevel": "low", "responseLength": "medium"}`;
const BODY_SUMMARY = `{}`;
const BODY_SUMMARY_SESSION = `{"sessionId": "chat-2026-04-21"}`;

// ---------------------------------------------------------------------------
// Shape checker.

/**
 * The shape a documented example requires: "string" | "number" | "boolean"
 * | "null" for scalars, { array: elementShape | null } for arrays (the
 * first element is the shape of every element), { object: { key: shape } }
 * for objects. A key named `sessionId` is "string|null" (§6.2).
 */
function shapeOf(example, key) {
  if (key === "sessionId") return "string|null";
  if (example === null) return "null";
  if (Array.isArray(example)) return { array: example.length ? shapeOf(example[0]) : null };
  if (typeof example === "object") {
    return { object: Object.fromEntries(Object.entries(example).map(([k, v]) => [k, shapeOf(v, k)])) };
  }
  return typeof example;
}

function typeName(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}

/** Every way `value` misses `shape`, as "path: expected X, got Y" lines. */
function shapeProblems(value, shape, at = "$") {
  if (typeof shape === "string") {
    return shape.split("|").includes(typeName(value)) ? [] : [`${at}: expected ${shape}, got ${typeName(value)}`];
  }
  if (shape.array !== undefined) {
    if (!Array.isArray(value)) return [`${at}: expected array, got ${typeName(value)}`];
    if (shape.array === null) return [];
    return value.flatMap((v, i) => shapeProblems(v, shape.array, `${at}[${i}]`));
  }
  if (typeName(value) !== "object") return [`${at}: expected object, got ${typeName(value)}`];
  return Object.entries(shape.object).flatMap(([k, s]) =>
    k in value ? shapeProblems(value[k], s, `${at}.${k}`) : [`${at}.${k}: missing`],
  );
}

function assertShape(body, example, what) {
  const problems = shapeProblems(body, shapeOf(example));
  assert.deepEqual(problems, [], `${what} does not have the documented shape:\n${JSON.stringify(body, null, 2)}`);
}

test("shapeOf: each documented example fits its own shape; extra keys and a null sessionId pass; missing or mistyped keys fail", () => {
  const examples = [EXAMPLE_NAMESPACE, EXAMPLE_NAMESPACE_LIST, EXAMPLE_NULL, EXAMPLE_MEMORY, EXAMPLE_RECALL, EXAMPLE_MEMORY_LIST, EXAMPLE_PROFILE_LIST, EXAMPLE_SUMMARY, EXAMPLE_ERROR];
  for (const ex of examples) assert.deepEqual(shapeProblems(ex, shapeOf(ex)), []);
  const shape = shapeOf(EXAMPLE_MEMORY);
  const memory = structuredClone(EXAMPLE_MEMORY);
  memory.result.sessionId = null; // string or null
  memory.result.key = "extension"; // extra keys allowed
  assert.deepEqual(shapeProblems(memory, shape), []);
  delete memory.result.updatedAt;
  memory.result.createdAt = 0;
  assert.deepEqual(shapeProblems(memory, shape), ["$.result.createdAt: expected string, got number", "$.result.updatedAt: missing"]);
  assert.deepEqual(shapeProblems({ ...EXAMPLE_NAMESPACE_LIST, result_info: { cursor: null, per_page: 50 } }, shapeOf(EXAMPLE_NAMESPACE_LIST)), [
    "$.result_info.cursor: expected string, got null",
    "$.result_info.count: missing",
  ]);
  assert.deepEqual(shapeProblems({ ...EXAMPLE_RECALL, result: { ...EXAMPLE_RECALL.result, candidates: [{ id: "x", summary: "s", score: "1" }] } }, shapeOf(EXAMPLE_RECALL)), [
    "$.result.candidates[0].sessionId: missing",
    "$.result.candidates[0].score: expected number, got string",
  ]);
  assert.deepEqual(shapeProblems(EXAMPLE_NULL, shapeOf(EXAMPLE_MEMORY)), ["$.result: expected object, got null"]);
});

// ---------------------------------------------------------------------------
// HTTP.

let w;
before(async () => {
  w = await startWorker();
});
after(async () => {
  await w?.dispose();
});

/**
 * One request. `body` is sent as given (a string is sent verbatim);
 * `token: null` sends no Authorization header.
 */
async function send(method, path, { body, token = TOKEN } = {}) {
  const headers = {};
  if (token !== null) headers.Authorization = `Bearer ${token}`;
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = typeof body === "string" ? body : JSON.stringify(body);
  }
  const res = await w.fetch(`${BASE}${path}`, init);
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return {
    status: res.status,
    contentType: res.headers.get("content-type") ?? "",
    body: json,
    what: `${method} ${BASE}${path} -> ${res.status} ${text.slice(0, 300)}`,
  };
}

/** A success: `status` (200 unless the reference documents another), JSON, the documented shape, the success envelope. */
function ok(r, example, status = 200) {
  assert.equal(r.status, status, r.what);
  assert.match(r.contentType, /^application\/json/, r.what);
  assert.notEqual(r.body, undefined, `not JSON: ${r.what}`);
  assertShape(r.body, example, r.what);
  assert.equal(r.body.success, true, r.what);
  assert.deepEqual(r.body.errors, [], r.what);
  assert.deepEqual(r.body.messages, [], r.what);
  return r.body.result;
}

/** A failure with `status` in the documented error envelope (§2.4); returns errors[0]. */
function fails(r, status) {
  assert.equal(r.status, status, r.what);
  assert.match(r.contentType, /^application\/json/, r.what);
  assert.notEqual(r.body, undefined, `not JSON: ${r.what}`);
  assertShape(r.body, EXAMPLE_ERROR, r.what);
  assert.equal(r.body.result, null, r.what);
  assert.equal(r.body.success, false, r.what);
  assert.ok(r.body.errors.length >= 1, `no error entry: ${r.what}`);
  for (const e of r.body.errors) {
    assert.equal(typeof e.code, "number", r.what);
    assert.equal(typeof e.message, "string", r.what);
    assert.notEqual(e.message, "", r.what);
  }
  assert.deepEqual(r.body.messages, [], r.what);
  return r.body.errors[0];
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const MEMORY_TYPES = ["fact", "event", "instruction", "task"];

const ns = (name = NAMESPACE) => `/namespaces/${name}`;
const prof = (profile = PROFILE, name = NAMESPACE) => `${ns(name)}/profiles/${profile}`;

function assertNamespace(n, name) {
  assert.equal(n.name, name);
  assert.equal(typeof n.id, "string");
  assert.notEqual(n.id, "");
  assert.match(n.created_at, ISO_MS, "created_at is an ISO-8601 string with milliseconds and Z (§6.1)");
  assert.match(n.updated_at, ISO_MS, "updated_at is an ISO-8601 string with milliseconds and Z (§6.1)");
}

function assertMemory(m) {
  assert.equal(typeof m.id, "string");
  assert.notEqual(m.id, "");
  assert.ok(MEMORY_TYPES.includes(m.type), `type ${m.type} is one of ${MEMORY_TYPES}`);
  assert.match(m.createdAt, ISO_MS, "createdAt is an ISO-8601 string with milliseconds and Z (§6.1)");
  assert.match(m.updatedAt, ISO_MS, "updatedAt is an ISO-8601 string with milliseconds and Z (§6.1)");
}

function assertListEntry(e) {
  assert.ok(!("content" in e), `list entries omit content (§6.7): ${JSON.stringify(e)}`);
  assert.ok("sessionId" in e, `sessionId is null, never absent (§6.2): ${JSON.stringify(e)}`);
  assertMemory(e);
}

/** GET .../memories with `query`; checks shape, entries and result_info. */
async function listMemories(query = {}, profile = PROFILE, name = NAMESPACE) {
  const qs = new URLSearchParams(query).toString();
  const r = await send("GET", `${prof(profile, name)}/memories${qs ? `?${qs}` : ""}`);
  const last = r.body?.result_info !== undefined && !("cursor" in r.body.result_info);
  const result = ok(r, last ? lastPage(EXAMPLE_MEMORY_LIST) : EXAMPLE_MEMORY_LIST);
  if (!last) assert.notEqual(r.body.result_info.cursor, "", `a next page's cursor is not empty: ${r.what}`);
  result.forEach(assertListEntry);
  assert.equal(r.body.result_info.count, result.length, `result_info.count is the page's size: ${r.what}`);
  if (query.per_page !== undefined) {
    assert.equal(r.body.result_info.per_page, Number(query.per_page), `result_info.per_page echoes per_page: ${r.what}`);
    assert.ok(result.length <= Number(query.per_page), `no more than per_page entries: ${r.what}`);
  }
  return { result, cursor: r.body.result_info.cursor };
}

/** Every page of GET .../memories, `per_page` at a time, until a page has no cursor. */
async function listAllMemories(query, profile = PROFILE) {
  const all = [];
  let cursor;
  for (let page = 0; page < 100; page++) {
    const r = await listMemories(cursor ? { ...query, cursor } : query, profile);
    all.push(...r.result);
    if (r.cursor === undefined) return all;
    assert.notEqual(r.cursor, cursor, "the cursor moves on");
    cursor = r.cursor;
  }
  assert.fail("paging never reached a page without a cursor");
}

// State the flow builds.
const flow = {};

// ---------------------------------------------------------------------------
// The flow, route by route (§2.1 #1-#13).

test("POST /namespaces with the documented body creates the namespace: 201 (the reference's 'Namespace created') with {id, name, created_at, updated_at}", async () => {
  const n = ok(await send("POST", "/namespaces", { body: BODY_CREATE_NAMESPACE }), EXAMPLE_NAMESPACE, 201);
  assertNamespace(n, NAMESPACE);
  flow.namespace = n;
});

test("POST /namespaces with an existing name is 409 with code 10008 'already exists'", async () => {
  const e = fails(await send("POST", "/namespaces", { body: BODY_CREATE_NAMESPACE }), 409);
  assert.equal(e.code, 10008);
  assert.match(e.message, /already exists/i);
});

test("GET /namespaces/{name} returns the created namespace", async () => {
  const n = ok(await send("GET", ns()), EXAMPLE_NAMESPACE);
  assertNamespace(n, NAMESPACE);
  assert.ok(flow.namespace, "prerequisite: the namespace was created");
  assert.equal(n.id, flow.namespace.id);
  assert.equal(n.created_at, flow.namespace.created_at);
});

test("GET /namespaces?per_page=1 pages through both namespaces, one at a time, until cursor is \"\"", async () => {
  ok(await send("POST", "/namespaces", { body: { name: OTHER_NAMESPACE } }), EXAMPLE_NAMESPACE, 201);
  const seen = [];
  let cursor;
  let pages = 0;
  for (; pages < 50; pages++) {
    const qs = new URLSearchParams(cursor ? { per_page: "1", cursor } : { per_page: "1" });
    const r = await send("GET", `/namespaces?${qs}`);
    const result = ok(r, EXAMPLE_NAMESPACE_LIST);
    assert.ok(result.length <= 1, `at most per_page=1 entries: ${r.what}`);
    assert.equal(r.body.result_info.per_page, 1, r.what);
    assert.equal(r.body.result_info.count, result.length, r.what);
    for (const n of result) assertNamespace(n, n.name);
    seen.push(...result);
    if (r.body.result_info.cursor === "") break;
    assert.notEqual(r.body.result_info.cursor, cursor, "the cursor moves on");
    cursor = r.body.result_info.cursor;
  }
  assert.ok(pages < 50, "paging reached cursor \"\"");
  const names = seen.map((n) => n.name);
  assert.deepEqual(names.filter((n) => n === NAMESPACE || n === OTHER_NAMESPACE).sort(), [OTHER_NAMESPACE, NAMESPACE].sort());
  assert.equal(new Set(names).size, names.length, `no namespace twice: ${names}`);
  assert.ok(pages >= 1, "two namespaces at per_page=1 take at least two pages");
});

test("GET /namespaces takes the reference's order (id|name) and direction (asc|desc), paging in that order; other values are 400", async () => {
  const pages = async (order, direction) => {
    const seen = [];
    let cursor = "";
    for (let n = 0; n < 50; n++) {
      const qs = new URLSearchParams({ per_page: "1", order, direction, ...(cursor && { cursor }) });
      const r = await send("GET", `/namespaces?${qs}`);
      seen.push(...ok(r, EXAMPLE_NAMESPACE_LIST));
      cursor = r.body.result_info.cursor;
      if (cursor === "") return seen;
    }
    assert.fail("paging reached cursor \"\"");
  };
  const byName = (await pages("name", "asc")).map((n) => n.name);
  assert.deepEqual(byName, [...byName].sort(), "by name, ascending");
  assert.deepEqual((await pages("name", "desc")).map((n) => n.name), [...byName].reverse(), "by name, descending");
  const byId = await pages("id", "asc");
  assert.deepEqual(byId.map((n) => n.id), byId.map((n) => n.id).sort(), "by id, ascending");
  assert.deepEqual((await pages("id", "desc")).map((n) => n.id), byId.map((n) => n.id).reverse(), "by id, descending");
  for (const q of ["order=created_at", "direction=down", "order=", "direction=DESC"]) {
    fails(await send("GET", `/namespaces?${q}`), 400);
  }
});

// Wasm's usize is 32 bits: a page size past it must be refused, not wrapped (2^32 + 1 -> 1).
test("counts beyond 32 bits: a page size or recall limit is a 400 saying its range, never a page of one; maxWindows means every window", async () => {
  for (const path of ["/namespaces?per_page=4294967297", `/namespaces/${NAMESPACE}/profiles/${PROFILE}/memories?per_page=4294967297`, `/namespaces/${NAMESPACE}/profiles/${PROFILE}/memories?limit=4294967297`]) {
    const e = fails(await send("GET", path), 400);
    assert.match(e.message, /per_page|limit/, "the range check answers, not the decoder");
    assert.doesNotMatch(e.message, /usize/, e.message);
  }
  const recall = await send("POST", `/namespaces/${NAMESPACE}/profiles/${PROFILE}/recall`, { body: { query: "anything", limit: 4294967297 } });
  assert.match(fails(recall, 400).message, /limit must be 1-100/, recall.what);
  // maxWindows has no upper bound: one past 32 bits means "all of them", as natively, not a 400.
  const r = await send("POST", `/namespaces/${NAMESPACE}/profiles/${PROFILE}/consolidate`, { body: { maxWindows: 4294967296, dryRun: true } });
  assert.equal(r.status, 200, r.what);
});

test("a query parameter a list does not read is a 400 naming the ones it reads as the reference spells them, and a bad per_page is refused as per_page", async () => {
  const memories = `/namespaces/${NAMESPACE}/profiles/${PROFILE}/memories`;
  const unknown = fails(await send("GET", `${memories}?page=2`), 400);
  assert.match(unknown.message, /unknown query parameter "page"; this route reads per_page, cursor, session_id, type/, unknown.message);
  assert.doesNotMatch(unknown.message, /sessionId|limit/, "no name the reference does not use");
  for (const q of ["per_page=0", "per_page=1001"]) {
    assert.equal(fails(await send("GET", `${memories}?${q}`), 400).message, "per_page must be 1-1000", q);
  }
  assert.match(fails(await send("GET", `/namespaces/${NAMESPACE}/profiles?page=2`), 400).message, /this route reads per_page, cursor$/);
  assert.match(fails(await send("GET", "/namespaces?page=2"), 400).message, /this route reads per_page, cursor, order, direction$/);
});

test("GET /namespaces?per_page=50 lists both namespaces on one page whose cursor is \"\"", async () => {
  const r = await send("GET", "/namespaces?per_page=50");
  const result = ok(r, EXAMPLE_NAMESPACE_LIST);
  assert.equal(r.body.result_info.per_page, 50);
  assert.equal(r.body.result_info.count, result.length);
  assert.equal(r.body.result_info.cursor, "", r.what);
  const names = result.map((n) => n.name);
  assert.ok(names.includes(NAMESPACE) && names.includes(OTHER_NAMESPACE), r.what);
});

test("POST .../ingest with the documented body returns result null", async () => {
  const result = ok(await send("POST", `${prof()}/ingest`, { body: BODY_INGEST }), EXAMPLE_NULL);
  assert.equal(result, null);
});

test("POST .../ingest is idempotent: the same batch again adds no memories", async () => {
  const before = await listAllMemories({ per_page: "50" });
  assert.ok(before.length > 0, "the earlier ingest of this batch stored memories: there is something to duplicate");
  ok(await send("POST", `${prof()}/ingest`, { body: BODY_INGEST }), EXAMPLE_NULL);
  const after = await listAllMemories({ per_page: "50" });
  assert.deepEqual(after.map((m) => m.id).sort(), before.map((m) => m.id).sort());
});

test("POST .../remember with the documented body returns the memory with content and sessionId", async () => {
  const m = ok(await send("POST", `${prof()}/remember`, { body: BODY_REMEMBER }), EXAMPLE_MEMORY);
  assertMemory(m);
  assert.equal(m.content, "The user prefers concise answers.");
  assert.equal(m.sessionId, SESSION);
  assert.notEqual(m.summary, "");
  flow.memory = m;
});

test("POST .../recall with the documented body returns {answer, count, candidates} and finds the memory", async () => {
  const r = ok(await send("POST", `${prof()}/recall`, { body: BODY_RECALL }), EXAMPLE_RECALL);
  assert.ok(r.candidates.length >= 1, "the remembered preference is recalled");
  assert.notEqual(r.answer, "", "an answer when memories match");
  assert.ok(r.count >= 1, "count: number of memories retrieved");
  for (const c of r.candidates) {
    assert.ok("sessionId" in c, `sessionId is null, never absent (§6.2): ${JSON.stringify(c)}`);
    assert.ok(Number.isFinite(c.score), "score is a finite number");
  }
  const scores = r.candidates.map((c) => c.score);
  assert.deepEqual(scores, [...scores].sort((a, b) => b - a), "candidates are ranked by score, highest first");
  assert.ok(flow.memory, "prerequisite: remember succeeded");
  const hit = r.candidates.find((c) => c.id === flow.memory.id);
  assert.ok(hit, `the remembered memory is a candidate: ${JSON.stringify(r.candidates)}`);
  assert.equal(hit.sessionId, SESSION);
});

test("POST .../recall with nothing matching returns an empty answer, not an error", async () => {
  const profile = "recall-nothing";
  ok(await send("POST", `${prof(profile)}/remember`, { body: BODY_REMEMBER }), EXAMPLE_MEMORY);
  const r = ok(
    await send("POST", `${prof(profile)}/recall`, {
      body: { query: "xylophone zeppelin quasar", thinkingLevel: "low", responseLength: "medium" },
    }),
    EXAMPLE_RECALL,
  );
  assert.equal(r.answer, "");
});

test("GET .../memories?per_page=50 lists entries without content; the last page has no cursor (the API schema: omitted on the last page)", async () => {
  // More memories: two in another session, one without a session.
  flow.other = [];
  for (const content of ["I use TypeScript for every project.", "My deadline for the billing API is Friday."]) {
    flow.other.push(ok(await send("POST", `${prof()}/remember`, { body: { content, sessionId: OTHER_SESSION } }), EXAMPLE_MEMORY));
  }
  flow.noSession = ok(await send("POST", `${prof()}/remember`, { body: { content: "The user lives in Lisbon." } }), EXAMPLE_MEMORY);
  assert.equal(flow.noSession.sessionId, null, "a memory remembered without a session has sessionId null (§6.2)");

  const { result, cursor } = await listMemories({ per_page: "50" });
  assert.equal(cursor, undefined);
  const ids = result.map((m) => m.id);
  for (const m of [flow.memory, ...flow.other, flow.noSession]) assert.ok(ids.includes(m?.id), `${m?.id} is listed`);
  const entry = result.find((m) => m.id === flow.memory.id);
  const { content, ...withoutContent } = flow.memory;
  for (const [k, v] of Object.entries(withoutContent)) {
    if (["id", "type", "summary", "sessionId", "createdAt", "updatedAt"].includes(k)) assert.deepEqual(entry[k], v, `entry.${k}`);
  }
  assert.equal(result.find((m) => m.id === flow.noSession.id).sessionId, null);
  flow.all = ids;
});

test("GET .../memories?per_page=1 pages with cursor through every memory exactly once", async () => {
  const paged = await listAllMemories({ per_page: "1" });
  const ids = paged.map((m) => m.id);
  assert.equal(new Set(ids).size, ids.length, "no memory twice");
  assert.deepEqual([...ids].sort(), [...(flow.all ?? [])].sort());
  assert.ok(ids.length >= 4, "four or more memories took four or more pages");
});

test("GET .../memories?session_id= lists only that session's memories", async () => {
  const { result } = await listMemories({ per_page: "50", session_id: OTHER_SESSION });
  assert.deepEqual(result.map((m) => m.sessionId), result.map(() => OTHER_SESSION));
  assert.deepEqual(result.map((m) => m.id).sort(), (flow.other ?? []).map((m) => m.id).sort());
  const mine = await listMemories({ per_page: "50", session_id: SESSION });
  assert.ok(mine.result.some((m) => m.id === flow.memory?.id));
  assert.ok(mine.result.every((m) => m.sessionId === SESSION));
});

test("GET .../memories?type= lists only that type; session_id and type combine", async () => {
  assert.ok(flow.memory, "prerequisite: remember succeeded");
  const type = flow.memory.type;
  const { result } = await listMemories({ per_page: "50", type });
  assert.ok(result.every((m) => m.type === type), JSON.stringify(result));
  assert.ok(result.some((m) => m.id === flow.memory.id));
  const both = await listMemories({ per_page: "50", session_id: SESSION, type });
  assert.ok(both.result.every((m) => m.type === type && m.sessionId === SESSION));
  assert.ok(both.result.some((m) => m.id === flow.memory.id));
  const other = await listMemories({ per_page: "50", session_id: OTHER_SESSION, type });
  assert.ok(other.result.every((m) => m.type === type && m.sessionId === OTHER_SESSION));
  const paged = await listAllMemories({ per_page: "1", type });
  assert.deepEqual(paged.map((m) => m.id).sort(), result.map((m) => m.id).sort(), "type filter pages with cursor");
});

test("GET .../memories/{id} returns the full memory, content included", async () => {
  assert.ok(flow.memory, "prerequisite: remember succeeded");
  const m = ok(await send("GET", `${prof()}/memories/${flow.memory.id}`), EXAMPLE_MEMORY);
  assertMemory(m);
  for (const k of ["id", "type", "summary", "content", "sessionId", "createdAt"]) assert.deepEqual(m[k], flow.memory[k], k);
});

test("GET .../memories/{id} of an unknown id is 404 in the error envelope", async () => {
  await listMemories({ per_page: "50" }); // the profile's routes answer (a 404 below is not "no such route")
  // The documented sample id: never issued by the service.
  fails(await send("GET", `${prof()}/memories/01JSGCEXAMPLE000000000000`), 404);
});

test("POST .../summary with {} returns {summary}", async () => {
  const s = ok(await send("POST", `${prof()}/summary`, { body: BODY_SUMMARY }), EXAMPLE_SUMMARY);
  assert.notEqual(s.summary, "", "a profile with memories has a summary");
});

test("POST .../summary with {\"sessionId\"} returns {summary}", async () => {
  ok(await send("POST", `${prof()}/summary`, { body: BODY_SUMMARY_SESSION }), EXAMPLE_SUMMARY);
});

test("DELETE .../memories/{id} returns the deleted memory with content; it is gone afterwards", async () => {
  assert.ok(flow.noSession, "prerequisite: remember without a session succeeded");
  const m = ok(await send("DELETE", `${prof()}/memories/${flow.noSession.id}`), EXAMPLE_MEMORY);
  assertMemory(m);
  assert.equal(m.id, flow.noSession.id);
  assert.equal(m.content, "The user lives in Lisbon.");
  assert.equal(m.sessionId, null);
  fails(await send("GET", `${prof()}/memories/${flow.noSession.id}`), 404);
  const { result } = await listMemories({ per_page: "50" });
  assert.ok(!result.some((e) => e.id === flow.noSession.id), "no longer listed");
});

test("DELETE .../memories/{id} of an unknown or already deleted id is 404 in the error envelope", async () => {
  await listMemories({ per_page: "50" }); // the profile's routes answer (a 404 below is not "no such route")
  fails(await send("DELETE", `${prof()}/memories/01JSGCEXAMPLE000000000000`), 404);
  if (flow.noSession) fails(await send("DELETE", `${prof()}/memories/${flow.noSession.id}`), 404);
});

test("DELETE .../sessions/{session_id} returns null and removes that session's memories only", async () => {
  const result = ok(await send("DELETE", `${prof()}/sessions/${OTHER_SESSION}`), EXAMPLE_NULL);
  assert.equal(result, null);
  assert.deepEqual((await listMemories({ per_page: "50", session_id: OTHER_SESSION })).result, []);
  const { result: rest } = await listMemories({ per_page: "50", session_id: SESSION });
  assert.ok(rest.some((m) => m.id === flow.memory?.id), "the other session's memories stay");
});

test("DELETE .../sessions/{session_id} is idempotent: again, or an unknown session, returns null", async () => {
  assert.equal(ok(await send("DELETE", `${prof()}/sessions/${OTHER_SESSION}`), EXAMPLE_NULL), null);
  assert.equal(ok(await send("DELETE", `${prof()}/sessions/never-used-session`), EXAMPLE_NULL), null);
});

test("DELETE .../profiles/{name} returns null; the profile is then not found until a write creates it again, empty", async () => {
  const result = ok(await send("DELETE", prof()), EXAMPLE_NULL);
  assert.equal(result, null);
  // "Profile not found | 404": a deleted profile answers reads with it.
  const e = fails(await send("GET", `${prof()}/memories?per_page=50`), 404);
  assert.match(e.message, /profile not found/i);
  if (flow.memory) fails(await send("GET", `${prof()}/memories/${flow.memory.id}`), 404);
  // Deleting it again finds no profile, as for a namespace deleted twice.
  assert.match(fails(await send("DELETE", prof()), 404).message, /profile not found/i);
  // "Profiles are created automatically when you first write to them":
  // a write after the deletion lands in a new, empty profile.
  const again = ok(await send("POST", `${prof()}/remember`, { body: '{"content": "Prefers dark mode."}' }), EXAMPLE_MEMORY);
  const listed = (await listMemories({ per_page: "50" })).result;
  assert.deepEqual(listed.map((m) => m.id), [again.id], "only the new memory: nothing of the deleted profile came back");
  assert.equal(again.sessionId, null, "remembered without a session");
});

test("DELETE .../profiles/{name} of a profile never written is 404 'profile not found'", async () => {
  const e = fails(await send("DELETE", prof("never-written")), 404);
  assert.match(e.message, /profile/i);
  assert.match(e.message, /not found/i);
});

test("DELETE /namespaces/{name} returns null; GET and DELETE of it are then 404", async () => {
  // Data in the namespace before it is deleted.
  flow.bob = ok(await send("POST", `${prof("bob")}/remember`, { body: BODY_REMEMBER }), EXAMPLE_MEMORY);
  const result = ok(await send("DELETE", ns()), EXAMPLE_NULL);
  assert.equal(result, null);
  assert.match(fails(await send("GET", ns()), 404).message, /not found/i);
  assert.match(fails(await send("DELETE", ns()), 404).message, /not found/i);
  const listed = ok(await send("GET", "/namespaces?per_page=50"), EXAMPLE_NAMESPACE_LIST);
  assert.ok(!listed.some((n) => n.name === NAMESPACE), "no longer listed");
});

test("a deleted namespace's name can be created again, and its old profiles are empty", async () => {
  const n = ok(await send("POST", "/namespaces", { body: BODY_CREATE_NAMESPACE }), EXAMPLE_NAMESPACE, 201);
  assertNamespace(n, NAMESPACE);
  assert.ok(flow.bob, "prerequisite: bob remembered before the delete");
  assert.deepEqual((await listMemories({ per_page: "50" }, "bob")).result, [], "the old profile's memories went with the namespace");
  fails(await send("GET", `${prof("bob")}/memories/${flow.bob.id}`), 404);
});

// ---------------------------------------------------------------------------
// GET .../namespaces/{namespace_name}/profiles: the API schema's "List
// profiles" (agent-memory-profile-list), newer than the reference pages:
// "Lists the profiles of a namespace, ordered by name. A profile appears
// once it has been used." `per_page` 1-500, `cursor` opaque
// (^[A-Za-z0-9_-]+$, at most 256), each entry {name, createdAt}, and
// result_info.cursor "omitted on the last page".

const INDEX_NS = "profile-index";
const CURSOR_PATTERN = /^[A-Za-z0-9_-]{1,256}$/;

/** One page of GET .../profiles with `query`; checks the shape and result_info. */
async function listProfiles(query = {}, name = INDEX_NS) {
  const qs = new URLSearchParams(query).toString();
  const r = await send("GET", `${ns(name)}/profiles${qs ? `?${qs}` : ""}`);
  const last = r.body?.result_info !== undefined && !("cursor" in r.body.result_info);
  const result = ok(r, last ? lastPage(EXAMPLE_PROFILE_LIST) : EXAMPLE_PROFILE_LIST);
  for (const p of result) assert.match(p.createdAt, ISO_MS, `createdAt is an ISO-8601 date-time: ${r.what}`);
  assert.equal(r.body.result_info.count, result.length, r.what);
  assert.equal(r.body.result_info.per_page, query.per_page === undefined ? 20 : Number(query.per_page), r.what);
  if (!last) assert.match(r.body.result_info.cursor, CURSOR_PATTERN, `the cursor fits the schema's pattern: ${r.what}`);
  return { names: result.map((p) => p.name), entries: result, cursor: r.body.result_info.cursor };
}

test("GET .../profiles lists the namespace's profiles by name, each with createdAt; one only read is not listed; the last page has no cursor", async () => {
  const before = Date.now();
  for (const profile of ["zed", "amy", "mid-1"]) {
    ok(await send("POST", `${prof(profile, INDEX_NS)}/remember`, { body: BODY_REMEMBER }), EXAMPLE_MEMORY);
  }
  await listMemories({ per_page: "5" }, "only-read", INDEX_NS);
  const { names, entries, cursor } = await listProfiles();
  assert.deepEqual(names, ["amy", "mid-1", "zed"]);
  assert.equal(cursor, undefined);
  for (const e of entries) {
    const at = Date.parse(e.createdAt);
    assert.ok(at >= before - 1000 && at <= Date.now() + 1000, `createdAt ${e.createdAt} is when the profile was first written`);
  }
});

test("GET .../profiles?per_page=1 pages with the opaque cursor through every profile once, in order; a bad per_page or cursor is 400", async () => {
  const seen = [];
  let cursor;
  for (let page = 0; page < 10; page++) {
    const r = await listProfiles(cursor ? { per_page: "1", cursor } : { per_page: "1" });
    assert.ok(r.names.length <= 1);
    seen.push(...r.names);
    if (r.cursor === undefined) break;
    assert.notEqual(r.cursor, cursor, "the cursor moves on");
    cursor = r.cursor;
  }
  assert.deepEqual(seen, ["amy", "mid-1", "zed"]);
  assert.deepEqual((await listProfiles({ per_page: "2" })).names, ["amy", "mid-1"]);
  for (const query of ["per_page=0", "per_page=abc", "cursor=!!", "cursor=not-a-cursor-of-ours", "order=name"]) {
    fails(await send("GET", `${ns(INDEX_NS)}/profiles?${query}`), 400);
  }
});

test("GET .../profiles: a deleted profile leaves the list and a write brings it back; an unknown namespace is 404", async () => {
  ok(await send("DELETE", prof("zed", INDEX_NS)), EXAMPLE_NULL);
  assert.deepEqual((await listProfiles()).names, ["amy", "mid-1"]);
  ok(await send("POST", `${prof("zed", INDEX_NS)}/remember`, { body: BODY_REMEMBER }), EXAMPLE_MEMORY);
  assert.deepEqual((await listProfiles()).names, ["amy", "mid-1", "zed"]);
  assert.match(fails(await send("GET", `${ns("no-such-namespace")}/profiles`), 404).message, /namespace not found/i);
  assert.match(fails(await send("POST", `${ns(INDEX_NS)}/profiles`, { body: {} }), 405).message, /.+/);
});

// ---------------------------------------------------------------------------
// Documented error cases (§2.4).

test("POST /namespaces with an invalid name format is 400 ('Not Valid!', 33 chars, empty, and what the reference's pattern refuses), and a first write does not create one either", async () => {
  const refused = ["Not Valid!", "a".repeat(33), "", "-abc-", "abc-", "Support-Agent", "a.b", "a_b"];
  for (const name of refused) {
    fails(await send("POST", "/namespaces", { body: { name } }), 400);
  }
  for (const name of ["Support-Agent", "a.b", "-abc-"]) {
    fails(await send("POST", `${prof(PROFILE, name)}/remember`, { body: BODY_REMEMBER }), 400);
  }
  const listed = ok(await send("GET", "/namespaces?per_page=50"), EXAMPLE_NAMESPACE_LIST).map((n) => n.name);
  assert.ok(!refused.some((n) => listed.includes(n)), `refused names are not created: ${listed}`);
  // 32 characters is within the limit.
  const name = "a".repeat(32);
  assertNamespace(ok(await send("POST", "/namespaces", { body: { name } }), EXAMPLE_NAMESPACE, 201), name);
});

test("GET and DELETE /namespaces/{name} of a namespace that does not exist are 404 'namespace not found'", async () => {
  ok(await send("GET", "/namespaces?per_page=50"), EXAMPLE_NAMESPACE_LIST); // the namespace routes answer
  for (const method of ["GET", "DELETE"]) {
    const e = fails(await send(method, ns("no-such-namespace")), 404);
    assert.match(e.message, /namespace/i);
    assert.match(e.message, /not found/i);
  }
});

// Every documented route, with a valid request apart from the credentials.
const ROUTES = [
  ["POST", "/namespaces", BODY_CREATE_NAMESPACE],
  ["GET", "/namespaces?per_page=50"],
  ["GET", ns(OTHER_NAMESPACE)],
  ["DELETE", ns(OTHER_NAMESPACE)],
  ["DELETE", prof(PROFILE, OTHER_NAMESPACE)],
  ["DELETE", `${prof(PROFILE, OTHER_NAMESPACE)}/sessions/${SESSION}`],
  ["POST", `${prof(PROFILE, OTHER_NAMESPACE)}/ingest`, BODY_INGEST],
  ["POST", `${prof(PROFILE, OTHER_NAMESPACE)}/remember`, BODY_REMEMBER],
  ["POST", `${prof(PROFILE, OTHER_NAMESPACE)}/recall`, BODY_RECALL],
  ["GET", `${prof(PROFILE, OTHER_NAMESPACE)}/memories?per_page=50`],
  ["GET", `${prof(PROFILE, OTHER_NAMESPACE)}/memories/01JSGCEXAMPLE000000000000`],
  ["DELETE", `${prof(PROFILE, OTHER_NAMESPACE)}/memories/01JSGCEXAMPLE000000000000`],
  ["POST", `${prof(PROFILE, OTHER_NAMESPACE)}/summary`, BODY_SUMMARY],
];

test("every route without an Authorization header is 401 in the error envelope", async () => {
  for (const [method, path, body] of ROUTES) fails(await send(method, path, { body, token: null }), 401);
});

test("every route with a wrong bearer token is 401 in the error envelope", async () => {
  for (const [method, path, body] of ROUTES) fails(await send(method, path, { body, token: "not-a-token" }), 401);
});

test("requests refused for credentials changed nothing: the namespace stands, the profile was never written", async () => {
  const n = ok(await send("GET", ns(OTHER_NAMESPACE)), EXAMPLE_NAMESPACE);
  assertNamespace(n, OTHER_NAMESPACE);
  const e = fails(await send("DELETE", prof(PROFILE, OTHER_NAMESPACE)), 404);
  assert.match(e.message, /profile/i);
});

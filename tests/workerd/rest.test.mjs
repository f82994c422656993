// REST API of the built Worker in workerd (issues "Foundation" and "Ways
// in"): auth, tenancy, limits, idempotent ingest, export/import, every
// documented route, bad input. Every response is validated against the
// OpenAPI document the Worker serves (fixtures.restClient), and the last
// test fails if a documented operation was never exercised.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";
import {
  T, VARS, TOKEN, TEAM_TOKEN, CODE, CONVERSATION, BAD_NAMES, BAD_NAMESPACE_NAMES, ULID, HEX_ID,
  restClient, loadDocument, unexercised, documentedOperations, ok, fails, is4xx, bigContent, counts, exportRecords,
  entryOf, assertEntries, ACCOUNT, fillPath,
} from "./fixtures.mjs";
import { waitFor } from "./reliability-support.mjs";

let w;
let doc;
let api;
before(async () => {
  w = await startWorker({ vars: VARS });
  doc = await loadDocument(w);
  api = restClient(w, doc);
});
after(async () => {
  await w?.dispose();
});

const remember = (profile, body, params = {}) => api.post(T.remember, { profile, ...params }, body);
const stats = async (profile, params = {}) => ok(await api.get(T.stats, { profile, ...params }));
const listAll = async (profile, query = {}) => ok(await api.get(T.memories, { profile }, { query: { limit: 1000, ...query } })).memories;

// ---------------------------------------------------------------------------
// Service routes

test("GET /health answers ok without a token", async () => {
  const r = await api.get(T.health, {}, { token: null });
  const result = ok(r);
  assert.equal(result.status, "ok");
  assert.equal(result.service, "agent-memory");
});

test("GET /openapi.json serves an OpenAPI 3.1 document describing the REST base path", async () => {
  const r = await api.get(T.openapi, {}, { token: null });
  assert.equal(r.status, 200);
  assert.match(r.body.openapi, /^3\.1/);
  assert.deepEqual(r.body, doc);
  assert.ok(doc.paths[T.remember], "remember is documented under the managed API's base path");
});

// ---------------------------------------------------------------------------
// Foundation: tenancy and auth

test("remember in p1 is listed in p1 and not in p2", async () => {
  const content = "The user keeps their bicycle in the basement storage room.";
  const memory = ok(await remember("p1", { content }));
  assert.match(memory.id, ULID);
  assert.equal(memory.content, content);
  assert.equal(memory.status, "active");
  assert.equal(memory.sessionId, null, "remembered without a session");

  const p1 = ok(await api.get(T.memories, { profile: "p1" }));
  assert.deepEqual(p1.memories.map((m) => m.id), [memory.id]);
  // A list entry is the memory without its content, sources, queries and version links.
  assertEntries(p1.memories);
  assert.deepEqual(p1.memories[0], entryOf(memory));
  assert.equal(p1.memories[0].sessionId, null);

  const p2 = ok(await api.get(T.memories, { profile: "p2" }));
  assert.deepEqual(p2.memories, []);
  assert.equal((await stats("p2")).memories, 0);
  // Same profile name, other namespace: another profile.
  assert.deepEqual(ok(await api.get(T.memories, { namespace: "other", profile: "p1" })).memories, []);
});

// One well-formed request per documented profile operation.
const PROFILE_OPERATIONS = [
  ["POST", T.ingest, {}, { json: { messages: [{ role: "user", content: "My cat is called Miso and she is four." }] } }],
  ["POST", T.remember, {}, { json: { content: "The user drinks oat milk in their coffee." } }],
  ["POST", T.recall, {}, { json: { query: "What milk does the user drink?" } }],
  ["GET", T.memories, {}, {}],
  ["GET", T.memory, { id: "0123456789abcdef0123456789abcdef" }, {}],
  ["DELETE", T.memory, { id: "0123456789abcdef0123456789abcdef" }, {}],
  ["POST", T.forget, { id: "0123456789abcdef0123456789abcdef" }, {}],
  ["GET", T.summary, {}, {}],
  ["DELETE", T.session, { sessionId: "s1" }, {}],
  ["GET", T.export, {}, {}],
  ["POST", T.import, {}, { body: '{"kind":"header","format":"agent-memory-export","version":1}\n', contentType: "application/x-ndjson" }],
  ["GET", T.stats, {}, {}],
  ["DELETE", T.profile, {}, {}],
];
// The namespace operations (the profile param is ignored by their templates).
const NAMESPACE_OPERATIONS = [
  ["GET", T.namespaces, {}, {}],
  ["POST", T.namespaces, {}, { json: { name: "auth-ns" } }],
  ["GET", T.namespace, { namespace: "auth-ns" }, {}],
  ["DELETE", T.namespace, { namespace: "auth-ns" }, {}],
];

test("every profile and namespace route answers 401 (10002) without a bearer token", async () => {
  for (const [method, template, params, opts] of [...PROFILE_OPERATIONS, ...NAMESPACE_OPERATIONS]) {
    const r = await api.request(method, template, { profile: "auth", ...params }, { ...opts, token: null });
    fails(r, 401, CODE.unauthenticated);
  }
  assert.deepEqual(counts(await stats("auth")), counts(await stats("never-touched")));
});

test("every profile and namespace route answers 401 (10002) to an unknown bearer token", async () => {
  for (const [method, template, params, opts] of [...PROFILE_OPERATIONS, ...NAMESPACE_OPERATIONS]) {
    const r = await api.request(method, template, { profile: "auth", ...params }, { ...opts, token: "not-the-dev-token" });
    fails(r, 401, CODE.unauthenticated);
  }
  // A scheme other than Bearer is no token either.
  const basic = await api.get(T.memories, { profile: "auth" }, { token: null, headers: { authorization: `Basic ${TOKEN}` } });
  fails(basic, 401, CODE.unauthenticated);
  assert.equal((await stats("auth")).memories, 0);
  // None of the refused namespace calls created "auth-ns".
  fails(await api.get(T.namespace, { namespace: "auth-ns" }), 404, CODE.notFound);
});

test("the Bearer scheme is read without regard to case (RFC 9110), and a 401 names it in WWW-Authenticate", async () => {
  for (const scheme of ["Bearer", "bearer", "BEARER", "bEaReR"]) {
    ok(await api.get(T.memories, { profile: "auth-case" }, { token: null, headers: { authorization: `${scheme} ${TOKEN}` } }));
  }
  // One or more spaces between the scheme and the token.
  ok(await api.get(T.memories, { profile: "auth-case" }, { token: null, headers: { authorization: `Bearer   ${TOKEN}` } }));
  for (const authorization of [undefined, `Bearer${TOKEN}`, `Basic ${TOKEN}`, "Bearer not-the-dev-token"]) {
    const r = await api.get(T.memories, { profile: "auth-case" }, { token: null, headers: authorization ? { authorization } : {} });
    fails(r, 401, CODE.unauthenticated);
    assert.equal(r.headers.get("www-authenticate"), "Bearer", String(authorization));
  }
  // A token that may not touch the namespace is known: 403, no challenge.
  const forbidden = await api.get(T.memories, { profile: "p1" }, { token: TEAM_TOKEN });
  fails(forbidden, 403, CODE.forbidden);
  assert.equal(forbidden.headers.get("www-authenticate"), null);
});

test("a query string on a route that reads none is refused (400), never ignored", async () => {
  const where = { profile: "no-query" };
  ok(await api.post(T.remember, where, { content: "The printer on floor two jams on Mondays." }));
  const dry = await api.request("POST", T.consolidate, where, { json: {}, query: { dryRun: "true" } });
  fails(dry, 400, CODE.invalid);
  assert.match(dry.body.errors[0].message, /takes no query parameters; got "dryRun"/);
  fails(await api.request("POST", T.summary, where, { json: {}, query: { session_id: "s1" } }), 400, CODE.invalid);
  fails(await api.request("POST", T.recall, where, { json: { query: "printer?" }, query: { limit: "5" } }), 400, CODE.invalid);
  fails(await api.request("GET", T.namespace, { namespace: "default" }, { query: { x: "1" } }), 400, CODE.invalid);
  assert.equal((await stats("no-query")).memories, 1, "the refused consolidate changed nothing");
});

test("a query that does not decode exactly (invalid UTF-8, a broken escape, +20, 007) is refused (400), never read another way", async () => {
  const where = { profile: "query-bytes" };
  const m = ok(await api.post(T.remember, where, { content: "The café on the corner opens at seven.", key: "place.cafe" }));
  const raw = async (query) => {
    const res = await w.fetch(`/accounts/${ACCOUNT}/agent-memory/namespaces/default/profiles/query-bytes/memories?${query}`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return { status: res.status, body: await res.json() };
  };
  for (const q of ["key=%FF", "key=place.caf%C3", "key=%G1", "limit=+20", "limit=007", "limit=2.0"]) {
    const r = await raw(q);
    assert.equal(r.status, 400, `${q}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.success, false);
    assert.equal(r.body.errors[0].code, CODE.invalid, q);
  }
  // Exact decoding: %C3%A9 is é, + is a space.
  assert.deepEqual((await raw("key=place.caf%C3%A9")).body.result.memories, []);
  assert.deepEqual((await raw("key=place.cafe&limit=20")).body.result.memories.map((x) => x.id), [m.id]);
});

test("a write refused as bad input (400), or an import of no records, creates no namespace", async () => {
  const where = { namespace: "never-made", profile: "p" };
  fails(await api.post(T.ingest, where, { messages: [] }), 400, CODE.invalid);
  fails(await api.post(T.remember, where, { content: "   " }), 400, CODE.invalid);
  // An import of no records (a header alone) writes nothing: answered, and no write.
  const header = '{"kind":"header","format":"agent-memory-export","version":1}\n';
  assert.deepEqual(ok(await api.request("POST", T.import, where, { body: header, contentType: "application/x-ndjson" })), { memories: 0, messages: 0, consolidationsLeftOut: 0 });
  fails(await api.get(T.namespace, { namespace: "never-made" }), 404, CODE.notFound);
  ok(await api.post(T.remember, where, { content: "The standup is at nine thirty." }));
  ok(await api.get(T.namespace, { namespace: "never-made" }));
});

test("a token limited to one namespace gets 403 (10003) elsewhere and works in its own", async () => {
  const content = "The team standup happens every weekday at nine thirty.";
  fails(await api.post(T.remember, { profile: "p1" }, { content }, { token: TEAM_TOKEN }), 403, CODE.forbidden);
  fails(await api.get(T.memories, { profile: "p1" }, { token: TEAM_TOKEN }), 403, CODE.forbidden);
  const m = ok(await api.post(T.remember, { namespace: "team", profile: "p1" }, { content }, { token: TEAM_TOKEN }));
  const listed = ok(await api.get(T.memories, { namespace: "team", profile: "p1" }, { token: TEAM_TOKEN }));
  assert.deepEqual(listed.memories.map((x) => x.id), [m.id]);
});

test("authentication comes before body validation: no token and a malformed body get 401, not 400", async () => {
  const r = await api.request("POST", T.remember, { profile: "auth" }, { body: "{not json", contentType: "application/json", token: null });
  fails(r, 401, CODE.unauthenticated);
  const forbidden = await api.request("POST", T.remember, { profile: "auth" }, { body: "{not json", contentType: "application/json", token: TEAM_TOKEN });
  fails(forbidden, 403, CODE.forbidden);
});

// ---------------------------------------------------------------------------
// Limits and idempotence

test("a 40 KB message in ingest is refused with 400 (10001), as every bound on a field, and stores nothing", async () => {
  ok(await api.post(T.ingest, { profile: "big" }, { sessionId: "s1", messages: [{ role: "user", content: "I keep my passport in the top drawer." }] }));
  // The first ingest's background work done (the alarm waits the drain
  // delay), so the job count below compares a settled profile.
  const before = await waitFor(async () => {
    const s = await stats("big");
    return s.pendingJobs === 0 && s;
  }, { what: "the outbox to drain" });
  const r = await api.post(T.ingest, { profile: "big" }, {
    sessionId: "s2",
    messages: [
      { role: "user", content: "This small message comes first and must not be stored either." },
      { role: "user", content: bigContent(40) },
    ],
  });
  fails(r, 400, CODE.invalid);
  const after = await stats("big");
  assert.deepEqual(counts(after), counts(before));
  assert.equal(after.pendingJobs, before.pendingJobs);
  // A 32 KiB message is still accepted.
  ok(await api.post(T.ingest, { profile: "big" }, { sessionId: "s3", messages: [{ role: "user", content: bigContent(32) }] }));
});

test("ingesting the same messages twice stores each message once", async () => {
  const first = ok(await api.post(T.ingest, { profile: "dedup" }, { sessionId: "s1", messages: CONVERSATION }));
  assert.equal(first.sessionId, "s1");
  assert.equal(first.messageIds.length, CONVERSATION.length);
  assert.equal(first.messagesStored, CONVERSATION.length);
  const s1 = await stats("dedup");
  assert.equal(s1.messages, CONVERSATION.length);

  const second = ok(await api.post(T.ingest, { profile: "dedup" }, { sessionId: "s1", messages: CONVERSATION }));
  assert.deepEqual(second.messageIds, first.messageIds);
  assert.equal(second.messagesStored, 0);
  assert.equal(second.memoriesStored, 0);
  const s2 = await stats("dedup");
  assert.deepEqual(counts(s2), counts(s1));

  // Without a sessionId the session derives from the content: still once.
  const a = ok(await api.post(T.ingest, { profile: "dedup-nosession" }, { messages: CONVERSATION }));
  const b = ok(await api.post(T.ingest, { profile: "dedup-nosession" }, { messages: CONVERSATION }));
  assert.equal(b.sessionId, a.sessionId);
  assert.deepEqual(b.messageIds, a.messageIds);
  assert.equal(b.messagesStored, 0);
  assert.equal((await stats("dedup-nosession")).messages, CONVERSATION.length);
});

test("an ingest's report many pieces long arrives whole, over REST and over MCP", async () => {
  // ~1,300 memories: a report of several hundred KB, which the profile
  // object sends in pieces of 64 KiB and the Worker streams into its
  // envelope unread.
  const messages = Array.from({ length: 40 }, (_, i) => ({
    role: "user",
    content: Array.from({ length: 32 }, (_, j) => `My colleague number ${i * 32 + j} moved to Oslo in ${1900 + ((i * 32 + j) % 120)} and loves "café" 東京.`).join(" "),
  }));
  const r = await api.post(T.ingest, { profile: "pieces" }, { sessionId: "s1", messages });
  assert.ok(Buffer.byteLength(r.text) > 4 * 65536, `${Buffer.byteLength(r.text)} bytes`);
  const report = ok(r);
  assert.ok(report.memoriesStored > 1000, `${report.memoriesStored} memories`);
  assert.equal(report.memories.length, report.memoriesStored);
  assert.equal(new Set(report.memories.map((m) => m.id)).size, report.memoriesStored);
  assert.equal((await stats("pieces")).memories, report.memoriesStored);
  for (const m of [report.memories[0], report.memories.at(-1)]) assert.equal(ok(await api.get(T.memory, { profile: "pieces", id: m.id })).content, m.content);
  assert.ok(report.memories.some((m) => m.content.includes('"café" 東京')), "text outside ASCII arrives whole");
  // The MCP tool reads the same pieces whole.
  const headers = { accept: "application/json, text/event-stream" };
  const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ingest", arguments: { sessionId: "s1", messages } } };
  const m = await api.post(T.mcp, { profile: "pieces-mcp" }, call, { headers });
  assert.equal(m.status, 200);
  const viaMcp = m.body.result.structuredContent;
  assert.equal(viaMcp.memoriesStored, report.memoriesStored);
  assert.deepEqual(viaMcp.memories.map((x) => x.content).sort(), report.memories.map((x) => x.content).sort());
});

// ---------------------------------------------------------------------------
// Every route

test("recall finds a remembered memory; explain:true adds the explanation and traces", async () => {
  const m = ok(await remember("recall", { content: "The user's dentist appointment is with Dr. Okafor.", sessionId: "s1" }));
  ok(await api.post(T.ingest, { profile: "recall" }, { sessionId: "s2", messages: CONVERSATION }));
  // Both recalls below see one settled profile: the ingest's memories
  // embedded by the alarm (a recall finding the profile cold also asks
  // the alarm to build its state, which may drain the outbox between them).
  await waitFor(async () => (await stats("recall")).pendingJobs === 0, { what: "the outbox to drain" });

  const plain = ok(await api.post(T.recall, { profile: "recall" }, { query: "Who is the user's dentist?" }));
  assert.ok(plain.count >= 1);
  assert.equal(plain.answer, plain.result);
  assert.ok(plain.candidates.some((c) => c.id === m.id), "the remembered memory is a candidate");
  assert.equal(plain.explain, undefined);
  assert.ok(plain.candidates.every((c) => c.trace === undefined && c.explanation === undefined));

  const explained = ok(await api.post(T.recall, { profile: "recall" }, {
    query: "Who is the user's dentist?", explain: true, limit: 2, responseLength: "short", referenceDate: "2026-01-15",
  }));
  assert.ok(explained.explain, "explain:true returns the explanation");
  assert.ok(Array.isArray(explained.explain.channels) && explained.explain.channels.length > 0);
  assert.ok(explained.candidates.length >= 1 && explained.candidates.length <= 2, "an explained recall still finds candidates");
  assert.deepEqual(explained.candidates.map((c) => c.id), plain.candidates.slice(0, explained.candidates.length).map((c) => c.id));
  assert.equal(explained.candidates[0].id, m.id, "the remembered memory leads the explained recall");
  for (const c of explained.candidates) {
    assert.ok(Array.isArray(c.trace) && c.trace.length > 0, "each candidate carries its trace");
    assert.ok(Array.isArray(c.explanation) && c.explanation.length > 0, "each candidate carries its explanation");
    for (const t of c.trace) {
      const channel = explained.explain.channels.find((ch) => ch.channel === t.channel);
      assert.ok(channel?.ids.includes(c.id), `the ${t.channel} trace of ${c.id} matches the explained channel`);
    }
  }
});

test("recall on an empty profile returns result '' and count 0, not an error", async () => {
  const r = ok(await api.post(T.recall, { profile: "empty-recall" }, { query: "anything at all?" }));
  assert.equal(r.result, "");
  assert.equal(r.answer, "");
  assert.equal(r.count, 0);
  assert.deepEqual(r.candidates, []);
});

async function seedFilters() {
  const P = "filters";
  const made = {};
  made.fact = ok(await remember(P, { content: "The user prefers tabs over spaces in Go code.", sessionId: "s-a", type: "fact", key: "user.indentation" }));
  made.event = ok(await remember(P, { content: "The user ran a marathon in Lisbon on 2025-10-12.", sessionId: "s-a", type: "event" }));
  made.instruction = ok(await remember(P, { content: "Always answer the user in British English spelling.", sessionId: "s-b", type: "instruction" }));
  made.task = ok(await remember(P, { content: "The user is migrating the billing service to Postgres.", sessionId: "s-b", type: "task" }));
  made.forgotten = ok(await remember(P, { content: "The user's gym locker code is kept on paper.", sessionId: "s-c" }));
  const forgotten = ok(await api.post(T.forget, { profile: P, id: made.forgotten.id }));
  assert.equal(forgotten.status, "forgotten");
  return made;
}

test("list filters by sessionId, type, status and key", async () => {
  const made = await seedFilters();
  const ids = (ms) => ms.map((m) => m.id).sort();
  const all = await listAll("filters", { status: "all" });
  assert.equal(all.length, 5);
  // Without a status, the published interface's list: active memories.
  assert.deepEqual(ids(await listAll("filters")), ids(all.filter((m) => m.status === "active")));
  assert.ok(all.some((m) => m.status !== "active"), "something to leave out");

  assert.deepEqual(ids(await listAll("filters", { sessionId: "s-a" })), ids([made.fact, made.event]));
  assert.deepEqual(ids(await listAll("filters", { sessionId: "s-b" })), ids([made.instruction, made.task]));
  assert.deepEqual(await listAll("filters", { sessionId: "no-such-session" }), []);
  for (const type of ["fact", "event", "instruction", "task"]) {
    const got = await listAll("filters", { type });
    assert.ok(got.every((m) => m.type === type), `type=${type}`);
    assert.ok(got.some((m) => m.id === made[type].id), `type=${type} lists the ${type}`);
  }
  const forgotten = await listAll("filters", { status: "forgotten" });
  assert.deepEqual(ids(forgotten), [made.forgotten.id]);
  const active = await listAll("filters", { status: "active" });
  assert.ok(active.every((m) => m.status === "active"));
  assert.equal(active.length, 4);
  assert.deepEqual(await listAll("filters", { status: "superseded" }), []);
  assert.deepEqual(await listAll("filters", { status: "expired" }), []);
  assert.deepEqual(ids(await listAll("filters", { key: "user.indentation" })), [made.fact.id]);
  // Filters combine.
  assert.deepEqual(ids(await listAll("filters", { sessionId: "s-a", type: "event" })), [made.event.id]);
});

test("list pages through every memory with cursor, newest first, without repeats; 20 a page by default", async () => {
  const P = "paging";
  const made = [];
  for (let i = 0; i < 22; i++) {
    made.push(ok(await remember(P, { content: `Paging memory number ${i}: the user owns ${i + 2} houseplants named fern${i}.`, sessionId: `s${i}` })).id);
  }
  const seen = [];
  let cursor;
  let pages = 0;
  do {
    const r = await api.get(T.memories, { profile: P }, { query: { limit: 7, cursor } });
    const page = ok(r);
    assert.ok(page.memories.length <= 7);
    assertEntries(page.memories);
    assert.equal(r.body.result_info.count, page.memories.length);
    assert.equal(r.body.result_info.cursor ?? undefined, page.cursor);
    seen.push(...page.memories.map((m) => m.id));
    cursor = page.cursor;
    assert.ok(++pages <= 5, "paging ends");
  } while (cursor);
  assert.equal(pages, 4);
  assert.equal(new Set(seen).size, seen.length, "no memory twice");
  assert.deepEqual(seen, [...made].reverse(), "newest first, every memory once");
  assert.deepEqual((await listAll(P)).map((m) => m.id), seen);
  // limit=1 and limit=1000 are the bounds.
  assert.equal(ok(await api.get(T.memories, { profile: P }, { query: { limit: 1 } })).memories.length, 1);
  // Without a limit, a page is 20 memories, and the cursor leads to the rest.
  const first = await api.get(T.memories, { profile: P });
  const firstPage = ok(first);
  assert.deepEqual(firstPage.memories.map((m) => m.id), seen.slice(0, 20));
  assert.ok(firstPage.cursor.startsWith(`${seen[19]}.`), `the cursor is the last entry's id, sealed to the profile: ${firstPage.cursor}`);
  assert.equal(first.body.result_info.count, 20);
  const rest = ok(await api.get(T.memories, { profile: P }, { query: { cursor: firstPage.cursor } }));
  assert.deepEqual(rest.memories.map((m) => m.id), seen.slice(20));
  assert.equal(rest.cursor, undefined, "the last page has no cursor");
  // The published query names: per_page for limit, session_id for sessionId.
  const perPage = ok(await api.get(T.memories, { profile: P }, { query: { per_page: 3 } }));
  assert.deepEqual(perPage.memories.map((m) => m.id), seen.slice(0, 3));
  const bySession = ok(await api.get(T.memories, { profile: P }, { query: { session_id: "s4" } }));
  assert.deepEqual(bySession.memories.map((m) => m.id), [made[4]]);
  fails(await api.get(T.memories, { profile: P }, { query: { per_page: 0 } }), 400, CODE.invalid);
  fails(await api.get(T.memories, { profile: P }, { query: [["per_page", "2"], ["limit", "3"]] }), 400, CODE.invalid);
});

test("get returns the memory with its versions and source messages; an unknown id is 404 (10004)", async () => {
  const report = ok(await api.post(T.ingest, { profile: "get" }, { sessionId: "s1", messages: CONVERSATION }));
  assert.ok(report.memories.length > 0, "the conversation yields memories");
  const m = report.memories[0];
  const detail = ok(await api.get(T.memory, { profile: "get", id: m.id }));
  const { versions, sourceMessages, moreVersions, moreSourceMessages, ...memory } = detail;
  assert.deepEqual(memory, m);
  assert.deepEqual([moreVersions, moreSourceMessages], [false, false], "a short chain and few messages come whole");
  assert.ok(versions.some((v) => v.id === m.id));
  assert.deepEqual(sourceMessages.map((x) => x.id).sort(), [...m.sourceMessageIds].sort());
  for (const s of sourceMessages) assert.ok(report.messageIds.includes(s.id));

  fails(await api.get(T.memory, { profile: "get", id: "0".repeat(32) }), 404, CODE.notFound);
});

test("forget marks a memory forgotten: it leaves recall and the active list but stays gettable", async () => {
  const P = "forget";
  const m = ok(await remember(P, { content: "The user's wifi password hint is the name of their first dog." }));
  const before = ok(await api.post(T.recall, { profile: P }, { query: "What is the wifi password hint?" }));
  assert.ok(before.candidates.some((c) => c.id === m.id));
  const f = ok(await api.post(T.forget, { profile: P, id: m.id }));
  assert.equal(f.id, m.id);
  assert.equal(f.status, "forgotten");
  const after = ok(await api.post(T.recall, { profile: P }, { query: "What is the wifi password hint?" }));
  assert.ok(!after.candidates.some((c) => c.id === m.id));
  assert.deepEqual(await listAll(P, { status: "active" }), []);
  assert.equal(ok(await api.get(T.memory, { profile: P, id: m.id })).status, "forgotten");
  // Forgetting twice is fine; an unknown id is 404.
  assert.equal(ok(await api.post(T.forget, { profile: P, id: m.id })).status, "forgotten");
  fails(await api.post(T.forget, { profile: P, id: "f".repeat(32) }), 404, CODE.notFound);
});

test("delete removes a memory and its source messages; deleting it again is 404", async () => {
  const P = "delete";
  const report = ok(await api.post(T.ingest, { profile: P }, { sessionId: "s1", messages: CONVERSATION }));
  const m = report.memories[0];
  const before = await stats(P);
  const d = ok(await api.del(T.memory, { profile: P, id: m.id }));
  // The report is the deleted memory itself, plus what went with it.
  const { deletedMemories, deletedMessages, ...deletedMemory } = d;
  assert.deepEqual(deletedMemory, m);
  assert.ok(deletedMemories.includes(m.id));
  assert.deepEqual([...d.deletedMessages].sort(), [...m.sourceMessageIds].sort());
  fails(await api.get(T.memory, { profile: P, id: m.id }), 404, CODE.notFound);
  const after = await stats(P);
  assert.equal(after.memories, before.memories - d.deletedMemories.length);
  assert.equal(after.messages, before.messages - d.deletedMessages.length);
  const ndjson = (await api.get(T.export, { profile: P })).body;
  for (const id of [...d.deletedMemories, ...d.deletedMessages]) assert.ok(!ndjson.includes(id), `${id} is gone from the export`);
  fails(await api.del(T.memory, { profile: P, id: m.id }), 404, CODE.notFound);
});

test("summary covers the whole profile; sessionId chooses its Last Session section (the most recent without it)", async () => {
  const P = "summary";
  ok(await remember(P, { content: "The user grows tomatoes on the balcony every summer.", sessionId: "garden" }));
  ok(await remember(P, { content: "The user plays the cello in a community orchestra.", sessionId: "music" }));
  const lastSection = (text, session) => text.split(`## Last Session\nSession: ${session}\n`)[1]?.split("\n## ")[0];
  const all = ok(await api.get(T.summary, { profile: P })).summary;
  assert.match(all, /tomatoes/);
  assert.match(all, /cello/);
  assert.match(lastSection(all, "music") ?? "", /cello/, `the most recent session: ${all}`);
  const garden = ok(await api.get(T.summary, { profile: P }, { query: { sessionId: "garden" } })).summary;
  assert.match(garden, /cello/, "the other sections cover the whole profile");
  const section = lastSection(garden, "garden");
  assert.ok(section, garden);
  assert.match(section, /tomatoes/);
  assert.doesNotMatch(section, /cello/);
  // Sections with nothing in them are left out: an empty profile's
  // summary is one line saying so.
  assert.equal(ok(await api.get(T.summary, { profile: "summary-empty" })).summary, "No memories in this profile yet.\n");
  // POST …/summary, as the published API makes the call, is the same call.
  assert.equal(ok(await api.post(T.summary, { profile: P }, { sessionId: "garden" })).summary, garden);
  assert.equal(ok(await api.post(T.summary, { profile: P }, {})).summary, all);
});

test("DELETE sessions/{sessionId} removes that session's messages and memories only", async () => {
  const P = "sessions";
  ok(await api.post(T.ingest, { profile: P }, { sessionId: "gone", messages: CONVERSATION }));
  const kept = ok(await remember(P, { content: "The user's favourite tea is a smoky lapsang souchong.", sessionId: "kept" }));
  const before = await stats(P);
  const r = ok(await api.del(T.session, { profile: P, sessionId: "gone" }));
  assert.equal(r.sessionId, "gone");
  assert.equal(r.deletedMessages, CONVERSATION.length);
  assert.equal(r.deletedMemories, before.memories - 1);
  assert.deepEqual(await listAll(P, { sessionId: "gone" }), []);
  assert.deepEqual((await listAll(P)).map((m) => m.id), [kept.id]);
  const after = await stats(P);
  assert.equal(after.messages, 0);
  assert.equal(after.memories, 1);
  // Deleting an unknown session deletes nothing.
  assert.deepEqual(ok(await api.del(T.session, { profile: P, sessionId: "never" })), { sessionId: "never", deletedMemories: 0, deletedMessages: 0 });
});

test("export then NDJSON import into an empty profile reproduces every message and memory exactly", async () => {
  const P = "export-src";
  ok(await api.post(T.ingest, { profile: P }, { sessionId: "s1", messages: CONVERSATION }));
  ok(await api.post(T.ingest, { profile: P }, { sessionId: "s2", messages: [{ role: "user", content: "I switched my editor to Helix last month.", timestamp: "2026-03-10T09:00:00Z" }] }));
  ok(await remember(P, { content: "The user wants commit messages in the imperative mood.", type: "instruction", key: "user.commit_style" }));
  const f = ok(await remember(P, { content: "The user's old phone number ended in 4471." }));
  ok(await api.post(T.forget, { profile: P, id: f.id }));
  ok(await remember(P, { content: "The user is on call until the end of the week.", ttlSeconds: 86400 }));

  const exp = await api.get(T.export, { profile: P });
  assert.equal(exp.status, 200);
  assert.match(exp.contentType, /^application\/x-ndjson/);
  assert.match(exp.headers.get("content-disposition") ?? "", /attachment; filename="default-export-src\.ndjson"/);
  const records = exportRecords(exp.body);
  const src = await stats(P);
  assert.equal(records.length, src.messages + src.memories);

  const imp = ok(await api.request("POST", T.import, { profile: "export-dst" }, { body: exp.body, contentType: "application/x-ndjson" }));
  assert.deepEqual(imp, { messages: src.messages, memories: src.memories, consolidationsLeftOut: 0 });
  const again = (await api.get(T.export, { profile: "export-dst" })).body;
  assert.deepEqual(exportRecords(again), records);
  assert.deepEqual(counts(await stats("export-dst")), counts(src));
  assert.deepEqual(await listAll("export-dst"), await listAll(P));
});

test("an export many parts long streams the profile as it was asked for, whatever is written while it is read, and a cancelled reading leaves the spool", async () => {
  const P = "export-spooled";
  const long = (session, n) => Array.from({ length: n }, (_, i) => ({ role: "user", content: `Note ${i} of ${session}. ${bigContent(30)}` }));
  // About 16 MB: more than loopback's socket buffers and the platform's
  // read-ahead hold, so a reading cancelled after its first chunk leaves
  // most of the file spooled (at 5 MB it could all be read ahead).
  for (const [session, n] of [["s1", 500], ["s2", 15], ["s3", 15]]) {
    const r = await api.post(T.ingest, { profile: P }, { sessionId: session, messages: long(session, n) });
    assert.equal(ok(r).messagesStored, n);
    // A report this long is sent as its envelope's pieces (the Worker never
    // joins it): it still reads as one envelope, validated by the client.
    if (session === "s1") assert.ok(r.text.length > 64 * 1024, `a report of ${r.text.length} bytes`);
  }
  const asked = exportRecords((await api.get(T.export, { profile: P })).text);
  const messages = (records) => records.filter((r) => JSON.parse(r).kind === "message").length;
  assert.equal(messages(asked), 530, "every message is in the file");

  const url = fillPath(T.export, { profile: P });
  // A reading cancelled after its first part, while most of the file is
  // still spooled, leaves the spool (the object's stream is dropped).
  const cancelled = await w.fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  const partial = cancelled.body.getReader();
  await partial.read();
  assert.equal((await stats(P)).spooledExports, 1, "the file is still being read out");
  await partial.cancel();
  await waitFor(async () => (await stats(P)).spooledExports === 0 || null, { timeoutMs: 10_000, what: "the cancelled export to leave the spool" });

  const streamed = await w.fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  assert.equal(streamed.status, 200);
  const reader = streamed.body.getReader();
  const chunks = [(await reader.read()).value];
  // While the file is read: a session deleted, another ingested.
  ok(await api.del(T.session, { profile: P, sessionId: "s1" }));
  ok(await api.post(T.ingest, { profile: P }, { sessionId: "s4", messages: long("s4", 5) }));
  for (let r = await reader.read(); !r.done; r = await reader.read()) chunks.push(r.value);
  const file = Buffer.concat(chunks).toString("utf8");
  assert.ok(file.length > 5_000_000, `a file of ${file.length} bytes, many parts long`);
  assert.deepEqual(exportRecords(file), asked, "the file is the profile as it was when asked for");
  const now = exportRecords((await api.get(T.export, { profile: P })).text);
  assert.equal(messages(now), 35, "the profile itself changed: s1's 500 messages gone, s4's 5 added");

  assert.equal((await stats(P)).spooledExports, 0, "an export read whole left the spool");

});

test("import takes the JSON {data} body too, and importing the same file again adds nothing", async () => {
  const P = "import-json-src";
  ok(await api.post(T.ingest, { profile: P }, { sessionId: "s1", messages: CONVERSATION }));
  const data = (await api.get(T.export, { profile: P })).body;
  const first = ok(await api.post(T.import, { profile: "import-json-dst" }, { data }));
  const src = await stats(P);
  assert.deepEqual(first, { messages: src.messages, memories: src.memories, consolidationsLeftOut: 0 });
  assert.deepEqual(exportRecords((await api.get(T.export, { profile: "import-json-dst" })).body), exportRecords(data));
  const second = ok(await api.post(T.import, { profile: "import-json-dst" }, { data }));
  assert.deepEqual(second, { messages: 0, memories: 0, consolidationsLeftOut: 0 });
  assert.deepEqual(counts(await stats("import-json-dst")), counts(src));
  // Another field beside data would be ignored: refused, nothing written.
  fails(await api.post(T.import, { profile: "import-json-extra" }, { data, dryRun: true }), 400, CODE.invalid);
  assert.equal((await stats("import-json-extra")).memories, 0);
});

test("a bad import is refused whole: nothing of it is stored", async () => {
  const P = "import-bad";
  const data = (await api.get(T.export, { profile: "export-src" })).body;
  const broken = `${data}{"kind":"memory","id":"nope"}\n`;
  fails(await api.request("POST", T.import, { profile: P }, { body: broken, contentType: "application/x-ndjson" }), 400, CODE.invalid);
  fails(await api.request("POST", T.import, { profile: P }, { body: data.split("\n").slice(1).join("\n"), contentType: "application/x-ndjson" }), 400, CODE.invalid);
  fails(await api.post(T.import, { profile: P }, { ndjson: data }), 400, CODE.invalid);
  const s = await stats(P);
  assert.equal(s.messages, 0);
  assert.equal(s.memories, 0);
});

test("stats counts messages, sessions, memories by type and by status", async () => {
  const s = await stats("filters");
  assert.equal(s.memories, 5);
  // Every status counts: fact is the typed fact and the untyped memory
  // (classified a fact), forgotten since.
  assert.deepEqual({ ...s.byType }, { fact: 2, event: 1, instruction: 1, task: 1 });
  assert.equal(s.byStatus.forgotten, 1);
  assert.equal(s.byStatus.active, 4);
  const d = await stats("dedup");
  assert.equal(d.messages, CONVERSATION.length);
  assert.equal(d.sessions, 1);
});

test("DELETE profile marks it for deletion: 404 on every read and deletion until POST restore brings it back whole; only it", async () => {
  const P = "doomed";
  ok(await api.post(T.ingest, { profile: P }, { sessionId: "s1", messages: CONVERSATION }));
  const m = ok(await remember(P, { content: "The user's flight to Oslo leaves on Friday morning." }));
  const before = await stats(P);
  const exported = (await api.get(T.export, { profile: P })).body;
  const neighbour = await stats("p1");
  const r = ok(await api.del(T.profile, { profile: P }));
  assert.equal(r.deleted, true);
  assert.equal(Date.parse(r.purgeAt) - Date.parse(r.markedAt), 24 * 3600 * 1000, "purged after the default grace of one day");
  for (const [what, res] of [
    ["stats", await api.get(T.stats, { profile: P })],
    ["list", await api.get(T.memories, { profile: P })],
    ["get", await api.get(T.memory, { profile: P, id: m.id })],
    ["summary", await api.get(T.summary, { profile: P })],
    ["export", await api.get(T.export, { profile: P })],
    ["recall", await api.post(T.recall, { profile: P }, { query: "When does the flight to Oslo leave?" })],
    ["forget", await api.post(T.forget, { profile: P, id: m.id })],
    ["delete", await api.del(T.memory, { profile: P, id: m.id })],
    ["deleteSession", await api.del(T.session, { profile: P, sessionId: "s1" })],
  ]) {
    assert.equal(res.status, 404, `${what}: ${res.status}`);
    assert.equal(res.body.errors[0].code, CODE.notFound, what);
    assert.match(res.body.errors[0].message, /^profile not found/, what);
  }
  // Deleting it again finds no profile (the first mark stays).
  assert.match(fails(await api.del(T.profile, { profile: P }), 404, CODE.notFound).message, /^profile not found/);
  assert.deepEqual(counts(await stats("p1")), counts(neighbour));
  assert.deepEqual(ok(await api.post(T.restore, { profile: P }, undefined)), { restored: true });
  assert.deepEqual(counts(await stats(P)), counts(before));
  assert.equal((await api.get(T.export, { profile: P })).body.split("\n").slice(1).join("\n"), exported.split("\n").slice(1).join("\n"));
  // Nothing left to restore.
  const again = await api.post(T.restore, { profile: P }, undefined);
  fails(again, 404, CODE.notFound);
});

test("a write into a profile marked for deletion purges it at once and lands in an empty profile; restore is then 404", async () => {
  const ndjson = (await api.get(T.export, { profile: "export-src" })).body;
  const writes = [
    ["remember", (P) => remember(P, { content: "A write into a profile marked for deletion." }), { messages: 0, memories: 1 }],
    ["ingest", (P) => api.post(T.ingest, { profile: P }, { sessionId: "s-new", messages: [{ role: "user", content: "I started learning the violin this spring." }] }), { messages: 1 }],
    ["import", (P) => api.request("POST", T.import, { profile: P }, { body: ndjson, contentType: "application/x-ndjson" }), undefined],
  ];
  for (const [what, write, expected] of writes) {
    const P = `marked-then-${what}`;
    ok(await api.post(T.ingest, { profile: P }, { sessionId: "s-old", messages: CONVERSATION }));
    const old = ok(await remember(P, { content: "The user's old locker is number 42 at the pool." }));
    assert.ok((await stats(P)).memories >= 2);
    ok(await api.del(T.profile, { profile: P }));
    fails(await api.get(T.stats, { profile: P }), 404, CODE.notFound);

    const r = ok(await write(P));
    const after = await stats(P);
    if (what === "import") {
      // Exactly what the file holds, nothing of the old profile.
      assert.deepEqual(r, { messages: after.messages, memories: after.memories, consolidationsLeftOut: 0 }, what);
      assert.deepEqual(exportRecords((await api.get(T.export, { profile: P })).body), exportRecords(ndjson), what);
    } else {
      assert.equal(after.messages, expected.messages, `${what}: only the new write's messages`);
      if (expected.memories !== undefined) assert.equal(after.memories, expected.memories, what);
      assert.equal(after.sessions, expected.messages > 0 ? 1 : 0, what);
    }
    const listed = await listAll(P);
    assert.ok(!listed.some((x) => x.id === old.id), `${what}: the old memory is gone`);
    assert.deepEqual(await listAll(P, { sessionId: "s-old" }), [], `${what}: the old session is gone`);
    fails(await api.get(T.memory, { profile: P, id: old.id }), 404, CODE.notFound);
    // The purge cannot be undone: there is nothing to restore.
    fails(await api.post(T.restore, { profile: P }, undefined), 404, CODE.notFound);
    assert.deepEqual((await listAll(P)).map((x) => x.id), listed.map((x) => x.id), `${what}: the failed restore changed nothing`);
  }
});

test("DELETE of a profile nothing was ever written to is 404 (10004), and marks nothing", async () => {
  const P = "never-written";
  fails(await api.del(T.profile, { profile: P }), 404, CODE.notFound);
  // Not marked: reads answer as for any empty profile, and restore has nothing to do.
  assert.deepEqual(ok(await api.get(T.memories, { profile: P })).memories, []);
  assert.equal((await stats(P)).memories, 0);
  fails(await api.post(T.restore, { profile: P }, undefined), 404, CODE.notFound);
});

test("the MCP endpoint answers JSON-RPC with the bearer token, and 401 and 403 in JSON-RPC without", async () => {
  const headers = { accept: "application/json, text/event-stream" };
  const r = await api.post(T.mcp, { profile: "mcp" }, { jsonrpc: "2.0", id: 1, method: "ping" }, { headers });
  assert.equal(r.status, 200);
  assert.equal(r.body.id, 1);
  assert.deepEqual(r.body.result, {});
  const list = await api.post(T.mcp, { profile: "mcp" }, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { headers });
  assert.equal(list.status, 200);
  assert.ok(list.body.result.tools.some((t) => t.name === "recall"));
  // Refused in JSON-RPC too (no id: the request was not read).
  for (const [token, status, message] of [[null, 401, /bearer token/], [TEAM_TOKEN, 403, /may not access namespace/]]) {
    const refused = await api.post(T.mcp, { profile: "mcp" }, { jsonrpc: "2.0", id: 3, method: "ping" }, { headers, token });
    assert.equal(refused.status, status);
    assert.equal(refused.body.jsonrpc, "2.0");
    assert.equal(refused.body.id, null);
    assert.match(refused.body.error.message, message);
  }
});

test("result_info is sent with list pages only, never with other results", async () => {
  // The envelope's result_info describes a page of memories (cursor, count).
  // Results that merely have a `memories` property (an ingest report, stats,
  // a profile deletion) are not pages and must not carry one.
  const P = "result-info";
  const ingest = await api.post(T.ingest, { profile: P }, { sessionId: "s1", messages: CONVERSATION });
  ok(ingest);
  const st = await api.get(T.stats, { profile: P });
  ok(st);
  const page = await api.get(T.memories, { profile: P });
  assert.equal(ok(page).memories.length, page.body.result_info.count);
  const gone = await api.del(T.profile, { profile: P });
  ok(gone);
  for (const [name, r] of [["ingest", ingest], ["stats", st], ["deleteProfile", gone]]) {
    assert.equal(r.body.result_info, undefined, `${name} carries result_info ${JSON.stringify(r.body.result_info)} (its result has memories=${JSON.stringify(r.body.result.memories)?.slice(0, 40)})`);
  }
});

// ---------------------------------------------------------------------------
// Bad input

const BAD = "bad-input";
const ID = "0123456789abcdef0123456789abcdef";
const json = (body) => ({ body, contentType: "application/json" });
const BAD_INPUT = [
  // [name, method, template, params, opts, status, code]
  ["invalid JSON in remember", "POST", T.remember, {}, json('{"content": "The user likes'), 400, CODE.invalid],
  ["invalid JSON in ingest", "POST", T.ingest, {}, json('{"messages": [}'), 400, CODE.invalid],
  ["invalid JSON in recall", "POST", T.recall, {}, json("not json at all"), 400, CODE.invalid],
  ["a JSON array instead of an object", "POST", T.remember, {}, json('["The user likes long walks on the beach."]'), 400, CODE.invalid],
  ["an empty body", "POST", T.remember, {}, json(""), 400, CODE.invalid],
  ["invalid JSON in an import {data} body", "POST", T.import, {}, json("{data:"), 400, CODE.invalid],
  ["text/plain remember", "POST", T.remember, {}, { body: '{"content":"The user likes long walks on the beach."}', contentType: "text/plain" }, 400, CODE.invalid],
  ["form-encoded ingest", "POST", T.ingest, {}, { body: "messages=hello", contentType: "application/x-www-form-urlencoded" }, 400, CODE.invalid],
  ["text/plain recall", "POST", T.recall, {}, { body: '{"query":"walks?"}', contentType: "text/plain" }, 400, CODE.invalid],
  ["a media type that only begins like JSON", "POST", T.remember, {}, { body: '{"content":"The user likes long walks on the beach."}', contentType: "application/jsonx" }, 400, CODE.invalid],
  ["an unknown field in remember", "POST", T.remember, {}, { json: { content: "The user likes long walks on the beach.", bogus: 1 } }, 400, CODE.invalid],
  ["an unknown field in ingest", "POST", T.ingest, {}, { json: { messages: [{ role: "user", content: "I like long walks on the beach." }], tenant: "x" } }, 400, CODE.invalid],
  ["an unknown field in an ingest message", "POST", T.ingest, {}, { json: { messages: [{ role: "user", content: "I like long walks on the beach.", name: "bob" }] } }, 400, CODE.invalid],
  ["an unknown field in recall", "POST", T.recall, {}, { json: { query: "walks?", topK: 3 } }, 400, CODE.invalid],
  ["snake_case session_id in remember", "POST", T.remember, {}, { json: { content: "The user likes long walks on the beach.", session_id: "s1" } }, 400, CODE.invalid],
  ["an unknown list query parameter", "GET", T.memories, {}, { query: { page: 2 } }, 400, CODE.invalid],
  ["an unknown summary query parameter", "GET", T.summary, {}, { query: { verbose: 1 } }, 400, CODE.invalid],
  ["an empty sessionId in ingest", "POST", T.ingest, {}, { json: { sessionId: "", messages: [{ role: "user", content: "I like long walks on the beach." }] } }, 400, CODE.invalid],
  ["an empty sessionId in remember", "POST", T.remember, {}, { json: { sessionId: "", content: "The user likes long walks on the beach." } }, 400, CODE.invalid],
  ["an empty sessionId in recall", "POST", T.recall, {}, { json: { sessionId: "", query: "walks?" } }, 400, CODE.invalid],
  ["an empty sessionId in list", "GET", T.memories, {}, { query: { sessionId: "" } }, 400, CODE.invalid],
  ["an empty sessionId in summary", "GET", T.summary, {}, { query: { sessionId: "" } }, 400, CODE.invalid],
  ["an empty sessionId path segment", "DELETE", T.session, { sessionId: "" }, {}, is4xx, undefined],
  ["a 65-character sessionId", "POST", T.remember, {}, { json: { sessionId: "s".repeat(65), content: "The user likes long walks on the beach." } }, 400, CODE.invalid],
  ["a sessionId with a control character", "POST", T.ingest, {}, { json: { sessionId: "a\u0007b", messages: [{ role: "user", content: "I like long walks on the beach." }] } }, 400, CODE.invalid],
  ["list limit 0", "GET", T.memories, {}, { query: { limit: 0 } }, 400, CODE.invalid],
  ["list limit 1001", "GET", T.memories, {}, { query: { limit: 1001 } }, 400, CODE.invalid],
  ["list limit -1", "GET", T.memories, {}, { query: { limit: -1 } }, 400, CODE.invalid],
  ["list limit abc", "GET", T.memories, {}, { query: { limit: "abc" } }, 400, CODE.invalid],
  ["list limit given twice", "GET", T.memories, {}, { query: [["limit", "1"], ["limit", "2"]] }, 400, CODE.invalid],
  ["a bad list type", "GET", T.memories, {}, { query: { type: "note" } }, 400, CODE.invalid],
  ["a bad list status", "GET", T.memories, {}, { query: { status: "deleted" } }, 400, CODE.invalid],
  ["a cursor that is not an id (a hyphen)", "GET", T.memories, {}, { query: { cursor: "page-2" } }, 400, CODE.invalid],
  ["a 65-character cursor", "GET", T.memories, {}, { query: { cursor: "a".repeat(65) } }, 400, CODE.invalid],
  ["a cursor with a non-ASCII letter", "GET", T.memories, {}, { query: { cursor: `${ID.slice(1)}é` } }, 400, CODE.invalid],
  ["an id with hyphens in get", "GET", T.memory, { id: "not-an-id" }, {}, 400, CODE.invalid],
  ["a 65-character id in get", "GET", T.memory, { id: `${ID}${ID}a` }, {}, 400, CODE.invalid],
  ["an id with a dot in delete", "DELETE", T.memory, { id: `${ID.slice(1)}.` }, {}, 400, CODE.invalid],
  ["an id with an underscore in forget", "POST", T.forget, { id: `${ID.slice(1)}_` }, {}, 400, CODE.invalid],
  ["a non-ASCII id in get", "GET", T.memory, { id: "%C3%A9t%C3%A9" }, {}, 400, CODE.invalid],
  ["blank remember content", "POST", T.remember, {}, { json: { content: "  \n " } }, 400, CODE.invalid],
  ["remember content marked sensitive", "POST", T.remember, {}, { json: { content: "The user's card number is on the fridge.", sensitive: true } }, 400, CODE.invalid],
  ["a bad remember type", "POST", T.remember, {}, { json: { content: "The user likes long walks on the beach.", type: "note" } }, 400, CODE.invalid],
  ["both expiresAt and ttlSeconds", "POST", T.remember, {}, { json: { content: "The user likes long walks on the beach.", expiresAt: "2030-01-01", ttlSeconds: 5 } }, 400, CODE.invalid],
  ["a 40 KB remember content", "POST", T.remember, {}, { json: { content: bigContent(40) } }, 400, CODE.invalid],
  ["no ingest messages", "POST", T.ingest, {}, { json: { messages: [] } }, 400, CODE.invalid],
  ["501 ingest messages", "POST", T.ingest, {}, { json: { messages: Array.from({ length: 501 }, (_, i) => ({ role: "user", content: `Message ${i} about nothing in particular.` })) } }, 400, CODE.invalid],
  ["an ingest message without a role", "POST", T.ingest, {}, { json: { messages: [{ content: "I like long walks on the beach." }] } }, 400, CODE.invalid],
  ["a bad message timestamp", "POST", T.ingest, {}, { json: { messages: [{ role: "user", content: "I like long walks on the beach.", timestamp: "yesterday-ish" }] } }, 400, CODE.invalid],
  ["an empty recall query", "POST", T.recall, {}, { json: { query: "  " } }, 400, CODE.invalid],
  ["a 2 KB recall query", "POST", T.recall, {}, { json: { query: "why ".repeat(512) } }, 400, CODE.invalid],
  ["recall limit 0", "POST", T.recall, {}, { json: { query: "walks?", limit: 0 } }, 400, CODE.invalid],
  ["recall limit 101", "POST", T.recall, {}, { json: { query: "walks?", limit: 101 } }, 400, CODE.invalid],
  ["a bad referenceDate", "POST", T.recall, {}, { json: { query: "walks?", referenceDate: "someday" } }, 400, CODE.invalid],
  ["a bad responseLength", "POST", T.recall, {}, { json: { query: "walks?", responseLength: "huge" } }, 400, CODE.invalid],
];

test("bad input is refused with a 4xx error envelope and stores nothing", async (t) => {
  // Something to protect: a stored memory in the target profile.
  ok(await remember(BAD, { content: "The user has a standing desk at the office.", sessionId: "s1" }));
  // Its background work done (the alarm waits the drain delay), so what
  // follows is compared with a settled profile.
  const before = await waitFor(async () => {
    const s = await stats(BAD);
    return s.pendingJobs === 0 && s;
  }, { what: "the outbox to drain" });
  for (const [name, method, template, params, opts, status, code] of BAD_INPUT) {
    await t.test(name, async () => {
      const r = await api.request(method, template, { profile: BAD, ...params }, opts);
      fails(r, status, code);
    });
  }
  const after = await stats(BAD);
  assert.deepEqual(counts(after), counts(before));
  assert.equal(after.pendingJobs, before.pendingJobs);
});

test("a 100,000-character unknown field name in a remember or ingest body is a 400 quoting it cut to 64 characters", async () => {
  const long = "x".repeat(100_000);
  const message = { role: "user", content: "I like long walks on the beach." };
  const bodies = [
    [T.remember, { content: "The user likes long walks on the beach.", [long]: 1 }],
    [T.ingest, { messages: [message], [long]: 1 }],
    [T.ingest, { messages: [{ ...message, [long]: 1 }] }],
  ];
  for (const [template, body] of bodies) {
    const r = await api.post(template, { profile: "huge-field" }, body);
    fails(r, 400, CODE.invalid);
    const text = r.body.errors[0].message;
    assert.ok(text.length < 300, `${text.length} characters: ${text.slice(0, 300)}`);
    assert.ok(text.includes(`unknown field "${"x".repeat(64)}…", expected`), text.slice(0, 300));
    assert.ok(text.includes("expected one of `"), `the fields there are: ${text}`);
  }
});

test("ids are opaque: any 1-64 ASCII letters and digits is well-formed, and one nobody holds is 404 (10004)", async () => {
  const P = "opaque-ids";
  const m = ok(await remember(P, { content: "The user's umbrella is the yellow one by the door." }));
  assert.match(m.id, ULID);
  const before = await stats(P);
  // Ids of the earlier form (32 lowercase hex), other casings and lengths,
  // the published samples' style: all well-formed, none held here.
  const unknown = [ID, ID.toUpperCase(), ID.slice(1), "z".repeat(32), "01JSGCEXAMPLE000000000000", "a", "A".repeat(64)];
  for (const id of unknown) {
    fails(await api.get(T.memory, { profile: P, id }), 404, CODE.notFound);
    fails(await api.post(T.forget, { profile: P, id }), 404, CODE.notFound);
    fails(await api.del(T.memory, { profile: P, id }), 404, CODE.notFound);
  }
  assert.match(ID, HEX_ID);
  // A cursor is not an id: one is sealed to the profile that gave it, so a
  // well-formed id sent as a cursor, or another profile's cursor, is a 400
  // (never an empty "last page").
  for (const cursor of ["0", "z".repeat(64), m.id]) {
    fails(await api.get(T.memories, { profile: P }, { query: { cursor } }), 400, CODE.invalid);
  }
  assert.deepEqual(counts(await stats(P)), counts(before));
  assert.equal(ok(await api.get(T.memory, { profile: P, id: m.id })).id, m.id);
  await remember(P, { content: "A second memory, so that a first page of one has a cursor." });
  const page = ok(await api.get(T.memories, { profile: P }, { query: { limit: 1 } }));
  await remember(`${P}-other`, { content: "Another profile's memory." });
  fails(await api.get(T.memories, { profile: `${P}-other` }, { query: { cursor: page.cursor } }), 400, CODE.invalid);
  assert.equal(ok(await api.get(T.memories, { profile: P }, { query: { cursor: page.cursor } })).memories.length, 1, "its own profile takes it");
});

test("bad profile and namespace names are refused with a 4xx error envelope and store nothing", async (t) => {
  const content = "The user has a standing desk at the office.";
  for (const [what, name] of Object.entries(BAD_NAMES)) {
    // `..` cannot reach the Worker as a segment (URLs resolve it away): any
    // 4xx envelope will do; every other bad name must be 400 (10001).
    const [status, code] = name === ".." ? [is4xx, undefined] : [400, CODE.invalid];
    await t.test(`profile: ${what}`, async () => {
      fails(await remember(name, { content }), status, code);
      fails(await api.get(T.memories, { profile: name }), status, code);
      fails(await api.del(T.profile, { profile: name }), status, code);
    });
    await t.test(`namespace: ${what}`, async () => {
      fails(await api.post(T.remember, { namespace: name, profile: "p" }, { content }), status, code);
      fails(await api.get(T.stats, { namespace: name, profile: "p" }), status, code);
    });
  }
  // Good profile names (1-100 characters) that are too long for a namespace (1-32).
  for (const [what, name] of Object.entries(BAD_NAMESPACE_NAMES)) {
    await t.test(`namespace only: ${what}`, async () => {
      fails(await api.post(T.remember, { namespace: name, profile: "p" }, { content }), 400, CODE.invalid);
      fails(await api.get(T.stats, { namespace: name, profile: "p" }), 400, CODE.invalid);
      fails(await api.post(T.namespaces, {}, { name }), 400, CODE.invalid);
      fails(await api.get(T.namespace, { namespace: name }), 400, CODE.invalid);
    });
  }
  await t.test("empty account", async () => {
    fails(await api.post(T.remember, { account: "", profile: "p" }, { content }), is4xx, undefined);
  });
  // Where an accepted bad name could have landed: nothing there.
  for (const [ns, p] of [["default", "a"], ["default", "b"], ["a", "b"], ["default", "p"]]) {
    assert.equal((await stats(p, { namespace: ns })).memories, 0, `${ns}/${p} is empty`);
  }
  // 32 characters is still a good namespace name, 100 a good profile name.
  ok(await api.post(T.remember, { namespace: "n".repeat(32), profile: "y".repeat(100) }, { content }));
  const long = ok(await api.get(T.memories, { namespace: "n".repeat(32), profile: "y".repeat(100) }));
  assert.equal(long.memories.length, 1);
  assert.equal((await stats("y".repeat(100))).memories, 0, "another namespace's profile");
});

// ---------------------------------------------------------------------------
// Namespaces

/** Every namespace a token may see, paging `perPage` at a time (checks the paging). */
async function allNamespaces(token, perPage) {
  const names = [];
  let cursor;
  for (let pages = 1; ; pages++) {
    assert.ok(pages <= 100, "namespace paging ends");
    const r = await api.get(T.namespaces, {}, { token, query: { per_page: perPage, cursor } });
    const page = ok(r);
    assert.ok(Array.isArray(page));
    if (perPage !== undefined) {
      assert.ok(page.length <= perPage);
      assert.equal(r.body.result_info.per_page, perPage);
    }
    assert.equal(r.body.result_info.count, page.length);
    names.push(...page.map((n) => n.name));
    cursor = r.body.result_info.cursor;
    if (cursor === "") return names;
  }
}

test("namespaces: create, get, list and delete; a taken name is 409 (10008); a write creates one; deleting one purges its profiles", async () => {
  const content = "The user's favourite museum is the Rijksmuseum.";
  const made = ok(await api.post(T.namespaces, {}, { name: "ns-made" }), 201);
  assert.equal(made.name, "ns-made");
  assert.equal(made.account_id, "acct");
  assert.ok(made.id.length > 0);
  assert.ok(!Number.isNaN(Date.parse(made.created_at)) && !Number.isNaN(Date.parse(made.updated_at)));
  assert.deepEqual(ok(await api.get(T.namespace, { namespace: "ns-made" })), made);
  const taken = fails(await api.post(T.namespaces, {}, { name: "ns-made" }), 409, CODE.alreadyExists);
  assert.match(taken.message, /already exists/i);
  // Bad bodies.
  fails(await api.post(T.namespaces, {}, {}), 400, CODE.invalid);
  fails(await api.post(T.namespaces, {}, { name: "ns-x", extra: 1 }), 400, CODE.invalid);
  fails(await api.post(T.namespaces, {}, { name: "bad name" }), 400, CODE.invalid);
  // Unknown, and a name nobody may hold.
  fails(await api.get(T.namespace, { namespace: "ns-never" }), 404, CODE.notFound);
  fails(await api.del(T.namespace, { namespace: "ns-never" }), 404, CODE.notFound);

  // The first write into one of its profiles creates a namespace.
  ok(await api.post(T.remember, { namespace: "ns-implicit", profile: "p" }, { content }));
  assert.equal(ok(await api.get(T.namespace, { namespace: "ns-implicit" })).name, "ns-implicit");

  // Listed by name, every one once, a page at a time.
  const all = await allNamespaces(TOKEN);
  assert.ok(all.includes("ns-made") && all.includes("ns-implicit"), JSON.stringify(all));
  assert.ok(!all.includes("ns-never"));
  assert.deepEqual(await allNamespaces(TOKEN, 2), all);
  assert.deepEqual([...all].sort(), all, "sorted by name");
  assert.equal(new Set(all).size, all.length);

  // A token sees, creates and deletes only the namespaces it may touch.
  ok(await api.post(T.remember, { namespace: "team", profile: "ns-check" }, { content }, { token: TEAM_TOKEN }));
  assert.deepEqual(await allNamespaces(TEAM_TOKEN), ["team"]);
  fails(await api.post(T.namespaces, {}, { name: "ns-team-other" }, { token: TEAM_TOKEN }), 403, CODE.forbidden);
  fails(await api.get(T.namespace, { namespace: "ns-made" }, { token: TEAM_TOKEN }), 403, CODE.forbidden);
  fails(await api.del(T.namespace, { namespace: "ns-made" }, { token: TEAM_TOKEN }), 403, CODE.forbidden);
  assert.ok(ok(await api.get(T.namespace, { namespace: "ns-made" })));

  // Deleting one: gone at once, its profiles purged, its name free again.
  assert.equal(ok(await api.del(T.namespace, { namespace: "ns-implicit" })), null);
  fails(await api.get(T.namespace, { namespace: "ns-implicit" }), 404, CODE.notFound);
  fails(await api.del(T.namespace, { namespace: "ns-implicit" }), 404, CODE.notFound);
  assert.ok(!(await allNamespaces(TOKEN)).includes("ns-implicit"));
  assert.deepEqual(ok(await api.get(T.memories, { namespace: "ns-implicit", profile: "p" })).memories, []);
  assert.equal((await stats("p", { namespace: "ns-implicit" })).memories, 0);
  const again = ok(await api.post(T.namespaces, {}, { name: "ns-implicit" }), 201);
  assert.equal(again.name, "ns-implicit");
  ok(await api.del(T.namespace, { namespace: "ns-made" }));
  // Other namespaces are untouched.
  assert.equal(ok(await api.get(T.namespace, { namespace: "team" }, { token: TEAM_TOKEN })).name, "team");
});

test("a token granted one namespace pages through that one alone: no page, cursor or count of a reply names another", async () => {
  // Namespaces on both sides of `team` by name, made by the full token.
  for (const name of ["a-first", "tea", "teal", "team-b", "tel", "zz-last"]) {
    const r = await api.post(T.namespaces, {}, { name });
    assert.ok(r.status === 201 || r.status === 409, `${name}: ${r.text}`);
  }
  ok(await api.post(T.remember, { namespace: "team", profile: "pages" }, { content: "The team's standup is at nine." }, { token: TEAM_TOKEN }));
  const hidden = (await allNamespaces(TOKEN)).filter((n) => n !== "team");
  assert.ok(hidden.length >= 6, JSON.stringify(hidden));
  for (const base of [`/client/v4/accounts/${ACCOUNT}/agent-memory/namespaces`, `/accounts/${ACCOUNT}/agent-memory/namespaces`]) {
    for (const perPage of [1, 2, undefined]) {
      const seen = [];
      let cursor = "";
      for (let pages = 1; ; pages++) {
        assert.ok(pages <= 20, "namespace paging ends");
        const query = new URLSearchParams({ ...(perPage && { per_page: String(perPage) }), ...(cursor && { cursor }) });
        const res = await w.fetch(`${base}?${query}`, { headers: { authorization: `Bearer ${TEAM_TOKEN}` } });
        const text = await res.text();
        assert.equal(res.status, 200, text);
        for (const name of hidden) {
          assert.ok(!text.includes(JSON.stringify(name)), `${base} per_page=${perPage}: the reply names ${name}: ${text}`);
        }
        const body = JSON.parse(text);
        assert.equal(body.result_info.count, body.result.length);
        // A page is full while a visible namespace is left to show.
        if (perPage === 1 && pages === 1) assert.equal(body.result.length, 1, text);
        seen.push(...body.result.map((n) => n.name));
        cursor = body.result_info.cursor;
        if (cursor === "") break;
      }
      assert.deepEqual(seen, ["team"], `${base} per_page=${perPage}`);
    }
  }
});

// ---------------------------------------------------------------------------

test("update replaces a memory's metadata; consolidate merges two wordings, and undo restores them", async () => {
  const profile = "p-consolidate";
  // The same metadata once the second is updated: only such wordings merge.
  const first = ok(await remember(profile, { content: "The user prefers dark mode in the code editor.", key: "user.editor_theme", metadata: { agentId: "chat", priority: 2 } }));
  await new Promise((r) => setTimeout(r, 5));
  const second = ok(await remember(profile, { content: "In the code editor, the user prefers the dark mode.", key: "user.theme" }));
  const updated = ok(await api.patch(T.memory, { profile, id: second.id }, { metadata: { agentId: "chat", priority: 2 } }));
  assert.deepEqual(updated.metadata, { agentId: "chat", priority: 2 });
  fails(await api.patch(T.memory, { profile, id: second.id }, { metadata: { agentId: 3 } }), 400, CODE.invalid);
  fails(await api.patch(T.memory, { profile, id: "0".repeat(32) }, { metadata: {} }), 404, CODE.notFound);
  const dry = ok(await api.post(T.consolidate, { profile }, { dryRun: true }));
  assert.equal(dry.dryRun, true);
  assert.equal(dry.actions.length, 1);
  assert.equal((await listAll(profile)).length, 2, "a dry run changes nothing");
  const run = ok(await api.post(T.consolidate, { profile }, {}));
  assert.equal(run.done, true);
  const merge = run.actions.find((a) => a.action === "merge");
  assert.ok(merge, JSON.stringify(run));
  assert.deepEqual([...merge.members].sort(), [first.id, second.id].sort());
  assert.equal((await listAll(profile, { status: "active" })).length, 1);
  const detail = ok(await api.get(T.memory, { profile, id: merge.target }));
  assert.equal(detail.consolidations[0].id, merge.id);
  const undone = ok(await api.post(T.undo, { profile, consolidationId: merge.id }, undefined));
  assert.ok(undone.undoneAt);
  assert.equal((await listAll(profile, { status: "active" })).length, 2);
  fails(await api.post(T.undo, { profile, consolidationId: merge.id }, undefined), 400, CODE.invalid);
  fails(await api.post(T.undo, { profile, consolidationId: 999999 }, undefined), 404, CODE.notFound);
});

test("a namespace's profiles: listed by name once written, a page at a time; a deleted one leaves the list and its restore brings it back; a token sees only its namespaces' lists", async () => {
  const content = "The user's favourite museum is the Rijksmuseum.";
  for (const profile of ["pl-c", "pl-a", "pl-b"]) ok(await api.post(T.remember, { namespace: "ns-profiles", profile }, { content }));
  const names = async (query = {}) => {
    const r = await api.get(T.profiles, { namespace: "ns-profiles" }, { query });
    const page = ok(r);
    assert.equal(r.body.result_info.count, page.length);
    for (const p of page) assert.ok(!Number.isNaN(Date.parse(p.createdAt)), JSON.stringify(p));
    return { names: page.map((p) => p.name), cursor: r.body.result_info.cursor };
  };
  assert.deepEqual(await names(), { names: ["pl-a", "pl-b", "pl-c"], cursor: undefined });
  const first = await names({ per_page: 2 });
  assert.deepEqual(first.names, ["pl-a", "pl-b"]);
  assert.deepEqual(await names({ per_page: 2, cursor: first.cursor }), { names: ["pl-c"], cursor: undefined });
  const createdAt = async (profile) => ok(await api.get(T.profiles, { namespace: "ns-profiles" })).find((p) => p.name === profile)?.createdAt;
  const bornB = await createdAt("pl-b");
  ok(await api.del(T.profile, { namespace: "ns-profiles", profile: "pl-b" }));
  assert.deepEqual((await names()).names, ["pl-a", "pl-c"]);
  ok(await api.post(T.restore, { namespace: "ns-profiles", profile: "pl-b" }, {}));
  assert.deepEqual((await names()).names, ["pl-a", "pl-b", "pl-c"]);
  assert.equal(await createdAt("pl-b"), bornB, "restored: the same profile, first recorded when it was");
  fails(await api.get(T.profiles, { namespace: "ns-profiles" }, { token: TEAM_TOKEN }), 403, CODE.forbidden);
  fails(await api.get(T.profiles, { namespace: "ns-profiles-never" }), 404, CODE.notFound);
  fails(await api.get(T.profiles, { namespace: "ns-profiles" }, { query: { cursor: "zz" } }), 400, CODE.invalid);
  // A profile marked for deletion goes with its namespace: a restore
  // afterwards finds nothing, and does not bring the namespace back.
  ok(await api.del(T.profile, { namespace: "ns-profiles", profile: "pl-c" }));
  assert.equal(ok(await api.del(T.namespace, { namespace: "ns-profiles" })), null);
  fails(await api.post(T.restore, { namespace: "ns-profiles", profile: "pl-c" }, {}), 404, CODE.notFound);
  fails(await api.get(T.namespace, { namespace: "ns-profiles" }), 404, CODE.notFound);
  fails(await api.get(T.profiles, { namespace: "ns-profiles" }), 404, CODE.notFound);
});

test("every documented operation was exercised and validated by this suite", () => {
  assert.ok(documentedOperations(doc).length >= 19);
  for (const op of ["GET /accounts/{account}/agent-memory/namespaces", "POST /accounts/{account}/agent-memory/namespaces",
    "GET /accounts/{account}/agent-memory/namespaces/{namespace}", "DELETE /accounts/{account}/agent-memory/namespaces/{namespace}"]) {
    assert.ok(documentedOperations(doc).includes(op), `${op} is documented`);
  }
  assert.deepEqual(unexercised(doc), []);
});

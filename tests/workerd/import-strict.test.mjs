// Strict reading of what a caller sends, through the built Worker: an
// import is taken only when it is consistent (each record once, each line
// as strict as a request body, dates as the service stores them, links to
// other versions held somewhere), a filter given as text refuses a key
// named twice, and the list cursors refuse what the service never
// returned while taking the empty one as the first page. A refused call
// changes nothing. Every response is validated against the OpenAPI
// document the Worker serves.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";
import { T, VARS, TOKEN, CODE, restClient, loadDocument, ok, fails, counts } from "./fixtures.mjs";

let w;
let api;
before(async () => {
  w = await startWorker({ vars: VARS });
  api = restClient(w, await loadDocument(w));
});
after(async () => {
  await w?.dispose();
});

const FIRST = "01m8wd82f91ktpz8e5mx00g5wq";
const SECOND = "01m8wd82f91ktpz8e5mx00g5wr";
const HEADER = JSON.stringify({ kind: "header", format: "agent-memory-export", version: 1, profile: "x" });

function memory(id, content, extra = {}) {
  return JSON.stringify({
    kind: "memory", id, type: "fact", summary: content, content, sessionId: null, sourceMessageIds: [], searchQueries: [],
    status: "active", createdAt: "2026-01-01T00:00:00.000Z", updatedAt: "2026-01-01T00:00:00.000Z", ...extra,
  });
}

const ndjson = (...lines) => lines.join("\n") + "\n";
const importText = (profile, body) => api.request("POST", T.import, { profile }, { body, contentType: "application/x-ndjson" });
const stats = async (profile) => counts(ok(await api.get(T.stats, { profile })));
const exported = async (profile) => (await api.get(T.export, { profile })).body.split("\n").slice(1).join("\n");

/** Imports `body` into a profile holding one memory; asserts a 400 whose message matches `pattern`, and that nothing changed. */
async function refused(profile, body, pattern) {
  ok(await importText(profile, ndjson(HEADER, memory("0123456789abcdef0123456789abcdef", "A memory that was here before."))));
  const before = [await stats(profile), await exported(profile)];
  const r = await importText(profile, body);
  fails(r, 400, CODE.invalid);
  assert.match(r.body.errors[0].message, pattern);
  assert.deepEqual([await stats(profile), await exported(profile)], before, "the refused import changed the profile");
}

test("an import holding two memory records with one id is refused, naming the id and the lines", async () => {
  await refused("dup-memory", ndjson(HEADER, memory(FIRST, "Alpha lives in Oslo."), memory(FIRST, "Beta lives in Rome.")), new RegExp(`line 3: memory ${FIRST} repeats line 2`));
});

test("an import holding two message records with one id is refused", async () => {
  const ingested = ok(await api.post(T.ingest, { profile: "dup-message-scratch" }, { sessionId: "s1", messages: [{ role: "user", content: "hello there" }] }));
  const id = ingested.messageIds[0];
  const message = (extra) => JSON.stringify({ kind: "message", id, sessionId: "s1", role: "user", content: "hello there", position: 0, createdAt: "2026-01-01T00:00:00.000Z", ...extra });
  await refused("dup-message", ndjson(HEADER, message({ metadata: { a: 1 } }), message({ position: 5, metadata: { a: 2 } })), new RegExp(`line 3: message ${id} repeats line 2`));
});

test("an import line naming a key twice is refused, in an NDJSON body and in a JSON body's data", async () => {
  const twice = memory(FIRST, "Alpha lives in Oslo.").replace(/}$/, ',"content":"Gamma lives in Lima."}');
  await refused("dup-key", ndjson(HEADER, twice), /line 2: invalid json: duplicate key "content"/);
  const before = await stats("dup-key");
  fails(await api.post(T.import, { profile: "dup-key" }, { data: ndjson(HEADER, twice) }), 400, CODE.invalid);
  assert.deepEqual(await stats("dup-key"), before);
});

test("an import header with a field a header does not have is refused", async () => {
  const header = JSON.stringify({ kind: "header", format: "agent-memory-export", version: 1, bogus: true });
  await refused("bad-header", ndjson(header, memory(FIRST, "Alpha lives in Oslo.")), /line 1: unknown field "bogus"/);
});

test("an import stores eventDate as the day the filters compare", async () => {
  ok(await importText("event-date", ndjson(HEADER, memory(FIRST, "The launch happened.", { type: "event", eventDate: "8 May, 2023" }))));
  assert.equal(ok(await api.get(T.memory, { profile: "event-date", id: FIRST })).eventDate, "2023-05-08");
  for (const filter of ['{"eventDate":"2023-05-08"}', '{"eventDate":{"gte":"2023-01-01"}}']) {
    assert.equal(ok(await api.get(T.memories, { profile: "event-date" }, { query: { filter } })).memories.length, 1, filter);
  }
});

test("an import of an inconsistent memory is refused: validity ending before it starts, a blank summary, a version held nowhere", async () => {
  await refused("valid-to", ndjson(HEADER, memory(FIRST, "Alpha lives in Oslo.", { validFrom: "2023-05-08", validTo: "2020-01-01" })), /line 2: validTo .* is before validFrom/);
  await refused("blank-summary", ndjson(HEADER, memory(FIRST, "Alpha lives in Oslo.", { summary: " " })), /line 2: summary must hold a visible character/);
  await refused("dangling", ndjson(HEADER, memory(FIRST, "Alpha lives in Oslo.", { status: "superseded", supersededBy: SECOND })), new RegExp(`line 2: supersededBy names memory ${SECOND}, which is neither in the file nor in the profile`));
  await refused("self", ndjson(HEADER, memory(FIRST, "Alpha lives in Oslo.", { supersedes: FIRST })), /line 2: memory .* names itself/);
});

test("a filter given as text naming a key twice is refused by list, export and recall", async () => {
  const P = "filter-twice";
  for (const agentId of ["alice", "bob"]) {
    ok(await api.post(T.remember, { profile: P }, { content: `${agentId} owns the billing service.`, metadata: { agentId } }));
  }
  const filter = '{"agentId":"alice","agentId":"bob"}';
  for (const r of [
    await api.get(T.memories, { profile: P }, { query: { filter } }),
    await api.get(T.export, { profile: P }, { query: { filter } }),
    await api.post(T.recall, { profile: P }, { query: "who owns the billing service", filter }),
  ]) {
    fails(r, 400, CODE.invalid);
    assert.match(r.body.errors[0].message, /duplicate key "agentId"/);
  }
});

test("the namespace list refuses a cursor that is no namespace name and takes the empty one as the first page", async () => {
  for (const name of ["cursor-a", "cursor-b"]) ok(await api.post(T.namespaces, {}, { name }), 201);
  const first = await api.get(T.namespaces, {}, { query: { per_page: 1 } });
  const empty = await api.get(T.namespaces, {}, { query: { per_page: 1, cursor: "" } });
  assert.deepEqual(ok(empty), ok(first));
  fails(await api.get(T.namespaces, {}, { query: { cursor: "\u0000junk" } }), 400, CODE.invalid);
});

test("the memory list takes the empty cursor of a published last page as the first page, on both prefixes", async () => {
  const P = "cursor-empty";
  for (const content of ["The build runs on Tuesdays.", "Invoices go out on the first."]) ok(await api.post(T.remember, { profile: P }, { content }));
  const first = ok(await api.get(T.memories, { profile: P }, { query: { limit: 1 } }));
  assert.deepEqual(ok(await api.get(T.memories, { profile: P }, { query: { limit: 1, cursor: "" } })), first);
  const published = async (query) => {
    const res = await w.fetch(`/client/v4/accounts/acct/agent-memory/namespaces/default/profiles/${P}/memories${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, body: await res.json() };
  };
  const all = await published("?per_page=10");
  assert.equal(all.status, 200);
  assert.ok(!("cursor" in all.body.result_info), "the published last page has no cursor");
  const again = await published("?per_page=10&cursor=");
  assert.equal(again.status, 200, JSON.stringify(again.body));
  assert.deepEqual(again.body.result, all.body.result);
  assert.equal((await published("?cursor=%00junk")).status, 400);
});

// The same input, sent over REST, MCP and the service binding (RPC), gets
// the same answer and stores the same thing: integers above 2^53 in
// metadata stay the numbers sent (the hop to the Durable Object parses
// JSON with serde_json, not the platform's JSON.parse), and a filter on
// one selects exactly, alike on list, recall and export; `metadata: null`
// (an `undefined` over RPC) is "not given" on every way in; a consolidation
// id that is not a positive integer is a 400 on every way in; a profile
// named by an email is the same profile over REST, MCP and the binding.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";
import { profilePath } from "./reliability-support.mjs";

const TOKEN = "dev-token";
let w;
before(async () => {
  w = await startWorker();
});
after(async () => w?.dispose());

const P = (profile, suffix = "") => profilePath("ways", profile, suffix);

async function rest(method, path, body) {
  const headers = { authorization: `Bearer ${TOKEN}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await w.fetch(path, { method, headers, body });
  const text = await res.text();
  // An export is NDJSON: its body is read as text only.
  return { status: res.status, text, body: path.split("?")[0].endsWith("/export") ? null : JSON.parse(text) };
}

async function mcpTool(profile, name, argsText) {
  const res = await w.fetch(`/mcp/namespaces/ways/profiles/${profile}`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", accept: "application/json" },
    body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}","arguments":${argsText}}}`,
  });
  const text = await res.text();
  return { status: res.status, text, body: JSON.parse(text) };
}

async function rejection(promise) {
  try {
    await promise;
    return null;
  } catch (e) {
    return e.message;
  }
}

const BIG = "9007199254740993"; // 2^53 + 1: no JavaScript number holds it

test("an integer above 2^53 in metadata is stored as sent, over REST and over MCP", async () => {
  const body = `{"content":"The order counter is tracked.","metadata":{"orderId":${BIG}}}`;
  const r = await rest("POST", P("big", "/remember"), body);
  assert.equal(r.status, 200, r.text);
  assert.match(r.text, new RegExp(`"orderId":${BIG}[,}]`), "the answer carries the number sent");
  const exported = await rest("GET", P("big", "/export"));
  assert.match(exported.text, new RegExp(`"orderId":${BIG}[,}]`), "the export holds the number sent");
  const m = await mcpTool("bigmcp", "remember", `{"content":"The order counter is tracked.","metadata":{"orderId":${BIG}}}`);
  assert.equal(m.status, 200, m.text);
  assert.match(m.text, new RegExp(`orderId.{0,4}${BIG}`), "the tool's result carries the number sent");
  assert.doesNotMatch(m.text, /9007199254740992/);
});

test("a filter on an integer above 2^53 selects exactly, the same on list, recall and export, over REST, MCP and RPC", async () => {
  const LOW = "9007199254740992"; // 2^53, the float nearest BIG
  const ids = {};
  for (const [n, which] of [[LOW, "first"], [BIG, "second"]]) {
    const r = await rest("POST", P("bigfilter", "/remember"), `{"content":"The ${which} warehouse order shipped on Monday.","metadata":{"orderId":${n}}}`);
    assert.equal(r.status, 200, r.text);
    ids[n] = r.body.result.id;
  }
  const query = "warehouse order shipped";
  const exported = (text) => text.split("\n").filter((l) => l.includes('"kind":"memory"')).map((l) => JSON.parse(l).id);
  // [the filter as JSON text, the one memory it selects]
  for (const [filter, want] of [
    [`{"orderId":${BIG}}`, BIG],
    [`{"orderId":${LOW}}`, LOW],
    [`{"orderId":{"ne":${BIG}}}`, LOW],
    [`{"orderId":{"in":[${BIG}]}}`, BIG],
    [`{"orderId":{"nin":[${BIG}]}}`, LOW],
    [`{"orderId":{"gt":${LOW}}}`, BIG],
    [`{"orderId":{"gte":${BIG}}}`, BIG],
    [`{"orderId":{"lt":${BIG}}}`, LOW],
    [`{"orderId":{"lte":${LOW}}}`, LOW],
  ]) {
    const q = `?filter=${encodeURIComponent(filter)}`;
    const listed = await rest("GET", P("bigfilter", `/memories${q}`));
    assert.deepEqual(listed.body.result.memories.map((m) => m.id), [ids[want]], `REST list ${filter}: ${listed.text}`);
    const exp = await rest("GET", P("bigfilter", `/export${q}`));
    assert.deepEqual(exported(exp.text), [ids[want]], `REST export ${filter}: ${exp.text}`);
    const recalled = await rest("POST", P("bigfilter", "/recall"), `{"query":"${query}","filter":${filter}}`);
    assert.deepEqual(recalled.body.result?.candidates?.map((c) => c.id), [ids[want]], `REST recall ${filter}: ${recalled.text}`);
    const mList = await mcpTool("bigfilter", "list", `{"filter":${filter}}`);
    assert.deepEqual(mList.body.result.structuredContent.memories.map((m) => m.id), [ids[want]], `MCP list ${filter}: ${mList.text}`);
    const mRecall = await mcpTool("bigfilter", "recall", `{"query":"${query}","filter":${filter}}`);
    assert.deepEqual(mRecall.body.result.structuredContent?.candidates?.map((c) => c.id), [ids[want]], `MCP recall ${filter}: ${mRecall.text}`);
  }
  // Over RPC a filter holds JavaScript numbers: 2^53 is the first order,
  // never the second too, on every path.
  for (const [filter, want] of [[{ orderId: 2 ** 53 }, LOW], [{ orderId: { gt: 2 ** 53 } }, BIG], [{ orderId: { gte: 2 ** 53 } }, null]]) {
    const all = want ? [ids[want]] : [ids[LOW], ids[BIG]].sort();
    const sorted = (xs) => (want ? xs : [...xs].sort());
    const listed = await w.call("ways/bigfilter", "list", { filter });
    assert.deepEqual(sorted(listed.memories.map((m) => m.id)), all, `RPC list ${JSON.stringify(filter)}`);
    assert.deepEqual(sorted(exported(await w.call("ways/bigfilter", "export", { filter }))), all, `RPC export ${JSON.stringify(filter)}`);
    const recalled = await w.call("ways/bigfilter", "recall", query, { filter });
    assert.deepEqual(sorted(recalled.candidates.map((c) => c.id)), all, `RPC recall ${JSON.stringify(filter)}`);
  }
});

test("a consolidation id above 2^53 reaches the profile as sent: 404 no consolidation, never a float", async () => {
  for (const id of [BIG, "9223372036854775807"]) {
    const r = await rest("POST", P("big", `/consolidations/${id}/undo`));
    assert.equal(r.status, 404, r.text);
    assert.match(r.body.errors[0].message, new RegExp(`no consolidation with id ${id}`));
  }
});

test("a consolidation id that is not a positive integer is a 400 over REST and over RPC", async () => {
  for (const id of ["0", "-1"]) {
    const r = await rest("POST", P("undo", `/consolidations/${id}/undo`));
    assert.equal(r.status, 400, `${id}: ${r.text}`);
    assert.match(r.body.errors[0].message, /positive integer/);
  }
  for (const id of [0, -1]) {
    const message = await rejection(w.call("ways/undo", "undoConsolidation", id));
    assert.match(message ?? "", /positive integer \(10001\)$/, `${id}: ${message}`);
  }
});

test("metadata: null is not given over REST, MCP and RPC, and metadata: undefined over RPC", async () => {
  const remember = { content: "The linter is ruff.", metadata: null };
  const ingest = { sessionId: "s1", metadata: null, messages: [{ role: "user", content: "I like hiking in the Alps." }] };
  const r = await rest("POST", P("rest-null", "/remember"), JSON.stringify(remember));
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.result.metadata, undefined, "stored without metadata");
  assert.equal((await rest("POST", P("rest-null", "/ingest"), JSON.stringify(ingest))).status, 200);
  const m = await mcpTool("mcp-null", "remember", JSON.stringify(remember));
  assert.equal(m.body.result.isError, false, m.text);
  assert.equal(await rejection(w.call("ways/rpc-null", "remember", remember)), null);
  assert.equal(await rejection(w.call("ways/rpc-undefined", "remember", { content: "The linter is ruff.", metadata: undefined })), null);
  assert.equal(await rejection(w.call("ways/rpc-undefined", "ingest", ingest.messages, { sessionId: "s1", metadata: undefined })), null);
  const stored = await Promise.all(["rest-null", "rpc-null", "rpc-undefined"].map((p) => rest("GET", P(p, "/memories"))));
  for (const s of stored) assert.ok(s.body.result.memories.length >= 1, s.text);
});

test("a profile named by an email is one profile over REST, MCP and the binding; a namespace is not", async () => {
  const name = "alice+work@example.com";
  const r = await rest("POST", P(name, "/remember"), JSON.stringify({ content: "Alice's standup is at 9:30." }));
  assert.equal(r.status, 200, r.text);
  assert.equal(await rejection(w.call(`ways/${name}`, "remember", { content: "Alice reviews pull requests on Fridays." })), null);
  const m = await mcpTool(encodeURIComponent(name), "list", "{}");
  assert.equal(m.body.result.structuredContent.memories.length, 2, m.text);
  const listed = await rest("GET", P(name, "/memories"));
  assert.equal(listed.body.result.memories.length, 2, listed.text);
  const ns = await w.fetch(`/accounts/acct/agent-memory/namespaces`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify({ name: "team@example.com" }),
  });
  assert.equal(ns.status, 400, await ns.text());
});

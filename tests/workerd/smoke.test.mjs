// Smoke tests of the built Worker in workerd: REST, and RPC over a real
// Service binding (tests/workerd/consumer). Run with `make test`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";

// New memory ids are ULIDs: 26 lowercase Crockford base32 characters.
const ULID = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;

const BASE = "/accounts/a/agent-memory/namespaces/default/profiles/smoke";
const AUTH = { authorization: "Bearer dev-token", "content-type": "application/json" };

let w;
before(async () => {
  w = await startWorker();
});
after(async () => {
  await w?.dispose();
});

test("GET /health", async () => {
  const res = await w.fetch("/health");
  assert.equal(res.status, 200);
  const body = await res.json();
  assert.equal(body.success, true);
  assert.equal(body.result.status, "ok");
});

test("REST needs a token", async () => {
  const res = await w.fetch(`${BASE}/memories`);
  assert.ok(res.status === 401 || res.status === 403, `status ${res.status}`);
});

test("REST remember then recall", async () => {
  let res = await w.fetch(`${BASE}/remember`, {
    method: "POST",
    headers: AUTH,
    body: JSON.stringify({ content: "The user prefers dark roast coffee every morning." }),
  });
  assert.equal(res.status, 200);
  const memory = (await res.json()).result;
  assert.match(memory.id, ULID);
  assert.equal(memory.sessionId, null, "remembered without a session");

  res = await w.fetch(`${BASE}/recall`, {
    method: "POST",
    headers: AUTH,
    body: JSON.stringify({ query: "What coffee does the user like?" }),
  });
  assert.equal(res.status, 200);
  const recall = (await res.json()).result;
  assert.ok(recall.count >= 1);
  assert.ok(recall.candidates.some((c) => c.id === memory.id));
});

test("RPC through the MEMORY service binding", async () => {
  const memory = await w.call("rpc-smoke", "remember", {
    content: "The user's dog is called Biscuit and is three years old.",
  });
  assert.match(memory.id, ULID);

  const recall = await w.call("rpc-smoke", "recall", "What is the dog called?", { limit: 5 });
  assert.ok(recall.candidates.some((c) => c.id === memory.id));

  const page = await w.call("rpc-smoke", "list");
  assert.deepEqual(page.memories.map((m) => m.id), [memory.id]);
  assert.equal(page.memories[0].content, undefined, "list entries carry no content");

  assert.equal((await w.call("rpc-smoke", "get", memory.id)).id, memory.id);

  // Errors cross RPC as plain Errors: name and extra properties are lost,
  // the message carries "MemoryError: ... (code)".
  await assert.rejects(w.call("rpc-smoke", "get", "not-an-id"), /10001/);

  // deleteProfile resolves to undefined (null after the consumer's JSON hop).
  assert.equal(await w.service("deleteProfile", "rpc-smoke"), null);
  // Marked for deletion: not found until restored (or purged after a day).
  await assert.rejects(w.call("rpc-smoke", "list"), /10004/);
  assert.equal((await w.service("restoreProfile", "rpc-smoke")).restored, true);
  assert.equal((await w.call("rpc-smoke", "list")).memories.length, 1);
});

test("data persists across a workerd restart", async () => {
  await w.restart();
  const res = await w.fetch(`${BASE}/memories`, { headers: AUTH });
  assert.equal(res.status, 200);
  assert.equal((await res.json()).result.memories.length, 1);
});

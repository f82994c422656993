// Recall through REST inside workerd: the SPEC.md example end to end.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";

const BASE = "/accounts/local/agent-memory/namespaces/recall/profiles/spec";
const HEADERS = { authorization: "Bearer dev-token", "content-type": "application/json" };
const SPEC_CONVERSATION = [
  { role: "user", content: "Set up the project with React and TypeScript." },
  { role: "assistant", content: "Done. Scaffolded a React + TS project targeting Workers." },
  { role: "user", content: "Use pnpm, not npm. And dark mode by default." },
  { role: "assistant", content: "Got it -- pnpm and dark mode as default." },
];

let w;
before(async () => {
  w = await startWorker();
  const res = await w.fetch(`${BASE}/ingest`, {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ sessionId: "s1", messages: SPEC_CONVERSATION }),
  });
  assert.equal(res.status, 200);
});
after(async () => {
  await w?.dispose();
});

async function recall(body) {
  const res = await w.fetch(`${BASE}/recall`, { method: "POST", headers: HEADERS, body: JSON.stringify(body) });
  assert.equal(res.status, 200);
  const env = await res.json();
  assert.equal(env.success, true);
  return env.result;
}

test("recall of the SPEC example names pnpm with the pnpm memory first, over REST in workerd", async () => {
  const r = await recall({ query: "What package manager does the user prefer?" });
  assert.match(r.result, /pnpm/);
  assert.equal(r.answer, r.result);
  assert.ok(r.count >= 1);
  const first = r.candidates[0];
  const detail = await (await w.fetch(`${BASE}/memories/${first.id}`, { headers: HEADERS })).json();
  assert.match(detail.result.content, /pnpm/, "the first candidate is the pnpm memory");
  assert.ok(detail.result.key, "the pnpm memory carries a topic key");
});

test("explain names all five channels and each fused score is the sum of its contributions", async () => {
  const r = await recall({ query: "What package manager does the user prefer?", explain: true });
  const channels = r.explain.channels.map((c) => c.channel).sort();
  assert.deepEqual(channels, ["fts", "hyde", "key", "messages", "vector"]);
  assert.ok(r.candidates.length > 0, "candidates to check");
  for (const c of r.candidates) {
    const sum = c.trace.reduce((a, t) => a + t.contribution, 0);
    assert.ok(Math.abs(sum - c.score) < 1e-9, `${c.id}: ${sum} vs ${c.score}`);
  }
});

test("an empty profile recalls an empty result, not an error", async () => {
  const res = await w.fetch("/accounts/local/agent-memory/namespaces/recall/profiles/empty/recall", {
    method: "POST",
    headers: HEADERS,
    body: JSON.stringify({ query: "anything at all?" }),
  });
  const env = await res.json();
  assert.equal(res.status, 200);
  assert.equal(env.result.result, "");
  assert.equal(env.result.count, 0);
});

// Settings that do not read, against the built Worker in workerd: a
// misspelt provider never falls back to the local one and a number that
// does not parse never becomes its default. Every call is refused with a
// 503 `config` error naming the setting, over REST, MCP and the service binding,
// and nothing is written: the same storage under a good configuration
// holds no memory.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker } from "./helpers.mjs";
import { restClient } from "./reliability-support.mjs";
import { rpcCode, rpcRejects } from "./fixtures.mjs";

const TOKEN = "dev-token";
const CONFIG_CODE = 10012;

const BAD = [
  [{ EMBEDDER: "workersai" }, "EMBEDDER"],
  [{ LLM_PROVIDER: "Workers-AI" }, "LLM_PROVIDER"],
  [{ VECTOR_INDEX: "vectorise" }, "VECTOR_INDEX"],
  [{ CONSOLIDATE_EVERY: "1,000" }, "CONSOLIDATE_EVERY"],
  [{ MAX_MEMORIES: "-5" }, "MAX_MEMORIES"],
  [{ MEMORY_BUDGET_MB: "lots" }, "MEMORY_BUDGET_MB"],
  [{ MEMORY_WORKING_SET_MB: "-1" }, "MEMORY_WORKING_SET_MB"],
  [{ WORKING_SET_WAIT_MS: "soon" }, "WORKING_SET_WAIT_MS"],
  [{ BODY_GRACE_MS: "-3" }, "BODY_GRACE_MS"],
  [{ JOB_RETRY_BASE_MS: "0" }, "JOB_RETRY_BASE_MS"],
  [{ PROFILE_DELETE_GRACE_SECONDS: "1.5" }, "PROFILE_DELETE_GRACE_SECONDS"],
];

for (const [vars, name] of BAD) {
  test(`${name}=${JSON.stringify(Object.values(vars)[0])} refuses every call with a 503 config error naming it`, async () => {
    const w = await startWorker({ vars });
    try {
      const api = restClient(w, TOKEN);
      const r = await api.post("cfg", "p", "/remember", { content: "The deploy window is Tuesday morning." });
      assert.equal(r.status, 503, r.text);
      assert.equal(r.body?.success, false, r.text);
      const [error] = r.body.errors;
      assert.equal(error.code, CONFIG_CODE, r.text);
      assert.match(error.message, new RegExp(`${name} must be`), r.text);
      const mcp = await w.fetch("/mcp/namespaces/cfg/profiles/p", {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "0" } } }),
      });
      const mcpText = await mcp.text();
      assert.equal(mcp.status, 503, mcpText);
      assert.match(mcpText, new RegExp(`${name} must be`));
      const e = await rpcRejects(w.call("cfg-p", "remember", { content: "The deploy window is Tuesday morning." }));
      assert.equal(rpcCode(e), CONFIG_CODE, String(e));
      assert.match(e.message, new RegExp(`${name} must be`));
    } finally {
      await w.dispose();
    }
  });
}

test("a good configuration on the storage a bad one refused holds nothing it was sent", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-config-"));
  let w = await startWorker({ vars: { EMBEDDER: "workersai" }, persistDir: dir });
  try {
    assert.equal(rpcCode(await rpcRejects(w.call("cfg-p", "remember", { content: "The deploy window is Tuesday morning." }))), CONFIG_CODE);
    const api = restClient(w, TOKEN);
    assert.equal((await api.post("cfg", "p", "/remember", { content: "The deploy window is Tuesday morning." })).status, 503);
    await w.dispose();
    w = await startWorker({ persistDir: dir });
    const counts = (s) => [s.messages, s.memories, s.pendingJobs];
    assert.deepEqual(counts(await w.call("cfg-p", "stats")), [0, 0, 0], "the profile sent to over RPC");
    const rest = await restClient(w, TOKEN).get("cfg", "p", "/stats");
    assert.ok(rest.status === 404 || (rest.status === 200 && counts(rest.body.result).every((n) => n === 0)), rest.text);
  } finally {
    await w.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

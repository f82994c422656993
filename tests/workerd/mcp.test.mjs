// The MCP endpoint of the built Worker in workerd, driven by the official
// MCP TypeScript SDK client (Client + StreamableHTTPClientTransport) over
// real HTTP on 127.0.0.1: ${url}mcp/namespaces/<ns>/profiles/<profile>.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startWorker } from "./helpers.mjs";

const AUTH_TOKENS = JSON.stringify({ "dev-token": ["*"], "team-a-token": ["team-a"] });
const FACT = "The user prefers dark roast coffee every morning, brewed in a French press.";

let w;
const clients = [];
before(async () => {
  w = await startWorker({ vars: { AUTH_TOKENS } });
});
after(async () => {
  for (const c of clients) await c.close().catch(() => {});
  await w?.dispose();
});

const endpoint = (ns, profile) => new URL(`mcp/namespaces/${ns}/profiles/${profile}`, w.url);

/** A connected SDK client (token `null`: no Authorization header). */
async function connect(ns, profile, token = "dev-token") {
  const headers = token === null ? {} : { Authorization: `Bearer ${token}` };
  const client = new Client({ name: "agent-memory-workerd-test", version: "0.0.0" });
  const transport = new StreamableHTTPClientTransport(endpoint(ns, profile), { requestInit: { headers } });
  await client.connect(transport, { timeout: 10_000 });
  clients.push(client);
  return client;
}

const INITIALIZE = {
  jsonrpc: "2.0",
  id: 1,
  method: "initialize",
  params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "raw", version: "0" } },
};
const rawPost = (url, headers = {}) =>
  fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify(INITIALIZE),
  });

test("MCP SDK client over real HTTP: initialize and list the tools", async () => {
  assert.equal(w.url.hostname, "127.0.0.1");
  const client = await connect("default", "mcp-sdk");
  assert.equal(client.getServerVersion().name, "agent-memory");
  assert.ok(client.getServerCapabilities().tools, "the server offers tools");
  assert.match(client.getInstructions() ?? "", /long-term memory/);
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name), ["recall", "remember", "forget", "list", "ingest"]);
  for (const t of tools) {
    assert.equal(t.inputSchema.type, "object", `${t.name} input schema`);
    assert.equal(t.outputSchema?.type, "object", `${t.name} output schema`);
  }
  assert.deepEqual(tools.find((t) => t.name === "recall").inputSchema.required, ["query"]);
});

test("MCP SDK client over real HTTP: remember, recall, forget, and the memory is gone", async () => {
  const client = await connect("default", "mcp-sdk");

  const remembered = await client.callTool({ name: "remember", arguments: { content: FACT } });
  assert.equal(remembered.isError, false);
  const id = remembered.structuredContent.id;
  // New memory ids are ULIDs: 26 lowercase Crockford base32 characters.
  assert.match(id, /^[0-7][0-9a-hjkmnp-tv-z]{25}$/);
  assert.equal(remembered.structuredContent.status, "active");
  assert.equal(remembered.structuredContent.sessionId, null, "remembered without a session");
  assert.match(remembered.content[0].text, new RegExp(`^Remembered \\w+ memory ${id}`));

  let recalled = await client.callTool({ name: "recall", arguments: { query: "How does the user like their coffee?" } });
  assert.equal(recalled.isError, false);
  assert.ok(recalled.structuredContent.candidates.some((c) => c.id === id), "recall finds the memory");
  assert.match(recalled.content[0].text, new RegExp(`id ${id}`));

  const forgotten = await client.callTool({ name: "forget", arguments: { id } });
  assert.equal(forgotten.isError, false);
  assert.equal(forgotten.structuredContent.status, "forgotten");
  assert.match(forgotten.content[0].text, new RegExp(`^Forgot \\w+ memory ${id}`));

  recalled = await client.callTool({ name: "recall", arguments: { query: "How does the user like their coffee?" } });
  assert.ok(!recalled.structuredContent.candidates.some((c) => c.id === id), "recall no longer returns it");
  const active = await client.callTool({ name: "list", arguments: {} });
  assert.ok(!active.structuredContent.memories.some((m) => m.id === id), "list (active) no longer shows it");
  const all = await client.callTool({ name: "list", arguments: { status: "forgotten" } });
  assert.deepEqual(all.structuredContent.memories.map((m) => [m.id, m.status]), [[id, "forgotten"]]);
  // List entries are the memory without its content, sources, queries and version links.
  const [entry] = all.structuredContent.memories;
  for (const k of ["content", "sourceMessageIds", "searchQueries", "supersedes", "supersededBy"]) assert.ok(!(k in entry), `a list entry carries ${k}`);
  assert.equal(entry.summary, remembered.structuredContent.summary);
  assert.equal(entry.sessionId, null);
});

test("MCP SDK client over real HTTP: ingest, and a failing operation is a tool error, not a protocol error", async () => {
  const client = await connect("default", "mcp-sdk");
  const ingested = await client.callTool({
    name: "ingest",
    arguments: {
      sessionId: "mcp-1",
      messages: [
        { role: "user", content: "Our team deploys every Tuesday at 10:00 UTC.", timestamp: "2026-04-14T09:00:00Z" },
        { role: "assistant", content: "Noted: deploys happen on Tuesdays at 10:00 UTC." },
      ],
    },
  });
  assert.equal(ingested.isError, false);
  assert.equal(ingested.structuredContent.messageIds.length, 2);
  assert.equal(ingested.structuredContent.messagesStored, 2);

  const bad = await client.callTool({ name: "forget", arguments: { id: "0123456789abcdef0123456789abcdef" } });
  assert.equal(bad.isError, true);
  assert.equal(bad.structuredContent.error.code, 10004);
  assert.match(bad.content[0].text, /^Error 10004 \(not found\)/);
});

test("MCP SDK client over real HTTP: an ingest's report of hundreds of memories, sent in pieces, arrives whole and is the REST report's twin", async () => {
  // Sentences the rule-based extractor keeps one memory each; 24 messages
  // of about 4 KB make a report well over the 64 KiB the object sends in
  // pieces, which the Worker reads in pieces.
  const prose = (i) =>
    Array.from({ length: 40 }, (_, j) => `The server host${i}q${j} runs service svc${i}r${j} on port ${1000 + j} in region zone${i}z${j}.`).join(" ");
  const messages = Array.from({ length: 24 }, (_, i) => ({ role: "user", content: prose(i) }));
  const client = await connect("default", "mcp-pieces");
  const ingested = await client.callTool({ name: "ingest", arguments: { sessionId: "big", messages } });
  assert.equal(ingested.isError, false, ingested.content[0].text);
  const report = ingested.structuredContent;
  assert.ok(JSON.stringify(report).length > 64 * 1024, `a report over 64 KiB: ${JSON.stringify(report).length}`);
  assert.equal(report.messageIds.length, 24);
  assert.ok(report.memoriesStored > 100, `memories stored: ${report.memoriesStored}`);
  assert.equal(report.memories.length, report.memoriesStored, "every memory in the structured result");
  const text = ingested.content[0].text;
  assert.match(text, new RegExp(`^Ingested 24 messages into session big \\(24 new\\)\\. ${report.memoriesStored} memories created`));
  assert.ok(text.includes(`... and ${report.memoriesStored - 100} more (the structured result lists all ${report.memoriesStored}).`), text.slice(-300));
  assert.ok(text.includes(`100. [`), "the text lists the first hundred");
  assert.ok(text.includes(report.memories[99].id) && !text.includes(report.memories[100].id), "and only those");

  // The same call by REST, in another profile: the same report but for ids and times.
  const rest = await fetch(new URL("accounts/acct/agent-memory/namespaces/default/profiles/rest-pieces/ingest", w.url), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: "Bearer dev-token" },
    body: JSON.stringify({ sessionId: "big", messages }),
  });
  assert.equal(rest.status, 200);
  const restReport = (await rest.json()).result;
  const shape = (r) => r.memories.map((m) => [m.type, m.summary, m.content]);
  assert.deepEqual(shape(report), shape(restReport));
});

test("MCP over real HTTP: a request without a valid token is refused (401) with a JSON-RPC error", async () => {
  // The SDK surfaces the HTTP status as the error code (StreamableHTTPError).
  await assert.rejects(connect("default", "mcp-sdk", null), { code: 401, message: /missing bearer token/ });
  await assert.rejects(connect("default", "mcp-sdk", "wrong-token-123"), { code: 401 });
  for (const headers of [{}, { authorization: "Bearer wrong-token-123" }]) {
    const res = await rawPost(endpoint("default", "mcp-sdk"), headers);
    assert.equal(res.status, 401);
    assert.equal(res.headers.get("www-authenticate"), "Bearer");
    const body = await res.json();
    assert.equal(body.jsonrpc, "2.0", "refused in JSON-RPC");
    assert.equal(body.id, null);
    assert.match(body.error.message, /bearer token|token/i);
  }
});

test("MCP over real HTTP: a token for another namespace gets 403; in its own namespace it works", async () => {
  await assert.rejects(connect("default", "mcp-sdk", "team-a-token"), { code: 403, message: /may not access namespace \\"default\\"/ });
  const res = await rawPost(endpoint("default", "mcp-sdk"), { authorization: "Bearer team-a-token" });
  assert.equal(res.status, 403);
  await res.body?.cancel();

  const client = await connect("team-a", "mcp-sdk", "team-a-token");
  const remembered = await client.callTool({ name: "remember", arguments: { content: "Team A ships the mobile app every second Friday." } });
  assert.equal(remembered.isError, false);
  // Profiles are per namespace: the default namespace's profile of the same name is untouched.
  const other = await connect("default", "mcp-sdk");
  const listed = await other.callTool({ name: "list", arguments: { status: "all" } });
  assert.ok(!listed.structuredContent.memories.some((m) => m.id === remembered.structuredContent.id));
});

test("MCP over real HTTP: a query string is refused (400) with a JSON-RPC error, never ignored, and nothing is stored", async () => {
  const url = endpoint("default", "mcp-query");
  url.search = "dryRun=1";
  const remember = { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "remember", arguments: { content: FACT } } };
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", authorization: "Bearer dev-token" },
    body: JSON.stringify(remember),
  });
  assert.equal(res.status, 400);
  const body = await res.json();
  assert.equal(body.jsonrpc, "2.0");
  assert.equal(body.id, null);
  assert.equal(body.error.code, -32600);
  assert.match(body.error.message, /takes no query parameters; got "dryRun"/);
  const client = await connect("default", "mcp-query");
  const listed = await client.callTool({ name: "list", arguments: { status: "all" } });
  assert.equal(listed.isError, false);
  assert.equal(listed.structuredContent.memories.length, 0, "the refused remember stored nothing");
});

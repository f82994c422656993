// Hostile input against the built Worker in workerd: a far-range timestamp
// sent over REST, RPC and MCP while 24 calls to other namespaces are in
// flight; paths that a URL parser rewrites into the profile's own path;
// profile deletion with its grace period; an import at the content limit
// plus a poisoned embedding job (the OpenAI-compatible embedder here is a
// local stand-in on loopback, as the test names say).
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startWorker } from "./helpers.mjs";
import { restClient, profilePath, waitFor, serveOnLoopback, profileDatabases } from "./reliability-support.mjs";

const TOKEN = "dev-token";
const FAR = ["+262142-12-31", "-262143-01-01", "+10000-01-01"];
const hostileMessages = (ts) => [{ role: "user", content: "We ship the day after tomorrow, right after the review.", timestamp: ts }];

/** 24 remembers, each to its own namespace, started at once. */
function bystanders(api, tag) {
  return Array.from({ length: 24 }, (_, i) =>
    api.post(`bystander-${tag}-${i}`, "p", "/remember", { content: `Bystander ${i} of ${tag}: the build cache lives in bucket b${i}.` }),
  );
}

/** Each bystander got a 200 and its namespace holds exactly its one memory. */
async function assertBystandersWhole(api, tag, results) {
  for (const [i, r] of results.entries()) {
    assert.equal(r.status, 200, `bystander ${i}: ${r.status} ${r.text.slice(0, 200)}`);
  }
  for (let i = 0; i < 24; i++) {
    const page = await api.ok("GET", `bystander-${tag}-${i}`, "p", "/memories");
    assert.equal(page.memories.length, 1, `bystander ${i} of ${tag} holds ${page.memories.length} memories`);
    // A list entry has no content: its summary names the bucket.
    assert.match(page.memories[0].summary, new RegExp(`bucket b${i}\\b`));
  }
}

async function assertUntouched(api, ns, profile) {
  const s = await api.ok("GET", ns, profile, "/stats");
  assert.deepEqual([s.messages, s.memories, s.pendingJobs], [0, 0, 0], JSON.stringify(s));
}

describe("far-range timestamps while other tenants are busy", () => {
  let w;
  let api;
  before(async () => {
    w = await startWorker();
    api = restClient(w, TOKEN);
  });
  after(async () => w?.dispose());

  test("REST: the hostile ingest gets a 400 in the envelope; 24 concurrent calls elsewhere all land whole", async () => {
    for (const [k, ts] of FAR.entries()) {
      const others = bystanders(api, `rest${k}`);
      const hostile = await api.post("hostile", "rest", "/ingest", { sessionId: "s1", messages: hostileMessages(ts) });
      assert.equal(hostile.status, 400, hostile.text);
      assert.equal(hostile.body.success, false);
      assert.equal(hostile.body.errors[0].code, 10001);
      assert.match(hostile.body.errors[0].message, /timestamp/);
      assert.doesNotMatch(hostile.text, /\.mjs|\.rs:|at \w+ \(/, "no stack or path in the answer");
      await assertBystandersWhole(api, `rest${k}`, await Promise.all(others));
    }
    await assertUntouched(api, "hostile", "rest");
    // referenceDate too.
    const r = await api.post("hostile", "rest", "/recall", { query: "when do we ship", referenceDate: FAR[0] });
    assert.equal(r.status, 400, r.text);
  });

  test("RPC: the hostile ingest rejects as invalid; 24 concurrent calls elsewhere all land whole", async () => {
    for (const [k, ts] of FAR.entries()) {
      const others = bystanders(api, `rpc${k}`);
      const err = await w.call("hostile/rpc", "ingest", hostileMessages(ts), { sessionId: "s1" }).then(
        () => assert.fail("the hostile RPC ingest was accepted"),
        (e) => e,
      );
      // Workers RPC carries an error's message: its code ends it.
      assert.match(String(err.message), /timestamp.*\(10001\)$/, String(err));
      await assertBystandersWhole(api, `rpc${k}`, await Promise.all(others));
    }
    await assertUntouched(api, "hostile", "rpc");
  });

  test("MCP (official SDK client): the hostile ingest is a tool error with status 400; 24 concurrent calls elsewhere all land whole", async () => {
    const client = new Client({ name: "hostile-test", version: "0.0.0" });
    const transport = new StreamableHTTPClientTransport(new URL("mcp/namespaces/hostile/profiles/mcp", w.url), {
      requestInit: { headers: { Authorization: `Bearer ${TOKEN}` } },
    });
    await client.connect(transport, { timeout: 10_000 });
    try {
      for (const [k, ts] of FAR.entries()) {
        const others = bystanders(api, `mcp${k}`);
        const out = await client.callTool({ name: "ingest", arguments: { sessionId: "s1", messages: hostileMessages(ts) } });
        assert.equal(out.isError, true, JSON.stringify(out));
        assert.equal(out.structuredContent.error.status, 400, JSON.stringify(out));
        await assertBystandersWhole(api, `mcp${k}`, await Promise.all(others));
      }
    } finally {
      await client.close();
    }
    await assertUntouched(api, "hostile", "mcp");
  });

  test("a message dated at the calendar's end is stored, its relative date left as written", async () => {
    const r = await api.post("hostile", "edge", "/ingest", {
      sessionId: "s1",
      messages: [{ role: "user", content: "My visa interview is the day after tomorrow in Lisbon.", timestamp: "9999-12-31T23:00:00Z" }],
    });
    assert.equal(r.status, 200, r.text);
    const { messagesStored, memories } = r.body.result;
    assert.equal(messagesStored, 1);
    assert.ok(memories.length >= 1, `a memory is extracted: ${r.text}`);
    for (const m of memories) {
      // "the day after tomorrow" would fall in year 10000: it stays words.
      assert.match(m.content, /the day after tomorrow/, m.content);
      assert.ok(m.eventDate === undefined || /^\d{4}-\d{2}-\d{2}$/.test(m.eventDate), `eventDate ${m.eventDate}`);
    }
    assert.ok(!JSON.stringify(memories).includes("10000"));
  });
});

/** A request sent byte for byte as written (node:http does not normalise paths). */
function rawRequest(url, method, path, payload) {
  return new Promise((resolve, reject) => {
    const headers = { authorization: `Bearer ${TOKEN}` };
    if (payload !== undefined) Object.assign(headers, { "content-type": "application/json", "content-length": Buffer.byteLength(payload) });
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers }, (res) => {
      let body = "";
      res.on("data", (c) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode, body }));
    });
    req.on("error", reject);
    req.end(payload);
  });
}

const GRACE_SECONDS = 600;

describe("deletion that cannot be reached by accident", () => {
  let w;
  let api;
  before(async () => {
    // Long enough that every read and restore below lands inside it; the
    // purge after the grace period has its own short-grace worker.
    w = await startWorker({ vars: { PROFILE_DELETE_GRACE_SECONDS: String(GRACE_SECONDS) } });
    api = restClient(w, TOKEN);
  });
  after(async () => w?.dispose());

  test("DELETE …/sessions/%2E%2E and …/memories/%2e%2e never delete the profile", async () => {
    await api.ok("POST", "safe", "p", "/remember", { body: { content: "The release train leaves every second Tuesday." } });
    for (const suffix of ["/sessions/%2E%2E", "/sessions/%2e%2e", "/memories/%2e%2e", "/memories/%2E%2E", "/sessions/..", "/memories/..", "/"]) {
      const r = await rawRequest(w.url, "DELETE", profilePath("safe", "p", suffix));
      assert.equal(r.status, 404, `DELETE …${suffix}: ${r.status} ${r.body}`);
      assert.equal(JSON.parse(r.body).success, false);
      // fetch (WHATWG URL) normalises the same way.
      const f = await api.del("safe", "p", suffix);
      assert.equal(f.status, 404, `fetch DELETE …${suffix}: ${f.status}`);
    }
    const s = await api.ok("GET", "safe", "p", "/stats");
    assert.equal(s.memories, 1, "the profile is intact");
  });

  // A GET or DELETE reads no body: before, `{"dryRun": true}` sent with a
  // DELETE was never read, and the deletion ran for real.
  test("a body sent with a DELETE or GET is refused (400) and deletes nothing", async () => {
    const m = await api.ok("POST", "bodies", "p", "/remember", { body: { content: "The deploy target is us-east-1." } });
    await api.ok("POST", "bodies", "p", "/ingest", { body: { sessionId: "s1", messages: [{ role: "user", content: "I moved to Lisbon and I prefer pnpm." }] } });
    const held = async () => {
      const s = await api.ok("GET", "bodies", "p", "/stats");
      return [s.messages, s.memories];
    };
    const before = await held();
    const dryRun = JSON.stringify({ dryRun: true });
    for (const [method, suffix] of [["DELETE", `/memories/${m.id}`], ["DELETE", "/sessions/s1"], ["DELETE", ""], ["GET", "/stats"], ["GET", `/memories/${m.id}`]]) {
      const r = await rawRequest(w.url, method, profilePath("bodies", "p", suffix), dryRun);
      assert.equal(r.status, 400, `${method} …${suffix}: ${r.status} ${r.body}`);
      const e = JSON.parse(r.body);
      assert.equal(e.errors[0].code, 10001);
      assert.match(e.errors[0].message, /takes no body/);
    }
    // A HEAD is its GET: a body sent with it is refused too (no body answers it).
    const head = await rawRequest(w.url, "HEAD", profilePath("bodies", "p", "/stats"), dryRun);
    assert.equal(head.status, 400, `HEAD …/stats with a body: ${head.status}`);
    const del = await api.del("bodies", "p", `/memories/${m.id}`, { body: { dryRun: true } });
    assert.equal(del.status, 400, del.text);
    assert.deepEqual(await held(), before, "nothing was deleted");
    // An empty object is no body: the deletion runs.
    const ok = await rawRequest(w.url, "DELETE", profilePath("bodies", "p", `/memories/${m.id}`), "{}");
    assert.equal(ok.status, 200, ok.body);
  });

  test("content of control characters alone is blank: remember and an ingest of only such messages are refused (400), nothing stored", async () => {
    for (const content of ["\u0000", "\u0001\u0002\u0003", "\u007f", "\u0085\u0000 \u0007"]) {
      const r = await api.post("blank", "p", "/remember", { content });
      assert.equal(r.status, 400, `${JSON.stringify(content)}: ${r.text}`);
    }
    const r = await api.post("blank", "p", "/ingest", { sessionId: "c", messages: [{ role: "user", content: "\u0000" }, { role: "assistant", content: "\u0001\u0002" }] });
    assert.equal(r.status, 400, r.text);
    const s = await api.ok("GET", "blank", "p", "/stats");
    assert.deepEqual([s.messages, s.memories], [0, 0]);
  });

  test("`.` and `..` are refused as session ids", async () => {
    for (const sessionId of ["..", ".", "%2e%2e"]) {
      const r = await api.post("safe", "p", "/ingest", { sessionId, messages: [{ role: "user", content: "Hello from a dotted session." }] });
      assert.equal(r.status, 400, `${sessionId}: ${r.text}`);
      const m = await api.post("safe", "p", "/remember", { sessionId, content: "Remembered in a dotted session." });
      assert.equal(m.status, 400, `${sessionId}: ${m.text}`);
    }
  });

  test("GET …/memories/{id}/extra is a 404, not a 400", async () => {
    const r = await api.get("safe", "p", "/memories/0123456789abcdef0123456789abcdef/extra");
    assert.equal(r.status, 404, r.text);
  });

  test("a deleted profile answers 404, is restorable within its grace period, and is purged after it", async () => {
    await api.ok("POST", "safe", "gone", "/remember", { body: { content: "The wombatquasar host runs the nightly backups." } });
    const marked = await api.ok("DELETE", "safe", "gone", "");
    assert.equal(marked.deleted, true);
    assert.ok(Date.parse(marked.purgeAt) - Date.parse(marked.markedAt) === GRACE_SECONDS * 1000, JSON.stringify(marked));
    for (const suffix of ["/stats", "/export", "/memories"]) {
      assert.equal((await api.get("safe", "gone", suffix)).status, 404, suffix);
    }
    assert.equal((await api.post("safe", "gone", "/recall", { query: "backups" })).status, 404);
    // Restored whole.
    assert.equal((await api.ok("POST", "safe", "gone", "/restore")).restored, true);
    assert.equal((await api.ok("GET", "safe", "gone", "/stats")).memories, 1);
    // Over RPC the same.
    // (deleteProfile resolves to undefined over the binding: null after the consumer's JSON hop.)
    assert.equal(await w.service("deleteProfile", "safe/gone"), null);
    const gone = await api.get("safe", "gone", "/stats");
    assert.equal(gone.status, 404);
    assert.equal(gone.body.errors[0].code, 10004);
    assert.match(gone.body.errors[0].message, /^profile not found/);
    assert.equal((await w.service("restoreProfile", "safe/gone")).restored, true);
    assert.equal((await api.ok("GET", "safe", "gone", "/stats")).memories, 1);

    // Deleted again and left: the alarm purges it after the grace period,
    // on a worker whose grace is one second (and own storage).
    const short = await startWorker({ vars: { PROFILE_DELETE_GRACE_SECONDS: "1" } });
    try {
      const sapi = restClient(short, TOKEN);
      await sapi.ok("POST", "safe", "gone", "/remember", { body: { content: "The wombatquasar host runs the nightly backups." } });
      const again = await sapi.ok("DELETE", "safe", "gone", "");
      assert.equal(Date.parse(again.purgeAt) - Date.parse(again.markedAt), 1000, JSON.stringify(again));
      const purged = await waitFor(async () => {
        const r = await sapi.get("safe", "gone", "/stats");
        return r.status === 200 ? r.body.result : null;
      }, { timeoutMs: 15000, what: "the purge" });
      assert.ok(Date.now() >= Date.parse(again.purgeAt), `purged no sooner than ${again.purgeAt}`);
      assert.deepEqual([purged.memories, purged.messages, purged.vectors], [0, 0, 0]);
      assert.equal((await sapi.post("safe", "gone", "/restore")).status, 404, "nothing left to restore");
      const exported = await sapi.ok("GET", "safe", "gone", "/export");
      assert.ok(!exported.includes("wombatquasar"));
    } finally {
      await short.dispose();
    }
  });
});

/**
 * A stand-in OpenAI-compatible embeddings server on 127.0.0.1: a toy
 * embedding, a 500 for any request holding the poison mark, and the total
 * bytes of every request recorded.
 */
async function startPoisonedEmbedder() {
  const s = { requests: [] };
  return Object.assign(s, await serveOnLoopback((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      const input = [].concat(JSON.parse(body).input);
      s.requests.push(input.reduce((n, t) => n + Buffer.byteLength(t), 0));
      if (input.some((t) => t.includes(POISON))) {
        res.writeHead(500, { "content-type": "application/json" });
        return res.end('{"error": {"message": "the model rejects this input"}}');
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: input.map((t, index) => ({ object: "embedding", index, embedding: [t.length % 7, 1, 2, 3] })) }));
    });
  }));
}

const POISON = "zzpoisonzz";

test("embedder stand-in (OpenAI-compatible, local): 20 imported memories at the content limit and a poisoned job drain to zero pending, the poison parked", async () => {
  const embedder = await startPoisonedEmbedder();
  const w = await startWorker({
    vars: { EMBEDDER: "openai", OPENAI_BASE_URL: embedder.baseUrl, OPENAI_EMBEDDING_MODEL: "toy", JOB_RETRY_BASE_MS: "20" },
  });
  try {
    const api = restClient(w, TOKEN);
    const lines = [JSON.stringify({ kind: "header", format: "agent-memory-export", version: 1 })];
    const at = "2026-04-15T10:00:00.000Z";
    for (let i = 0; i < 21; i++) {
      const content = i === 20 ? `The ${POISON} settings live in the vault.` : `${String(i).padStart(4, "0")}${"w".repeat(32 * 1024 - 4)}`;
      lines.push(JSON.stringify({
        kind: "memory", id: (0xabc00000 + i).toString(16).padStart(32, "0"), type: "fact", summary: "s", content,
        sessionId: "s1", sourceMessageIds: [], searchQueries: [], status: "active", createdAt: at, updatedAt: at,
      }));
    }
    const imported = await api.ok("POST", "queue", "p", "/import", { raw: lines.join("\n") + "\n", headers: { "content-type": "application/x-ndjson" } });
    assert.equal(imported.memories, 21);
    const done = await waitFor(async () => {
      const s = await api.ok("GET", "queue", "p", "/stats");
      return s.pendingJobs === 0 ? s : null;
    }, { timeoutMs: 60000, intervalMs: 250, what: "the outbox to drain" });
    assert.equal(done.parkedJobs, 1, JSON.stringify(done));
    assert.equal(done.vectors, 20);
    assert.ok(embedder.requests.every((b) => b <= 256 * 1024), `request sizes ${embedder.requests}`);
    // A memory written afterwards still gets its vector.
    await api.ok("POST", "queue", "p", "/remember", { body: { content: "Written after the poison was parked." } });
    const after = await waitFor(async () => {
      const s = await api.ok("GET", "queue", "p", "/stats");
      return s.pendingJobs === 0 && s.vectors === 21 ? s : null;
    }, { timeoutMs: 20000, what: "the new memory's vector" });
    assert.equal(after.parkedJobs, 1);
  } finally {
    await w.dispose();
    await embedder.close();
  }
});

test("a declared Content-Length over the route's limit is refused before the body is read", async () => {
  const w = await startWorker();
  try {
    const url = w.url;
    const r = await new Promise((resolve, reject) => {
      const req = http.request({
        host: url.hostname, port: url.port, method: "POST", path: profilePath("big", "p", "/remember"),
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "content-length": String(40 * 1024 * 1024) },
      }, (res) => {
        let body = "";
        res.on("data", (c) => (body += c));
        res.on("end", () => resolve({ status: res.statusCode, body }));
      });
      req.on("error", reject);
      req.write("{"); // far less than declared: an answer means nothing waited for the rest
    });
    assert.equal(r.status, 413, r.body);
    assert.equal(JSON.parse(r.body).errors[0].code, 10006);
  } finally {
    await w.dispose();
  }
});

test("a compressed body is refused with 415 (10009), not read as its bytes, and stores nothing; one marked identity is taken", async () => {
  const { gzipSync, brotliCompressSync } = await import("node:zlib");
  const w = await startWorker();
  try {
    const api = restClient(w, TOKEN);
    const json = JSON.stringify({ content: "The build server runs on Debian twelve." });
    const send = (encoding, body, path = profilePath("enc", "p", "/remember")) =>
      new Promise((resolve, reject) => {
        const req = http.request({
          host: w.url.hostname, port: w.url.port, method: "POST", path,
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "content-encoding": encoding, "content-length": String(body.length) },
        }, (res) => {
          let text = "";
          res.on("data", (c) => (text += c));
          res.on("end", () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
        });
        req.on("error", reject);
        req.end(body);
      });
    // Compressed, and plain text that only says it is (read as sent, it would be stored).
    for (const [encoding, body] of [["gzip", gzipSync(json)], ["br", brotliCompressSync(json)], ["br", Buffer.from(json)]]) {
      const r = await send(encoding, body);
      assert.equal(r.status, 415, `${encoding}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.errors[0].code, 10009);
      assert.match(r.body.errors[0].message, /read uncompressed/);
    }
    // On the MCP endpoint the refusal is a JSON-RPC error.
    const call = JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "remember", arguments: { content: "The build server runs on Debian twelve." } } });
    const mcp = await send("gzip", gzipSync(call), "/mcp/namespaces/enc/profiles/p");
    assert.equal(mcp.status, 415);
    assert.equal(mcp.body.jsonrpc, "2.0");
    assert.match(mcp.body.error.message, /read uncompressed/);
    await assertUntouched(api, "enc", "p");
    assert.equal((await send("identity", Buffer.from(json))).status, 200);
  } finally {
    await w.dispose();
  }
});

/** A body sent chunked (no Content-Length): `chunks` in turn, then, if `hang`, never its end. */
function chunkedBody(chunks, { hang = false } = {}) {
  const queue = [...chunks];
  return new ReadableStream({
    pull(controller) {
      if (queue.length > 0) return controller.enqueue(queue.shift());
      if (hang) return new Promise(() => {}); // the rest never comes: only a refusal on what arrived can answer
      controller.close();
    },
  });
}

test("a chunked body without Content-Length is refused with 413 as soon as it passes the route's limit; one under it is taken", async () => {
  const w = await startWorker();
  try {
    const post = (path, body) =>
      fetch(new URL(path, w.url), {
        method: "POST",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body,
        duplex: "half",
        signal: AbortSignal.timeout(60_000),
      });
    // 18 MB of spaces, over ingest's 17 MB, and then a body that never ends.
    const mb = new Uint8Array(1024 * 1024).fill(0x20);
    const over = await post(profilePath("chunked", "p", "/ingest"), chunkedBody(Array(18).fill(mb), { hang: true })).catch((e) =>
      assert.fail(`no answer in 60 s (${e.name}): the Worker waited for the end of a body already over its limit`),
    );
    const text = await over.text();
    assert.equal(over.status, 413, text);
    const envelope = JSON.parse(text);
    assert.equal(envelope.success, false);
    assert.equal(envelope.errors[0].code, 10006);
    assert.equal(envelope.errors[0].message, `request body is over ${17 * 1024 * 1024} bytes`, "the declared case's refusal");
    // Under the limit, in several chunks: taken whole.
    const json = JSON.stringify({ sessionId: "s1", messages: [{ role: "user", content: "My sister's name is Ilse and she lives in Ghent." }] });
    const enc = new TextEncoder();
    const under = await post(profilePath("chunked", "p", "/ingest"), chunkedBody([json.slice(0, 10), json.slice(10, 40), json.slice(40)].map((c) => enc.encode(c))));
    assert.equal(under.status, 200, await under.clone().text());
    assert.equal((await under.json()).success, true);
    const stats = await (await fetch(new URL(profilePath("chunked", "p", "/stats"), w.url), { headers: { authorization: `Bearer ${TOKEN}` } })).json();
    assert.equal(stats.result.messages, 1, JSON.stringify(stats));
  } finally {
    await w.dispose();
  }
});

test("error messages never echo raw caller input: a namespace of NULs and 300 characters", async () => {
  const w = await startWorker({ vars: { AUTH_TOKENS: JSON.stringify({ "only-a-token": ["a"] }) } });
  try {
    const ns = `x${"\u0000".repeat(5)}${"y".repeat(300)}`;
    const res = await w.fetch(`/accounts/a/agent-memory/namespaces/${encodeURIComponent(ns)}/profiles/p/stats`, {
      headers: { authorization: "Bearer only-a-token" },
    });
    const body = await res.json();
    assert.equal(res.status, 403);
    const message = body.errors[0].message;
    assert.ok(!message.includes("\u0000"), JSON.stringify(message));
    assert.ok(message.length <= 301, `${message.length} characters`);
  } finally {
    await w.dispose();
  }
});

/** A chat model stand-in on loopback that takes requests and never answers. */
async function startSilentModel() {
  const s = { hits: 0 };
  return Object.assign(s, await serveOnLoopback((req) => {
    s.hits++;
    req.resume();
  }));
}

/**
 * Sends `body` as an ingest into `namespace`/p of a workerd persisting to
 * `dir`, with `model` as its chat model, and stops workerd once the call
 * has reached the model: the call's outcome as its caller saw it.
 */
async function cutOffIngest(dir, model, namespace, body) {
  const w = await startWorker({ persistDir: dir, vars: { LLM_PROVIDER: "openai", OPENAI_BASE_URL: model.baseUrl } });
  const inflight = restClient(w, TOKEN).post(namespace, "p", "/ingest", body).then((r) => r.status, () => "connection lost");
  await waitFor(async () => model.hits > 0, { what: "the ingest to reach the model" });
  await w.dispose();
  return inflight;
}

test("after a failed call (workerd stopped mid-ingest, model stand-in silent), a retry is safe: each message once, the rest healed by the alarm's guard job", async () => {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const path = await import("node:path");
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-500-"));
  const model = await startSilentModel();
  const body = {
    sessionId: "s1",
    messages: [
      { role: "user", content: "The staging database moved to port 5433 last week." },
      { role: "assistant", content: "Noted: staging is on 5433 now." },
      { role: "user", content: "And the on-call rotation changes every Monday at nine." },
    ],
  };
  let w;
  try {
    const outcome = await cutOffIngest(dir, model, "after500", body);
    assert.ok(outcome === "connection lost" || outcome >= 500, `the interrupted call answered ${outcome}`);
    // The caller cannot know what happened; it retries the same call.
    w = await startWorker({ persistDir: dir });
    let api = restClient(w, TOKEN);
    const retry = await api.ok("POST", "after500", "p", "/ingest", { body });
    assert.equal(retry.messageIds.length, 3);
    const again = await api.ok("POST", "after500", "p", "/ingest", { body });
    assert.deepEqual([again.messagesStored, again.memoriesStored], [0, 0], "a second retry changes nothing");
    const s = await api.ok("GET", "after500", "p", "/stats");
    assert.equal(s.messages, 3, "each message stored once");
    // The interrupted call stored the messages before it reached the model
    // (raw messages first, in their own transaction), so the retry finds
    // nothing new and extracts nothing: its memories wait for the
    // re-extraction guard job, due 15 minutes after the call.
    assert.equal(retry.messagesStored, 0, "the interrupted call had stored the messages");
    assert.deepEqual([retry.memoriesStored, s.memories], [0, 0], JSON.stringify(s));
    assert.equal(s.pendingJobs, 1, `the guard job waits to extract them: ${JSON.stringify(s)}`);

    // Fast-forward the clock for that job alone: stopped, its profile's
    // database gets the guard job due now; the next write (the client's
    // next retry) sets the alarm, whose drain heals the session.
    await w.dispose();
    const { DatabaseSync } = await import("node:sqlite");
    let moved = 0;
    for (const file of profileDatabases(dir)) {
      const db = new DatabaseSync(file);
      try {
        if (db.prepare("SELECT value FROM meta WHERE key = 'name'").get()?.value !== "after500/p") continue;
        moved += Number(db.prepare("UPDATE outbox SET next_attempt_at = ? WHERE kind = 'extract' AND next_attempt_at > ?").run(Date.now(), Date.now()).changes);
      } finally {
        db.close();
      }
    }
    assert.equal(moved, 1, "the guard job was stored, not yet due");
    w = await startWorker({ persistDir: dir });
    api = restClient(w, TOKEN);
    const third = await api.ok("POST", "after500", "p", "/ingest", { body });
    assert.equal(third.messagesStored, 0);
    const healed = await waitFor(async () => {
      const st = await api.ok("GET", "after500", "p", "/stats");
      return st.pendingJobs === 0 && st.memories > 0 ? st : null;
    }, { timeoutMs: 15000, what: "the guard job to extract the session's memories" });
    assert.equal(healed.messages, 3, "healing stores no message again");
    const page = await api.ok("GET", "after500", "p", "/memories", { query: { sessionId: "s1" } });
    assert.ok(page.memories.length >= 1 && page.memories.length === healed.memories, JSON.stringify(page.memories));
    const contents = await Promise.all(page.memories.map(async (m) => (await api.ok("GET", "after500", "p", `/memories/${m.id}`)).content));
    assert.ok(contents.some((c) => /5433|Monday/.test(c)), `memories of the interrupted conversation: ${JSON.stringify(contents)}`);
  } finally {
    await w?.dispose();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("an ingest cut off mid-way, with no later write: its alarm was set before it ran, and drains the guard job that heals the session", async () => {
  const { mkdtempSync, rmSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const path = await import("node:path");
  const { DatabaseSync } = await import("node:sqlite");
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-guard-"));
  const model = await startSilentModel();
  const body = {
    sessionId: "s1",
    messages: [
      { role: "user", content: "The staging database moved to port 5433 last week." },
      { role: "user", content: "And the on-call rotation changes every Monday at nine." },
    ],
  };
  let w;
  try {
    // A first call, the profile's first ever, cut off while it awaits the model.
    const cutAt = Date.now();
    await cutOffIngest(dir, model, "guarded", body);

    // On disk: the messages, the guard job due in 15 minutes, the name the
    // alarm needs, and an alarm no later than the guard. Then the clock is
    // moved on for both (the job and the alarm due now).
    let found = 0;
    for (const file of profileDatabases(dir)) {
      const db = new DatabaseSync(file);
      try {
        if (db.prepare("SELECT value FROM meta WHERE key = 'name'").get()?.value !== "guarded/p") continue;
        found++;
        const guard = db.prepare("SELECT next_attempt_at AS at FROM outbox WHERE kind = 'extract'").get();
        assert.ok(guard && guard.at > cutAt, "the guard job waits");
        // workerd keeps the object's alarm in its namespace's scheduler
        // table (nanoseconds), beside the object's own copy.
        const scheduler = new DatabaseSync(path.join(path.dirname(file), "metadata.sqlite"));
        try {
          const actor = path.basename(file, ".sqlite");
          const read = scheduler.prepare("SELECT scheduled_time AS at FROM _cf_ALARM WHERE actor_id = ?");
          read.setReadBigInts(true);
          const alarm = read.get(actor)?.at;
          assert.ok(typeof alarm === "bigint", "an alarm is set");
          assert.ok(Number(alarm / 1000000n) <= guard.at + 1000, `the alarm (${alarm / 1000000n}) rings no later than the guard (${guard.at})`);
          const now = BigInt(Date.now()) * 1000000n;
          scheduler.prepare("UPDATE _cf_ALARM SET scheduled_time = ? WHERE actor_id = ?").run(now, actor);
          db.prepare("UPDATE _cf_METADATA SET value = ? WHERE typeof(value) = 'integer'").run(now);
        } finally {
          scheduler.close();
        }
        db.prepare("UPDATE outbox SET next_attempt_at = ? WHERE kind = 'extract'").run(Date.now());
      } finally {
        db.close();
      }
    }
    assert.equal(found, 1, "the interrupted call stored the profile's name");

    // The model back, and only reads from here on.
    w = await startWorker({ persistDir: dir });
    const api = restClient(w, TOKEN);
    const healed = await waitFor(async () => {
      const st = await api.ok("GET", "guarded", "p", "/stats");
      return st.memories > 0 && st.pendingJobs === 0 ? st : null;
    }, { timeoutMs: 20000, what: "the alarm to drain the guard job with no further write" });
    assert.equal(healed.messages, 2);
  } finally {
    await w?.dispose();
    await model.close();
    rmSync(dir, { recursive: true, force: true });
  }
});

test("the production build answers no benchmark operation, even with BENCH=1", async () => {
  const { readFileSync } = await import("node:fs");
  const path = await import("node:path");
  const { ROOT } = await import("./helpers.mjs");
  assert.equal(readFileSync(path.join(ROOT, "build", "features"), "utf8").trim(), "", "build/ holds the production build (make build)");
  assert.ok(!readFileSync(path.join(ROOT, "build", "index_bg.wasm")).includes("benchDrain"), "no benchmark code in the Wasm");
  const w = await startWorker({ vars: { BENCH: "1" } });
  try {
    const ns = await w.miniflare.getDurableObjectNamespace("PROFILES", "agent-memory");
    for (const op of ["benchDrain", "benchMemory", "benchReset"]) {
      const body = JSON.stringify({ name: "default/p", op, args: {} });
      const call = (headers) => ns.get(ns.idFromName("default/p")).fetch("https://profile.internal/call", { method: "POST", body, headers });
      const v = await (await call({ "x-agent-memory-call-bytes": String(Buffer.byteLength(body)) })).json();
      assert.equal(v.error?.code, 10004, `${op}: ${JSON.stringify(v)}`);
      assert.match(v.error.message, /no operation named/);
      // Without its size an internal call is refused before it is read.
      const unsized = await (await call({})).json();
      assert.match(unsized.error?.message ?? "", /does not say its size/, `${op}: ${JSON.stringify(unsized)}`);
    }
  } finally {
    await w.dispose();
  }
});

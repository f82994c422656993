// Faults of models and indexes against the built Worker in workerd: an
// OpenAI-compatible embedder or chat model that is unreachable, answers
// 500, garbage, the wrong shape, slowly, or resets the connection. Ingest
// and remember keep accepting writes (raw messages stored), the failed
// work waits in the outbox and the alarm retries it once the model is
// back; recall answers from the channels that work and says so in the
// envelope `messages`. A restart in the middle loses nothing.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker } from "./helpers.mjs";
import { restClient, parseExport, waitFor, closedPort, sleep, serveOnLoopback } from "./reliability-support.mjs";

const TOKEN = "dev-token";
const NS = "faults";
const DIMS = 64;

/** A deterministic toy embedding: token hashes into DIMS buckets. */
function embed(text) {
  const v = new Array(DIMS).fill(0);
  for (const word of String(text).toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 2166136261;
    for (const ch of word) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
    v[h % DIMS] += 1;
  }
  return v;
}

/**
 * A stand-in OpenAI-compatible server on 127.0.0.1 whose behaviour a test
 * switches: `mode` for /embeddings, `chatMode` for /chat/completions.
 *   ok | 500 | garbage | short | wrongshape | slow | reset
 */
async function startStandin() {
  const s = { mode: "ok", chatMode: "500", hits: { embeddings: 0, chat: 0 } };
  return Object.assign(s, await serveOnLoopback((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      const isEmbed = req.url.endsWith("/embeddings");
      const mode = isEmbed ? s.mode : s.chatMode;
      s.hits[isEmbed ? "embeddings" : "chat"]++;
      const send = (status, text, type = "application/json") => {
        res.writeHead(status, { "content-type": type });
        res.end(text);
      };
      switch (mode) {
        case "500":
          return send(500, '{"error": {"message": "internal error"}}');
        case "garbage":
          return send(200, "<html>502 Bad Gateway</html>\u0000\u00ff", "text/html");
        case "short":
          return send(200, JSON.stringify({ object: "list", data: [] }));
        case "wrongshape":
          return send(200, JSON.stringify({ object: "list", data: [{ embedding: "not a vector", index: 0 }], choices: [{ message: { content: null } }] }));
        case "slow":
          await sleep(1500);
          return send(503, '{"error": "overloaded"}');
        case "reset":
          return req.socket.destroy();
        default: {
          if (isEmbed) {
            let input;
            try {
              input = JSON.parse(body).input;
            } catch {
              return send(400, '{"error": "bad json"}');
            }
            const texts = Array.isArray(input) ? input : [input];
            return send(200, JSON.stringify({ object: "list", data: texts.map((t, index) => ({ object: "embedding", index, embedding: embed(t) })) }));
          }
          return send(500, '{"error": "chat is not simulated here"}');
        }
      }
    });
  }));
}

const stats = (api, profile) => api.ok("GET", NS, profile, "/stats");

async function liveVectorCount(api, profile) {
  const page = await api.ok("GET", NS, profile, "/memories", { query: { status: "active", limit: "1000" } });
  return page.memories.filter((m) => m.type !== "task").length;
}

async function healed(api, profile) {
  return waitFor(async () => {
    const s = await stats(api, profile);
    return s.pendingJobs === 0 && s.vectors === (await liveVectorCount(api, profile)) ? s : null;
  }, { timeoutMs: 45000, intervalMs: 300, what: `${profile} to re-embed everything` });
}

const CONVERSATION = {
  sessionId: "s1",
  messages: [
    { role: "user", content: "Our deploy window is Thursday at 14:00 UTC and needs two approvals." },
    { role: "assistant", content: "Understood." },
    { role: "user", content: "The on-call engineer this month is Priya and her pager alias is ops-priya." },
  ],
};

describe("embedder faults", () => {
  let standin;
  let w;
  let api;
  before(async () => {
    standin = await startStandin();
    w = await startWorker({ vars: { EMBEDDER: "openai", OPENAI_BASE_URL: standin.baseUrl, OPENAI_EMBEDDING_MODEL: "toy" } });
    api = restClient(w, TOKEN);
  });
  after(async () => {
    await w?.dispose();
    await standin?.close();
  });

  test("a healthy stand-in embeds everything (control)", async () => {
    standin.mode = "ok";
    await api.ok("POST", NS, "control", "/ingest", { body: CONVERSATION });
    const s = await healed(api, "control");
    assert.ok(s.vectors >= 2);
  });

  for (const mode of ["500", "garbage", "short", "wrongshape", "slow", "reset"]) {
    test(`embedder answering '${mode}': writes accepted, recall degrades and says so, the alarm retries`, async () => {
      const profile = `emb-${mode}`;
      standin.mode = mode;
      const before = standin.hits.embeddings;
      const ingest = await api.ok("POST", NS, profile, "/ingest", { body: CONVERSATION });
      assert.equal(ingest.messagesStored, 3);
      assert.ok(ingest.memoriesStored >= 2);
      const m = await api.ok("POST", NS, profile, "/remember", { body: { content: "The VPN gateway for the Berlin office is vpn-ber.example.net." } });
      // The alarm tries, fails, and records the failure on the jobs.
      await waitFor(async () => (await stats(api, profile)).failedJobs >= 1, { timeoutMs: 15000, what: "a failed embedding attempt" });
      assert.ok(standin.hits.embeddings > before, "the embedder was called");
      let s = await stats(api, profile);
      assert.equal(s.vectors, 0, "no vector from a failed reply");
      assert.ok(s.pendingJobs >= 3, "the work waits in the outbox");

      const r = await api.post(NS, profile, "/recall", { query: "What is the VPN gateway of the Berlin office?" });
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.ok(r.body.result.candidates.some((c) => c.id === m.id), "found by the full-text channels");
      assert.ok(r.body.messages.some((n) => /embedder failed|vector channels skipped|wrong number of vectors/.test(n.message)), JSON.stringify(r.body.messages));
      const exported = parseExport(await api.ok("GET", NS, profile, "/export"));
      assert.equal(exported.filter((x) => x.kind === "message").length, 3, "raw messages stored");

      // Back to health: the alarm's retry embeds every live memory.
      standin.mode = "ok";
      s = await healed(api, profile);
      assert.equal(s.failedJobs, 0);
      const again = await api.ok("POST", NS, profile, "/recall", { body: { query: "What is the VPN gateway of the Berlin office?" } });
      assert.ok(!(again.messages ?? []).some((n) => /embedder failed/.test(n)));
    });
  }
});

describe("unreachable embedder and restarts", () => {
  test("a closed port: ingest and recall keep working; after a restart and a fix, nothing is lost", async () => {
    const port = await closedPort();
    const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-faults-"));
    let w = await startWorker({ persistDir: dir, vars: { EMBEDDER: "openai", OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` } });
    let standin;
    try {
      let api = restClient(w, TOKEN);
      const ingest = await api.ok("POST", NS, "closed", "/ingest", { body: CONVERSATION });
      assert.equal(ingest.messagesStored, 3);
      await waitFor(async () => (await stats(api, "closed")).failedJobs >= 1, { timeoutMs: 15000, what: "a failed attempt" });
      const r = await api.post(NS, "closed", "/recall", { query: "Who is on call this month?" });
      assert.equal(r.status, 200);
      assert.ok(r.body.result.count >= 1);
      assert.ok(r.body.messages.some((n) => /embedder failed/.test(n.message)), JSON.stringify(r.body.messages));
      const pending = (await stats(api, "closed")).pendingJobs;
      assert.ok(pending >= 2);

      // Restart with the embedder now reachable (a stand-in on a new port).
      standin = await startStandin();
      await w.dispose();
      w = await startWorker({ persistDir: dir, vars: { EMBEDDER: "openai", OPENAI_BASE_URL: standin.baseUrl } });
      api = restClient(w, TOKEN);
      const kept = await stats(api, "closed");
      assert.equal(kept.messages, 3, "messages survive the restart");
      assert.equal(kept.memories, ingest.memoriesStored, "memories survive the restart");
      // A request wakes the object; its alarm drains the outbox.
      const s = await healed(api, "closed");
      assert.equal(s.memories, ingest.memoriesStored, "nothing duplicated");
    } finally {
      await w.dispose();
      await standin?.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("chat model faults", () => {
  let standin;
  let w;
  let api;
  before(async () => {
    standin = await startStandin();
    w = await startWorker({ vars: { LLM_PROVIDER: "openai", OPENAI_BASE_URL: standin.baseUrl, OPENAI_MODEL: "toy" } });
    api = restClient(w, TOKEN);
  });
  after(async () => {
    await w?.dispose();
    await standin?.close();
  });

  for (const mode of ["500", "garbage", "wrongshape", "slow", "reset"]) {
    test(`chat model answering '${mode}': ingest keeps the raw messages and queues the work; remember and recall answer`, async () => {
      const profile = `chat-${mode}`;
      standin.chatMode = mode;
      const r = await api.post(NS, profile, "/ingest", CONVERSATION);
      assert.equal(r.status, 200, r.text.slice(0, 300));
      assert.equal(r.body.result.messagesStored, 3);
      assert.equal(r.body.result.memoriesStored, 0);
      assert.ok(r.body.result.dropped.length >= 1, "the failure is reported");
      const s = await stats(api, profile);
      assert.equal(s.messages, 3);
      assert.ok(s.pendingJobs >= 1, "re-extraction waits in the outbox");
      await waitFor(async () => (await stats(api, profile)).failedJobs >= 1, { timeoutMs: 15000, what: "the alarm's retry" });

      const m = await api.post(NS, profile, "/remember", { content: "The staging database runs PostgreSQL 16 on port 5433." });
      assert.equal(m.status, 200, `remember with the model down: ${m.text.slice(0, 300)}`);
      const rec = await api.post(NS, profile, "/recall", { query: "Which port does the staging database use?" });
      assert.equal(rec.status, 200, rec.text.slice(0, 300));
      assert.ok(rec.body.result.candidates.some((c) => c.id === m.body.result.id));
      assert.match(rec.body.result.result, /5433/, "the extractive answer stands in for synthesis");
      assert.ok(rec.body.messages.some((n) => /analysis failed/.test(n.message)), JSON.stringify(rec.body.messages));
      assert.ok(rec.body.messages.some((n) => /synthesis failed/.test(n.message)), JSON.stringify(rec.body.messages));
    });
  }
});

// Concurrency and restarts against the built Worker in workerd: many
// concurrent ingests into one profile store every message exactly once and
// every memory of each conversation; a forget that has answered is final
// for every later recall; restarting workerd mid-way loses nothing that was
// accepted and duplicates nothing.
import { test, before, after, describe } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker } from "./helpers.mjs";
import { restClient, parseExport, waitFor } from "./reliability-support.mjs";

const TOKEN = "dev-token";
const NS = "conc";

/** A conversation of distinct, extractable facts (no topic shared with another). */
function conversation(i) {
  const names = ["Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Gray", "Harper", "Indy", "Jules", "Kai", "Lane"];
  const cities = ["Oslo", "Quito", "Hanoi", "Accra", "Lima", "Perth", "Tunis", "Riga", "Cusco", "Dakar", "Malmo", "Porto"];
  const n = names[i % names.length];
  const c = cities[i % cities.length];
  return {
    sessionId: `conv-${i}`,
    messages: [
      { role: "user", content: `My colleague ${n}${i} relocated to ${c} in 2019 to open the branch office number ${100 + i}.` },
      { role: "assistant", content: "Thanks, noted." },
      { role: "user", content: `${n}${i} prefers tea over coffee and owns a bicycle called Rocket${i}.` },
      { role: "user", content: `The budget code for project ${n}${i} is BC-${4000 + i}.` },
    ],
  };
}

/** The contents of a session's memories, sorted (list entries carry no content: get has it). */
async function sessionMemories(api, profile, sessionId) {
  const page = await api.ok("GET", NS, profile, "/memories", { query: { sessionId, limit: "1000" } });
  const contents = await Promise.all(page.memories.map(async (m) => (await api.ok("GET", NS, profile, `/memories/${m.id}`)).content));
  for (const c of contents) assert.equal(typeof c, "string", `a memory of ${sessionId} has content`);
  return contents.sort();
}

describe("concurrent ingests into one profile", () => {
  let w;
  let api;
  before(async () => {
    w = await startWorker();
    api = restClient(w, TOKEN);
  });
  after(async () => {
    await w?.dispose();
  });

  test("same and different conversations at once: each message once, every memory of each", async () => {
    const N = 8;
    const REPEAT = 4;
    const convs = Array.from({ length: N }, (_, i) => conversation(i));

    // Baseline: the same conversations one by one into a control profile.
    const expected = {};
    for (const c of convs) {
      await api.ok("POST", NS, "control", "/ingest", { body: c });
      expected[c.sessionId] = await sessionMemories(api, "control", c.sessionId);
      assert.ok(expected[c.sessionId].length >= 2, `baseline of ${c.sessionId}: ${expected[c.sessionId].length} memories`);
    }

    // 32 concurrent calls: every conversation REPEAT times, interleaved.
    const calls = [];
    for (let r = 0; r < REPEAT; r++) for (const c of convs) calls.push(api.post(NS, "busy", "/ingest", c));
    const results = await Promise.all(calls);
    for (const r of results) assert.equal(r.status, 200, r.text.slice(0, 300));
    // Exactly one call per conversation stored its messages.
    for (const c of convs) {
      const stored = results.filter((r) => r.body.result.sessionId === c.sessionId).map((r) => r.body.result.messagesStored);
      assert.deepEqual(stored.sort(), [0, 0, 0, c.messages.length].slice(-REPEAT).sort(), `${c.sessionId}: ${stored}`);
    }

    const records = parseExport(await api.ok("GET", NS, "busy", "/export"));
    const messages = records.filter((r) => r.kind === "message");
    const total = convs.reduce((n, c) => n + c.messages.length, 0);
    assert.equal(messages.length, total, "each message exactly once");
    assert.equal(new Set(messages.map((m) => m.id)).size, total);
    for (const c of convs) {
      const mine = messages.filter((m) => m.sessionId === c.sessionId).sort((a, b) => a.position - b.position);
      assert.deepEqual(mine.map((m) => m.content), c.messages.map((m) => m.content), `${c.sessionId} in order`);
      assert.deepEqual(mine.map((m) => m.position), c.messages.map((_, i) => i), `${c.sessionId} positions`);
      assert.deepEqual(await sessionMemories(api, "busy", c.sessionId), expected[c.sessionId], `memories of ${c.sessionId}`);
    }
    const memories = records.filter((r) => r.kind === "memory");
    assert.equal(new Set(memories.map((m) => `${m.sessionId}|${m.content}`)).size, memories.length, "no duplicate memory");
    const stats = await api.ok("GET", NS, "busy", "/stats");
    assert.equal(stats.messages, total);
    assert.equal(stats.sessions, N);
  });

  test("concurrent appends to one session keep positions unique", async () => {
    const calls = Array.from({ length: 12 }, (_, i) =>
      api.post(NS, "append", "/ingest", { sessionId: "shared", messages: [{ role: "user", content: `Append number ${i}: the shelf ${i} holds the ${i}th binder.` }] }),
    );
    for (const r of await Promise.all(calls)) assert.equal(r.status, 200);
    const messages = parseExport(await api.ok("GET", NS, "append", "/export")).filter((r) => r.kind === "message");
    assert.equal(messages.length, 12);
    assert.deepEqual(messages.map((m) => m.position).sort((a, b) => a - b), Array.from({ length: 12 }, (_, i) => i));
  });

  test("concurrent remembers of the same content store one memory", async () => {
    const content = "The shared printer on floor three needs the blue toner cartridge.";
    const results = await Promise.all(Array.from({ length: 10 }, () => api.ok("POST", NS, "same", "/remember", { body: { content } })));
    assert.equal(new Set(results.map((m) => m.id)).size, 1);
    assert.equal((await api.ok("GET", NS, "same", "/memories")).memories.length, 1);
  });

  test("after forget answers, no recall returns the memory, even under concurrent load", async () => {
    const facts = Array.from({ length: 8 }, (_, i) => `The storage unit ${i} code word is zircon${i}lattice and it opens on weekdays.`);
    const ids = [];
    // Distinct keys: same-shaped facts would otherwise supersede each other.
    for (const [i, content] of facts.entries()) {
      ids.push((await api.ok("POST", NS, "forget", "/remember", { body: { content, key: `storage.unit_${i}` } })).id);
    }
    assert.equal((await api.ok("GET", NS, "forget", "/memories", { query: { status: "active" } })).memories.length, facts.length);
    // Let the embeddings land so the vector channels can see them too.
    await waitFor(async () => (await api.ok("GET", NS, "forget", "/stats")).pendingJobs === 0, { timeoutMs: 15000, what: "embeddings" }).catch(() => {});
    const query = (i) => ({ query: `What is the code word of storage unit ${i}? zircon${i}lattice`, limit: 20 });

    for (let i = 0; i < ids.length; i++) {
      // Recalls racing the forget may or may not see it; start them, then forget.
      const racing = Array.from({ length: 4 }, () => api.post(NS, "forget", "/recall", query(i)));
      const forgotten = await api.ok("POST", NS, "forget", `/memories/${ids[i]}/forget`);
      assert.equal(forgotten.status, "forgotten");
      await Promise.all(racing);
      // Every recall started after the forget answered must not return it.
      const after = await Promise.all(Array.from({ length: 6 }, () => api.ok("POST", NS, "forget", "/recall", { body: query(i) })));
      for (const r of after) {
        assert.ok(!r.candidates.some((c) => c.id === ids[i]), `forgotten ${ids[i]} returned by recall`);
        assert.ok(!r.result.includes(`zircon${i}lattice`), "forgotten text in the answer");
      }
      // The memories not forgotten yet are still found.
      if (i + 1 < ids.length) {
        const next = await api.ok("POST", NS, "forget", "/recall", { body: query(i + 1) });
        assert.ok(next.candidates.some((c) => c.id === ids[i + 1]), `memory ${i + 1} should still be recalled`);
      }
    }
    const active = await api.ok("GET", NS, "forget", "/memories", { query: { status: "active" } });
    assert.equal(active.memories.length, 0);
    // The forgotten memories' vectors go with the drain.
    const s = await waitFor(async () => {
      const st = await api.ok("GET", NS, "forget", "/stats");
      return st.pendingJobs === 0 ? st : null;
    }, { timeoutMs: 15000, what: "unvector jobs" });
    assert.equal(s.vectors, 0);
  });

  test("concurrent delete and recall: the deleted memory never comes back", async () => {
    const ids = [];
    for (let i = 0; i < 6; i++) {
      ids.push((await api.ok("POST", NS, "delrace", "/remember", { body: { content: `Locker ${i} belongs to the night shift and uses padlock quasar${i}.` } })).id);
    }
    for (let i = 0; i < ids.length; i++) {
      const q = { query: `Who uses padlock quasar${i}?` };
      // Positive control: before the delete, recall finds it.
      const found = await api.ok("POST", NS, "delrace", "/recall", { body: q });
      assert.ok(found.candidates.some((c) => c.id === ids[i]), `locker ${i} recalled before its delete`);
      const racing = Array.from({ length: 3 }, () => api.post(NS, "delrace", "/recall", q));
      await api.ok("DELETE", NS, "delrace", `/memories/${ids[i]}`);
      await Promise.all(racing);
      const after = await Promise.all(Array.from({ length: 4 }, () => api.ok("POST", NS, "delrace", "/recall", { body: q })));
      for (const r of after) assert.ok(!JSON.stringify(r).includes(`quasar${i}`), `deleted locker ${i} recalled`);
    }
  });
});

describe("restarting workerd mid-way", () => {
  let dir;
  let w;
  let api;
  before(async () => {
    dir = mkdtempSync(path.join(tmpdir(), "agent-memory-restart-"));
    w = await startWorker({ persistDir: dir });
    api = restClient(w, TOKEN);
  });
  after(async () => {
    await w?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  test("loses nothing accepted and duplicates nothing", async () => {
    const N = 24;
    const convs = Array.from({ length: N }, (_, i) => conversation(100 + i));
    // Fire every ingest, restart while they are in flight.
    const settled = new Set();
    const inflight = convs.map((c) =>
      api.post(NS, "restart", "/ingest", c).then(
        (r) => ({ c, status: r.status, body: r.body }),
        (e) => ({ c, error: String(e) }),
      ).then((o) => (settled.add(c.sessionId), o)),
    );
    // The ingests of one profile run one after another in its Durable
    // Object: when the first has answered, the others have not yet.
    const first = await Promise.race(inflight);
    assert.equal(first.status, 200, `the first ingest answered before the restart: ${first.error ?? first.status}`);
    const pendingAtRestart = convs.filter((c) => !settled.has(c.sessionId));
    assert.ok(pendingAtRestart.length >= 1, "the restart begins while ingests are still unanswered");
    await w.restart();
    const outcomes = await Promise.all(inflight);
    // Whether the stopping workerd still finished a call that was in flight
    // is not fixed (it usually does): each is either accepted or failed.
    const accepted = outcomes.filter((o) => o.status === 200);
    const failed = outcomes.filter((o) => o.status !== 200);
    for (const o of failed) {
      // Interrupted by the restart: a transport error or a 5xx, never a 4xx.
      assert.ok(o.error || o.status >= 500, `unexpected answer ${o.status} ${JSON.stringify(o.body)?.slice(0, 200)}`);
    }
    assert.ok(accepted.length >= 1, "some ingests were accepted");

    // Everything accepted is there after the restart, exactly once.
    let messages = parseExport(await api.ok("GET", NS, "restart", "/export")).filter((r) => r.kind === "message");
    assert.equal(new Set(messages.map((m) => m.id)).size, messages.length, "no duplicate message");
    for (const o of accepted) {
      const mine = messages.filter((m) => m.sessionId === o.c.sessionId);
      assert.equal(mine.length, o.c.messages.length, `accepted ${o.c.sessionId} kept whole`);
    }

    // Clients retry what failed (and, harmlessly, what succeeded): the end
    // state is every conversation exactly once.
    for (const r of await Promise.all(convs.map((c) => api.post(NS, "restart", "/ingest", c)))) assert.equal(r.status, 200);
    messages = parseExport(await api.ok("GET", NS, "restart", "/export")).filter((r) => r.kind === "message");
    const total = convs.reduce((n, c) => n + c.messages.length, 0);
    assert.equal(messages.length, total);
    assert.equal(new Set(messages.map((m) => m.id)).size, total);
    for (const c of convs) {
      const positions = messages.filter((m) => m.sessionId === c.sessionId).map((m) => m.position).sort((a, b) => a - b);
      assert.deepEqual(positions, c.messages.map((_, i) => i), `${c.sessionId} positions`);
      const mems = await sessionMemories(api, "restart", c.sessionId);
      assert.ok(mems.length >= 2, `${c.sessionId} has its memories (${mems.length})`);
      assert.equal(new Set(mems).size, mems.length, `${c.sessionId} has no duplicate memory`);
    }

    // Pending background work survives a second restart and completes.
    await w.restart();
    const s = await waitFor(async () => {
      const st = await api.ok("GET", NS, "restart", "/stats");
      return st.pendingJobs === 0 ? st : null;
    }, { timeoutMs: 20000, what: "the outbox to drain after restart" });
    const active = (await api.ok("GET", NS, "restart", "/memories", { query: { status: "active", limit: "1000" } })).memories;
    assert.equal(s.vectors, active.filter((m) => m.type !== "task").length, "every live memory has its vector");
  });
});

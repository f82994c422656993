// Recall's metadata filters through the Vectorize adapter of the built
// Worker (src/cloudflare/vectorize.rs) in workerd, against the LOCAL
// Vectorize stand-in (standins/bindings-worker.mjs, reached as the wrapped
// binding `VECTORIZE`; Workers AI is the stand-in `AI` too). Nothing leaves
// 127.0.0.1.
//
// What it shows: the alarm upserts each vector with its memory's metadata
// (type, sessionId, agentId, userId); a recall hands Vectorize the part of
// its filter Vectorize can apply exactly (eq / in on those four fields,
// from the top-level conjunction) and nothing else (OR, NOT, ne, nin,
// ranges, other fields, values longer than the 64 bytes an index holds);
// and whatever was pushed down, no memory that fails the filter is ever
// returned. The stand-in applies Vectorize's documented filter syntax and
// takes the strict reading of `$ne`/`$nin` on a missing property (see its
// matchesFilter), so a pushdown that changed the answer would show.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";
import { bindingStandins, standinClient } from "./standins/bindings.mjs";
import { profileClient, waitForStats, vectorizeNamespace } from "./standins/profile-client.mjs";

const QUERY = "What does the release checklist need?";
const LONG_AGENT = "agent-" + "x".repeat(70); // over the 64 bytes a string index holds
const LONG_PREFIX_TWIN = LONG_AGENT.slice(0, 64) + "-twin"; // same first 64 bytes

// name -> what is remembered; every one mentions the release checklist, so
// each is a vector neighbour of QUERY.
const MEMORIES = {
  reviewerA: { content: "Reviewer note: the release checklist needs a changelog entry.", metadata: { agentId: "reviewer", priority: 2 } },
  reviewerB: { content: "Reviewer note: the release checklist needs signed tags.", metadata: { agentId: "reviewer", priority: 1 } },
  writer: { content: "Writer note: the release checklist needs a blog post.", metadata: { agentId: "writer", userId: "u1" } },
  plain: { content: "The release checklist needs the version number bumped." },
  long: { content: "Long agent note: the release checklist needs a security review.", metadata: { agentId: LONG_AGENT } },
  twin: { content: "Twin agent note: the release checklist needs release notes.", metadata: { agentId: LONG_PREFIX_TWIN } },
};

describe("recall filters through the vectorize adapter against the local Vectorize stand-in", () => {
  const NS = vectorizeNamespace("default/vz-filter");
  let w;
  let sb;
  let p;
  const ids = {}; // name -> memory id
  const names = {}; // memory id -> name
  const sessions = {};

  before(async () => {
    w = await startWorker({
      vars: { LLM_PROVIDER: "workers-ai", EMBEDDER: "workers-ai", VECTOR_INDEX: "vectorize" },
      ...bindingStandins({ ai: true, vectorize: true }),
    });
    sb = standinClient(w);
    p = profileClient(w, "default", "vz-filter");
    for (const [name, body] of Object.entries(MEMORIES)) {
      const m = await p.remember(body);
      ids[name] = m.id;
      names[m.id] = name;
      sessions[name] = m.sessionId;
    }
    // The alarm embeds and upserts; stats count local vectors only, so
    // the stand-in is asked what it holds.
    await waitForStats(w, p, (st) => st.pendingJobs === 0, { what: "the embed jobs" });
    const all = Object.keys(MEMORIES).length;
    const deadline = Date.now() + 12_000;
    let held = 0;
    while (Date.now() < deadline) {
      held = (await sb.vectors()).filter((v) => v.namespace === NS.namespace).length;
      if (held === all) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(held, all, "the alarm upserted every memory's vector");
  });
  after(async () => {
    await w?.dispose();
  });

  /** Recalls with `filter`; returns the envelope and the Vectorize queries it sent. */
  async function recall(filter) {
    const mark = (await sb.calls()).vectorize.length;
    const envelope = await p.recall({ query: QUERY, filter, explain: true });
    const queries = (await sb.calls()).vectorize.slice(mark).filter((c) => c.method === "query").map((c) => c.args[1]);
    assert.ok(queries.length >= 1, "the vector channels queried Vectorize");
    for (const q of queries) assert.equal(q.namespace, NS.namespace, "only the profile's namespace");
    const result = envelope.result;
    const returned = result.candidates.map((c) => names[c.id] ?? c.id);
    const vector = result.explain.channels.filter((c) => c.channel === "vector" || c.channel === "hyde").flatMap((c) => c.ids.map((id) => names[id] ?? id));
    return { envelope, queries, returned, vector };
  }

  /** Every memory returned (candidates and vector channels) is one of `allowed`. */
  function assertOnly(r, allowed, why) {
    for (const n of [...r.returned, ...r.vector]) assert.ok(allowed.includes(n), `${why}: ${n} violates the filter (returned ${JSON.stringify(r.returned)}, vector ${JSON.stringify(r.vector)})`);
  }

  test("vectorize adapter against the local Vectorize stand-in: the alarm upserts each vector with its memory's type, sessionId, agentId and userId as metadata", async () => {
    const upserted = (await sb.calls()).vectorize.filter((c) => c.method === "upsert").flatMap((c) => c.args[0]);
    for (const [name, body] of Object.entries(MEMORIES)) {
      const v = upserted.find((u) => u.id === NS.prefix + ids[name]);
      assert.ok(v, `${name} was upserted`);
      assert.equal(v.namespace, NS.namespace);
      // A memory remembered without a session has the session "" (null on the wire).
      const want = { type: "fact", sessionId: sessions[name] ?? "" };
      if (body.metadata?.agentId) want.agentId = body.metadata.agentId;
      if (body.metadata?.userId) want.userId = body.metadata.userId;
      // Only the indexed fields: other metadata (priority) stays in SQLite.
      assert.deepEqual(v.metadata, want, `${name}: metadata`);
    }
    const held = (await sb.vectors()).filter((v) => v.namespace === NS.namespace);
    assert.equal(held.length, Object.keys(MEMORIES).length);
  });

  test("vectorize adapter against the local Vectorize stand-in: an equality filter on agentId is pushed down as Vectorize's filter and only that agent's memories come back", async () => {
    const r = await recall({ agentId: "reviewer" });
    for (const q of r.queries) {
      assert.deepEqual(q.filter, { agentId: "reviewer" }, "pushed down");
      assert.ok(q.topK < 100, `pushed down whole: no over-fetch (topK ${q.topK})`);
    }
    assertOnly(r, ["reviewerA", "reviewerB"], "agentId = reviewer");
    assert.deepEqual([...new Set(r.vector)].sort(), ["reviewerA", "reviewerB"], "the vector channels find both");
    assert.ok(r.returned.includes("reviewerA") && r.returned.includes("reviewerB"), JSON.stringify(r.returned));
  });

  test("vectorize adapter against the local Vectorize stand-in: a filter with OR pushes nothing down (over-fetching instead) and still returns only matching memories", async () => {
    const r = await recall({ OR: [{ agentId: "reviewer" }, { userId: "u1" }] });
    for (const q of r.queries) {
      assert.equal(q.filter, undefined, "no filter sent for an OR");
      assert.equal(q.topK, 100, "over-fetches to Vectorize's largest topK");
    }
    assertOnly(r, ["reviewerA", "reviewerB", "writer"], "agentId = reviewer OR userId = u1");
    assert.ok(r.vector.includes("writer") && r.vector.includes("reviewerA"), JSON.stringify(r.vector));
  });

  test("vectorize adapter against the local Vectorize stand-in: ne and NOT are not pushed down, and a memory without the field matches them", async () => {
    for (const filter of [{ agentId: { ne: "reviewer" } }, { NOT: { agentId: "reviewer" } }, { agentId: { nin: ["reviewer"] } }]) {
      const r = await recall(filter);
      for (const q of r.queries) {
        assert.equal(q.filter, undefined, `${JSON.stringify(filter)}: nothing pushed down`);
        assert.equal(q.topK, 100);
      }
      assertOnly(r, ["writer", "plain", "long", "twin"], JSON.stringify(filter));
      assert.ok(r.vector.includes("plain"), `${JSON.stringify(filter)}: the memory without agentId passes (${JSON.stringify(r.vector)})`);
    }
  });

  test("vectorize adapter against the local Vectorize stand-in: only the indexed fields of the top-level conjunction are pushed down; the rest is post-filtered", async () => {
    // priority is not indexed: agentId goes down, priority is checked after.
    let r = await recall({ agentId: "reviewer", priority: { gte: 2 } });
    for (const q of r.queries) {
      assert.deepEqual(q.filter, { agentId: "reviewer" });
      assert.equal(q.topK, 100, "not whole: over-fetches");
    }
    assertOnly(r, ["reviewerA"], "agentId = reviewer AND priority >= 2");
    assert.ok(r.vector.includes("reviewerA"));

    // Two conditions on one field become the values both allow; type and
    // an `in` go down together.
    r = await recall({ AND: [{ agentId: { in: ["reviewer", "writer"] } }, { agentId: "writer" }] });
    for (const q of r.queries) assert.deepEqual(q.filter, { agentId: "writer" });
    assertOnly(r, ["writer"], "agentId in [reviewer, writer] AND agentId = writer");
    r = await recall({ type: "fact", agentId: { in: ["reviewer", "writer"] } });
    for (const q of r.queries) {
      assert.deepEqual(q.filter, { type: "fact", agentId: { $in: ["reviewer", "writer"] } });
      assert.ok(q.topK < 100);
    }
    assertOnly(r, ["reviewerA", "reviewerB", "writer"], "type = fact AND agentId in [reviewer, writer]");

    // An OR beside a condition: the condition goes down, the OR does not.
    r = await recall({ userId: "u1", OR: [{ agentId: "writer" }, { agentId: "reviewer" }] });
    for (const q of r.queries) {
      assert.deepEqual(q.filter, { userId: "u1" });
      assert.equal(q.topK, 100);
    }
    assertOnly(r, ["writer"], "userId = u1 AND (agentId = writer OR agentId = reviewer)");
  });

  test("vectorize adapter against the local Vectorize stand-in: a value longer than the 64 bytes a string index holds is not pushed down, and its prefix twin is not returned", async () => {
    const r = await recall({ agentId: LONG_AGENT });
    for (const q of r.queries) {
      assert.equal(q.filter, undefined, "not pushed down");
      assert.equal(q.topK, 100);
    }
    assertOnly(r, ["long"], "agentId = the long value");
    assert.ok(r.vector.includes("long"), JSON.stringify(r.vector));
  });

  test("vectorize adapter against the local Vectorize stand-in: a recall without a filter sends none", async () => {
    const mark = (await sb.calls()).vectorize.length;
    await p.recall({ query: QUERY });
    const queries = (await sb.calls()).vectorize.slice(mark).filter((c) => c.method === "query");
    assert.ok(queries.length >= 1);
    for (const q of queries) assert.equal(q.args[1].filter, undefined);
  });
});

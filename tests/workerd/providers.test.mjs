// The model and index adapters of the built Worker (src/cloudflare/
// models.rs, vectorize.rs) in workerd, against LOCAL STAND-INS that speak
// the real protocols; nothing leaves 127.0.0.1:
//
// - OpenAI-compatible: a Node HTTP server (standins/openai-server.mjs) with
//   /v1/chat/completions and /v1/embeddings;
// - Workers AI and Vectorize: wrapped bindings `AI` and `VECTORIZE`
//   (standins/wrapped-bindings-plugin.mjs) forwarding to a stand-in Worker
//   (standins/bindings-worker.mjs) that records every call.
//
// Both model stand-ins answer from one scripted model (standins/
// scripted-model.mjs) that reads the stage from the system prompt, and can
// be told to answer garbage, fenced or truncated JSON.
//
// Background work (embedding, vector removal, re-extraction) runs in the
// profile object's alarm: tests poll GET .../stats until the outbox drains,
// with a bounded wait.
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";
import { startOpenAiStandin } from "./standins/openai-server.mjs";
import { bindingStandins, standinClient } from "./standins/bindings.mjs";
import { profileClient, waitForStats, vectorizeNamespace } from "./standins/profile-client.mjs";

// src/cloudflare/config.rs
const DEFAULT_INSTRUCT_MODEL = "@cf/meta/llama-4-scout-17b-16e-instruct";
const DEFAULT_SYNTHESIS_MODEL = "@cf/nvidia/nemotron-3-120b-a12b";
const DEFAULT_EMBEDDING_MODEL = "@cf/baai/bge-base-en-v1.5";
// src/core/llm/prompts.rs
const RETRY_NOTE =
  "\n\nYour previous reply could not be parsed. Reply with only the JSON object described, with no prose and no code fence.";
const SYSTEM_PREFIX = {
  extraction: "You extract durable memories",
  verification: "You verify memories",
  classification: "You classify memories",
  "query-analysis": "You analyze a question",
  synthesis: "You answer questions from a memory store",
};
// src/core/llm.rs reply budgets
const MAX_TOKENS = { extraction: 4096, verification: 4096, classification: 4096, "query-analysis": 512, synthesis: 1024 };

const at = (minute) => `2026-04-14T10:${String(minute).padStart(2, "0")}:00Z`;
const PNPM = { role: "user", content: "For the web project we use pnpm now, not npm.", timestamp: at(0) };
const ACK = { role: "assistant", content: "Understood, I will use pnpm for installs from now on.", timestamp: at(1) };
const DOG = { role: "user", content: "Also, my dog Biscuit turned four last week.", timestamp: at(2) };
const TASK = { role: "user", content: "Right now I am migrating the billing service to Postgres.", timestamp: at(3) };
const NPM = { role: "user", content: "Update: we moved the web project back to npm.", timestamp: at(4) };
const CONVERSATION = [PNPM, ACK, DOG, TASK];

const PNPM_FACT = "The user prefers pnpm over npm for the web project.";
const PNPM_QUESTION = "Which package manager does the user prefer?";
const NPM_FACT = "The user switched the web project back to npm.";
const DOG_FACT = "The user's dog is named Biscuit.";
const TASK_TEXT = "The user is migrating the billing service to Postgres.";

const byContent = (memories, content) => memories.find((m) => m.content === content);

/** Checks a chat request body (OpenAI shape when `model` is given). */
function assertChatBody(body, stage, { model } = {}) {
  const instruct = stage !== "synthesis";
  const keys = ["max_tokens", "messages", ...(model ? ["model"] : []), ...(instruct ? ["response_format", "temperature"] : [])];
  assert.deepEqual(Object.keys(body).sort(), keys.sort(), `${stage}: body fields`);
  if (model) assert.equal(body.model, model, `${stage}: model`);
  assert.equal(body.messages.length, 2, `${stage}: one system and one user message`);
  assert.deepEqual(body.messages.map((m) => m.role), ["system", "user"]);
  assert.ok(body.messages[0].content.startsWith(SYSTEM_PREFIX[stage]), `${stage}: system prompt`);
  assert.equal(typeof body.messages[1].content, "string");
  assert.equal(body.max_tokens, MAX_TOKENS[stage], `${stage}: max_tokens`);
  if (instruct) {
    assert.deepEqual(body.response_format, { type: "json_object" }, `${stage}: JSON mode`);
    assert.equal(body.temperature, 0, `${stage}: temperature`);
  }
}

describe("openai-compatible adapter against a local stand-in server", () => {
  const MODEL = "qwen2.5-7b-instruct";
  const EMBEDDING_MODEL = "nomic-embed-text-v1.5";
  let s;
  let w;
  before(async () => {
    s = await startOpenAiStandin();
    w = await startWorker({
      vars: {
        LLM_PROVIDER: "openai",
        EMBEDDER: "openai",
        OPENAI_BASE_URL: s.baseUrl,
        OPENAI_API_KEY: "test-key",
        OPENAI_MODEL: MODEL,
        OPENAI_EMBEDDING_MODEL: EMBEDDING_MODEL,
      },
    });
  });
  after(async () => {
    await w?.dispose();
    await s?.close();
  });

  test("openai-compatible adapter against a local stand-in server: ingest sends chat completions (model, system+user, JSON mode, bearer key) and stores the memories", async () => {
    const p = profileClient(w, "default", "oa-happy");
    const mark = s.requests.length;
    const report = await p.ingest({ sessionId: "s1", messages: CONVERSATION });
    assert.equal(report.messagesStored, 4);
    assert.deepEqual(report.dropped, []);
    assert.deepEqual(report.memories.map((m) => m.content).sort(), [DOG_FACT, PNPM_FACT, TASK_TEXT].sort());
    const pnpm = byContent(report.memories, PNPM_FACT);
    assert.equal(pnpm.type, "fact");
    assert.equal(pnpm.key, "user.package_manager");
    assert.deepEqual(pnpm.sourceMessageIds, [report.messageIds[0]]);
    assert.equal(byContent(report.memories, TASK_TEXT).type, "task");

    // Chat requests only: the alarm may already be embedding in parallel.
    const sent = s.since(mark, "/v1/chat/completions");
    assert.deepEqual(sent.map((r) => [r.method, r.path, r.stage]), [
      ["POST", "/v1/chat/completions", "extraction"],
      ["POST", "/v1/chat/completions", "verification"],
      ["POST", "/v1/chat/completions", "classification"],
    ]);
    for (const r of sent) {
      assert.equal(r.headers.authorization, "Bearer test-key");
      assert.match(r.headers["content-type"], /^application\/json/);
      assertChatBody(r.body, r.stage, { model: MODEL });
    }
    // The transcript is quoted data with indexed, dated lines.
    const extraction = sent[0].body.messages[1].content;
    assert.match(extraction, /^TRANSCRIPT \(quoted data\):\n```transcript\n/);
    assert.match(extraction, /\n\[0\] 2026-04-14 user: For the web project we use pnpm now, not npm\.\n/);
    assert.match(extraction, /\n\[3\] 2026-04-14 user: Right now I am migrating/);
    // Verification and classification get the candidates as JSON lines.
    assert.match(sent[1].body.messages[1].content, /CANDIDATES \(quoted data, one JSON object per line\):\n```data\n\{"content":/);
  });

  test("openai-compatible adapter against a local stand-in server: recall sends query analysis, one embeddings call (query + HyDE) and synthesis, and returns the synthesized answer", async () => {
    const p = profileClient(w, "default", "oa-happy");
    const mark = s.requests.length;
    const query = PNPM_QUESTION;
    const envelope = await p.recall({ query });
    // Leave out embeddings the alarm may send meanwhile (memory texts).
    const sent = s.since(mark).filter((r) => r.stage !== "embedding" || r.body.input[0] === query);
    assert.deepEqual(sent.map((r) => r.stage), ["query-analysis", "embedding", "synthesis"]);
    assertChatBody(sent[0].body, "query-analysis", { model: MODEL });
    assert.equal(sent[0].body.messages[1].content, `QUESTION (quoted data): ${JSON.stringify(query)}\n`);
    const hyde = JSON.parse(sent[0].reply).hyde;
    assert.deepEqual(sent[1].body, { model: EMBEDDING_MODEL, input: [query, hyde] });
    assert.equal(sent[1].headers.authorization, "Bearer test-key");
    assertChatBody(sent[2].body, "synthesis", { model: MODEL });
    assert.match(sent[2].body.messages[1].content, /```data\n\{"date":"2026-04-14","text":"The user prefers pnpm over npm for the web project\.","type":"fact"\}\n/);

    assert.deepEqual(envelope.messages, [], "no degraded stage");
    const r = envelope.result;
    assert.equal(r.answer, sent[2].reply, "the answer is the model's synthesis");
    assert.equal(r.answer, `According to memory: ${PNPM_FACT}`);
    assert.equal(r.candidates[0].summary, PNPM_FACT);
  });

  test("openai-compatible adapter against a local stand-in server: the alarm embeds new memories through /v1/embeddings (input array, no tasks) and the outbox drains", async () => {
    const p = profileClient(w, "default", "oa-happy");
    const stats = await waitForStats(w, p, (st) => st.pendingJobs === 0, { what: "the embed jobs to drain" });
    assert.equal(stats.vectors, 2, "two facts embedded; the task is not");
    // The memories' texts: the alarm's requests, not the recall's (its
    // question and HyDE statement, which may come first: the alarm waits
    // the drain delay).
    const embedded = s.requests.filter((r) => r.path === "/v1/embeddings" && r.body.input[0] !== PNPM_QUESTION).flatMap((r) => r.body.input);
    for (const fact of [PNPM_FACT, DOG_FACT]) {
      const text = embedded.find((t) => t.endsWith(fact));
      assert.ok(text, `embedded: ${fact}`);
      assert.ok(text.split("\n").length > 1, "search queries come first, then the content");
    }
    assert.ok(!embedded.some((t) => t.includes(TASK_TEXT)), "tasks are never embedded");
    for (const r of s.requests.filter((r) => r.path === "/v1/embeddings")) {
      assert.equal(r.body.model, EMBEDDING_MODEL);
      assert.ok(Array.isArray(r.body.input) && r.body.input.every((t) => typeof t === "string"));
    }
  });

  describe("malformed model output", () => {
    const p = () => profileClient(w, "default", "oa-faults");
    after(() => s.script.heal());

    test("openai-compatible adapter against a local stand-in server: fenced JSON with prose around it is read on the first try", async () => {
      const mark = s.requests.length;
      s.script.queue("extraction", { fence: true });
      const report = await p().ingest({ sessionId: "fenced", messages: [PNPM, DOG] });
      assert.deepEqual(report.dropped, []);
      assert.deepEqual(report.memories.map((m) => m.content).sort(), [DOG_FACT, PNPM_FACT].sort());
      const extraction = s.since(mark).filter((r) => r.stage === "extraction");
      assert.equal(extraction.length, 1, "no retry needed");
      assert.match(extraction[0].reply, /^Sure! Here is the JSON you asked for:\n\n```json\n\{"memories"/);
    });

    test("openai-compatible adapter against a local stand-in server: garbage then truncated JSON never crash ingest: messages kept, the failure in report.dropped, an extract job queued", async () => {
      const mark = s.requests.length;
      s.script.queue("extraction", "I'm sorry, but I can't help with that request.", { truncate: true });
      // ...and every later extraction answers garbage until healed.
      s.script.breakStage("extraction", "<html><body>502 Bad Gateway</body></html>");
      const report = await p().ingest({
        sessionId: "broken",
        messages: [TASK, { role: "assistant", content: "Good luck with the migration!", timestamp: at(5) }],
      });
      assert.equal(report.messagesStored, 2);
      assert.equal(report.memoriesStored, 0);
      assert.equal(report.dropped.length, 1);
      assert.equal(report.dropped[0].content, "messages 0-1 (full pass)");
      assert.match(report.dropped[0].reason, /^extraction failed: .*could not be used twice/);

      // The ingest's two requests come first; the alarm may retry right after.
      const extraction = s.since(mark).filter((r) => r.stage === "extraction").slice(0, 2);
      assert.equal(extraction.length, 2, "one retry after an unparseable reply");
      assert.ok(!extraction[0].body.messages[1].content.endsWith(RETRY_NOTE));
      assert.ok(extraction[1].body.messages[1].content.endsWith(RETRY_NOTE), "the retry says the reply could not be parsed");
      assert.ok(!extraction[1].reply.trim().endsWith("}"), "the second reply is cut off");

      const stats = await p().stats();
      assert.equal(stats.messages, 4, "raw messages are stored whatever the model does");
      assert.ok(stats.pendingJobs >= 1, "the extract job is in the outbox");
      assert.equal((await p().list("?sessionId=broken")).memories.length, 0);
    });

    test("openai-compatible adapter against a local stand-in server: the alarm retries the extract job, fails while the model still answers garbage, and succeeds once it answers correctly", async () => {
      await waitForStats(w, p(), (st) => st.failedJobs >= 1, { what: "the alarm to retry the extract job (and fail)" });
      const mark = s.requests.length;
      s.script.heal();
      const stats = await waitForStats(w, p(), (st) => st.pendingJobs === 0, { what: "the extract job to succeed" });
      assert.equal(stats.failedJobs, 0);
      const memories = (await p().list("?sessionId=broken")).memories;
      // List entries carry no content: get has it.
      const details = await Promise.all(memories.map(async (m) => (await p().envelope("GET", `/memories/${m.id}`)).result));
      assert.deepEqual(details.map((m) => [m.type, m.content]), [["task", TASK_TEXT]]);
      const retried = s.since(mark).filter((r) => r.stage === "extraction");
      assert.ok(retried.some((r) => r.body.messages[1].content.includes("[0] 2026-04-14 user: Right now I am migrating")));
    });
  });

  describe("embedder failures", () => {
    const p = () => profileClient(w, "default", "oa-embed");

    test("openai-compatible adapter against a local stand-in server: embeddings HTTP 500 -> recall degrades and says so in the envelope messages; the embed job stays pending", async () => {
      s.embeddingStatus = 500;
      const report = await p().ingest({ sessionId: "dog", messages: [DOG] });
      assert.deepEqual(report.memories.map((m) => m.content), [DOG_FACT]);

      let envelope = await p().recall({ query: "What is the user's dog called?" });
      // Envelope messages are {code, message}, as its errors are; they name
      // the endpoint, never the server's address.
      assert.ok(envelope.messages.every((m) => m.code === 10100 && typeof m.message === "string"), JSON.stringify(envelope.messages));
      const notes = () => envelope.messages.map((m) => m.message);
      assert.ok(
        notes().some((m) => /^embedder failed; vector channels skipped: the OpenAI-compatible server's \/embeddings answered 500/.test(m)),
        JSON.stringify(envelope.messages),
      );
      assert.ok(!JSON.stringify(envelope.messages).includes("127.0.0.1"), "no server address");
      assert.ok(notes().includes("channel vector failed: no query embedding"));
      assert.equal(envelope.result.candidates[0].summary, DOG_FACT, "key and full-text channels still answer");
      assert.equal(envelope.result.answer, `According to memory: ${DOG_FACT}`);

      // Query analysis and synthesis failing too: raw-query search, extractive answer.
      s.script.queue("query-analysis", "no idea", "still no idea");
      s.script.queue("synthesis", "   ", "<think>hmm</think>");
      envelope = await p().recall({ query: "What is the user's dog called?" });
      assert.ok(notes().some((m) => m.startsWith("query analysis failed, using the raw query: ")), JSON.stringify(envelope.messages));
      assert.ok(notes().some((m) => m.startsWith("synthesis failed, answering extractively: ")), JSON.stringify(envelope.messages));
      assert.equal(envelope.result.answer, DOG_FACT);

      const stats = await p().stats();
      assert.ok(stats.pendingJobs >= 1, "the embed job waits");
      assert.equal(stats.vectors, 0);
    });

    test("openai-compatible adapter against a local stand-in server: the alarm retries the failed embed job until the embedder answers again", async () => {
      await waitForStats(w, p(), (st) => st.failedJobs >= 1, { what: "the alarm to try the embed job (and fail)" });
      const failed = s.requests.filter((r) => r.path === "/v1/embeddings" && r.status === 500 && r.body.input.some((t) => t.endsWith(DOG_FACT)));
      assert.ok(failed.length >= 1, "the alarm sent the memory to the failing embedder");
      s.embeddingStatus = 200;
      const stats = await waitForStats(w, p(), (st) => st.pendingJobs === 0 && st.vectors === 1, { what: "the embed job to succeed" });
      assert.equal(stats.failedJobs, 0);
    });

    after(() => {
      s.embeddingStatus = 200;
    });
  });
});

describe("workers-ai adapter against a local stand-in AI binding", () => {
  let w;
  let ai;
  before(async () => {
    w = await startWorker({ vars: { LLM_PROVIDER: "workers-ai", EMBEDDER: "workers-ai" }, ...bindingStandins({ ai: true }) });
    ai = standinClient(w);
  });
  after(async () => {
    await w?.dispose();
  });

  const expectedModel = (stage) => (stage === "synthesis" ? DEFAULT_SYNTHESIS_MODEL : DEFAULT_INSTRUCT_MODEL);

  test("workers-ai adapter against a local stand-in AI binding: ingest and recall call AI.run(model, inputs, {extraHeaders: x-session-affinity}) with the default models and Workers AI input shapes", async () => {
    const p = profileClient(w, "default", "wa");
    const report = await p.ingest({ sessionId: "s1", messages: CONVERSATION });
    assert.deepEqual(report.dropped, []);
    assert.equal(report.memoriesStored, 3);
    const query = "What is the user's dog called?";
    const envelope = await p.recall({ query });
    assert.deepEqual(envelope.messages, []);

    const calls = (await ai.calls()).ai;
    const text = calls.filter((c) => c.stage);
    assert.deepEqual(text.map((c) => c.stage), ["extraction", "verification", "classification", "query-analysis", "synthesis"]);
    for (const c of text) {
      assert.equal(c.model, expectedModel(c.stage), `${c.stage}: model`);
      assertChatBody(c.inputs, c.stage); // no `model` in the inputs
      assert.deepEqual(c.options, { extraHeaders: { "x-session-affinity": "default/wa" } }, `${c.stage}: options`);
    }
    // Leave out embeddings the alarm may send meanwhile (memory texts).
    const embeds = calls.filter((c) => !c.stage && c.inputs.text[0] === query);
    assert.equal(embeds.length, 1, "recall embeds the query and the HyDE sentence in one call");
    assert.equal(embeds[0].model, DEFAULT_EMBEDDING_MODEL);
    assert.deepEqual(embeds[0].inputs, { text: [query, JSON.parse(text[3].reply).hyde] });
    assert.deepEqual(embeds[0].options, { extraHeaders: { "x-session-affinity": "default/wa" } });
    assert.equal(envelope.result.answer, text[4].reply, "the answer is the synthesis model's response");
  });

  test("workers-ai adapter against a local stand-in AI binding: each profile's calls carry its own namespace/profile affinity", async () => {
    const before = (await ai.calls()).ai.length;
    const q = profileClient(w, "team-x", "wa2");
    const m = await q.remember({ content: "The user prefers pnpm for the web project at team X." });
    assert.equal(m.key, "user.package_manager");
    const calls = (await ai.calls()).ai.slice(before);
    assert.ok(calls.length >= 1);
    for (const c of calls) assert.deepEqual(c.options, { extraHeaders: { "x-session-affinity": "team-x/wa2" } });
  });

  test("workers-ai adapter against a local stand-in AI binding: the alarm embeds memories with the embedding model ({text: [...]}) under the profile's affinity", async () => {
    const p = profileClient(w, "default", "wa");
    const stats = await waitForStats(w, p, (st) => st.pendingJobs === 0, { what: "the embed jobs to drain" });
    assert.equal(stats.vectors, 2);
    const embeds = (await ai.calls()).ai.filter((c) => c.model === DEFAULT_EMBEDDING_MODEL && c.options.extraHeaders["x-session-affinity"] === "default/wa");
    const texts = embeds.flatMap((c) => c.inputs.text);
    for (const fact of [PNPM_FACT, DOG_FACT]) assert.ok(texts.some((t) => t.endsWith(fact)), `embedded: ${fact}`);
    assert.ok(!texts.some((t) => t.includes(TASK_TEXT)));
    for (const c of embeds) assert.deepEqual(Object.keys(c.inputs), ["text"]);
  });

  test("workers-ai adapter against a local stand-in AI binding: every AI.run call so far carried exactly the session-affinity option of its profile", async () => {
    const calls = (await ai.calls()).ai;
    assert.ok(calls.length >= 7, "ingest, recall and remember calls");
    for (const c of calls) {
      assert.deepEqual(Object.keys(c.options), ["extraHeaders"]);
      assert.deepEqual(Object.keys(c.options.extraHeaders), ["x-session-affinity"]);
      assert.ok(["default/wa", "team-x/wa2"].includes(c.options.extraHeaders["x-session-affinity"]), JSON.stringify(c.options));
    }
  });
});

describe("vectorize adapter against a local stand-in Vectorize binding", () => {
  const INSTRUCT_MODEL = "@cf/meta/llama-3.3-70b-instruct-fp8-fast";
  const SYNTHESIS_MODEL = "@cf/qwen/qwq-32b";
  const EMBEDDING_MODEL = "@cf/baai/bge-m3"; // 1024 dimensions
  const A = vectorizeNamespace("default/vz-a");
  const B = vectorizeNamespace("team-b/vz-b");
  let w;
  let sb;
  let a;
  let b;
  const ids = {};
  before(async () => {
    w = await startWorker({
      vars: {
        LLM_PROVIDER: "workers-ai",
        EMBEDDER: "workers-ai",
        VECTOR_INDEX: "vectorize",
        INSTRUCT_MODEL,
        SYNTHESIS_MODEL,
        EMBEDDING_MODEL,
        // A deleted profile is purged (and its vectors deleted) at once.
        PROFILE_DELETE_GRACE_SECONDS: "0",
      },
      ...bindingStandins({ ai: true, vectorize: true }),
    });
    sb = standinClient(w);
    a = profileClient(w, "default", "vz-a");
    b = profileClient(w, "team-b", "vz-b");
  });
  after(async () => {
    await w?.dispose();
  });

  test("vectorize adapter against a local stand-in Vectorize binding: model overrides are used; recall queries only the profile's namespace", async () => {
    const ra = await a.ingest({ sessionId: "s1", messages: CONVERSATION });
    const rb = await b.ingest({ sessionId: "s1", messages: [PNPM] });
    ids.aPnpm = byContent(ra.memories, PNPM_FACT).id;
    ids.aDog = byContent(ra.memories, DOG_FACT).id;
    ids.aTask = byContent(ra.memories, TASK_TEXT).id;
    ids.bPnpm = byContent(rb.memories, PNPM_FACT).id;

    const envelope = await a.recall({ query: "Which package manager does the user prefer?" });
    assert.deepEqual(envelope.messages, []);
    const { ai, vectorize } = await sb.calls();
    for (const c of ai.filter((c) => c.stage)) assert.equal(c.model, c.stage === "synthesis" ? SYNTHESIS_MODEL : INSTRUCT_MODEL);
    assert.ok(ai.some((c) => c.stage === "synthesis"));
    assert.ok(ai.filter((c) => !c.stage).every((c) => c.model === EMBEDDING_MODEL));
    for (const c of ai) {
      assert.ok(["default/vz-a", "team-b/vz-b"].includes(c.options.extraHeaders["x-session-affinity"]), JSON.stringify(c.options));
    }
    const queries = vectorize.filter((c) => c.method === "query");
    assert.equal(queries.length, 2, "direct and HyDE vector channels");
    for (const q of queries) {
      assert.equal(q.args[0], 1024, "query vector from the embedding model");
      assert.deepEqual(q.args[1], { topK: 50, namespace: A.namespace, returnValues: false, returnMetadata: "none" });
    }
  });

  test("vectorize adapter against a local stand-in Vectorize binding: the alarm upserts each profile's vectors into its own namespace with its id prefix; tasks are never upserted", async () => {
    await waitForStats(w, a, (st) => st.pendingJobs === 0, { what: "profile A's embed jobs" });
    await waitForStats(w, b, (st) => st.pendingJobs === 0, { what: "profile B's embed jobs" });
    const upserted = (await sb.calls()).vectorize.filter((c) => c.method === "upsert").flatMap((c) => c.args[0]);
    const inA = upserted.filter((v) => v.namespace === A.namespace);
    const inB = upserted.filter((v) => v.namespace === B.namespace);
    assert.equal(inA.length + inB.length, upserted.length, "every vector is in a profile namespace");
    assert.deepEqual(inA.map((v) => v.id).sort(), [A.prefix + ids.aPnpm, A.prefix + ids.aDog].sort());
    assert.deepEqual(inB.map((v) => v.id), [B.prefix + ids.bPnpm]);
    assert.ok(!upserted.some((v) => v.id.endsWith(ids.aTask)), "the task is never upserted");
    for (const v of upserted) assert.equal(v.values.length, 1024);

    // B's recall sees B's memory only, though both hold the same fact.
    const envelope = await b.recall({ query: "Which package manager does the user prefer?", explain: true });
    const vectorChannel = envelope.result.explain.channels.find((c) => c.channel === "vector");
    assert.deepEqual(vectorChannel.ids, [ids.bPnpm]);
  });

  test("vectorize adapter against a local stand-in Vectorize binding: superseded and forgotten memories are deleted by id after the alarm", async () => {
    const report = await a.ingest({ sessionId: "s2", messages: [NPM] });
    assert.equal(report.memoriesSuperseded, 1);
    ids.aNpm = byContent(report.memories, NPM_FACT).id;
    assert.equal(report.memories[0].supersedes, ids.aPnpm);
    await a.forget(ids.aDog);
    await waitForStats(w, a, (st) => st.pendingJobs === 0, { what: "the unvector jobs" });
    const deleted = (await sb.calls()).vectorize.filter((c) => c.method === "deleteByIds").flatMap((c) => c.args[0]);
    assert.ok(deleted.includes(A.prefix + ids.aPnpm), "the superseded memory's vector is deleted");
    assert.ok(deleted.includes(A.prefix + ids.aDog), "the forgotten memory's vector is deleted");
    const held = (await sb.vectors()).filter((v) => v.namespace === A.namespace).map((v) => v.id);
    assert.deepEqual(held, [A.prefix + ids.aNpm]);
  });

  test("vectorize adapter against a local stand-in Vectorize binding: deleteProfile deletes the profile's vectors", async () => {
    const mark = (await sb.calls()).vectorize.length;
    await b.deleteProfile();
    // Not b.stats(): any call on the profile after the wipe re-records its
    // name, which would hide what the alarm does right after a wipe.
    const deadline = Date.now() + 12_000;
    let deleted = [];
    while (Date.now() < deadline) {
      deleted = (await sb.calls()).vectorize.slice(mark).filter((c) => c.method === "deleteByIds").flatMap((c) => c.args[0]);
      if (deleted.length) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    assert.ok(deleted.length > 0, "the alarm sent no deleteByIds within 12 s of deleteProfile");
    assert.deepEqual(
      deleted,
      [B.prefix + ids.bPnpm],
      `deleteByIds must name the profile's vector ids (prefix ${B.prefix}); ` +
        `prefix ${vectorizeNamespace("").prefix} is that of the empty profile name`,
    );
    assert.deepEqual((await sb.vectors()).filter((v) => v.namespace === B.namespace), []);
  });
});

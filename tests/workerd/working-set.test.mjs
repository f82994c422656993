// The isolate's working set (MEMORY_WORKING_SET_MB, core::resident::
// WorkingSet) against the built Worker in workerd: the Worker and its
// profile objects share one Wasm memory, so large requests take room for
// their working memory before they hold it, and take turns when there is
// none. Here the room is 2 MiB, and a slow client holds 1.3 MB of it (twice
// its 650 KB body: the body, then the call routed from it) while it sends
// its body half by half (a real HTTP client over a socket: the Worker
// takes room for a body's declared length before reading it):
// - a second large body waits in line for that room and is read once the
//   first is; with no room made in time it is refused as busy (503, code
//   10014, Retry-After) and nothing of it is stored;
// - a body of no declared length that would pass the room is refused at
//   once (it never waits while holding room);
// - a profile object takes room for its call's working memory (three times
//   the call) before it reads it: a call whose body fits beside the slow one
//   but whose run does not waits in the object, then runs;
// - stats.isolate counts the waits and refusals; the room is all given back.
// Consolidation takes room too: a window holds 3 MiB of it while the model
// (a local stand-in for an OpenAI-compatible server) decides.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { startWorker } from "./helpers.mjs";
import { profilePath, restClient, waitFor } from "./reliability-support.mjs";
import { CODE, rpcCode } from "./fixtures.mjs";
import { startModel } from "./standins/consolidation-model.mjs";

const TOKEN = "dev-token";
const NS = "working-set";
const MiB = 1048576;

/** An ingest body of about `bytes` bytes, in messages of 30 KB. */
function ingestBody(bytes, session) {
  const n = Math.max(1, Math.round(bytes / 30000));
  const words = ["the", "staging", "cluster", "billing", "service", "runs", "port", "team", "moved", "Oslo", "deploys", "Thursday"];
  const messages = Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: Array.from({ length: 5000 }, (_, j) => words[(i * 7 + j * 3) % words.length]).join(" ").slice(0, 30000 - 40) + ` I moved to Oslo in ${2000 + i}.`,
  }));
  return Buffer.from(JSON.stringify({ sessionId: session, messages }));
}

const path = (profile, suffix) => profilePath(NS, profile, suffix);

/**
 * A POST of `body` with its Content-Length whose first half is sent at
 * once and the rest on `release()`; `done` resolves to {status, body}.
 */
function slowPost(url, p, body, token = TOKEN) {
  const req = http.request(new URL(p, url), {
    method: "POST",
    headers: { "content-type": "application/json", "content-length": body.length, ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  const done = new Promise((resolve, reject) => {
    req.on("response", (res) => {
      let text = "";
      res.on("data", (c) => (text += c));
      res.on("end", () => resolve({ status: res.statusCode, body: JSON.parse(text) }));
    });
    req.on("error", reject);
  });
  const half = Math.floor(body.length / 2);
  req.write(body.subarray(0, half));
  return { done, release: () => req.end(body.subarray(half)) };
}

async function post(url, p, body, headers = {}) {
  const res = await fetch(new URL(p, url), {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${TOKEN}`, ...headers },
    body,
    ...(body instanceof ReadableStream ? { duplex: "half" } : {}),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Stats (read by `stats()`) once the isolate's working set holds nothing. */
const roomGivenBack = (stats) =>
  waitFor(async () => {
    const st = await stats();
    return st.isolate.workingSetBytes === 0 ? st : null;
  }, { what: "the room given back" });

test("large requests take turns for the isolate's working memory: they wait for room, and without room in time are refused as busy, nothing stored", async () => {
  const w = await startWorker({ vars: { MEMORY_WORKING_SET_MB: "2", WORKING_SET_WAIT_MS: "3000" } });
  try {
    const api = restClient(w, TOKEN);
    const url = w.url;
    // The sizes this test rests on: the Worker takes twice a body, the
    // object three times its call (a few bytes over its body).
    const LIMIT = 2 * MiB;
    const slowBody = ingestBody(650 * 1024, "slow");
    const large = ingestBody(500 * 1024, "refused");
    const fits = ingestBody(280 * 1024, "object");
    assert.ok(2 * slowBody.length + 2 * large.length > LIMIT, "a large body does not fit beside the slow one");
    assert.ok(2 * slowBody.length + 2 * fits.length <= LIMIT, "the smaller one's body does");
    assert.ok(2 * slowBody.length + 3 * fits.length > LIMIT, "but not its run in the object");
    assert.ok(3 * fits.length >= 256 * 1024 && fits.length >= 256 * 1024, "over the floor");

    // 1. A second large body while the slow one holds its room: refused
    // once the wait is over, and nothing of it is stored.
    let slow = slowPost(url, path("slow", "/ingest"), slowBody);
    await sleep(500);
    const started = Date.now();
    const refused = await post(url, path("refused", "/ingest"), large);
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.ok(Date.now() - started >= 2900, "it waited for room first");
    assert.equal(refused.body.success, false);
    assert.equal(refused.body.errors[0].code, CODE.busy);
    assert.match(refused.body.errors[0].message, /busy with other large requests.*nothing was done, retry/);
    assert.equal(refused.retryAfter, "5");
    const none = await api.send("GET", NS, "refused", "/stats");
    assert.ok(none.status === 404 || none.body.result.messages === 0, `the refused call stored nothing: ${none.text}`);

    // 2. A body of no declared length that would pass the room: refused at
    // once, without waiting (it would hold room while it waited).
    const chunks = [ingestBody(500 * 1024, "chunked")];
    const stream = new ReadableStream({
      pull(c) {
        const next = chunks.shift();
        if (next) c.enqueue(next);
        else c.close();
      },
    });
    const t0 = Date.now();
    const chunked = await post(url, path("chunked", "/ingest"), stream);
    assert.equal(chunked.status, 503, JSON.stringify(chunked.body));
    assert.equal(chunked.body.errors[0].code, CODE.busy);
    assert.ok(Date.now() - t0 < 2500, "refused without waiting");

    // 3. The slow body finishes: it is stored.
    slow.release();
    const first = await slow.done;
    assert.equal(first.status, 200, JSON.stringify(first.body).slice(0, 300));

    // 4. Again the slow one holds its room. A second large body waits for
    // it, and is read and stored once the slow one is.
    slow = slowPost(url, path("slow", "/ingest"), ingestBody(650 * 1024, "slow-2"));
    await sleep(500);
    const waiting = post(url, path("waiter", "/ingest"), ingestBody(500 * 1024, "waiter"));
    await sleep(1000);
    slow.release();
    const [second, waited] = await Promise.all([slow.done, waiting]);
    assert.equal(second.status, 200);
    assert.equal(waited.status, 200, JSON.stringify(waited.body).slice(0, 300));
    assert.ok((await api.ok("GET", NS, "waiter", "/stats")).messages > 0);

    // 5. A call whose body fits beside the slow one, but whose run (three
    // times its call) does not: the Worker reads it, and the profile object
    // waits for room before it reads the call.
    slow = slowPost(url, path("slow", "/ingest"), ingestBody(650 * 1024, "slow-3"));
    await sleep(500);
    const inObject = post(url, path("object", "/ingest"), fits);
    await sleep(1500);
    const before = await api.ok("GET", NS, "slow", "/stats");
    slow.release();
    const [third, ran] = await Promise.all([slow.done, inObject]);
    assert.equal(third.status, 200);
    assert.equal(ran.status, 200, JSON.stringify(ran.body).slice(0, 300));

    // The isolate's figures: the waits and refusals counted, the room all
    // given back.
    const s = await roomGivenBack(() => api.ok("GET", NS, "object", "/stats"));
    assert.equal(s.isolate.workingSetLimitBytes, LIMIT);
    assert.ok(before.isolate.workingSetBytes > 0, `room was held while the slow body was read: ${JSON.stringify(before.isolate)}`);
    assert.ok(s.isolate.workingSetWaits >= 3, JSON.stringify(s.isolate));
    assert.equal(s.isolate.busyRefusals, 2, JSON.stringify(s.isolate));
  } finally {
    await w.dispose();
  }
});

test("small requests take no room: with the working set at zero they all run", async () => {
  const w = await startWorker({ vars: { MEMORY_WORKING_SET_MB: "0", WORKING_SET_WAIT_MS: "0" } });
  try {
    const api = restClient(w, TOKEN);
    const small = { sessionId: "s", messages: [{ role: "user", content: "I moved to Oslo in 2019." }] };
    await Promise.all(["a", "b", "c", "d"].map((p) => api.ok("POST", NS, p, "/ingest", { body: small })));
    // A large one alone runs too: the first request always gets its room.
    const large = await post(w.url, path("large", "/ingest"), ingestBody(600 * 1024, "large"));
    assert.equal(large.status, 200, JSON.stringify(large.body).slice(0, 300));
    const s = await api.ok("GET", NS, "large", "/stats");
    assert.equal(s.isolate.busyRefusals, 0);
    assert.equal(s.isolate.workingSetBytes, 0);
  } finally {
    await w.dispose();
  }
});

test("a body nobody may send is never read and takes no room: no credentials, a route that takes none", async () => {
  const w = await startWorker({ vars: { MEMORY_WORKING_SET_MB: "2", WORKING_SET_WAIT_MS: "3000" } });
  try {
    const api = restClient(w, TOKEN);
    const body = ingestBody(900 * 1024, "x");
    // Half sent, never finished: each is answered without its body.
    const cases = [
      [path("p", "/ingest"), null, 401],
      [path("p", "/ingest"), "wrong-token", 401],
      ["/health", TOKEN, 405],
      [path("p", "/stats"), TOKEN, 405],
    ];
    const held = cases.map(([p, token]) => slowPost(w.url, p, body, token));
    const answers = await Promise.all(held.map((h) => Promise.race([h.done, sleep(5000).then(() => ({ status: "no answer without the body" }))])));
    assert.deepEqual(answers.map((a) => a.status), cases.map((c) => c[2]));
    const s = await api.ok("GET", NS, "p", "/stats");
    assert.equal(s.isolate.workingSetBytes, 0, JSON.stringify(s.isolate));
    assert.equal(s.isolate.workingSetLimitBytes, 2 * MiB, "the configured limit, before any request took room");
    // A large body sent now gets its room at once.
    const t0 = Date.now();
    const ok = await post(w.url, path("p", "/ingest"), ingestBody(500 * 1024, "p"));
    assert.equal(ok.status, 200);
    assert.ok(Date.now() - t0 < 2500);
    assert.equal((await api.ok("GET", NS, "p", "/stats")).isolate.workingSetWaits, 0);
  } finally {
    await w.dispose();
  }
});

/**
 * Messages of ~30 KB of UTF-8 JSON each, together about `bytes`, in
 * 2.6 times fewer UTF-16 units: Japanese text (three bytes a unit) with
 * quotes and line breaks (two bytes each, escaped).
 */
function wideMessages(bytes) {
  const n = Math.max(1, Math.round(bytes / 30000));
  return Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: `東京で"会議"\n`.repeat(1400) + ` I moved to Oslo in ${2000 + i}.`,
  }));
}

test("an RPC call's arguments take room before they are read, sized by the UTF-8 JSON text they make: beside a large body they wait, then are refused as busy, nothing stored", async () => {
  const w = await startWorker({ vars: { MEMORY_WORKING_SET_MB: "2", WORKING_SET_WAIT_MS: "2000" } });
  try {
    // Arguments of ~500 KB of UTF-8 JSON through the service binding (a
    // third of that in UTF-16 units): the Worker's room is twice their
    // JSON text (1 MB) and does not fit beside the slow body's 1.3 MB.
    // Counted in units, or without the escapes, they would fit.
    const sessionId = "rpc";
    const messages = wideMessages(500 * 1024);
    const text = JSON.stringify({ sessionId, messages });
    assert.ok(2 * text.length < 0.7 * MiB, `${text.length} units`);
    const slow = slowPost(w.url, path("slow", "/ingest"), ingestBody(650 * 1024, "slow"));
    await sleep(500);
    let err;
    try {
      await w.call("rpc", "ingest", messages, { sessionId });
    } catch (e) {
      err = e;
    }
    slow.done.catch(() => {});
    assert.ok(err, "refused");
    assert.equal(rpcCode(err), CODE.busy, `${err.name}: ${err.message}`);
    assert.match(String(err.message), /MemoryError/);
    // Refused in the Worker, before the arguments were read into the Wasm
    // memory (the profile object's own room is for "this call"), and for
    // twice their JSON text as the entry measured it without making it.
    const m = String(err.message).match(/no room for this call's arguments \(([\d.]+) MB of working memory\)/);
    assert.ok(m, err.message);
    const bytes = Buffer.byteLength(text);
    assert.ok(Math.abs(Number(m[1]) - (2 * bytes) / MiB) <= 0.08, `${m[1]} MB for arguments of ${bytes} bytes`);
    slow.release();
    assert.equal((await slow.done).status, 200);
    assert.equal((await w.call("rpc", "stats")).messages, 0, "the refused call stored nothing");
    // Alone, the same call gets its room and runs.
    await w.call("rpc", "ingest", messages, { sessionId });
    const s = await roomGivenBack(() => w.call("rpc", "stats"));
    assert.equal(s.messages, messages.length);
    assert.equal(s.isolate.busyRefusals, 1, JSON.stringify(s.isolate));
  } finally {
    await w.dispose();
  }
});

test("an RPC call's room counts two-byte and four-byte characters and escaped control characters at their UTF-8 JSON length", async () => {
  const w = await startWorker({ vars: { MEMORY_WORKING_SET_MB: "2", WORKING_SET_WAIT_MS: "300" } });
  try {
    const slow = slowPost(w.url, path("slow", "/ingest"), ingestBody(650 * 1024, "slow"));
    slow.done.catch(() => {});
    await sleep(500);
    // Each about 500 KB of UTF-8 JSON in fewer units (or, for the
    // controls, fewer bytes of text): counted by units, by raw UTF-8 or
    // without the escapes, each would be sized far from its JSON text.
    const kinds = {
      "two-byte (é, ß, Ж)": "éßЖ",
      "four-byte (surrogate pairs)": "😀𝄞",
      "control characters (\\u0001, \\u001f: six bytes each)": "\u0001\u001f",
    };
    for (const [name, piece] of Object.entries(kinds)) {
      // ~30 KB of JSON a message (the piece's escaped bytes, quotes aside).
      const content = piece.repeat(Math.ceil(30000 / (Buffer.byteLength(JSON.stringify(piece)) - 2))) + " I moved to Oslo.";
      const messages = Array.from({ length: 17 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content }));
      const bytes = Buffer.byteLength(JSON.stringify({ sessionId: "rpc", messages }));
      let err;
      try {
        await w.call("rpc", "ingest", messages, { sessionId: "rpc" });
      } catch (e) {
        err = e;
      }
      assert.ok(err, `${name}: refused`);
      const m = String(err.message).match(/no room for this call's arguments \(([\d.]+) MB of working memory\)/);
      assert.ok(m, `${name}: ${err.message}`);
      assert.ok(Math.abs(Number(m[1]) - (2 * bytes) / MiB) <= 0.08, `${name}: ${m[1]} MB for arguments of ${bytes} bytes`);
    }
    slow.release();
    assert.equal((await slow.done).status, 200);
    assert.equal((await w.call("rpc", "stats")).messages, 0, "the refused calls stored nothing");
  } finally {
    await w.dispose();
  }
});

test("a body that holds room must arrive in time: one sent too slowly is answered 408, nothing stored, its room given back; a small one is not timed", async () => {
  // 500 ms of grace plus the body's length at 128 KiB a second.
  const w = await startWorker({ vars: { MEMORY_WORKING_SET_MB: "2", BODY_GRACE_MS: "500" } });
  try {
    const api = restClient(w, TOKEN);
    const body = ingestBody(650 * 1024, "stalled");
    const allowed = 500 + (body.length * 1000) / (128 * 1024);
    // Half sent, never finished.
    const stalled = slowPost(w.url, path("stalled", "/ingest"), body);
    const t0 = Date.now();
    const small = slowPost(w.url, path("small", "/ingest"), ingestBody(60 * 1024, "small"));
    const answer = await Promise.race([stalled.done, sleep(allowed + 10000).then(() => ({ status: "no answer" }))]);
    const took = Date.now() - t0;
    assert.equal(answer.status, 408, JSON.stringify(answer.body));
    assert.equal(answer.body.errors[0].code, CODE.timeout);
    assert.match(answer.body.errors[0].message, /did not arrive in time.*nothing was done/);
    // It says what arrived, not the room it holds (the declared length).
    const [, received, declared] = answer.body.errors[0].message.match(/: (\d+) bytes of (\d+) in/).map(Number);
    assert.equal(declared, Buffer.byteLength(body));
    assert.ok(received > 0 && received < declared, `${received} of ${declared} bytes said to have arrived; half was sent`);
    assert.ok(took >= allowed - 600 && took < allowed + 5000, `answered after ${took} ms; allowed ${allowed}`);
    // The small body holds no room: it is not timed, however slow.
    small.release();
    assert.equal((await small.done).status, 200);
    const s = await api.ok("GET", NS, "small", "/stats");
    assert.equal(s.isolate.workingSetBytes, 0, "the stalled body's room was given back");
    const none = await api.send("GET", NS, "stalled", "/stats");
    assert.ok(none.status === 404 || none.body.result.messages === 0, `the stalled call stored nothing: ${none.text}`);
    // A large body sent at once is read as before.
    const ok = await post(w.url, path("stalled", "/ingest"), body);
    assert.equal(ok.status, 200, JSON.stringify(ok.body).slice(0, 300));
  } finally {
    await w.dispose();
  }
});

/** Imports two wordings of one fact into `profile` (a pair consolidation merges). */
async function twoWordings(api, profile) {
  const at = "2026-01-01T00:00:00.000Z";
  const memory = (id, content) =>
    JSON.stringify({ kind: "memory", id, type: "fact", summary: content, content, sessionId: "s", sourceMessageIds: [], searchQueries: [], status: "active", createdAt: at, updatedAt: at, validFrom: at });
  const file = [
    JSON.stringify({ kind: "header", format: "agent-memory-export", version: 1, profile: `${NS}/${profile}` }),
    memory("0".repeat(31) + "1", "The user prefers dark mode in the code editor."),
    memory("0".repeat(31) + "2", "In the code editor, the user prefers the dark mode."),
  ].join("\n") + "\n";
  const r = await api.send("POST", NS, profile, "/import", { raw: file, headers: { "content-type": "application/x-ndjson" } });
  assert.equal(r.status, 200, r.text);
  await waitFor(async () => ((await api.ok("GET", NS, profile, "/stats")).pendingJobs === 0 ? true : null), { what: `${profile} drained` });
}

/**
 * Runs `fn(api, model)` against a worker whose consolidation a model
 * decides (the local stand-in, gated by `model.gate()`), under `vars`;
 * stops both after.
 */
async function withModel(vars, fn) {
  const model = await startModel();
  const w = await startWorker({ vars: { LLM_PROVIDER: "openai", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "m", ...vars } });
  try {
    await fn(restClient(w, TOKEN), model);
  } finally {
    await w.dispose();
    await model.close();
  }
}

/**
 * Sends a consolidate call of `profile` and waits until the model has been
 * asked `calls` times in all; `{ reply }`, the call's reply to come.
 */
async function consolidateUntilAsked(api, model, profile, calls) {
  const reply = api.send("POST", NS, profile, "/consolidate", { body: {} });
  await waitFor(async () => (model.st.calls >= calls ? true : null), { what: `${profile}'s window asks the model` });
  return { reply };
}

test("a consolidation window holds room in the working set while the model (local stand-in) decides: another profile's call waits for it, is refused as busy without it, and begins no run", () =>
  withModel({ MEMORY_WORKING_SET_MB: "3", WORKING_SET_WAIT_MS: "1500" }, async (api, model) => {
    await twoWordings(api, "cons-a");
    await twoWordings(api, "cons-b");
    const stats = () => api.ok("GET", NS, "cons-a", "/stats");
    const before = (await stats()).isolate;

    // Profile a's window waits on the model, holding its room.
    model.gate();
    const { reply: first } = await consolidateUntilAsked(api, model, "cons-a", 1);
    assert.equal((await stats()).isolate.workingSetBytes, 3 * MiB, "a window's room is held while the model decides");

    // Profile b's call finds no room in time: 503 busy, and no run begun.
    const second = await api.send("POST", NS, "cons-b", "/consolidate", { body: {} });
    assert.equal(second.status, 503, second.text);
    assert.equal(second.body.errors[0].code, CODE.busy);
    assert.equal(model.st.calls, 1, "b asked the model nothing");
    const b = await api.ok("GET", NS, "cons-b", "/stats");
    assert.equal(b.pendingJobs, 0, "b has no run's job");
    assert.equal(b.byStatus.active, 2);

    // Once the model answers, a's window is carried out and its room given back.
    model.release();
    const a = await first;
    assert.equal(a.status, 200, a.text);
    assert.deepEqual(a.body.result.actions.map((x) => x.action), ["merge"]);
    await roomGivenBack(stats);

    // b's call again, with a's window waiting on the model: it waits for the room, then runs.
    await twoWordings(api, "cons-c");
    model.gate();
    const { reply: third } = await consolidateUntilAsked(api, model, "cons-c", 2);
    const retried = api.send("POST", NS, "cons-b", "/consolidate", { body: {} });
    await sleep(300);
    model.release();
    assert.equal((await third).status, 200);
    // b's window asks the model once it has c's room; gated no more.
    const again = await retried;
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.body.result.actions.map((x) => x.action), ["merge"]);
    const after = (await roomGivenBack(stats)).isolate;
    assert.ok(after.workingSetWaits >= before.workingSetWaits + 2, `b waited twice: ${JSON.stringify(after)}`);
    assert.equal(after.busyRefusals, before.busyRefusals + 1);
  }));

test("consolidation holds at most half the working set: a second profile's window waits, while a large import runs beside the first", () =>
  withModel({ MEMORY_WORKING_SET_MB: "8", WORKING_SET_WAIT_MS: "1500" }, async (api, model) => {
    await twoWordings(api, "half-a");
    await twoWordings(api, "half-b");
    const stats = () => api.ok("GET", NS, "half-a", "/stats");
    model.gate();
    const { reply: first } = await consolidateUntilAsked(api, model, "half-a", 1);
    // Two windows (6 MiB) would pass half of 8 MiB: b's waits, then is busy.
    const second = await api.send("POST", NS, "half-b", "/consolidate", { body: {} });
    assert.equal(second.status, 503, second.text);
    // A 1 MiB import (its object takes 3 MiB) runs beside a's window at
    // once: 6 MiB held. Beside two windows (9 MiB) it would have waited.
    const at = "2026-01-01T00:00:00.000Z";
    const lines = [JSON.stringify({ kind: "header", format: "agent-memory-export", version: 1, profile: `${NS}/half-c` })];
    for (let i = 0; lines.join("\n").length < MiB; i++) {
      const content = `Shelf ${i} in the archive holds ledgers of ${"ledger ".repeat(60)}`;
      lines.push(JSON.stringify({ kind: "memory", id: i.toString(16).padStart(32, "0"), type: "fact", summary: content.slice(0, 100), content, sessionId: "s", sourceMessageIds: [], searchQueries: [], status: "active", createdAt: at, updatedAt: at, validFrom: at }));
    }
    const file = lines.join("\n") + "\n";
    assert.ok(file.length >= MiB && 3 * file.length <= 5 * MiB, `${file.length} bytes`);
    const waitsBefore = (await stats()).isolate.workingSetWaits;
    const imported = await api.send("POST", NS, "half-c", "/import", { raw: file, headers: { "content-type": "application/x-ndjson" } });
    assert.equal(imported.status, 200, imported.text.slice(0, 300));
    assert.equal((await stats()).isolate.workingSetWaits, waitsBefore, "the import did not wait");
    model.release();
    assert.equal((await first).status, 200);
    await roomGivenBack(stats);
  }));

test("two calls consolidating one profile at once ask the model (local stand-in) once per window: the second waits for the first's window, then finds the run moved on", () =>
  withModel({}, async (api, model) => {
    await twoWordings(api, "twice");
    model.gate();
    const { reply: first } = await consolidateUntilAsked(api, model, "twice", 1);
    const second = api.send("POST", NS, "twice", "/consolidate", { body: {} });
    await sleep(500);
    assert.equal(model.st.calls, 1, "the second call waits for the first's window");
    model.release();
    const [a, b] = await Promise.all([first, second]);
    assert.equal(a.status, 200, a.text);
    assert.equal(b.status, 200, b.text);
    assert.deepEqual(a.body.result.actions.map((x) => x.action), ["merge"]);
    assert.equal(b.body.result.done, true);
    assert.deepEqual(b.body.result.actions, []);
    assert.equal(model.st.calls, 1, "one window, one model call");
    assert.equal((await api.ok("GET", NS, "twice", "/stats")).byStatus.active, 1);
  }));

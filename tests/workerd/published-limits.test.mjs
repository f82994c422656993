// The published limits at their edges, as the Workers API page's table and
// the limits page state them, over the binding and the published HTTP
// routes alike: a value at the limit is taken, one past it refused (400,
// code 10001 over HTTP; a thrown error over the binding).
// - 500 messages per ingest;
// - a message's content: 32 KB, "32,768 bytes UTF-8" (so multibyte text
//   is counted in bytes);
// - a recall query: "1 KB (1,024 bytes UTF-8)";
// - a session id: "64 characters" (characters, not bytes);
// - a profile name: "Maximum 100 characters";
// - a page: per_page "Range: 1 to 1000", 20 when not given.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";

const BASE = "/client/v4/accounts/acct1/agent-memory/namespaces/limits";
const H = { authorization: "Bearer dev-token", "content-type": "application/json" };
let w;
before(async () => { w = await startWorker(); });
after(async () => { await w?.dispose(); });

async function http(method, path, body) {
  const r = await w.fetch(BASE + path, { method, headers: H, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}
const refused = (r, what) => {
  assert.equal(r.status, 400, `${what}: ${JSON.stringify(r.body).slice(0, 300)}`);
  assert.equal(r.body.errors[0].code, 10001, what);
};
const taken = (r, what) => assert.ok(r.status >= 200 && r.status < 300, `${what}: ${r.status} ${JSON.stringify(r.body).slice(0, 300)}`);
const throws = async (p, what) => {
  let thrown = null;
  try { await p; } catch (e) { thrown = e; }
  assert.ok(thrown, `${what} is refused over the binding`);
};

const messages = (n) => Array.from({ length: n }, (_, i) => ({ role: "user", content: `Note ${i}: the build number is ${i}.` }));

test("500 messages per ingest are taken and 501 refused, over the binding and HTTP", async () => {
  await w.call("edges", "ingest", messages(500), { sessionId: "five-hundred" });
  await throws(w.call("edges", "ingest", messages(501), { sessionId: "one-more" }), "501 messages");
  taken(await http("POST", "/profiles/edges/ingest", { messages: messages(500), sessionId: "five-hundred-http" }), "500 messages");
  refused(await http("POST", "/profiles/edges/ingest", { messages: messages(501), sessionId: "one-more-http" }), "501 messages");
});

test("a message's content is counted in UTF-8 bytes: 32,768 are taken, 32,769 refused", async () => {
  // "😀" is 4 bytes and 2 UTF-16 units: 8,192 of them are exactly 32,768 bytes.
  const atLimit = ["a".repeat(32768), "😀".repeat(8192), "€".repeat(10922) + "aa"];
  const over = ["a".repeat(32769), "😀".repeat(8192) + "a", "€".repeat(10923)];
  for (const [i, content] of atLimit.entries()) {
    await w.call("edges", "ingest", [{ role: "user", content }], { sessionId: `content-${i}` });
    taken(await http("POST", "/profiles/edges/ingest", { messages: [{ role: "user", content }], sessionId: `content-http-${i}` }), `at the limit ${i}`);
  }
  for (const [i, content] of over.entries()) {
    await throws(w.call("edges", "ingest", [{ role: "user", content }], { sessionId: `over-${i}` }), `over the limit ${i}`);
    refused(await http("POST", "/profiles/edges/ingest", { messages: [{ role: "user", content }], sessionId: `over-http-${i}` }), `over the limit ${i}`);
  }
});

test("a recall query of 1,024 UTF-8 bytes is taken and one of 1,025 refused", async () => {
  for (const query of ["q".repeat(1024), "€".repeat(341) + "a"]) {
    await w.call("edges", "recall", query);
    taken(await http("POST", "/profiles/edges/recall", { query }), `${Buffer.byteLength(query)} bytes`);
  }
  for (const query of ["q".repeat(1025), "q".repeat(1023) + "é", "€".repeat(342)]) {
    await throws(w.call("edges", "recall", query), `${Buffer.byteLength(query)} bytes`);
    refused(await http("POST", "/profiles/edges/recall", { query }), `${Buffer.byteLength(query)} bytes`);
  }
});

test("a session id of 64 characters is taken, multibyte too, and one of 65 refused", async () => {
  for (const sessionId of ["s".repeat(64), "é".repeat(64)]) {
    await w.call("edges", "remember", { content: `The user's locker is number ${sessionId.length}.`, sessionId });
    taken(await http("GET", `/profiles/edges/memories?session_id=${encodeURIComponent(sessionId)}`), "list by a 64-character session");
    await w.call("edges", "deleteSession", sessionId);
  }
  const long = "s".repeat(65);
  await throws(w.call("edges", "remember", { content: "The user's locker is number 65.", sessionId: long }), "a 65-character session");
  refused(await http("POST", "/profiles/edges/remember", { content: "The user's locker is number 65.", sessionId: long }), "a 65-character session");
  refused(await http("DELETE", `/profiles/edges/sessions/${long}`), "deleting a 65-character session");
});

test("a profile name of 100 characters is taken and one of 101 refused", async () => {
  const name = "p".repeat(100);
  await w.call(name, "remember", { content: "The user's desk is by the window." });
  taken(await http("GET", `/profiles/${name}/memories`), "100 characters");
  await throws(w.call("p".repeat(101), "list"), "101 characters");
  refused(await http("GET", `/profiles/${"p".repeat(101)}/memories`), "101 characters");
});

test("a page holds 1 to 1,000 memories, 20 when no size is asked", async () => {
  const page = await http("GET", "/profiles/edges/memories");
  taken(page, "the default page");
  assert.equal(page.body.result.length, 20);
  assert.equal(page.body.result_info.per_page, 20);
  assert.equal((await w.call("edges", "list")).memories.length, 20);
  for (const n of [1, 1000]) {
    taken(await http("GET", `/profiles/edges/memories?per_page=${n}`), `per_page=${n}`);
    await w.call("edges", "list", { limit: n });
  }
  for (const n of [0, 1001]) {
    refused(await http("GET", `/profiles/edges/memories?per_page=${n}`), `per_page=${n}`);
    await throws(w.call("edges", "list", { limit: n }), `limit ${n}`);
  }
  for (const n of [0, 1001]) {
    const r = await w.fetch(`/client/v4/accounts/acct1/agent-memory/namespaces?per_page=${n}`, { headers: H });
    refused({ status: r.status, body: await r.json() }, `a namespace page of ${n}`);
  }
});

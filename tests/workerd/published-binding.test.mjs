// Issue #23, "Must show 2": a consumer Worker written only against the
// published Workers API types (tests/types/published/agent-memory.d.ts,
// the verbatim workerd declaration file) runs in workerd next to the built
// service, bound to its MemoryService entrypoint with props = { namespace }.
//
// Steps: the d.ts is checked against docs/compat/published-interface.md
// section 1.1; published/consumer.ts is type-checked with tsc against it
// (+ @cloudflare/workers-types); esbuild strips its types into a temp dir;
// miniflare runs it three times: consumer-a (props {namespace: "team-a"}),
// consumer-b ({namespace: "team-b"}) and consumer-default (no props).
// Each consumer route answers with what the Worker saw (see consumer.ts:
// `Seen` keeps undefined, absent keys and `instanceof Date`).
//
//   cd /work/main && source scripts/env.sh && node --test tests/workerd/published-binding.test.mjs
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { build } from "esbuild";
import { startWorker, ROOT } from "./helpers.mjs";

const DIR = path.join(ROOT, "tests", "workerd", "published");
const CONSUMER_TS = path.join(DIR, "consumer.ts");
// The one verbatim copy of the published types the tests keep (tests/types
// type-checks the documentation's examples against it too).
const DTS = path.join(ROOT, "tests", "types", "published", "agent-memory.d.ts");
const TYPES = new Set(["fact", "event", "instruction", "task"]);
const LEVELS = ["low", "medium", "high"];
const LENGTHS = ["short", "medium", "long"];
const REFERENCE_DATE = "2026-04-21T12:00:00.000Z";
const UNKNOWN_ID = "01jsgcn7x0000000000000000z";

// ---------------------------------------------------------------------------
// Static checks: the d.ts and the consumer's source

test("agent-memory.d.ts is section 1.1 of the published interface, verbatim, under a source header", () => {
  const doc = readFileSync(path.join(ROOT, "docs", "compat", "published-interface.md"), "utf8");
  const section = doc.slice(doc.indexOf("### 1.1 "));
  const fenced = section.match(/```ts\n([\s\S]*?)\n```/);
  assert.ok(fenced, "no ```ts block in section 1.1");
  const dts = readFileSync(DTS, "utf8");
  const header = dts.match(/^(?:\/\/.*\n)+\n/);
  assert.ok(header, "the d.ts starts with a // header and a blank line");
  assert.match(header[0], /cloudflare\/workerd/);
  assert.match(header[0], /types\/defines\/agent-memory\.d\.ts/);
  assert.match(header[0], /6552d999c/);
  assert.equal(dts.slice(header[0].length), `${fenced[1]}\n`);
  assert.equal(fenced[1].split("\n").length, 258);
});

test("consumer.ts imports nothing but types, and those only from the published d.ts", () => {
  const src = readFileSync(CONSUMER_TS, "utf8");
  const imports = [...src.matchAll(/^\s*import\b[\s\S]*?from\s+["']([^"']+)["'];?/gm)];
  assert.ok(imports.length >= 1);
  for (const m of imports) {
    assert.match(m[0], /^\s*import type\b/, `not type-only: ${m[0]}`);
    assert.equal(m[1], "../../types/published/agent-memory");
  }
  assert.doesNotMatch(src, /\bimport\s*\(/, "no dynamic import");
  assert.match(src, /interface Env \{\s*MEMORY: AgentMemoryNamespace;\s*\}/);
});

test("consumer.ts type-checks (tsc --noEmit, strict) against the published d.ts and @cloudflare/workers-types", async () => {
  const tsc = path.join(ROOT, "node_modules", "typescript", "bin", "tsc");
  const args = [
    tsc, "--noEmit", "--strict", "--exactOptionalPropertyTypes", "--noUnusedLocals",
    "--target", "es2022", "--module", "esnext", "--moduleResolution", "bundler",
    "--lib", "es2022", "--types", "@cloudflare/workers-types",
    CONSUMER_TS,
  ];
  try {
    await promisify(execFile)(process.execPath, args, { cwd: ROOT });
  } catch (e) {
    assert.fail(`tsc failed:\n${e.stdout}${e.stderr}`);
  }
});

// ---------------------------------------------------------------------------
// Runtime: the stripped consumer in workerd, three bindings

let w;
let outDir;
before(async () => {
  outDir = mkdtempSync(path.join(tmpdir(), "published-consumer-"));
  const scriptPath = path.join(outDir, "consumer.mjs");
  await build({ entryPoints: [CONSUMER_TS], outfile: scriptPath, bundle: true, format: "esm", platform: "neutral", target: "es2022", logLevel: "silent" });
  const consumer = (name, props) => ({
    name,
    modules: true,
    // Module names are paths relative to modulesRoot (default: the cwd); a
    // script outside it gets a "../" name and workerd refuses to start.
    modulesRoot: outDir,
    scriptPath,
    serviceBindings: { MEMORY: { name: "agent-memory", entrypoint: "MemoryService", ...(props ? { props } : {}) } },
  });
  w = await startWorker({
    extraWorkers: [consumer("consumer-a", { namespace: "team-a" }), consumer("consumer-b", { namespace: "team-b" }), consumer("consumer-default")],
  });
});
after(async () => {
  await w?.dispose();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

/** Runs one consumer route; returns {ok, saw} or {ok: false, threw}. */
async function run(consumer, route, body) {
  const worker = await w.miniflare.getWorker(consumer);
  const res = await worker.fetch(`http://consumer${route}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 200, `${consumer} ${route}: HTTP ${res.status}`);
  return res.json();
}
/** The value a step resolved to, as the consumer saw it; fails if it threw. */
async function saw(consumer, route, body) {
  const out = await run(consumer, route, body);
  assert.ok(out.ok, `${consumer} ${route} ${JSON.stringify(body)} threw: ${JSON.stringify(out.threw)}`);
  return out.saw;
}
/** The profiles of `namespace` as the HTTP API lists them (the API schema's List profiles). */
async function listedProfiles(namespace) {
  const res = await w.fetch(`/client/v4/accounts/1/agent-memory/namespaces/${namespace}/profiles?per_page=500`, {
    headers: { authorization: "Bearer dev-token" },
  });
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  return body.result.map((p) => p.name);
}
/** The error a step threw; fails if it resolved. */
async function threw(consumer, route, body) {
  const out = await run(consumer, route, body);
  assert.ok(!out.ok, `${consumer} ${route} ${JSON.stringify(body)} resolved to ${JSON.stringify(out.saw)}`);
  return out.threw;
}
const A = (route, body) => saw("consumer-a", route, body);
const B = (route, body) => saw("consumer-b", route, body);

/** Seen -> plain value: Dates become Date objects, everything else JSON. */
function value(s) {
  switch (s.kind) {
    case "undefined": return undefined;
    case "null": return null;
    case "Date": return new Date(s.iso);
    case "array": return s.items.map(value);
    case "object": return Object.fromEntries(s.keys.map((k) => [k, value(s.fields[k])]));
    case "other": return { other: s.type };
    default: return s.value;
  }
}

function field(s, key, what) {
  assert.equal(s.kind, "object", `${what}: an object, saw ${s.kind}`);
  assert.ok(s.keys.includes(key), `${what}: key ${key} missing (keys: ${s.keys.join(", ")})`);
  return s.fields[key];
}
function isString(s, what, { nonEmpty = false } = {}) {
  assert.equal(s.kind, "string", `${what}: a string, saw ${JSON.stringify(s)}`);
  if (nonEmpty) assert.ok(s.value.length > 0, `${what}: non-empty`);
  return s.value;
}
function isDate(s, what) {
  assert.equal(s.kind, "Date", `${what}: instanceof Date, saw ${JSON.stringify(s)}`);
  assert.ok(s.iso, `${what}: a valid Date`);
  return new Date(s.iso);
}
function sessionIdOf(s, what) {
  const v = field(s, "sessionId", what);
  assert.ok(v.kind === "string" || v.kind === "null", `${what}.sessionId: string or null, saw ${JSON.stringify(v)}`);
  return v.kind === "null" ? null : v.value;
}

/** AgentMemoryMemory (withContent) or AgentMemoryMemoryListEntry. */
function assertMemory(s, what, { withContent = true } = {}) {
  const id = isString(field(s, "id", what), `${what}.id`, { nonEmpty: true });
  const type = isString(field(s, "type", what), `${what}.type`);
  assert.ok(TYPES.has(type), `${what}.type: one of fact|event|instruction|task, saw ${type}`);
  isString(field(s, "summary", what), `${what}.summary`);
  if (withContent) isString(field(s, "content", what), `${what}.content`);
  else assert.ok(!s.keys.includes("content"), `${what}: a list entry has no content key (keys: ${s.keys.join(", ")})`);
  const sessionId = sessionIdOf(s, what);
  const createdAt = isDate(field(s, "createdAt", what), `${what}.createdAt`);
  const updatedAt = isDate(field(s, "updatedAt", what), `${what}.updatedAt`);
  assert.ok(updatedAt >= createdAt, `${what}: updatedAt >= createdAt`);
  return { ...value(s), id, type, sessionId };
}

/** AgentMemoryRecallResult; returns the candidates as plain values. */
function assertRecall(s, what) {
  const count = field(s, "count", what);
  assert.equal(count.kind, "number", `${what}.count: a number, saw ${JSON.stringify(count)}`);
  assert.ok(Number.isInteger(count.value) && count.value >= 0, `${what}.count: a count`);
  isString(field(s, "answer", what), `${what}.answer`);
  const candidates = field(s, "candidates", what);
  assert.equal(candidates.kind, "array", `${what}.candidates: an array`);
  return candidates.items.map((c, i) => {
    const at = `${what}.candidates[${i}]`;
    const id = isString(field(c, "id", at), `${at}.id`, { nonEmpty: true });
    isString(field(c, "summary", at), `${at}.summary`);
    const sessionId = sessionIdOf(c, at);
    const score = field(c, "score", at);
    assert.equal(score.kind, "number", `${at}.score: a number`);
    assert.ok(Number.isFinite(score.value), `${at}.score: finite`);
    return { id, sessionId, score: score.value, count: count.value };
  });
}

/** AgentMemoryListMemoriesResult; returns {entries, cursor (undefined when the key is absent)}. */
function assertListPage(s, what) {
  const memories = field(s, "memories", what);
  assert.equal(memories.kind, "array", `${what}.memories: an array`);
  const entries = memories.items.map((m, i) => assertMemory(m, `${what}.memories[${i}]`, { withContent: false }));
  let cursor;
  if (s.keys.includes("cursor")) {
    cursor = isString(s.fields.cursor, `${what}.cursor (when present)`, { nonEmpty: true });
  }
  return { entries, cursor };
}

/** Every page of list(options) (the consumer pages until `cursor` is absent). */
async function listAll(consumer, body) {
  const s = await saw(consumer, "/list-all", body);
  assert.equal(value(field(s, "exhausted", "list-all")), true, "paging ended with the cursor key absent within 200 pages");
  const pages = field(s, "pages", "list-all").items.map((p, i) => assertListPage(p, `page ${i}`));
  pages.forEach((p, i) => {
    if (i < pages.length - 1) assert.equal(typeof p.cursor, "string", `page ${i} (not last) has a cursor`);
    else assert.equal(p.cursor, undefined, "the last page has no cursor key");
  });
  return { pages, entries: pages.flatMap((p) => p.entries) };
}

const PREFERENCE = "I prefer TypeScript examples and concise answers.";
const conversation = () => [
  { role: "system", content: "You are a helpful coding assistant.", timestamp: "2026-04-20T09:00:00.000Z" },
  { role: "user", content: PREFERENCE, timestamp: "2026-04-20T09:00:05.000Z" },
  { role: "assistant", content: "Noted: TypeScript examples, kept short.", timestamp: "2026-04-20T09:00:07.000Z" },
  { role: "user", content: "I live in Lisbon and I work as a data engineer.", timestamp: "2026-04-20T09:01:00.000Z" },
];

// ---------------------------------------------------------------------------
// The scenario, through consumer-a (props {namespace: "team-a"})

test("ingest with Date timestamps, a system message and a sessionId resolves to undefined", async () => {
  const s = await A("/ingest", { profile: "pub-ingest", sessionId: "sess-ingest", messages: conversation() });
  assert.deepEqual(s, { kind: "undefined" });
});

test("after ingest, recall finds the ingested preference and list({sessionId}) shows it under that session", async () => {
  await A("/ingest", { profile: "pub-ingest-recall", sessionId: "sess-ir", messages: conversation() });
  const candidates = assertRecall(await A("/recall", { profile: "pub-ingest-recall", query: "Which language should code examples use?" }), "recall");
  assert.ok(candidates.length > 0, "a candidate for the ingested preference");
  const { entries } = await listAll("consumer-a", { profile: "pub-ingest-recall", sessionId: "sess-ir", limit: 500 });
  assert.ok(entries.length > 0, "memories listed under the ingest's sessionId");
  for (const e of entries) assert.equal(e.sessionId, "sess-ir");
});

test("remember with a sessionId returns the memory: id, type, summary, content, sessionId, createdAt/updatedAt as Dates", async () => {
  const m = assertMemory(await A("/remember", { profile: "pub-remember", content: PREFERENCE, sessionId: "sess-r" }), "remember");
  assert.equal(m.sessionId, "sess-r");
});

test("remember without a session returns sessionId null (present, not absent)", async () => {
  const s = await A("/remember", { profile: "pub-remember", content: "I drink my coffee black, no sugar." });
  const m = assertMemory(s, "remember");
  assert.deepEqual(field(s, "sessionId", "remember"), { kind: "null" });
  assert.equal(m.sessionId, null);
});

test("recall accepts every thinkingLevel with a responseLength and a Date referenceDate: {count, answer, candidates[{id, summary, sessionId, score}]}", async () => {
  const profile = "pub-recall";
  const remembered = assertMemory(await A("/remember", { profile, content: PREFERENCE, sessionId: "sess-rc" }), "remember");
  for (const [i, thinkingLevel] of LEVELS.entries()) {
    const responseLength = LENGTHS[i];
    const what = `recall(${thinkingLevel}, ${responseLength})`;
    const candidates = assertRecall(
      await A("/recall", { profile, query: "What kind of code examples does the user prefer?", thinkingLevel, responseLength, referenceDate: REFERENCE_DATE }),
      what,
    );
    assert.ok(candidates.some((c) => c.id === remembered.id), `${what}: finds the remembered memory`);
    const hit = candidates.find((c) => c.id === remembered.id);
    assert.equal(hit.sessionId, "sess-rc", `${what}: the candidate carries its sessionId`);
  }
});

test("recall also takes referenceDate as an ISO date string (YYYY-MM-DD)", async () => {
  const candidates = assertRecall(
    await A("/recall", { profile: "pub-recall", query: "code examples", referenceDate: "2026-04-21", referenceDateAs: "string" }),
    "recall(referenceDate string)",
  );
  assert.ok(candidates.length > 0);
});

test("recall with no matching memory returns an empty answer, not an error", async () => {
  const s = await A("/recall", { profile: "pub-recall-empty", query: "What is the user's favourite colour?" });
  const candidates = assertRecall(s, "recall(empty profile)");
  assert.equal(candidates.length, 0);
  assert.equal(value(field(s, "answer", "recall")), "");
  assert.equal(value(field(s, "count", "recall")), 0);
});

// Four memories in two sessions plus one without a session.
async function seedList(profile) {
  const contents = [
    ["I prefer dark mode in every editor.", "sess-l1"],
    ["My favourite database is PostgreSQL.", "sess-l1"],
    ["I use Neovim for quick edits.", "sess-l2"],
    ["I keep my notes in plain Markdown files.", undefined],
  ];
  const out = [];
  for (const [content, sessionId] of contents) {
    const body = sessionId ? { profile, content, sessionId } : { profile, content };
    out.push(assertMemory(await A("/remember", body), "remember"));
  }
  return out;
}

test("list entries have no content key and carry createdAt/updatedAt as Dates; the last page has no cursor key", async () => {
  const profile = "pub-list";
  const seeded = await seedList(profile);
  const page = assertListPage(await A("/list", { profile }), "list()");
  assert.equal(page.cursor, undefined, "one page holds all four: no cursor key");
  assert.deepEqual(new Set(page.entries.map((e) => e.id)), new Set(seeded.map((m) => m.id)));
});

test("list({limit: 1}) pages with the cursor until the key is absent, covering every memory once", async () => {
  const profile = "pub-list";
  const { entries: all } = await listAll("consumer-a", { profile, limit: 500 });
  const { pages, entries } = await listAll("consumer-a", { profile, limit: 1 });
  for (const [i, p] of pages.entries()) assert.ok(p.entries.length <= 1, `page ${i}: at most limit entries`);
  const ids = entries.map((e) => e.id);
  assert.equal(new Set(ids).size, ids.length, "no memory on two pages");
  assert.deepEqual(new Set(ids), new Set(all.map((e) => e.id)));
  assert.ok(pages.length >= all.length, "one memory per page");
});

test("list({sessionId}) returns only that session's memories, paged with limit and cursor", async () => {
  const profile = "pub-list";
  const { entries: all } = await listAll("consumer-a", { profile, limit: 500 });
  const { entries } = await listAll("consumer-a", { profile, sessionId: "sess-l1", limit: 1 });
  assert.equal(entries.length, all.filter((e) => e.sessionId === "sess-l1").length);
  assert.equal(entries.length, 2);
  for (const e of entries) assert.equal(e.sessionId, "sess-l1");
});

test("list({type}) returns only memories of that type; sessionId and type combine", async () => {
  const profile = "pub-list";
  const { entries: all } = await listAll("consumer-a", { profile, limit: 500 });
  for (const type of TYPES) {
    const { entries } = await listAll("consumer-a", { profile, type, limit: 2 });
    assert.deepEqual(new Set(entries.map((e) => e.id)), new Set(all.filter((e) => e.type === type).map((e) => e.id)), `type ${type}`);
  }
  const { type } = all.find((e) => e.sessionId === "sess-l1");
  const { entries } = await listAll("consumer-a", { profile, type, sessionId: "sess-l1", limit: 500 });
  assert.deepEqual(
    new Set(entries.map((e) => e.id)),
    new Set(all.filter((e) => e.type === type && e.sessionId === "sess-l1").map((e) => e.id)),
  );
});

test("get(id) returns the memory with content and Dates, equal to what remember returned", async () => {
  const profile = "pub-get";
  const made = assertMemory(await A("/remember", { profile, content: "I am allergic to peanuts.", sessionId: "sess-g" }), "remember");
  const got = assertMemory(await A("/get", { profile, id: made.id }), "get");
  for (const k of ["id", "type", "summary", "content", "sessionId"]) assert.deepEqual(got[k], made[k], k);
  assert.equal(got.createdAt.getTime(), made.createdAt.getTime());
});

test("get of an unknown id throws an Error", async () => {
  const e = await threw("consumer-a", "/get", { profile: "pub-get", id: UNKNOWN_ID });
  assert.equal(e.isError, true, `instanceof Error: ${JSON.stringify(e)}`);
});

test("getProfile of a name no profile may have rejects at getProfile itself (400's code); a valid name resolves", async () => {
  for (const bad of ["auth0|65f2a1", "Alice Smith", "x".repeat(101), ".."]) {
    const e = await threw("consumer-a", "/get-profile", { profile: bad });
    assert.equal(e.isError, true, `${JSON.stringify(bad)}: instanceof Error: ${JSON.stringify(e)}`);
    assert.match(e.message, /10001/, `${JSON.stringify(bad)}: ${e.message}`);
  }
  assert.equal(value(await A("/get-profile", { profile: "user@example.com" })), "resolved");
});

test("delete(id) returns the deleted memory (with content and Dates); then get and delete of it throw", async () => {
  const profile = "pub-delete";
  const made = assertMemory(await A("/remember", { profile, content: "I cycle to work every day.", sessionId: "sess-d" }), "remember");
  const deleted = assertMemory(await A("/delete", { profile, id: made.id }), "delete");
  for (const k of ["id", "type", "summary", "content", "sessionId"]) assert.deepEqual(deleted[k], made[k], k);
  assert.equal((await threw("consumer-a", "/get", { profile, id: made.id })).isError, true);
  assert.equal((await threw("consumer-a", "/delete", { profile, id: made.id })).isError, true);
  assert.equal((await threw("consumer-a", "/delete", { profile, id: UNKNOWN_ID })).isError, true);
});

test("getSummary() and getSummary({sessionId}) return {summary: string}", async () => {
  const profile = "pub-summary";
  await A("/remember", { profile, content: PREFERENCE, sessionId: "sess-s" });
  for (const body of [{ profile }, { profile, sessionId: "sess-s" }]) {
    const s = await A("/summary", body);
    assert.equal(s.kind, "object");
    assert.ok(s.keys.includes("summary"), `keys: ${s.keys}`);
    assert.ok(isString(s.fields.summary, "summary", { nonEmpty: true }));
  }
});

test("deleteSession resolves to undefined, removes that session's memories only, and is idempotent", async () => {
  const profile = "pub-session";
  const kept = assertMemory(await A("/remember", { profile, content: "I prefer tea over coffee.", sessionId: "sess-keep" }), "remember");
  await A("/remember", { profile, content: "I am planning a trip to Japan.", sessionId: "sess-drop" });
  assert.deepEqual(await A("/delete-session", { profile, sessionId: "sess-drop" }), { kind: "undefined" });
  const { entries } = await listAll("consumer-a", { profile, limit: 500 });
  assert.deepEqual(entries.map((e) => e.id), [kept.id]);
  assert.deepEqual(await A("/delete-session", { profile, sessionId: "sess-drop" }), { kind: "undefined" });
  assert.deepEqual(await A("/delete-session", { profile, sessionId: "sess-never-used" }), { kind: "undefined" });
});

test("deleteProfile resolves to undefined and its memories can no longer be read", async () => {
  const profile = "pub-delete-profile";
  const m = assertMemory(await A("/remember", { profile, content: "I run every morning.", sessionId: "sess-dp" }), "remember");
  assert.ok((await listedProfiles("team-a")).includes(profile), "written: listed");
  assert.deepEqual(await A("/delete-profile", { profile }), { kind: "undefined" });
  assert.ok(!(await listedProfiles("team-a")).includes(profile), "deleted: no longer listed");
  assert.deepEqual(await A("/delete-profile", { profile }), { kind: "undefined" }, "deleting it again resolves too");
  assert.equal((await threw("consumer-a", "/get", { profile, id: m.id })).isError, true, "get of its memory throws");
  // What list() does on a deleted profile is not documented: it may throw,
  // or resolve; if it resolves, the memory is not in it.
  const out = await run("consumer-a", "/list", { profile, limit: 500 });
  if (out.ok) assert.deepEqual(assertListPage(out.saw, "list").entries, []);
});

test("deleteProfile resolves to undefined even when deleteSession already emptied the profile", async () => {
  const profile = "pub-delete-emptied";
  await A("/remember", { profile, content: "I like green tea.", sessionId: "sess-e" });
  assert.deepEqual(await A("/delete-session", { profile, sessionId: "sess-e" }), { kind: "undefined" });
  assert.deepEqual(await A("/delete-profile", { profile }), { kind: "undefined" });
});

// workers-api: getProfile "If the profile does not exist, Agent Memory
// creates it." A profile only read is deleted without a throw.
test("deleteProfile of a profile getProfile made and nothing wrote resolves to undefined", async () => {
  const profile = "pub-only-read";
  const out = await run("consumer-a", "/list", { profile, limit: 5 });
  assert.ok(out.ok, JSON.stringify(out));
  assert.deepEqual(await A("/delete-profile", { profile }), { kind: "undefined" });
  assert.ok(!(await listedProfiles("team-a")).includes(profile), "never written, so never listed, its deletion included");
  const again = await run("consumer-a", "/list", { profile, limit: 5 });
  assert.ok(again.ok, `still readable as the empty profile it was: ${JSON.stringify(again)}`);
});

test("the wrangler e2e pattern works: getSummary() on the un-awaited getProfile() (promise pipelining)", async () => {
  const worker = await w.miniflare.getWorker("consumer-a");
  const res = await worker.fetch("http://consumer/wrangler-e2e");
  const text = await res.text();
  assert.equal(res.status, 200, text);
  const body = JSON.parse(text);
  assert.deepEqual(Object.keys(body), ["summary"]);
  assert.equal(typeof body.summary, "string");
});

test("the wrangler e2e response body contains the substring 'profile', as that test expects of an empty profile", async () => {
  const worker = await w.miniflare.getWorker("consumer-b");
  const text = await (await worker.fetch("http://consumer/wrangler-e2e")).text();
  assert.ok(text.includes("profile"), text);
});

// ---------------------------------------------------------------------------
// Isolation: props.namespace

test("memories written through team-a are invisible through team-b (recall, list, get by id), and the reverse", async () => {
  const profile = "shared-profile";
  await A("/ingest", { profile, sessionId: "sess-iso", messages: conversation() });
  const a = assertMemory(await A("/remember", { profile, content: "My favourite editor theme is Solarized.", sessionId: "sess-iso" }), "remember a");
  const aAll = (await listAll("consumer-a", { profile, limit: 500 })).entries;
  assert.ok(aAll.some((e) => e.id === a.id), "team-a lists its own memory");

  const query = "What kind of code examples does the user prefer?";
  assert.ok(assertRecall(await A("/recall", { profile, query }), "recall a").length > 0, "team-a recalls");
  assert.deepEqual(assertRecall(await B("/recall", { profile, query }), "recall b"), [], "team-b recalls nothing");
  assert.deepEqual((await listAll("consumer-b", { profile, limit: 500 })).entries, [], "team-b lists nothing");
  assert.deepEqual((await listAll("consumer-b", { profile, sessionId: "sess-iso", limit: 500 })).entries, []);
  for (const e of aAll) assert.equal((await threw("consumer-b", "/get", { profile, id: e.id })).isError, true, `team-b get(${e.id}) throws`);
  assert.equal((await threw("consumer-b", "/delete", { profile, id: a.id })).isError, true, "team-b cannot delete team-a's memory");

  const b = assertMemory(await B("/remember", { profile, content: "My favourite editor theme is Gruvbox.", sessionId: "sess-iso" }), "remember b");
  assert.deepEqual((await listAll("consumer-b", { profile, limit: 500 })).entries.map((e) => e.id), [b.id]);
  assert.equal((await threw("consumer-a", "/get", { profile, id: b.id })).isError, true, "team-a get(b's id) throws");
  const aCandidates = assertRecall(await A("/recall", { profile, query: "favourite editor theme" }), "recall a");
  assert.ok(!aCandidates.some((c) => c.id === b.id), "team-a never recalls team-b's memory");
  assert.ok(aCandidates.some((c) => c.id === a.id));
  assert.deepEqual(new Set((await listAll("consumer-a", { profile, limit: 500 })).entries.map((e) => e.id)), new Set(aAll.map((e) => e.id)));
  // Still there for team-a after team-b's failed delete.
  assertMemory(await A("/get", { profile, id: a.id }), "get a");
});

test("deleteSession and deleteProfile through team-b leave team-a's profile of the same name intact", async () => {
  const profile = "shared-delete";
  const a = assertMemory(await A("/remember", { profile, content: "I speak Portuguese and English.", sessionId: "sess-x" }), "remember a");
  await B("/remember", { profile, content: "I speak French.", sessionId: "sess-x" });
  await B("/remember", { profile, content: "I speak Italian.", sessionId: "sess-y" });
  assert.deepEqual(await B("/delete-session", { profile, sessionId: "sess-x" }), { kind: "undefined" });
  assert.deepEqual((await listAll("consumer-a", { profile, sessionId: "sess-x", limit: 500 })).entries.map((e) => e.id), [a.id]);
  assert.deepEqual(await B("/delete-profile", { profile }), { kind: "undefined" });
  assert.deepEqual((await listAll("consumer-a", { profile, limit: 500 })).entries.map((e) => e.id), [a.id]);
  assertMemory(await A("/get", { profile, id: a.id }), "get a");
});

test("team-a's memories are invisible through a binding without props (the default namespace)", async () => {
  const profile = "shared-default";
  const a = assertMemory(await A("/remember", { profile, content: "I keep bees on my balcony.", sessionId: "sess-def" }), "remember a");
  assert.deepEqual((await listAll("consumer-default", { profile, limit: 500 })).entries, []);
  assert.equal((await threw("consumer-default", "/get", { profile, id: a.id })).isError, true);
  assert.deepEqual(assertRecall(await saw("consumer-default", "/recall", { profile, query: "bees" }), "recall default"), []);
});

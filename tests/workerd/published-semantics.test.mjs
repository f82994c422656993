// The published Agent Memory pages' statements about behaviour, checked as
// written against the built Worker over the published HTTP prefix and the
// binding (the local defaults: rule-based reasoner, hashing embedder):
// - "If no memories match the query, recall() returns an empty answer
//   rather than hallucinating a response" (how-agent-memory-works,
//   workers-api, http-api);
// - "Events ... accumulate and do not conflict with each other";
//   supersession is for a memory that "shares a topic key";
// - referenceDate "is used as 'today' for resolving relative time
//   references ('how many days ago', 'last week')" (the Workers types);
// - the http-api "Remember a memory" example comes back as an instruction.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startWorker } from "./helpers.mjs";

const BASE = "/client/v4/accounts/acct1/agent-memory/namespaces/support-agent/profiles";
const H = { authorization: "Bearer dev-token", "content-type": "application/json" };
let w;
before(async () => { w = await startWorker(); });
after(async () => { await w?.dispose(); });
async function send(method, path, body) {
  const r = await w.fetch(BASE + path, { method, headers: H, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: r.status, body: await r.json() };
}
const rejection = async (p) => { try { await p; return null; } catch (e) { return e.message; } };

// how-agent-memory-works.mdx / workers-api.mdx / http-api.mdx:
// "If no memories match the query, recall() returns an empty answer rather than hallucinating a response."
test("recall of a question no memory matches returns an empty answer over HTTP", async () => {
  await send("POST", "/f1/remember", { content: "The user prefers concise answers.", sessionId: "chat-2026-04-21" });
  await send("POST", "/f1/ingest", { messages: [{ role: "user", content: "I prefer dark mode and use VS Code." }] });
  // The README's quick start: its turns say "the" and "with", as the questions below do.
  await send("POST", "/f1/ingest", { sessionId: "quick-start", messages: [
    { role: "user", content: "Set up the project with React and TypeScript." },
    { role: "assistant", content: "Scaffolded a React + TS project targeting Workers." },
    { role: "user", content: "Use pnpm, not npm." },
  ] });
  for (const query of ["xylophone zeppelin quasar", "Who won the 1998 World Cup?", "How tall is Mount Everest?", "What is the capital of France?", "the zebra"]) {
    const r = await send("POST", "/f1/recall", { query });
    assert.equal(r.body.result.answer, "", `${query} -> ${JSON.stringify(r.body.result)}`);
  }
});
test("over the binding, the bindings example's profile answers an unrelated recall empty, before and after a related one", async () => {
  await w.call("user-123", "ingest", [{ role: "user", content: "I prefer TypeScript over JavaScript." }, { role: "assistant", content: "Got it, I will use TypeScript by default." }]);
  assert.equal((await w.call("user-123", "recall", "team conventions")).answer, "", "first unrelated recall");
  await w.call("user-123", "recall", "What language does the user prefer?"); // the docs' own recall
  const r = await w.call("user-123", "recall", "team conventions");
  assert.equal(r.answer, "", JSON.stringify(r));
});

// ingest.mdx: Agent Memory "identifies facts, events, instructions, and tasks automatically", in
// no language named. Chinese and Japanese write a sentence without spaces; its statements are kept,
// and a word of one finds it (the full-text rows index such a run by its pairs of letters).
test("a Chinese or Japanese conversation is remembered and a word of it finds it, over HTTP", async () => {
  const ingested = await send("POST", "/cjk/ingest", { sessionId: "zh", messages: [
    { role: "user", content: "我住在上海，我是一名软件工程师。我喜欢简洁的回答。" },
    { role: "user", content: "私は東京に住んでいます。" },
  ] });
  assert.equal(ingested.status, 200, JSON.stringify(ingested.body));
  const l = await send("GET", "/cjk/memories");
  assert.ok(l.body.result.length >= 3, JSON.stringify(l.body.result.map((m) => m.summary)));
  for (const [query, said] of [["上海", /上海/], ["東京", /東京/], ["我喜欢什么样的回答？", /简洁/]]) {
    const r = await send("POST", "/cjk/recall", { query });
    assert.ok(said.test(r.body.result.answer), `${query} -> ${JSON.stringify(r.body.result)}`);
  }
  assert.equal((await send("POST", "/cjk/recall", { query: "北京" })).body.result.answer, "", "a city no one named");
});

// recall.mdx lists "Summarize recent deployment events" as an example query; ingest.mdx's example
// conversation says "Deploy" and "Deployed". The full-text index's Porter stemmer puts "deployment"
// and "deploy"/"deployed" under two stems (deploy / deploi); a query on either side searches the other.
test("the recall example's query finds the ingest example's deployment (both sides of the stemmer's y/i split)", async () => {
  await w.call("alice", "ingest", [
    { role: "user", content: "Deploy the API to production." },
    { role: "assistant", content: "Deployed v2.3.0 to production successfully." },
  ], { sessionId: "deployment-session-42" });
  await w.call("bob", "ingest", [{ role: "user", content: "The deployment of the billing service v3 finished at noon." }], { sessionId: "ops" });
  for (const [profile, query, said] of [["alice", "Summarize recent deployment events", /v2\.3\.0/], ["alice", "deployments", /v2\.3\.0/], ["bob", "What got deployed?", /billing service v3/]]) {
    const r = await w.call(profile, "recall", query);
    assert.ok(r.count > 0 && said.test(r.answer), `${profile}: ${query} -> ${JSON.stringify(r)}`);
  }
});

// how-agent-memory-works.mdx: "Events — Completed actions anchored to a point in time. Deployments, ...
// Events accumulate and do not conflict with each other."
test("two deployments are both kept (events accumulate)", async () => {
  await send("POST", "/f4/remember", { content: "Deployed billing API v2.3.0 to production on April 15." });
  await send("POST", "/f4/remember", { content: "Deployed billing API v2.4.0 to production on April 22." });
  const l = await send("GET", "/f4/memories");
  assert.equal(l.body.result.length, 2, JSON.stringify(l.body.result.map((m) => [m.type, m.summary])));
});
// Two orders are two topics: a number after a capitalized word names a thing (the rule classifier's
// identifiers run inside the Wasm build, whose regex lacks the Unicode general categories).
test("two orders' refunds are two topics: neither supersedes the other", async () => {
  await send("POST", "/f6/remember", { content: "Order 1234 was refunded in full." });
  await send("POST", "/f6/remember", { content: "Order 5678 was refunded in full." });
  const l = await send("GET", "/f6/memories");
  assert.equal(l.status, 200, JSON.stringify(l.body));
  assert.equal(l.body.result.length, 2, JSON.stringify(l.body.result.map((m) => m.summary)));
});
// how-agent-memory-works.mdx: supersession is for a memory that "shares a topic key with an existing one
// (for example, 'editor preference')" -- two projects' databases are two topics.
test("two projects' databases are two topics: neither supersedes the other", async () => {
  await send("POST", "/f5/remember", { content: "Project Alpha uses PostgreSQL." });
  await send("POST", "/f5/remember", { content: "Project Beta uses MySQL." });
  const l = await send("GET", "/f5/memories");
  assert.equal(l.body.result.length, 2, JSON.stringify(l.body.result.map((m) => m.summary)));
});

// d.ts AgentMemoryRecallOptions: referenceDate "is used as 'today' for resolving relative time
// references ('how many days ago', 'last week')"
test("referenceDate decides what last week is", async () => {
  await send("POST", "/f6/ingest", { sessionId: "x1", messages: [{ role: "user", content: "We migrated the billing database to PostgreSQL today.", timestamp: "2026-04-08T10:00:00Z" }] });
  await send("POST", "/f6/ingest", { sessionId: "x2", messages: [{ role: "user", content: "We launched the new onboarding flow today.", timestamp: "2026-04-20T10:00:00Z" }] });
  const a = await send("POST", "/f6/recall", { query: "What happened last week?", referenceDate: "2026-04-14" });
  const b = await send("POST", "/f6/recall", { query: "What happened last week?", referenceDate: "2026-04-27" });
  // What was said in the week named comes first (ranked, not filtered:
  // dates in conversations are loose, and recall keeps the rest after it).
  assert.match(a.body.result.candidates[0].summary, /PostgreSQL/, JSON.stringify(a.body.result.candidates));
  assert.match(b.body.result.candidates[0].summary, /onboarding/, JSON.stringify(b.body.result.candidates));
  assert.match(a.body.result.answer, /^User: We migrated/, a.body.result.answer);
  assert.notEqual(a.body.result.answer, b.body.result.answer);
});

// d.ts AgentMemoryRecallOptions: referenceDate takes "a Date object, an ISO-8601 date string
// (YYYY-MM-DD), or a full ISO-8601 datetime string": each ISO-8601 form of one day reads as it.
test("referenceDate as a full ISO-8601 date-time string in its common forms reads as its day", async () => {
  await send("POST", "/f6b/ingest", { sessionId: "x1", messages: [{ role: "user", content: "We migrated the billing database to PostgreSQL today.", timestamp: "2026-04-08T10:00:00Z" }] });
  await send("POST", "/f6b/ingest", { sessionId: "x2", messages: [{ role: "user", content: "We launched the new onboarding flow today.", timestamp: "2026-04-20T10:00:00" }] });
  const day = await send("POST", "/f6b/recall", { query: "What happened last week?", referenceDate: "2026-04-14" });
  assert.equal(day.status, 200, JSON.stringify(day.body));
  for (const referenceDate of ["2026-04-14T09:30:00Z", "2026-04-14T09:30:00.123456", "2026-04-14T09:30", "2026-04-14T09:30Z", "2026-04-14T09:30:00+0200", "20260414T093000Z"]) {
    const r = await send("POST", "/f6b/recall", { query: "What happened last week?", referenceDate });
    assert.equal(r.status, 200, `${referenceDate}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.result.answer, day.body.result.answer, referenceDate);
  }
});

// http-api.mdx "Remember a memory": documented body -> "type": "instruction"
test("the documented remember example is an instruction, as its example response shows", async () => {
  const r = await send("POST", "/f7/remember", { content: "The user prefers concise answers.", sessionId: "chat-2026-04-21" });
  assert.equal(r.body.result.type, "instruction");
});

// how-agent-memory-works.mdx: "when a newer fact replaces an older one on the same topic, the old
// version is preserved but the latest surfaces in recall results"; "Instructions ... support
// supersession when updated"; the Workers types' list(): "Superseded versions are excluded."
// With the local defaults where a person lives and whom they work for are one topic whatever
// the name; a relation held to several at once ("I also work at Globex") is not replaced.
test("a newer fact of the same exclusive relation supersedes the older: listed alone, first in recall", async () => {
  const cases = [
    ["I live in Lisbon.", "I live in Berlin now.", "Where does the user live?", /Berlin/],
    ["I work at Acme.", "I now work at Globex.", "Where does the user work?", /Globex/],
  ];
  for (const [i, [older, newer, query, want]] of cases.entries()) {
    const p = `supersede-${i}`;
    await w.call(p, "ingest", [{ role: "user", content: older }], { sessionId: "one" });
    await w.call(p, "ingest", [{ role: "user", content: newer }], { sessionId: "two" });
    const listed = (await w.call(p, "list")).memories.map((m) => m.summary);
    assert.deepEqual(listed.length, 1, `${p}: ${JSON.stringify(listed)}`);
    assert.match(listed[0], want);
    const r = await w.call(p, "recall", query);
    assert.match(r.candidates[0]?.summary ?? "", want, `${p}: ${JSON.stringify(r.candidates.map((c) => c.summary))}`);
    const all = (await w.call(p, "list", { status: "all" })).memories;
    assert.equal(all.length, 2, `${p}: the old version is preserved`);
  }
  await w.call("also", "ingest", [{ role: "user", content: "I work at Acme." }], { sessionId: "one" });
  await w.call("also", "ingest", [{ role: "user", content: "I also work at Globex." }], { sessionId: "two" });
  assert.equal((await w.call("also", "list")).memories.length, 2, "one more employer, not another");
});

// get-summary.mdx (the older page) shows these under "## Active Tasks" and "## Instructions".
test("the summary example's tasks and instructions, remembered, are typed and summarized as shown", async () => {
  const expected = [
    ["task", "Investigating intermittent 500 errors on /users endpoint"],
    ["task", "Need to update README after refactoring"],
    ["instruction", "Use conventional commits: type: description"],
    ["instruction", "Database migrations require approval before execution"],
  ];
  for (const [, content] of expected) await w.call("summary-example", "remember", { content });
  const types = (await w.call("summary-example", "list")).memories.map((m) => [m.type, m.summary]).sort((a, b) => a[1].localeCompare(b[1]));
  assert.deepEqual(types, [...expected].sort((a, b) => a[1].localeCompare(b[1])));
  const { summary } = await w.call("summary-example", "getSummary");
  const section = (title) => summary.split(/\n(?=## )/).find((s) => s.startsWith(`## ${title}`)) ?? "";
  assert.match(section("Active Tasks"), /Investigating intermittent 500 errors/, summary);
  assert.match(section("Instructions"), /Database migrations require approval/, summary);
});

// workers-api.mdx, remember(): "The service classifies and summarizes automatically"; the
// Workers types' AgentMemoryMemory has `summary` ("Text summary.") beside `content` ("Memory text.").
test("remember of a long note answers a summary shorter than its content, and the content whole", async () => {
  const content = "The user is a senior data engineer based in Lisbon who works on the billing platform team. They maintain the nightly ETL jobs written in Python and Airflow, prefer PostgreSQL over MySQL for new services, and are migrating the invoicing pipeline from cron scripts to Workers. They asked that every pull request include a changelog entry and that deployment windows avoid Fridays.";
  const m = await w.call("long-note", "remember", { content });
  assert.equal(m.content, content);
  assert.ok(m.summary.length < content.length && content.startsWith(m.summary), JSON.stringify(m.summary));
  assert.equal(m.summary, "The user is a senior data engineer based in Lisbon who works on the billing platform team.");
  const r = await w.call("long-note", "recall", "Which days should deployment windows avoid?");
  assert.match(r.answer, /Fridays/, "recall answers from the content, not the summary");
});

// How-it-works: events are "anchored to a point in time"; the getSummary
// page lists "Deployed billing API v2.3.0 to production (April 15)" under
// Recent Events; the recall page asks "What happened last week?" with a
// referenceDate. An event is dated by the day its text names.
test("an event its text dates is dated that day: in the summary, and for a recall of the period it fell in", async () => {
  const today = new Date().toISOString().slice(0, 10);
  await w.call("dated-a", "ingest", [{ role: "user", content: "I deployed billing API v2.3.0 to production on April 15, 2026." }], { sessionId: "s" });
  const a = (await w.call("dated-a", "getSummary")).summary;
  assert.match(a, /\(2026-04-15\)/, a);
  assert.ok(!a.includes(`(${today})`), a);
  // A day named without its year is the one nearest the day it was said.
  await w.call("dated-b", "ingest", [{ role: "user", content: "I deployed billing API v2.3.0 to production on April 15.", timestamp: "2026-04-16T10:00:00.000Z" }], { sessionId: "s" });
  const b = (await w.call("dated-b", "getSummary")).summary;
  assert.match(b, /\(2026-04-15\)/, b);
  await w.call("dated-c", "ingest", [{ role: "user", content: "I deployed billing API v2.3.0 to production on April 15, 2026." }], { sessionId: "s1" });
  await w.call("dated-c", "ingest", [{ role: "user", content: "We launched the new onboarding flow today.", timestamp: "2026-04-28T10:00:00Z" }], { sessionId: "s2" });
  const r = await w.call("dated-c", "recall", "What happened last week?", { referenceDate: "2026-04-21" });
  assert.match(r.candidates[0].summary, /deployed/, JSON.stringify(r.candidates));
});

// How-it-works: "Events — Completed actions anchored to a point in time. Deployments,
// decisions, milestones." The ingest page's session example's "Deployed v2.3.0 to production
// successfully." and get-summary's "Completed migration from REST to GraphQL." name no day; each
// is anchored to when it was said, and listed and summed up as an event.
test("a completed action the docs give without a date is an event: listed by type and in Recent Events", async () => {
  await w.call("done-acts", "ingest", [
    { role: "user", content: "Deploy the API to production." },
    { role: "assistant", content: "Deployed v2.3.0 to production successfully." },
  ], { sessionId: "deployment-session-42" });
  await w.call("done-acts", "remember", { content: "Completed migration from REST to GraphQL." });
  await w.call("done-acts", "remember", { content: "We decided to use PostgreSQL for the new service." });
  const events = (await w.call("done-acts", "list", { type: "event" })).memories.map((m) => m.summary).join("\n");
  for (const done of [/Deployed v2\.3\.0 to production/, /Completed migration from REST to GraphQL/, /decided to use PostgreSQL/]) assert.match(events, done);
  const { summary } = await w.call("done-acts", "getSummary");
  const recent = summary.split(/\n(?=## )/).find((s) => s.startsWith("## Recent Events")) ?? "";
  assert.match(recent, /Deployed v2\.3\.0/, summary);
});

// The HTTP reference's examples run in order: ingest of the user's "I prefer concise answers."
// and remember of "The user prefers concise answers."; how-it-works: a new memory that "shares a
// topic key" with an existing one supersedes it. An agent remembers the user in the third person.
test("the user's own words and an agent's note of them in the third person are one topic: one stays active", async () => {
  await send("POST", "/f9/ingest", { messages: [{ role: "user", content: "I prefer concise answers." }], sessionId: "chat-1" });
  await send("POST", "/f9/remember", { content: "The user prefers concise answers." });
  const listed = await send("GET", "/f9/memories");
  const concise = listed.body.result.filter((m) => /concise answers/.test(m.summary));
  assert.equal(concise.length, 1, JSON.stringify(listed.body.result));
  assert.match(concise[0].summary, /The user prefers concise answers/);
});

// Ingest page, "Basic ingestion": the user's "I prefer dark mode and use VS
// Code." and the assistant's "Noted your preferences for dark mode and VS
// Code."; how-it-works: deduplication "checks for duplicates against both
// the current batch" and what is stored.
test("the ingest page's basic example keeps the user's two statements once each, not the assistant's echo of them", async () => {
  await w.call("echoed", "ingest", [
    { role: "user", content: "I prefer dark mode and use VS Code." },
    { role: "assistant", content: "Noted your preferences for dark mode and VS Code." },
  ]);
  const { memories } = await w.call("echoed", "list");
  assert.deepEqual(memories.map((m) => m.summary).sort(), ["User: I prefer dark mode.", "User: I use VS Code."]);
});

// How-it-works: "Tasks — ... active investigations and follow-ups".
test("a speaker's own investigation under way is a task", async () => {
  await w.call("investigating", "ingest", [{ role: "user", content: "I'm investigating intermittent 500 errors on the /users endpoint." }], { sessionId: "s" });
  const { memories } = await w.call("investigating", "list");
  assert.deepEqual(memories.map((m) => m.type), ["task"], JSON.stringify(memories));
});

// Ingest page: a conversation with nothing worth keeping creates no
// memories; one with a stated preference does. "I like tea." states one.
test("a short liking of the speaker's is a memory recall finds", async () => {
  await w.call("liking", "ingest", [{ role: "user", content: "I like tea." }], { sessionId: "s" });
  const r = await w.call("liking", "recall", "tea");
  assert.equal(r.count, 1, JSON.stringify(r));
  assert.match(r.candidates[0].summary, /I like tea/);
  await w.call("not-liking", "ingest", [{ role: "user", content: "I love it." }], { sessionId: "s" });
  assert.equal((await w.call("not-liking", "list")).memories.length, 0, "nothing said of what");
});

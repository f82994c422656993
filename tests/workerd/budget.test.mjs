// The isolate's memory budget (MEMORY_BUDGET_MB, core::resident) against
// the built Worker in workerd: every profile object of the Worker shares
// one Wasm memory, and what they keep between requests (turn directory,
// vector codes) is a cache over SQLite. With the budget at zero (nothing
// resident), at its default and unbounded, every answer is the same; a
// small budget evicts the least recently used profile; stats shows it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { cpSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker } from "./helpers.mjs";
import { restClient, waitFor } from "./reliability-support.mjs";

const TOKEN = "dev-token";
const NS = "budget";
const BUDGETS = { zero: { MEMORY_BUDGET_MB: "0" }, default: {}, unbounded: { MEMORY_BUDGET_MB: "100000" } };

const TOPICS = ["the staging cluster", "the billing service", "the mobile app", "the data warehouse", "the design system", "the search index"];
const FACTS = ["runs on port 5433", "moved to Oslo", "is owned by the platform team", "deploys every Thursday", "uses pnpm, not npm", "was rewritten in Rust"];
const PEOPLE = ["Ana", "Bruno", "Chen", "Dara"];

function conversation(s) {
  return {
    sessionId: `s${s}`,
    messages: Array.from({ length: 30 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: `${PEOPLE[(s + i) % 4]} said that ${TOPICS[(s * 7 + i) % 6]} ${FACTS[(s + i * 5) % 6]} as of week ${s}.`,
      timestamp: new Date(Date.UTC(2026, 0, 1 + s * 3, 9, i)).toISOString(),
    })),
  };
}

const QUESTIONS = [
  "Which port does the staging cluster run on?",
  "Who said the billing service moved to Oslo?",
  "What package manager does the mobile app use?",
  "When does the design system deploy?",
  "What was rewritten in Rust?",
  "What did Chen say about the data warehouse?",
];

async function drained(api, profile) {
  return waitFor(async () => {
    const s = await api.ok("GET", NS, profile, "/stats");
    return s.pendingJobs === 0 ? s : null;
  }, { timeoutMs: 60000, what: `${profile} drained` });
}

/** The writes whose answers depend on the directory: ingest, dedup, supersession, list by key. */
async function writeScript(api, profile) {
  const out = [];
  for (let s = 0; s < 8; s++) {
    const r = await api.ok("POST", NS, profile, "/ingest", { body: conversation(s) });
    out.push(["ingest", r.memoriesStored, r.memoriesSuperseded, r.memories.map((m) => [m.content, m.status, m.key ?? null])]);
  }
  for (const [content, key] of [
    ["The team's package manager is npm.", "team.package_manager"],
    ["The team's package manager is pnpm now.", "team.package_manager"],
    ["The team's package manager is pnpm now.", "team.package_manager"],
    ["The on-call rotation changes every Monday at nine.", "team.on_call"],
  ]) {
    const m = await api.ok("POST", NS, profile, "/remember", { body: { content, key } });
    out.push(["remember", m.content, m.status, Boolean(m.supersedes)]);
  }
  for (const key of ["team.package_manager", "team.on_call"]) {
    const page = await api.ok("GET", NS, profile, "/memories", { query: { key, status: "superseded" } });
    const active = await api.ok("GET", NS, profile, "/memories", { query: { key } });
    // List entries carry no content: their summaries (and ids' order) tell them apart.
    for (const m of [...page.memories, ...active.memories]) assert.equal(typeof m.summary, "string", `a ${key} entry has a summary`);
    out.push(["list", key, page.memories.map((m) => m.summary), active.memories.map((m) => m.summary)]);
  }
  return out;
}

/** A recall found the profile cold: the alarm builds its state right after; its stats once it has. */
async function warmed(api, profile) {
  return waitFor(async () => {
    const s = await api.ok("GET", NS, profile, "/stats");
    return s.residentBytes > 0 ? s : null;
  }, { timeoutMs: 30000, what: `${profile} warmed up by its alarm` });
}

/**
 * Waits for a positive sign that the profile's alarm has run since the
 * calls before: a remember's vector, which only the alarm's drain writes.
 * The alarm a cold recall asked for (to build the profile's state) rings
 * at once, so it is that alarm or an earlier one. The profile's stats then.
 */
async function alarmRan(api, profile) {
  const { vectors } = await api.ok("GET", NS, profile, "/stats");
  await api.ok("POST", NS, profile, "/remember", { body: { content: "The visitor badge printer sits in the lobby by the lifts." } });
  return waitFor(async () => {
    const s = await api.ok("GET", NS, profile, "/stats");
    return s.pendingJobs === 0 && s.vectors === vectors + 1 ? s : null;
  }, { timeoutMs: 30000, what: `${profile}'s alarm to run` });
}

async function recallScript(api, profile) {
  const out = [];
  for (const query of QUESTIONS) {
    const r = await api.ok("POST", NS, profile, "/recall", { body: { query, limit: 20 } });
    out.push(r.candidates.map((c) => [c.id, c.score]));
  }
  return out;
}

test("recall candidates, dedup, supersession and list by key answer the same with the budget at zero, at its default and unbounded", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-budget-"));
  const written = {};
  const recalled = {};
  try {
    // The writes, each on a fresh profile under each budget.
    for (const [name, vars] of Object.entries(BUDGETS)) {
      const w = await startWorker({ vars, persistDir: path.join(dir, `writes-${name}`) });
      try {
        const api = restClient(w, TOKEN);
        written[name] = await writeScript(api, "writes");
        await drained(api, "writes");
      } finally {
        await w.dispose();
      }
    }
    // The recalls: one profile written once, read under each budget.
    let w = await startWorker({ persistDir: path.join(dir, "reads") });
    try {
      await writeScript(restClient(w, TOKEN), "reads");
      await drained(restClient(w, TOKEN), "reads");
    } finally {
      await w.dispose();
    }
    // The zero budget reads a copy: its run writes one memory more (to see
    // its alarm run), which the other budgets' reads must not see.
    cpSync(path.join(dir, "reads"), path.join(dir, "reads-zero"), { recursive: true });
    for (const [name, vars] of Object.entries(BUDGETS)) {
      w = await startWorker({ vars, persistDir: path.join(dir, name === "zero" ? "reads-zero" : "reads") });
      try {
        const api = restClient(w, TOKEN);
        // The first round finds the profile cold (SQLite alone); the alarm
        // then builds its state if the budget allows, and the second round
        // reads it.
        const cold = await recallScript(api, "reads");
        if (name !== "zero") await warmed(api, "reads");
        recalled[name] = [cold, await recallScript(api, "reads")];
        // With a zero budget the alarm the cold recalls asked for must have
        // run (and refused to build anything) before "nothing resident" says anything.
        const s = name === "zero" ? await alarmRan(api, "reads") : await api.ok("GET", NS, "reads", "/stats");
        assert.ok(s.isolate && s.isolate.wasmMemoryBytes > 0, JSON.stringify(s));
        if (name === "zero") assert.equal(s.residentBytes, 0, "nothing resident with a zero budget");
        else assert.ok(s.residentBytes > 0, `${name}: the profile keeps its state (${s.residentBytes})`);
      } finally {
        await w.dispose();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.ok(written.default.some((r) => r[0] === "remember" && r[3]), "the script supersedes a memory");
  assert.ok(recalled.default[0].every((c) => c.length > 0), "every question finds candidates");
  for (const name of ["zero", "unbounded"]) {
    assert.deepEqual(written[name], written.default, `writes under budget ${name}`);
    assert.deepEqual(recalled[name], recalled.default, `recall under budget ${name}`);
  }
});

test("a small budget evicts the least recently used profile, a profile over it alone stays on SQLite; stats shows the isolate's figures", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-budget-"));
  try {
    // What each profile keeps, measured with no budget to speak of.
    let w = await startWorker({ vars: { MEMORY_BUDGET_MB: "100000" }, persistDir: dir });
    const kept = {};
    try {
      const api = restClient(w, TOKEN);
      for (const p of ["a", "b"]) {
        for (let s = 0; s < 6; s++) await api.ok("POST", NS, p, "/ingest", { body: conversation(s) });
        await drained(api, p);
        await api.ok("POST", NS, p, "/recall", { body: { query: QUESTIONS[0] } });
        kept[p] = (await warmed(api, p)).residentBytes;
      }
    } finally {
      await w.dispose();
    }
    assert.ok(kept.a > 0 && kept.b > 0, JSON.stringify(kept));
    // Capacities differ a little between a state built up and one read
    // back from its snapshot.
    const near = (x, y) => x > 0 && Math.abs(x - y) <= 0.1 * y;
    // A budget either fits, not both.
    const budget = Math.ceil(Math.max(kept.a, kept.b) * 1.25);
    assert.ok(budget < kept.a + kept.b);
    w = await startWorker({ vars: { MEMORY_BUDGET_MB: String(budget / 1048576) }, persistDir: dir });
    try {
      const api = restClient(w, TOKEN);
      await api.ok("POST", NS, "a", "/recall", { body: { query: QUESTIONS[0] } });
      const a = await warmed(api, "a");
      assert.ok(near(a.residentBytes, kept.a), `${a.residentBytes} vs ${kept.a}`);
      await api.ok("POST", NS, "b", "/recall", { body: { query: QUESTIONS[1] } });
      const b = await warmed(api, "b");
      assert.ok(near(b.residentBytes, kept.b), `${b.residentBytes} vs ${kept.b}`);
      const a2 = await api.ok("GET", NS, "a", "/stats");
      assert.equal(a2.residentBytes, 0, "a was evicted to make room for b");
      assert.ok(a2.isolate.evictions >= 1, JSON.stringify(a2.isolate));
      assert.equal(a2.isolate.residentProfiles, 1);
      assert.ok(a2.isolate.residentBytes <= a2.isolate.budgetBytes);
      assert.ok(a2.isolate.wasmMemoryBytes > a2.isolate.residentBytes);
      // The allocator's own counts: the resident state lives in the heap,
      // the heap in the Wasm memory.
      const i = a2.isolate;
      assert.ok(i.heapBlocks > 0 && i.heapLiveBytes >= i.residentBytes, JSON.stringify(i));
      assert.ok(i.heapPeakBytes >= i.heapLiveBytes && i.wasmMemoryBytes >= i.heapPeakBytes, JSON.stringify(i));
      // a answers again, from SQLite alone, and its alarm makes it
      // resident again (evicting b).
      const r = await api.ok("POST", NS, "a", "/recall", { body: { query: QUESTIONS[0] } });
      assert.ok(r.candidates.length > 0);
      assert.ok(near((await warmed(api, "a")).residentBytes, kept.a));
      assert.equal((await api.ok("GET", NS, "b", "/stats")).residentBytes, 0, "b was evicted for a");
    } finally {
      await w.dispose();
    }
    // A budget below a profile's estimated state: it never builds it, and
    // answers every recall from SQLite alone.
    w = await startWorker({ vars: { MEMORY_BUDGET_MB: String(Math.min(kept.a, kept.b) / 4 / 1048576) }, persistDir: dir });
    try {
      const api = restClient(w, TOKEN);
      const [first, ...rest] = QUESTIONS;
      assert.ok((await api.ok("POST", NS, "a", "/recall", { body: { query: first } })).candidates.length > 0);
      // Its first cold recall asks the alarm to build the state, which
      // refuses; the refusal is remembered through the recalls after it
      // (they hold nothing), so they do not ask again.
      await waitFor(async () => (await api.ok("GET", NS, "a", "/stats")).isolate.warmupsRefused === 1 || null, { timeoutMs: 30000, what: "a refused warmth" });
      for (const q of rest) assert.ok((await api.ok("POST", NS, "a", "/recall", { body: { query: q } })).candidates.length > 0);
      const s = await alarmRan(api, "a");
      assert.equal(s.residentBytes, 0, "over the budget alone: nothing resident");
      assert.equal(s.isolate.residentProfiles, 0);
      assert.equal(s.isolate.warmupsRefused, 1, `asked again after the refusal: ${JSON.stringify(s.isolate)}`);
    } finally {
      await w.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const LONG_QUERY = "When did I move to Oslo?";

/** Long turns of many distinct words (a profile whose words take far more than its counts say). */
function longConversation(s) {
  return {
    sessionId: `long${s}`,
    messages: Array.from({ length: 20 }, (_, i) => ({
      role: i % 2 ? "assistant" : "user",
      content: `I moved to Oslo in ${2000 + s * 20 + i}. ` + Array.from({ length: 400 }, (_, j) => `term${(s * 7919 + i * 104729 + j * 31) % 6000}`).join(" ") + "?",
      timestamp: new Date(Date.UTC(2026, 0, 1 + s, 9, i)).toISOString(),
    })),
  };
}

/**
 * Fills `profiles` with the same long turns in an isolate with no budget
 * to speak of, and warms (and so measures) the first alone: what its
 * state holds, and what its counts alone say (core::resident::estimate:
 * BYTES_PER_MESSAGE, BYTES_PER_MEMORY).
 */
async function longProfiles(dir, profiles) {
  const w = await startWorker({ vars: { MEMORY_BUDGET_MB: "100000" }, persistDir: dir });
  try {
    const api = restClient(w, TOKEN);
    for (const p of profiles) {
      for (let s = 0; s < 3; s++) await api.ok("POST", NS, p, "/ingest", { body: longConversation(s) });
      await drained(api, p);
    }
    await api.ok("POST", NS, profiles[0], "/recall", { body: { query: LONG_QUERY } });
    const s = await warmed(api, profiles[0]);
    for (const p of profiles.slice(1)) assert.equal((await api.ok("GET", NS, p, "/stats")).residentBytes, 0, `${p} was never warmed`);
    return { kept: s.residentBytes, counted: 520 * s.messages + 640 * s.memories };
  } finally {
    await w.dispose();
  }
}

/** A cold recall of `profile` in a new isolate of `budget` bytes: its stats once the alarm it asked for has run. */
async function coldRecallUnder(dir, budget, profile) {
  const w = await startWorker({ vars: { MEMORY_BUDGET_MB: String(budget / 1048576) }, persistDir: dir });
  try {
    const api = restClient(w, TOKEN);
    const r = await api.ok("POST", NS, profile, "/recall", { body: { query: LONG_QUERY } });
    assert.ok(r.candidates.length > 0, "answered from SQLite alone");
    return await alarmRan(api, profile);
  } finally {
    await w.dispose();
  }
}

test("an isolate expects a profile's state at what it last measured, not at what its counts say: one measured over the budget is never built", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-budget-"));
  try {
    // Long turns of many words hold far more than the row counts say.
    const { kept, counted } = await longProfiles(dir, ["m"]);
    assert.ok(counted < kept * 0.8, `the counts say ${counted} bytes, the state holds ${kept}: the test needs the counts under the budget`);
    // A new isolate, whose budget the state does not fit (its counts'
    // estimate does). Built from that estimate, the state was made whole
    // and evicted at once: the Wasm memory grew by it for nothing.
    const s = await coldRecallUnder(dir, kept * 0.8, "m");
    assert.equal(s.residentBytes, 0);
    assert.equal(s.isolate.evictions, 0, `the state was built and evicted: ${JSON.stringify(s.isolate)} (kept ${kept} bytes)`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("before its first measurement a profile of long turns is expected from the size of its texts, not its counts alone: one over the budget is never built", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-budget-"));
  try {
    // "m" warmed and so measured; "n", the same turns, never measured.
    const { kept, counted } = await longProfiles(dir, ["m", "n"]);
    // A budget the counts fit under and the state does not: its texts
    // (turns of ~3.6 KB) say it will not fit either.
    const budget = counted * 1.1;
    assert.ok(budget < kept * 0.8, `counts ${counted}, state ${kept}`);
    const s = await coldRecallUnder(dir, budget, "n");
    assert.equal(s.residentBytes, 0);
    assert.equal(s.isolate.evictions, 0, `built from its counts and evicted at once: ${JSON.stringify(s.isolate)} (state ${kept} bytes)`);
    assert.equal(s.isolate.warmupsRefused, 1, JSON.stringify(s.isolate));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a profile refused as too large and then wiped is judged by what it holds now: written again after its deletion, it is built at its next recall", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-budget-"));
  try {
    const { kept } = await longProfiles(dir, ["w"]);
    const w = await startWorker({ vars: { MEMORY_BUDGET_MB: String((kept * 0.5) / 1048576) }, persistDir: dir });
    try {
      const api = restClient(w, TOKEN);
      await api.ok("POST", NS, "w", "/recall", { body: { query: LONG_QUERY } });
      await waitFor(async () => (await api.ok("GET", NS, "w", "/stats")).isolate.warmupsRefused === 1 || null, { timeoutMs: 30000, what: "w refused warmth" });
      // Deleted, then written again: the write purges it first and lands
      // in an empty profile, small enough now. The refusal, remembered for
      // ten minutes, must not keep it cold.
      await api.ok("DELETE", NS, "w", "");
      await api.ok("POST", NS, "w", "/ingest", { body: conversation(0) });
      assert.ok((await api.ok("POST", NS, "w", "/recall", { body: { query: QUESTIONS[0] } })).candidates.length > 0);
      const s = await warmed(api, "w");
      assert.ok(s.residentBytes < kept * 0.5, `${s.residentBytes} of a ${kept * 0.5} budget`);
      assert.equal(s.isolate.warmupsRefused, 1, JSON.stringify(s.isolate));
    } finally {
      await w.dispose();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

/** Deterministic text of `bytes` bytes in sentences of five-letter words, nearly all new. */
function newWords(seed, bytes) {
  let x = seed >>> 0 || 1;
  const next = () => ((x ^= x << 13), (x ^= x >>> 17), (x ^= x << 5), (x >>> 0));
  const words = [];
  let n = 0;
  while (n < bytes) {
    let w = "";
    for (let i = 0; i < 5; i++) w += String.fromCharCode(97 + (next() % 26));
    words.push(words.length % 12 === 11 ? `${w}.` : w);
    n += 6;
  }
  return words.join(" ");
}

test("a warm profile's directory stays within the budget over an ingest of new words (identifiers, hashes): its text indexes turn off, recall answers from SQLite, the heap's peak stays near the budget", async () => {
  const budget = 4 * 1048576;
  const w = await startWorker({ vars: { MEMORY_BUDGET_MB: String(budget / 1048576) } });
  try {
    const api = restClient(w, TOKEN);
    await api.ok("POST", NS, "dump", "/ingest", { body: conversation(0) });
    await drained(api, "dump");
    await api.ok("POST", NS, "dump", "/recall", { body: { query: QUESTIONS[0] } });
    const before = await warmed(api, "dump");
    // 64 messages of 32 KB: 2 MiB of words, each a term of its own.
    const messages = Array.from({ length: 64 }, (_, i) => ({ role: "user", content: newWords(i + 1, 32 * 1024 - 1024) }));
    const probe = messages[63].content.split(" ")[3];
    await api.ok("POST", NS, "dump", "/ingest", { body: { sessionId: "dump", messages } });
    await drained(api, "dump");
    const r = await api.ok("POST", NS, "dump", "/recall", { body: { query: probe } });
    assert.ok(r.candidates.some((c) => c.summary.includes(probe)), `${probe}: ${JSON.stringify(r.candidates.map((c) => c.summary.slice(0, 40)))}`);
    const after = await api.ok("GET", NS, "dump", "/stats");
    const rise = after.isolate.heapPeakBytes - before.isolate.heapPeakBytes;
    console.log(`# heap peak rose ${(rise / 1048576).toFixed(1)} MiB over a 2 MiB ingest of new words; the profile keeps ${(after.residentBytes / 1048576).toFixed(1)} MiB (budget 4 MiB)`);
    assert.ok(after.residentBytes <= budget, `${after.residentBytes} kept`);
    // The ingest's own working memory (about three times its body) and
    // the directory's indexes up to the budget; unbounded, they took
    // ten times the text.
    assert.ok(rise < budget + 4 * 2 * 1048576, `the heap's peak rose ${rise} bytes`);
  } finally {
    await w.dispose();
  }
});

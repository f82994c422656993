// `make bench-multi`: many profiles in one workerd, as a deployment with a
// profile per user runs them. Every profile object of the Worker shares
// one Wasm linear memory, and what they keep between requests shares one
// budget (MEMORY_BUDGET_MB, core::resident). The BUILT Worker
// (build/ + src/entry.mjs) on loopback:
//   - MULTI_PROFILES (default 24) profiles, each one variant of the LoCoMo
//     development set (its 2,760 turns and the ~5k memories a rule-based
//     extraction makes of them; tests/bench/corpus.mjs), imported and
//     embedded;
//   - one profile of MULTI_BIG (default 100,000) memories, filled the same
//     way;
//   - workerd restarted on the same storage before serving (the fill's
//     bulk imports and embedding batches are an administrator's one-off;
//     serving starts from a fresh isolate, as after a deploy);
//   - every profile recalled in turn, round robin, MULTI_ROUNDS (default 2)
//     times, each recall timed over HTTP and classed by whether the
//     profile's state was resident before it (its `stats.residentBytes`).
// Prints the profiles and sizes, the Wasm memory's high-water mark (it
// never shrinks: `stats.isolate.wasmMemoryBytes`) while serving and
// during the fill, workerd's RSS,
// recall p50/p95 for resident profiles and for profiles just evicted,
// evictions and errors; writes multi.json and multi.md into BENCH_OUT
// (default docs/bench/multi).
// Not part of `make test`.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "../workerd/helpers.mjs";
import { pct, request, rss as processMemory, startOnOwnSocket, workerdPid } from "./client.mjs";
import { Corpus, loadLocomo, locomoPath } from "./corpus.mjs";

const PROFILES = Number(process.env.MULTI_PROFILES || 24);
const BIG = Number(process.env.MULTI_BIG || 100_000);
const ROUNDS = Number(process.env.MULTI_ROUNDS || 2);
/** Small profiles recalled again once warm, and how many times each. */
const WARM_PROFILES = 4;
const WARM_RECALLS = 5;
/** Recalls of the large profile after the rounds (cold: over the budget). */
const BIG_RECALLS = 20;
const BUDGET_MB = process.env.MEMORY_BUDGET_MB;
const OUT = path.resolve(ROOT, process.env.BENCH_OUT || "docs/bench/multi");
const AUTH = "Bearer dev-token";
const IMPORT_MEMORIES = 4000;

const log = (...a) => console.error("[bench-multi]", ...a);
const ms = (t0) => performance.now() - t0;
const mb = (b) => (b / 1048576).toFixed(1);

async function main() {
  const corpus = new Corpus(loadLocomo(locomoPath(ROOT)));
  const vars = { BENCH: "1", ...(BUDGET_MB !== undefined ? { MEMORY_BUDGET_MB: BUDGET_MB } : {}) };
  // The storage outlives each workerd; a restart is a new Miniflare on it.
  const persistDir = mkdtempSync(path.join(tmpdir(), "agent-memory-multi-"));
  let w;
  let origin;
  let pid;
  let ns;
  async function start() {
    if (w) await w.dispose();
    ({ w, origin } = await startOnOwnSocket({ vars, persistDir }));
    pid = workerdPid();
    ns = await w.miniflare.getDurableObjectNamespace("PROFILES", "agent-memory");
  }
  await start();
  const errors = [];
  let wasmHigh = 0;
  const base = (p) => `/accounts/bench/agent-memory/namespaces/multi/profiles/${p}`;
  async function http(p, method, route, body, type = "application/json") {
    const res = await request(`${origin}${base(p)}${route}`, {
      method,
      headers: { authorization: AUTH, ...(body === undefined ? {} : { "content-type": type }) },
      body: body === undefined ? undefined : type === "application/json" ? JSON.stringify(body) : body,
    });
    let v;
    try {
      v = JSON.parse(res.text);
    } catch {
      throw new Error(`${method} ${route}: ${res.status} ${res.text.slice(0, 200)}`);
    }
    if (!v.success) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(v.errors).slice(0, 300)}`);
    return v.result;
  }
  async function callDo(p, op, args = {}) {
    const name = `multi/${p}`;
    const body = JSON.stringify({ name, op, args });
    const res = await ns.get(ns.idFromName(name)).fetch("https://profile.internal/call", { method: "POST", body, headers: { "x-agent-memory-call-bytes": String(Buffer.byteLength(body)) } });
    const v = await res.json();
    if (v.error) throw new Error(`${op}: ${v.error.message}`);
    return v.ok;
  }
  async function stats(p) {
    const s = await http(p, "GET", "/stats");
    wasmHigh = Math.max(wasmHigh, s.isolate?.wasmMemoryBytes ?? 0);
    return s;
  }
  /** Imports `sessions` (corpus sessions) until `limit` memories, then embeds them. */
  async function fill(p, sessions, limit) {
    let have = 0;
    let mem = [];
    let msg = [];
    const flush = async () => {
      if (mem.length === 0) return;
      const header = { kind: "header", format: "agent-memory-export", version: 1 };
      await http(p, "POST", "/import", [header, ...msg, ...mem].map((r) => JSON.stringify(r)).join("\n") + "\n", "application/x-ndjson");
      have += mem.length;
      mem = [];
      msg = [];
    };
    for (const s of sessions) {
      if (have + mem.length >= limit) break;
      const take = s.memories.slice(0, limit - have - mem.length);
      const cited = new Set(take.flatMap((m) => m.sourceMessageIds));
      mem.push(...take);
      msg.push(...s.messages.filter((m) => cited.has(m.id)));
      if (mem.length >= IMPORT_MEMORIES) await flush();
    }
    await flush();
    for (let i = 0; i < 10000; i++) {
      const d = await callDo(p, "benchDrain", { limit: 2000 });
      if (d.left === 0) break;
    }
    return (await stats(p)).memories;
  }

  const t0 = performance.now();
  const sizes = {};
  // The large profile first: miniflare's binding proxy (the embedding
  // batches go through it) works with the first Miniflare of a process only.
  if (BIG > 0) {
    const stream = (function* () {
      for (let k = 100; ; k++) yield* corpus.sessions(k);
    })();
    sizes.big = await fill("big", stream, BIG);
    log(`filled big: ${sizes.big} memories; wasm ${mb(wasmHigh)} MB`);
  }
  for (let i = 0; i < PROFILES; i++) {
    sizes[`p${i}`] = await fill(`p${i}`, corpus.sessions(i), Infinity);
    if (i % 6 === 5) log(`filled ${i + 1}/${PROFILES} profiles; wasm ${mb(wasmHigh)} MB`);
  }
  const fillSec = ms(t0) / 1000;
  const fillHigh = wasmHigh;
  await start();
  wasmHigh = 0;

  // Round robin: each profile in turn, a question of its own each time.
  const questions = corpus.questions(PROFILES * ROUNDS + 2 * ROUNDS + 10, 1, 4242);
  const timings = { resident: { small: [], big: [] }, evicted: { small: [], big: [] } };
  let q = 0;
  const names = Object.keys(sizes);
  /** One recall of `p`, timed and classed by whether its state was in memory. */
  const timedRecall = async (p) => {
    const before = await stats(p);
    const t = performance.now();
    try {
      await http(p, "POST", "/recall", { query: questions[q++ % questions.length] });
    } catch (e) {
      errors.push(String(e.message).slice(0, 200));
      return;
    }
    timings[before.residentBytes > 0 ? "resident" : "evicted"][p === "big" ? "big" : "small"].push(ms(t));
  };
  for (let round = 0; round < ROUNDS; round++) {
    for (const p of names) await timedRecall(p);
    log(`round ${round + 1}: wasm ${mb(wasmHigh)} MB`);
  }
  // Warm recalls beside the cold ones: a few small profiles recalled again
  // once their alarm has built their state, and more cold recalls of the
  // large profile (over the budget alone: it never builds its state).
  async function warmed(p) {
    for (let i = 0; i < 100; i++) {
      if ((await stats(p)).residentBytes > 0) return true;
      await new Promise((r) => setTimeout(r, 50));
    }
    return false;
  }
  for (const p of names.filter((n) => n !== "big").slice(0, WARM_PROFILES)) {
    await timedRecall(p);
    if (!(await warmed(p))) errors.push(`${p} was not warmed up by its alarm`);
    for (let i = 0; i < WARM_RECALLS; i++) await timedRecall(p);
  }
  if (names.includes("big")) for (let i = 0; i < BIG_RECALLS; i++) await timedRecall("big");
  log(`warm recalls and more of the large profile: wasm ${mb(wasmHigh)} MB`);
  const last = await stats(names[0]);
  const rss = processMemory(pid);
  await w.dispose();
  rmSync(persistDir, { recursive: true, force: true });

  const summary = (xs) => ({ n: xs.length, p50: Number(pct(xs, 50).toFixed(1)), p95: Number(pct(xs, 95).toFixed(1)) });
  const result = {
    date: new Date().toISOString(),
    profiles: PROFILES,
    memoriesPerProfile: Math.round(names.filter((n) => n !== "big").reduce((a, n) => a + sizes[n], 0) / Math.max(1, PROFILES)),
    big: sizes.big ?? 0,
    rounds: ROUNDS,
    fillSeconds: Number(fillSec.toFixed(0)),
    budgetBytes: last.isolate?.budgetBytes,
    wasmHighWaterBytes: wasmHigh,
    wasmHighWaterDuringFillBytes: fillHigh,
    workerdRssBytes: rss.rss,
    workerdRssHighWaterBytes: rss.hwm,
    residentProfilesAtEnd: last.isolate?.residentProfiles,
    residentBytesAtEnd: last.isolate?.residentBytes,
    evictions: last.isolate?.evictions,
    errors: errors.length,
    errorSamples: errors.slice(0, 5),
    recall: {
      resident: { small: summary(timings.resident.small), big: summary(timings.resident.big) },
      evicted: { small: summary(timings.evicted.small), big: summary(timings.evicted.big) },
    },
  };
  mkdirSync(OUT, { recursive: true });
  writeFileSync(path.join(OUT, "multi.json"), JSON.stringify(result, null, 2) + "\n");
  const r = result.recall;
  const row = (what, s) => `| ${what} | ${s.n} | ${isNaN(s.p50) ? "-" : s.p50} | ${isNaN(s.p95) ? "-" : s.p95} |`;
  const md = [
    `# make bench-multi (${result.date})`,
    "",
    `${PROFILES} profiles of ~${result.memoriesPerProfile} memories and one of ${result.big}, in one workerd; budget ${mb(result.budgetBytes)} MB; ${ROUNDS} rounds of recall, round robin; then ${WARM_PROFILES} small profiles recalled ${WARM_RECALLS} more times each once their alarm had built their state, and the large one ${BIG_RECALLS} more times. A cold profile (evicted, or never warm) answers from SQLite alone; its alarm then builds its state if its estimate fits the budget (the large one's never does).`,
    "",
    "| measure | value |",
    "|---|---:|",
    `| Wasm memory high-water mark, serving | ${mb(wasmHigh)} MB |`,
    `| Wasm memory high-water mark, during the fill (bulk imports) | ${mb(fillHigh)} MB |`,
    `| workerd RSS (now / high-water) | ${mb(rss.rss)} / ${mb(rss.hwm)} MB |`,
    `| resident at the end | ${result.residentProfilesAtEnd} profiles, ${mb(result.residentBytesAtEnd)} MB |`,
    `| evictions | ${result.evictions} |`,
    `| errors | ${result.errors} |`,
    "",
    "| recall over HTTP | n | p50 ms | p95 ms |",
    "|---|---:|---:|---:|",
    row("warm (state in memory), ~5k memories", r.resident.small),
    row("cold (SQLite alone: just evicted), ~5k memories", r.evicted.small),
    row(`warm, ${result.big} memories`, r.resident.big),
    row(`cold (SQLite alone: over the budget), ${result.big} memories`, r.evicted.big),
    "",
  ].join("\n");
  writeFileSync(path.join(OUT, "multi.md"), md);
  console.log(md);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

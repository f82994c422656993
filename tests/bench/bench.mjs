// `make bench`: the BUILT Worker (build/ + src/entry.mjs) in workerd on
// loopback, one profile filled to each size N in turn, and per N:
//   ingest throughput  LoCoMo-style sessions through POST .../ingest
//                      (rule-based provider), messages per second
//   recall latency     p50/p95/p99 over varied LoCoMo questions, HTTP end
//                      to end on the Worker's own socket; the same questions
//                      through miniflare's entry worker; and recall inside
//                      the Durable Object
//   stages             each recall stage alone, inside the Durable Object
//   bare FTS5          one FTS5 query (bm25, top 10) on the same data,
//                      through the same path: the pipeline's overhead ratio
//   vector index       recall@10 of the local index against exact search
//   filtered recall    the same questions with a filter (core::filter): one
//                      agent of ten (agentId, indexed, ~10% of the memories)
//                      and priority >= 3 (not indexed, ~40%), p50/p95 and
//                      the ratio to the same questions unfiltered
//   storage, memory    stats.storageBytes, workerd RSS (/proc), Wasm memory
// HTTP: node:http on kept-alive connections (client.mjs) to the Worker's own
// socket in workerd (miniflare's unsafeDirectSockets), without the entry
// worker miniflare puts in front of every Worker for development (error
// pages, request rewriting: 0.5-0.8 ms a request here, docs/bench/path.md),
// which a deployed Worker does not have. Recall is also measured through
// that entry, on questions of its own interleaved with the others, and
// reported beside; ingest only on the Worker's socket.
// Fill: the bulk import route with generated NDJSON (memories + messages),
// then the vector index filled in batches (benchDrain). The Worker runs
// with BENCH=1, which enables the bench* operations (core::local::bench).
// Every memory carries metadata (corpus.mjs benchMetadata: agentId one of
// 10, userId one of 3, priority 0-4, from a hash of its id; an ingest call
// the same from its session id).
//
// Environment: BENCH_BUDGET_MB (the isolate's memory budget, default 200:
// one profile per isolate, its state held), BENCH_SIZES (default
// 1000,10000,100000), BENCH_QUERIES
// (default 250), BENCH_INGEST (messages per size, default 1000), LOCOMO,
// BENCH_OUT (default docs/bench), BENCH_VERBOSE=1.
import { existsSync, readFileSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "../workerd/helpers.mjs";
import { expectStatus, pct, request, rss, startOnOwnSocket, workerdPid } from "./client.mjs";
import { Corpus, benchMetadata, loadLocomo, locomoPath } from "./corpus.mjs";
import { writeReport } from "./report.mjs";
import { yardstick } from "./yardstick.mjs";

const SIZES = (process.env.BENCH_SIZES || "1000,10000,100000").split(",").map(Number).filter((n) => n > 0);
const QUERIES = Number(process.env.BENCH_QUERIES || 250);
/** Questions asked again on SQLite alone, beside the resident numbers. */
const LEAN_QUERIES = Number(process.env.BENCH_LEAN_QUERIES || 100);
const INGEST_MESSAGES = Number(process.env.BENCH_INGEST || 1000);
const STAGE_QUERIES = Math.min(60, QUERIES);
const STAGE_REPEAT = 5;
const VECTOR_QUERIES = 100;
const IMPORT_MEMORIES = 4000;
const OUT = path.resolve(ROOT, process.env.BENCH_OUT || "docs/bench");
const VERBOSE = process.env.BENCH_VERBOSE === "1";
const PROFILE = "bench";
const BASE = `/accounts/bench/agent-memory/namespaces/default/profiles/${PROFILE}`;
const AUTH = "Bearer dev-token";
// Ingest sessions come from variants far from the fill's, so they are new.
const INGEST_VARIANT0 = 5000;
// The filtered recalls: a selective filter on an indexed field (one agent
// of ten) and one on a field that is not indexed (two priorities of five).
const FILTERS = [
  ["agentId", { agentId: "agent-3" }, (m) => m?.agentId === "agent-3"],
  ["priority", { priority: { gte: 3 } }, (m) => typeof m?.priority === "number" && m.priority >= 3],
];
let callDo = null;
/** Runs the profile's background work (the alarm's drain) until none is left. */
async function drainAll() {
  for (let i = 0; i < 1000; i++) if ((await callDo("drain")).pending === 0) return;
}

const log = (...a) => console.error("bench:", ...a);
const ms = (t0) => performance.now() - t0;

const median = (xs) => pct(xs, 50);

async function main() {
  const load0 = os.loadavg();
  const yard0 = yardstick();
  const corpus = new Corpus(loadLocomo(locomoPath(ROOT)));
  log(`corpus: ${corpus.convs.length} conversations, ${corpus.turns} turns; sizes ${SIZES.join(", ")}`);
  // BENCH_STATE=dir keeps the Worker's storage there and resumes the fill
  // from it (for repeated runs); by default a temporary dir is removed.
  const stateDir = process.env.BENCH_STATE ? path.resolve(process.env.BENCH_STATE) : null;
  if (stateDir) mkdirSync(stateDir, { recursive: true });
  const progressFile = stateDir && path.join(stateDir, "bench-fill.json");
  // One profile per isolate, with a memory budget that holds its state
  // (core::resident; bench-multi measures many profiles under the
  // default budget).
  const vars = { BENCH: "1", MEMORY_BUDGET_MB: process.env.BENCH_BUDGET_MB || "200" };
  const { w, origin, entry } = await startOnOwnSocket({ vars, ...(stateDir ? { persistDir: stateDir } : {}) });
  const pid = workerdPid();
  log(`worker at ${origin} (its own socket; miniflare's entry at ${entry}), workerd pid ${pid ?? "unknown"}`);

  async function http(method, route, body, type = "application/json", at = origin) {
    const res = await request(`${at}${BASE}${route}`, {
      method,
      headers: { authorization: AUTH, ...(body === undefined ? {} : { "content-type": type }) },
      body: body === undefined ? undefined : type === "application/json" ? JSON.stringify(body) : body,
    });
    const text = res.text;
    let v;
    try {
      v = JSON.parse(text);
    } catch {
      throw new Error(`${method} ${route}: ${res.status} ${text.slice(0, 200)}`);
    }
    if (!v.success) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(v.errors).slice(0, 300)}`);
    return v.result;
  }
  // The bench ops have no REST route: they go straight to the profile's
  // Durable Object (miniflare's binding proxy), as the Worker would send them.
  const ns = await w.miniflare.getDurableObjectNamespace("PROFILES", "agent-memory");
  const stub = ns.get(ns.idFromName(`default/${PROFILE}`));
  callDo = async (name, args = {}) => {
    // An internal call says its size, as the Worker's do.
    const body = JSON.stringify({ name: `default/${PROFILE}`, op: name, args });
    const res = await stub.fetch("https://profile.internal/call", { method: "POST", body, headers: { "x-agent-memory-call-bytes": String(Buffer.byteLength(body)) } });
    const v = await res.json();
    if (v.error) throw new Error(`${name}: ${v.error.message}`);
    return v.ok;
  };

  const stats = () => http("GET", "/stats");
  const results = [];
  try {
    await measure(corpus, w, { origin, entry }, pid, http, stats, progressFile, results);
  } finally {
    await w.dispose();
  }
  const meta = {
    date: new Date().toISOString(),
    cpus: os.cpus().length,
    cpu: os.cpus()[0]?.model?.trim(),
    node: process.version,
    queries: QUERIES,
    // Other work on the machine inflates every latency: the load averages
    // (1, 5, 15 min) at the start and at the end of the run.
    loadStart: load0.map((x) => Number(x.toFixed(2))),
    loadEnd: os.loadavg().map((x) => Number(x.toFixed(2))),
    // How fast the machine was (yardstick.mjs, ms, lower is faster): at
    // the start and the end; each size has its own.
    yardstickStart: yard0,
    yardstickEnd: yardstick(),
    stageQueries: STAGE_QUERIES,
    stageRepeat: STAGE_REPEAT,
    // How the HTTP figures were taken (runs before this field: Node's fetch
    // through miniflare's entry worker).
    http: "node:http, kept-alive, the Worker's own socket",
  };
  console.log(writeReport(OUT, results, meta));
}

/** Fills the profile to each size in turn and measures it. */
async function measure(corpus, w, { origin, entry }, pid, http, stats, progressFile, results) {
  // The fill is one deterministic stream of sessions (variant 0, 1, ...);
  // `fill.done` counts the memories of it already imported. Each size is
  // filled up to N memories in all (ingest adds some between sizes).
  const fill = progressFile && existsSync(progressFile) ? JSON.parse(readFileSync(progressFile, "utf8")) : { done: 0, variant: 0, ingested: 0 };
  let variant = 0; // variants started so far
  const stream = corpus.stream(); // partly consumed from one size to the next
  let skip = fill.done;

  for (const N of SIZES) {
    log(`--- N = ${N}`);
    // 1. Fill to N memories: bulk import, then the vector index.
    let have = (await stats()).memories;
    let t0 = performance.now();
    let imported = 0;
    while (have < N) {
      let mem = [];
      let msg = [];
      while (mem.length < Math.min(IMPORT_MEMORIES, N - have)) {
        const { variant: v, session: s } = stream.next().value;
        variant = v + 1;
        if (skip > 0) {
          // Imported by an earlier run (BENCH_STATE).
          const n = Math.min(skip, s.memories.length);
          skip -= n;
          if (n === s.memories.length) continue;
          s.memories = s.memories.slice(n);
        }
        const room = Math.min(IMPORT_MEMORIES, N - have) - mem.length;
        const take = s.memories.slice(0, room);
        const cited = new Set(take.flatMap((m) => m.sourceMessageIds));
        mem.push(...take.map((m) => ({ ...m, metadata: benchMetadata(m.id) })));
        msg.push(...s.messages.filter((m) => cited.has(m.id)));
      }
      const header = { kind: "header", format: "agent-memory-export", version: 1, profile: `default/${PROFILE}`, exportedAt: new Date().toISOString() };
      const ndjson = [header, ...msg, ...mem].map((r) => JSON.stringify(r)).join("\n") + "\n";
      const rep = await http("POST", "/import", ndjson, "application/x-ndjson");
      have += mem.length;
      imported += rep.memories;
      fill.done += mem.length;
      if (progressFile) writeFileSync(progressFile, JSON.stringify(fill));
      if (VERBOSE) log(`imported ${have}/${N}`);
    }
    const importSec = ms(t0) / 1000;
    t0 = performance.now();
    let drained = 0;
    for (let i = 0; i < 10000; i++) {
      const d = await callDo("benchDrain", { limit: 2000 });
      drained += d.embedded;
      if (d.left === 0) break;
    }
    const embedSec = ms(t0) / 1000;
    log(`fill: ${imported} memories imported in ${importSec.toFixed(1)} s, ${drained} embedded in ${embedSec.toFixed(1)} s`);
    const st = await stats();

    const yard = yardstick();
    // 2. Recall: a cold first query (nothing resident: answered from
    // SQLite alone), the profile's state built (what the alarm does after
    // a cold recall), warm-up, then measured.
    const queries = corpus.questions(QUERIES, Math.max(1, variant), 1000 + N);
    await callDo("benchReset");
    t0 = performance.now();
    await http("POST", "/recall", { query: queries[0] });
    const coldMs = ms(t0);
    t0 = performance.now();
    await callDo("benchReset");
    const built = await callDo("benchWarm");
    const warmupMs = ms(t0);
    // Through miniflare's entry worker: questions of their own (the same
    // question a second time finds its pages warm and answers ~1 ms
    // sooner), each sent right after one on the Worker's own socket, so a
    // slower moment of the machine slows both.
    const entryQueries = corpus.questions(QUERIES, Math.max(1, variant), 2000 + N);
    for (const [i, q] of queries.slice(0, 10).entries()) {
      await http("POST", "/recall", { query: q });
      await http("POST", "/recall", { query: entryQueries[i] }, "application/json", entry);
    }
    const recall = [];
    const recallEntry = [];
    for (const [i, q] of queries.entries()) {
      let t = performance.now();
      await http("POST", "/recall", { query: q });
      recall.push(ms(t));
      t = performance.now();
      await http("POST", "/recall", { query: entryQueries[i] }, "application/json", entry);
      recallEntry.push(ms(t));
    }
    // Filtered: the same questions unfiltered and with each filter, a
    // question's three recalls one after another in an order that turns
    // with the question (none always first, none always right after the
    // same one), after uncounted ones of each kind. The ratio is to the
    // unfiltered recalls of this loop (same moment, same questions).
    const variants = [["unfiltered", undefined, null], ...FILTERS];
    const body = (q, filter) => (filter ? { query: q, filter } : { query: q });
    for (const q of queries.slice(0, 10)) for (const [, filter] of variants) await http("POST", "/recall", body(q, filter));
    const byFilter = Object.fromEntries(variants.map(([k]) => [k, { ms: [], candidates: 0, wrong: 0 }]));
    for (const [i, q] of queries.entries()) {
      for (let j = 0; j < variants.length; j++) {
        const [k, filter, passes] = variants[(i + j) % variants.length];
        const t = performance.now();
        const res = await http("POST", "/recall", body(q, filter));
        byFilter[k].ms.push(ms(t));
        byFilter[k].candidates += res.candidates.length;
        if (passes) byFilter[k].wrong += res.candidates.filter((c) => !passes(c.metadata)).length;
      }
    }
    // How many memories each filter lets through (list, paged).
    async function countPassing(filter) {
      let n = 0;
      let cursor;
      do {
        const qs = new URLSearchParams({ limit: "1000", filter: JSON.stringify(filter), ...(cursor ? { cursor } : {}) });
        const page = await http("GET", `/memories?${qs}`);
        n += page.memories.length;
        cursor = page.cursor;
      } while (cursor);
      return n;
    }
    const unf = byFilter.unfiltered;
    const filtered = {
      queries: unf.ms.length,
      unfiltered: { p50: median(unf.ms), p95: pct(unf.ms, 95), candidates: unf.candidates / unf.ms.length },
    };
    for (const [k, filter] of FILTERS) {
      const b = byFilter[k];
      filtered[k] = {
        filter,
        p50: median(b.ms),
        p95: pct(b.ms, 95),
        ratio: median(b.ms) / median(unf.ms),
        ratioP95: pct(b.ms, 95) / pct(unf.ms, 95),
        passing: await countPassing(filter),
        candidates: b.candidates / b.ms.length,
        wrong: b.wrong,
      };
    }
    if (Object.values(filtered).some((x) => x.wrong)) throw new Error(`a filtered recall returned memories its filter excludes: ${JSON.stringify(filtered)}`);

    // The same questions on SQLite alone (no directory, no vector codes in
    // memory: an evicted profile, or one over the memory budget), beside
    // the resident numbers above.
    await callDo("benchLean");
    const lean = [];
    const leanDo = [];
    for (const q of queries.slice(0, LEAN_QUERIES)) {
      let t = performance.now();
      await http("POST", "/recall", { query: q });
      lean.push(ms(t));
      t = performance.now();
      await callDo("recall", { query: q });
      leanDo.push(ms(t));
    }
    await callDo("benchWarm");
    // The same path with nothing to do, and one bare FTS5 query.
    const ping = [];
    const fts = [];
    const doRecall = [];
    for (const q of queries) {
      let t = performance.now();
      await callDo("benchPing");
      ping.push(ms(t));
      t = performance.now();
      await callDo("recall", { query: q });
      doRecall.push(ms(t));
      t = performance.now();
      await callDo("benchFts", { query: q });
      fts.push(ms(t));
    }
    const httpPing = [];
    const entryPing = [];
    for (let i = 0; i < 50; i++) {
      let t = performance.now();
      await expectStatus(`${origin}/health`);
      httpPing.push(ms(t));
      t = performance.now();
      await expectStatus(`${entry}/health`);
      entryPing.push(ms(t));
    }

    // 3. Stages inside the Durable Object: (rt(repeat=R) - rt(repeat=0)) / R.
    const stageNames = ["analyze", "embed", "key", "turns", "fts", "messages", "vector", "hyde", "fuse", "recall", "vectorIndex"];
    const stages = Object.fromEntries(stageNames.map((s) => [s, []]));
    const ftsInside = [];
    for (const q of queries.slice(0, STAGE_QUERIES)) {
      for (const s of stageNames) {
        let t = performance.now();
        await callDo("benchStage", { query: q, stage: s, repeat: 0 });
        const base = ms(t);
        t = performance.now();
        await callDo("benchStage", { query: q, stage: s, repeat: STAGE_REPEAT });
        stages[s].push(Math.max(0, (ms(t) - base) / STAGE_REPEAT));
      }
      for (const [name, opName] of [["shortlist", "benchShortlist"]]) {
        let t = performance.now();
        await callDo(opName, { query: q, repeat: 0 });
        const base = ms(t);
        t = performance.now();
        await callDo(opName, { query: q, repeat: STAGE_REPEAT });
        (stages[name] ||= []).push(Math.max(0, (ms(t) - base) / STAGE_REPEAT));
      }
      let t = performance.now();
      await callDo("benchFts", { query: q, repeat: 0 });
      const base = ms(t);
      t = performance.now();
      await callDo("benchFts", { query: q, repeat: STAGE_REPEAT });
      ftsInside.push(Math.max(0, (ms(t) - base) / STAGE_REPEAT));
    }

    // 4. Vector index quality: recall@10 against an exact scan.
    const vq = corpus.questions(VECTOR_QUERIES, Math.max(1, variant), 7000 + N);
    const vr = await callDo("benchVectorRecall", { queries: vq, k: 10 });
    const mem = await callDo("benchMemory");
    const proc = rss(pid);

    const yardIngest = yardstick();
    // 5. Ingest throughput on the filled profile (LoCoMo-style sessions),
    // after calls that are not counted (as recall is warmed up): the
    // first ingest of an instance compiles the rules' patterns.
    // Two uncounted calls, each with its background work drained: the
    // first drain after a fill writes what the fill left to it (the turn
    // directory's snapshot), and the next write after it is slow once
    // (50-80 ms here). The first call's time is reported as the cold call.
    let ingestColdMs = 0;
    for (const v of [1, 2]) {
      const warm = corpus.sessions(INGEST_VARIANT0 - v).next().value;
      t0 = performance.now();
      await http("POST", "/ingest", {
        sessionId: `warm-${N}-${warm.sessionId}`,
        messages: warm.messages.map((m) => ({ role: m.role, content: m.content, timestamp: m.timestamp })),
        metadata: benchMetadata(`warm-${N}-${warm.sessionId}`),
      });
      if (v === 1) ingestColdMs = ms(t0);
      await drainAll();
    }
    // The calls' requests are made before the clock starts: it measures
    // the service, not the corpus generator (~60-90 ms per 1,000
    // messages). Fresh variants every time (ingest is idempotent), bounded.
    const requests = [];
    let planned = 0;
    for (let k = INGEST_VARIANT0 + (fill.ingestVariant || 0); planned < INGEST_MESSAGES && k < INGEST_VARIANT0 + 100000; k++) {
      fill.ingestVariant = k - INGEST_VARIANT0 + 1;
      for (const s of corpus.sessions(k)) {
        if (planned >= INGEST_MESSAGES) break;
        const messages = s.messages.map((m) => ({ role: m.role, content: m.content, timestamp: m.timestamp }));
        requests.push({ sessionId: `ingest-${s.sessionId}`, messages, metadata: benchMetadata(`ingest-${s.sessionId}`) });
        planned += messages.length;
      }
    }
    // Full-text rows are written in batches; none waits when the clock
    // starts, and those of the timed calls are all written before it
    // stops, so the window pays exactly for its own.
    await callDo("benchIndexText");
    let ingested = 0;
    let ingestMemories = 0;
    const perCall = [];
    t0 = performance.now();
    for (const body of requests) {
      const t = performance.now();
      const rep = await http("POST", "/ingest", body);
      perCall.push({ ms: ms(t), n: body.messages.length });
      ingested += rep.messagesStored;
      ingestMemories += rep.memoriesStored;
    }
    // The background work the calls queued (embedding, vectors, the turn
    // directory, full-text rows) is part of ingesting: the clock stops
    // when it is done.
    const tCalls = ms(t0) / 1000;
    if (process.env.BENCH_DEBUG) log(`ingest calls ${perCall.length}: sum ${perCall.reduce((a, c) => a + c.ms, 0).toFixed(0)} ms; top ${perCall.map((c, i) => [c.ms, i]).sort((a, b) => b[0] - a[0]).slice(0, 8).map(([x, i]) => `${x.toFixed(0)}@${i}`).join(" ")}; all ${(tCalls * 1000).toFixed(0)} ms`);
    await drainAll();
    await callDo("benchIndexText");
    const ingestSec = ms(t0) / 1000;
    if (progressFile) writeFileSync(progressFile, JSON.stringify(fill));

    const row = {
      n: N,
      yardstick: { beforeRecall: yard, beforeIngest: yardIngest },
      memories: st.memories,
      messages: st.messages,
      vectors: st.vectors,
      storageBytes: st.storageBytes,
      fill: { importSec, embedSec },
      ingest: {
        messages: ingested,
        memories: ingestMemories,
        sec: ingestSec,
        callsSec: tCalls,
        perSec: ingested / ingestSec,
        callP50: median(perCall.map((c) => c.ms)),
        coldMs: ingestColdMs,
        msgsPerCall: ingested / perCall.length,
      },
      recall: {
        p50: median(recall),
        p95: pct(recall, 95),
        p99: pct(recall, 99),
        mean: recall.reduce((a, b) => a + b, 0) / recall.length,
        coldMs,
        warmupMs,
        stateBytes: built.directoryBytes + built.indexBytes,
        lean: { p50: median(lean), p95: pct(lean, 95), p99: pct(lean, 99), n: lean.length, doP50: median(leanDo), doP95: pct(leanDo, 95) },
        n: recall.length,
        entry: { p50: median(recallEntry), p95: pct(recallEntry, 95), p99: pct(recallEntry, 99) },
      },
      filtered,
      fts: { p50: median(fts), p95: pct(fts, 95), p99: pct(fts, 99), insideP50: median(ftsInside) },
      doRecall: { p50: median(doRecall), p95: pct(doRecall, 95), p99: pct(doRecall, 99) },
      ping: { p50: median(ping), http: median(httpPing), entry: median(entryPing) },
      stages: Object.fromEntries(Object.keys(stages).map((s) => [s, { p50: median(stages[s]), p95: pct(stages[s], 95) }])),
      vector: { recallAt10: vr.recall, queries: vr.queries, vectors: vr.vectors },
      memory: { workerdRss: proc.rss, workerdPeak: proc.hwm, wasmBytes: mem.wasmBytes, indexBytes: mem.indexBytes },
    };
    results.push(row);
    printRow(row);
  }
}

function printRow(r) {
  const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "-");
  const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "-");
  log(
    `N=${r.n}: recall p50 ${f(r.recall.p50)} p95 ${f(r.recall.p95)} p99 ${f(r.recall.p99)} ms (cold ${f(r.recall.coldMs, 0)}; ` +
      `SQLite alone p50 ${f(r.recall.lean.p50)} p95 ${f(r.recall.lean.p95)}; state built in ${f(r.recall.warmupMs, 0)} ms; ` +
      `through the entry p50 ${f(r.recall.entry.p50)} p95 ${f(r.recall.entry.p95)}); ` +
      `fts p50 ${f(r.fts.p50)} ms; ping ${f(r.ping.p50)} ms; ingest ${f(r.ingest.perSec, 0)} msg/s; ` +
      `vec recall@10 ${f(r.vector.recallAt10, 3)}; storage ${f(r.storageBytes / 1e6)} MB; rss ${f(r.memory.workerdRss / 1e6)} MB; ` +
      `wasm ${f(r.memory.wasmBytes / 1e6)} MB` +
      (r.filtered ? `; filtered recall p50 ${FILTERS.map(([k]) => `${k} ${f(r.filtered[k].p50)} ms (${f(r.filtered[k].ratio, 2)}×)`).join(", ")} vs ${f(r.filtered.unfiltered.p50)} unfiltered` : ""),
  );
  const fl = r.filtered;
  if (fl)
    log(
      `  filtered recall (${fl.queries} questions, each also unfiltered): unfiltered p50 ${f(fl.unfiltered.p50)} p95 ${f(fl.unfiltered.p95)} ms; ` +
        FILTERS.map(([k]) => `${JSON.stringify(fl[k].filter)} (${int(fl[k].passing)} of ${int(r.memories)}) p50 ${f(fl[k].p50)} p95 ${f(fl[k].p95)} ms, ${f(fl[k].ratio, 2)}× unfiltered p50`).join("; "),
    );
  log(`  stages p50 (ms): ${Object.entries(r.stages).map(([k, v]) => `${k} ${f(v.p50, 2)}`).join(", ")}; fts inside ${f(r.fts.insideP50, 2)}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

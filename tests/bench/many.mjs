// `make bench-many`: thousands of small profiles in one workerd, as a
// deployment with a profile per user (or per agent) runs them. Every
// profile object of the Worker shares one isolate and one Wasm linear
// memory, which never shrinks; what a profile keeps between requests is
// under one budget (MEMORY_BUDGET_MB, core::resident), and what it keeps
// outside that budget must not grow with the number of profiles served.
// The BUILT Worker (build/ + src/entry.mjs) on loopback:
//   - MANY_PROFILES (default 2,000) profiles, each given one small
//     conversation over `POST …/ingest` (MANY_MESSAGES, default 6, turns of
//     the LoCoMo development set) and then recalled once;
//   - every profile recalled again, in the same order, MANY_ROUNDS - 1
//     (default 2) more times: with more profiles than the budget holds,
//     each of these recalls finds its profile evicted (least recently used
//     goes first) and its state is built again after the response;
//   - then MANY_LARGE (default 4) ingests at the documented limits (500
//     messages of 32 KB) at once, a new profile each, over the published
//     route: what the isolate's largest requests add to a memory the
//     budget keeps full and the rounds have churned, and once their
//     background work has drained (or MANY_SETTLE_S, default 120, passed).
// Prints, every MANY_STEP (default 250) profiles, the Wasm memory's
// high-water mark (`stats.isolate.wasmMemoryBytes`), how many profiles
// the budget holds state for and their bytes, and the time per profile;
// writes many.md and many.json into BENCH_OUT (default docs/bench/many).
// Not part of `make test`.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "../workerd/helpers.mjs";
import { pct, request, rss as processMemory, startOnOwnSocket, workerdPid } from "./client.mjs";
import { Corpus, loadLocomo, locomoPath } from "./corpus.mjs";
import { ingestBody } from "./large.mjs";

const PROFILES = Number(process.env.MANY_PROFILES || 2000);
const MESSAGES = Number(process.env.MANY_MESSAGES || 6);
const STEP = Number(process.env.MANY_STEP || 250);
const ROUNDS = Number(process.env.MANY_ROUNDS || 3);
const LARGE = Number(process.env.MANY_LARGE ?? 4);
const SETTLE_S = Number(process.env.MANY_SETTLE_S || 120);
const BUDGET_MB = process.env.MEMORY_BUDGET_MB;
const OUT = path.resolve(ROOT, process.env.BENCH_OUT || "docs/bench/many");
const AUTH = "Bearer dev-token";

const log = (...a) => console.error("[bench-many]", ...a);
const mib = (b) => (b / 1048576).toFixed(1);

async function main() {
  const corpus = new Corpus(loadLocomo(locomoPath(ROOT)));
  const vars = BUDGET_MB !== undefined ? { MEMORY_BUDGET_MB: BUDGET_MB } : {};
  const { w, origin } = await startOnOwnSocket({ vars });
  const pid = workerdPid();
  const base = (p) => `/accounts/bench/agent-memory/namespaces/many/profiles/${p}`;
  async function http(p, method, route, body) {
    const res = await request(`${origin}${base(p)}${route}`, {
      method,
      headers: { authorization: AUTH, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const v = JSON.parse(res.text);
    if (!v.success) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(v.errors).slice(0, 300)}`);
    return v.result;
  }
  // Small conversations: MESSAGES turns of one session of the set each.
  const sessions = (function* () {
    for (let k = 0; ; k++) for (const s of corpus.sessions(k)) if (s.messages.length >= MESSAGES) yield s;
  })();
  const questions = corpus.questions(PROFILES, 1, 7);
  const rows = [];
  let high = 0;
  const sample = async (p, round, done, t0) => {
    const s = await http(p, "GET", "/stats");
    high = Math.max(high, s.isolate?.wasmMemoryBytes ?? 0);
    const row = {
      round,
      profiles: done,
      wasmMiB: Number(mib(s.isolate?.wasmMemoryBytes ?? 0)),
      residentProfiles: s.isolate?.residentProfiles ?? null,
      residentMiB: s.isolate?.residentBytes === undefined ? null : Number(mib(s.isolate.residentBytes)),
      evictions: s.isolate?.evictions ?? null,
      warmupsRefused: s.isolate?.warmupsRefused ?? null,
      heapLiveMiB: s.isolate?.heapLiveBytes === undefined ? null : Number(mib(s.isolate.heapLiveBytes)),
      heapPeakMiB: s.isolate?.heapPeakBytes === undefined ? null : Number(mib(s.isolate.heapPeakBytes)),
      heapBlocks: s.isolate?.heapBlocks ?? null,
      msPerProfile: Number(((performance.now() - t0) / STEP).toFixed(1)),
      rssMiB: Number(mib(processMemory(pid).rss)),
    };
    rows.push(row);
    log(JSON.stringify(row));
  };
  const recallMs = Array.from({ length: ROUNDS }, () => []);
  for (let round = 1; round <= ROUNDS; round++) {
    let t0 = performance.now();
    for (let i = 0; i < PROFILES; i++) {
      const p = `u${i}`;
      if (round === 1) {
        const s = sessions.next().value;
        const messages = s.messages.slice(0, MESSAGES).map((m) => ({ role: m.role, content: m.content, timestamp: m.timestamp }));
        await http(p, "POST", "/ingest", { sessionId: s.sessionId, messages });
      }
      const t = performance.now();
      await http(p, "POST", "/recall", { query: questions[i % questions.length] });
      recallMs[round - 1].push(performance.now() - t);
      if ((i + 1) % STEP === 0) {
        await sample(p, round, i + 1, t0);
        t0 = performance.now();
      }
    }
  }
  // The largest requests, into an isolate whose budget is full.
  let large = null;
  if (LARGE > 0) {
    const before = (await http("u0", "GET", "/stats")).isolate?.wasmMemoryBytes ?? 0;
    const bodies = Array.from({ length: LARGE }, (_, i) => ingestBody(`large-${i}`, 100 + i));
    const t = performance.now();
    const answers = await Promise.all(
      bodies.map((body, i) =>
        // Each on a connection of its own: at once, not one after another.
        request(`${origin}/client/v4/accounts/bench/agent-memory/namespaces/many/profiles/large-${i}/ingest`, {
          method: "POST",
          headers: { authorization: AUTH, "content-type": "application/json" },
          body,
          own: true,
        }),
      ),
    );
    const failed = answers.filter((a) => a.status !== 200).map((a) => `${a.status} ${a.text.slice(0, 200)}`);
    const after = await http("u0", "GET", "/stats");
    high = Math.max(high, after.isolate?.wasmMemoryBytes ?? 0);
    // Then their background work (the alarm's drain), up to SETTLE_S.
    const until = performance.now() + SETTLE_S * 1000;
    let pending = Infinity;
    while (pending > 0 && performance.now() < until) {
      await new Promise((r) => setTimeout(r, 500));
      pending = 0;
      for (let i = 0; i < LARGE; i++) pending += (await http(`large-${i}`, "GET", "/stats")).pendingJobs;
    }
    const settled = await http("u0", "GET", "/stats");
    high = Math.max(high, settled.isolate?.wasmMemoryBytes ?? 0);
    large = {
      ingests: LARGE,
      bodyMiB: Number(mib(Buffer.byteLength(bodies[0]))),
      wasmBeforeMiB: Number(mib(before)),
      wasmAfterMiB: Number(mib(after.isolate?.wasmMemoryBytes ?? 0)),
      settledMiB: Number(mib(settled.isolate?.wasmMemoryBytes ?? 0)),
      jobsLeft: pending,
      residentMiB: Number(mib(settled.isolate?.residentBytes ?? 0)),
      waits: after.isolate?.workingSetWaits ?? null,
      seconds: Number(((performance.now() - t) / 1000).toFixed(1)),
      failed,
    };
    log(JSON.stringify(large));
  }
  const stats = await http("u0", "GET", "/stats");
  await w.dispose();
  const summary = {
    profiles: PROFILES,
    messagesPerProfile: MESSAGES,
    budgetMiB: stats.isolate?.budgetBytes === undefined ? null : Number(mib(stats.isolate.budgetBytes)),
    wasmHighMiB: Number(mib(high)),
    large,
    recall: recallMs.map((xs, i) => ({ round: i + 1, p50: Number(pct(xs, 50).toFixed(1)), p95: Number(pct(xs, 95).toFixed(1)) })),
    rows,
  };
  mkdirSync(OUT, { recursive: true });
  writeFileSync(path.join(OUT, "many.json"), JSON.stringify(summary, null, 2) + "\n");
  writeFileSync(path.join(OUT, "many.md"), report(summary));
  log(JSON.stringify({ ...summary, rows: undefined }));
}

/** The summary as the markdown page docs/bench/many/many.md. */
function report(s) {
  const lines = [
    `# make bench-many (${new Date().toISOString()})`,
    "",
    `Command: \`make bench-many\` (tests/bench/many.mjs${process.env.MANY_PROFILES ? `, MANY_PROFILES=${PROFILES}` : ""}${process.env.MANY_ROUNDS ? `, MANY_ROUNDS=${ROUNDS}` : ""}${BUDGET_MB !== undefined ? `, MEMORY_BUDGET_MB=${BUDGET_MB}` : ""}). The built Worker in one workerd (local, miniflare).`,
    `${s.profiles} profiles, each given ${s.messagesPerProfile} turns of one LoCoMo development session over \`POST …/ingest\` and recalled once (round 1), then recalled again ${ROUNDS - 1} more times in the same order, round robin.`,
    `The isolate's budget for what profiles keep between requests: ${s.budgetMiB} MiB. Wasm memory: the linear memory's size (\`stats.isolate.wasmMemoryBytes\`; it never shrinks, so it is the high-water mark). MiB throughout.`,
    "",
    "Heap live and heap peak: what the allocator has handed out now, and the most at once so far (`heapLiveBytes`, `heapPeakBytes`); the Wasm memory beside the peak is what fragmentation and the allocator's bookkeeping cost.",
    "",
    "| round | profiles served | Wasm memory | heap live | heap peak | heap blocks | profiles warm | what they keep | evictions | ms per profile | workerd RSS |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...s.rows.map((r) => `| ${r.round} | ${r.profiles} | ${r.wasmMiB} | ${r.heapLiveMiB} | ${r.heapPeakMiB} | ${r.heapBlocks} | ${r.residentProfiles} | ${r.residentMiB} | ${r.evictions} | ${r.msPerProfile} | ${r.rssMiB} |`),
    "",
    "| round | recall p50 | recall p95 |",
    "|---:|---:|---:|",
    ...s.recall.map((r) => `| ${r.round} | ${r.p50} ms | ${r.p95} ms |`),
    "",
  ];
  if (s.large) {
    const l = s.large;
    lines.push(
      `Then ${l.ingests} ingests of 500 x 32 KB (${l.bodyMiB} MiB each) at once, a new profile each, over the published route: Wasm memory ${l.wasmBeforeMiB} -> ${l.wasmAfterMiB} MiB at their responses, ${l.settledMiB} MiB once their background work had drained${l.jobsLeft > 0 ? ` (${l.jobsLeft} jobs left)` : ""}; ${l.seconds} s; requests that waited for room since the start: ${l.waits}; ${l.failed.length === 0 ? "all answered 200" : `failed: ${l.failed.join("; ")}`}.`,
      "",
    );
  }
  lines.push(`High-water mark over the run: ${s.wasmHighMiB} MiB (Cloudflare's isolate limit is 128 MB).`, "");
  return lines.join("\n");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

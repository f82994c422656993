// Many profiles consolidating on their alarms in one workerd: fill (no schedule),
// then a fresh isolate with CONSOLIDATE_EVERY=1000 (rules, or a delayed model) and one
// import per profile to wake its alarm; Wasm memory measured at each phase.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker, restClient, importLines, memoryLine, hexId, stats, drained, waitFor, mb, DAY, TOKEN, sleep } from "./lib.mjs";
import { startModel } from "../../workerd/standins/consolidation-model.mjs";
const P = Number(process.env.P || 16), N = Number(process.env.N || 1000), SIZE = Number(process.env.SIZE || 8000);
const MODE = process.env.MODE || "rules", DELAY = Number(process.env.DELAY || 1000), VOCAB = Number(process.env.VOCAB || 20000);
const DUP = Number(process.env.DUP || 0.5); // share of memories that are a near copy of the previous one
const NS = "rcm";
import { cpSync } from "node:fs";
const dir = mkdtempSync(path.join(tmpdir(), "rc-many-"));
if (process.env.DIR) cpSync(process.env.DIR, dir, { recursive: true });
const SYL = "ba be bi bo bu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu".split(" ");
const vocab = []; { let x = 12345; const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0), x >>> 8); for (let i = 0; i < VOCAB; i++) { const k = 2 + (rnd() % 3); let s = ""; for (let j = 0; j < k; j++) s += SYL[rnd() % SYL.length]; vocab.push(s); } }
function zipf(n, seed) { let x = (Math.imul(seed + 3, 2654435761)) >>> 0; const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0), (x >>> 8) / 16777216); let s = ""; while (s.length < n) { const r = Math.floor(Math.pow(VOCAB, rnd())) - 1; s += vocab[Math.min(VOCAB - 1, r)] + (rnd() < 0.08 ? ". " : " "); } return s.slice(0, n).trim() + "."; }
const log = (...a) => console.log(new Date().toISOString().slice(11, 19), ...a);
let model;
const peak = (s) => `wasm ${mb(s.isolate.wasmMemoryBytes)} MiB, heapPeak ${mb(s.isolate.heapPeakBytes)}, resident ${mb(s.isolate.residentBytes)}`;
try {
  if (!process.env.DIR) {
    const w = await startWorker({ persistDir: dir });
    const api = restClient(w, TOKEN);
    const at = new Date(Date.now() - 3 * DAY).toISOString();
    const per = Math.max(1, Math.floor(7.4e6 / (SIZE + 300)));
    let k = 0;
    await Promise.all(Array.from({ length: 2 }, async () => { for (;;) { const p = k++; if (p >= P) return; const lines = []; let prev = "";
      for (let i = 0; i < N; i++) { const c = i % 2 === 1 && (i * 7919 % 100) < DUP * 200 ? "Also noted: " + prev : zipf(SIZE - 20, p * 100000 + i); prev = c; lines.push(memoryLine({ id: hexId(0x1000 + i), content: c, createdAt: at, updatedAt: at, validFrom: at })); }
      for (let i = 0; i < N; i += per) await importLines(api, NS, `p${p}`, lines.slice(i, i + per)); } }));
    for (let p = 0; p < P; p++) await drained(api, NS, `p${p}`, 600000);
    log("filled", P, "x", N, "x", SIZE, peak(await stats(api, NS, "p0")));
    await w.dispose();
    if (process.env.FILLONLY) { console.log("filled into", dir); process.exit(0); }
  }
  // EVERY=off: no consolidation (WAKEN memories a wake: the drains alone).
  const vars = process.env.EVERY === "off" ? {} : { CONSOLIDATE_EVERY: process.env.EVERY || "1000" };
  if (process.env.WS_MB) vars.MEMORY_WORKING_SET_MB = process.env.WS_MB;
  if (MODE === "model") { model = await startModel(); model.st.delayMs = DELAY; Object.assign(vars, { LLM_PROVIDER: "openai", OPENAI_BASE_URL: model.baseUrl, OPENAI_MODEL: "m" }); }
  const w = await startWorker({ persistDir: dir, vars });
  const api = restClient(w, TOKEN);
  log("fresh isolate", peak(await stats(api, NS, "probe")));
  const t0 = Date.now();
  let fails = 0;
  const WAKE = Number(process.env.WAKE || P);
  const WAKEN = Number(process.env.WAKEN || 1);
  const note = (p, i) => (WAKEN === 1 ? "A wake-up note." : zipf(Math.min(SIZE, 2000), 7_000_000 + p * 1000 + i));
  await Promise.all(Array.from({ length: WAKE }, async (_, p) => { try { await importLines(api, NS, `p${p}`, Array.from({ length: WAKEN }, (_, i) => memoryLine({ id: hexId(0x900000 + i), content: note(p, i), createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(), validFrom: new Date().toISOString() }))); } catch (e) { fails++; log("wake", p, e.message.slice(0, 200)); } }));
  let maxWasm = 0, maxLat = 0, stop = false;
  const poller = (async () => { while (!stop) { const t = Date.now(); try { const s = await stats(api, NS, "probe"); maxWasm = Math.max(maxWasm, s.isolate.wasmMemoryBytes); } catch {} maxLat = Math.max(maxLat, Date.now() - t); await sleep(500); } })();
  const res = [];
  for (let p = 0; p < WAKE; p++) res.push(await drained(api, NS, `p${p}`, 1800000));
  stop = true; await poller;
  const s = await stats(api, NS, "probe");
  log("consolidated in", Date.now() - t0, "ms", peak(s), "wake failures", fails, "slowest stats of an idle profile meanwhile", maxLat, "ms");
  log("per profile active", res.map((r) => r.byStatus.active).join(","), "parked", res.map((r) => r.parkedJobs).reduce((a, b) => a + b), "drainErrors", res.filter((r) => r.drainError).length, model ? `model calls ${model.st.calls}` : "");
  await w.dispose();
} finally { if (model) await model.close(); if (!process.env.KEEP && !process.env.FILLONLY) rmSync(dir, { recursive: true, force: true }); else console.log("kept", dir); }

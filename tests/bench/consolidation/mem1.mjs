// One profile: N memories of SIZE bytes as near-duplicate pairs; measure the Wasm memory
// before and after consolidation (explicit or alarm with CONSOLIDATE_EVERY).
import { startWorker, restClient, importLines, memoryLine, prose, hexId, stats, drained, mb, DAY, TOKEN, sleep } from "./lib.mjs";
const N = Number(process.env.N || 1000), SIZE = Number(process.env.SIZE || 30000), ALARM = process.env.ALARM === "1";
const PAIR = process.env.PAIR !== "0";
const VOCAB = Number(process.env.VOCAB || 0);
const ENG = "the of and to in is was for on that with as by at from it this be are or an have has not but which you all were they we their one there been if more when will would who so no out up into them can only other new some could time these two may then do first any my now such like our over man me even most made after also did many before must through back years where much your way well down should because each just those people how too little state good very make world still own see men work long get here between both life being under never day same another know while last might us great old year off come since against go came right used take three".split(" ");
function english(n, seed) { let x = (Math.imul(seed + 7, 2654435761)) >>> 0; const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0), x >>> 8); let s = ""; while (s.length < n) { const r = rnd(); s += (r % 3 === 0 ? "w" + (rnd() % VOCAB).toString(36) : ENG[rnd() % ENG.length]) + " "; } return s.slice(0, n).trim() + "."; }
const gen = (n, seed) => VOCAB ? english(n, seed) : prose(n, seed);
const NS = "rc";
const w = await startWorker({ vars: ALARM ? { CONSOLIDATE_EVERY: String(N) } : {} });
const api = restClient(w, TOKEN);
const t0 = Date.now();
try {
  const at = new Date(Date.now() - 10 * DAY).toISOString();
  const lines = [];
  for (let i = 0; i < N; i++) {
    const base = gen(SIZE - 20, PAIR ? Math.floor(i / 2) : i);
    const content = PAIR && i % 2 ? "Also recorded: " + base : base;
    lines.push(memoryLine({ id: hexId(0x1000 + i), content, createdAt: at, updatedAt: at, validFrom: at }));
  }
  const per = Math.max(1, Math.floor(7.5e6 / SIZE));
  for (let i = 0; i < N; i += per) await importLines(api, NS, "p", lines.slice(i, i + per));
  let s = await drained(api, NS, "p");
  console.log("imported", N, "x", SIZE, "in", Date.now() - t0, "ms; active", s.byStatus.active, "wasm", mb(s.isolate.wasmMemoryBytes), "heapPeak", mb(s.isolate.heapPeakBytes), "heapLive", mb(s.isolate.heapLiveBytes));
  const t1 = Date.now();
  if (!ALARM) {
    const r = await api.send("POST", NS, "p", "/consolidate", { body: { maxWindows: Number(process.env.W || 1) } });
    console.log("call ms", Date.now() - t1, "wasm now", mb((await stats(api, NS, "p")).isolate.wasmMemoryBytes));
    console.log("consolidate", r.status, r.status === 200 ? JSON.stringify({ ...r.body.result, actions: r.body.result.actions.length }) : r.text.slice(0, 500));
  }
  s = await drained(api, NS, "p");
  console.log("after", Date.now() - t1, "ms: active", s.byStatus.active, "memories", s.memories, "parked", s.parkedJobs, "failed", s.failedJobs, "drainError", s.drainError, "wasm", mb(s.isolate.wasmMemoryBytes), "heapPeak", mb(s.isolate.heapPeakBytes), "heapLive", mb(s.isolate.heapLiveBytes));
} finally {
  await w.dispose();
}

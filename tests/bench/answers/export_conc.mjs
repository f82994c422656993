// K concurrent GET export of profiles c0..c15 (250 memories x ~36 KB each), and one export of big0 (1000 memories).
import { start, req, mb, STATE } from "./lib.mjs";
const K = Number(process.env.K || 16), PROF = process.env.PROF;
const rt = await start({}, STATE);
const before = await rt.iso();
const t = performance.now();
const rs = await Promise.all(Array.from({ length: K }, (_, i) => req(rt.base(PROF || "c" + (i % 16)) + "/export").catch((e) => ({ status: "ERR " + e.message, bytes: 0, text: "" }))));
const after = await rt.iso();
const st = {}; for (const r of rs) st[r.status] = (st[r.status] || 0) + 1;
console.log(`export K=${K} ${PROF || "c*"}: ${JSON.stringify(st)} ${mb(rs[0].bytes)} MiB each, ${((performance.now() - t) / 1000).toFixed(1)}s; wasm ${mb(before.wasmMemoryBytes)} -> ${mb(after.wasmMemoryBytes)} MiB; heapPeak ${mb(after.heapPeakBytes)}; rss hwm ${mb(rt.rss().hwm)}`);
for (const r of rs) if (r.status !== 200) { console.log(String(r.text).slice(0, 300)); break; }
await rt.dispose();

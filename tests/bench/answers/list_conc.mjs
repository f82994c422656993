// K concurrent GET memories?limit=250 to K different profiles (big2..), each page ~8.7 MiB (one alone: mark ~35 MiB original, ~70 published).
// Reports the Wasm mark, statuses, and RSS. SLOW=ms: clients pause reading that long.
import { start, req, mb, STATE } from "./lib.mjs";
const pub = process.env.DIALECT === "pub";
const K = Number(process.env.K || 8), SLOW = Number(process.env.SLOW || 0), LIMIT = Number(process.env.LIMIT || 250);
const rt = await start({}, STATE);
const before = await rt.iso();
const t = performance.now();
const rs = await Promise.all(Array.from({ length: K }, (_, i) => req(rt.base("c" + (i % 16), pub) + "/memories?limit=" + LIMIT, { readSlow: SLOW }).catch((e) => ({ status: "ERR " + e.message, bytes: 0 }))));
const after = await rt.iso();
const st = {}; for (const r of rs) st[r.status] = (st[r.status] || 0) + 1;
console.log(`K=${K} limit=${LIMIT} ${pub ? "pub" : "orig"} slow=${SLOW}: statuses ${JSON.stringify(st)} body ${mb(rs[0].bytes)} MiB each, ${((performance.now() - t) / 1000).toFixed(1)}s; wasm ${mb(before.wasmMemoryBytes)} -> ${mb(after.wasmMemoryBytes)} MiB; heapPeak ${mb(after.heapPeakBytes)}; workingSetWaits ${after.workingSetWaits}; rss hwm ${mb(rt.rss().hwm)}`);
for (const r of rs) if (r.status !== 200) { console.log(String(r.text).slice(0, 300)); break; }
await rt.dispose();

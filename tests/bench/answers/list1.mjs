// One GET memories?limit=1000 of a profile of 1000 x ~36 KB memories; Wasm mark before/after. DIALECT=pub for /client/v4.
import { start, req, mb, STATE } from "./lib.mjs";
const pub = process.env.DIALECT === "pub";
const rt = await start({}, STATE);
const before = (await rt.iso()).wasmMemoryBytes;
const t = performance.now();
const r = await req(rt.base("big0", pub) + "/memories?limit=1000");
const after = await rt.iso();
console.log(`list ${pub ? "published" : "original"}: status ${r.status} bytes ${mb(r.bytes)} MiB in ${((performance.now() - t) / 1000).toFixed(1)}s; wasm ${mb(before)} -> ${mb(after.wasmMemoryBytes)} MiB; heapPeak ${mb(after.heapPeakBytes)}; rss hwm ${mb(rt.rss().hwm)}`);
if (r.status !== 200) console.log(r.text.slice(0, 300));
await rt.dispose();

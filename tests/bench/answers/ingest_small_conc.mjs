// K concurrent ingests of just under the working-set floor (SIZE bytes, default 250 KB: 8 messages of ~31 KB prose)
// to K NEW profiles (first write: catalog registration awaited while the prepared call is held). Working set takes no room.
import { start, req, mb, text } from "./lib.mjs";
const K = Number(process.env.K || 64), SIZE = Number(process.env.SIZE || 250000), ROUNDS = Number(process.env.ROUNDS || 1);
const rt = await start({});
const before = await rt.iso();
const per = Math.floor((SIZE - 200) / 8);
const body = (k) => JSON.stringify({ sessionId: "s" + k, messages: Array.from({ length: 8 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: ("My name is Alex and I live in Paris. I work at Acme as an engineer. " + text(per, k * 10 + i)).slice(0, Math.min(per, 32700)) })) });
const t = performance.now(); const st = {}; let sample = ""; const marks = [];
for (let round = 0; round < ROUNDS; round++) {
  const rs = await Promise.all(Array.from({ length: K }, (_, k) => req(rt.base(`n${round}_${k}`) + "/ingest", { method: "POST", body: body(round * K + k) }).catch((e) => ({ status: "ERR " + e.message, text: "" }))));
  for (const r of rs) { st[r.status] = (st[r.status] || 0) + 1; if (r.status !== 200 && !sample) sample = String(r.text).slice(0, 300); }
  marks.push(mb((await rt.iso()).wasmMemoryBytes));
}
const after = await rt.iso();
console.log(`small ingests K=${K} x ${ROUNDS} body ${mb(body(0).length)} MiB: ${JSON.stringify(st)} ${((performance.now() - t) / 1000).toFixed(1)}s; wasm ${mb(before.wasmMemoryBytes)} -> ${mb(after.wasmMemoryBytes)} MiB (per round ${marks.join(",")}); heapPeak ${mb(after.heapPeakBytes)}; heapLive after ${mb(after.heapLiveBytes)}; resident ${mb(after.residentBytes)} in ${after.residentProfiles}; waits ${after.workingSetWaits}; rss hwm ${mb(rt.rss().hwm)}`);
if (sample) console.log(sample);
await rt.dispose();

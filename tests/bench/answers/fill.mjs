// Fills profiles big0..big{P-1} in persist dir STATE (lib.mjs) with N remembered memories of ~32 KB content + ~3.6 KB metadata each.
import { start, req, text, mb, STATE } from "./lib.mjs";
const P0 = Number(process.env.P0 || 0), P = Number(process.env.P || 1), N = Number(process.env.N || 1000), C = 8;
const rt = await start({}, STATE);
const meta = (i) => Object.fromEntries([0,1,2,3,4,5,6].map((k) => ["k" + k, String(i) + "m".repeat(490)]));
const t1 = performance.now(); let bad = 0;
for (let p = P0; p < P; p++) {
  let next = 0;
  await Promise.all(Array.from({ length: C }, async () => { for (;;) { const i = next++; if (i >= N) return; const r = await req(rt.base((process.env.PREFIX || "big") + p) + "/remember", { method: "POST", body: JSON.stringify({ content: text(32700, p * 100000 + i), metadata: meta(i) }) }); if (r.status !== 200) { bad++; if (bad < 5) console.log(r.status, r.text.slice(0, 200)); } } }));
  const s = await rt.stats((process.env.PREFIX || "big") + p);
  console.log("profile", p, "memories", s.memories ?? JSON.stringify(s).slice(0, 300), "t", ((performance.now() - t1) / 1000).toFixed(0));
}
console.log("isolate", await rt.iso(), "rss", rt.rss());
await rt.dispose();

// GET memories?limit=1000 on big0, then follows the cursor to the end; Wasm mark after the first page and after all pages. DIALECT=pub for /client/v4.
import { start, req, mb, STATE } from "./lib.mjs";
const pub = process.env.DIALECT === "pub";
const rt = await start({}, STATE);
const before = (await rt.iso()).wasmMemoryBytes;
let cursor = null, pages = 0, n = 0, bytes = 0, first = null, marks = [];
const t = performance.now();
do {
  const r = await req(rt.base("big0", pub) + "/memories?limit=1000" + (cursor ? "&cursor=" + encodeURIComponent(cursor) : ""));
  if (r.status !== 200) { console.log("status", r.status, r.text.slice(0, 300)); break; }
  const j = JSON.parse(r.text);
  if (!first) { const { result, ...rest } = j; console.log("page 1 keys:", Object.keys(j), "result keys:", result && !Array.isArray(result) ? Object.keys(result) : "array", JSON.stringify(rest).slice(0, 300)); first = j; }
  const res = j.result;
  const items = Array.isArray(res) ? res : (res.memories ?? res.items ?? []);
  cursor = (Array.isArray(res) ? (j.result_info?.cursor ?? j.cursor) : (res.cursor ?? res.nextCursor)) || null;
  pages++; n += items.length; bytes += r.bytes;
  if (pages === 1) { const m = items[0]; console.log("page 1:", items.length, "memories,", mb(r.bytes), "MiB; content len", m?.content?.length, "metadata keys", m?.metadata ? Object.keys(m.metadata).length : "none", "cursor", String(cursor).slice(0, 40)); marks.push(mb((await rt.iso()).wasmMemoryBytes)); }
} while (cursor && pages < 200);
const after = await rt.iso();
console.log(`${pub ? "published" : "original"}: ${pages} pages, ${n} memories, ${mb(bytes)} MiB in ${((performance.now() - t) / 1000).toFixed(1)}s; wasm ${mb(before)} -> after page 1 ${marks[0]} -> after all ${mb(after.wasmMemoryBytes)} MiB; heapPeak ${mb(after.heapPeakBytes)}`);
await rt.dispose();

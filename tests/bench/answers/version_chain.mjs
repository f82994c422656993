// One GET of the newest of N (default 400) remembered ~32 KB versions of one key; Wasm mark before/after the GET.
import { start, req, mb } from "./lib.mjs";
const n = Number(process.env.N || 400);
const rt = await start({});
const base = rt.base("chain");
let last;
for (let i = 0; i < n; i++) {
  const body = JSON.stringify({ content: `Version ${i} of the runbook says: `.padEnd(32 * 1024 - 64, "w") + " end.", key: "ops.runbook" });
  const r = await req(base + "/remember", { method: "POST", body });
  if (r.status !== 200) throw new Error(`remember ${i}: ${r.status} ${r.text.slice(0, 200)}`);
  last = JSON.parse(r.text).result;
}
const before = (await rt.iso()).wasmMemoryBytes;
const r = await req(`${base}/memories/${last.id}`);
const after = (await rt.iso()).wasmMemoryBytes;
const got = r.status === 200 ? JSON.parse(r.text).result : {};
console.log(`get of the newest of ${n} versions: status ${r.status}, ${mb(r.bytes)} MiB, ${got.versions?.length} versions, moreVersions ${got.moreVersions}; wasm ${mb(before)} -> ${mb(after)} MiB`);
await rt.dispose();

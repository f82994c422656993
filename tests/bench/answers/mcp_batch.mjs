// One MCP JSON-RPC batch of B tools/call "list" {limit: LIMIT} on profile PROF (default c0: 250 memories of ~36 KB).
// The batch's body is tiny (< 256 KB: takes no working-set room); the Worker accumulates every call's result.
import { start, req, mb, STATE } from "./lib.mjs";
const B = Number(process.env.B || 4), LIMIT = Number(process.env.LIMIT || 250), PROF = process.env.PROF || "c0", K = Number(process.env.K || 1);
const rt = await start({}, STATE);
const before = await rt.iso();
const batch = Array.from({ length: B }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: "list", arguments: { limit: LIMIT } } }));
const body = JSON.stringify(batch);
const t = performance.now();
const rs = await Promise.all(Array.from({ length: K }, (_, k) => req(`${rt.origin}/mcp/namespaces/rev/profiles/${K > 1 ? "c" + (k % 16) : PROF}`, { method: "POST", body, headers: { accept: "application/json, text/event-stream" } }).catch((e) => ({ status: "ERR " + e.message, bytes: 0, text: "" }))));
let after; try { after = await rt.iso(); } catch (e) { after = { wasmMemoryBytes: NaN, heapPeakBytes: NaN }; console.log("stats failed:", e.message); }
const st = {}; for (const r of rs) st[r.status] = (st[r.status] || 0) + 1;
console.log(`mcp batch K=${K} B=${B} list limit=${LIMIT} (body ${body.length} B): ${JSON.stringify(st)} reply ${mb(rs[0].bytes)} MiB, ${((performance.now() - t) / 1000).toFixed(1)}s; wasm ${mb(before.wasmMemoryBytes)} -> ${mb(after.wasmMemoryBytes)} MiB; heapPeak ${mb(after.heapPeakBytes)}; workingSetWaits ${after.workingSetWaits}; rss hwm ${mb(rt.rss().hwm)}`);
for (const r of rs) if (r.status !== 200) { console.log(String(r.text).slice(0, 300)); break; }
try { const j = JSON.parse(rs[0].text); console.log("first reply:", JSON.stringify(j[0] ?? j).slice(0, 200)); } catch {}
await rt.dispose();

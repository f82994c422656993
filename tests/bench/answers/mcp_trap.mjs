// One MCP batch of B (default 60) "list" {limit:250} calls on c0 (250 memories x ~36 KB; body < 1 KB),
// while an innocent client keeps calling remember+list on another profile. Reports whether the Wasm traps
// (wasm32 can address 4 GiB locally; Cloudflare's limit is 128 MB) and what the innocent calls saw.
import { start, req, mb, STATE } from "./lib.mjs";
const B = Number(process.env.B || 60);
const rt = await start({}, STATE);
const batch = Array.from({ length: B }, (_, i) => ({ jsonrpc: "2.0", id: i + 1, method: "tools/call", params: { name: "list", arguments: { limit: 250 } } }));
let stop = false; const innocent = {}; let firstBad = "";
const bystander = (async () => { let i = 0; while (!stop) { const r = await req(rt.base("innocent") + "/remember", { method: "POST", body: JSON.stringify({ content: "The user likes tea number " + i++ }) }).catch((e) => ({ status: "ERR " + e.code, text: e.message })); innocent[r.status] = (innocent[r.status] || 0) + 1; if (r.status !== 200 && !firstBad) firstBad = String(r.text).slice(0, 300); await new Promise((s) => setTimeout(s, 50)); } })();
const t = performance.now();
const r = await req(`${rt.origin}/mcp/namespaces/rev/profiles/c0`, { method: "POST", body: JSON.stringify(batch), headers: { accept: "application/json, text/event-stream" } }).catch((e) => ({ status: "ERR " + e.message, bytes: 0, text: "" }));
await new Promise((s) => setTimeout(s, 1000)); stop = true; await bystander;
console.log(`mcp batch B=${B}: status ${r.status}, reply ${mb(r.bytes)} MiB, ${((performance.now() - t) / 1000).toFixed(1)}s; body: ${String(r.text).slice(0, 300)}`);
console.log("innocent remember calls during it:", JSON.stringify(innocent), firstBad);
try { console.log("after: isolate", JSON.stringify(await rt.iso())); } catch (e) { console.log("stats after failed:", e.message); }
console.log("rss hwm", mb(rt.rss().hwm));
await rt.dispose();

// Quick recall timing on one persisted 10k profile (dev aid).
import { existsSync, readFileSync } from "node:fs";
import { startWorker } from "../workerd/helpers.mjs";
const STATE = process.env.STATE || "/tmp/prof/state";
const FILL = process.env.FILL || "/tmp/prof/fill-10000.ndjson";
const queries = JSON.parse(readFileSync(process.env.QUERIES || "/tmp/prof/queries.json", "utf8"));
const filled = existsSync(STATE);
const w = await startWorker({ vars: { BENCH: "1" }, persistDir: STATE });
const origin = String(w.url).replace(/\/$/, "");
const BASE = `${origin}/accounts/bench/agent-memory/namespaces/default/profiles/bench`;
const http = async (method, route, body, type = "application/json") => {
  const r = await fetch(BASE + route, { method, headers: { authorization: "Bearer dev-token", "content-type": type }, body: typeof body === "string" ? body : JSON.stringify(body) });
  const v = await r.json();
  if (!v.success) throw new Error(JSON.stringify(v.errors));
  return v.result;
};
const ns = await w.miniflare.getDurableObjectNamespace("PROFILES", "agent-memory");
const stub = ns.get(ns.idFromName("default/bench"));
const callDo = async (op, args = {}) => {
  const v = await (await stub.fetch("https://profile.internal/call", { method: "POST", body: JSON.stringify({ name: "default/bench", op, args }) })).json();
  if (v.error) throw new Error(v.error.message);
  return v.ok;
};
const pct = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.ceil((p / 100) * s.length) - 1]; };
try {
  if (!filled) {
    await http("POST", "/import", readFileSync(FILL, "utf8"), "application/x-ndjson");
    for (;;) if ((await callDo("benchDrain", { limit: 5000 })).left === 0) break;
  }
  console.log("stats", JSON.stringify(await http("GET", "/stats")));
  for (const q of queries.slice(0, 20)) await http("POST", "/recall", { query: q });
  // Three rounds; the round with the lowest p50 is reported (the machine's
  // other load only ever adds).
  let xs = null;
  for (let round = 0; round < 3; round++) {
    const r = [];
    for (const q of queries) { const t = performance.now(); await http("POST", "/recall", { query: q }); r.push(performance.now() - t); }
    if (!xs || pct(r, 50) < pct(xs, 50)) xs = r;
  }
  const hs = [];
  for (let i = 0; i < 100; i++) { const t = performance.now(); await fetch(origin + "/health").then((r) => r.arrayBuffer()); hs.push(performance.now() - t); }
  const gs = [];
  for (let i = 0; i < 100; i++) { const t = performance.now(); await fetch(BASE + "/memories/mem_nothing", { headers: { authorization: "Bearer dev-token" } }).then((r) => r.arrayBuffer()); gs.push(performance.now() - t); }
  console.log(`get (404 from the DO) p50 ${pct(gs, 50).toFixed(2)}`);
  console.log(`recall http p50 ${pct(xs, 50).toFixed(2)} p95 ${pct(xs, 95).toFixed(2)} p99 ${pct(xs, 99).toFixed(2)}; health p50 ${pct(hs, 50).toFixed(2)}`);
  const stages = (process.env.STAGES || "turns,fts,messages,vector,recall").split(",").filter(Boolean);
  const R = 5;
  for (const s of stages) {
    const d = [];
    for (const q of queries.slice(0, 60)) {
      let best = Infinity;
      for (let k = 0; k < 3; k++) {
        let t = performance.now(); await callDo("benchStage", { query: q, stage: s, repeat: 0 }); const base = performance.now() - t;
        t = performance.now(); await callDo("benchStage", { query: q, stage: s, repeat: R }); best = Math.min(best, (performance.now() - t - base) / R);
      }
      d.push(best);
    }
    console.log(`  ${s.padStart(10)} in DO p50 ${pct(d, 50).toFixed(2)} p95 ${pct(d, 95).toFixed(2)}`);
  }
  if (process.env.INGEST) {
    const sess = JSON.parse(readFileSync("/tmp/prof/ingest.json", "utf8"));
    const tag = Date.now();
    let n = 0; const t = performance.now();
    for (const s of sess) n += (await http("POST", "/ingest", { ...s, sessionId: `${s.sessionId}-${tag}` })).messagesStored;
    console.log(`ingest ${n} msgs ${(n / ((performance.now() - t) / 1000)).toFixed(0)} msg/s`);
  }
} finally {
  await w.dispose();
}

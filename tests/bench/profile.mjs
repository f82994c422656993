// A CPU profile of recall (or ingest) inside workerd: the built Worker
// with a DevTools inspector on loopback, V8's sampling profiler around
// repeated calls to the profile's Durable Object, and the functions (Rust
// names from the Wasm name section) by their own and their inclusive time.
//
//   node tests/bench/profile.mjs STATE_DIR [recall|ingest] [N_CALLS]
//
// STATE_DIR holds a filled profile, e.g. from
//   BENCH_STATE=STATE_DIR BENCH_SIZES=10000 make bench
// Writes STATE_DIR/<what>.cpuprofile (loadable in Chrome DevTools). The
// sampling profiler slows everything down (about 1.7x here): read the
// shares, not the absolute times. Ends with the shares by stage (SQL
// apart), the figures docs/bench/profile-*.txt keep.
import { writeFileSync } from "node:fs";
import net from "node:net";
import path from "node:path";
import { ROOT } from "../workerd/helpers.mjs";
import { request, startOnOwnSocket } from "./client.mjs";
import { Corpus, loadLocomo, locomoPath } from "./corpus.mjs";

const [stateDir, what = "recall", calls = "200"] = process.argv.slice(2);
if (!stateDir) {
  console.error("usage: node tests/bench/profile.mjs STATE_DIR [recall|ingest] [N_CALLS]");
  process.exit(2);
}
// A free loopback port for the inspector.
const PORT = await new Promise((ok) => {
  const srv = net.createServer().listen(0, "127.0.0.1", () => {
    const { port } = srv.address();
    srv.close(() => ok(port));
  });
});
// Requests go to the Worker's own socket, as make bench sends them.
const { w, origin } = await startOnOwnSocket({ vars: { BENCH: "1" }, persistDir: path.resolve(stateDir), inspectorPort: PORT });
const BASE = "/accounts/bench/agent-memory/namespaces/default/profiles/bench";
const ns = await w.miniflare.getDurableObjectNamespace("PROFILES", "agent-memory");
const stub = ns.get(ns.idFromName("default/bench"));
const callDo = async (op, args = {}) => {
  const body = JSON.stringify({ name: "default/bench", op, args });
  const v = await (await stub.fetch("https://profile.internal/call", { method: "POST", body, headers: { "x-agent-memory-call-bytes": String(Buffer.byteLength(body)) } })).json();
  if (v.error) throw new Error(`${op}: ${v.error.message}`);
  return v.ok;
};

const ws = new WebSocket(`ws://127.0.0.1:${PORT}/core:user:agent-memory`);
await new Promise((ok, fail) => ((ws.onopen = ok), (ws.onerror = fail)));
let nextId = 1;
const pending = new Map();
ws.onmessage = (m) => {
  const v = JSON.parse(m.data);
  if (v.id && pending.has(v.id)) {
    pending.get(v.id)(v);
    pending.delete(v.id);
  }
};
const cdp = (method, params = {}) =>
  new Promise((ok) => {
    const id = nextId++;
    pending.set(id, ok);
    ws.send(JSON.stringify({ id, method, params }));
  });

const corpus = new Corpus(loadLocomo(locomoPath(ROOT)));
const queries = corpus.questions(Number(calls), 3, 11000);
const sessions = what === "ingest" ? [...corpus.sessions(9000 + (Date.now() % 1000)), ...corpus.sessions(9001)] : [];
const run = async (i) => {
  if (what === "ingest") {
    // Over REST, as `make bench` ingests: the alarm that embeds the new
    // memories runs between the calls and is in the profile.
    const s = sessions[i % sessions.length];
    const messages = s.messages.map((m) => ({ role: m.role, content: m.content, timestamp: m.timestamp }));
    const res = await request(`${origin}${BASE}/ingest`, {
      method: "POST",
      headers: { authorization: "Bearer dev-token", "content-type": "application/json" },
      body: JSON.stringify({ sessionId: `prof-${Date.now()}-${i}-${s.sessionId}`, messages }),
    });
    if (res.status !== 200) throw new Error(`ingest: ${res.status} ${res.text.slice(0, 300)}`);
  } else {
    await callDo("recall", { query: queries[i % queries.length] });
  }
};
for (let i = 0; i < 10; i++) await run(i);
await cdp("Profiler.enable");
await cdp("Profiler.setSamplingInterval", { interval: 50 });
await cdp("Profiler.start");
const t0 = performance.now();
for (let i = 0; i < Number(calls); i++) await run(i);
const wall = performance.now() - t0;
const { result } = await cdp("Profiler.stop");
ws.close();
await w.dispose();

const profile = result.profile;
writeFileSync(path.join(stateDir, `${what}.cpuprofile`), JSON.stringify(profile));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n.id);
const total = profile.nodes.reduce((a, n) => a + n.hitCount, 0);
const self = new Map();
const incl = new Map();
const name = (n) => n.callFrame.functionName || `(${n.callFrame.url.split("/").pop() || "anonymous"})`;
for (const n of profile.nodes) {
  if (!n.hitCount) continue;
  self.set(name(n), (self.get(name(n)) || 0) + n.hitCount);
  // Inclusive: each distinct function on the stack once.
  const seen = new Set();
  for (let id = n.id; id !== undefined; id = parent.get(id)) {
    const f = name(byId.get(id));
    if (seen.has(f)) continue;
    seen.add(f);
    incl.set(f, (incl.get(f) || 0) + n.hitCount);
  }
}
// SQL time by the code that ran the statement: the first two of our
// functions above the SQL port.
const sqlBy = new Map();
for (const n of profile.nodes) {
  if (!n.hitCount) continue;
  const stack = [];
  for (let id = n.id; id !== undefined; id = parent.get(id)) stack.push(name(byId.get(id)));
  const at = stack.findIndex((f) => f.includes("as agent_memory::core::ports::Sql>::query"));
  if (at < 0) continue;
  const callers = stack.slice(at + 1).filter((f) => f.startsWith("agent_memory::") && !f.includes("{{closure}}")).slice(0, 2);
  const key = callers.map((f) => f.replace(/::h[0-9a-f]{16}$/, "").replace("agent_memory::core::", "")).join(" < ");
  sqlBy.set(key, (sqlBy.get(key) || 0) + n.hitCount);
}
const perCall = (hits) => ((hits / total) * wall) / Number(calls);
const show = (m, title) => {
  console.log(`\n${title} (ms per call; ${Number(calls)} calls, ${(wall / Number(calls)).toFixed(2)} ms each over the binding)`);
  for (const [f, h] of [...m].sort((a, b) => b[1] - a[1]).slice(0, 45)) console.log(`${perCall(h).toFixed(3).padStart(8)}  ${f.slice(0, 150)}`);
};
show(self, "self time");
show(incl, "inclusive time");
show(sqlBy, "time in SQL statements (boundary included), by caller");

// Shares by stage: each sample goes to the innermost stage frame on its
// stack (a recall's channels, an ingest's phases; a stage the compiler
// inlined has no frame and counts in its caller), split into SQL (under
// the SQL port, or a transaction's commit) and the rest (Wasm and glue).
const STAGES = {
  recall: ["score_turns", "fts_with", "citations", "messages_with", "search_many", "keep_live", "memories_by_ids", "text_query", "channels::key", "fuse::fuse", "temporal::compute", "synthesize", "analyze", "recall::run"],
  ingest: ["insert_messages", "insert_memories", "persist::store", "extract::run", "verify::run", "classify::run", "judge_and_store", "ingest::run", "embed_memories", "TurnDirectory::maintain", "FullText::catch_up", "Profile::drain", "fetch_fetch_glue"],
};
const shares = new Map();
for (const n of profile.nodes) {
  if (!n.hitCount) continue;
  const stack = [];
  for (let id = n.id; id !== undefined; id = parent.get(id)) stack.push(name(byId.get(id)));
  const stage = stack.map((f) => (STAGES[what] || []).find((s) => f.includes(s))).find(Boolean) || "other";
  const sql = stack.some((f) => f.includes("Sql>::query")) || stack[0] === "transactionSync";
  const key = `${stage}${sql ? " (SQL)" : ""}`;
  shares.set(key, (shares.get(key) || 0) + n.hitCount);
}
console.log(`\nshare of the time by stage, SQL apart (${what})`);
for (const [k, h] of [...shares].sort((a, b) => b[1] - a[1])) console.log(`${((100 * h) / total).toFixed(1).padStart(6)}%  ${k}`);

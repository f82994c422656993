// Bounded load against a local agent-memory Worker on loopback: mixed
// recall and ingest (3 recalls : 1 ingest) with autocannon, for a fixed
// duration and connection count. Prints throughput, latency percentiles
// and the error count, writes them as JSON, exits 1 on any error.
//
//   node tests/load/load.mjs --url http://127.0.0.1:8787 [--duration 60]
//        [--connections 8] [--json out.json]
import autocannon from "autocannon";
import { writeFileSync } from "node:fs";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((acc, a, i, all) => (a.startsWith("--") ? [...acc, [a.slice(2), all[i + 1]]] : acc), []),
);
const url = String(args.url ?? "").replace(/\/$/, "");
const duration = Math.min(Number(args.duration ?? 60), 300);
const connections = Math.min(Number(args.connections ?? 8), 64);
if (!/^http:\/\/(127\.\d+\.\d+\.\d+|localhost|\[::1\]):\d+$/.test(url)) {
  console.error(`load.mjs: --url must be a loopback origin, got ${JSON.stringify(url)}`);
  process.exit(2);
}
const TOKEN = process.env.LOAD_TOKEN ?? "dev-token";
const BASE = `/accounts/load/agent-memory/namespaces/load/profiles/p${Date.now().toString(36)}`;
const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };

const PEOPLE = ["Avery", "Blake", "Casey", "Devon", "Emery", "Finley", "Gray", "Harper", "Indy", "Jules"];
const CITIES = ["Oslo", "Quito", "Hanoi", "Accra", "Lima", "Perth", "Tunis", "Riga", "Cusco", "Dakar"];
const TOOLS = ["pnpm", "yarn", "bun", "cargo", "poetry", "gradle", "maven", "make", "nix", "bazel"];
function conversation(n) {
  const p = PEOPLE[n % 10];
  const c = CITIES[(n >> 1) % 10];
  const t = TOOLS[(n >> 2) % 10];
  return {
    sessionId: `load-${n}`,
    messages: [
      { role: "user", content: `${p}${n} moved to ${c} last spring and now leads the platform team there.` },
      { role: "assistant", content: "Noted." },
      { role: "user", content: `For project ${n}, ${p}${n} prefers ${t} and wants dark mode by default.` },
      { role: "user", content: `The budget code for project ${n} is BC-${1000 + n} and the deadline is June ${1 + (n % 28)}.` },
    ],
  };
}
const QUERIES = [
  "Who moved to Oslo?",
  "Which package manager is preferred for project 12?",
  "What is the budget code for project 7?",
  "Who leads the platform team in Lima?",
  "When is the deadline for project 3?",
  "What does Harper prefer?",
  "Which projects want dark mode?",
  "Where does Devon live now?",
];

// Seed the profile so recall has something to search.
const SEED = 40;
for (let n = 0; n < SEED; n++) {
  const r = await fetch(`${url}${BASE}/ingest`, { method: "POST", headers, body: JSON.stringify(conversation(n)) });
  if (r.status !== 200) {
    console.error(`load.mjs: seeding failed: ${r.status} ${await r.text()}`);
    process.exit(1);
  }
  await r.arrayBuffer();
}

let ingestN = SEED;
let queryN = 0;
const counts = { recall: 0, ingest: 0 };
const recall = {
  method: "POST",
  path: `${BASE}/recall`,
  headers,
  setupRequest: (req) => {
    counts.recall++;
    return { ...req, body: JSON.stringify({ query: QUERIES[queryN++ % QUERIES.length] }) };
  },
};
const ingest = {
  method: "POST",
  path: `${BASE}/ingest`,
  headers,
  setupRequest: (req) => {
    counts.ingest++;
    return { ...req, body: JSON.stringify(conversation(ingestN++)) };
  },
};

const result = await new Promise((resolve, reject) => {
  const inst = autocannon(
    { url, connections, duration, timeout: 30, requests: [recall, recall, recall, ingest] },
    (err, res) => (err ? reject(err) : resolve(res)),
  );
  process.once("SIGINT", () => inst.stop());
});

const errors = result.errors + result.timeouts + result.non2xx;
const summary = {
  date: new Date().toISOString(),
  durationSeconds: duration,
  connections,
  mix: "3 recall : 1 ingest (4-message conversations)",
  requests: result.requests.total,
  recalls: counts.recall,
  ingests: counts.ingest,
  throughputPerSecond: result.requests.average,
  latencyMs: { p50: result.latency.p50, p90: result.latency.p90, p99: result.latency.p99, max: result.latency.max, mean: result.latency.mean },
  errors,
  detail: { transportErrors: result.errors, timeouts: result.timeouts, non2xx: result.non2xx, status: result.statusCodeStats },
};
console.log(autocannon.printResult(result));
console.log(`throughput ${summary.throughputPerSecond.toFixed(1)} req/s over ${duration} s (${summary.requests} requests: ~${summary.recalls} recall, ~${summary.ingests} ingest)`);
console.log(`latency p50 ${summary.latencyMs.p50} ms, p90 ${summary.latencyMs.p90} ms, p99 ${summary.latencyMs.p99} ms, max ${summary.latencyMs.max} ms`);
console.log(`errors ${errors} (transport ${result.errors}, timeouts ${result.timeouts}, non-2xx ${result.non2xx})`);
if (args.json) writeFileSync(args.json, JSON.stringify(summary, null, 2) + "\n");
process.exit(errors === 0 ? 0 : 1);

// Where a recall's time goes on its way through workerd: the same
// questions through each layer, interleaved (so a slower minute of the
// machine slows every layer alike), the median of each.
//
//   node tests/bench/path.mjs STATE_DIR [N_QUERIES]
//
// STATE_DIR holds a filled profile, e.g. from
//   BENCH_STATE=STATE_DIR BENCH_SIZES=10000 make bench
// Layers (the Worker's own socket is miniflare's unsafeDirectSockets: the
// same workerd and Worker without the entry worker miniflare puts in
// front of it for development; make bench's HTTP figures are taken on
// it, the entry's reported beside). Requests go through the benchmarks'
// client (client.mjs: node:http, kept-alive connections):
//   hello, direct     a Worker that only answers "ok", on its own socket:
//                     the floor of any request on this machine
//   hello, direct, Node's fetch   the same from Node's fetch, the client
//                     make bench used before
//   health, entry     GET /health through miniflare's entry worker
//   health, direct    GET /health on the Worker's own socket
//   object, direct    GET .../memories/<absent id> on the Worker's own
//                     socket: the Worker, its hop to the profile's Durable
//                     Object and back, one point lookup
//   recall, entry     POST .../recall through miniflare's entry worker
//   recall, direct    POST .../recall on the Worker's own socket
//   recall in DO      the recall alone inside the Durable Object
//                     ((round trip with it repeated R times - with 0) / R)
//   its SQL           the statements that recall ran through the profile's
//                     SQL, replayed alone inside the Durable Object the same
//                     way (benchReplay): SQLite, the platform's SQL API and
//                     the result text crossing into Wasm, without the Rust
//                     that reads it. The vector index reads its float
//                     vectors through its own handle: not included.
// Prints a table and writes BENCH_OUT (default docs/bench)/path.md.
import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { ROOT } from "../workerd/helpers.mjs";
import { OWN_SOCKET, expectStatus, request, startOnOwnSocket } from "./client.mjs";
import { Corpus, loadLocomo, locomoPath } from "./corpus.mjs";

const [stateDir, nArg = "150"] = process.argv.slice(2);
if (!stateDir) {
  console.error("usage: node tests/bench/path.mjs STATE_DIR [N_QUERIES]");
  process.exit(2);
}
const N = Number(nArg);
const R = 5;
const OUT = path.resolve(ROOT, process.env.BENCH_OUT || "docs/bench");
const SERVICE = "agent-memory";
const BASE = "/accounts/bench/agent-memory/namespaces/default/profiles/bench";
const AUTH = { authorization: "Bearer dev-token" };
const ms = (t0) => performance.now() - t0;
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const { w, origin: direct, entry } = await startOnOwnSocket({
  vars: { BENCH: "1" },
  persistDir: path.resolve(stateDir),
  extraWorkers: [{ name: "hello", modules: true, script: "export default { fetch() { return new Response('ok'); } };", unsafeDirectSockets: OWN_SOCKET }],
});
try {
  const hello = String(await w.miniflare.unsafeGetDirectURL("hello")).replace(/\/$/, "");
  const ns = await w.miniflare.getDurableObjectNamespace("PROFILES", SERVICE);
  const stub = ns.get(ns.idFromName("default/bench"));
  const callDo = async (op, args = {}) => {
    const body = JSON.stringify({ name: "default/bench", op, args });
    const v = await (await stub.fetch("https://profile.internal/call", { method: "POST", body, headers: { "x-agent-memory-call-bytes": String(Buffer.byteLength(body)) } })).json();
    if (v.error) throw new Error(`${op}: ${v.error.message}`);
    return v.ok;
  };
  const get = async (url, headers, expect = 200) => void (await expectStatus(url, expect, headers));
  const recall = async (origin, query) => {
    const res = await request(`${origin}${BASE}/recall`, { method: "POST", headers: { ...AUTH, "content-type": "application/json" }, body: JSON.stringify({ query }) });
    let v;
    try {
      v = JSON.parse(res.text);
    } catch {
      throw new Error(`recall: ${res.status} ${res.text.slice(0, 200)}`);
    }
    if (!v.success) throw new Error(`recall: ${res.status} ${JSON.stringify(v.errors)}`);
  };
  // Node's own client, for comparison with the benchmarks' (client.mjs).
  const fetchOk = async (url) => {
    const res = await fetch(url);
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status}`);
  };
  // Inside the object: (R repetitions - 0 repetitions) / R.
  const inside = async (op, args) => {
    let t = performance.now();
    await callDo(op, { ...args, repeat: 0 });
    const base = ms(t);
    t = performance.now();
    await callDo(op, { ...args, repeat: R });
    return { inside: Math.max(0, (ms(t) - base) / R) };
  };

  const { memories } = await callDo("stats");
  const corpus = new Corpus(loadLocomo(locomoPath(ROOT)));
  const queries = corpus.questions(N, 1, 4242);
  for (const q of queries.slice(0, 10)) {
    await recall(entry, q);
    await recall(direct, q);
  }
  const absent = `${BASE}/memories/${"0".repeat(32)}`;
  await get(`${direct}${absent}`, AUTH, 404);
  const layers = [
    ["hello, direct", "a Worker that only answers \"ok\", on its own socket (the floor of any request)", () => get(`${hello}/`)],
    ["hello, direct, Node's fetch", "the same request from Node's fetch instead of the benchmarks' client", () => fetchOk(`${hello}/`)],
    ["health, entry", "GET /health through miniflare's entry worker", () => get(`${entry}/health`)],
    ["health, direct", "GET /health on the Worker's own socket", () => get(`${direct}/health`)],
    ["object, direct", "GET of an absent memory on the Worker's own socket (Worker, hop to the object, one lookup)", () => get(`${direct}${absent}`, AUTH, 404)],
    ["recall, entry", "POST …/recall through miniflare's entry worker", (q) => recall(entry, q)],
    ["recall, direct", "POST …/recall on the Worker's own socket (what make bench reports)", (q) => recall(direct, q)],
    ["recall in DO", "the recall alone inside the Durable Object", (q) => inside("benchStage", { query: q, stage: "recall" })],
    ["its SQL", "the statements that recall ran through the profile's SQL (the vector index's reads aside), replayed alone inside the Durable Object", (q) => inside("benchReplay", { query: q })],
  ];
  const times = layers.map(() => []);
  // The same question a second time finds its pages warm: the two recalls
  // over HTTP take turns going first.
  const entryAt = layers.findIndex(([name]) => name === "recall, entry");
  const order = layers.map((_, i) => i);
  const swapped = [...order];
  [swapped[entryAt], swapped[entryAt + 1]] = [order[entryAt + 1], order[entryAt]];
  for (const [k, q] of queries.entries()) {
    for (const i of k % 2 ? swapped : order) {
      const [, , run] = layers[i];
      const t = performance.now();
      const out = await run(q);
      // The measurements inside the object return their own time.
      times[i].push(out?.inside ?? ms(t));
    }
  }
  const rows = layers.map(([name, what], i) => `| ${name} | ${median(times[i]).toFixed(2)} ms | ${what} |`);
  const md = [
    "# Where a recall's time goes on its way",
    "",
    `Generated by \`make bench-path\` (tests/bench/path.mjs) on ${new Date().toISOString().slice(0, 10)}: ${os.cpus().length} CPUs (${os.cpus()[0]?.model?.trim()}), Node ${process.version}, the built Worker in workerd (miniflare) on loopback, requests from node:http on kept-alive connections, a profile of ${memories.toLocaleString("en-US")} memories, ${N} LoCoMo-style questions, each through every layer in turn; medians.`,
    "",
    "| layer | p50 | what |",
    "|---|---:|---|",
    ...rows,
    "",
  ].join("\n");
  console.log(md);
  mkdirSync(OUT, { recursive: true });
  writeFileSync(path.join(OUT, "path.md"), md);
} finally {
  await w.dispose();
}

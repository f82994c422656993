// `make bench-sequential`: the Wasm memory's mark after each of several
// large ingests run one after another, each into a profile of its own,
// over the published route (no report), in one fresh workerd, the
// background work each queued drained before the next (SEQ_SETTLE=0 to
// not wait). A single request's peak is `make bench-peaks`' figure; this
// shows what taking turns adds: nothing stays resident between them
// (`residentBytes` is printed), so growth after the first is the heap's
// fragmentation, the large blocks of a later request not fitting in the
// holes the earlier ones left.
// SEQ_INGESTS (default 4) ingests of SEQ_MESSAGES (default 500) messages
// of ~32 KB of prose (every sentence a statement: 32 memories a message).
// Prints the table and writes docs/bench/sequential.md (BENCH_OUT elsewhere).
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ROOT, startWorker } from "../workerd/helpers.mjs";

const INGESTS = Number(process.env.SEQ_INGESTS || 4);
const MESSAGES = Number(process.env.SEQ_MESSAGES || 500);
const SETTLE = process.env.SEQ_SETTLE !== "0";
const OUT = path.resolve(ROOT, process.env.BENCH_OUT || "docs/bench");
const H = { authorization: "Bearer dev-token", "content-type": "application/json" };
const MiB = 1048576;
const base = (p) => `/client/v4/accounts/bench/agent-memory/namespaces/sequential/profiles/${p}`;
const WORDS = ["I", "moved", "to", "Oslo", "in", "the", "spring", "and", "my", "sister", "works", "at", "a", "bakery", "near", "river", "we", "adopted", "dog", "named", "Pixel"];

/** An ingest body of `n` messages of ~32 KB of statements. */
function prose(n, seed) {
  const w = (i) => WORDS[i % WORDS.length];
  const messages = Array.from({ length: n }, (_, i) => ({
    role: i % 2 ? "assistant" : "user",
    content: Array.from({ length: 800 }, (_, j) => `${w(i + j * 7 + seed)} ${w(i * 3 + j)} works at place ${i * 800 + j} near ${w(j * 5 + seed)}.`).join(" ").slice(0, 32000),
  }));
  return JSON.stringify({ sessionId: `s${seed}`, messages });
}

const w = await startWorker({});
const rows = [];
try {
  const stats = async (p) => (await (await w.fetch(`${base(p)}/stats`, { headers: H })).json()).result;
  for (let i = 0; i < INGESTS; i++) {
    const p = `p${i}`;
    const body = prose(MESSAGES, i);
    const before = (await stats(p)).isolate.wasmMemoryBytes;
    const t = performance.now();
    const r = await w.fetch(`${base(p)}/ingest`, { method: "POST", headers: H, body });
    const text = await r.text();
    if (r.status !== 200) throw new Error(`ingest ${i}: ${r.status} ${text.slice(0, 300)}`);
    const seconds = (performance.now() - t) / 1000;
    let s = await stats(p);
    const after = s.isolate.wasmMemoryBytes;
    while (SETTLE && s.pendingJobs > 0) {
      await new Promise((res) => setTimeout(res, 500));
      s = await stats(p);
    }
    const row = { ingest: i + 1, bodyMiB: Buffer.byteLength(body) / MiB, memories: s.memories, before, after, settled: s.isolate.wasmMemoryBytes, residentBytes: s.isolate.residentBytes, seconds };
    rows.push(row);
    console.error(`[bench-sequential] ${JSON.stringify(row)}`);
  }
} finally {
  await w.dispose();
}
const mb = (b) => (b / MiB).toFixed(1);
const lines = [
  `# make bench-sequential (${new Date().toISOString()})`,
  "",
  `Command: \`make bench-sequential\` (tests/bench/sequential.mjs): ${INGESTS} ingests of ${MESSAGES} messages of ~32 KB of prose, one after another, a profile each, over the published route, in one fresh workerd; ${SETTLE ? "each one's background work drained before the next" : "not waiting for background work"}. The Wasm memory's size (its high-water mark) before each, just after it, and once drained; what the isolate keeps resident then. MiB.`,
  "",
  "| ingest | body MiB | memories | Wasm before -> after | after drain | resident | s |",
  "|---:|---:|---:|---:|---:|---:|---:|",
  ...rows.map((r) => `| ${r.ingest} | ${r.bodyMiB.toFixed(1)} | ${r.memories} | ${mb(r.before)} -> ${mb(r.after)} | ${mb(r.settled)} | ${mb(r.residentBytes)} | ${r.seconds.toFixed(1)} |`),
  "",
];
console.log(lines.join("\n"));
mkdirSync(OUT, { recursive: true });
writeFileSync(path.join(OUT, "sequential.md"), lines.join("\n"));

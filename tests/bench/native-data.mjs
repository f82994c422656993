// Writes the data `make bench-native` profiles: the same generated
// LoCoMo-style corpus as `make bench` (tests/bench/corpus.mjs), as files a
// native Rust program can read:
//   fill.ndjson    an export file of N memories (with make bench's metadata)
//                  and their messages
//   queries.json   250 varied questions
//   ingest.json    ~1,000 messages of fresh sessions, as ingest requests
// Usage: node tests/bench/native-data.mjs DIR [N]
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { ROOT } from "../workerd/helpers.mjs";
import { Corpus, benchMetadata, loadLocomo, locomoPath } from "./corpus.mjs";

const dir = path.resolve(process.argv[2] || "target/bench-native");
const N = Number(process.argv[3] || 10000);
const INGEST_VARIANT0 = 5000; // as in bench.mjs: far from the fill's variants
mkdirSync(dir, { recursive: true });
const corpus = new Corpus(loadLocomo(locomoPath(ROOT)));

let variant = 0;
const memories = [];
const messages = [];
for (const { variant: v, session: s } of corpus.stream()) {
  if (memories.length >= N) break;
  variant = v + 1;
  const take = s.memories.slice(0, N - memories.length);
  const cited = new Set(take.flatMap((m) => m.sourceMessageIds));
  // The metadata `make bench` gives each memory, for filtered recall.
  memories.push(...take.map((m) => ({ ...m, metadata: benchMetadata(m.id) })));
  messages.push(...s.messages.filter((m) => cited.has(m.id)));
}
const header = { kind: "header", format: "agent-memory-export", version: 1, profile: "default/bench", exportedAt: new Date(0).toISOString() };
writeFileSync(path.join(dir, "fill.ndjson"), [header, ...messages, ...memories].map((r) => JSON.stringify(r)).join("\n") + "\n");
writeFileSync(path.join(dir, "queries.json"), JSON.stringify(corpus.questions(250, Math.max(1, variant), 1000 + N)));
const ingest = [];
let n = 0;
for (let k = INGEST_VARIANT0; n < 1000; k++) {
  for (const s of corpus.sessions(k)) {
    if (n >= 1000) break;
    ingest.push({ sessionId: `ingest-${s.sessionId}`, messages: s.messages.map((m) => ({ role: m.role, content: m.content, timestamp: m.timestamp })) });
    n += s.messages.length;
  }
}
writeFileSync(path.join(dir, "ingest.json"), JSON.stringify(ingest));
console.error(`native-data: ${memories.length} memories, ${messages.length} messages, 250 queries, ${n} ingest messages in ${dir}`);

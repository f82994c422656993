// Writes the benchmark's results: docs/bench/results.md (tables),
// docs/bench/latency.svg (latency against N, plain SVG) and
// docs/bench/results.json (every number measured).
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";

const f = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : "–");
const mb = (b) => f(b / 1048576, 1);
const int = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "–");

export function tables(results) {
  const main = [
    "| N memories | messages | ingest msg/s | recall p50 | recall p95 | recall p99 | recall in DO p50 | bare FTS5 p50 | recall / FTS5 | vector recall@10 | storage | workerd RSS | Wasm memory |",
    "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ...results.map(
      (r) =>
        `| ${int(r.memories)} | ${int(r.messages)} | ${int(r.ingest.perSec)} | ${f(r.recall.p50)} ms | ${f(r.recall.p95)} ms | ${f(r.recall.p99)} ms | ` +
        `${f(r.stages.recall.p50, 2)} ms | ${f(r.fts.p50)} ms (${f(r.fts.insideP50, 2)} in DO) | ${f(r.doRecall.p50 / r.fts.p50, 2)}× path, ${f(r.stages.recall.p50 / r.fts.insideP50, 1)}× in DO | ` +
        `${f(r.vector.recallAt10, 3)} | ${mb(r.storageBytes)} MB | ${mb(r.memory.workerdRss)} MB | ${mb(r.memory.wasmBytes)} MB |`,
    ),
  ];
  const names = ["analyze", "embed", "key", "fts", "messages", "vector", "hyde", "fuse"];
  const stages = [
    `| N memories | ${names.join(" | ")} | whole recall | bare FTS5 | vector index alone | its passes 1-2 |`,
    `|---:|${names.map(() => "---:").join("|")}|---:|---:|---:|---:|`,
    ...results.map(
      (r) =>
        `| ${int(r.memories)} | ${names.map((n) => f(r.stages[n].p50, 2)).join(" | ")} | ${f(r.stages.recall.p50, 2)} | ${f(r.fts.insideP50, 2)} | ` +
        `${f(r.stages.vectorIndex?.p50, 2)} | ${f(r.stages.shortlist?.p50, 2)} |`,
    ),
  ];
  return { main: main.join("\n"), stages: stages.join("\n") };
}

function svg(results) {
  const W = 720, H = 420, L = 64, R = 170, T = 40, B = 56;
  const xs = results.map((r) => r.memories);
  const lx = (n) => Math.log10(n);
  const [x0, x1] = [Math.min(...xs.map(lx)), Math.max(...xs.map(lx))];
  const series = [
    ["recall p99 (HTTP)", "#b2182b", (r) => r.recall.p99, ""],
    ["recall p95 (HTTP)", "#ef8a62", (r) => r.recall.p95, ""],
    ["recall p50 (HTTP)", "#d6604d", (r) => r.recall.p50, ""],
    ["recall in DO p50", "#2166ac", (r) => r.stages.recall.p50, ""],
    ["bare FTS5 p50 (same path)", "#4d9221", (r) => r.fts.p50, "6 4"],
    ["bare FTS5 in DO p50", "#7fbc41", (r) => r.fts.insideP50, "2 3"],
  ];
  const ymax = Math.max(10, ...results.flatMap((r) => series.map(([, , g]) => g(r)).filter(Number.isFinite))) * 1.1;
  const px = (n) => L + (x1 === x0 ? (W - L - R) / 2 : ((lx(n) - x0) / (x1 - x0)) * (W - L - R));
  const py = (v) => T + (1 - v / ymax) * (H - T - B);
  const out = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="#fff"/>`,
    `<text x="${L}" y="22" font-size="14" font-weight="bold">Recall latency against profile size (local defaults, no model calls)</text>`,
  ];
  const step = ymax > 60 ? 20 : ymax > 30 ? 10 : 5;
  for (let v = 0; v <= ymax; v += step) {
    out.push(`<line x1="${L}" y1="${py(v)}" x2="${W - R}" y2="${py(v)}" stroke="#ddd"/>`);
    out.push(`<text x="${L - 6}" y="${py(v) + 4}" text-anchor="end">${v}</text>`);
  }
  for (const n of xs) {
    out.push(`<line x1="${px(n)}" y1="${T}" x2="${px(n)}" y2="${H - B}" stroke="#eee"/>`);
    out.push(`<text x="${px(n)}" y="${H - B + 18}" text-anchor="middle">${n.toLocaleString("en-US")}</text>`);
  }
  out.push(`<text x="${(L + W - R) / 2}" y="${H - 14}" text-anchor="middle">memories in the profile (log scale)</text>`);
  out.push(`<text transform="translate(16 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">milliseconds</text>`);
  out.push(`<line x1="${L}" y1="${H - B}" x2="${W - R}" y2="${H - B}" stroke="#333"/><line x1="${L}" y1="${T}" x2="${L}" y2="${H - B}" stroke="#333"/>`);
  series.forEach(([name, color, get, dash], i) => {
    const pts = results.map((r) => [px(r.memories), py(get(r))]).filter(([, y]) => Number.isFinite(y));
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ""} points="${pts.map((p) => p.map((v) => v.toFixed(1)).join(",")).join(" ")}"/>`);
    for (const [x, y] of pts) out.push(`<circle cx="${x.toFixed(1)}" cy="${y.toFixed(1)}" r="3" fill="${color}"/>`);
    const ly = T + 10 + i * 20;
    out.push(`<line x1="${W - R + 12}" y1="${ly}" x2="${W - R + 36}" y2="${ly}" stroke="${color}" stroke-width="2"${dash ? ` stroke-dasharray="${dash}"` : ""}/>`);
    out.push(`<text x="${W - R + 42}" y="${ly + 4}">${name}</text>`);
  });
  out.push("</svg>");
  return out.join("\n") + "\n";
}

export function writeReport(dir, results, meta) {
  mkdirSync(dir, { recursive: true });
  const t = tables(results);
  const md = `# Benchmark

Generated by \`make bench\` (tests/bench/bench.mjs) on ${meta.date.slice(0, 10)}: ${meta.cpus} CPUs (${meta.cpu}), Node ${meta.node}, the built Worker in workerd (miniflare) on loopback, local defaults (rule-based provider, feature-hashing embedder, local vector index), no model calls.

Each size is one profile filled with generated LoCoMo-style memories and their messages (bulk import), its vectors embedded, then measured. Recall: ${meta.queries} varied LoCoMo questions, sequential, \`POST …/recall\` end to end over HTTP. "In DO" numbers are the stage alone inside the Durable Object (round trip with the stage repeated ${meta.stageRepeat}× minus the same call with 0 repetitions, median over ${meta.stageQueries} queries). Bare FTS5: one FTS5 query (the query's words OR-ed, bm25, top 10 with content) on the same data, through the same path as recall to the Durable Object. Ingest: LoCoMo sessions through \`POST …/ingest\` on the filled profile.

${t.main}

Recall stages inside the Durable Object, p50 in milliseconds:

${t.stages}

![latency](latency.svg)
`;
  writeFileSync(path.join(dir, "results.md"), md);
  writeFileSync(path.join(dir, "latency.svg"), svg(results));
  writeFileSync(path.join(dir, "results.json"), JSON.stringify({ meta, results }, null, 2) + "\n");
  return `${t.main}\n\n${t.stages}`;
}

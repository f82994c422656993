// `make bench-peaks`: how far one large request raises the Wasm linear
// memory. A Rust Worker's Durable Objects may share one isolate and one
// Wasm memory (128 MB on Cloudflare), which grows to a request's peak and
// never shrinks; local workerd enforces no such limit, so this reads the
// memory's size (`stats.isolate.wasmMemoryBytes`: its high-water mark)
// before and after each case instead. Every case runs in a FRESH workerd
// (a new Miniflare on the same storage), so the mark after it belongs to
// that case alone. In workerd the Worker's fetch handler and its Durable
// Objects run in one isolate, so the mark covers both sides of the call
// (the body as the Worker reads and forwards it, and as the object parses
// and runs it). The BUILT bench Worker (build/ + src/entry.mjs), on
// loopback:
//   1. an ingest at the documented limits: 500 messages of 32 KB (~16.4 MB)
//      of questions with a few statements (~2 memories a message); and
//      PEAKS_PROSE_MESSAGES (default 500) of prose, every sentence a
//      statement and so a candidate of the local rule-based extraction
//      (at most 32 a message are kept: ingest::extract);
//   1e. the same count of messages of relative dates to write out
//      ("tonight", 30 KB each);
//   1d. PEAKS_CONCURRENT (default 4) such ingests at once, a profile each;
//   2. exports of that profile, after its first ingest and once filled by
//      PEAKS_SOURCE_INGESTS (default 4) such ingests (~64 MiB of text);
//   3. imports of NDJSON files of PEAKS_SIZES MiB (default 4,8; 8 is taken
//      as just under the 8 MiB limit), each into a profile of its own; the
//      files are slices of the second export (whole messages and the
//      memories citing them).
// Each case reads the mark before the request, just after its response,
// and once the background work the request queued (the alarm's drain)
// has finished or PEAKS_SETTLE_S (default 120) seconds have passed.
// A case that fails (an error status, or workerd gone) is recorded as its
// result. Prints the table and writes peaks.md and peaks.json into
// BENCH_OUT (default docs/bench). Not part of `make test`.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { ROOT } from "../workerd/helpers.mjs";
import { request, rss as processMemory, startOnOwnSocket, workerdPid } from "./client.mjs";
import { MESSAGE_BYTES, MESSAGES_PER_INGEST, ingestBody } from "./large.mjs";

const MiB = 1048576;
const SIZES = (process.env.PEAKS_SIZES || "4,8").split(",").map(Number);
const SOURCE_INGESTS = Number(process.env.PEAKS_SOURCE_INGESTS || 4);
const PROSE = Number(process.env.PEAKS_PROSE_MESSAGES ?? 500);
const SETTLE_S = Number(process.env.PEAKS_SETTLE_S || 120);
const CONCURRENT = Number(process.env.PEAKS_CONCURRENT || 4);
const OUT = path.resolve(ROOT, process.env.BENCH_OUT || "docs/bench");
const AUTH = "Bearer dev-token";
const MAX_IMPORT_BYTES = 8 * MiB;
/** Room left under the import limit for the largest file. */
const UNDER_LIMIT = 64 * 1024;

const log = (...a) => console.error("[bench-peaks]", ...a);
const mb = (b) => (Number.isFinite(b) ? (b / MiB).toFixed(1) : "-");
/** A profile's routes: this service's own (`/accounts/…`, full reports),
 * or Cloudflare's published ones (`/client/v4/…`) for a profile named
 * `published-…`, where an ingest's result is null and none is written. */
const base = (p) => `${p.startsWith("published-") ? "/client/v4" : ""}/accounts/bench/agent-memory/namespaces/peaks/profiles/${p}`;

// ---------------------------------------------------------------- files

/**
 * Import files cut from an export: for each target size (MiB), the header,
 * the first messages in the export's order and the memories all of whose
 * sources those are, as many as fit (a memory's link to a version the file
 * leaves out is dropped, as a filtered export drops it). Every record is
 * whole and as the service wrote it, so each file is a valid import.
 */
function slices(exportText, sizesMiB) {
  const lines = exportText.split("\n").filter((l) => l.trim());
  const header = lines[0];
  const messages = [];
  const memories = [];
  for (const l of lines.slice(1)) {
    const v = JSON.parse(l);
    if (v.kind === "message") messages.push({ id: v.id, line: l });
    else if (v.kind === "memory") memories.push(v);
  }
  // Each memory after the last of its sources, in the export's order.
  const position = new Map(messages.map((m, i) => [m.id, i]));
  const after = new Map();
  for (const m of memories) {
    const last = Math.max(-1, ...m.sourceMessageIds.map((id) => position.get(id) ?? Infinity));
    if (!Number.isFinite(last)) continue;
    if (!after.has(last)) after.set(last, []);
    after.get(last).push(m);
  }
  const byteLen = (s) => Buffer.byteLength(s) + 1;
  const files = {};
  for (const size of sizesMiB) {
    const target = Math.min(size * MiB, MAX_IMPORT_BYTES - UNDER_LIMIT);
    let bytes = byteLen(header);
    let n = 0;
    const taken = [];
    // Messages, each with the memories it completes, while they fit (a
    // memory's own line is counted before its links are trimmed: a few
    // bytes over at most).
    for (; n < messages.length; n++) {
      const add = byteLen(messages[n].line) + (after.get(n) ?? []).reduce((a, m) => a + byteLen(JSON.stringify(m)), 0);
      if (bytes + add > target) break;
      bytes += add;
      taken.push(...(after.get(n) ?? []));
    }
    const held = new Set(taken.map((m) => m.id));
    const out = [header, ...messages.slice(0, n).map((m) => m.line)];
    for (const m of [...(after.get(-1) ?? []), ...taken]) {
      const c = { ...m };
      if (c.supersedes && !held.has(c.supersedes)) c.supersedes = null;
      if (c.supersededBy && !held.has(c.supersededBy)) c.supersededBy = null;
      out.push(JSON.stringify(c));
    }
    if (n === messages.length && bytes < target * 0.97) throw new Error(`the export (${mb(exportText.length)} MiB) is too small for a ${size} MiB file`);
    files[size] = { text: out.join("\n") + "\n", messages: n, memories: out.length - 1 - n };
  }
  return files;
}

// ---------------------------------------------------------------- runtime

/** A fresh workerd on `persistDir`, with helpers that read the Wasm memory. */
async function fresh(persistDir, vars = {}) {
  const { w, origin } = await startOnOwnSocket({ vars: { BENCH: "1", ...vars }, persistDir });
  const pid = workerdPid();
  const alive = () => pid !== null && existsSync(`/proc/${pid}`);
  async function http(p, method, route, body, type = "application/json", own = false) {
    const headers = { authorization: AUTH };
    if (body !== undefined) headers["content-type"] = type;
    const res = await request(`${origin}${base(p)}${route}`, { method, headers, body, own });
    return res;
  }
  async function json(p, method, route, body, type, own) {
    const res = await http(p, method, route, body, type, own);
    let v;
    try {
      v = JSON.parse(res.text);
    } catch {
      throw new Error(`${method} ${route}: ${res.status} ${res.text.slice(0, 200)}`);
    }
    if (!v.success) throw new Error(`${method} ${route}: ${res.status} ${JSON.stringify(v.errors).slice(0, 300)}`);
    return v.result;
  }
  const stats = (p) => json(p, "GET", "/stats");
  /** Waits until `p` has no background job waiting, or `seconds` pass. */
  async function settle(p, seconds) {
    const until = performance.now() + seconds * 1000;
    let s = await stats(p);
    while (s.pendingJobs > 0 && performance.now() < until) {
      await new Promise((r) => setTimeout(r, 1000));
      s = await stats(p);
    }
    return s;
  }
  return { w, pid, alive, http, json, stats, settle, dispose: () => w.dispose().catch(() => {}) };
}

/**
 * One case in a fresh workerd: `before` (stats of `profile`), then `run`
 * (which sets `row.bytes`, the body's or response's size), then the mark just
 * after and once the background work settled. Failures are its result.
 */
async function measure(persistDir, name, profile, run, { settle = true, vars = {} } = {}) {
  const row = { case: name, bytes: NaN, before: NaN, after: NaN, settled: NaN, pending: NaN, rssHwm: NaN, seconds: NaN, error: null, waits: 0 };
  let rt;
  try {
    rt = await fresh(persistDir, vars);
    row.before = (await rt.stats(profile)).isolate.wasmMemoryBytes;
    const t = performance.now();
    try {
      await run(rt, row);
    } catch (e) {
      // The request failed: its result, and the mark it left if workerd lives.
      row.error = `${rt.alive() ? "" : "workerd died: "}${String(e.message ?? e).slice(0, 200)}`;
      settle = false;
    }
    row.seconds = (performance.now() - t) / 1000;
    const after = await rt.stats(profile);
    row.after = after.isolate.wasmMemoryBytes;
    row.waits = after.isolate.workingSetWaits;
    row.pending = after.pendingJobs;
    if (settle) {
      const s = await rt.settle(profile, SETTLE_S);
      row.settled = s.isolate.wasmMemoryBytes;
      row.pending = s.pendingJobs;
    }
  } catch (e) {
    row.error ??= `${rt && !rt.alive() ? "workerd died: " : ""}${String(e.message ?? e).slice(0, 200)}`;
  }
  if (rt) {
    row.rssHwm = processMemory(rt.pid).hwm;
    await rt.dispose();
  }
  const ratio = (row.after - row.before) / row.bytes;
  log(`${name}: ${mb(row.bytes)} MiB; wasm ${mb(row.before)} -> ${mb(row.after)} (settled ${mb(row.settled)}) MiB; ratio ${ratio.toFixed(2)}${row.error ? `; ERROR ${row.error}` : ""}`);
  return row;
}

async function main() {
  const persistDir = mkdtempSync(path.join(tmpdir(), "agent-memory-peaks-"));
  const rows = [];
  const t0 = performance.now();
  try {
    // 1. An ingest at the limits, into the profile whose export makes the
    // import files; then (the case measured) the rest of its fill.
    let exportText = "";
    rows.push(
      await measure(persistDir, "ingest 500 x 32 KB", "source", async (rt, row) => {
        const body = ingestBody("s0", 0);
        row.bytes = Buffer.byteLength(body);
        const r = await rt.json("source", "POST", "/ingest", body);
        row.case += ` (${r.memoriesStored} memories)`;
      }),
    );
    // 1b. The same ingest path when every sentence states something: the
    // local extraction finds hundreds a message and keeps 32 of each, at
    // PEAKS_PROSE_MESSAGES (default 500) messages (before that cap, 500 of
    // them ran for more than ten minutes here).
    if (PROSE > 0) {
      rows.push(
        await measure(persistDir, `ingest ${PROSE} x 32 KB, prose (every sentence a statement)`, "prose", async (rt, row) => {
          const body = ingestBody("prose", 1000, PROSE, true);
          row.bytes = Buffer.byteLength(body);
          const r = await rt.json("prose", "POST", "/ingest", body);
          row.case += ` (${r.memoriesStored} memories)`;
        }),
      );
    }
    // 1e. An ingest at the limits whose every message is relative dates
    // to write out ("tonight" becomes "on the night of 2026-04-16", 3.25
    // times as long): a message whose dates written out would pass a
    // message's limit is kept as sent (dates::resolve_within; written
    // out, the Wasm memory reached 176 MB, past the isolate's 128 MB).
    rows.push(
      await measure(persistDir, `ingest ${MESSAGES_PER_INGEST} x 30 KB of "tonight" (relative dates)`, "dated", async (rt, row) => {
        const messages = Array.from({ length: MESSAGES_PER_INGEST }, (_, i) => ({
          role: "user",
          content: `${i} ${"tonight ".repeat(3750)}`,
          timestamp: "2026-04-16T10:00:00Z",
        }));
        const body = JSON.stringify({ messages, sessionId: "dated" });
        row.bytes = Buffer.byteLength(body);
        const r = await rt.json("dated", "POST", "/ingest", body);
        row.case += ` (${r.memoriesStored} memories)`;
      }),
    );
    // 1c. Both over the published routes: the same work, but the caller
    // reads no result (null), so the report of every memory stored is
    // never written.
    rows.push(
      await measure(persistDir, "ingest 500 x 32 KB, published route", "published-source", async (rt, row) => {
        const body = ingestBody("s0", 0);
        row.bytes = Buffer.byteLength(body);
        await rt.json("published-source", "POST", "/ingest", body);
      }),
    );
    if (PROSE > 0) {
      rows.push(
        await measure(persistDir, `ingest ${PROSE} x 32 KB, prose, published route`, "published-prose", async (rt, row) => {
          const body = ingestBody("prose", 1000, PROSE, true);
          row.bytes = Buffer.byteLength(body);
          await rt.json("published-prose", "POST", "/ingest", body);
        }),
      );
    }
    // 1d. Several ingests at the limits at once, a profile each, over the
    // published route: the profiles share the isolate's memory, and its
    // budget counts what profiles keep between requests, not what a
    // request holds while it runs.
    // Once with the isolate's working set at its default, where they take
    // turns for room, and once with it unbounded (as before it existed).
    if (CONCURRENT > 1) {
      for (const [label, vars] of [["", {}], [", working set unbounded", { MEMORY_WORKING_SET_MB: "1000" }]]) {
        rows.push(
          await measure(
            persistDir,
            `${CONCURRENT} ingests of 500 x 32 KB at once, a profile each, published route${label}`,
            "published-at-once-0",
            async (rt, row) => {
              const bodies = Array.from({ length: CONCURRENT }, (_, i) => ingestBody(`c${i}`, 100 + i));
              row.bytes = bodies.reduce((n, b) => n + Buffer.byteLength(b), 0);
              // Each on a connection of its own: at once, not one after another.
              await Promise.all(bodies.map((b, i) => rt.json(`published-at-once${label ? "-unbounded" : ""}-${i}`, "POST", "/ingest", b, "application/json", true)));
            },
            { vars },
          ),
        );
      }
    }
    // 2. Exports of the profile of case 1, as it is and once filled.
    // With a filter every memory passes: the same file, less the messages
    // no memory cites.
    const EVERY = `?filter=${encodeURIComponent(JSON.stringify({ createdAt: { gte: "2000-01-01T00:00:00Z" } }))}`;
    const exportCase = (ingests, filtered = false) =>
      measure(
        persistDir,
        `export${filtered ? " with a filter" : ""} of a profile of ${ingests} such ingest${ingests > 1 ? "s" : ""}`,
        "source",
        async (rt, row) => {
          const res = await rt.http("source", "GET", `/export${filtered ? EVERY : ""}`);
          if (res.status !== 200) throw new Error(`GET /export: ${res.status} ${res.text.slice(0, 200)}`);
          row.bytes = Buffer.byteLength(res.text);
          if (!filtered) exportText = res.text;
        },
        { settle: false },
      );
    rows.push(await exportCase(1));
    if (SOURCE_INGESTS > 1) {
      log(`filling the source profile: ${SOURCE_INGESTS - 1} more ingests of ${MESSAGES_PER_INGEST} x 32 KB`);
      const rt = await fresh(persistDir);
      try {
        for (let s = 1; s < SOURCE_INGESTS; s++) await rt.json("source", "POST", "/ingest", ingestBody(`s${s}`, s));
        const st = await rt.settle("source", 600);
        log(`source: ${st.messages} messages, ${st.memories} memories, ${st.pendingJobs} jobs waiting; wasm ${mb(st.isolate.wasmMemoryBytes)} MiB`);
      } finally {
        await rt.dispose();
      }
      rows.push(await exportCase(SOURCE_INGESTS));
      rows.push(await exportCase(SOURCE_INGESTS, true));
    }
    const files = slices(exportText, SIZES);
    exportText = "";
    for (const s of SIZES) log(`file ${s}: ${mb(Buffer.byteLength(files[s].text))} MiB, ${files[s].messages} messages, ${files[s].memories} memories`);

    // 3. Imports, each into a profile of its own.
    for (const s of SIZES) {
      const f = files[s];
      rows.push(
        await measure(persistDir, `import ${s} MiB file (${f.messages} msgs, ${f.memories} mems)`, `import-${s}`, async (rt, row) => {
          row.bytes = Buffer.byteLength(f.text);
          await rt.json(`import-${s}`, "POST", "/import", f.text, "application/x-ndjson");
        }),
      );
    }
  } finally {
    rmSync(persistDir, { recursive: true, force: true });
  }

  const date = new Date().toISOString();
  const result = { date, command: "make bench-peaks", sizesMiB: SIZES, sourceIngests: SOURCE_INGESTS, seconds: Math.round((performance.now() - t0) / 1000), cases: rows };
  mkdirSync(OUT, { recursive: true });
  writeFileSync(path.join(OUT, "peaks.json"), JSON.stringify(result, null, 2) + "\n");
  const ratio = (r) => (Number.isFinite(r.after - r.before) && r.bytes > 0 ? ((r.after - r.before) / r.bytes).toFixed(2) : "-");
  const md = [
    `# make bench-peaks (${date})`,
    "",
    "Command: `make bench-peaks` (tests/bench/peaks.mjs). Each case in a fresh workerd (local, miniflare), bench build of the Worker.",
    "The Wasm linear memory's size (`stats.isolate.wasmMemoryBytes`; it never shrinks, so it is the high-water mark) before the request,",
    "just after its response, and once the background work it queued had drained (or " + SETTLE_S + " s had passed; exports queue none).",
    "In workerd the Worker and its Durable Objects share one isolate and one Wasm memory, so the mark covers both sides of the call.",
    "MiB throughout (1,048,576 bytes). Ratio = (after - before) / body or response size. Cloudflare's isolate limit is 128 MB.",
    "Ingest and import texts are synthetic (tests/bench/peaks.mjs `text`); memories come from the local rule-based extraction (the default",
    "configuration), which makes a candidate of every sentence that states something and keeps at most 32 a message: the prose case is",
    "run at " + PROSE + " messages (before that cap, 50 messages made 20,255 memories and 500 gave no answer within 300 s). The exports are of the profile the first ingest made, as it is and",
    "once filled by " + SOURCE_INGESTS + " such ingests; the import files are slices of the second export. Every case uses this service's own",
    "routes (`/accounts/…`, whose ingest answers a report of every memory stored) but those marked \"published route\", which send the",
    "same ingest to Cloudflare's published routes (`/client/v4/…`), whose ingest result is null: the profile then writes no report.",
    "",
    "| case | body/response MiB | Wasm memory before -> after MiB | ratio | after drain MiB | workerd RSS high-water MiB | s | result |",
    "|---|---:|---:|---:|---:|---:|---:|---|",
    ...rows.map(
      (r) =>
        `| ${r.case} | ${mb(r.bytes)} | ${mb(r.before)} -> ${mb(r.after)} | ${ratio(r)} | ${mb(r.settled)}${r.pending > 0 ? ` (${r.pending} jobs left)` : ""} | ${mb(r.rssHwm)} | ${Number.isFinite(r.seconds) ? r.seconds.toFixed(1) : "-"} | ${r.error ? r.error.replace(/\|/g, "/") : "ok"}${r.waits > 0 ? ` (${r.waits} waited for room)` : ""} |`,
    ),
    "",
  ].join("\n");
  writeFileSync(path.join(OUT, "peaks.md"), md);
  console.log(md);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

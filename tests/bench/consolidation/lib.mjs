// Review helpers (consolidation review). Not part of the suite.
import { startWorker } from "../../workerd/helpers.mjs";
import { restClient, parseExport, waitFor, sleep } from "../../workerd/reliability-support.mjs";
export { startWorker, restClient, parseExport, waitFor, sleep };
export const TOKEN = "dev-token";
export const DAY = 86_400_000;
export const MiB = 1048576;
export const mb = (b) => (b / MiB).toFixed(1);
export const hexId = (n) => n.toString(16).padStart(32, "0");
// Deterministic pseudo-words, no digits.
const SYL = "ba be bi bo bu ka ke ki ko ku la le li lo lu ma me mi mo mu na ne ni no nu pa pe pi po pu ra re ri ro ru sa se si so su ta te ti to tu va ve vi vo vu za ze zi zo zu".split(" ");
export function prose(n, seed) {
  let x = (Math.imul(seed + 1, 2654435761) ^ 0x9e3779b9) >>> 0;
  const rnd = () => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0), x >>> 8);
  let s = "";
  while (s.length < n) {
    const k = 2 + (rnd() % 3);
    let w = "";
    for (let i = 0; i < k; i++) w += SYL[rnd() % SYL.length];
    s += w + (rnd() % 12 === 0 ? ". " : " ");
  }
  return s.slice(0, n).trim() + ".";
}
export function memoryLine(m) {
  return JSON.stringify({ kind: "memory", type: "fact", summary: m.content.slice(0, 100), sessionId: "s", sourceMessageIds: [], searchQueries: [], status: "active", ...m });
}
export function header(profile) {
  return JSON.stringify({ kind: "header", format: "agent-memory-export", version: 1, profile });
}
export async function importLines(api, ns, profile, lines) {
  const r = await api.send("POST", ns, profile, "/import", { raw: [header(`${ns}/${profile}`), ...lines].join("\n") + "\n", headers: { "content-type": "application/x-ndjson" } });
  if (r.status !== 200) throw new Error(`import ${profile}: ${r.status} ${r.text.slice(0, 400)}`);
  return r.body.result;
}
export async function stats(api, ns, p) {
  return api.ok("GET", ns, p, "/stats");
}
export async function drained(api, ns, p, timeoutMs = 300000) {
  return waitFor(async () => { const s = await stats(api, ns, p); return s.pendingJobs === 0 ? s : null; }, { timeoutMs, intervalMs: 500, what: `${p} drained` });
}

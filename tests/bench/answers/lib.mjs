// Review helpers: start the built Worker in one workerd, HTTP, stats.
import http from "node:http";
import { startOnOwnSocket, workerdPid, rss } from "../client.mjs";
import path from "node:path";
import { fileURLToPath } from "node:url";
/** Where the profiles filled by fill.mjs live (ANSWERS_STATE, default target/answers-state). */
export const STATE = process.env.ANSWERS_STATE || path.join(path.dirname(fileURLToPath(import.meta.url)), "../../../target/answers-state");
export const MiB = 1048576;
export const mb = (b) => (b / MiB).toFixed(1);
export const AUTH = "Bearer dev-token";
export function req(url, { method = "GET", headers = {}, body, readSlow = 0 } = {}) {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const r = http.request({ hostname: u.hostname, port: u.port, path: u.pathname + u.search, method, headers: { authorization: AUTH, ...(body !== undefined ? { "content-type": "application/json" } : {}), ...headers }, agent: false }, (res) => {
      const chunks = [];
      let n = 0;
      if (readSlow) { res.pause(); setTimeout(() => res.resume(), readSlow); }
      res.on("data", (c) => { chunks.push(c); n += c.length; });
      res.on("end", () => resolve({ status: res.statusCode, bytes: n, text: n < 64 * MiB ? Buffer.concat(chunks).toString("utf8") : "" }));
      res.on("error", reject);
    });
    r.setTimeout(600000, () => r.destroy(new Error("timeout")));
    r.on("error", reject);
    r.end(body);
  });
}
export async function start(vars = {}, persistDir) {
  const { w, origin } = await startOnOwnSocket({ vars, persistDir });
  const pid = workerdPid();
  const base = (p, pub = false) => `${origin}${pub ? "/client/v4" : ""}/accounts/a/agent-memory/namespaces/rev/profiles/${p}`;
  const stats = async (p = "stats-probe") => JSON.parse((await req(base(p) + "/stats")).text).result;
  const iso = async () => (await stats()).isolate;
  return { w, origin, pid, base, stats, iso, rss: () => rss(pid), dispose: () => w.dispose().catch(() => {}) };
}
// random words text of ~n bytes
const WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu".split(" ");
export function text(n, seed = 0) {
  let s = "w" + seed + " "; let x = (Math.imul(seed, 2654435761) + 12345) >>> 0;
  while (s.length < n - 20) { x = (Math.imul(x, 1103515245) + 12345) >>> 0; s += WORDS[(x >>> 16) % 26] + ((x >>> 8) % 997) + " "; }
  return s.slice(0, n);
}

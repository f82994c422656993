// The benchmarks' HTTP client: node:http on kept-alive connections, one
// request at a time per origin, with a timeout and one retry of a
// kept-alive connection the server closed. (Node's fetch costs about the
// same, ~0.1 ms more for the smallest request: docs/bench/path.md
// measures both against a Worker that only answers "ok".)
import { readFileSync, readdirSync } from "node:fs";
import http from "node:http";
import { startWorker } from "../workerd/helpers.mjs";

/** The Worker's service name in miniflare (wrangler.toml's `name`). */
const SERVICE = "agent-memory";

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
/** No request of the benchmarks takes this long (the largest is an import of 4,000 memories). */
const TIMEOUT_MS = 300_000;

/**
 * One request; resolves to `{ status, text }` once the whole body is read.
 * A kept-alive connection the server closed just as it was reused is
 * retried once on a new one (the request never reached the Worker).
 * @param {string} url
 * @param {{ method?: string, headers?: object, body?: string | Buffer }} [init]
 */
export function request(url, init = {}, retried = false) {
  // `own: true`: a connection of its own (the shared agent sends one
  // request at a time).
  const { method = "GET", headers = {}, body, own = false } = init;
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const req = http.request({ hostname: u.hostname.replace(/^\[|\]$/g, ""), port: u.port, path: u.pathname + u.search, method, headers, agent: own ? false : agent }, (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString("utf8") }));
      res.on("error", reject);
    });
    req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error(`${method} ${url}: no answer in ${TIMEOUT_MS / 1000} s`)));
    req.on("error", (e) => {
      if (!retried && req.reusedSocket && e.code === "ECONNRESET") resolve(request(url, init, true));
      else reject(e);
    });
    req.end(body);
  });
}

/** GET `url`; throws unless the status is `expect`. */
export async function expectStatus(url, expect = 200, headers = {}) {
  const res = await request(url, { headers });
  if (res.status !== expect) throw new Error(`GET ${url}: ${res.status} (expected ${expect}) ${res.text.slice(0, 200)}`);
  return res;
}

/** A socket of its own on loopback, as miniflare's `unsafeDirectSockets` takes it. */
export const OWN_SOCKET = [{ host: "127.0.0.1", port: 0 }];

/**
 * Starts the built Worker (tests/workerd/helpers.mjs `startWorker`, `opts`
 * as there) with a socket of its own beside miniflare's entry worker.
 * Resolves to `{ w, origin, entry }`: the started Worker, the origin of its
 * own socket (what the benchmarks send their requests to) and that of the
 * entry worker, each without a trailing slash.
 */
export async function startOnOwnSocket(opts = {}) {
  const w = await startWorker({ ...opts, serviceOverrides: { ...opts.serviceOverrides, unsafeDirectSockets: OWN_SOCKET } });
  const origin = String(await w.miniflare.unsafeGetDirectURL(SERVICE)).replace(/\/$/, "");
  return { w, origin, entry: String(w.url).replace(/\/$/, "") };
}

/** The workerd process miniflare started (a child of this process). */
export function workerdPid() {
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === process.pid && comm.includes("workerd")) return Number(d);
    } catch {
      // the process went away
    }
  }
  return null;
}

/** The resident set of process `pid` now and at its high-water mark, in bytes. */
export function rss(pid) {
  if (!pid) return { rss: NaN, hwm: NaN };
  try {
    const s = readFileSync(`/proc/${pid}/status`, "utf8");
    const kb = (k) => Number((new RegExp(`${k}:\\s+(\\d+)`).exec(s) || [])[1]) * 1024;
    return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

/** The `p`th percentile of `xs` (nearest rank); NaN for none. */
export function pct(xs, p) {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

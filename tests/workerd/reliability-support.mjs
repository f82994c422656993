// Shared pieces of the reliability suites (tests/workerd/reliability*.test.mjs):
// a small REST client, bounded polling, export parsing, and read-only access
// to a stopped profile object's SQLite file for "is it really gone" checks.
import assert from "node:assert/strict";
import { readdirSync, readFileSync, statSync, existsSync } from "node:fs";
import path from "node:path";
import net from "node:net";
import http from "node:http";

export const ACCOUNT = "acct";

/** `/accounts/acct/agent-memory/namespaces/{ns}/profiles/{profile}{suffix}` */
export function profilePath(ns, profile, suffix = "") {
  return `/accounts/${ACCOUNT}/agent-memory/namespaces/${ns}/profiles/${profile}${suffix}`;
}

/**
 * REST client over a started worker (tests/workerd/helpers.mjs).
 *   const api = restClient(w, "dev-token");
 *   const r = await api.post("ns", "p", "/remember", { content: "..." });
 *   r.status, r.body (parsed JSON or null), r.text, r.headers
 */
export function restClient(w, token) {
  const send = async (method, ns, profile, suffix, { body, raw, headers = {}, query } = {}) => {
    const h = { ...headers };
    if (token) h.authorization = `Bearer ${token}`;
    let payload;
    if (raw !== undefined) payload = raw;
    else if (body !== undefined) {
      payload = JSON.stringify(body);
      h["content-type"] ??= "application/json";
    }
    const qs = query ? `?${new URLSearchParams(query)}` : "";
    const res = await w.fetch(profilePath(ns, profile, suffix) + qs, { method, headers: h, body: payload });
    const text = await res.text();
    let parsed = null;
    try {
      parsed = JSON.parse(text);
    } catch {}
    return { status: res.status, body: parsed, text, headers: res.headers };
  };
  return {
    send,
    get: (ns, p, suffix, opts) => send("GET", ns, p, suffix, opts),
    post: (ns, p, suffix, body, opts = {}) => send("POST", ns, p, suffix, { ...opts, body }),
    del: (ns, p, suffix, opts) => send("DELETE", ns, p, suffix, opts),
    /** Asserts a 200 envelope and returns its result. */
    async ok(method, ns, p, suffix, opts) {
      const r = await send(method, ns, p, suffix, opts);
      assert.equal(r.status, 200, `${method} ${suffix}: ${r.status} ${r.text.slice(0, 300)}`);
      if (r.body && typeof r.body === "object" && "success" in r.body) {
        assert.equal(r.body.success, true);
        return r.body.result;
      }
      return r.text;
    },
  };
}

/** Every record of an NDJSON export. */
export function parseExport(text) {
  return text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

/** Polls `fn` until it returns a truthy value; bounded in time. */
export async function waitFor(fn, { timeoutMs = 20000, intervalMs = 200, what = "condition" } = {}) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    last = await fn();
    if (last) return last;
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last value ${JSON.stringify(last)}`);
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A loopback port nothing listens on (bound, then closed). */
export async function closedPort() {
  const srv = net.createServer();
  await new Promise((r) => srv.listen(0, "127.0.0.1", r));
  const { port } = srv.address();
  await new Promise((r) => srv.close(r));
  return port;
}

/** The SQLite files of the profile objects under a persist directory. */
export function profileDatabases(persistDir) {
  const dir = path.join(persistDir, "do", "agent-memory-ProfileObject");
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite")
    .map((f) => path.join(dir, f));
}

/**
 * Opens a STOPPED worker's profile database (after w.dispose() with a kept
 * persistDir), checkpoints its WAL, and returns every table's text as one
 * string per table, for searching. Only for tests.
 */
export async function databaseText(file) {
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(file);
  try {
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    const tables = db
      .prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
      .all()
      .map((r) => r.name);
    const out = {};
    for (const t of tables) {
      let rows;
      try {
        rows = db.prepare(`SELECT * FROM "${t}"`).all();
      } catch {
        continue; // virtual tables whose module node lacks; their shadow tables are read instead
      }
      out[t] = rows
        .map((r) =>
          Object.values(r)
            .map((v) => (v instanceof Uint8Array ? Buffer.from(v).toString("latin1") : String(v)))
            .join("\u0001"),
        )
        .join("\n");
    }
    return out;
  } finally {
    db.close();
  }
}

/** Runs one read-only query against a stopped worker's profile database. */
export async function queryDatabase(file, sql, ...params) {
  const { DatabaseSync } = await import("node:sqlite");
  const db = new DatabaseSync(file);
  try {
    return db.prepare(sql).all(...params);
  } finally {
    db.close();
  }
}

/** Raw bytes of a database file and its WAL, for a last-resort grep. */
export function databaseBytes(file) {
  const parts = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f));
  return Buffer.concat(parts);
}

export function fileSize(f) {
  return existsSync(f) ? statSync(f).size : 0;
}

/**
 * An HTTP server on 127.0.0.1 for a stand-in (`handler` as for
 * http.createServer). Resolves to `{ baseUrl, close }`: `baseUrl` is
 * `http://127.0.0.1:<port>/v1` (the OpenAI-compatible base path); `close`
 * drops every open connection, then stops the server.
 */
export async function serveOnLoopback(handler) {
  const sockets = new Set();
  const server = http.createServer(handler);
  server.on("connection", (sock) => {
    sockets.add(sock);
    sock.on("close", () => sockets.delete(sock));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    baseUrl: `http://127.0.0.1:${server.address().port}/v1`,
    close: async () => {
      for (const sock of sockets) sock.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

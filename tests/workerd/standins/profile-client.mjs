// REST helpers for tests against the service in workerd: one profile's
// endpoints, polling its stats until the Durable Object alarm has drained
// the outbox, and (for failure messages) when that alarm is scheduled.
import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";

export const TOKEN = "dev-token";

/** REST client of `{namespace}/{profile}` over `w.fetch`. */
export function profileClient(w, namespace, profile, token = TOKEN) {
  const base = `/accounts/a/agent-memory/namespaces/${namespace}/profiles/${profile}`;
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json" };
  const send = async (method, pathname, body) => {
    const res = await w.fetch(`${base}${pathname}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const envelope = await res.json();
    if (res.status !== 200 || !envelope.success) {
      throw new Error(`${method} ${pathname} -> ${res.status}: ${JSON.stringify(envelope.errors)}`);
    }
    return envelope;
  };
  return {
    name: `${namespace}/${profile}`,
    /** The whole envelope: `{success, result, errors, messages}`. */
    envelope: send,
    ingest: async (body) => (await send("POST", "/ingest", body)).result,
    remember: async (body) => (await send("POST", "/remember", body)).result,
    recall: (body) => send("POST", "/recall", body),
    list: async (query = "") => (await send("GET", `/memories${query}`)).result,
    forget: async (id) => (await send("POST", `/memories/${id}/forget`)).result,
    stats: async () => (await send("GET", "/stats")).result,
    deleteProfile: async () => (await send("DELETE", "")).result,
  };
}

/**
 * Polls the profile's stats until `done(stats)` holds (the alarm drains the
 * outbox in the background). Fails after `timeoutMs` (sooner when the
 * object's alarm is more than a day away) with the last stats and the time
 * the Durable Object's alarm is set for.
 */
export async function waitForStats(w, client, done, { timeoutMs = 12_000, what = "the outbox to drain" } = {}) {
  const started = Date.now();
  const deadline = started + timeoutMs;
  let last;
  let stuck = false;
  while (Date.now() < deadline) {
    last = await client.stats();
    if (done(last)) return last;
    // Fail fast when the alarm is due in more than a day: no job backoff
    // (10 min at most) explains that, and waiting would change nothing.
    if (Date.now() - started > 1_000) {
      const due = await scheduledAlarm(w, client.name);
      if (due !== undefined && due - Date.now() > 86_400_000) {
        stuck = true;
        break;
      }
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const alarm = await scheduledAlarm(w, client.name);
  const alarmNote =
    alarm === undefined
      ? "no alarm found in the object's storage"
      : `the object's alarm is set for ${new Date(alarm).toISOString()} (${Math.round((alarm - Date.now()) / 1000)} s from now)`;
  const waited = stuck ? `gave up after ${Date.now() - started} ms` : `timed out after ${timeoutMs} ms`;
  throw new Error(
    `${waited} waiting for ${what} of ${client.name}: pendingJobs=${last?.pendingJobs}, ` +
      `failedJobs=${last?.failedJobs}, memories=${last?.memories}, vectors=${last?.vectors}; ${alarmNote}`,
  );
}

/**
 * When the alarm of the profile object named `objectName` is due (epoch
 * millis), read from its SQLite file in the test's storage directory
 * (workerd keeps it in `_cf_METADATA`, key 1, in nanoseconds). Best effort:
 * undefined when it cannot be read. For failure messages only.
 */
export async function scheduledAlarm(w, objectName) {
  try {
    const { DatabaseSync } = await import("node:sqlite");
    const dir = path.join(w.persistDir, "do", "agent-memory-ProfileObject");
    if (!existsSync(dir)) return undefined;
    for (const f of readdirSync(dir)) {
      if (!f.endsWith(".sqlite") || f === "metadata.sqlite") continue;
      const db = new DatabaseSync(path.join(dir, f), { readOnly: true });
      try {
        const name = db.prepare("SELECT value FROM meta WHERE key = 'name'").get()?.value;
        if (name !== objectName) continue;
        const st = db.prepare("SELECT value FROM _cf_METADATA WHERE key = 1");
        st.setReadBigInts(true);
        const ns = st.get()?.value;
        return ns === undefined ? undefined : Number(BigInt(ns) / 1_000_000n);
      } finally {
        db.close();
      }
    }
  } catch {
    // diagnostics only
  }
  return undefined;
}

/**
 * The Vectorize namespace and id prefix of a profile object, as
 * src/cloudflare/vectorize.rs derives them: SHA-256 over the length-prefixed
 * fields ("vectorize", "profile", name), first 16 bytes in hex; the prefix
 * is its first 16 characters.
 */
export function vectorizeNamespace(objectName) {
  const h = createHash("sha256");
  for (const field of ["vectorize", "profile", objectName]) {
    const bytes = Buffer.from(field, "utf8");
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(bytes.length));
    h.update(len);
    h.update(bytes);
  }
  const namespace = h.digest().subarray(0, 16).toString("hex");
  return { namespace, prefix: namespace.slice(0, 16) };
}

// A job parked as of a kind the running build did not know (a rollback to
// an older build) is due again once a build that knows it runs, and the
// profile's first call after the restart, a read too, sets the alarm that
// runs it: no write has to come first.
//
// workerd is stopped, the parked job written into the profile's SQLite file
// as the older build would have left it (and no alarm set), then started
// again on the same storage.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { startWorker } from "./helpers.mjs";
import { restClient, waitFor, profileDatabases } from "./reliability-support.mjs";

const TOKEN = "dev-token";
const NS = "redeploy";
const PROFILE = "p";

test("after a restart, a read alone sets the alarm that runs a job parked for a kind the older build did not know", async () => {
  const dir = mkdtempSync(path.join(tmpdir(), "agent-memory-redeploy-"));
  let w = await startWorker({ persistDir: dir });
  try {
    const api = restClient(w, TOKEN);
    const remembered = await api.ok("POST", NS, PROFILE, "/remember", { body: { content: "The staging cluster runs in Frankfurt." } });
    await waitFor(async () => (await api.ok("GET", NS, PROFILE, "/stats")).pendingJobs === 0, { what: "the remember's background work" });
    await w.miniflare.dispose();

    // What the older build left: the memory's embedding job parked, its
    // kind unknown to that build, its day long up, and no alarm pending.
    const { DatabaseSync } = await import("node:sqlite");
    const [file] = profileDatabases(dir);
    const db = new DatabaseSync(file);
    try {
      db.prepare(
        "INSERT INTO outbox (kind, memory_id, attempts, next_attempt_at, last_error, created_at, parked) VALUES ('embed', ?, 0, 0, 'parked: this version knows no job of kind ''embed''', '2026-01-01T00:00:00Z', 1)",
      ).run(remembered.id);
    } finally {
      db.close();
    }

    await w.restart();
    const first = await api.ok("GET", NS, PROFILE, "/stats");
    assert.equal(first.parkedJobs, 1, "the job is parked when the restarted build first reads the profile");
    const after = await waitFor(
      async () => {
        const s = await api.ok("GET", NS, PROFILE, "/stats");
        return s.parkedJobs === 0 && s.pendingJobs === 0 ? s : null;
      },
      { timeoutMs: 10000, what: "the parked job to run after a read alone" },
    );
    assert.equal(after.vectors, 1, "the memory keeps its one vector");
  } finally {
    await w.dispose();
    rmSync(dir, { recursive: true, force: true });
  }
});

// The response validator every REST test leans on checks itself against
// the OpenAPI document: known good and bad responses, every reference
// resolving, no keyword it cannot check. (It went stale once, unrun: a
// sealed cursor, the note objects of `messages`.)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

test("the OpenAPI response validator passes its self-test against src/openapi.json", () => {
  const script = fileURLToPath(new URL("./openapi.mjs", import.meta.url));
  const run = spawnSync(process.execPath, [script, "--self-test"], { encoding: "utf8" });
  assert.equal(run.status, 0, `${run.stdout}${run.stderr}`);
  assert.match(run.stdout, /self-test: \d+ checks passed/);
});

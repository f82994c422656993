// The deploy check: what `wrangler deploy` would upload, built offline with
// `--dry-run --outdir`, for the default configuration and for
// `--env production`. Nothing is uploaded; no account is needed.
//
// - The default configuration ships no token and no provider setting at
//   all: a bare `wrangler deploy` serves a REST API that refuses every call
//   (503) until a secret AUTH_TOKENS is set.
// - Production ships Workers AI, Vectorize, both Durable Objects and their
//   migrations, and no local setting or development value.
// - Neither bundle holds the development token, and the gzipped upload
//   stays under the free plan's 3 MB.
//
// The check runs on a snapshot of the Worker (symbolic links to src/,
// build/ and www/, and wrangler.toml without its [build] table): the build
// is `make test`'s own, and node runs test files side by side, so this one
// must not rebuild build/ under the others. A .dev.vars with the
// development token sits in the snapshot, as it does after `make dev`: a
// deploy must leave it behind.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync, copyFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { gzipSync } from "node:zlib";
import { promisify } from "node:util";
import { ROOT } from "./helpers.mjs";

const run = promisify(execFile);
const DEV_TOKEN = "dev-token";
/** The free plan's limit on a Worker's compressed size. */
const MAX_GZIP_BYTES = 3 * 1024 * 1024;
/** Settings that only make sense locally. */
const LOCAL_SETTINGS = { LLM_PROVIDER: "local", EMBEDDER: "local", VECTOR_INDEX: "local" };

let work;
const dryRuns = {};

/** `wrangler deploy --dry-run` of the snapshot; its printed bindings and the bundle. */
async function dryRun(env) {
  const out = path.join(work, `out-${env ?? "default"}`);
  const args = ["deploy", "--dry-run", "--outdir", out, ...(env ? ["--env", env] : [])];
  const { stdout, stderr } = await run(path.join(ROOT, "node_modules", ".bin", "wrangler"), args, {
    cwd: path.join(work, "app"),
    // The binding table is printed at wrangler's default ("log") level.
    env: { ...process.env, WRANGLER_LOG: "log", WRANGLER_SEND_METRICS: "false", CI: "true" },
    maxBuffer: 16 * 1024 * 1024,
    timeout: 180_000,
  });
  const text = `${stdout}\n${stderr}`;
  const files = readdirSync(out).map((f) => path.join(out, f));
  return { text, bindings: bindingTable(text), files };
}

/** The rows of wrangler's "Your Worker has access to the following bindings" table. */
function bindingTable(text) {
  const lines = text.split("\n");
  const start = lines.findIndex((l) => l.includes("has access to the following bindings"));
  if (start < 0) return null;
  const rows = [];
  for (const line of lines.slice(start + 2)) {
    const m = /^env\.(\w+)(?: \((.*)\))?\s{2,}(.+?)\s*$/.exec(line.trim());
    if (!m) break;
    rows.push({ name: m[1], resource: m[2] ?? null, kind: m[3] });
  }
  return rows;
}

const vars = (rows) => Object.fromEntries(rows.filter((r) => r.kind === "Environment Variable").map((r) => [r.name, JSON.parse(r.resource)]));

before(async () => {
  work = mkdtempSync(path.join(tmpdir(), "agent-memory-deploy-"));
  const app = path.join(work, "app");
  mkdirSync(app);
  for (const dir of ["src", "build", "www"]) symlinkSync(path.join(ROOT, dir), path.join(app, dir));
  const config = readFileSync(path.join(ROOT, "wrangler.toml"), "utf8");
  // Every line of the [build] table, up to the next table.
  const withoutBuild = config.replace(/^\[build\]\n(?:(?!\[).*\n)*/m, "");
  assert.ok(!/^\[build\]$/m.test(withoutBuild) && !/^command = /m.test(withoutBuild) && withoutBuild.includes("[env.production]"));
  writeFileSync(path.join(app, "wrangler.toml"), withoutBuild);
  copyFileSync(path.join(ROOT, ".dev.vars.example"), path.join(app, ".dev.vars"));
  dryRuns.default = await dryRun(undefined);
  dryRuns.production = await dryRun("production");
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test("the default configuration's dry-run ships no token and no provider setting", () => {
  const { bindings, text } = dryRuns.default;
  assert.ok(bindings, `no binding table in wrangler's output:\n${text}`);
  assert.deepEqual(vars(bindings), {}, "no vars at all: AUTH_TOKENS is a secret, the providers default to the embedded ones");
  assert.ok(!text.includes(DEV_TOKEN), "the development token is nowhere in what wrangler reports");
  assert.deepEqual(
    bindings.filter((b) => b.kind === "Durable Object").map((b) => b.name).sort(),
    ["CATALOG", "PROFILES"],
  );
  assert.ok(!bindings.some((b) => b.name === "AI" || b.name === "VECTORIZE"), "no cloud bindings the local providers leave unused");
});

test("the production dry-run ships Workers AI, Vectorize, both Durable Objects and no local setting", () => {
  const { bindings, text } = dryRuns.production;
  assert.ok(bindings, `no binding table in wrangler's output:\n${text}`);
  const byName = Object.fromEntries(bindings.map((b) => [b.name, b]));
  assert.equal(byName.AI?.kind, "AI");
  assert.equal(byName.VECTORIZE?.kind, "Vectorize Index");
  assert.equal(byName.VECTORIZE?.resource, "agent-memory");
  assert.equal(byName.PROFILES?.resource, "ProfileObject");
  assert.equal(byName.CATALOG?.resource, "CatalogObject");
  assert.deepEqual(vars(bindings), { LLM_PROVIDER: "workers-ai", EMBEDDER: "workers-ai", VECTOR_INDEX: "vectorize", CONSOLIDATE_EVERY: "1000" });
  for (const [name, local] of Object.entries(LOCAL_SETTINGS)) {
    assert.notEqual(vars(bindings)[name], local, `${name} is local in production`);
  }
  assert.ok(!("AUTH_TOKENS" in vars(bindings)), "tokens are a secret, never a var");
  assert.ok(!text.includes(DEV_TOKEN));
});

test("neither bundle holds the development token or .dev.vars, and each is under 3 MB gzipped", () => {
  for (const [which, { files }] of Object.entries(dryRuns)) {
    const modules = files.filter((f) => !f.endsWith(".map") && !f.endsWith("README.md"));
    assert.ok(modules.some((f) => f.endsWith(".wasm")) && modules.some((f) => f.endsWith(".js")), `${which}: ${files}`);
    let gzipped = 0;
    for (const f of modules) {
      const bytes = readFileSync(f);
      assert.ok(!bytes.includes(Buffer.from(DEV_TOKEN)), `${which}: ${path.basename(f)} holds the development token`);
      assert.ok(!bytes.includes(Buffer.from("AUTH_TOKENS='")), `${which}: ${path.basename(f)} holds .dev.vars`);
      gzipped += gzipSync(bytes, { level: 9 }).length;
    }
    assert.ok(gzipped < MAX_GZIP_BYTES, `${which}: ${gzipped} bytes gzipped, over ${MAX_GZIP_BYTES}`);
    const total = modules.reduce((n, f) => n + statSync(f).size, 0);
    console.log(`deploy check: ${which} bundle ${total} bytes, ${gzipped} gzipped`);
  }
});

test("the production environment keeps the Durable Object migrations", async () => {
  const { unstable_readConfig } = await import("wrangler");
  const config = unstable_readConfig({ config: path.join(work, "app", "wrangler.toml"), env: "production" });
  assert.deepEqual(
    config.migrations.map((m) => [m.tag, m.new_sqlite_classes]),
    [["v1", ["ProfileObject"]], ["v2", ["CatalogObject"]]],
  );
  assert.equal(config.name, "agent-memory", "consumers bind service = \"agent-memory\" in production too");
});

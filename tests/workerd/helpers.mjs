// Test helper: runs the BUILT Worker (src/entry.mjs + build/) in workerd via
// miniflare, next to a test-only consumer Worker that reaches the service's
// MemoryService entrypoint through a real Service binding.
//
//   const w = await startWorker();           // fresh temp storage
//   const res = await w.fetch("/v1/health"); // HTTP into the service
//   const out = await w.call("p", "recall", "query", { limit: 5 }); // RPC
//   await w.service("deleteProfile", "p");   // RPC on the entrypoint
//   await w.restart();                       // same storage, new runtime
//   await w.dispose();                       // stops and deletes temp storage
//   w.url                                    // real origin (URL) for HTTP clients
//
// Bindings, vars, Durable Objects and assets come from wrangler.toml (via
// wrangler's unstable_getMiniflareWorkerOptions); `vars` overrides vars.
// Nothing here runs the build: `make test` builds first.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Miniflare, Log, LogLevel, convertV4MiniflareOptions } from "miniflare";
import { unstable_getMiniflareWorkerOptions } from "wrangler";

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const SERVICE = "agent-memory";
const CONSUMER = "consumer";

// AI and Vectorize exist only remotely; wrangler warns about them on every
// config read. Quiet that unless the caller asked for wrangler's logs.
process.env.WRANGLER_LOG ??= "error";
process.env.WRANGLER_SEND_METRICS = "false";
process.env.CLOUDFLARE_CF_FETCH_ENABLED = "false";

function serviceOptions(vars) {
  const built = path.join(ROOT, "build", "index.js");
  if (!existsSync(built)) {
    throw new Error(`${built} is missing: run scripts/build.sh (or make build) first`);
  }
  // The local development values are .dev.vars.example's, as `make dev`
  // copies them to .dev.vars: read from the committed file itself, so that
  // a developer's own .dev.vars never changes what the tests run against.
  const { workerOptions } = unstable_getMiniflareWorkerOptions(path.join(ROOT, "wrangler.toml"), undefined, {
    envFiles: [".dev.vars.example"],
  });
  return {
    ...workerOptions,
    name: SERVICE,
    rootPath: ROOT,
    modulesRoot: ROOT,
    modules: [
      { type: "ESModule", path: path.join(ROOT, "src", "entry.mjs") },
      { type: "ESModule", path: built },
      { type: "CompiledWasm", path: path.join(ROOT, "build", "index_bg.wasm") },
    ],
    modulesRules: undefined,
    bindings: { ...workerOptions.bindings, ...vars },
  };
}

function consumerOptions(compatibilityDate) {
  return {
    name: CONSUMER,
    modules: true,
    scriptPath: path.join(ROOT, "tests", "workerd", "consumer", "index.mjs"),
    compatibilityDate,
    serviceBindings: { MEMORY: { name: SERVICE, entrypoint: "MemoryService" } },
  };
}

/**
 * Starts the service and the consumer in one workerd process.
 * @param {object} [opts]
 * @param {Record<string,string>} [opts.vars] overrides for [vars]
 * @param {string} [opts.persistDir] storage dir to use (kept on dispose)
 * @param {boolean} [opts.verbose] show workerd/miniflare logs
 * @param {object} [opts.serviceOverrides] miniflare (v4-style) worker options
 *   shallow-merged over the service's, e.g. `{ ai: undefined, unsafeBindings:
 *   [...] }` to replace the AI binding with a local stand-in (see
 *   standins/bindings.mjs)
 * @param {object[]} [opts.extraWorkers] further miniflare workers (e.g. local
 *   stand-ins), appended after the consumer; compatibilityDate defaults to
 *   the service's
 */
export async function startWorker(opts = {}) {
  const ownDir = !opts.persistDir;
  const persistDir = opts.persistDir ?? mkdtempSync(path.join(tmpdir(), "agent-memory-test-"));
  const vars = opts.vars ?? {};

  const build = () => {
    const service = { ...serviceOptions(vars), ...(opts.serviceOverrides ?? {}) };
    const extra = (opts.extraWorkers ?? []).map((w) => ({ compatibilityDate: service.compatibilityDate, ...w }));
    return new Miniflare(
      convertV4MiniflareOptions({
        workers: [service, consumerOptions(service.compatibilityDate), ...extra],
        resourcePersistencePath: persistDir,
        host: "127.0.0.1",
        port: 0,
        log: new Log(opts.verbose ? LogLevel.DEBUG : LogLevel.WARN),
        // A DevTools inspector on loopback (tests/bench/profile.mjs).
        ...(opts.inspectorPort ? { inspectorPort: opts.inspectorPort, inspectorHost: "127.0.0.1" } : {}),
      }),
    );
  };

  // A runtime that fails to start is disposed of, or its process would keep
  // the test runner waiting.
  const start = async () => {
    const mf = build();
    try {
      return [mf, await mf.ready];
    } catch (e) {
      await mf.dispose().catch(() => {});
      throw e;
    }
  };
  // The URL workerd listens on (127.0.0.1, a free port), for real HTTP clients.
  let [mf, url] = await start();

  const json = async (res) => {
    const body = await res.json();
    if (!body.ok) {
      // Rebuild the error the consumer saw: name, message, code, status.
      const { name, message, code, status } = body.error;
      throw Object.assign(new Error(message), { name, code, status });
    }
    return body.result;
  };
  const post = async (pathname, body) => {
    const consumer = await mf.getWorker(CONSUMER);
    return json(
      await consumer.fetch(`http://consumer${pathname}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      }),
    );
  };

  return {
    persistDir,
    get miniflare() {
      return mf;
    },
    /** The service's real origin, e.g. `http://127.0.0.1:40123/` (a URL; changes on restart). */
    get url() {
      return url;
    },
    /** HTTP request to the service (a path or a full URL; the host is ignored). */
    fetch(input, init) {
      const url = typeof input === "string" && input.startsWith("/") ? `http://localhost${input}` : input;
      return mf.dispatchFetch(url, init);
    },
    /** RPC through the Service binding: MEMORY.getProfile(profile)[op](...args). */
    call(profile, op, ...args) {
      return post("/call", { profile, op, args });
    },
    /** RPC on the entrypoint itself: MEMORY[op](...args), e.g. deleteProfile. */
    service(op, ...args) {
      return post("/service", { op, args });
    },
    /** Restart workerd on the same storage (persistence checks). */
    async restart() {
      await mf.dispose();
      [mf, url] = await start();
    },
    async dispose() {
      await mf.dispose();
      if (ownDir) rmSync(persistDir, { recursive: true, force: true });
    },
  };
}

// The Agents SDK (npm `agents`) against the MemoryService binding: the
// get-started guide's agent, shipped VERBATIM as docs/examples/memory-agent
// (its own package.json pins agents 0.22.0), runs in workerd next to the
// built service and reaches it through a service binding with
// props.namespace, as the guide's [[agent_memory]] binding would.
//
// What runs:
// - docs/examples/memory-agent/src/server.ts (the guide's steps 4 and 5,
//   `Session` from `agents/experimental/memory/session`), bundled by esbuild
//   (the root's) together with tests/workerd/agents/worker.mjs, which IMPORTS
//   the guide's ChatAgent unchanged and only adds RPC methods for the
//   model-free steps of a turn (see that file). Every package is resolved from
//   the example's own node_modules (scripts/setup.sh installs it with npm ci);
//   without it the test fails and says so. No model is called: the test plays
//   the model's part by calling the `search_context` tool from
//   `await this.session.tools()` with the input a model would send.
// - Two copies of that Worker, configured from the example's wrangler.toml
//   (compatibility date and flags, the ChatAgent Durable Object, the MEMORY
//   service binding): "memory-agent" (MEMORY -> namespace my-agent, as
//   shipped) and "memory-agent-other" (MEMORY -> namespace other-agent).
//
// Findings that shaped this (agents 0.22.0, read from the example's
// node_modules/agents):
// - `agents/experimental/memory/session` exists up to agents 0.22.0; from
//   0.23.0 on it is `agents/sessions` + `agents/context`. The guide's code is
//   therefore shipped with its own pins instead of the root package.json's
//   (agents 0.22.0 requires @modelcontextprotocol/sdk 1.30.0 exactly).
// - search_context takes {label, query} (label "memory": the block label),
//   and returns "Error: ..." text instead of throwing when search() throws.
// - Bundling: the agents dist imports node:async_hooks, node:crypto,
//   node:diagnostics_channel, node:fs/promises, node:path, bare Node
//   built-ins, cloudflare:workers and cloudflare:email. All stay external
//   (workerd provides them under nodejs_compat); bare Node built-ins are
//   rewritten to `node:` as wrangler does. Nothing needs the network. node:os
//   (imported by mimetext, behind the agents email support) exists in workerd
//   only from compatibility date 2025-09-15 (enable_nodejs_os_module): the
//   service's 2025-09-01 fails at startup with 'No such module "node:os"',
//   which is why the example's wrangler.toml says 2025-09-15.
// - The bundle lives in a temp dir, so its worker sets modulesRoot to that
//   dir (miniflare otherwise names the module "../../tmp/...", which workerd
//   refuses at startup).
// - Agent names come from native ctx.id.name (getAgentByName ->
//   idFromName), which workerd in miniflare provides.
//
// Run: node --test tests/workerd/agents-sdk.test.mjs (needs build/ from
// scripts/build.sh, like every workerd test, and the example's node_modules
// from scripts/setup.sh).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import * as esbuild from "esbuild";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { ROOT, startWorker } from "./helpers.mjs";

const EXAMPLE = path.join(ROOT, "docs", "examples", "memory-agent");
const FIXTURE_DIR = path.join(ROOT, "tests", "workerd", "agents");

const ACCOUNT = "1234567890";
const AUTH = { authorization: "Bearer dev-token" };
const PREFERENCE = "I prefer TypeScript examples and concise answers.";

let w;
let outDir;

/** The example's own packages must be installed; never skip without them. */
function requireExampleModules() {
  const agents = path.join(EXAMPLE, "node_modules", "agents", "package.json");
  if (!existsSync(agents)) {
    throw new Error(
      `${path.relative(ROOT, agents)} is missing: the example's packages are not installed. ` +
        "Run scripts/setup.sh (it runs `npm ci` in docs/examples/memory-agent), " +
        "or `cd docs/examples/memory-agent && npm ci`.",
    );
  }
}

async function bundleAgent(outfile) {
  const nodeBuiltins = new Set(builtinModules.filter((m) => !m.startsWith("_")));
  await esbuild.build({
    entryPoints: [path.join(FIXTURE_DIR, "worker.mjs")],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    logLevel: "warning",
    plugins: [
      {
        name: "workerd-builtins",
        setup(build) {
          build.onResolve({ filter: /^(cloudflare|node):/ }, (args) => ({ path: args.path, external: true }));
          build.onResolve({ filter: /^[a-z_/]+$/ }, (args) =>
            nodeBuiltins.has(args.path) ? { path: `node:${args.path}`, external: true } : undefined,
          );
        },
      },
      {
        // The fixture's own bare imports resolve as if from the example, so
        // they get the example's copies (the root node_modules has none).
        name: "example-node-modules",
        setup(build) {
          build.onResolve({ filter: /^[^./]/ }, (args) => {
            if (args.pluginData?.fromExample || !args.importer.startsWith(FIXTURE_DIR + path.sep)) return undefined;
            return build.resolve(args.path, { kind: args.kind, resolveDir: EXAMPLE, pluginData: { fromExample: true } });
          });
        },
      },
    ],
  });
}

// The example's wrangler.toml, as wrangler reads it: compatibility date and
// flags, the Durable Object, the MEMORY service binding (its
// props.namespace replaced for the second Worker).
function agentWorker(name, namespace, scriptPath) {
  const { workerOptions: o } = unstable_getMiniflareWorkerOptions(path.join(EXAMPLE, "wrangler.toml"));
  const { props, ...memory } = o.serviceBindings.MEMORY;
  assert.deepEqual({ ...memory, props: { ...props } }, {
    name: "agent-memory",
    entrypoint: "MemoryService",
    props: { namespace: "my-agent" },
  });
  return {
    name,
    modules: [{ type: "ESModule", path: scriptPath }],
    modulesRoot: path.dirname(scriptPath),
    compatibilityDate: o.compatibilityDate,
    compatibilityFlags: o.compatibilityFlags,
    durableObjects: o.durableObjects,
    serviceBindings: { MEMORY: { ...memory, props: { namespace } } },
  };
}

/** Calls a test RPC method on the named agent of the given Worker. */
async function rpc(worker, agent, method, ...args) {
  const mf = w.miniflare;
  const res = await (await mf.getWorker(worker)).fetch(`http://agent/test/${encodeURIComponent(agent)}/${method}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(args),
  });
  const body = await res.json();
  assert.equal(res.status, 200, `${worker} ${agent}.${method}: ${body.error}`);
  return body.result;
}

before(async () => {
  requireExampleModules();
  outDir = mkdtempSync(path.join(tmpdir(), "agents-sdk-test-"));
  const script = path.join(outDir, "memory-agent.mjs");
  await bundleAgent(script);
  w = await startWorker({
    extraWorkers: [agentWorker("memory-agent", "my-agent", script), agentWorker("memory-agent-other", "other-agent", script)],
  });
});

after(async () => {
  await w?.dispose();
  if (outDir) rmSync(outDir, { recursive: true, force: true });
});

test("the example's fetch handler answers: POST /chat without a message is a 400", async () => {
  const res = await (await w.miniflare.getWorker("memory-agent")).fetch("http://agent/chat", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ conversationId: "first-chat" }),
  });
  assert.equal(res.status, 400);
  assert.deepEqual(await res.json(), { error: "Missing message" });
});

test("the agent's context: the memory block is searchable and the prompt carries the memory policy", async () => {
  const prompt = await rpc("memory-agent", "prompt-check", "systemPrompt");
  assert.match(prompt, /You are a helpful assistant\./);
  assert.match(prompt, /Long-term memory is available through the search_context tool\./);
  assert.match(prompt, /MEMORY POLICY/);
});

test("session history ingested through the binding is recalled by the model-facing search_context tool", async () => {
  // Turn 1 of the guide ("first-chat"): the user's message and a reply,
  // appended to the Agent's Session as chat() appends them.
  await rpc("memory-agent", "first-chat", "appendTurn", "user", PREFERENCE);
  await rpc("memory-agent", "first-chat", "appendTurn", "assistant", "Got it: TypeScript examples, kept concise.");

  // What the scheduled ingestScheduledMemory() runs: runIngest().
  assert.deepEqual(await rpc("memory-agent", "first-chat", "ingest"), { ingested: 2 });
  const { name, state } = await rpc("memory-agent", "first-chat", "agentState");
  assert.equal(name, "first-chat");
  assert.deepEqual(state, { cursor: 2, nextIngestAt: null });
  // Nothing new since the cursor: a second run ingests nothing.
  assert.deepEqual(await rpc("memory-agent", "first-chat", "ingest"), { ingested: 0 });

  // Turn 2 of the guide happens in another conversation ("second-chat", a
  // different Durable Object): the model calls search_context.
  const search = await rpc("memory-agent", "second-chat", "searchContext", "user preferences");
  assert.match(search.description, /"memory"/);
  assert.deepEqual(search.jsonSchema.required, ["label", "query"]);
  // What the model is shown: the one searchable label (zod renders a
  // one-value enum as `const`) and a free-text query.
  const { label, query } = search.jsonSchema.properties;
  assert.deepEqual(label.enum ?? [label.const], ["memory"]);
  assert.equal(query.type, "string");
  assert.equal(typeof search.output, "string");
  assert.doesNotMatch(search.output, /^Error:/, `search() threw: ${search.output}`);
  assert.notEqual(search.output, "No relevant memories found.");
  assert.match(search.output, /TypeScript/i, `recalled answer: ${search.output}`);
});

test("the memories land in namespace my-agent, profile demo-user, tagged with the agent's name as sessionId", async () => {
  // Written by the previous test (node --test runs a file's tests in order).
  const res = await w.fetch(
    `/client/v4/accounts/${ACCOUNT}/agent-memory/namespaces/my-agent/profiles/demo-user/memories?session_id=first-chat`,
    { headers: AUTH },
  );
  const body = await res.json();
  assert.equal(res.status, 200, JSON.stringify(body));
  assert.ok(body.result.length > 0, "no memory in my-agent/demo-user for session first-chat");
  for (const m of body.result) assert.equal(m.sessionId, "first-chat");
  assert.ok(
    body.result.some((m) => /TypeScript/i.test(m.summary)),
    `summaries: ${body.result.map((m) => m.summary).join(" | ")}`,
  );
});

test("a binding to another namespace does not see that memory", async () => {
  const search = await rpc("memory-agent-other", "second-chat", "searchContext", "user preferences");
  assert.doesNotMatch(search.output, /^Error:/, `search() threw: ${search.output}`);
  // recall() on an empty profile answers "" (the docs), so the guide's
  // provider falls back to its own text.
  assert.equal(search.output, "No relevant memories found.");
});

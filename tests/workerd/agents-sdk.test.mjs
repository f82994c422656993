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
//   without it the test fails and says so.
// - The model-free tests play the model's part themselves: they call the
//   `search_context` tool from `await this.session.tools()` with the input a
//   model would send, and the guide's private runIngest() directly.
// - The last tests ("the guide's curl examples, end to end, ...") run the
//   guide's chat() as written, through its own fetch handler (POST /chat, the
//   guide's two curl requests): generateText with workers-ai-provider's
//   createWorkersAI({ binding: this.env.AI }) reaches the `AI` binding, which
//   is a LOCAL STAND-IN for Workers AI's chat model
//   (standins/chat-model-worker.mjs, scripted by
//   standins/scripted-chat-model.mjs): it calls search_context when asked
//   what it knows about the user and answers from the tool result. The
//   guide's scheduling runs for real too: scheduleIngest ->
//   this.schedule(10, "ingestScheduledMemory"), cancelPendingIngest on the
//   next message, and the Durable Object alarm firing the callback.
// - Two copies of that Worker, configured from the example's wrangler.toml
//   (compatibility date and flags, the ChatAgent Durable Object, the MEMORY
//   service binding): "memory-agent" (MEMORY -> namespace my-agent, as
//   shipped) and "memory-agent-other" (MEMORY -> namespace other-agent). The
//   wrangler.toml's `[ai] binding = "AI"` is a wrapped binding
//   (standins/wrapped-bindings-plugin.mjs, as workerd builds the real one)
//   forwarding `run` to the chat model stand-in Worker.
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
import { test, describe, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { builtinModules } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import * as esbuild from "esbuild";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { ROOT, startWorker } from "./helpers.mjs";
import { PLUGIN_NAME } from "./standins/wrapped-bindings-plugin.mjs";
import { ACKNOWLEDGEMENT, RECALL_PREFIX, SEARCH_INPUT } from "./standins/scripted-chat-model.mjs";

const EXAMPLE = path.join(ROOT, "docs", "examples", "memory-agent");
const FIXTURE_DIR = path.join(ROOT, "tests", "workerd", "agents");
const STANDINS = path.join(ROOT, "tests", "workerd", "standins");
const CHAT_MODEL_WORKER = "chat-model-standin";
// The guide's model, and its delay before the scheduled ingest (server.ts).
const GUIDE_MODEL = "@cf/zai-org/glm-4.7-flash";
const MEMORY_INGEST_DELAY_SECONDS = 10;

const ACCOUNT = "1234567890";
const AUTH = { authorization: "Bearer dev-token" };
const PREFERENCE = "I prefer TypeScript examples and concise answers.";

let w;
let outDir;
let script;

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
// props.namespace replaced for the second Worker), and the AI binding, which
// Workers AI provides only remotely: here a wrapped binding whose `run`
// forwards to the chat model stand-in.
function agentWorker(name, namespace, scriptPath) {
  const { workerOptions: o } = unstable_getMiniflareWorkerOptions(path.join(EXAMPLE, "wrangler.toml"));
  assert.equal(o.ai?.binding, "AI");
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
    unsafeBindings: [
      {
        name: o.ai.binding,
        type: PLUGIN_NAME,
        plugin: { package: path.join(STANDINS, "wrapped-bindings-plugin.mjs"), name: PLUGIN_NAME },
        options: { kind: "ai", worker: CHAT_MODEL_WORKER, entrypoint: "ChatModelStandin" },
      },
    ],
  };
}

/** The local stand-in for Workers AI's chat model (standins/chat-model-worker.mjs). */
function chatModelWorker() {
  return {
    name: CHAT_MODEL_WORKER,
    modulesRoot: STANDINS,
    modules: [
      { type: "ESModule", path: path.join(STANDINS, "chat-model-worker.mjs") },
      { type: "ESModule", path: path.join(STANDINS, "scripted-chat-model.mjs") },
    ],
  };
}

/** The service, the chat model stand-in and both agent Workers, on fresh storage. */
function startAgents() {
  return startWorker({
    extraWorkers: [
      chatModelWorker(),
      agentWorker("memory-agent", "my-agent", script),
      agentWorker("memory-agent-other", "other-agent", script),
    ],
  });
}

/** Calls a test RPC method on the named agent of the given Worker. */
function rpc(worker, agent, method, ...args) {
  return rpcOn(w, worker, agent, method, ...args);
}

/** rpc() on a given runtime (from startAgents). */
async function rpcOn(inst, worker, agent, method, ...args) {
  const mf = inst.miniflare;
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
  script = path.join(outDir, "memory-agent.mjs");
  await bundleAgent(script);
  w = await startAgents();
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

// The guide's two curl requests, end to end: its fetch handler, chat() with
// the model (a local stand-in for Workers AI's), the scheduled ingest, and
// recall through the model's search_context call. On a runtime of its own
// (fresh storage), so that these requests are the guide's exactly (the same
// conversation ids and message) without meeting the memories and agent state
// the tests above leave in first-chat and second-chat.
describe("the guide's curl examples, end to end, with a local stand-in for the Workers AI chat model", () => {
  const SECOND_QUESTION = "What do you know or remember about me and my preferences?";
  const FOLLOW_UP = "Also, I deploy everything to Cloudflare Workers.";
  const INGEST_WAIT_MS = 30_000;
  let g;
  let firstSchedule;

  before(async () => {
    g = await startAgents();
  });
  after(async () => {
    await g?.dispose();
  });

  /** The guide's curl: POST /chat with {message, conversationId}. */
  async function chat(conversationId, message) {
    const res = await (await g.miniflare.getWorker("memory-agent")).fetch("http://agent/chat", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ conversationId, message }),
    });
    const text = await res.text();
    assert.equal(res.status, 200, `POST /chat ${conversationId}: ${text}`);
    return JSON.parse(text);
  }

  /** Every env.AI.run call the chat model stand-in has received, in order. */
  async function modelCalls() {
    const res = await (await g.miniflare.getWorker(CHAT_MODEL_WORKER)).fetch("http://standin/calls");
    assert.equal(res.status, 200);
    return res.json();
  }

  const state = (agent) => rpcOn(g, "memory-agent", agent, "agentState").then((r) => r.state);
  const ingestSchedules = async (agent) =>
    (await rpcOn(g, "memory-agent", agent, "schedules")).filter((s) => s.callback === "ingestScheduledMemory");

  async function memories(sessionId) {
    const res = await g.fetch(
      `/client/v4/accounts/${ACCOUNT}/agent-memory/namespaces/my-agent/profiles/demo-user/memories?session_id=${sessionId}`,
      { headers: AUTH },
    );
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    return body.result;
  }

  test("POST /chat (first-chat, a preference): the stand-in model's reply comes back as {response}, and ingestScheduledMemory is scheduled in 10 s", async () => {
    const sentAt = Date.now();
    const body = await chat("first-chat", PREFERENCE);
    assert.deepEqual(body, { response: ACKNOWLEDGEMENT });

    // What reached the AI binding: the guide's generateText call, as
    // workers-ai-provider sends it.
    const calls = await modelCalls();
    assert.equal(calls.length, 1, JSON.stringify(calls.map((c) => c.decision)));
    const [call] = calls;
    assert.equal(call.model, GUIDE_MODEL);
    assert.equal(call.decision, "acknowledge");
    assert.ok(call.toolNames.includes("search_context"), `tools: ${call.toolNames}`);
    const search = call.inputs.tools.find((t) => t.function.name === "search_context");
    assert.equal(search.type, "function");
    assert.deepEqual(search.function.parameters.required, ["label", "query"]);
    const roles = call.inputs.messages.map((m) => m.role);
    assert.deepEqual(roles, ["system", "user"]);
    assert.match(call.inputs.messages[0].content, /You are a helpful assistant\./);
    assert.match(call.inputs.messages[0].content, /MEMORY POLICY/);
    assert.equal(call.inputs.messages[1].content, PREFERENCE);
    // The system message is the session's frozen prompt.
    assert.equal(call.inputs.messages[0].content, await rpcOn(g, "memory-agent", "first-chat", "systemPrompt"));
    assert.equal(call.inputs.tool_choice, "auto");
    assert.equal(call.inputs.stream, undefined, "generateText does not stream");

    // chat() appended the user's message and the model's reply.
    assert.deepEqual(await rpcOn(g, "memory-agent", "first-chat", "history"), [
      { role: "user", text: PREFERENCE },
      { role: "assistant", text: ACKNOWLEDGEMENT },
    ]);

    // scheduleIngest(): nextIngestAt ~10 s on, one pending ingestScheduledMemory.
    const s = await state("first-chat");
    assert.equal(s.cursor, 0);
    assert.equal(typeof s.nextIngestAt, "number");
    // (workerd's clock moves only on I/O: a second of slack below.)
    assert.ok(
      s.nextIngestAt >= sentAt - 1000 + MEMORY_INGEST_DELAY_SECONDS * 1000 &&
        s.nextIngestAt <= Date.now() + MEMORY_INGEST_DELAY_SECONDS * 1000,
      `nextIngestAt ${s.nextIngestAt - sentAt} ms after the request`,
    );
    const pending = await ingestSchedules("first-chat");
    assert.equal(pending.length, 1, JSON.stringify(pending));
    assert.equal(pending[0].type, "delayed");
    assert.equal(pending[0].delayInSeconds, MEMORY_INGEST_DELAY_SECONDS);
    firstSchedule = pending[0];
    // Nothing is ingested before the schedule fires.
    assert.deepEqual(await memories("first-chat"), []);
  });

  test("a second message within the delay cancels the pending ingest and schedules one anew", async () => {
    assert.ok(firstSchedule, "needs the previous test");
    // Far enough into the delay that the first schedule, had it stayed, would
    // fire well before the new one.
    await sleep(3000);
    const body = await chat("first-chat", FOLLOW_UP);
    assert.deepEqual(body, { response: ACKNOWLEDGEMENT });
    const pending = await ingestSchedules("first-chat");
    assert.equal(pending.length, 1, `one pending ingestScheduledMemory, not ${JSON.stringify(pending)}`);
    assert.notEqual(pending[0].id, firstSchedule.id, "the first schedule was cancelled");
    assert.ok(pending[0].time >= firstSchedule.time + 2, `rescheduled for ${pending[0].time}, was ${firstSchedule.time}`);

    // When the first schedule was due (its alarm is set for its `time`, whole
    // seconds), plus a margin, nothing has run.
    await sleep(Math.max(0, (firstSchedule.time + 1.5) * 1000 - Date.now()));
    assert.notEqual((await state("first-chat")).nextIngestAt, null, "an ingest ran at the cancelled schedule's time");
    assert.deepEqual(await memories("first-chat"), []);
  });

  test("the schedule fires: both turns land in my-agent/demo-user with sessionId first-chat, the cursor advances, nextIngestAt is null", async () => {
    // Polled: the alarm is due at the schedule's time (whole seconds), then
    // the ingest runs extraction on the service.
    const deadline = Date.now() + INGEST_WAIT_MS;
    let s = await state("first-chat");
    while (s.nextIngestAt !== null && Date.now() < deadline) {
      await sleep(250);
      s = await state("first-chat");
    }
    assert.deepEqual(s, { cursor: 4, nextIngestAt: null }, `ingestScheduledMemory did not run within ${INGEST_WAIT_MS} ms`);
    assert.deepEqual(await ingestSchedules("first-chat"), []);

    const stored = await memories("first-chat");
    assert.ok(stored.length > 0, "no memory in my-agent/demo-user for session first-chat");
    for (const m of stored) assert.equal(m.sessionId, "first-chat");
    const summaries = stored.map((m) => m.summary).join(" | ");
    assert.match(summaries, /TypeScript/i, summaries);
    assert.match(summaries, /Cloudflare Workers/i, `the second turn: ${summaries}`);
  });

  test("POST /chat (second-chat, what do you know about me): the stand-in model calls search_context and its reply recalls the preference", async () => {
    const before = (await modelCalls()).length;
    const body = await chat("second-chat", SECOND_QUESTION);
    assert.equal(typeof body.response, "string");
    assert.ok(body.response.startsWith(RECALL_PREFIX), body.response);
    assert.match(body.response, /TypeScript/i, body.response);

    // Two steps of the guide's generateText: the model asked for
    // search_context, the AI SDK ran the guide's tool (recall() on the
    // service), and the model answered from its result.
    const calls = (await modelCalls()).slice(before);
    assert.deepEqual(calls.map((c) => c.decision), ["call-search_context", "answer-from-tool"]);
    for (const c of calls) {
      assert.equal(c.model, GUIDE_MODEL);
      assert.ok(c.toolNames.includes("search_context"), `tools: ${c.toolNames}`);
    }
    assert.equal(calls[0].inputs.messages.at(-1).content, SECOND_QUESTION);
    const toolCall = calls[0].reply.tool_calls[0];
    const [assistant, result] = calls[1].inputs.messages.slice(-2);
    assert.equal(assistant.role, "assistant");
    assert.deepEqual(
      assistant.tool_calls.map((t) => ({ id: t.id, name: t.function.name, input: JSON.parse(t.function.arguments) })),
      [{ id: toolCall.id, name: "search_context", input: SEARCH_INPUT }],
    );
    assert.equal(result.role, "tool");
    assert.equal(result.name, "search_context");
    assert.equal(result.tool_call_id, toolCall.id);
    assert.doesNotMatch(result.content, /^Error:/, `search() threw: ${result.content}`);
    assert.notEqual(result.content, "No relevant memories found.");
    assert.match(result.content, /TypeScript/i, `recalled: ${result.content}`);
    assert.equal(body.response, RECALL_PREFIX + result.content);

    // This conversation's turn is stored and scheduled for ingest too.
    assert.deepEqual(await rpcOn(g, "memory-agent", "second-chat", "history"), [
      { role: "user", text: SECOND_QUESTION },
      { role: "assistant", text: body.response },
    ]);
    assert.equal((await ingestSchedules("second-chat")).length, 1);
  });
});

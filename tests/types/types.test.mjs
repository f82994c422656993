// Type-checks the docs' example Worker code against src/agent-memory.d.ts with tsc (issue #23).
//   cd /work/main && source scripts/env.sh && node --test tests/types/types.test.mjs
// The checks themselves:
//   node_modules/.bin/tsc -p tests/types/tsconfig.json      (examples + assignability.ts)
//   node_modules/.bin/tsc -p tests/types/tsconfig.dts.json  (the declaration files alone, in full)
//   node_modules/.bin/tsc -p docs/examples/memory-agent/tsconfig.json
//       (the get-started guide's agent, shipped verbatim as that example; it resolves `agents`,
//       `ai` and `workers-ai-provider` from the example's own node_modules, which
//       scripts/setup.sh installs with npm ci)
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, "../..");
const TSC = path.join(ROOT, "node_modules/.bin/tsc");
const read = (p) => fs.readFileSync(path.join(ROOT, p), "utf8");

function tsc(project, cwd = ROOT) {
  const r = spawnSync(TSC, ["-p", project, "--pretty", "false"], { cwd, encoding: "utf8", timeout: 120_000 });
  return { status: r.status, output: `${r.stdout ?? ""}${r.stderr ?? ""}${r.error ? String(r.error) : ""}` };
}

test("the docs' example Worker code and assignability.ts type-check against src/agent-memory.d.ts", () => {
  const { status, output } = tsc("tests/types/tsconfig.json");
  assert.equal(status, 0, `tsc -p tests/types/tsconfig.json failed:\n${output}`);
});

test("the declaration files type-check on their own, library checks included", () => {
  const { status, output } = tsc("tests/types/tsconfig.dts.json");
  assert.equal(status, 0, `tsc -p tests/types/tsconfig.dts.json failed:\n${output}`);
});

test("the get-started agent (docs/examples/memory-agent) type-checks against its own packages", () => {
  const example = "docs/examples/memory-agent";
  assert.ok(
    fs.existsSync(path.join(ROOT, example, "node_modules", "agents", "package.json")),
    `${example}/node_modules is missing: run scripts/setup.sh (it runs npm ci in ${example})`,
  );
  const { status, output } = tsc(`${example}/tsconfig.json`);
  assert.equal(status, 0, `tsc -p ${example}/tsconfig.json failed:\n${output}`);
});

test("a deliberate type error in an example fails the check", () => {
  // A project of its own: the chat-agent example, its Env and the declarations, in the same
  // layout, with the repository's node_modules and compiler options.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-memory-types-"));
  try {
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"), "dir");
    const copy = (p) => {
      fs.mkdirSync(path.dirname(path.join(dir, p)), { recursive: true });
      fs.copyFileSync(path.join(ROOT, p), path.join(dir, p));
    };
    const example = "tests/types/examples/chat-agent/index.ts";
    for (const p of ["src/agent-memory.d.ts", "tests/types/tsconfig.json", "tests/types/env/chat-agent.d.ts", example]) copy(p);
    fs.writeFileSync(
      path.join(dir, "tests/types/tsconfig.check.json"),
      JSON.stringify({ extends: "./tsconfig.json", include: ["env/chat-agent.d.ts", "examples/chat-agent/index.ts"] }),
    );
    const project = "tests/types/tsconfig.check.json";

    const clean = tsc(project, dir);
    assert.equal(clean.status, 0, `the unchanged copy must pass first:\n${clean.output}`);

    const file = path.join(dir, example);
    const source = fs.readFileSync(file, "utf8");
    assert.ok(source.includes('thinkingLevel: "medium"'), "the example sets thinkingLevel");
    fs.writeFileSync(file, source.replace('thinkingLevel: "medium"', 'thinkingLevel: "extreme"'));
    const broken = tsc(project, dir);
    assert.notEqual(broken.status, 0, `tsc accepted thinkingLevel: "extreme":\n${broken.output}`);
    assert.match(broken.output, /examples\/chat-agent\/index\.ts\(\d+,\d+\): error TS2322: Type '"extreme"' is not assignable/);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// The code blocks of docs/compat/published-interface.md, dedented (the wrangler fixture's is in
// a list item).
function docBlocks() {
  const doc = read("docs/compat/published-interface.md");
  const blocks = [];
  for (const m of doc.matchAll(/^( *)```(\w*)\n([\s\S]*?)^\1```$/gm)) {
    const indent = m[1].length;
    blocks.push(m[3].split("\n").map((l) => l.slice(Math.min(indent, l.length - l.trimStart().length))).join("\n"));
  }
  const find = (start) => {
    const found = blocks.filter((b) => b.startsWith(start));
    assert.equal(found.length, 1, `one block of the docs starts with ${JSON.stringify(start)}`);
    return found[0];
  };
  return { find };
}

test("the examples and the published d.ts are verbatim copies of the docs' code", () => {
  const { find } = docBlocks();
  const published = find("// ====");
  const step4 = find('import { Agent, routeAgentRequest } from "agents";');
  const imports5 = find('import { Agent, getAgentByName, routeAgentRequest } from "agents";');
  const delay5 = find("const MEMORY_INGEST_DELAY_SECONDS");
  const class5 = find("export class ChatAgent extends Agent<Env, ChatAgentState> {\n\tinitialState: ChatAgentState = { cursor: 0, nextIngestAt: null };\n\n\t// Keep");
  const export5 = find("export default {\n\tasync fetch(request: Request, env: Env) {\n\t\tconst url");
  const chat = find("type ChatRequest = {");
  const fixture = find('export default {\n\tasync fetch(_request, env) {');

  const endsWith = (file, block) => assert.ok(read(file).endsWith(block), `${file} ends with the docs' code, verbatim`);
  const includes = (file, block, what) => assert.ok(read(file).includes(block), `${file} holds ${what}, verbatim`);

  endsWith("tests/types/published/agent-memory.d.ts", published);
  includes("src/agent-memory.d.ts", published, "the published declarations");
  endsWith("tests/types/examples/chat-agent/index.ts", chat);
  endsWith("tests/types/examples/wrangler-e2e/agent-memory.js", fixture);

  // The shipped example's src/server.ts is step 5 assembled as the page says, and nothing else:
  // step 5's imports plus step 4's Session import ("Keep the `Session` import from step 4"),
  // step 4's constants, step 5's constant, step 5's class with step 4's session setup in place
  // of its comment, step 5's default export.
  const sessionImport = step4.split("\n").find((l) => l.includes("agents/experimental/memory/session"));
  assert.ok(sessionImport);
  const consts = step4.slice(step4.indexOf("const INSTRUCTIONS"), step4.indexOf("export class ChatAgent"));
  const keep = "\t// Keep the `session = Session.create(this)` setup from step 4 here.\n";
  assert.ok(class5.includes(keep));
  const [before, after] = class5.split(keep);
  const setup = step4.slice(step4.indexOf("\tsession = Session.create(this)"), step4.indexOf("\t\t.withCachedPrompt();\n") + "\t\t.withCachedPrompt();\n".length);
  const assembled = `${imports5}${sessionImport}\n\n${consts}${delay5}\n${before}${setup}${after}\n${export5}`;
  assert.equal(read("docs/examples/memory-agent/src/server.ts"), assembled, "docs/examples/memory-agent/src/server.ts is the guide's code, verbatim");

  // The @examples of the declarations.
  const example = (dts, marker) => {
    const text = read(dts);
    const start = text.indexOf(" * ```ts\n", text.indexOf(marker)) + " * ```ts\n".length;
    return text
      .slice(start, text.indexOf(" * ```\n", start))
      .split("\n")
      .map((l) => (l.startsWith(" * ") ? l.slice(3) : l.slice(2)))
      .join("\n");
  };
  endsWith("tests/types/examples/dts/published-example.ts", example("tests/types/published/agent-memory.d.ts", "Namespace-level Agent Memory binding."));
  endsWith("tests/types/examples/dts/memory-service-example.ts", example("src/agent-memory.d.ts", "The `MemoryService` entrypoint"));
});

test("the get-started agent type-checks against `wrangler types`' own output once its MEMORY line is changed as README.md says, and not before", () => {
  const example = path.join(ROOT, "docs/examples/memory-agent");
  const readme = read("README.md");
  const line = readme.split("\n").find((l) => l.startsWith("npx wrangler types && "));
  assert.ok(line, "README.md gives the wrangler types command");
  const [, fix] = line.split(" && ");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "agent-memory-wrangler-types-"));
  try {
    fs.symlinkSync(path.join(example, "node_modules"), path.join(dir, "node_modules"), "dir");
    fs.mkdirSync(path.join(dir, "src"));
    fs.copyFileSync(path.join(example, "wrangler.toml"), path.join(dir, "wrangler.toml"));
    fs.copyFileSync(path.join(example, "src/server.ts"), path.join(dir, "src/server.ts"));
    // The generated file holds the runtime types: no @cloudflare/workers-types, no env.d.ts.
    const options = JSON.parse(read("docs/examples/memory-agent/tsconfig.json").replace(/^\s*\/\/.*$/gm, "")).compilerOptions;
    fs.writeFileSync(
      path.join(dir, "tsconfig.json"),
      JSON.stringify({ compilerOptions: { ...options, types: [] }, include: ["src", "worker-configuration.d.ts"] }),
    );
    const wrangler = spawnSync(path.join(ROOT, "node_modules/.bin/wrangler"), ["types"], { cwd: dir, encoding: "utf8", timeout: 120_000 });
    assert.equal(wrangler.status, 0, `wrangler types failed:\n${wrangler.stdout}${wrangler.stderr}`);
    const generated = fs.readFileSync(path.join(dir, "worker-configuration.d.ts"), "utf8");
    assert.match(generated, /MEMORY: Service \/\* entrypoint MemoryService from agent-memory \*\/;/);
    const before = tsc("tsconfig.json", dir);
    assert.notEqual(before.status, 0, "wrangler's own typing passed: README.md's step is no longer needed");
    assert.match(before.output, /Property 'getProfile' does not exist/);
    const edit = spawnSync("sh", ["-c", fix], { cwd: dir, encoding: "utf8" });
    assert.equal(edit.status, 0, `${fix}:\n${edit.stderr}`);
    assert.match(fs.readFileSync(path.join(dir, "worker-configuration.d.ts"), "utf8"), /\tMEMORY: AgentMemoryNamespace;/);
    const after = tsc("tsconfig.json", dir);
    assert.equal(after.status, 0, `the agent does not type-check against the changed output:\n${after.output}`);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

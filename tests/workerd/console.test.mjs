// End-to-end test of the web console (www/) in a real browser against a
// running Worker.
//
//   MEMORY_URL=http://127.0.0.1:8787 node --test tests/workerd/console.test.mjs
//
// MEMORY_URL is the Worker's origin (it serves www/ at `/` and the REST API);
// without it the test starts the built Worker in workerd itself
// (tests/workerd/helpers.mjs) on a loopback port. The browser is
// Debian's chromium driven by the npm package playwright-core (no browser
// download): CHROMIUM_PATH overrides /usr/bin/chromium. TOKEN overrides the
// local dev token `dev-token`. With SCREENSHOT=1 the recall view is saved to
// docs/console.png.

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

import { startWorker } from "./helpers.mjs";

let MEMORY_URL = (process.env.MEMORY_URL || "").replace(/\/+$/, "");
const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
const TOKEN = process.env.TOKEN || "dev-token";
const SCREENSHOT = process.env.SCREENSHOT === "1";
const HERE = path.dirname(fileURLToPath(import.meta.url));
const SHOT = path.resolve(HERE, "../../docs/console.png");
const WAIT = Number(process.env.CONSOLE_TIMEOUT_MS || 30_000);

const CONVERSATION = [
  "user: Set up the project with React and TypeScript.",
  "assistant: Done. Scaffolded a React + TS project targeting Workers.",
  "user: Use pnpm, not npm. And dark mode by default.",
  "assistant: Got it -- pnpm and dark mode as default.",
].join("\n");
const QUESTION = "What package manager does the user prefer?";
const CHANNELS = ["key", "fts", "hyde", "vector", "messages"];

/** playwright-core from the repository's node_modules, or from the working
 *  directory's (so a scratch install works too); null when absent. */
async function loadPlaywright() {
  let mod = null;
  try {
    mod = await import("playwright-core");
  } catch {
    try {
      const req = createRequire(path.join(process.cwd(), "noop.js"));
      mod = await import(pathToFileURL(req.resolve("playwright-core")).href);
    } catch {
      return null;
    }
  }
  return mod.chromium ? mod : mod.default;
}

function skipReason(pw) {
  if (!MEMORY_URL) return "MEMORY_URL is not set: start the Worker (the workerd harness does) and pass its origin";
  if (!pw) return "the npm package playwright-core is not installed";
  if (!fs.existsSync(CHROMIUM)) return `no browser at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`;
  return null;
}

/** Waits until `locator`'s text matches `re`; returns the text. */
async function textMatching(locator, re, timeout = WAIT) {
  const deadline = Date.now() + timeout;
  let last = "";
  while (Date.now() < deadline) {
    if ((await locator.count()) > 0) {
      last = (await locator.first().innerText()).trim();
      if (re.test(last)) return last;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting for text ${re} (last seen: ${JSON.stringify(last)})`);
}

test("web console: connect, ingest, list, recall with trace, forget, export, import, wrong token", async (t) => {
  const pw = await loadPlaywright();
  if (!MEMORY_URL && pw && fs.existsSync(CHROMIUM)) {
    const w = await startWorker();
    t.after(() => w.dispose());
    MEMORY_URL = String(w.url).replace(/\/+$/, "");
  }
  const reason = skipReason(pw);
  if (reason) {
    t.skip(reason);
    return;
  }

  const run = Date.now().toString(36);
  const namespace = "console-e2e";
  const profile = `p-${run}`;
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), "console-chromium-"));
  const downloads = fs.mkdtempSync(path.join(os.tmpdir(), "console-downloads-"));
  const context = await pw.chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
    acceptDownloads: true,
    downloadsPath: downloads,
    viewport: { width: 1440, height: 900 },
    colorScheme: "light",
  });
  t.after(async () => {
    await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
    fs.rmSync(downloads, { recursive: true, force: true });
  });

  const page = context.pages()[0] || (await context.newPage());
  page.setDefaultTimeout(WAIT);
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    // Refused requests (the wrong-token step) are logged by the browser; they are expected.
    if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  const external = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (!["data:", "blob:"].includes(u.protocol) && u.origin !== new URL(MEMORY_URL).origin) external.push(r.url());
  });

  const byId = (id) => page.getByTestId(id);
  const go = async (view) => {
    await byId(`nav-${view}`).click();
    await page.locator(`#view-${view}`).waitFor({ state: "visible" });
  };

  await t.test("the page loads and asks for a token", async () => {
    const res = await page.goto(`${MEMORY_URL}/`);
    assert.equal(res.status(), 200, "GET / serves www/index.html");
    await byId("connect-panel").waitFor({ state: "visible" });
    assert.ok(!(await res.text()).includes(TOKEN), "no token in the page source");
  });

  await t.test("connecting with the dev token shows the profile", async () => {
    await byId("token-input").fill(TOKEN);
    await byId("connect-namespace").fill(namespace);
    await byId("connect-profile").fill(profile);
    await byId("connect-submit").click();
    await byId("stat-memories").waitFor({ state: "visible" });
    await byId("conn-status").waitFor({ state: "visible" });
    const stored = await page.evaluate(() => Object.values(sessionStorage));
    assert.ok(stored.includes(TOKEN), "the token is kept in sessionStorage");
    const local = await page.evaluate(() => JSON.stringify(localStorage));
    assert.ok(!local.includes(TOKEN), "the token is not in localStorage");
    assert.ok(!(await page.content()).includes(TOKEN), "the token is not written into the DOM");
  });

  await t.test("ingesting the example conversation stores memories", async () => {
    await go("add");
    await byId("ingest-text").fill(CONVERSATION);
    await textMatching(byId("ingest-preview"), /4 messages/);
    await byId("ingest-session").fill(`console-${run}`);
    await byId("ingest-submit").click();
    const report = await textMatching(byId("ingest-report"), /memor(y|ies) stored/);
    assert.match(report, /from 4 messages/);
  });

  let pnpmIds = [];
  await t.test("the pnpm memory is in the table", async () => {
    await go("memories");
    const row = page.getByTestId("memory-row").filter({ hasText: /pnpm/i });
    await row.first().waitFor({ state: "visible" });
    pnpmIds = await row.evaluateAll((rows) => rows.filter((r) => r.dataset.status === "active").map((r) => r.dataset.id));
    assert.ok(pnpmIds.length >= 1, "an active memory mentions pnpm");

    // Its detail shows the source message.
    await row.first().getByTestId("memory-open").click();
    await byId("detail-summary").waitFor({ state: "visible" });
    await textMatching(byId("detail-sources"), /pnpm/i);
    await byId("detail-close").click();
    await byId("detail-dialog").waitFor({ state: "hidden" });
  });

  await t.test("recall answers and shows the fusion trace of five channels", async () => {
    await go("recall");
    await byId("recall-query").fill(QUESTION);
    await byId("recall-submit").click();
    const answer = await textMatching(byId("recall-answer"), /\S/);
    assert.match(answer, /pnpm/i, "the answer names pnpm");
    await byId("recall-trace").waitFor({ state: "visible" });
    for (const ch of CHANNELS) {
      await byId(`trace-head-${ch}`).waitFor({ state: "visible" });
      await byId(`channel-${ch}`).waitFor({ state: "visible" });
    }
    const candidates = await page.getByTestId("trace-row").evaluateAll((rows) => rows.map((r) => r.dataset.id));
    assert.ok(candidates.some((id) => pnpmIds.includes(id)), "a pnpm memory is a recall candidate");
    const ranked = await page
      .getByTestId("trace-row")
      .filter({ hasText: /pnpm/i })
      .first()
      .locator("td[data-rank]:not([data-rank=''])")
      .count();
    assert.ok(ranked >= 1, "at least one channel ranked the pnpm memory");
    if (SCREENSHOT) {
      fs.mkdirSync(path.dirname(SHOT), { recursive: true });
      await page.mouse.move(0, 0);
      await page.evaluate(() => document.querySelector("#status")?.classList.remove("toast-show"));
      await page.waitForTimeout(300);
      await page.screenshot({ path: SHOT, fullPage: true });
    }
  });

  await t.test("forgetting the pnpm memory takes it out of recall", async () => {
    await go("memories");
    await byId("filter-status").selectOption("active");
    for (const id of pnpmIds) {
      const row = page.locator(`[data-testid=memory-row][data-id="${id}"]`);
      await row.getByTestId("memory-forget").click();
      await byId("confirm-dialog").waitFor({ state: "visible" });
      await byId("confirm-ok").click();
      await row.waitFor({ state: "detached" }); // the active-only list drops it
    }
    await byId("filter-status").selectOption("forgotten");
    for (const id of pnpmIds) {
      await page.locator(`[data-testid=memory-row][data-id="${id}"][data-status=forgotten]`).waitFor({ state: "visible" });
    }
    await byId("filter-status").selectOption("");

    await go("recall");
    await byId("recall-query").fill(QUESTION);
    await byId("recall-submit").click();
    await byId("recall-answer").waitFor({ state: "visible" });
    await page.waitForFunction(() => !document.querySelector("#recall-output")?.hasAttribute("aria-busy"));
    const candidates = await page.getByTestId("trace-row").evaluateAll((rows) => rows.map((r) => r.dataset.id));
    for (const id of pnpmIds) assert.ok(!candidates.includes(id), `forgotten memory ${id} left recall`);
  });

  let exported = "";
  await t.test("export downloads the profile as NDJSON", async () => {
    await go("transfer");
    const [download] = await Promise.all([page.waitForEvent("download"), byId("export-button").click()]);
    assert.match(download.suggestedFilename(), /\.ndjson$/);
    const file = path.join(downloads, download.suggestedFilename());
    await download.saveAs(file);
    exported = fs.readFileSync(file, "utf8");
    const lines = exported.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
    assert.equal(lines[0].kind, "header");
    assert.ok(lines.some((l) => l.kind === "message" && /pnpm/.test(l.content)), "the export holds the messages");
    await textMatching(byId("export-result"), /Saved .*\.ndjson/);
  });

  await t.test("import loads the file into another profile", async () => {
    await byId("scope-profile").fill(`${profile}-copy`);
    await byId("scope-apply").click();
    await page.waitForFunction((p) => document.title.startsWith(`console-e2e/${p}`), `${profile}-copy`);
    await go("transfer");
    await byId("import-file").setInputFiles({ name: "profile.ndjson", mimeType: "application/x-ndjson", buffer: Buffer.from(exported) });
    await byId("import-submit").click();
    await textMatching(byId("import-result"), /Imported profile\.ndjson: \d+ new/);
    await go("memories");
    await page.getByTestId("memory-row").first().waitFor({ state: "visible" });
  });

  await t.test("a wrong token shows a clear message", async () => {
    await byId("disconnect").click();
    await byId("connect-panel").waitFor({ state: "visible" });
    await byId("token-input").fill("not-the-right-token");
    await byId("connect-submit").click();
    const msg = await textMatching(byId("auth-error"), /token/i);
    assert.match(msg, /refused|401|403/i);
    assert.ok(await byId("connect-form").isVisible(), "the connect form stays usable");
    const stored = await page.evaluate(() => Object.values(sessionStorage));
    assert.ok(!stored.includes("not-the-right-token"), "a refused token is not kept");
  });

  assert.deepEqual(external, [], "the console makes no request outside the Worker");
  assert.deepEqual(problems, [], "no script errors in the page");
});

// The console's pure helpers (no browser, no Worker needed).
test("console helpers: pasted conversations parse as JSON or role lines", async () => {
  // format.js has no imports; loading it from its text avoids Node's
  // module-type guess for a .js file outside a "type": "module" package.
  const src = fs.readFileSync(path.resolve(HERE, "../../www/js/format.js"), "utf8");
  const { parseConversation, filenameFrom, isName } = await import(`data:text/javascript,${encodeURIComponent(src)}`);

  const lines = parseConversation(CONVERSATION).messages;
  assert.deepEqual(
    lines.map((m) => m.role),
    ["user", "assistant", "user", "assistant"],
  );
  assert.equal(lines[2].content, "Use pnpm, not npm. And dark mode by default.");

  const json = parseConversation('[{"role":"user","content":"Hi there","timestamp":"2026-04-15"},{"role":"assistant","content":"Hello"}]').messages;
  assert.deepEqual(json[0], { role: "user", content: "Hi there", timestamp: "2026-04-15" });
  assert.equal(parseConversation('{"messages":[{"role":"user","content":"x"}]}').messages.length, 1);

  // A line without a role continues the message above; aliases map to user/assistant.
  const multi = parseConversation("Human: first line\nsecond line\nAI: reply").messages;
  assert.deepEqual(multi, [
    { role: "user", content: "first line\nsecond line" },
    { role: "assistant", content: "reply" },
  ]);

  assert.throws(() => parseConversation(""), /Paste a conversation/);
  assert.throws(() => parseConversation("no role here"), /Line 1 does not start with a role/);
  assert.throws(() => parseConversation("[{"), /does not parse/);
  assert.throws(() => parseConversation('[{"role":"user"}]'), /Message 1 has no content/);
  assert.throws(() => parseConversation("user:\nassistant: ok"), /Message 1 \(user\) is empty/);

  assert.equal(filenameFrom('attachment; filename="ns-p.ndjson"', "x"), "ns-p.ndjson");
  assert.equal(filenameFrom(null, "fallback.ndjson"), "fallback.ndjson");
  assert.ok(isName("my-profile_1.0") && !isName("..") && !isName("a/b") && !isName("x".repeat(33)));
});

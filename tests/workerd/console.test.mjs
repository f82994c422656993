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
// docs/console.png. A second test stores 32 KB unbroken strings and checks
// that no view of the console grows wider than the window, at a desktop and
// a phone width (WIDE_SHOTS=dir saves a screenshot of each view there).

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

import {
  TOKEN, browserTarget, closeDialogsAfterEach, connectConsole, importFormatJs, launchBrowser, profileApi, textMatching, wideElements,
} from "./browser-support.mjs";

const SCREENSHOT = process.env.SCREENSHOT === "1";
const HERE = path.dirname(fileURLToPath(import.meta.url));
const SHOT = path.resolve(HERE, "../../docs/console.png");

const CONVERSATION = [
  "user: Set up the project with React and TypeScript.",
  "assistant: Done. Scaffolded a React + TS project targeting Workers.",
  "user: Use pnpm, not npm. And dark mode by default.",
  "assistant: Got it -- pnpm and dark mode as default.",
].join("\n");
const QUESTION = "What package manager does the user prefer?";
const CHANNELS = ["key", "fts", "hyde", "vector", "messages"];

test("web console: connect, ingest, list, recall with trace, forget, export, import, wrong token", async (t) => {
  const target = await browserTarget(t);
  if (!target) return;
  const { pw, origin } = target;

  const run = Date.now().toString(36);
  const namespace = "console-e2e";
  const profile = `p-${run}`;
  const downloads = fs.mkdtempSync(path.join(os.tmpdir(), "console-downloads-"));
  const { page, problems } = await launchBrowser(t, pw, {
    acceptDownloads: true,
    downloadsPath: downloads,
    viewport: { width: 1440, height: 900 },
    colorScheme: "light",
  });
  t.after(() => fs.rmSync(downloads, { recursive: true, force: true }));

  const external = [];
  page.on("request", (r) => {
    const u = new URL(r.url());
    if (!["data:", "blob:"].includes(u.protocol) && u.origin !== new URL(origin).origin) external.push(r.url());
  });

  const byId = (id) => page.getByTestId(id);
  const go = async (view) => {
    await byId(`nav-${view}`).click();
    await page.locator(`#view-${view}`).waitFor({ state: "visible" });
  };

  await t.test("the page loads and asks for a token", async () => {
    const res = await page.goto(`${origin}/`);
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
    // The forms' enums and limits come from the served contract.
    const doc = await (await fetch(`${origin}/openapi.json`)).json();
    const options = (sel) => page.$$eval(`${sel} option`, (os) => os.map((o) => o.value).filter(Boolean));
    assert.deepEqual(await options("#f-type"), doc.components.schemas.MemoryType.enum);
    assert.deepEqual(await options("#f-status"), doc.components.schemas.Status.enum);
    assert.deepEqual(await options("#r-length"), doc.components.schemas.ResponseLength.enum);
    assert.equal(await page.$eval("#r-limit", (e) => Number(e.max)), doc.components.schemas.RecallRequest.properties.limit.maximum);
    assert.equal(await page.$eval("#m-content", (e) => e.maxLength), doc.components.schemas.RememberRequest.properties.content.maxLength);
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

  await t.test("the scope fields suggest the token's namespaces and the namespace's profiles; the profile field opens a name over 32 characters with '@' and '+'", async () => {
    // A namespace and a profile this browser never opened: only the lists
    // can suggest them.
    const listedNamespace = `listed-ns-${run}`;
    const made = await fetch(`${origin}/accounts/local/agent-memory/namespaces`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ name: listedNamespace }),
    });
    assert.equal(made.status, 201, await made.text());
    const listed = `listed-${run}`;
    const res = await fetch(`${origin}/accounts/local/agent-memory/namespaces/${namespace}/profiles/${listed}/remember`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify({ content: "The user keeps a second profile." }),
    });
    assert.equal(res.status, 200, await res.text());
    const long = `someone.with-a-long-name+${run}@example-company.com`;
    assert.ok(long.length > 32, long);
    await byId("scope-profile").fill(long);
    await byId("scope-apply").click();
    await page.waitForFunction((title) => document.title.startsWith(title), `${namespace}/${long}`);
    await byId("scope-profile").fill(profile);
    await byId("scope-apply").click();
    await page.waitForFunction((title) => document.title.startsWith(title), `${namespace}/${profile}`);
    await page.waitForFunction(
      (name) => [...document.querySelectorAll("#recent-profiles option")].some((o) => o.value === name),
      listed,
    );
    const suggested = await page.$$eval("#recent-profiles option", (os) => os.map((o) => o.value));
    assert.ok(suggested.includes(long) && suggested.includes(profile), `the recent names stay: ${suggested}`);
    await page.waitForFunction(
      (name) => [...document.querySelectorAll("#recent-namespaces option")].some((o) => o.value === name),
      listedNamespace,
    );
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

// ---- long unbroken strings -------------------------------------------------

const KB32 = 32 * 1024; // a message's or a remembered content's limit (src/core/api.rs)
const SIZES = [
  { width: 1280, height: 800 },
  { width: 390, height: 844 },
];

/** Widest the fusion trace's table may scroll sideways inside its card. */
const TRACE_SCROLL_MAX = 1600;

test("web console: long unbroken strings wrap inside the window (memories, detail, confirm, toast, recall, add, errors)", async (t) => {
  const target = await browserTarget(t);
  if (!target) return;
  const { pw, origin } = target;

  const run = Date.now().toString(36);
  const namespace = "console-wide";
  const profile = `w-${run}`;
  const long = (prefix, letter, bytes = KB32) => prefix + letter.repeat(bytes - prefix.length);
  const SESSION = long("long-session-", "s", 64); // the session id limit
  const ROLE = "r".repeat(64); // the role limit
  const KEY = "k".repeat(128); // the key limit
  const QUERY = long("What is the codename and the deploy token label ", "q", 1000); // under the 1024-byte query limit

  // ---- seed through the REST API ----
  const { api } = profileApi(origin, namespace, profile);
  const messages = [
    { role: "user", content: long("My favourite codename is Zephyr ", "a") },
    { role: ROLE, content: long("The release train is called Boreas ", "b") },
    { role: "assistant", content: `${long("The user said the build id is ", "c", KB32 - 64)} and it ships Friday.` },
  ];
  const ingested = await api("POST", "/ingest", { sessionId: SESSION, messages });
  const first = await api("POST", "/remember", { content: "d".repeat(KB32), key: KEY, sessionId: SESSION });
  const second = await api("POST", "/remember", { content: long("Deploy token label is ", "e"), key: KEY, sessionId: SESSION });
  assert.equal(second.supersedes, first.id, "the second remember with the same key supersedes the first (a version chain)");
  const zephyr = ingested.memories.find((m) => m.summary.includes("Zephyr"));
  const buildId = ingested.memories.find((m) => m.summary.includes("build id"));
  assert.ok(zephyr && buildId, "ingest stored memories from the long messages");
  const listed = (await api("GET", "/memories?limit=100")).memories;
  // List entries carry no content; the detail drawer shows it (get).
  const details = await Promise.all(listed.map((m) => api("GET", `/memories/${m.id}`)));
  const unbroken = details.reduce((n, m) => n + Math.max(...m.content.split(/\s+/).map((w) => w.length)), 0);
  assert.ok(unbroken >= 100 * 1024, `the listed memories hold ${unbroken} characters of unbroken text`);

  // ---- the browser ----
  const { page, problems } = await launchBrowser(t, pw, {
    viewport: SIZES[0],
    colorScheme: "light",
    reducedMotion: "reduce",
  });

  const byId = (id) => page.getByTestId(id);
  const go = async (view) => {
    await byId(`nav-${view}`).click();
    await page.locator(`#view-${view}`).waitFor({ state: "visible" });
  };
  const shots = process.env.WIDE_SHOTS;
  let size = SIZES[0];
  /** Asserts that nothing on screen now ends past the window's right edge. */
  const fits = async (what) => {
    await page.evaluate(() => Promise.all(document.getAnimations().map((a) => a.finished.catch(() => {}))));
    if (shots) await page.screenshot({ path: path.join(shots, `${size.width}-${what.replace(/\W+/g, "-")}.png`) });
    const wide = await page.evaluate(wideElements, TRACE_SCROLL_MAX);
    assert.deepEqual(wide, [], `${what} at ${size.width}x${size.height}: elements end past the right edge of the window:\n  ${wide.join("\n  ")}`);
  };

  await t.test("connect", () => connectConsole(page, origin, namespace, profile));

  closeDialogsAfterEach(t, page);

  // One memory to forget per window size (the confirmation and the toast name it).
  const toForget = [first, buildId];
  for (const [i, s] of SIZES.entries()) {
    const at = `${s.width}x${s.height}`;
    const row = (id) => page.locator(`[data-testid=memory-row][data-id="${id}"]`);

    await t.test(`${at}: the memory table`, async () => {
      size = s;
      await page.setViewportSize(s);
      await go("memories");
      await byId("refresh").click();
      for (const m of [zephyr, buildId, first, second]) await row(m.id).waitFor({ state: "visible" });
      await page.waitForFunction(() => !document.querySelector("[data-testid=memory-table]")?.hasAttribute("aria-busy"));
      await fits("memory table");
    });

    await t.test(`${at}: the detail drawer (version chain, key, session, search queries, source messages)`, async () => {
      for (const m of [second, zephyr]) {
        await row(m.id).getByTestId("memory-open").click();
        await byId("detail-summary").waitFor({ state: "visible" });
        await page.waitForFunction((id) => document.querySelector("[data-testid=detail-id]")?.textContent === id, m.id);
        if (m === second) {
          await byId("detail-versions").waitFor({ state: "visible" });
          assert.equal(await byId("detail-key").innerText(), KEY);
        } else {
          await textMatching(byId("detail-sources"), /Zephyr/);
        }
        assert.equal(await byId("detail-session").innerText(), SESSION);
        await fits(`detail of ${m === second ? "the keyed memory" : "the ingested memory"}`);
        await byId("detail-close").click();
        await byId("detail-dialog").waitFor({ state: "hidden" });
      }
    });

    await t.test(`${at}: the forget confirmation and the toast`, async () => {
      const m = toForget[i];
      await row(m.id).getByTestId("memory-forget").click();
      await byId("confirm-dialog").waitFor({ state: "visible" });
      await fits("forget confirmation");
      await byId("confirm-ok").click();
      await byId("confirm-dialog").waitFor({ state: "hidden" });
      await page.locator("#status.toast-show").filter({ hasText: "Forgot" }).waitFor({ state: "visible" });
      await fits("toast");
      await page.locator(`[data-testid=memory-row][data-id="${m.id}"][data-status=forgotten]`).waitFor({ state: "visible" });
      await fits("memory table after forgetting");
    });

    await t.test(`${at}: recall with the fusion trace and the query analysis`, async () => {
      await go("recall");
      await byId("recall-query").fill(QUERY);
      await byId("recall-submit").click();
      await byId("recall-trace").waitFor({ state: "visible" });
      await byId("recall-analysis").waitFor({ state: "visible" });
      await page.waitForFunction(() => !document.querySelector("#recall-output")?.hasAttribute("aria-busy"));
      assert.ok((await byId("recall-answer").innerText()).length > KB32, "the answer quotes the long memories");
      await fits("recall");
    });

    await t.test(`${at}: ingest and remember reports`, async () => {
      await go("add");
      const [x, y, z] = i === 0 ? ["f", "g", "h"] : ["i", "j", "l"];
      const conversation = [
        { role: ROLE, content: long("The staging cluster is named Hestia ", x) },
        { role: "user", content: long("My second favourite codename is Orion ", y) },
      ];
      await byId("ingest-text").fill(JSON.stringify(conversation));
      await textMatching(byId("ingest-preview"), /2 messages/);
      await byId("ingest-session").fill(long(`ui-session-${i}-`, "u", 64));
      await byId("ingest-submit").click();
      await textMatching(byId("ingest-report"), new RegExp(`memor(y|ies) stored[^]*ui-session-${i}-`));
      await byId("remember-content").fill(long("The vault label is ", z));
      await byId("remember-session").fill(long(`ui-remember-${i}-`, "v", 64));
      await byId("remember-submit").click();
      await textMatching(byId("remember-report"), new RegExp(`Remembered[^]*The vault label is ${z}{16}`));
      await fits("add memories");
    });

    await t.test(`${at}: an import error quoting a long value`, async () => {
      await go("transfer");
      const file = `{"kind":"header","format":"agent-memory-export","version":1}\n{"kind":"${"x".repeat(200)}"}\n`;
      await byId("import-file").setInputFiles({ name: `${"n".repeat(120)}.ndjson`, mimeType: "application/x-ndjson", buffer: Buffer.from(file) });
      await byId("import-submit").click();
      await textMatching(byId("import-error"), /unknown record kind/);
      await fits("import error");
    });
  }

  await t.test("the error toast and notice of a refused token, at both sizes", async () => {
    await byId("disconnect").click();
    await byId("connect-panel").waitFor({ state: "visible" });
    await byId("token-input").fill("t".repeat(512));
    await byId("connect-submit").click();
    await textMatching(byId("auth-error"), /refused/);
    await page.locator("#status.toast-error.toast-show").waitFor({ state: "visible" });
    for (const s of [...SIZES].reverse()) {
      size = s;
      await page.setViewportSize(s);
      await fits("refused token");
    }
  });

  assert.deepEqual(problems, [], "no script errors in the page");
});

// The console's pure helpers (no browser, no Worker needed).
test("web console: opening a namespace the token may not touch is refused in place: the token stays, connected to the profile it had", async (t) => {
  const scoped = "team-token-123";
  const target = await browserTarget(t, { vars: { AUTH_TOKENS: JSON.stringify({ [TOKEN]: ["*"], [scoped]: ["team"] }) } });
  if (!target) return;
  if (process.env.MEMORY_URL) return t.skip("needs a Worker of its own, with a token scoped to one namespace");
  const { page } = await launchBrowser(t, target.pw);
  const byId = (id) => page.getByTestId(id);
  await page.goto(`${target.origin}/`);
  await byId("token-input").fill(scoped);
  await byId("connect-namespace").fill("team");
  await byId("connect-profile").fill("p");
  await byId("connect-submit").click();
  await byId("stat-memories").waitFor({ state: "visible" });
  await byId("scope-namespace").fill("other");
  await byId("scope-apply").click();
  const msg = await textMatching(byId("error-banner"), /./);
  assert.match(msg, /namespace|may not|403/i, msg);
  assert.ok(await byId("stat-memories").isVisible(), "still connected");
  assert.equal(await byId("scope-namespace").inputValue(), "team", "the fields say the profile still open");
  const stored = await page.evaluate(() => Object.values(sessionStorage));
  assert.ok(stored.includes(scoped), "the token is kept: it is good for its own namespace");
});

test("console helpers: pasted conversations parse as JSON or role lines", async () => {
  const { parseConversation, filenameFrom, isName, isProfileName } = await importFormatJs();

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
  // A profile may be named by an email, up to the service's 100 characters.
  assert.ok(isProfileName("alice+work@example.com") && isProfileName("x".repeat(100)) && !isProfileName("x".repeat(101)) && !isProfileName("a/b"));
  assert.ok(!isName("alice@example.com"), "a namespace may not");
});

// End-to-end test of the web console's metadata, filter and consolidation
// features in a real browser against a running Worker:
//
//   MEMORY_URL=http://127.0.0.1:8787 node --test tests/workerd/console-metadata.test.mjs
//
// The same harness as console.test.mjs (tests/workerd/browser-support.mjs):
// MEMORY_URL is the Worker's origin; without it the test starts the built
// Worker in workerd itself (tests/workerd/helpers.mjs). The browser is
// Debian's chromium (`make setup-browser`) driven by playwright-core;
// CHROMIUM_PATH overrides /usr/bin/chromium, TOKEN the local dev token
// `dev-token`.
//
// What it drives: memories remembered with metadata over REST show their
// metadata as chips in the table and the drawer; the drawer's editor
// changes, adds and removes pairs with typed values and saves them (REST
// then reads the new metadata); bad input shows the service's 400 message;
// the table's JSON filter narrows the list and a refused filter says why;
// two rewordings of one fact are consolidated from the console (a dry run
// first, which changes nothing), the survivor's detail shows the merge in
// its history with the members as links, and Undo there puts both back
// (REST reads both active again).

import { test } from "node:test";
import assert from "node:assert/strict";
import path from "node:path";

import {
  browserTarget, closeDialogsAfterEach, connectConsole, importFormatJs, launchBrowser, profileApi, textMatching, wideElements,
} from "./browser-support.mjs";

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

test("web console: metadata chips and editor, JSON filter, consolidate with dry run, history and undo", async (t) => {
  const target = await browserTarget(t);
  if (!target) return;
  const { pw, origin } = target;

  const run = Date.now().toString(36);
  const namespace = "console-meta";
  const profile = `m-${run}`;

  // ---- REST, for seeding and for checking what the console did ----
  const { call, api } = profileApi(origin, namespace, profile);
  const memory = (id) => api("GET", `/memories/${id}`);

  const deploy = await api("POST", "/remember", {
    content: "The deploy window is Tuesday at 10:00 UTC.",
    key: "ops.deploy_window",
    metadata: { agentId: "reviewer", priority: 2, pinned: true },
  });
  const staging = await api("POST", "/remember", {
    content: "The staging database is called Hestia.",
    key: "ops.staging_db",
    metadata: { agentId: "planner" },
  });
  assert.deepEqual(deploy.metadata, { agentId: "reviewer", pinned: true, priority: 2 });

  // ---- the browser ----
  const { page, problems } = await launchBrowser(t, pw, {
    prefix: "console-meta-chromium-",
    viewport: { width: 1440, height: 900 },
    colorScheme: "light",
    reducedMotion: "reduce",
  });
  const byId = (id) => page.getByTestId(id);
  // META_SHOTS=dir saves a screenshot of each view this test drives there.
  const shots = process.env.META_SHOTS;
  const shot = async (name) => {
    if (!shots) return;
    await page.evaluate(() => Promise.all(document.getAnimations().map((a) => a.finished.catch(() => {}))));
    await page.screenshot({ path: path.join(shots, `${name}.png`) });
  };
  const row = (id) => page.locator(`[data-testid=memory-row][data-id="${id}"]`);
  const rowIn = (id, status) => page.locator(`[data-testid=memory-row][data-id="${id}"][data-status="${status}"]`);
  const rowIds = () => page.getByTestId("memory-row").evaluateAll((rows) => rows.map((r) => r.dataset.id));
  /** The chips under `root` as { key: [kind, text] }. */
  const chipsOf = (root) =>
    root.locator("[data-testid=meta-chip]").evaluateAll((chips) =>
      Object.fromEntries(chips.map((c) => [c.dataset.key, [c.dataset.kind, c.querySelector("[data-testid=meta-chip-value]").textContent]])),
    );
  const tableIdle = () => page.waitForFunction(() => !document.querySelector("[data-testid=memory-table]")?.hasAttribute("aria-busy"));
  const openDetail = async (id) => {
    await row(id).getByTestId("memory-open").click();
    await page.waitForFunction((i) => document.querySelector("[data-testid=detail-id]")?.textContent === i, id);
  };
  const closeDetail = async () => {
    await byId("detail-close").click();
    await byId("detail-dialog").waitFor({ state: "hidden" });
  };
  closeDialogsAfterEach(t, page);

  await t.test("connect", () => connectConsole(page, origin, namespace, profile));

  await t.test("the table shows each memory's metadata as chips", async () => {
    await row(deploy.id).waitFor({ state: "visible" });
    await row(staging.id).waitFor({ state: "visible" });
    assert.deepEqual(await chipsOf(row(deploy.id)), {
      agentId: ["string", "reviewer"],
      pinned: ["boolean", "true"],
      priority: ["number", "2"],
    });
    assert.deepEqual(await chipsOf(row(staging.id)), { agentId: ["string", "planner"] });
    await shot("table-chips");
    // The page search reads metadata too.
    await byId("filter-text").fill("planner");
    await page.waitForFunction((id) => {
      const rows = [...document.querySelectorAll("[data-testid=memory-row]")];
      return rows.length === 1 && rows[0].dataset.id === id;
    }, staging.id);
    await byId("filter-text").fill("");
  });

  await t.test("the drawer shows the metadata and when the memory holds from", async () => {
    await openDetail(deploy.id);
    assert.deepEqual(await chipsOf(byId("detail-meta-chips")), {
      agentId: ["string", "reviewer"],
      pinned: ["boolean", "true"],
      priority: ["number", "2"],
    });
    assert.match(await byId("detail-valid-from").innerText(), /^\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    assert.equal(await byId("detail-valid-to").count(), 0, "a memory that still holds has no validTo");
    await closeDetail();
  });

  await t.test("the editor changes, removes and adds typed pairs and saves them (PATCH)", async () => {
    await openDetail(deploy.id);
    await byId("meta-edit").click();
    await byId("meta-editor").waitFor({ state: "visible" });
    const keys = () => byId("meta-row").evaluateAll((rows) => rows.map((r) => r.querySelector("[data-testid=meta-key]").value));
    const rowOf = async (key) => byId("meta-row").nth((await keys()).indexOf(key));
    assert.deepEqual(await keys(), ["agentId", "pinned", "priority"]);
    // The typed values come in as their kinds.
    assert.equal(await (await rowOf("pinned")).getByTestId("meta-type").inputValue(), "boolean");
    assert.equal(await (await rowOf("priority")).getByTestId("meta-type").inputValue(), "number");

    await (await rowOf("priority")).getByTestId("meta-value").fill("5");
    await (await rowOf("pinned")).getByTestId("meta-remove").click();
    await byId("meta-add").click();
    const added = byId("meta-row").last();
    await added.getByTestId("meta-key").fill("team");
    await added.getByTestId("meta-value").fill("infra");
    await byId("meta-add").click();
    const flag = byId("meta-row").last();
    await flag.getByTestId("meta-key").fill("reviewed");
    await flag.getByTestId("meta-type").selectOption("boolean");
    await flag.getByTestId("meta-value").selectOption("false");
    await shot("metadata-editor");
    await byId("meta-save").click();

    // The drawer shows the saved metadata...
    await byId("meta-editor").waitFor({ state: "detached" });
    const want = {
      agentId: ["string", "reviewer"],
      priority: ["number", "5"],
      reviewed: ["boolean", "false"],
      team: ["string", "infra"],
    };
    await page.waitForFunction(() => document.querySelector("[data-testid=detail-meta-chips] [data-key=team]"));
    assert.deepEqual(await chipsOf(byId("detail-meta-chips")), want);
    // ... the service holds it, typed ...
    const stored = await memory(deploy.id);
    assert.deepEqual(stored.metadata, { agentId: "reviewer", priority: 5, reviewed: false, team: "infra" });
    assert.equal(stored.summary, deploy.summary, "only the metadata changed");
    // ... and the table behind the drawer shows it too.
    await page.waitForFunction((id) => document.querySelector(`[data-testid=memory-row][data-id="${id}"] [data-key=team]`), deploy.id);
    assert.deepEqual(await chipsOf(row(deploy.id)), want);
    await closeDetail();
  });

  await t.test("bad input shows a clear error and changes nothing", async () => {
    await openDetail(deploy.id);
    await byId("meta-edit").click();
    await byId("meta-add").click();
    const bad = byId("meta-row").last();
    // A number that is not one is caught before sending.
    await bad.getByTestId("meta-key").fill("score");
    await bad.getByTestId("meta-type").selectOption("number");
    await bad.getByTestId("meta-value").fill("high");
    await byId("meta-save").click();
    await textMatching(byId("meta-error"), /“score” is a number, but “high” is not one/);
    // A key the service refuses: its 400 envelope's message is shown.
    await bad.getByTestId("meta-key").fill("bad key");
    await bad.getByTestId("meta-type").selectOption("string");
    await bad.getByTestId("meta-value").fill("x");
    await byId("meta-save").click();
    const msg = await textMatching(byId("meta-error"), /\(400\)/);
    assert.match(msg, /Invalid request \(400\): metadata: key "bad key" must be 1-64 characters/);
    await shot("metadata-error");
    // A built-in field is not a metadata key either.
    await bad.getByTestId("meta-key").fill("createdAt");
    await byId("meta-save").click();
    await textMatching(byId("meta-error"), /"createdAt" is a built-in field/);
    assert.ok(await byId("meta-editor").isVisible(), "the editor stays open with what was typed");
    await byId("meta-cancel").click();
    await byId("meta-editor").waitFor({ state: "detached" });
    assert.deepEqual((await memory(deploy.id)).metadata, { agentId: "reviewer", priority: 5, reviewed: false, team: "infra" });
    await closeDetail();
  });

  await t.test("the JSON filter narrows the list; a refused filter says why", async () => {
    const filterBy = async (text) => {
      await byId("filter-json").fill(text);
      await byId("filter-json").press("Enter");
      await tableIdle();
    };
    await filterBy('{"agentId": "reviewer"}');
    await page.waitForFunction((id) => {
      const rows = [...document.querySelectorAll("[data-testid=memory-row]")];
      return rows.length === 1 && rows[0].dataset.id === id;
    }, deploy.id);
    await filterBy('{"OR": [{"priority": {"gte": 5}}, {"agentId": {"in": ["planner"]}}]}');
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=memory-row]").length === 2);
    await filterBy('{"agentId": {"ne": "reviewer"}}');
    await page.waitForFunction((id) => {
      const rows = [...document.querySelectorAll("[data-testid=memory-row]")];
      return rows.length === 1 && rows[0].dataset.id === id;
    }, staging.id);

    // Not JSON: the service's 400 names the problem, next to the filter.
    await filterBy('{"agentId": ');
    const notJson = await textMatching(byId("filter-error"), /refused/);
    assert.match(notJson, /^The filter was refused \(400\): filter is not JSON/);
    assert.equal(await byId("filter-json").getAttribute("aria-invalid"), "true");
    assert.equal(await byId("memory-row").count(), 0);
    await shot("filter-error");
    assert.ok(await byId("error-banner").isHidden(), "the refusal shows by the filter, not as a page error");
    // JSON, but no filter: an unknown operator.
    await filterBy('{"priority": {"between": [1, 3]}}');
    const badOp = await textMatching(byId("filter-error"), /refused/);
    assert.match(badOp, /\(400\)/);
    const direct = await call("GET", `/memories?filter=${encodeURIComponent('{"priority": {"between": [1, 3]}}')}`);
    assert.equal(direct.status, 400);
    assert.ok(badOp.includes(direct.env.errors[0].message), `the console shows the service's message (${direct.env.errors[0].message})`);

    // A good filter clears the error; Clear shows everything again.
    await filterBy('{"team": "infra"}');
    await byId("filter-error").waitFor({ state: "hidden" });
    assert.equal(await byId("filter-json").getAttribute("aria-invalid"), null);
    assert.deepEqual(await rowIds(), [deploy.id]);
    await byId("filter-reset").click();
    await page.waitForFunction(() => document.querySelectorAll("[data-testid=memory-row]").length === 2);
    assert.equal(await byId("filter-json").inputValue(), "");
  });

  // Two rewordings of one fact, a second apart, under different keys (so
  // the second does not supersede the first when it is written).
  let older;
  let newer;
  await t.test("two rewordings of one fact are both active", async () => {
    older = await api("POST", "/remember", { content: "The user prefers dark mode in the code editor.", key: "user.editor_theme" });
    await sleep(1100);
    newer = await api("POST", "/remember", { content: "In the code editor, the user prefers the dark mode.", key: "user.theme" });
    assert.notEqual(older.id, newer.id);
    assert.equal(newer.supersedes, undefined, "a different key: no supersession at write time");
    await byId("refresh").click();
    await tableIdle();
    for (const m of [older, newer]) await rowIn(m.id, "active").waitFor({ state: "visible" });
  });

  /** The action of `report` (a locator) that merged the two rewordings. */
  const mergeOf = async (list) => {
    const items = list.getByTestId("consolidation");
    const found = await items.evaluateAll(
      (els, ids) =>
        els
          .map((e, i) => ({
            i,
            action: e.dataset.action,
            members: [...e.querySelectorAll("[data-testid=consolidation-target], [data-testid=consolidation-member]")].map((m) => m.dataset.id).sort(),
          }))
          .find((a) => a.members.length === 2 && a.members.every((m) => ids.includes(m))),
      [older.id, newer.id],
    );
    assert.ok(found, "an action takes the two rewordings");
    assert.equal(found.action, "merge");
    return items.nth(found.i);
  };

  let survivor;
  let merged;
  await t.test("a dry run previews the merge and changes nothing", async () => {
    await byId("consolidate-open").click();
    await byId("consolidate-dialog").waitFor({ state: "visible" });
    await byId("consolidate-preview").click();
    const report = byId("consolidate-preview-report");
    await report.waitFor({ state: "visible" });
    assert.match(await byId("consolidate-summary").innerText(), /^Dry run: \d+ changes? would be made; active memories \d+ → \d+\. Nothing was changed\.$/);
    const action = await mergeOf(report);
    assert.match(await action.getByTestId("consolidation-reason").innerText(), /same thing/);
    assert.equal(await report.getByTestId("consolidation-undo").count(), 0, "nothing to undo in a dry run");
    await shot("consolidate-dry-run");
    for (const m of [older, newer]) assert.equal((await memory(m.id)).status, "active", "the dry run changed nothing");
    await byId("consolidate-close").click();
    await byId("consolidate-dialog").waitFor({ state: "hidden" });
  });

  await t.test("consolidating from the console merges them", async () => {
    await byId("consolidate-open").click();
    await byId("consolidate-dialog").waitFor({ state: "visible" });
    await byId("consolidate-run").click();
    const report = byId("consolidate-run-report");
    await report.waitFor({ state: "visible" });
    assert.match(await byId("consolidate-summary").innerText(), /^Consolidated: \d+ changes?; active memories \d+ → \d+\.$/);
    const action = await mergeOf(report);
    survivor = await action.getByTestId("consolidation-target").getAttribute("data-id");
    merged = survivor === older.id ? newer.id : older.id;
    assert.ok([older.id, newer.id].includes(survivor));
    await action.getByTestId("consolidation-undo").waitFor({ state: "visible" });
    await shot("consolidate-run");
    await byId("consolidate-close").click();
    await byId("consolidate-dialog").waitFor({ state: "hidden" });
    // The table reloaded behind the dialog.
    await rowIn(merged, "superseded").waitFor({ state: "visible" });
    assert.equal((await memory(survivor)).status, "active");
    assert.equal((await memory(merged)).status, "superseded");
  });

  await t.test("the survivor's detail shows the merge, with its members as links; the merged one's versions say when each held", async () => {
    await openDetail(survivor);
    const hist = byId("detail-consolidations");
    await hist.waitFor({ state: "visible" });
    const rec = hist.getByTestId("consolidation");
    assert.equal(await rec.count(), 1);
    assert.equal(await rec.getAttribute("data-action"), "merge");
    assert.equal(await rec.getAttribute("data-undone"), "false");
    assert.match(await rec.getByTestId("consolidation-reason").innerText(), /same thing/);
    assert.match(await rec.locator("time").getAttribute("datetime"), /^\d{4}-\d{2}-\d{2}T/);

    // The member is a link to the merged memory, whose detail shows the same record ...
    await rec.locator(`[data-testid=consolidation-member][data-id="${merged}"] button`).click();
    await page.waitForFunction((i) => document.querySelector("[data-testid=detail-id]")?.textContent === i, merged);
    await byId("detail-consolidations").getByTestId("consolidation").waitFor({ state: "visible" });
    assert.equal(await byId("detail-status").innerText(), "superseded");
    assert.match(await byId("detail-valid-to").innerText(), /UTC$/, "the merged memory held until the survivor was said");
    // ... and its version chain says when each held: it until the survivor, the survivor since.
    const versions = byId("detail-version");
    await versions.first().waitFor({ state: "visible" });
    const validity = await versions.evaluateAll((vs) =>
      vs.map((v) => {
        const p = v.querySelector("[data-testid=detail-validity]");
        return { id: v.dataset.id, from: p?.dataset.validFrom, to: p?.dataset.validTo, open: !!p?.querySelector("[data-testid=valid-to-open]") };
      }),
    );
    const was = validity.find((v) => v.id === merged);
    const now = validity.find((v) => v.id === survivor);
    assert.ok(was && now, `both are in the version chain: ${JSON.stringify(validity)}`);
    assert.ok(was.from && was.to, "the merged memory held from … to …");
    assert.ok(now.from && now.open && !now.to, "the survivor still holds");
    assert.equal(was.to, now.from, "the merged one held until the survivor held");
    await byId("detail-consolidations").scrollIntoViewIfNeeded();
    await shot("merged-detail-history");
    // ... and its result links back to the survivor.
    await byId("detail-consolidations").locator(`[data-testid=consolidation-target][data-id="${survivor}"] button`).click();
    await page.waitForFunction((i) => document.querySelector("[data-testid=detail-id]")?.textContent === i, survivor);
    await closeDetail();
  });

  await t.test("Undo in the detail puts both memories back", async () => {
    await openDetail(survivor);
    const rec = byId("detail-consolidations").getByTestId("consolidation");
    await rec.getByTestId("consolidation-undo").click();
    await byId("detail-consolidations").locator("[data-testid=consolidation][data-undone=true]").waitFor({ state: "visible" });
    const hist = byId("detail-consolidations");
    await textMatching(hist.getByTestId("consolidation-undone"), /^undone \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC$/);
    assert.equal(await hist.getByTestId("consolidation-undo").count(), 0, "an undone record has no Undo");
    await shot("survivor-detail-undone");
    // REST: both active again, each as it was.
    const [a, b] = await Promise.all([memory(older.id), memory(newer.id)]);
    assert.equal(a.status, "active");
    assert.equal(b.status, "active");
    assert.equal(a.supersededBy, undefined);
    assert.equal(a.content, older.content);
    assert.equal(b.content, newer.content);
    const record = (survivor === a.id ? a : b).consolidations?.[0];
    assert.ok(record?.undoneAt, "the record says when it was undone");
    // The table behind the drawer shows both active.
    await closeDetail();
    for (const m of [older, newer]) await rowIn(m.id, "active").waitFor({ state: "visible" });
  });

  await t.test("on a phone, long metadata, the editor, the history and the dry run stay inside the window", async () => {
    const LONG = "v".repeat(512); // a string value's limit
    await api("PATCH", `/memories/${survivor}`, { metadata: { agentId: "a".repeat(200), [`k${"e".repeat(63)}`]: LONG, n: 12345678901234 } });
    await page.setViewportSize({ width: 390, height: 844 });
    const fits = async (what) => {
      await shot(`phone-${what.replace(/\W+/g, "-")}`);
      assert.deepEqual(await page.evaluate(wideElements), [], `${what}: past the right edge of the window`);
    };
    await byId("refresh").click();
    await page.waitForFunction((id) => document.querySelector(`[data-testid=memory-row][data-id="${id}"] [data-key=n]`), survivor);
    await fits("memory table with long metadata");
    await openDetail(survivor);
    await byId("detail-consolidations").waitFor({ state: "visible" });
    await fits("detail with long metadata and history");
    await byId("meta-edit").click();
    await byId("meta-add").click();
    await fits("metadata editor");
    await byId("meta-cancel").click();
    await closeDetail();
    await byId("consolidate-open").click();
    await byId("consolidate-preview").click();
    await byId("consolidate-preview-report").waitFor({ state: "visible" });
    await fits("consolidation dry run");
    await byId("consolidate-close").click();
  });

  assert.deepEqual(problems, [], "no script errors in the page");
});

// The metadata helpers (no browser, no Worker needed).
test("console helpers: metadata editor rows become typed metadata", async () => {
  const { metadataFromRows, metaEntries, metaKind, metaText } = await importFormatJs();

  assert.deepEqual(
    metadataFromRows([
      { key: " agentId ", type: "string", value: "reviewer" },
      { key: "priority", type: "number", value: " -2.5e1 " },
      { key: "pinned", type: "boolean", value: "false" },
      { key: "note", type: "string", value: "" },
    ]),
    { agentId: "reviewer", priority: -25, pinned: false, note: "" },
  );
  assert.deepEqual(metadataFromRows([]), {});
  const proto = metadataFromRows([{ key: "__proto__", type: "string", value: "x" }]);
  assert.equal(JSON.stringify(proto), '{"__proto__":"x"}', "a key __proto__ is a key, not a prototype");
  assert.throws(() => metadataFromRows([{ key: " ", type: "string", value: "x" }]), /Field 1 has no key/);
  assert.throws(() => metadataFromRows([{ key: "a", type: "string", value: "1" }, { key: "a", type: "number", value: "2" }]), /“a” is there twice/);
  for (const bad of ["", "abc", "0x10", "1,5", "Infinity", "1e999", "01"]) {
    assert.throws(() => metadataFromRows([{ key: "n", type: "number", value: bad }]), /is a number, but/, bad);
  }
  assert.throws(() => metadataFromRows([{ key: "b", type: "boolean", value: "yes" }]), /true or false/);

  assert.deepEqual(metaEntries({ b: 1, a: "x" }), [["a", "x"], ["b", 1]]);
  assert.deepEqual(metaEntries(undefined), []);
  assert.deepEqual(metaEntries([1]), []);
  assert.deepEqual([metaKind("x"), metaKind(2), metaKind(true)], ["string", "number", "boolean"]);
  assert.equal(metaText({ team: "infra", n: 2 }), "n=2 team=infra");
});

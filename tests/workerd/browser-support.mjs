// Shared pieces of the web console's browser tests
// (tests/workerd/console*.test.mjs): the Worker to test against (MEMORY_URL,
// or the built Worker started in workerd), playwright-core driving Debian's
// chromium, the page's error watch, text waits, a REST client for seeding
// and checking, and the in-page check for what ends past the window's edge.
//
// Environment: MEMORY_URL is the Worker's origin; CHROMIUM_PATH overrides
// /usr/bin/chromium; TOKEN overrides the local dev token `dev-token`;
// CONSOLE_TIMEOUT_MS the page's timeout (30 s).

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

import { startWorker } from "./helpers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** The Worker's origin from MEMORY_URL, without a trailing slash ("" when unset). */
export const GIVEN_URL = (process.env.MEMORY_URL || "").replace(/\/+$/, "");
/** The browser playwright-core drives. */
export const CHROMIUM = process.env.CHROMIUM_PATH || "/usr/bin/chromium";
/** The bearer token the console connects with. */
export const TOKEN = process.env.TOKEN || "dev-token";
/** The page's default timeout and textMatching's, in milliseconds. */
export const WAIT = Number(process.env.CONSOLE_TIMEOUT_MS || 30_000);
/** Chromium's flags: headless, no sandbox, no network of its own. */
export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** playwright-core from the repository's node_modules, or from the working
 *  directory's (so a scratch install works too); null when absent. */
export async function loadPlaywright() {
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

/** Why a browser test cannot run (no Worker origin `url`, no playwright
 *  `pw`, no browser), or null when it can. */
export function skipReason(pw, url) {
  if (!url) return "MEMORY_URL is not set: start the Worker (the workerd harness does) and pass its origin";
  if (!pw) return "the npm package playwright-core is not installed";
  if (!fs.existsSync(CHROMIUM)) return `no browser at ${CHROMIUM} (make setup-browser, or set CHROMIUM_PATH)`;
  return null;
}

/**
 * Playwright and the Worker's origin for test `t`: MEMORY_URL, or else the
 * built Worker started in workerd (tests/workerd/helpers.mjs) until `t`
 * ends. When something is missing, skips `t` (saying what) and returns null.
 */
export async function browserTarget(t, workerOptions = {}) {
  const pw = await loadPlaywright();
  let origin = GIVEN_URL;
  if (!origin && pw && fs.existsSync(CHROMIUM)) {
    const w = await startWorker(workerOptions);
    t.after(() => w.dispose());
    origin = String(w.url).replace(/\/+$/, "");
  }
  const reason = skipReason(pw, origin);
  if (reason) {
    t.skip(reason);
    return null;
  }
  return { pw, origin };
}

/**
 * Chromium in a fresh profile directory (named `prefix`…, under the temp
 * directory) with playwright's `options` (viewport, downloads, …); closed
 * and removed when test `t` ends. Returns its context, its first page and
 * that page's problems (watchProblems).
 */
export async function launchBrowser(t, pw, { prefix = "console-chromium-", ...options } = {}) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const context = await pw.chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
    ...options,
  });
  t.after(async () => {
    await context.close().catch(() => {});
    fs.rmSync(userDataDir, { recursive: true, force: true });
  });
  const page = context.pages()[0] || (await context.newPage());
  return { context, page, problems: watchProblems(page) };
}

/**
 * Sets the page's timeout and collects its errors: uncaught exceptions and
 * console errors. A refused request (a wrong token, a refused import or
 * filter, a 400) is logged by the browser as "Failed to load resource":
 * expected.
 */
export function watchProblems(page) {
  page.setDefaultTimeout(WAIT);
  const problems = [];
  page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
  page.on("console", (m) => {
    if (m.type() === "error" && !/Failed to load resource/.test(m.text())) problems.push(`console error: ${m.text()}`);
  });
  return problems;
}

/** Waits until `locator`'s text matches `re`; returns the text. */
export async function textMatching(locator, re, timeout = WAIT) {
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

/** Opens the console at `origin` and connects with TOKEN to `namespace`/`profile`;
 *  returns once the profile's statistics show. */
export async function connectConsole(page, origin, namespace, profile) {
  await page.goto(`${origin}/`);
  await page.getByTestId("token-input").fill(TOKEN);
  await page.getByTestId("connect-namespace").fill(namespace);
  await page.getByTestId("connect-profile").fill(profile);
  await page.getByTestId("connect-submit").click();
  await page.getByTestId("stat-memories").waitFor({ state: "visible" });
}

/** A failed step may leave a dialog open; after each subtest of `t` the next
 *  one starts without it. */
export function closeDialogsAfterEach(t, page) {
  t.afterEach(() => page.evaluate(() => document.querySelectorAll("dialog[open]").forEach((d) => d.close())).catch(() => {}));
}

/**
 * The REST API of one profile at `origin`, with TOKEN:
 *   call(method, route, body) → { status, env } (the parsed envelope), any status;
 *   api(method, route, body) → the envelope's result, asserting a 2xx success.
 */
export function profileApi(origin, namespace, profile) {
  const call = async (method, route, body) => {
    const res = await fetch(`${origin}/accounts/local/agent-memory/namespaces/${namespace}/profiles/${profile}${route}`, {
      method,
      headers: { Authorization: `Bearer ${TOKEN}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, env: await res.json() };
  };
  const api = async (method, route, body) => {
    const { status, env } = await call(method, route, body);
    assert.ok(status >= 200 && status < 300 && env.success, `${method} ${route}: HTTP ${status} ${JSON.stringify(env.errors)}`);
    return env.result;
  };
  return { call, api };
}

/** The console's pure helpers, www/js/format.js, as a module. It has no
 *  imports; loading it from its text avoids Node's module-type guess for a
 *  .js file outside a "type": "module" package. */
export async function importFormatJs() {
  const src = fs.readFileSync(path.resolve(HERE, "../../www/js/format.js"), "utf8");
  return import(`data:text/javascript,${encodeURIComponent(src)}`);
}

/**
 * Runs in the page (`page.evaluate(wideElements, limit)`): every visible
 * element whose box ends past the window's right edge, named where the
 * overflow starts (its parent still fits), text that runs past it, and
 * whether the page itself scrolls sideways. Empty when everything fits.
 * With a number `limit`, one exception: the fusion trace (a candidates x
 * channels matrix) scrolls sideways on purpose on a phone; what is inside it
 * is skipped when its scroller fits the window and is at most `limit`
 * pixels wide inside. Without one, nothing is excepted.
 */
export function wideElements(limit) {
  const vw = window.innerWidth;
  const name = (el) => {
    const parts = [];
    for (let e = el; e && e !== document.body && parts.length < 4; e = e.parentElement) {
      let s = e.tagName.toLowerCase();
      if (e.id) s += `#${e.id}`;
      const tid = e.getAttribute("data-testid");
      if (tid) s += `[data-testid="${tid}"]`;
      for (const c of e.classList) s += `.${c}`;
      parts.unshift(s);
      if (e.id) break;
    }
    return parts.join(" > ");
  };
  const wide = (el) => {
    if (!el.checkVisibility({ visibilityProperty: true })) return false;
    const r = el.getBoundingClientRect();
    return (r.width > 0 || r.height > 0) && r.right > vw + 1;
  };
  const out = [];
  const root = document.documentElement;
  if (root.scrollWidth > vw) out.push(`the page scrolls sideways: document scrollWidth ${root.scrollWidth} > innerWidth ${vw}`);
  const scrollers =
    typeof limit === "number" ? [...document.querySelectorAll(".table-scroll:has(> table.trace)")].filter((sc) => sc.checkVisibility()) : [];
  for (const sc of scrollers) {
    if (sc.scrollWidth > limit) out.push(`${name(sc)} scrolls sideways over ${sc.scrollWidth}px (at most ${limit})`);
  }
  const scrolled = (el) => scrollers.some((sc) => sc !== el && sc.contains(el) && !wide(sc));
  let more = 0;
  for (const el of document.body.querySelectorAll("*")) {
    if (!wide(el) || (el.parentElement !== document.body && wide(el.parentElement)) || scrolled(el)) continue;
    const r = el.getBoundingClientRect();
    if (out.length < 12) out.push(`${name(el)} ends at x=${Math.round(r.right)} (width ${Math.round(r.width)})`);
    else more += 1;
  }
  // Text overflows as text nodes, which are not elements: a paragraph may fit
  // while its words run past it. Text an element clips on purpose (an
  // ellipsis, a clamp) is not checked.
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!node.data.trim() || !parent || wide(parent) || scrolled(parent) || !parent.checkVisibility({ visibilityProperty: true })) continue;
    if (["hidden", "clip"].includes(getComputedStyle(parent).overflowX)) continue;
    range.selectNodeContents(node);
    const r = range.getBoundingClientRect();
    if (r.right <= vw + 1) continue;
    const text = node.data.trim();
    if (out.length < 12) out.push(`text "${text.length > 24 ? `${text.slice(0, 24)}…` : text}" of ${name(parent)} ends at x=${Math.round(r.right)}`);
    else more += 1;
  }
  if (more) out.push(`… and ${more} more`);
  return out;
}

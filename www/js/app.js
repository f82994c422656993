// The console's entry point: connection (token in sessionStorage only),
// namespace/profile scope, hash routing between views, and the shared
// context every view gets (client, status line, errors, confirmation).

import { Client, ApiError, describeError } from "./api.js";
import { $, $$, fill, h, icon } from "./dom.js";
import { isName, isProfileName } from "./format.js";
import { initMemories } from "./memories.js";
import { initDetail } from "./detail.js";
import { initRecall } from "./recall.js";
import { initAdd } from "./add.js";
import { initTransfer } from "./transfer.js";
import { initConsolidate } from "./consolidate.js";
import { contract, fillOptions, load as loadContract } from "./contract.js";

const TOKEN_KEY = "agent-memory.console.token";
const SCOPE_KEY = "agent-memory.console.scope";
const RECENT_KEY = "agent-memory.console.recent";
const VIEWS = ["memories", "recall", "add", "transfer"];

const store = {
  token: () => sessionStorage.getItem(TOKEN_KEY) || "",
  setToken: (t) => (t ? sessionStorage.setItem(TOKEN_KEY, t) : sessionStorage.removeItem(TOKEN_KEY)),
  scope() {
    try {
      const s = JSON.parse(localStorage.getItem(SCOPE_KEY) || "{}");
      return { account: s.account || "local", namespace: s.namespace || "default", profile: s.profile || "default" };
    } catch {
      return { account: "local", namespace: "default", profile: "default" };
    }
  },
  setScope(s) {
    localStorage.setItem(SCOPE_KEY, JSON.stringify(s));
    const recent = store.recent();
    recent.namespaces = [s.namespace, ...recent.namespaces.filter((n) => n !== s.namespace)].slice(0, 8);
    recent.profiles = [s.profile, ...recent.profiles.filter((n) => n !== s.profile)].slice(0, 8);
    localStorage.setItem(RECENT_KEY, JSON.stringify(recent));
  },
  recent() {
    try {
      const r = JSON.parse(localStorage.getItem(RECENT_KEY) || "{}");
      return { namespaces: r.namespaces || [], profiles: r.profiles || [] };
    } catch {
      return { namespaces: [], profiles: [] };
    }
  },
};

// ---- status line and errors -------------------------------------------

let toastTimer = 0;
/** Announces `msg` in the polite live region (and shows it briefly). */
function toast(msg, kind = "ok") {
  const el = $("#status");
  el.className = `toast toast-${kind} toast-show`;
  el.textContent = msg;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.classList.remove("toast-show"), 5000);
}

/** Shows an error in `target` (a notice element) or the page banner. */
function showError(err, target) {
  if (err instanceof ApiError && err.isAuth) return authFailed(err);
  const el = target || ($("#detail-dialog").open ? $("#detail-error") : $("#banner"));
  const details = err instanceof ApiError ? err.errors.filter((e) => e.code) : [];
  fill(
    el,
    h("span", { class: "notice-icon" }, icon("alert")),
    h(
      "div",
      {},
      h("strong", { class: "notice-text" }, describeError(err)),
      details.length ? h("span", { class: "notice-codes" }, details.map((e) => `code ${e.code}`).join(", ")) : null,
    ),
  );
  el.hidden = false;
  if (el.id === "banner") el.focus();
}

function clearError(target) {
  const el = target || $("#banner");
  el.hidden = true;
  el.replaceChildren();
}

// ---- confirmation dialog ----------------------------------------------

/** Resolves true when the person confirms. */
function confirmAction({ title, body, ok = "Confirm" }) {
  const dlg = $("#confirm-dialog");
  $("#confirm-title").textContent = title;
  $("#confirm-body").textContent = body;
  $("#confirm-ok").textContent = ok;
  dlg.returnValue = "cancel";
  return new Promise((resolve) => {
    dlg.addEventListener("close", () => resolve(dlg.returnValue === "ok"), { once: true });
    dlg.showModal();
  });
}

// ---- connection --------------------------------------------------------

const ctx = {
  client: null,
  toast,
  showError,
  clearError,
  confirm: confirmAction,
  openDetail: () => {},
  /** Called after anything that changes the profile's contents. */
  changed: () => {},
};

let views = {};

function scopeText() {
  const c = ctx.client;
  return c ? `${c.namespace} / ${c.profile}` : "";
}

/** How many namespaces, and profiles of the namespace, the scope fields
 *  suggest. */
const NAMES_SUGGESTED = 100;

/** The names last used as suggestions for the scope fields; then also, once
 *  `client` has them, the namespaces its token may touch and the
 *  namespace's profiles (the first page of each, by name). */
function fillRecent(client) {
  const r = store.recent();
  const suggest = (list, recent, names) => fill($(list), [...recent, ...names.filter((n) => !recent.includes(n))].map((n) => h("option", { value: n })));
  suggest("#recent-namespaces", r.namespaces, []);
  suggest("#recent-profiles", r.profiles, []);
  if (!client) return;
  const listed = (list, recent, call) =>
    call.then(
      ({ result }) => {
        // Another scope may have opened meanwhile.
        if (ctx.client === client) suggest(list, recent, result.map((n) => n.name));
      },
      // Only suggestions: the recent names stay, and the fields take any name.
      () => {},
    );
  listed("#recent-namespaces", r.namespaces, client.namespaces({ limit: NAMES_SUGGESTED }));
  listed("#recent-profiles", r.profiles, client.profiles({ limit: NAMES_SUGGESTED }));
}

/** Back to the connect panel, saying why. */
function authFailed(err) {
  const wasConnected = !!ctx.client;
  ctx.client = null;
  store.setToken("");
  showConnect();
  const msg = err instanceof ApiError ? describeError(err) : String(err);
  const box = $("#connect-error");
  fill(
    box,
    h("span", { class: "notice-icon" }, icon("alert")),
    h(
      "div",
      {},
      h("strong", { class: "notice-text", "data-testid": "auth-error" }, msg),
      wasConnected ? h("span", { class: "notice-codes" }, "You were disconnected.") : null,
    ),
  );
  box.hidden = false;
  $("#token").focus();
  toast(msg, "error");
}

function showConnect() {
  const s = store.scope();
  $("#connect-namespace").value ||= s.namespace;
  $("#connect-profile").value ||= s.profile;
  $("#connect-account").value ||= s.account;
  for (const v of VIEWS) $(`#view-${v}`).hidden = true;
  $("#view-connect").hidden = false;
  $("#sidenav").hidden = true;
  $("#scope-form").hidden = true;
  $("#session").hidden = true;
  clearError();
  document.body.classList.add("is-disconnected");
}

/** Checks the token by reading the profile's stats, then opens the console. */
async function connect({ token, account, namespace, profile }) {
  const client = new Client({ token, account, namespace, profile });
  await client.stats(); // throws ApiError (401/403/...) when the token or names are wrong
  ctx.client = client;
  store.setToken(token);
  store.setScope({ account, namespace, profile });
  fillRecent(client);
  $("#connect-error").hidden = true;
  $("#view-connect").hidden = true;
  $("#sidenav").hidden = false;
  $("#scope-form").hidden = false;
  $("#session").hidden = false;
  $("#scope-namespace").value = namespace;
  $("#scope-profile").value = profile;
  document.body.classList.remove("is-disconnected");
  document.title = `${namespace}/${profile} · Agent Memory`;
  for (const v of Object.values(views)) v.reset?.();
  route();
}

function disconnect() {
  ctx.client = null;
  store.setToken("");
  $("#token").value = "";
  $("#connect-error").hidden = true;
  document.title = "Agent Memory · Console";
  showConnect();
  toast("Disconnected. The token was removed from this tab.");
  $("#token").focus();
}

function readConnectForm() {
  const token = $("#token").value.trim();
  const namespace = $("#connect-namespace").value.trim();
  const profile = $("#connect-profile").value.trim();
  const account = $("#connect-account").value.trim() || "local";
  const problems = [];
  if (!token) problems.push("Enter an API token.");
  // A path segment: "." and ".." would be read as directory steps.
  if (account === "." || account === ".." || !/^[A-Za-z0-9._-]{1,64}$/.test(account)) problems.push("The account must be 1–64 characters of letters, digits, '.', '_' or '-', not '.' or '..'.");
  if (!isName(namespace)) problems.push("The namespace must be 1–32 characters of letters, digits, '.', '_' or '-'.");
  if (!isProfileName(profile)) problems.push("The profile must be 1–100 characters of letters, digits, '.', '_', '-', '@' or '+'.");
  return { values: { token, account, namespace, profile }, problems };
}

// ---- routing -----------------------------------------------------------

function currentView() {
  const v = location.hash.replace(/^#/, "");
  return VIEWS.includes(v) ? v : "memories";
}

function route() {
  if (!ctx.client) return;
  const view = currentView();
  for (const v of VIEWS) $(`#view-${v}`).hidden = v !== view;
  for (const a of $$("#sidenav a[data-view]")) {
    if (a.dataset.view === view) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  clearError();
  views[view]?.show?.();
}

// ---- start -------------------------------------------------------------

/** The enums and limits of the forms, from the service's contract. */
function applyContract() {
  fillOptions($("#f-type"), contract.types);
  fillOptions($("#f-status"), contract.statuses);
  fillOptions($("#r-length"), contract.responseLengths, "medium");
  $("#r-limit").max = String(contract.recallLimitMax);
  $("#r-query").maxLength = contract.queryMaxBytes;
  $("#m-content").minLength = contract.rememberMinChars;
  $("#m-content").maxLength = contract.contentMaxBytes;
}

async function start() {
  await loadContract();
  applyContract();
  fillRecent();
  views = {
    memories: initMemories(ctx),
    recall: initRecall(ctx),
    add: initAdd(ctx),
    transfer: initTransfer(ctx),
  };
  const detail = initDetail(ctx);
  ctx.openDetail = detail.open;
  ctx.changed = () => views.memories.changed();
  const consolidate = initConsolidate(ctx);
  views.consolidate = consolidate; // not a route: reset on connect
  $("#consolidate-open").addEventListener("click", () => consolidate.open());
  ctx.memoryAction = (kind, m) => (kind === "forget" ? views.memories.forget(m) : views.memories.remove(m));
  ctx.scopeText = scopeText;

  $("#connect-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const form = ev.currentTarget;
    const { values, problems } = readConnectForm();
    const box = $("#connect-error");
    if (problems.length) {
      fill(box, h("span", { class: "notice-icon" }, icon("alert")), h("div", {}, problems.map((p) => h("strong", { class: "notice-text" }, p))));
      box.hidden = false;
      return;
    }
    box.hidden = true;
    const submit = $("[data-testid=connect-submit]", form);
    submit.disabled = true;
    form.setAttribute("aria-busy", "true");
    try {
      await connect(values);
      toast(`Connected to ${values.namespace} / ${values.profile}.`);
    } catch (err) {
      if (err instanceof ApiError && err.isAuth) authFailed(err);
      else showError(err, box);
    } finally {
      submit.disabled = false;
      form.removeAttribute("aria-busy");
    }
  });

  $("#scope-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const namespace = $("#scope-namespace").value.trim();
    const profile = $("#scope-profile").value.trim();
    if (!isName(namespace) || !isProfileName(profile)) {
      showError(new Error("The namespace must be 1–32 characters of letters, digits, '.', '_' or '-'; the profile 1–100, '@' and '+' too."));
      return;
    }
    const { token, account } = ctx.client;
    const was = { namespace: ctx.client.namespace, profile: ctx.client.profile };
    try {
      await connect({ token, account, namespace, profile });
      toast(`Opened ${namespace} / ${profile}.`);
    } catch (err) {
      // Still on the profile before: the fields say so again.
      $("#scope-namespace").value = was.namespace;
      $("#scope-profile").value = was.profile;
      // A 403 here says this token may not touch that namespace, not that
      // the token is wrong: it stays, connected to the one it may.
      if (err instanceof ApiError && err.status === 403) showError(new Error(describeError(err)));
      else showError(err);
    }
  });

  $("#disconnect").addEventListener("click", disconnect);
  window.addEventListener("hashchange", route);

  const token = store.token();
  if (token) {
    const s = store.scope();
    connect({ token, ...s }).catch((err) => {
      if (err instanceof ApiError && err.isAuth) authFailed(err);
      else {
        showConnect();
        showError(err, $("#connect-error"));
      }
    });
    return;
  }
  showConnect();
  $("#token").focus();
}

// The console cannot work without the service's contract: say so.
start().catch((err) => showError(err));

// The Memories view: profile stats and the memory table with filters
// (a metadata filter as JSON among them), cursor paging, each memory's
// metadata as chips, and forget/delete with confirmation.

import { $, fill, h, icon } from "./dom.js";
import { formatBytes, formatDate, formatNumber, metaText } from "./format.js";
import { contract } from "./contract.js";
import { ApiError } from "./api.js";
import { metaChips } from "./metadata.js";

export function initMemories(ctx) {
  const rows = $("#memory-rows");
  const filters = $("#filters");
  const summary = $("#table-summary");
  const prev = $("#page-prev");
  const next = $("#page-next");

  // Paging: `cursors[i]` is the cursor that loads page i (page 0: none).
  let cursors = [undefined];
  let page = 0;
  let nextCursor = null;
  let loaded = [];
  let stale = true;
  let loading = 0;

  function serverFilter() {
    return {
      type: $("#f-type").value || undefined,
      // The service lists active memories unless asked: "Any status" asks
      // for every state.
      status: $("#f-status").value || "all",
      sessionId: $("#f-session").value.trim() || undefined,
      filter: $("#f-filter").value.trim() || undefined,
      limit: Number($("#f-limit").value) || 50,
    };
  }

  /** Shows why the service refused the filter (null: clears it). */
  function filterProblem(err) {
    const box = $("#filter-error");
    const input = $("#f-filter");
    if (!err) {
      ctx.clearError(box);
      input.removeAttribute("aria-invalid");
      return;
    }
    ctx.showError(err, box);
    const text = box.querySelector(".notice-text");
    if (text) text.textContent = `The filter was refused (${err.status}): ${err.message}`;
    input.setAttribute("aria-invalid", "true");
  }

  // ---- stats ----

  function statCard(label, value, sub, testid, extra = "") {
    return h(
      "div",
      { class: `stat ${extra}`, "data-testid": testid },
      h("span", { class: "stat-label" }, label),
      h("span", { class: "stat-value" }, value),
      sub ? h("span", { class: "stat-sub" }, sub) : null,
    );
  }

  /** A thin stacked bar with a legend: counts by type or status. */
  function breakdown(title, counts, keys, prefix, testid) {
    const total = keys.reduce((n, k) => n + (counts?.[k] || 0), 0);
    const extra = Object.keys(counts || {}).filter((k) => !keys.includes(k));
    const all = [...keys, ...extra];
    return h(
      "div",
      { class: "stat stat-wide", "data-testid": testid },
      h("span", { class: "stat-label" }, title),
      h(
        "div",
        { class: "stackbar", role: "img", "aria-label": `${title}: ${all.map((k) => `${counts?.[k] || 0} ${k}`).join(", ")}` },
        all.map((k) =>
          counts?.[k] ? h("span", { class: `seg ${prefix}-${k}`, style: { "flex-grow": String(counts[k]) }, title: `${k}: ${counts[k]}` }) : null,
        ),
        total ? null : h("span", { class: "seg seg-empty" }),
      ),
      h(
        "ul",
        { class: "legend" },
        all.map((k) =>
          h("li", {}, h("span", { class: `swatch ${prefix}-${k}`, "aria-hidden": "true" }), `${k} `, h("b", {}, formatNumber(counts?.[k] || 0))),
        ),
      ),
    );
  }

  async function loadStats() {
    const el = $("#stats");
    el.setAttribute("aria-busy", "true");
    const client = ctx.client;
    try {
      const { result: s } = await client.stats();
      // Another profile may have opened meanwhile: its own load shows it.
      if (ctx.client !== client) return;
      fill(
        el,
        statCard("Memories", formatNumber(s.memories), `${formatNumber(s.byStatus?.active || 0)} active`, "stat-memories"),
        statCard("Messages", formatNumber(s.messages), `${formatNumber(s.sessions)} ${s.sessions === 1 ? "session" : "sessions"}`, "stat-messages"),
        statCard("Vectors", formatNumber(s.vectors), formatBytes(s.storageBytes) + " stored", "stat-vectors"),
        statCard(
          "Jobs",
          formatNumber(s.pendingJobs),
          s.failedJobs ? `pending · ${formatNumber(s.failedJobs)} failed` : "pending · 0 failed",
          "stat-jobs",
          s.failedJobs ? "stat-bad" : "",
        ),
        breakdown("By type", s.byType, contract.types, "type", "stat-by-type"),
        breakdown("By status", s.byStatus, contract.statuses, "status", "stat-by-status"),
      );
    } catch (err) {
      if (ctx.client !== client) return;
      fill(el, h("p", { class: "muted" }, "Statistics are unavailable."));
      ctx.showError(err);
    } finally {
      el.removeAttribute("aria-busy");
    }
  }

  // ---- table ----

  function badge(kind, value) {
    return h("span", { class: `badge ${kind}-${value}` }, value);
  }

  function matches(m, text) {
    if (!text) return true;
    // A list entry has no content (open the memory for it), and a memory
    // remembered without a session has sessionId null.
    const hay = [m.summary, m.key, m.sessionId, m.id, metaText(m.metadata)].filter((x) => typeof x === "string").join("\n").toLowerCase();
    return text
      .toLowerCase()
      .split(/\s+/)
      .filter(Boolean)
      .every((w) => hay.includes(w));
  }

  function render() {
    const text = $("#f-text").value.trim();
    const shown = loaded.filter((m) => matches(m, text));
    if (!shown.length) {
      const why = loaded.length ? "No memory on this page matches the search." : "No memories match these filters yet. Add some from “Add memories”.";
      fill(rows, h("tr", { class: "empty-row" }, h("td", { colspan: "7" }, why)));
    } else {
      fill(rows, shown.map(row));
    }
    const parts = [`Page ${page + 1}`, `${loaded.length} loaded`];
    if (text) parts.push(`${shown.length} match “${text}”`);
    if (nextCursor) parts.push("more on the next page");
    summary.textContent = parts.join(" · ");
    prev.disabled = page === 0;
    next.disabled = !nextCursor;
  }

  function row(m) {
    const label = m.summary.length > 60 ? `${m.summary.slice(0, 57)}…` : m.summary;
    const inactive = m.status !== "active";
    return h(
      "tr",
      { "data-testid": "memory-row", "data-id": m.id, "data-status": m.status, class: inactive ? "row-inactive" : "" },
      h("td", { class: "col-type" }, badge("type", m.type)),
      h(
        "td",
        { class: "col-summary" },
        h(
          "button",
          { type: "button", class: "linkish", "data-testid": "memory-open", onclick: () => ctx.openDetail(m.id), title: "Show details" },
          m.summary,
        ),
        m.content && m.content !== m.summary ? h("span", { class: "sub" }, m.content) : null,
        metaChips(m.metadata, { max: 6, short: true, testid: "memory-meta" }),
      ),
      h("td", { class: "col-key" }, m.key ? h("code", {}, m.key) : h("span", { class: "muted" }, "—")),
      h("td", { class: "col-session" }, m.sessionId ? h("span", { class: "trunc", title: m.sessionId }, m.sessionId) : h("span", { class: "muted" }, "—")),
      h("td", { class: "col-status" }, badge("status", m.status)),
      h("td", { class: "col-date" }, h("time", { datetime: m.createdAt, title: formatDate(m.createdAt) }, formatDate(m.createdAt).replace(/ UTC$/, ""))),
      h(
        "td",
        { class: "col-actions" },
        h(
          "div",
          { class: "row-actions" },
          h(
            "button",
            {
              type: "button",
              class: "btn btn-small",
              "data-testid": "memory-forget",
              disabled: m.status === "forgotten",
              "aria-label": `Forget: ${label}`,
              title: "Forget: leaves recall and the vector index, stays listed",
              onclick: () => forget(m),
            },
            icon("forget"),
          ),
          h(
            "button",
            {
              type: "button",
              class: "btn btn-small btn-danger-quiet",
              "data-testid": "memory-delete",
              "aria-label": `Delete: ${label}`,
              title: "Delete for good, with its source messages",
              onclick: () => remove(m),
            },
            icon("trash"),
          ),
        ),
      ),
    );
  }

  async function loadPage() {
    const mine = ++loading;
    rows.closest("table").setAttribute("aria-busy", "true");
    const asked = serverFilter();
    try {
      const { result, resultInfo } = await ctx.client.list({ ...asked, cursor: cursors[page] });
      if (mine !== loading) return;
      filterProblem(null);
      loaded = result.memories || [];
      nextCursor = result.cursor || resultInfo?.cursor || null;
      cursors[page + 1] = nextCursor || undefined;
      stale = false;
      render();
    } catch (err) {
      if (mine !== loading) return;
      loaded = [];
      nextCursor = null;
      summary.textContent = "";
      prev.disabled = page === 0;
      next.disabled = true;
      // A 400 with a filter set: the filter is what the service refused
      // (it names the problem); the other filters are menus it accepts.
      if (asked.filter && err instanceof ApiError && err.status === 400) {
        fill(rows, h("tr", { class: "empty-row" }, h("td", { colspan: "7" }, "No memories: the filter was refused (see above).")));
        filterProblem(err);
        return;
      }
      filterProblem(null);
      fill(rows, h("tr", { class: "empty-row" }, h("td", { colspan: "7" }, "The memories could not be loaded.")));
      ctx.showError(err);
    } finally {
      if (mine === loading) rows.closest("table").removeAttribute("aria-busy");
    }
  }

  function reload({ keepPage = false } = {}) {
    if (!keepPage) {
      cursors = [undefined];
      page = 0;
    }
    loadStats();
    return loadPage();
  }

  async function forget(m) {
    const ok = await ctx.confirm({
      title: "Forget this memory?",
      body: `“${m.summary}” will leave recall and the vector index. It stays listed as forgotten.`,
      ok: "Forget",
    });
    if (!ok) return false;
    try {
      await ctx.client.forget(m.id);
      ctx.toast(`Forgot “${m.summary}”.`);
      reload({ keepPage: true });
      return true;
    } catch (err) {
      ctx.showError(err);
      return false;
    }
  }

  async function remove(m) {
    const ok = await ctx.confirm({
      title: "Delete this memory for good?",
      body: `“${m.summary}” will be deleted with its source messages and every memory citing them. This cannot be undone.`,
      ok: "Delete",
    });
    if (!ok) return false;
    try {
      const { result } = await ctx.client.remove(m.id);
      const n = result?.deletedMemories?.length || 1;
      const k = result?.deletedMessages?.length || 0;
      ctx.toast(`Deleted ${n} ${n === 1 ? "memory" : "memories"} and ${k} source ${k === 1 ? "message" : "messages"}.`);
      reload({ keepPage: true });
      return true;
    } catch (err) {
      ctx.showError(err);
      return false;
    }
  }

  // ---- events ----

  filters.addEventListener("submit", (ev) => {
    ev.preventDefault();
    reload();
  });
  filters.addEventListener("reset", () => setTimeout(() => reload(), 0));
  for (const id of ["#f-type", "#f-status", "#f-limit"]) $(id).addEventListener("change", () => reload());
  $("#f-text").addEventListener("input", render);
  $("#refresh").addEventListener("click", () => reload({ keepPage: true }));
  prev.addEventListener("click", () => {
    if (page > 0) {
      page -= 1;
      loadPage();
    }
  });
  next.addEventListener("click", () => {
    if (nextCursor) {
      page += 1;
      loadPage();
    }
  });

  return {
    show() {
      $("#memories-scope").textContent = `Profile ${ctx.scopeText()}`;
      if (stale) reload({ keepPage: true });
    },
    invalidate() {
      stale = true;
    },
    /** The profile changed: reload now if the table is on screen. */
    changed() {
      if ($("#view-memories").hidden) stale = true;
      else reload({ keepPage: true });
    },
    reset() {
      // A load of the profile before, still on its way, is not shown.
      loading++;
      $("#f-text").value = "";
      $("#f-filter").value = "";
      filterProblem(null);
      $("#f-type").value = "";
      $("#f-status").value = "";
      $("#f-session").value = "";
      cursors = [undefined];
      page = 0;
      loaded = [];
      stale = true;
    },
    reload,
    forget,
    remove,
  };
}

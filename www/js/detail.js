// A memory's detail in a side drawer: its fields, its source messages,
// and its version chain (supersedes / superseded by) as a timeline.

import { $, fill, h, icon } from "./dom.js";
import { formatDate, shortId } from "./format.js";

export function initDetail(ctx) {
  const dlg = $("#detail-dialog");
  const body = $("#detail-body");
  let opener = null;
  let current = null;

  $("#detail-close").addEventListener("click", () => dlg.close());
  // A click on the backdrop (outside the drawer) closes it.
  dlg.addEventListener("click", (ev) => {
    if (ev.target === dlg) dlg.close();
  });
  dlg.addEventListener("close", () => {
    current = null;
    if (opener && document.contains(opener)) opener.focus();
  });

  function meta(label, value, testid) {
    if (value === undefined || value === null || value === "") return null;
    return [h("dt", {}, label), h("dd", { "data-testid": testid }, value)];
  }

  function idLink(id, label) {
    return h("button", { type: "button", class: "linkish mono", onclick: () => load(id), title: `Open ${label}` }, id);
  }

  function timeline(m) {
    const versions = m.versions?.length ? m.versions : [m];
    if (versions.length === 1) {
      return h("p", { class: "muted", "data-testid": "detail-versions-single" }, "This is the only version of its topic.");
    }
    return h(
      "ol",
      { class: "timeline", "data-testid": "detail-versions", "aria-label": "Version chain, oldest first" },
      versions.map((v, i) => {
        const here = v.id === m.id;
        return h(
          "li",
          { class: `tl-item tl-${v.status}${here ? " tl-current" : ""}`, "data-testid": "detail-version", "data-id": v.id, "aria-current": here ? "true" : null },
          h("span", { class: "tl-node", "aria-hidden": "true" }),
          h(
            "div",
            { class: "tl-card" },
            h(
              "div",
              { class: "tl-head" },
              h("span", { class: "tl-version" }, `v${i + 1}`),
              h("span", { class: `badge status-${v.status}` }, v.status),
              here ? h("span", { class: "badge badge-here" }, "this memory") : null,
              h("time", { class: "tl-date", datetime: v.createdAt }, formatDate(v.createdAt)),
            ),
            here ? h("p", { class: "tl-summary" }, v.summary) : h("button", { type: "button", class: "linkish tl-summary", onclick: () => load(v.id) }, v.summary),
            v.supersedes ? h("p", { class: "tl-link" }, "supersedes ", h("span", { class: "mono", title: v.supersedes }, shortId(v.supersedes))) : null,
            v.supersededBy ? h("p", { class: "tl-link" }, "superseded by ", h("span", { class: "mono", title: v.supersededBy }, shortId(v.supersededBy))) : null,
          ),
        );
      }),
    );
  }

  function sources(m) {
    const msgs = m.sourceMessages || [];
    if (!msgs.length) {
      return h("p", { class: "muted" }, m.sourceMessageIds?.length ? "The source messages are no longer stored." : "Stored directly (remember), not extracted from messages.");
    }
    return h(
      "ol",
      { class: "chat", "data-testid": "detail-sources" },
      msgs.map((s) =>
        h(
          "li",
          { class: `bubble role-${/^(user|assistant|system|tool)$/.test(s.role) ? s.role : "other"}`, "data-testid": "detail-source" },
          h(
            "div",
            { class: "bubble-head" },
            h("span", { class: "bubble-role" }, s.role),
            h("span", { class: "muted" }, `#${s.position}`),
            s.timestamp ? h("time", { datetime: s.timestamp }, formatDate(s.timestamp)) : null,
          ),
          h("p", { class: "bubble-text" }, s.content),
        ),
      ),
    );
  }

  function render(m) {
    fill(
      body,
      h(
        "div",
        { class: "detail-top" },
        h("div", { class: "badges" }, h("span", { class: `badge type-${m.type}` }, m.type), h("span", { class: `badge status-${m.status}`, "data-testid": "detail-status" }, m.status)),
        h("p", { class: "detail-summary", "data-testid": "detail-summary" }, m.summary),
        m.content !== m.summary ? h("p", { class: "detail-content" }, m.content) : null,
      ),
      h(
        "dl",
        { class: "meta" },
        meta("Id", h("span", { class: "mono" }, m.id), "detail-id"),
        meta("Key", m.key ? h("code", {}, m.key) : null, "detail-key"),
        meta("Session", m.sessionId, "detail-session"),
        meta("Event date", m.eventDate ? formatDate(m.eventDate) : null),
        meta("Created", formatDate(m.createdAt)),
        meta("Updated", formatDate(m.updatedAt)),
        meta("Expires", m.expiresAt ? formatDate(m.expiresAt) : null),
        meta("Supersedes", m.supersedes ? idLink(m.supersedes, "the older version") : null, "detail-supersedes"),
        meta("Superseded by", m.supersededBy ? idLink(m.supersededBy, "the newer version") : null, "detail-superseded-by"),
      ),
      m.searchQueries?.length
        ? h("section", { class: "detail-sec" }, h("h3", {}, "Answers questions like"), h("ul", { class: "chips" }, m.searchQueries.map((q) => h("li", { class: "chip" }, q))))
        : null,
      h("section", { class: "detail-sec", "aria-labelledby": "d-versions" }, h("h3", { id: "d-versions" }, "Version chain"), timeline(m)),
      h("section", { class: "detail-sec", "aria-labelledby": "d-sources" }, h("h3", { id: "d-sources" }, `Source messages (${(m.sourceMessages || []).length})`), sources(m)),
      h(
        "div",
        { class: "actions detail-actions" },
        h("button", { type: "button", class: "btn", "data-testid": "detail-forget", disabled: m.status === "forgotten", onclick: () => act("forget", m) }, icon("forget"), "Forget"),
        h("button", { type: "button", class: "btn btn-danger-quiet", "data-testid": "detail-delete", onclick: () => act("remove", m) }, icon("trash"), "Delete"),
      ),
    );
  }

  async function act(kind, m) {
    const done = await ctx.memoryAction(kind, m);
    if (!done) return;
    if (kind === "remove") dlg.close();
    else load(m.id);
  }

  async function load(id) {
    current = id;
    ctx.clearError($("#detail-error"));
    $("#detail-title").textContent = "Memory";
    fill(body, h("p", { class: "muted", "aria-busy": "true" }, "Loading…"));
    try {
      const { result } = await ctx.client.get(id);
      if (current !== id) return;
      render(result);
      body.scrollTop = 0;
    } catch (err) {
      if (current !== id) return;
      const box = h("div", { class: "notice notice-error", role: "alert" });
      fill(body, box);
      ctx.showError(err, box);
    }
  }

  return {
    open(id) {
      opener = document.activeElement;
      if (!dlg.open) dlg.showModal();
      load(id);
      $("#detail-close").focus();
    },
  };
}

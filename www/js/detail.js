// A memory's detail in a side drawer: its fields, its metadata (editable),
// its source messages, its version chain (supersedes / superseded by, with
// when each version held) as a timeline, and the consolidations it took
// part in, each undoable.

import { $, fill, h, icon } from "./dom.js";
import { formatDate, shortId } from "./format.js";
import { metadataSection } from "./metadata.js";
import { consolidationList, undoRecord } from "./consolidate.js";

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
            validity(v),
            v.supersedes ? h("p", { class: "tl-link" }, "supersedes ", h("span", { class: "mono", title: v.supersedes }, shortId(v.supersedes))) : null,
            v.supersededBy ? h("p", { class: "tl-link" }, "superseded by ", h("span", { class: "mono", title: v.supersededBy }, shortId(v.supersededBy))) : null,
          ),
        );
      }),
    );
  }

  /** When a version held: validFrom → validTo (absent while it holds). */
  function validity(v) {
    if (!v.validFrom && !v.validTo) return null;
    return h(
      "p",
      { class: "tl-valid", "data-testid": "detail-validity", "data-valid-from": v.validFrom || "", "data-valid-to": v.validTo || "" },
      "valid ",
      v.validFrom ? h("time", { datetime: v.validFrom, "data-testid": "valid-from" }, formatDate(v.validFrom)) : "since ?",
      " → ",
      v.validTo ? h("time", { datetime: v.validTo, "data-testid": "valid-to" }, formatDate(v.validTo)) : h("span", { "data-testid": "valid-to-open" }, "still holds"),
    );
  }

  function history(m) {
    const records = m.consolidations || [];
    if (!records.length) return null;
    return h(
      "section",
      { class: "detail-sec", "aria-labelledby": "d-consolidations", "data-testid": "detail-consolidations" },
      h("h3", { id: "d-consolidations" }, `Consolidation history (${records.length})`),
      consolidationList(records, {
        current: m.id,
        open: load,
        undo: async (rec, button) => {
          button.disabled = true;
          const done = await undoRecord(ctx, rec);
          if (done) load(m.id, { again: true });
          else button.disabled = false;
        },
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
        meta("Valid from", m.validFrom ? formatDate(m.validFrom) : null, "detail-valid-from"),
        meta("Valid to", m.validTo ? formatDate(m.validTo) : null, "detail-valid-to"),
        meta("Supersedes", m.supersedes ? idLink(m.supersedes, "the older version") : null, "detail-supersedes"),
        meta("Superseded by", m.supersededBy ? idLink(m.supersededBy, "the newer version") : null, "detail-superseded-by"),
      ),
      m.searchQueries?.length
        ? h("section", { class: "detail-sec" }, h("h3", {}, "Answers questions like"), h("ul", { class: "chips" }, m.searchQueries.map((q) => h("li", { class: "chip" }, q))))
        : null,
      metadataSection(ctx, m, () => {
        ctx.changed();
        load(m.id, { again: true });
      }),
      h("section", { class: "detail-sec", "aria-labelledby": "d-versions" }, h("h3", { id: "d-versions" }, "Version chain"), timeline(m)),
      history(m),
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
    else load(m.id, { again: true });
  }

  /** Shows memory `id`; `again` (the same memory after a change) keeps
   *  the drawer where it was scrolled to. */
  async function load(id, { again = false } = {}) {
    const top = again ? body.scrollTop : 0;
    current = id;
    ctx.clearError($("#detail-error"));
    $("#detail-title").textContent = "Memory";
    if (again) body.setAttribute("aria-busy", "true");
    else fill(body, h("p", { class: "muted", "aria-busy": "true" }, "Loading…"));
    try {
      const { result } = await ctx.client.get(id);
      if (current !== id) return;
      render(result);
      body.scrollTop = top;
    } catch (err) {
      if (current !== id) return;
      const box = h("div", { class: "notice notice-error", role: "alert" });
      fill(body, box);
      ctx.showError(err, box);
    } finally {
      if (current === id) body.removeAttribute("aria-busy");
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

// A memory's metadata: key/value chips (the table and the drawer) and the
// drawer's small editor (add, change, remove a pair; string, number or
// boolean values), which saves through PATCH …/memories/{id}.

import { $$, busy, fill, h, icon } from "./dom.js";
import { META_KINDS, metaEntries, metaKind, metadataFromRows } from "./format.js";

const SHOWN_VALUE = 48;

function clip(s, n) {
  return s.length > n ? `${s.slice(0, n - 1)}…` : s;
}

/** One chip: `key` `value`, the value styled by its kind. */
function chip(k, v, short) {
  const text = String(v);
  const kind = metaKind(v);
  return h(
    "li",
    { class: `chip chip-meta meta-${kind}`, "data-testid": "meta-chip", "data-key": k, "data-kind": kind, title: `${k} = ${text} (${kind})` },
    h("span", { class: "chip-key" }, k),
    h("span", { class: "chip-val", "data-testid": "meta-chip-value" }, short ? clip(text, SHOWN_VALUE) : text),
  );
}

/**
 * The metadata as chips; `max` of them at most, then "+N more" (the table
 * keeps rows short; the drawer shows all). null for no metadata.
 */
export function metaChips(metadata, { max = Infinity, short = false, testid = "meta-chips" } = {}) {
  const entries = metaEntries(metadata);
  if (!entries.length) return null;
  const shown = entries.slice(0, max);
  const more = entries.length - shown.length;
  return h(
    "ul",
    { class: "chips meta-chips", "data-testid": testid, "aria-label": "Metadata" },
    shown.map(([k, v]) => chip(k, v, short)),
    more > 0 ? h("li", { class: "chip chip-more", title: entries.slice(max).map(([k]) => k).join(", ") }, `+${more} more`) : null,
  );
}

/**
 * The drawer's metadata section for memory `m`: its chips and an Edit
 * button, which turns it into the editor. `onSaved(memory)` runs after a
 * save the service accepted.
 */
export function metadataSection(ctx, m, onSaved) {
  const sec = h("section", { class: "detail-sec", "aria-labelledby": "d-metadata", "data-testid": "detail-metadata" });

  function view() {
    const chips = metaChips(m.metadata, { testid: "detail-meta-chips" });
    fill(
      sec,
      h(
        "div",
        { class: "sec-head" },
        h("h3", { id: "d-metadata" }, `Metadata (${metaEntries(m.metadata).length})`),
        h("button", { type: "button", class: "btn btn-small", "data-testid": "meta-edit", onclick: edit }, "Edit"),
      ),
      chips || h("p", { class: "muted", "data-testid": "detail-meta-empty" }, "No metadata. Edit to attach key/value pairs (agentId, userId, or your own)."),
    );
  }

  function valueControl(kind, value) {
    if (kind === "boolean") {
      return h(
        "select",
        { class: "meta-value", "data-testid": "meta-value", "aria-label": "Value" },
        ["true", "false"].map((b) => h("option", { value: b, selected: String(value) === b }, b)),
      );
    }
    return h("input", {
      class: `meta-value${kind === "number" ? " mono" : ""}`,
      "data-testid": "meta-value",
      "aria-label": "Value",
      inputmode: kind === "number" ? "decimal" : null,
      value: value === undefined ? "" : String(value),
      autocomplete: "off",
      spellcheck: "false",
    });
  }

  function editRow(key = "", value = "") {
    const kind = metaKind(value);
    const row = h("li", { class: "meta-row", "data-testid": "meta-row" });
    const keyInput = h("input", { class: "meta-key mono", "data-testid": "meta-key", "aria-label": "Key", value: key, autocomplete: "off", spellcheck: "false", placeholder: "key" });
    const typeSelect = h(
      "select",
      { class: "meta-type", "data-testid": "meta-type", "aria-label": "Type" },
      META_KINDS.map((k) => h("option", { value: k, selected: k === kind }, k)),
    );
    let valueEl = valueControl(kind, value);
    typeSelect.addEventListener("change", () => {
      // Keep what was typed where it still reads as the new kind.
      const old = valueEl.value;
      const next = valueControl(typeSelect.value, typeSelect.value === "boolean" ? (old === "false" ? "false" : "true") : old);
      valueEl.replaceWith(next);
      valueEl = next;
    });
    const remove = h(
      "button",
      { type: "button", class: "btn btn-small btn-danger-quiet", "data-testid": "meta-remove", "aria-label": "Remove this pair", title: "Remove this pair", onclick: () => row.remove() },
      icon("close"),
    );
    fill(row, keyInput, typeSelect, valueEl, remove);
    row.read = () => ({ key: keyInput.value, type: typeSelect.value, value: valueEl.value });
    return row;
  }

  function edit() {
    const rows = h("ol", { class: "meta-rows", "data-testid": "meta-rows" }, metaEntries(m.metadata).map(([k, v]) => editRow(k, v)));
    const err = h("div", { class: "notice notice-error", role: "alert", "data-testid": "meta-error", hidden: true });
    const form = h(
      "form",
      { class: "meta-editor stack", "data-testid": "meta-editor", novalidate: true, "aria-label": "Edit metadata" },
      h("div", { class: "meta-labels", "aria-hidden": "true" }, h("span", {}, "Key"), h("span", {}, "Type"), h("span", {}, "Value")),
      rows,
      h(
        "button",
        {
          type: "button",
          class: "btn btn-small btn-quiet meta-add",
          "data-testid": "meta-add",
          onclick: () => {
            const r = editRow();
            rows.append(r);
            r.querySelector("input").focus();
          },
        },
        icon("plus"),
        "Add a pair",
      ),
      h("p", { class: "hint" }, "Keys are letters, digits, _ and -. agentId and userId are strings. Saving replaces all of this memory's metadata."),
      err,
      h(
        "div",
        { class: "actions" },
        h("button", { type: "button", class: "btn", "data-testid": "meta-cancel", onclick: view }, "Cancel"),
        h("button", { type: "submit", class: "btn btn-primary", "data-testid": "meta-save" }, "Save metadata"),
      ),
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      ctx.clearError(err);
      let metadata;
      try {
        metadata = metadataFromRows($$(".meta-row", rows).map((r) => r.read()));
      } catch (e) {
        ctx.showError(e, err);
        err.scrollIntoView({ block: "nearest" });
        return;
      }
      await busy(form, async () => {
        try {
          const { result } = await ctx.client.updateMetadata(m.id, metadata);
          ctx.toast(`Saved the metadata of “${clip(m.summary, 80)}”.`);
          onSaved(result);
        } catch (e) {
          ctx.showError(e, err);
          if (!err.hidden) err.scrollIntoView({ block: "nearest" });
        }
      });
    });
    fill(sec, h("div", { class: "sec-head" }, h("h3", { id: "d-metadata" }, "Metadata")), form);
    (rows.querySelector("input") || form.querySelector("[data-testid=meta-add]")).focus();
  }

  view();
  return sec;
}

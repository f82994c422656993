// Consolidation: the profile's "Consolidate" dialog (a dry run previews the
// actions; a run makes them) and the list of consolidation records, which
// the dialog's report and a memory's detail (its history) both draw. Each
// record that was made and not undone has an Undo button.

import { $, busy, fill, h, icon } from "./dom.js";
import { formatDate, formatNumber } from "./format.js";

const ACTION_LABEL = {
  merge: "Merged",
  supersede: "Superseded",
  fold: "Folded",
  retire: "Retired",
};

const plural = (n, one, many) => `${formatNumber(n)} ${n === 1 ? one : many}`;

/**
 * Undoes record `rec`; returns the record as the service answers it (with
 * `undoneAt`), or null when it refused (the error shown in `errBox`, or
 * where ctx.showError puts it).
 */
export async function undoRecord(ctx, rec, errBox) {
  try {
    const { result } = await ctx.client.undoConsolidation(rec.id);
    const n = rec.members?.length || 0;
    ctx.toast(`Undid the ${rec.action} of ${plural(n, "memory", "memories")}: they are as they were before it.`);
    ctx.changed();
    return result || { ...rec, undoneAt: new Date().toISOString() };
  } catch (err) {
    ctx.showError(err, errBox);
    return null;
  }
}

/**
 * Consolidation records as a list. `current` is the memory whose detail
 * shows it (named, not linked); `open(id)` opens a memory; `undo(rec,
 * button)` undoes one (no Undo buttons without it, nor in a dry run).
 */
export function consolidationList(records, { current = null, open, undo, testid = "consolidation-list" } = {}) {
  const member = (id, role) => {
    const here = id === current;
    const label = h("span", { class: "mono" }, id);
    return h(
      "li",
      { class: `cons-member${here ? " cons-here" : ""}`, "data-testid": role === "target" ? "consolidation-target" : "consolidation-member", "data-id": id },
      here || !open
        ? h("span", { class: "cons-id" }, label, here ? h("span", { class: "badge badge-here" }, "this memory") : null)
        : h("button", { type: "button", class: "linkish cons-id", onclick: () => open(id), title: "Open this memory" }, label),
    );
  };
  return h(
    "ol",
    { class: "cons-list", "data-testid": testid },
    records.map((rec) => {
      const undone = !!rec.undoneAt;
      const canUndo = undo && rec.id > 0 && !undone;
      const others = (rec.members || []).filter((id) => id !== rec.target);
      return h(
        "li",
        {
          class: `cons-item act-${/^(merge|supersede|fold|retire)$/.test(rec.action) ? rec.action : "other"}${undone ? " cons-undone" : ""}`,
          "data-testid": "consolidation",
          "data-id": String(rec.id),
          "data-action": rec.action,
          "data-undone": undone ? "true" : "false",
        },
        h(
          "div",
          { class: "cons-head" },
          h("span", { class: "badge cons-action", "data-testid": "consolidation-action" }, ACTION_LABEL[rec.action] || rec.action),
          rec.at ? h("time", { class: "cons-date", datetime: rec.at }, formatDate(rec.at)) : null,
          undone
            ? h("span", { class: "badge cons-undone-badge", "data-testid": "consolidation-undone", title: `Undone ${formatDate(rec.undoneAt)}` }, `undone ${formatDate(rec.undoneAt)}`)
            : null,
          canUndo
            ? h(
                "button",
                {
                  type: "button",
                  class: "btn btn-small cons-undo",
                  "data-testid": "consolidation-undo",
                  title: "Put the memories back as they were before this change",
                  onclick: (ev) => undo(rec, ev.currentTarget),
                },
                icon("undo"),
                "Undo",
              )
            : null,
        ),
        h("p", { class: "cons-reason", "data-testid": "consolidation-reason" }, rec.reason),
        h(
          "div",
          { class: "cons-members" },
          h("span", { class: "cons-label" }, "Result"),
          h("ul", { class: "cons-ids" }, member(rec.target, "target")),
          others.length ? h("span", { class: "cons-label" }, rec.action === "fold" ? "Folded" : "From") : null,
          others.length ? h("ul", { class: "cons-ids" }, others.map((id) => member(id, "member"))) : null,
        ),
      );
    }),
  );
}

/** The profile's Consolidate dialog. */
export function initConsolidate(ctx) {
  const dlg = $("#consolidate-dialog");
  const out = $("#consolidate-report");
  const errBox = $("#consolidate-error");
  const controls = $("#consolidate-controls");
  let report = null;

  $("#consolidate-close").addEventListener("click", () => dlg.close());
  dlg.addEventListener("click", (ev) => {
    if (ev.target === dlg) dlg.close();
  });

  function render() {
    if (!report) {
      fill(out);
      return;
    }
    const r = report;
    const n = r.actions.length;
    const head = r.dryRun
      ? n
        ? `Dry run: ${plural(n, "change", "changes")} would be made; active memories ${formatNumber(r.activeBefore)} → ${formatNumber(r.activeAfter)}. Nothing was changed.`
        : `Dry run: nothing to consolidate among ${plural(r.examined, "active memory", "active memories")}.`
      : n
        ? `Consolidated: ${plural(n, "change", "changes")}; active memories ${formatNumber(r.activeBefore)} → ${formatNumber(r.activeAfter)}.`
        : `Nothing to consolidate among ${plural(r.examined, "active memory", "active memories")}.`;
    fill(
      out,
      h(
        "div",
        { class: "result-box", "data-testid": r.dryRun ? "consolidate-preview-report" : "consolidate-run-report", "data-dry-run": String(r.dryRun) },
        h("p", { class: "hint-strong", "data-testid": "consolidate-summary" }, head),
        r.done ? null : h("p", { class: "muted" }, "The rest of the profile is consolidated in the background; refresh later to see it."),
        n
          ? consolidationList(r.actions, {
              testid: "consolidate-actions",
              open: (id) => ctx.openDetail(id),
              undo: r.dryRun
                ? null
                : async (rec, button) => {
                    button.disabled = true;
                    const done = await undoRecord(ctx, rec, errBox);
                    if (!done) {
                      button.disabled = false;
                      return;
                    }
                    report = { ...report, actions: report.actions.map((a) => (a.id === rec.id ? { ...a, ...done } : a)) };
                    render();
                  },
            })
          : null,
      ),
    );
  }

  async function run(dryRun) {
    ctx.clearError(errBox);
    out.setAttribute("aria-busy", "true");
    await busy(controls, async () => {
      try {
        const { result } = await ctx.client.consolidate({ dryRun });
        report = { ...result, actions: result.actions || [] };
        render();
        if (!dryRun) {
          ctx.toast(report.actions.length ? `Consolidated: ${plural(report.actions.length, "change", "changes")}.` : "Nothing to consolidate.");
          ctx.changed();
        }
      } catch (err) {
        ctx.showError(err, errBox);
      } finally {
        out.removeAttribute("aria-busy");
      }
    });
  }

  $("#consolidate-preview").addEventListener("click", () => run(true));
  $("#consolidate-run").addEventListener("click", () => run(false));

  return {
    open() {
      report = null;
      render();
      ctx.clearError(errBox);
      $("#consolidate-scope").textContent = ctx.scopeText();
      dlg.showModal();
      $("#consolidate-preview").focus();
    },
    reset() {
      report = null;
      if (dlg.open) dlg.close();
    },
  };
}

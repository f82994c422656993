// Import and export: the profile as an NDJSON file.

import { $, busy } from "./dom.js";
import { filenameFrom, formatBytes } from "./format.js";

export function initTransfer(ctx) {
  const exportBtn = $("#export-btn");
  const importForm = $("#import-form");

  function fallbackName() {
    return `${ctx.client.namespace}-${ctx.client.profile}.ndjson`;
  }

  exportBtn.addEventListener("click", async () => {
    const errBox = $("#export-error");
    const out = $("#export-result");
    ctx.clearError(errBox);
    exportBtn.disabled = true;
    exportBtn.setAttribute("aria-busy", "true");
    try {
      const res = await ctx.client.exportFile();
      const blob = await res.blob();
      const name = filenameFrom(res.headers.get("content-disposition"), fallbackName());
      const text = await blob.text();
      const lines = text.split("\n").filter((l) => l.trim()).length;
      const url = URL.createObjectURL(new Blob([blob], { type: "application/x-ndjson" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = name;
      a.hidden = true;
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
      out.textContent = `Saved ${name}: ${lines} lines, ${formatBytes(blob.size)}.`;
      ctx.toast(`Exported ${name}.`);
    } catch (err) {
      ctx.showError(err, errBox);
    } finally {
      exportBtn.disabled = false;
      exportBtn.removeAttribute("aria-busy");
    }
  });

  importForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const errBox = $("#import-error");
    const out = $("#import-result");
    ctx.clearError(errBox);
    const file = $("#import-file").files?.[0];
    if (!file) {
      ctx.showError(new Error("Choose an export file to import."), errBox);
      $("#import-file").focus();
      return;
    }
    await busy(importForm, async () => {
      try {
        const { result: r } = await ctx.client.importFile(file);
        ctx.changed();
        out.textContent = `Imported ${file.name}: ${r.memories} new ${r.memories === 1 ? "memory" : "memories"} and ${r.messages} new ${r.messages === 1 ? "message" : "messages"} (records already present were left as they are).`;
        ctx.toast(`Imported ${file.name}.`);
      } catch (err) {
        ctx.showError(err, errBox);
      }
    });
  });

  return {
    show() {
      $("#export-name").textContent = fallbackName();
    },
    reset() {
      $("#export-result").textContent = "";
      $("#import-result").textContent = "";
      $("#import-file").value = "";
    },
  };
}

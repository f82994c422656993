// Add memories: ingest a pasted conversation, or remember one thing.

import { $, busy, fill, h } from "./dom.js";
import { contract } from "./contract.js";
import { newSessionId, parseConversation } from "./format.js";

export function initAdd(ctx) {
  const ingestForm = $("#ingest-form");
  const rememberForm = $("#remember-form");
  const text = $("#i-text");
  const preview = $("#i-preview");
  const session = $("#i-session");

  function updatePreview() {
    if (!text.value.trim()) {
      preview.textContent = "";
      return;
    }
    try {
      const { messages } = parseConversation(text.value);
      const roles = messages.map((m) => m.role);
      const shown = roles.length > 6 ? `${roles.slice(0, 6).join(", ")}, …` : roles.join(", ");
      preview.textContent = `${messages.length} message${messages.length === 1 ? "" : "s"}: ${shown}`;
      preview.classList.remove("hint-bad");
    } catch (e) {
      preview.textContent = e.message;
      preview.classList.add("hint-bad");
    }
  }
  text.addEventListener("input", updatePreview);

  function memoryList(memories) {
    return h(
      "ul",
      { class: "result-list" },
      memories.map((m) =>
        h(
          "li",
          {},
          h("span", { class: `badge type-${m.type}` }, m.type),
          " ",
          h("button", { type: "button", class: "linkish", onclick: () => ctx.openDetail(m.id) }, m.summary),
          m.supersedes ? h("span", { class: "muted" }, " (supersedes an older version)") : null,
        ),
      ),
    );
  }

  ingestForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const errBox = $("#ingest-error");
    const out = $("#ingest-result");
    ctx.clearError(errBox);
    let messages;
    try {
      ({ messages } = parseConversation(text.value));
    } catch (e) {
      ctx.showError(e, errBox);
      text.focus();
      return;
    }
    const sid = session.value.trim();
    if (!sid) {
      ctx.showError(new Error("Give the conversation a session id."), errBox);
      session.focus();
      return;
    }
    await busy(ingestForm, async () => {
      try {
        const { result: r } = await ctx.client.ingest(messages, sid);
        ctx.changed();
        fill(
          out,
          h(
            "div",
            { class: "result-box", "data-testid": "ingest-report" },
            h(
              "p",
              { class: "result-head" },
              h("strong", {}, `${r.memoriesStored} ${r.memoriesStored === 1 ? "memory" : "memories"} stored`),
              ` from ${r.messageIds.length} messages (${r.messagesStored} new) in session `,
              h("code", {}, r.sessionId),
              r.memoriesSuperseded ? `; ${r.memoriesSuperseded} superseded` : "",
              ".",
            ),
            r.memories?.length ? memoryList(r.memories) : h("p", { class: "muted" }, "Nothing new to remember (ingest is idempotent)."),
            r.dropped?.length
              ? h(
                  "details",
                  { class: "dropped" },
                  h("summary", {}, `${r.dropped.length} dropped by verification`),
                  h("ul", {}, r.dropped.map((d) => h("li", {}, h("q", {}, d.content), h("span", { class: "muted" }, ` — ${d.reason}`)))),
                )
              : null,
          ),
        );
        ctx.toast(`Ingested ${r.messageIds.length} messages: ${r.memoriesStored} memories stored.`);
      } catch (err) {
        ctx.showError(err, errBox);
      }
    });
  });

  rememberForm.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const errBox = $("#remember-error");
    const out = $("#remember-result");
    ctx.clearError(errBox);
    const content = $("#m-content").value.trim();
    if (content.length < contract.rememberMinChars) {
      ctx.showError(new Error("Write something to remember."), errBox);
      $("#m-content").focus();
      return;
    }
    const sid = $("#m-session").value.trim() || undefined;
    await busy(rememberForm, async () => {
      try {
        const { result: m } = await ctx.client.remember(content, sid);
        ctx.changed();
        fill(out, h("div", { class: "result-box", "data-testid": "remember-report" }, h("p", { class: "result-head" }, h("strong", {}, "Remembered.")), memoryList([m])));
        $("#m-content").value = "";
        ctx.toast("Remembered.");
      } catch (err) {
        ctx.showError(err, errBox);
      }
    });
  });

  return {
    show() {
      if (!session.value) session.value = newSessionId();
    },
    reset() {
      fill($("#ingest-result"));
      fill($("#remember-result"));
      session.value = "";
    },
  };
}

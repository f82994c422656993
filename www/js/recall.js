// The recall playground: runs POST …/recall with explain:true and draws
// the answer, the candidates, and the fusion trace per channel, so a
// person sees which channel ranked each candidate where and how much it
// added to the fused score (contribution = weight / (k + rank)).

import { $, busy, fill, h, icon } from "./dom.js";
import { formatDate, shortId } from "./format.js";
import { contract } from "./contract.js";

export const CHANNELS = ["key", "fts", "hyde", "vector", "messages"];
const CHANNEL_LABEL = {
  key: "Topic key",
  fts: "Full text",
  hyde: "HyDE vector",
  vector: "Query vector",
  messages: "Raw messages",
};

const fmt = (x, d = 4) => (Number.isFinite(x) ? x.toFixed(d) : "–");

export function initRecall(ctx) {
  const form = $("#recall-form");
  const out = $("#recall-output");
  const errBox = $("#recall-error");

  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const query = $("#r-query").value.trim();
    if (!query) {
      ctx.showError(new Error("Type a question to recall."), errBox);
      $("#r-query").focus();
      return;
    }
    const limitRaw = Number($("#r-limit").value);
    const params = {
      query,
      referenceDate: $("#r-date").value || undefined,
      limit: Number.isInteger(limitRaw) && limitRaw >= 1 && limitRaw <= contract.recallLimitMax ? limitRaw : undefined,
      responseLength: $("#r-length").value || undefined,
    };
    ctx.clearError(errBox);
    out.setAttribute("aria-busy", "true");
    await busy(form, async () => {
      const client = ctx.client;
      try {
        const t0 = performance.now();
        const { result, messages } = await client.recall(params);
        // Another profile may have opened meanwhile: not its answer.
        if (ctx.client !== client) return;
        render(result, messages, performance.now() - t0);
        ctx.toast(result.count ? `Recall used ${result.count} ${result.count === 1 ? "memory" : "memories"}.` : "Recall found nothing.");
      } catch (err) {
        if (ctx.client !== client) return;
        fill(out);
        ctx.showError(err, errBox);
      } finally {
        out.removeAttribute("aria-busy");
      }
    });
  });

  function render(r, notes, ms) {
    const explain = r.explain || null;
    const answer = r.answer ?? r.result ?? "";
    fill(
      out,
      h(
        "section",
        { class: "card answer-card", "aria-labelledby": "answer-title", "data-testid": "recall-answer-card" },
        h("div", { class: "answer-head" }, h("h2", { id: "answer-title" }, "Answer"), h("span", { class: "muted" }, `${r.count} ${r.count === 1 ? "memory" : "memories"} used · ${Math.round(ms)} ms`)),
        answer
          ? h("p", { class: "answer", "data-testid": "recall-answer" }, answer)
          : h("p", { class: "answer answer-empty", "data-testid": "recall-answer" }, "Nothing in this profile answers that question."),
        notes?.length
          ? h(
              "ul",
              { class: "notes", "data-testid": "recall-notes", "aria-label": "Degradation notes" },
              notes.map((n) => h("li", {}, icon("alert"), typeof n === "string" ? n : n?.message || JSON.stringify(n))),
            )
          : null,
      ),
      r.candidates?.length ? traceSection(r.candidates, explain) : null,
      explain ? analysisSection(explain) : null,
    );
  }

  // ---- the fusion trace ----

  function channelOrder(explain) {
    const listed = (explain?.channels || []).map((c) => c.channel);
    return [...CHANNELS, ...listed.filter((c) => !CHANNELS.includes(c))];
  }

  function traceSection(candidates, explain) {
    const order = channelOrder(explain);
    const reports = Object.fromEntries((explain?.channels || []).map((c) => [c.channel, c]));
    const k = explain?.k;

    // Each candidate's cell per channel: from its trace, or (without a
    // trace) its position in the channel's ranked ids.
    const cells = candidates.map((c) => {
      const byCh = {};
      for (const t of c.trace || []) byCh[t.channel] = t;
      for (const ch of order) {
        if (byCh[ch]) continue;
        const idx = reports[ch]?.ids?.indexOf(c.id) ?? -1;
        if (idx >= 0) byCh[ch] = { channel: ch, rank: idx + 1, weight: reports[ch].weight, contribution: NaN };
      }
      return byCh;
    });
    const maxContribution = Math.max(1e-9, ...cells.flatMap((b) => Object.values(b).map((t) => t.contribution).filter(Number.isFinite)));
    const maxScore = Math.max(1e-9, ...candidates.map((c) => c.score));

    const head = h(
      "tr",
      {},
      h("th", { scope: "col", class: "tc-rank" }, "#"),
      h("th", { scope: "col", class: "tc-mem" }, "Memory"),
      order.map((ch) => {
        const rep = reports[ch];
        return h(
          "th",
          { scope: "col", class: `tc-ch ch-${ch}`, "data-testid": `trace-head-${ch}` },
          h("span", { class: "ch-name" }, h("span", { class: `swatch ch-${ch}`, "aria-hidden": "true" }), ch),
          h(
            "span",
            { class: "ch-meta" },
            rep ? `w ${fmt(rep.weight, 2)} · ${rep.ids.length} hit${rep.ids.length === 1 ? "" : "s"}` : "not reported",
          ),
          rep?.error ? h("span", { class: "ch-error", title: rep.error }, icon("alert"), "failed") : null,
        );
      }),
      h("th", { scope: "col", class: "tc-score" }, "Fused score"),
    );

    const body = candidates.map((c, i) => {
      const byCh = cells[i];
      return h(
        "tr",
        { "data-testid": "trace-row", "data-id": c.id },
        h("td", { class: "tc-rank" }, String(i + 1)),
        h(
          "th",
          { scope: "row", class: "tc-mem" },
          h("button", { type: "button", class: "linkish", "data-testid": "candidate-open", onclick: () => ctx.openDetail(c.id) }, c.summary),
          h(
            "span",
            { class: "sub" },
            h("span", { class: `badge type-${c.type}` }, c.type),
            " ",
            h("span", { class: "mono", title: c.id }, shortId(c.id)),
            c.eventDate ? ` · ${formatDate(c.eventDate)}` : "",
            c.sessionId == null ? " · no session" : ` · ${c.sessionId}`,
          ),
        ),
        order.map((ch) => cell(ch, byCh[ch], maxContribution)),
        h(
          "td",
          { class: "tc-score" },
          h(
            "div",
            { class: "scorebar", role: "img", "aria-label": `fused score ${fmt(c.score)}` },
            order.map((ch) => {
              const t = byCh[ch];
              if (!t || !Number.isFinite(t.contribution)) return null;
              return h("span", { class: `seg ch-${ch}`, style: { width: `${(100 * t.contribution) / maxScore}%` }, title: `${ch}: +${fmt(t.contribution)}` });
            }),
          ),
          h("span", { class: "score-num", "data-testid": "trace-score" }, fmt(c.score)),
        ),
      );
    });

    return h(
      "section",
      { class: "card trace-card", "aria-labelledby": "trace-title", "data-testid": "recall-trace" },
      h(
        "div",
        { class: "trace-head" },
        h("div", {}, h("h2", { id: "trace-title" }, "Why these memories"), h("p", { class: "muted" }, "Weighted reciprocal rank fusion: each channel that ranked a memory adds ", h("code", {}, `weight / (${Number.isFinite(k) ? k : "k"} + rank)`), ". Bars are that contribution.")),
        h(
          "ul",
          { class: "legend legend-channels", "aria-label": "Channels" },
          order.map((ch) => h("li", { title: CHANNEL_LABEL[ch] || ch }, h("span", { class: `swatch ch-${ch}`, "aria-hidden": "true" }), CHANNEL_LABEL[ch] || ch)),
        ),
      ),
      h("div", { class: "table-scroll" }, h("table", { class: "trace" }, h("caption", { class: "visually-hidden" }, "Fusion trace: rank and contribution of each retrieval channel for each candidate"), h("thead", {}, head), h("tbody", {}, body))),
    );
  }

  function cell(ch, t, maxContribution) {
    if (!t) {
      return h("td", { class: "tc-ch tc-miss", "data-testid": `trace-cell-${ch}`, "data-rank": "" }, h("span", { "aria-hidden": "true" }, "·"), h("span", { class: "visually-hidden" }, `${ch}: not ranked`));
    }
    const known = Number.isFinite(t.contribution);
    const pct = known ? Math.max(4, (100 * t.contribution) / maxContribution) : 0;
    const text = `${ch}: rank ${t.rank}, weight ${fmt(t.weight, 2)}${known ? `, contribution ${fmt(t.contribution)}` : ""}`;
    return h(
      "td",
      { class: `tc-ch ch-${ch}`, "data-testid": `trace-cell-${ch}`, "data-rank": String(t.rank), title: text },
      h("span", { class: "visually-hidden" }, text),
      h(
        "span",
        { class: "tc-cell", "aria-hidden": "true" },
        h("span", { class: "tc-rankno" }, `#${t.rank}`),
        h("span", { class: "tc-bar" }, h("span", { class: `tc-fill ch-${ch}`, style: { width: `${pct}%` } })),
        h("span", { class: "tc-contrib" }, known ? `+${fmt(t.contribution)}` : ""),
      ),
    );
  }

  // ---- what the analyzer made of the query ----

  function analysisSection(x) {
    const a = x.analysis || {};
    const chips = (list, testid) =>
      list?.length ? h("ul", { class: "chips", "data-testid": testid }, list.map((t) => h("li", { class: "chip" }, t))) : h("p", { class: "muted" }, "none");
    return h(
      "section",
      { class: "card analysis-card", "aria-labelledby": "analysis-title", "data-testid": "recall-analysis" },
      h("h2", { id: "analysis-title" }, "Query analysis"),
      h(
        "div",
        { class: "analysis-grid" },
        h("div", {}, h("h3", {}, "Topic keys"), chips(a.keys, "analysis-keys")),
        h("div", {}, h("h3", {}, "Full-text terms"), chips(a.terms, "analysis-terms")),
        h("div", { class: "span-2" }, h("h3", {}, "HyDE statement"), a.hyde ? h("blockquote", { class: "hyde" }, a.hyde) : h("p", { class: "muted" }, "none")),
        h(
          "div",
          { class: "span-2" },
          h("h3", {}, "Channels"),
          h(
            "ul",
            { class: "channel-list", "data-testid": "recall-channels" },
            (x.channels || []).map((c) =>
              h(
                "li",
                { "data-testid": `channel-${c.channel}`, class: c.error ? "ch-failed" : "" },
                h("span", { class: `swatch ch-${c.channel}`, "aria-hidden": "true" }),
                h("strong", {}, c.channel),
                ` weight ${fmt(c.weight, 2)} · ${c.ids.length} ranked`,
                c.error ? h("span", { class: "ch-error" }, ` — failed: ${c.error}`) : null,
              ),
            ),
          ),
        ),
        h(
          "div",
          { class: "span-2" },
          h("h3", {}, "Temporal facts"),
          x.temporalFacts?.length ? h("ul", { class: "facts" }, x.temporalFacts.map((f) => h("li", {}, f))) : h("p", { class: "muted" }, "none computed"),
          h("p", { class: "muted small" }, `Reference date ${x.referenceDate || "today"} · k = ${x.k}`),
        ),
      ),
    );
  }

  return {
    show() {
      if (!$("#r-query").value) $("#r-query").focus();
    },
    reset() {
      fill(out);
      ctx.clearError(errBox);
    },
  };
}

// A gated OpenAI-compatible model server stand-in that answers consolidation prompts the way the
// rules do (duplicates -> merge into the first member, contradiction -> supersede,
// siblings/events -> fold, staleTask -> retire). `gate()` holds replies until
// `release()`; `fail = true` answers garbage; `delayMs` delays each reply.
import http from "node:http";
export async function startModel() {
  const st = { calls: 0, held: [], gated: false, fail: false, delayMs: 0, onCall: null, groupsSeen: [] };
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", async () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
      const system = body?.messages?.find((m) => m.role === "system")?.content ?? "";
      const user = body?.messages?.find((m) => m.role === "user")?.content ?? "";
      st.calls++;
      if (st.onCall) await st.onCall(st.calls, system, user);
      if (st.gated) await new Promise((r) => st.held.push(r));
      if (st.delayMs) await new Promise((r) => setTimeout(r, st.delayMs));
      let text;
      if (system.startsWith("You consolidate")) {
        const groups = [];
        for (const line of user.split("\n")) {
          const g = /^\[(\d+)\] "(\w+)"/.exec(line);
          if (g) { groups.push({ index: Number(g[1]), kind: g[2], members: [] }); continue; }
          const m = /^  id=(\S+) type=\S+ said=\S+ content=(.*)$/.exec(line);
          if (m && groups.length) groups[groups.length - 1].members.push({ id: m[1], content: JSON.parse(m[2]) });
        }
        st.groupsSeen.push(...groups.map((g) => g.members.map((m) => m.id)));
        const decisions = groups.map((g) => {
          if (g.kind === "duplicates") return { index: g.index, decision: "merge", survivor: g.members[0].id, reason: "same" };
          if (g.kind === "contradiction") return { index: g.index, decision: "supersede", reason: "later" };
          if (g.kind === "staleTask") return { index: g.index, decision: "retire", reason: "stale" };
          return { index: g.index, decision: "fold", content: g.members.map((m) => m.content).join(" "), reason: "fold" };
        });
        text = st.fail ? "garbage, not json" : JSON.stringify({ decisions });
      } else text = "I can only answer consolidation prompts.";
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ id: "x", object: "chat.completion", created: 0, model: body?.model, choices: [{ index: 0, message: { role: "assistant", content: text }, finish_reason: "stop" }], usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 } }));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address();
  return {
    st,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    gate() { st.gated = true; },
    release() { st.gated = false; const h = st.held; st.held = []; h.forEach((r) => r()); },
    close: () => new Promise((r) => { st.gated = false; st.held.forEach((f) => f()); server.close(() => r()); server.closeAllConnections?.(); }),
  };
}

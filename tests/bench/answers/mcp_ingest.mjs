// The largest ingest (500 messages of ~32 KB prose, 16,000 memories) by REST (published route) and by MCP tools/call,
// each in a fresh workerd; the Wasm mark after each.
import { start, req, mb } from "./lib.mjs";
function prose(i) {
  let s = "";
  for (let j = 0; ; j++) {
    const sent = `The server host${i}q${j} runs service svc${i}r${j} on port ${1000 + j} in region zone${i}z${j}. `;
    if (s.length + sent.length > 32 * 1024 - 16) return s;
    s += sent;
  }
}
const messages = Array.from({ length: 500 }, (_, i) => ({ role: "user", content: prose(i) }));
for (const way of ["rest", "mcp"]) {
  const rt = await start({});
  const body = way === "mcp"
    ? JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "ingest", arguments: { sessionId: "s1", messages } } })
    : JSON.stringify({ sessionId: "s1", messages });
  const url = way === "mcp" ? `${rt.origin}/mcp/namespaces/rev/profiles/p` : `${rt.origin}/client/v4/accounts/a/agent-memory/namespaces/rev/profiles/p/ingest`;
  const r = await req(url, { method: "POST", body, headers: way === "mcp" ? { accept: "application/json" } : {} });
  const iso = await rt.iso();
  console.log(`${way} ingest: status ${r.status}, reply ${mb(r.bytes)} MiB; wasm ${mb(iso.wasmMemoryBytes)} MiB`);
  await rt.dispose();
}

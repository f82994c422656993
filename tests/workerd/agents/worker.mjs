// Test-only Worker for tests/workerd/agents-sdk.test.mjs: the shipped
// example agent (docs/examples/memory-agent/src/server.ts, the get-started
// guide's code verbatim, on agents 0.22.0) with a test door.
//
// The guide's ChatAgent is IMPORTED, not copied: everything the test runs
// (chat(), the scheduled ingestScheduledMemory, Session.create(this)
// .withContext("memory", { provider: { get, search } }), runIngest) is the
// guide's code. The guide's own fetch handler (POST /chat) drives chat(),
// whose model is a local stand-in for Workers AI behind the `AI` binding
// (tests/workerd/standins/chat-model-worker.mjs). The subclass only adds RPC
// methods that let the test look inside, or play single steps of a turn
// without the model:
//   appendTurn(role, text)  a message appended with this.session.appendMessage,
//                           as chat() appends it
//   ingest()                the guide's private runIngest() (what the scheduled
//                           ingestScheduledMemory callback runs)
//   searchContext(query)    the model's `search_context` tool call: the tool
//                           from `await this.session.tools()`, its input
//                           validated against the tool's own schema as the AI
//                           SDK does, then its `execute`
//   schedules()             the agent's pending schedules (listSchedules(), the
//                           SDK call the guide's cancelPendingIngest uses)
//   history()               the session's messages as [{role, text}]
//   systemPrompt(), agentState()
//
//   POST /test/<agent name>/<method>  body: JSON array of arguments
//        -> 200 {"result": ...} | 500 {"error": "<message>"}
// Every other request goes to the guide's own fetch handler (/chat,
// routeAgentRequest).
//
// Bare imports here ("agents", "ai") are resolved by the test's bundler from
// the example's node_modules, so there is one copy of each package.
import { getAgentByName } from "agents";
import { asSchema } from "ai";
import guide, { ChatAgent as GuideChatAgent } from "../../../docs/examples/memory-agent/src/server.ts";

export class ChatAgent extends GuideChatAgent {
  async appendTurn(role, text) {
    await this.session.appendMessage({
      id: `${role}-${crypto.randomUUID()}`,
      role,
      parts: [{ type: "text", text }],
    });
  }

  async ingest() {
    return this.runIngest();
  }

  async searchContext(query) {
    const tools = await this.session.tools();
    const tool = tools.search_context;
    if (!tool) throw new Error(`no search_context tool; tools: ${Object.keys(tools).join(", ")}`);
    // What the model is shown, and what it sends: {label, query}.
    const schema = asSchema(tool.inputSchema);
    const input = { label: "memory", query };
    const checked = schema.validate ? await schema.validate(input) : { success: true, value: input };
    if (!checked.success) throw checked.error;
    const output = await tool.execute(checked.value, { toolCallId: "call-search-1", messages: [] });
    return { description: tool.description, jsonSchema: await schema.jsonSchema, output };
  }

  async schedules() {
    return this.listSchedules();
  }

  async history() {
    return (await this.session.getHistory()).map((m) => ({
      role: m.role,
      text: m.parts.map((p) => (p.type === "text" ? p.text : "")).join(""),
    }));
  }

  async systemPrompt() {
    return this.session.freezeSystemPrompt();
  }

  async agentState() {
    return { name: this.name, state: this.state };
  }
}

export default {
  async fetch(request, env, ctx) {
    const url = new URL(request.url);
    const m = url.pathname.match(/^\/test\/([^/]+)\/([A-Za-z]+)$/);
    if (request.method === "POST" && m) {
      try {
        const agent = await getAgentByName(env.ChatAgent, decodeURIComponent(m[1]));
        const result = await agent[m[2]](...(await request.json()));
        return Response.json({ result: result ?? null });
      } catch (e) {
        return Response.json({ error: String(e?.stack ?? e) }, { status: 500 });
      }
    }
    return guide.fetch(request, env, ctx);
  },
};

// A local stand-in for a Workers AI chat model (the get-started guide's
// `@cf/zai-org/glm-4.7-flash`), which cannot run offline. A small Worker in
// the same workerd process; an agent Worker's `AI` binding is a wrapped
// binding (wrapped-bindings-plugin.mjs, kind "ai") whose `run` forwards here
// over JS RPC, so the guide's code calls exactly what it calls in
// production:
//
//   env.AI.run(model, inputs, options)
//
// as workers-ai-provider 4.0.0 calls it for a non-streaming generateText
// (src/workersai-chat-language-model.ts, doGenerate): `inputs` is
//   { max_tokens, messages, temperature, tools, top_p }
// with `messages` in Workers AI's chat format ({role: "system"|"user", content},
// {role: "assistant", content, tool_calls: [{id, type: "function",
// function: {name, arguments: "<json>"}}]}, {role: "tool", content, name,
// tool_call_id}) and `tools` as [{type: "function", function: {name,
// description, parameters: <JSON schema>}}]; `options` is {gateway, signal}.
//
// The reply is OpenAI chat-completions shaped, as the newer Workers AI chat
// models (glm-4.7-flash among them) answer through the binding:
//   {choices: [{index, message: {role, content, tool_calls?}, finish_reason}], usage}
// The provider reads the text from choices[0].message.content (else the
// native `response`), the tool calls from choices[0].message.tool_calls
// (else a top-level `tool_calls`), the finish reason from
// choices[0].finish_reason.
//
// What it answers: scripted-chat-model.mjs.
//
// Every call is recorded. Tests read them over HTTP (through
// Miniflare#getWorker(<this worker>).fetch):
//   GET /calls   [{model, inputs, options, toolNames, decision, reply, at}]
import { WorkerEntrypoint } from "cloudflare:workers";
import { chatReply } from "./scripted-chat-model.mjs";

const calls = [];

export class ChatModelStandin extends WorkerEntrypoint {
  async run(model, inputs, options) {
    const call = {
      model,
      inputs,
      options,
      toolNames: (inputs?.tools ?? []).map((t) => t?.function?.name),
      at: Date.now(),
    };
    calls.push(call);
    if (typeof model !== "string" || !model.startsWith("@cf/")) {
      throw new Error(`AiError: 5007: No such model ${model}`);
    }
    if (!Array.isArray(inputs?.messages) || inputs.messages.length === 0) {
      throw new Error("AiError: 5006: Error: required properties at '/' are 'messages'");
    }
    if (inputs.stream) {
      // The guide only calls generateText; a stream would need SSE.
      throw new Error("chat model stand-in: streaming is not scripted");
    }
    const { decision, message, finishReason } = chatReply(inputs);
    call.decision = decision;
    call.reply = message;
    return {
      id: `chatcmpl-standin-${calls.length}`,
      object: "chat.completion",
      created: Math.floor(Date.now() / 1000),
      model,
      choices: [{ index: 0, message, finish_reason: finishReason }],
      usage: { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 },
    };
  }
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/calls") return Response.json(calls);
    return new Response("not found", { status: 404 });
  },
};

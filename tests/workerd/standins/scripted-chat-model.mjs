// The scripted chat model behind chat-model-worker.mjs (the local stand-in
// for a Workers AI chat model). Pure JavaScript (no Node or Workers APIs), so
// the stand-in Worker and the tests share it.
//
// It reads the request as workers-ai-provider 4.0.0 sends it (Workers AI chat
// messages and OpenAI-style function tools, see chat-model-worker.mjs) and
// answers the way a well-behaved model would under the get-started guide's
// MEMORY POLICY ("Search memory with search_context when the user asks what
// you know or remember about them"; "When search_context returns results,
// always incorporate them into your response"):
//   - the last user message asks what the assistant knows / remembers about
//     the user, no tool result has come back since, and `search_context` is
//     among the tools: a call of search_context with SEARCH_INPUT
//     (finish_reason "tool_calls")
//   - a tool result has come back since the last user message: text that
//     includes the tool result(s), after RECALL_PREFIX
//   - otherwise: ACKNOWLEDGEMENT

let sequence = 0;

/** The question that makes a well-behaved model look into memory. */
export const ASKS_ABOUT_USER = /\bwhat do you (know|remember)\b|\bremember about me\b/i;
export const SEARCH_INPUT = { label: "memory", query: "user preferences" };
export const ACKNOWLEDGEMENT = "Noted, thanks.";
export const RECALL_PREFIX = "Here is what I remember about you: ";

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p?.type === "text" ? p.text : "")).join("\n");
  return "";
}

/** `{decision, message, finishReason}` for one chat request. */
export function chatReply(inputs) {
  const messages = Array.isArray(inputs?.messages) ? inputs.messages : [];
  const toolNames = (inputs?.tools ?? []).map((t) => t?.function?.name);
  let lastUser = -1;
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i]?.role === "user") {
      lastUser = i;
      break;
    }
  }
  const question = lastUser >= 0 ? textOf(messages[lastUser].content) : "";
  const results = messages.slice(lastUser + 1).filter((m) => m?.role === "tool");

  if (results.length > 0) {
    const text = RECALL_PREFIX + results.map((r) => textOf(r.content)).join("\n");
    return { decision: "answer-from-tool", message: { role: "assistant", content: text }, finishReason: "stop" };
  }
  if (ASKS_ABOUT_USER.test(question) && toolNames.includes("search_context")) {
    return {
      decision: "call-search_context",
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: `call_${++sequence}`,
            type: "function",
            function: { name: "search_context", arguments: JSON.stringify(SEARCH_INPUT) },
          },
        ],
      },
      finishReason: "tool_calls",
    };
  }
  return { decision: "acknowledge", message: { role: "assistant", content: ACKNOWLEDGEMENT }, finishReason: "stop" };
}


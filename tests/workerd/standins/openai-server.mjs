// A local stand-in for an OpenAI-compatible model server (as Ollama, vLLM or
// llama.cpp serve it): a Node HTTP server on 127.0.0.1 (random port) with
//   POST /v1/chat/completions  -> chat.completion JSON from the scripted model
//   POST /v1/embeddings        -> {object: "list", data: [{embedding, index}]}
// Everything it receives is recorded (method, path, headers, parsed body).
//
//   const s = await startOpenAiStandin();
//   s.baseUrl                   // http://127.0.0.1:<port>/v1
//   s.script.queue("extraction", "garbage", "{\"memories\": [");
//   s.embeddingStatus = 500;    // embeddings answer HTTP 500 until reset
//   s.requests                  // every request, in order
//   await s.close();
import http from "node:http";
import { createScript, embedText } from "./scripted-model.mjs";

export const EMBEDDING_DIMS = 768;

export async function startOpenAiStandin() {
  const script = createScript();
  const requests = [];
  const replies = [];
  let completionSeq = 0;
  const state = { embeddingStatus: 200 };

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks).toString("utf8");
      let body = null;
      try {
        body = raw ? JSON.parse(raw) : null;
      } catch {
        body = undefined;
      }
      const record = { method: req.method, path: req.url, headers: { ...req.headers }, raw, body };
      requests.push(record);
      const send = (status, payload) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(JSON.stringify(payload));
      };
      if (req.method !== "POST") return send(405, { error: { message: "only POST", type: "invalid_request_error" } });
      if (body === undefined) return send(400, { error: { message: "body is not JSON", type: "invalid_request_error" } });

      if (req.url === "/v1/chat/completions") {
        const system = body.messages?.find((m) => m.role === "system")?.content ?? "";
        const user = body.messages?.find((m) => m.role === "user")?.content ?? "";
        const out = script.complete(system, user);
        record.stage = out.stage;
        record.reply = out.text;
        replies.push({ stage: out.stage, text: out.text, fault: out.fault });
        const promptTokens = Math.ceil((system.length + user.length) / 4);
        const completionTokens = Math.ceil(out.text.length / 4);
        return send(200, {
          id: `chatcmpl-standin-${++completionSeq}`,
          object: "chat.completion",
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          system_fingerprint: "fp_standin",
          choices: [{ index: 0, message: { role: "assistant", content: out.text }, logprobs: null, finish_reason: "stop" }],
          usage: { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens },
        });
      }
      if (req.url === "/v1/embeddings") {
        record.stage = "embedding";
        record.status = state.embeddingStatus;
        if (state.embeddingStatus !== 200) {
          return send(state.embeddingStatus, {
            error: { message: "the embedding model is overloaded", type: "server_error", code: null },
          });
        }
        const input = Array.isArray(body.input) ? body.input : [body.input];
        return send(200, {
          object: "list",
          data: input.map((text, index) => ({ object: "embedding", index, embedding: embedText(String(text), EMBEDDING_DIMS) })),
          model: body.model,
          usage: { prompt_tokens: input.join(" ").length, total_tokens: input.join(" ").length },
        });
      }
      return send(404, { error: { message: `no route ${req.url}`, type: "invalid_request_error" } });
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    script,
    requests,
    replies,
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    get embeddingStatus() {
      return state.embeddingStatus;
    },
    set embeddingStatus(s) {
      state.embeddingStatus = s;
    },
    /** Requests to one path since index `from`. */
    since(from, path) {
      return requests.slice(from).filter((r) => !path || r.path === path);
    },
    close() {
      server.closeAllConnections?.();
      return new Promise((resolve) => server.close(resolve));
    },
  };
}

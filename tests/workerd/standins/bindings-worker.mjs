// Local stand-ins for the Workers AI (`AI`) and Vectorize (`VECTORIZE`)
// bindings, which cannot run offline. A small Worker in the same workerd
// process; the service reaches it through Service bindings to these named
// entrypoints, so the service calls exactly what it calls in production:
//
//   env.AI.run(model, inputs, options)
//     text models      -> { response: "<text>" }  (scripted-model.mjs)
//     embedding models -> { shape: [n, dims], data: [[...], ...] } (bge-base
//                         768, bge-small 384, bge-large / bge-m3 1024)
//   env.VECTORIZE.upsert(vectors) / query(vector, options) / deleteByIds(ids)
//     an in-memory index with namespaces, cosine scores
//
// Every call is recorded. Tests inspect and steer it over HTTP (through
// Miniflare#getWorker("binding-standins").fetch):
//   GET  /calls            {ai: [...], vectorize: [...]}
//   GET  /vectors          every stored vector {id, namespace, dims}
//   POST /control          {queue, broken, heal} for the scripted model,
//                          {embedError: "message" | null}
import { WorkerEntrypoint } from "cloudflare:workers";
import { createScript, embedText } from "./scripted-model.mjs";

const script = createScript();
const aiCalls = [];
const vectorizeCalls = [];
const vectors = new Map(); // id -> {id, namespace, values}
let embedError = null;
let mutation = 0;

/** Embedding models are the `@cf/baai/bge-*` family (and any *embed* name). */
function isEmbeddingModel(model) {
  return /bge|embed/i.test(model);
}

/** Output dimensions of the Workers AI embedding models. */
function dimsOf(model) {
  if (/bge-small/.test(model)) return 384;
  if (/bge-large|bge-m3/.test(model)) return 1024;
  return 768;
}

export class AiStandin extends WorkerEntrypoint {
  async run(model, inputs, options) {
    const call = { model, inputs, options, at: Date.now() };
    aiCalls.push(call);
    if (typeof model !== "string" || !model.startsWith("@cf/")) {
      throw new Error(`AiError: 5007: No such model ${model}`);
    }
    if (isEmbeddingModel(model)) {
      if (embedError) throw new Error(embedError);
      const text = Array.isArray(inputs?.text) ? inputs.text : [inputs?.text];
      const dims = dimsOf(model);
      return { shape: [text.length, dims], data: text.map((t) => embedText(String(t), dims)), pooling: "mean" };
    }
    const system = inputs?.messages?.find((m) => m.role === "system")?.content ?? "";
    const user = inputs?.messages?.find((m) => m.role === "user")?.content ?? "";
    const out = script.complete(system, user);
    call.stage = out.stage;
    call.reply = out.text;
    return { response: out.text, usage: { prompt_tokens: 100, completion_tokens: 50, total_tokens: 150 } };
  }
}

function cosine(a, b) {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

export class VectorizeStandin extends WorkerEntrypoint {
  async upsert(items) {
    vectorizeCalls.push({ method: "upsert", args: [items] });
    for (const v of items) {
      if (typeof v.id !== "string" || v.id.length > 64) throw new Error(`VECTOR_UPSERT_ERROR: invalid id ${v.id}`);
      if (!Array.isArray(v.values) || !v.values.length) throw new Error(`VECTOR_UPSERT_ERROR: no values for ${v.id}`);
      vectors.set(v.id, { id: v.id, namespace: v.namespace ?? "", values: Array.from(v.values) });
    }
    return { mutationId: `m-${++mutation}` };
  }

  async query(vector, options = {}) {
    vectorizeCalls.push({ method: "query", args: [Array.from(vector).length, options] });
    const topK = options.topK ?? 5;
    if (topK > 100) throw new Error("VECTOR_QUERY_ERROR: topK is over 100");
    const matches = [...vectors.values()]
      .filter((v) => options.namespace === undefined || v.namespace === options.namespace)
      .map((v) => ({ id: v.id, score: cosine(vector, v.values) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, topK);
    return { count: matches.length, matches };
  }

  async deleteByIds(ids) {
    vectorizeCalls.push({ method: "deleteByIds", args: [ids] });
    for (const id of ids) vectors.delete(id);
    return { mutationId: `m-${++mutation}` };
  }
}

export default {
  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/calls") {
      return Response.json({ ai: aiCalls, vectorize: vectorizeCalls });
    }
    if (request.method === "GET" && url.pathname === "/vectors") {
      return Response.json([...vectors.values()].map((v) => ({ id: v.id, namespace: v.namespace, dims: v.values.length })));
    }
    if (request.method === "POST" && url.pathname === "/control") {
      const cfg = await request.json();
      script.configure(cfg);
      if ("embedError" in cfg) embedError = cfg.embedError;
      return Response.json({ ok: true });
    }
    return new Response("not found", { status: 404 });
  },
};

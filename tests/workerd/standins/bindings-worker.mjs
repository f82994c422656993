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
//     an in-memory index with namespaces, metadata and metadata filters
//     (see matchesFilter), cosine scores
//
// Every call is recorded. Tests inspect and steer it over HTTP (through
// Miniflare#getWorker("binding-standins").fetch):
//   GET  /calls            {ai: [...], vectorize: [...]}
//   GET  /vectors          every stored vector {id, namespace, dims, metadata}
//   POST /control          {queue, broken, heal} for the scripted model,
//                          {embedError: "message" | null}
import { WorkerEntrypoint } from "cloudflare:workers";
import { createScript, embedText } from "./scripted-model.mjs";

const script = createScript();
const aiCalls = [];
const vectorizeCalls = [];
const vectors = new Map(); // id -> {id, namespace, values, metadata}
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

// Metadata filters, as Vectorize documents them (developers.cloudflare.com/
// vectorize/reference/metadata-filtering): a non-empty object under 2048
// bytes of compact JSON whose keys are ANDed; a plain value is `$eq`, else
// an object of `$eq $ne $in $nin $lt $lte $gt $gte`. Only properties with a
// metadata index filter (the service's four, all strings); a string index
// holds the first 64 bytes of a value, so that is what is compared. What
// `$ne`/`$nin` do to a vector WITHOUT the property is not documented: the
// stand-in takes the strict reading (no operator matches a missing
// property), so a service relying on the other reading would show.
const METADATA_INDEXES = new Set(["type", "sessionId", "agentId", "userId"]);
const INDEXED_BYTES = 64;
const OPERATORS = new Set(["$eq", "$ne", "$in", "$nin", "$lt", "$lte", "$gt", "$gte"]);

function indexed(value) {
  if (typeof value !== "string") return value;
  const bytes = new TextEncoder().encode(value);
  if (bytes.length <= INDEXED_BYTES) return value;
  let end = INDEXED_BYTES;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // a UTF-8 boundary
  return new TextDecoder().decode(bytes.subarray(0, end));
}

function checkFilter(filter) {
  const fail = (why) => {
    throw new Error(`VECTOR_QUERY_ERROR: invalid filter: ${why}`);
  };
  if (filter === null || typeof filter !== "object" || Array.isArray(filter)) fail("not an object");
  const keys = Object.keys(filter);
  if (!keys.length) fail("empty");
  if (JSON.stringify(filter).length >= 2048) fail("2048 bytes or more");
  for (const k of keys) {
    if (!k || /["|.]/.test(k) || k.startsWith("$") || k.length > 512) fail(`bad key ${k}`);
    const cond = filter[k];
    if (cond !== null && typeof cond === "object") {
      for (const [op, v] of Object.entries(cond)) {
        if (!OPERATORS.has(op)) fail(`unknown operator ${op}`);
        if ((op === "$in" || op === "$nin") !== Array.isArray(v)) fail(`${op} on ${k}`);
      }
    }
  }
}

function matchesFilter(metadata, filter) {
  for (const [k, cond] of Object.entries(filter)) {
    if (!METADATA_INDEXES.has(k)) return false; // no metadata index: nothing is in it
    const has = metadata != null && Object.hasOwn(metadata, k);
    const v = has ? indexed(metadata[k]) : undefined;
    const ops = cond !== null && typeof cond === "object" ? Object.entries(cond) : [["$eq", cond]];
    for (const [op, want] of ops) {
      if (!has) return false;
      const ok = {
        $eq: () => v === want,
        $ne: () => v !== want,
        $in: () => want.includes(v),
        $nin: () => !want.includes(v),
        $lt: () => typeof v === typeof want && v < want,
        $lte: () => typeof v === typeof want && v <= want,
        $gt: () => typeof v === typeof want && v > want,
        $gte: () => typeof v === typeof want && v >= want,
      }[op]();
      if (!ok) return false;
    }
  }
  return true;
}

export class VectorizeStandin extends WorkerEntrypoint {
  async upsert(items) {
    vectorizeCalls.push({ method: "upsert", args: [items] });
    for (const v of items) {
      if (typeof v.id !== "string" || v.id.length > 64) throw new Error(`VECTOR_UPSERT_ERROR: invalid id ${v.id}`);
      if (!Array.isArray(v.values) || !v.values.length) throw new Error(`VECTOR_UPSERT_ERROR: no values for ${v.id}`);
      if (v.metadata !== undefined && (v.metadata === null || typeof v.metadata !== "object" || Array.isArray(v.metadata))) {
        throw new Error(`VECTOR_UPSERT_ERROR: metadata of ${v.id} is not an object`);
      }
      vectors.set(v.id, { id: v.id, namespace: v.namespace ?? "", values: Array.from(v.values), metadata: v.metadata ?? {} });
    }
    return { mutationId: `m-${++mutation}` };
  }

  async query(vector, options = {}) {
    vectorizeCalls.push({ method: "query", args: [Array.from(vector).length, options] });
    const topK = options.topK ?? 5;
    if (topK > 100) throw new Error("VECTOR_QUERY_ERROR: topK is over 100");
    if (options.filter !== undefined) checkFilter(options.filter);
    const matches = [...vectors.values()]
      .filter((v) => options.namespace === undefined || v.namespace === options.namespace)
      .filter((v) => options.filter === undefined || matchesFilter(v.metadata, options.filter))
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
      return Response.json(
        [...vectors.values()].map((v) => ({ id: v.id, namespace: v.namespace, dims: v.values.length, metadata: v.metadata })),
      );
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

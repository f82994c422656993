// Shared fixtures of the REST and RPC suites (rest.test.mjs, rpc.test.mjs).
//
//   const w = await startWorker({ vars: VARS });
//   const doc = await loadDocument(w);          // GET /openapi.json, validated
//   const api = restClient(w, doc);
//   const r = await api.post(T.remember, { profile: "p1" }, { content: "..." });
//   r.status, r.body (parsed JSON, or the text for NDJSON), r.text, r.contentType
//
// Every response that goes through `restClient` is validated with
// validateResponse against the served document (a mismatch throws), and
// its (method, path template) is recorded in `exercised`, so a suite can
// check that it hit every documented operation (`unexercised(doc)`).
//
// For RPC: `rpcResultSchema(doc, op)` is the `result` schema of the REST
// operation an RPC method mirrors, and `checkRpcResult(doc, op, value)`
// validates an RPC result against it.
import assert from "node:assert/strict";
import { validate, validateResponse, resolveRef } from "./openapi.mjs";

/** The bearer token wrangler.toml grants every namespace. */
export const TOKEN = "dev-token";
/** A token that may touch only namespace `team` (for 403 checks). */
export const TEAM_TOKEN = "team-token-123";
/** [vars] for startWorker: the dev token, plus a token limited to `team`. */
export const VARS = { AUTH_TOKENS: JSON.stringify({ [TOKEN]: ["*"], [TEAM_TOKEN]: ["team"] }) };

export const ACCOUNT = "acct";
export const NAMESPACE = "default";

const P = "/accounts/{account}/agent-memory/namespaces/{namespace}/profiles/{profile}";
/** Path templates, exactly as they are keys of the document's `paths`. */
export const T = Object.freeze({
  health: "/health",
  openapi: "/openapi.json",
  profile: P,
  ingest: `${P}/ingest`,
  remember: `${P}/remember`,
  recall: `${P}/recall`,
  memories: `${P}/memories`,
  memory: `${P}/memories/{id}`,
  forget: `${P}/memories/{id}/forget`,
  summary: `${P}/summary`,
  session: `${P}/sessions/{sessionId}`,
  restore: `${P}/restore`,
  export: `${P}/export`,
  import: `${P}/import`,
  stats: `${P}/stats`,
  consolidate: `${P}/consolidate`,
  undo: `${P}/consolidations/{consolidationId}/undo`,
  namespaces: "/accounts/{account}/agent-memory/namespaces",
  namespace: "/accounts/{account}/agent-memory/namespaces/{namespace}",
  profiles: "/accounts/{account}/agent-memory/namespaces/{namespace}/profiles",
  mcp: "/mcp/namespaces/{namespace}/profiles/{profile}",
});

// ---------------------------------------------------------------------------
// Ids and records

/** A memory id made now: a ULID, 26 lowercase Crockford base32 characters. */
export const ULID = /^[0-7][0-9a-hjkmnp-tv-z]{25}$/;
/** A message id, or a memory id of the earlier form: 32 lowercase hex characters. */
export const HEX_ID = /^[0-9a-f]{32}$/;

/** Fields of a memory that a list entry leaves out. */
export const NOT_IN_ENTRIES = Object.freeze(["content", "sourceMessageIds", "searchQueries", "supersedes", "supersededBy", "validFrom", "validTo"]);

/** Fields only a detail (`get`) has. */
const DETAIL_ONLY = ["versions", "moreVersions", "sourceMessages", "moreSourceMessages", "consolidations"];

/**
 * The list entry of a memory record (or of a detail): the record without
 * the fields `list` leaves out (and without a detail's versions and
 * source messages).
 */
export function entryOf(memory) {
  const out = {};
  for (const [k, v] of Object.entries(memory)) {
    if (!NOT_IN_ENTRIES.includes(k) && !DETAIL_ONLY.includes(k)) out[k] = v;
  }
  return out;
}

/** Asserts that every item of a list is an entry: no content, sources, queries or version links. */
export function assertEntries(memories, where = "list") {
  assert.ok(Array.isArray(memories), `${where}: memories is an array`);
  for (const m of memories) {
    for (const k of NOT_IN_ENTRIES) assert.ok(!(k in m), `${where}: entry ${m.id} carries ${k}`);
    assert.ok("sessionId" in m, `${where}: entry ${m.id} has a sessionId (null without a session)`);
  }
}

/** "METHOD template" of every response validated so far in this process. */
export const exercised = new Set();

/**
 * Fills a path template. Values are inserted verbatim (no encoding), so a
 * test can send `%2F` or `..` as it means; `account` and `namespace`
 * default to ACCOUNT and NAMESPACE.
 */
export function fillPath(template, params = {}) {
  const all = { account: ACCOUNT, namespace: NAMESPACE, ...params };
  return template.replace(/\{(\w+)\}/g, (_, name) => {
    if (!(name in all)) throw new Error(`no value for {${name}} in ${template}`);
    return String(all[name]);
  });
}

function queryString(query) {
  if (!query) return "";
  const pairs = Array.isArray(query) ? query : Object.entries(query);
  const qs = new URLSearchParams(pairs.filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)])).toString();
  return qs ? `?${qs}` : "";
}

/**
 * A REST client over `w.fetch` that validates every response against
 * `doc` and records the operation in `exercised`.
 *
 * request(method, template, params, opts):
 *   opts.query     object or [[k, v], ...]
 *   opts.json      a value sent as JSON (content-type application/json)
 *   opts.body      a raw body (string)
 *   opts.contentType  content-type of a raw body (when absent, fetch labels
 *                  a string body text/plain;charset=UTF-8)
 *   opts.token     bearer token (TOKEN when absent; null for none)
 *   opts.headers   extra headers
 */
export function restClient(w, doc) {
  async function request(method, template, params = {}, opts = {}) {
    const headers = { ...(opts.headers ?? {}) };
    const token = opts.token === undefined ? TOKEN : opts.token;
    if (token !== null) headers.authorization = `Bearer ${token}`;
    let body;
    if (opts.json !== undefined) {
      body = JSON.stringify(opts.json);
      headers["content-type"] ??= "application/json";
    } else if (opts.body !== undefined) {
      body = opts.body;
      if (opts.contentType) headers["content-type"] = opts.contentType;
    }
    const url = fillPath(template, params) + queryString(opts.query);
    const res = await w.fetch(url, { method, headers, body });
    const text = await res.text();
    const contentType = res.headers.get("content-type") ?? undefined;
    let parsed = text;
    if (contentType && /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i.test(contentType)) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    // Throws with every mismatch when the response does not fit the document.
    validateResponse(doc, method, template, res.status, text === "" ? undefined : text, text === "" ? undefined : contentType);
    exercised.add(`${method.toUpperCase()} ${template}`);
    return { status: res.status, body: parsed, text, contentType, headers: res.headers, url };
  }
  return {
    request,
    get: (template, params, opts) => request("GET", template, params, opts),
    del: (template, params, opts) => request("DELETE", template, params, opts),
    post: (template, params, json, opts = {}) =>
      request("POST", template, params, json === undefined ? opts : { ...opts, json }),
    patch: (template, params, json, opts = {}) => request("PATCH", template, params, { ...opts, json }),
  };
}

/** Fetches GET /openapi.json (validated against itself) and returns it. */
export async function loadDocument(w) {
  const res = await w.fetch("/openapi.json");
  assert.equal(res.status, 200, "GET /openapi.json");
  const doc = await res.json();
  validateResponse(doc, "GET", T.openapi, res.status, doc);
  exercised.add(`GET ${T.openapi}`);
  return doc;
}

/** "METHOD template" of every operation the document describes. */
export function documentedOperations(doc) {
  const out = [];
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const method of Object.keys(item)) {
      if (["get", "put", "post", "delete", "patch", "head", "options", "trace"].includes(method)) {
        out.push(`${method.toUpperCase()} ${path}`);
      }
    }
  }
  return out;
}

/** Documented operations no test has exercised (in this process). */
export function unexercised(doc) {
  return documentedOperations(doc).filter((op) => !exercised.has(op));
}

// ---------------------------------------------------------------------------
// Envelopes and errors

/** Asserts a success envelope and returns its `result`. */
export function ok(r, status = 200) {
  assert.equal(r.status, status, `expected ${status}, got ${r.status}: ${r.text.slice(0, 300)}`);
  assert.equal(r.body.success, true, r.text.slice(0, 300));
  assert.deepEqual(r.body.errors, []);
  return r.body.result;
}

/**
 * Asserts the error envelope `{success:false, errors:[{code,message}],
 * messages: [], result: null}` with `status` and `code`.
 */
export function fails(r, status, code) {
  const where = `${r.url} -> ${r.status} ${r.text.slice(0, 300)}`;
  if (typeof status === "function") assert.ok(status(r.status), `unexpected status: ${where}`);
  else assert.equal(r.status, status, `status: ${where}`);
  assert.equal(typeof r.body, "object", `not a JSON envelope: ${where}`);
  assert.equal(r.body.success, false, where);
  assert.equal(r.body.result, null, where);
  assert.ok(Array.isArray(r.body.errors) && r.body.errors.length >= 1, where);
  for (const e of r.body.errors) {
    assert.equal(typeof e.code, "number", where);
    assert.equal(typeof e.message, "string", where);
    assert.ok(e.message.length > 0, where);
  }
  if (code !== undefined) assert.equal(r.body.errors[0].code, code, `code: ${where}`);
  return r.body.errors[0];
}

export const is4xx = (s) => s >= 400 && s < 500;

/** Error codes of the document (ApiError). */
export const CODE = Object.freeze({
  invalid: 10001,
  unauthenticated: 10002,
  forbidden: 10003,
  notFound: 10004,
  conflict: 10005,
  tooLarge: 10006,
  methodNotAllowed: 10007,
  alreadyExists: 10008,
  unsupportedMediaType: 10009,
  notAcceptable: 10013,
  busy: 10014,
  timeout: 10015,
});

/** The numeric code at the end of an RPC error message: "... (10001)". */
export function rpcCode(err) {
  const m = /\((\d{5})\)\s*$/.exec(String(err?.message ?? ""));
  return m ? Number(m[1]) : undefined;
}

/** Runs an RPC call expected to fail; returns the error. */
export async function rpcRejects(promise) {
  try {
    const v = await promise;
    assert.fail(`expected the RPC call to fail, it returned ${JSON.stringify(v)?.slice(0, 200)}`);
  } catch (e) {
    if (e?.code === "ERR_ASSERTION") throw e;
    return e;
  }
}

// ---------------------------------------------------------------------------
// RPC results against the document

/** The REST operation each RPC method mirrors. */
export const RPC_OPERATIONS = Object.freeze({
  ingest: ["POST", T.ingest],
  remember: ["POST", T.remember],
  recall: ["POST", T.recall],
  list: ["GET", T.memories],
  get: ["GET", T.memory],
  forget: ["POST", T.forget],
  delete: ["DELETE", T.memory],
  deleteSession: ["DELETE", T.session],
  getSummary: ["GET", T.summary],
  export: ["GET", T.export],
  import: ["POST", T.import],
  stats: ["GET", T.stats],
  deleteProfile: ["DELETE", T.profile],
  restoreProfile: ["POST", T.restore],
});

function follow(doc, node) {
  while (node && typeof node === "object" && typeof node.$ref === "string") node = resolveRef(doc, node.$ref);
  return node;
}

/**
 * The schema of `result` in the 200 response of (method, template): the
 * envelope's `result` property, or, for a response that is not enveloped
 * (the NDJSON export), the body's schema.
 */
export function resultSchema(doc, method, template) {
  const op = doc.paths?.[template]?.[method.toLowerCase()];
  assert.ok(op, `the document has no ${method} ${template}`);
  // A success is 200; a namespace created is 201.
  const response = follow(doc, op.responses?.["200"] ?? op.responses?.["201"]);
  assert.ok(response?.content, `${method} ${template} documents no 200 (or 201) body`);
  const json = response.content["application/json"];
  if (json) {
    const envelope = follow(doc, json.schema);
    const result = envelope?.properties?.result;
    assert.ok(result, `${method} ${template}: the 200 envelope has no result property`);
    return result;
  }
  const [first] = Object.values(response.content);
  return first.schema;
}

/** The `result` schema of the REST operation RPC method `op` mirrors. */
export function rpcResultSchema(doc, op) {
  const target = RPC_OPERATIONS[op];
  assert.ok(target, `no REST operation is known for RPC ${op}`);
  return resultSchema(doc, ...target);
}

/**
 * RPC methods the published interface types as `void`: they resolve to
 * undefined, which the consumer's JSON hop turns into null (REST under
 * /accounts/... still answers their full reports).
 */
export const RPC_VOID = Object.freeze(new Set(["ingest", "deleteSession", "deleteProfile"]));

/**
 * Asserts an RPC result fits the document's schema for it (null for a
 * `void` method); returns it.
 */
export function checkRpcResult(doc, op, value) {
  if (RPC_VOID.has(op)) {
    assert.equal(value, null, `RPC ${op} resolves to undefined (null after the consumer's JSON hop), got ${JSON.stringify(value)?.slice(0, 200)}`);
    return value;
  }
  const errors = validate(doc, rpcResultSchema(doc, op), value);
  assert.deepEqual(errors, [], `RPC ${op} result does not fit the document:\n  ${errors.join("\n  ")}`);
  return value;
}

// ---------------------------------------------------------------------------
// Data

/** A short conversation the rule-based extractor turns into memories. */
export const CONVERSATION = Object.freeze([
  { role: "user", content: "I moved to Berlin last year and I prefer pnpm over npm for all my projects." },
  { role: "assistant", content: "Got it: you live in Berlin and you prefer pnpm." },
  { role: "user", content: "My daughter Alice starts school on 2026-09-01." },
]);

/** A message content of `kb` KiB (over the 32 KiB limit at 40). */
export const bigContent = (kb = 40) => "word ".repeat(Math.ceil((kb * 1024) / 5)).slice(0, kb * 1024);

/**
 * Names that must be refused as profile and namespace names (a profile
 * name may be up to 100 characters, a namespace name up to 32: see
 * BAD_NAMESPACE_NAMES).
 */
export const BAD_NAMES = Object.freeze({
  "dot-dot": "..",
  "encoded slash": "a%2Fb",
  "101 characters": "x".repeat(101),
  "fullwidth look-alike": "ｐrofile",
  "cyrillic look-alike": "рrofile", // U+0440
  "space": "a%20b",
  "bang": "bad!name",
});

/** Names that are good profile names but must be refused as namespace names. */
export const BAD_NAMESPACE_NAMES = Object.freeze({
  "33 characters": "x".repeat(33),
  "100 characters": "x".repeat(100),
});

/** Counters of stats that any stored record would move. */
export function counts(stats) {
  const { messages, sessions, memories, byType, byStatus } = stats;
  return { messages, sessions, memories, byType, byStatus };
}

/** The lines of an NDJSON export minus its header line. */
export function exportRecords(ndjson) {
  const lines = ndjson.split("\n").filter((l) => l.trim() !== "");
  const header = JSON.parse(lines[0]);
  assert.equal(header.kind, "header");
  return lines.slice(1);
}

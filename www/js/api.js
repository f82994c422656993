// The REST client: one function per route of a profile, all through
// `request`, which adds the bearer token and unwraps the envelope
// `{ success, errors: [{code, message}], messages, result, result_info? }`.
// Every failure becomes an ApiError, so the views show one kind of error.

/** A failed call: HTTP status (0 when the service could not be reached),
 *  the envelope's errors, and a one-line message for people. */
export class ApiError extends Error {
  constructor(status, errors, fallback) {
    const list = Array.isArray(errors) && errors.length ? errors : [{ code: 0, message: fallback }];
    super(list.map((e) => e.message).join("; "));
    this.name = "ApiError";
    this.status = status;
    this.errors = list;
  }

  /** 401 or 403: the token is wrong or may not touch this namespace. */
  get isAuth() {
    return this.status === 401 || this.status === 403;
  }

  get code() {
    return this.errors[0]?.code ?? 0;
  }
}

const enc = encodeURIComponent;

/** A client bound to one account/namespace/profile and one token. */
export class Client {
  constructor({ token, account = "local", namespace, profile, origin = "" }) {
    this.token = token;
    this.account = account;
    this.namespace = namespace;
    this.profile = profile;
    this.origin = origin;
  }

  /** The account's routes (its namespaces). */
  get accountBase() {
    return `${this.origin}/accounts/${enc(this.account)}/agent-memory`;
  }

  /** The namespace's routes. */
  get namespaceBase() {
    return `${this.accountBase}/namespaces/${enc(this.namespace)}`;
  }

  /** The profile's routes. */
  get base() {
    return `${this.namespaceBase}/profiles/${enc(this.profile)}`;
  }

  /** Sends a request to `path` under the profile's routes (or `at`);
   *  returns the raw Response for non-JSON successes (`raw: true`),
   *  otherwise `{ result, messages, resultInfo }`. */
  async request(method, path, { query, json, body, contentType, raw = false, at = this.base } = {}) {
    let url = at + path;
    if (query) {
      const qs = new URLSearchParams();
      for (const [k, v] of Object.entries(query)) {
        if (v !== undefined && v !== null && v !== "") qs.set(k, String(v));
      }
      const s = qs.toString();
      if (s) url += `?${s}`;
    }
    const headers = { Authorization: `Bearer ${this.token}`, Accept: raw ? "application/x-ndjson, application/json" : "application/json" };
    if (json !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(json);
    } else if (contentType) {
      headers["Content-Type"] = contentType;
    }
    let res;
    try {
      res = await fetch(url, { method, headers, body, cache: "no-store", credentials: "omit" });
    } catch (e) {
      throw new ApiError(0, null, `Could not reach the memory service (${e.message || e}).`);
    }
    const type = res.headers.get("content-type") || "";
    if (raw && res.ok && !type.includes("application/json")) return res;
    let env = null;
    const text = await res.text();
    try {
      env = text ? JSON.parse(text) : null;
    } catch {
      env = null;
    }
    if (!res.ok || !env || env.success === false) {
      const fallback = env ? `HTTP ${res.status} ${res.statusText}`.trim() : `HTTP ${res.status}: the service answered with something that is not JSON.`;
      throw new ApiError(res.status, env?.errors, fallback);
    }
    if (raw) {
      // A JSON success where a file was expected: hand the text back.
      return new Response(text, { status: res.status, headers: res.headers });
    }
    return { result: env.result, messages: env.messages || [], resultInfo: env.result_info || null };
  }

  stats() {
    return this.request("GET", "/stats");
  }

  /** The namespaces the token may touch, by name, `limit` at a time:
   *  `result` is `[{ id, name, created_at, updated_at }]`. */
  namespaces({ limit, cursor } = {}) {
    return this.request("GET", "/namespaces", { query: { per_page: limit, cursor }, at: this.accountBase });
  }

  /** The namespace's profiles by name, `limit` at a time: `result` is
   *  `[{ name, createdAt }]`. */
  profiles({ limit, cursor } = {}) {
    return this.request("GET", "/profiles", { query: { per_page: limit, cursor }, at: this.namespaceBase });
  }

  /** `filter` is the JSON text of a filter, sent as it was typed (the
   *  service says what is wrong with it). */
  list({ limit, cursor, type, status, sessionId, filter } = {}) {
    return this.request("GET", "/memories", { query: { limit, cursor, type, status, sessionId, filter } });
  }

  get(id) {
    return this.request("GET", `/memories/${enc(id)}`);
  }

  forget(id) {
    return this.request("POST", `/memories/${enc(id)}/forget`);
  }

  remove(id) {
    return this.request("DELETE", `/memories/${enc(id)}`);
  }

  /** Replaces the memory's metadata; returns the memory. */
  updateMetadata(id, metadata) {
    return this.request("PATCH", `/memories/${enc(id)}`, { json: { metadata } });
  }

  /** Consolidates the profile; with `dryRun`, reports what it would do. */
  consolidate({ dryRun = false } = {}) {
    return this.request("POST", "/consolidate", { json: dryRun ? { dryRun: true } : {} });
  }

  undoConsolidation(id) {
    return this.request("POST", `/consolidations/${enc(String(id))}/undo`);
  }

  recall({ query, referenceDate, limit, responseLength }) {
    const json = { query, explain: true };
    if (referenceDate) json.referenceDate = referenceDate;
    if (limit) json.limit = limit;
    if (responseLength) json.responseLength = responseLength;
    return this.request("POST", "/recall", { json });
  }

  ingest(messages, sessionId) {
    const json = { messages };
    if (sessionId) json.sessionId = sessionId;
    return this.request("POST", "/ingest", { json });
  }

  remember(content, sessionId) {
    const json = { content };
    if (sessionId) json.sessionId = sessionId;
    return this.request("POST", "/remember", { json });
  }

  exportFile() {
    return this.request("GET", "/export", { raw: true });
  }

  importFile(blob) {
    return this.request("POST", "/import", { body: blob, contentType: "application/x-ndjson" });
  }
}

/** What each HTTP status means, in a few words. */
const STATUS_LABEL = {
  400: "Invalid request",
  404: "Not found",
  405: "Not allowed",
  409: "Conflict",
  413: "Too large",
  500: "Storage error",
  502: "Model provider error",
  503: "Service not configured",
};

/** A sentence for people about an error, naming what to do for the common ones. */
export function describeError(err) {
  if (!(err instanceof ApiError)) return String(err?.message || err);
  if (err.status === 401) return `The token was refused (401): ${err.message}. Check the token and connect again.`;
  if (err.status === 403) return `This token may not use that namespace (403): ${err.message}.`;
  if (err.status === 0) return err.message;
  const label = STATUS_LABEL[err.status] || (err.status >= 500 ? "Server error" : "Request failed");
  return `${label} (${err.status}): ${err.message}`;
}

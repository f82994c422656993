// Module entry of the Worker (wrangler.toml `main`). Thin by design: no
// logic, validation or defaults live here.
//
// - ProfileObject, CatalogObject: the Rust Durable Object classes,
//   re-exported as built by worker-build into build/index.js.
// - default export: HTTP goes to the Rust `#[event(fetch)]` handler.
// - MemoryService: the named entrypoint other Workers bind to
//   ([[services]] entrypoint = "MemoryService"). getProfile(name) returns
//   an RpcTarget whose methods, like deleteProfile, forward to the Rust
//   export `rpc(env, profile, op, args, namespace)`. Positional arguments
//   are packed into the same argument object the REST route would send.
//   A consumer's binding may carry `props = { namespace = "..." }`: its
//   profiles are then that namespace's, as Cloudflare's
//   `[[agent_memory]] namespace = "..."` scopes its binding.
//
// What the published interface types as `void` resolves to `undefined`,
// and a memory's `createdAt`/`updatedAt` arrive as `Date` objects, as the
// managed binding returns them: Date is the one conversion that needs JS,
// so it happens here and nowhere else.
import { WorkerEntrypoint, RpcTarget } from "cloudflare:workers";
import RustWorker, { ProfileObject, CatalogObject } from "../build/index.js";

export { ProfileObject, CatalogObject };

// Calls go through an instance of worker-build's generated entrypoint, whose
// proxy reinitialises the Wasm instance after a panic.
const rust = (ctx, env) => new RustWorker(ctx, env);

// A Rust panic aborts the Wasm instance inside a microtask: the promise of
// the async export never settles, so an RPC caller would wait forever.
// Reject the calls in flight when the runtime reports the trap.
const inFlight = new Set();
addEventListener("error", (event) => {
  if (event.error instanceof WebAssembly.RuntimeError) {
    for (const reject of inFlight) reject(new Error("internal error: the outcome of this call is unknown"));
    inFlight.clear();
  }
});
function guarded(promise) {
  return new Promise((resolve, reject) => {
    inFlight.add(reject);
    Promise.resolve(promise)
      .then(resolve, reject)
      .finally(() => inFlight.delete(reject));
  });
}

// What a caller gets when the Rust side trapped or threw past its own
// error handling: the REST envelope with a generic message (no stack, no
// file path), status 500. After it the outcome of the call is unknown
// (README: "After a 500").
const INTERNAL_ERROR = JSON.stringify({
  success: false,
  errors: [{ code: 10010, message: "internal error: the outcome of this call is unknown; retrying it is safe" }],
  messages: [],
  result: null,
});
const internalError = () =>
  new Response(INTERNAL_ERROR, { status: 500, headers: { "content-type": "application/json" } });

export default class extends WorkerEntrypoint {
  fetch(request) {
    return guarded(rust(this.ctx, this.env).fetch(request)).catch(internalError);
  }
}

export class MemoryService extends WorkerEntrypoint {
  // The consumer binding's `props.namespace` (undefined without props).
  get #namespace() {
    return this.ctx.props?.namespace;
  }
  getProfile(name) {
    takes("getProfile", arguments);
    return new Profile(rust(this.ctx, this.env), this.env, name, this.#namespace);
  }
  async deleteProfile(name) {
    takes("deleteProfile", arguments);
    await guarded(rust(this.ctx, this.env).rpc(this.env, name, "deleteProfile", null, this.#namespace));
  }
  async restoreProfile(name) {
    takes("restoreProfile", arguments);
    return guarded(rust(this.ctx, this.env).rpc(this.env, name, "restoreProfile", null, this.#namespace));
  }
}

// A Date a caller passes (a message's `timestamp`, `referenceDate`, `asOf`), as
// Cloudflare's binding takes them, crosses into Rust as its ISO-8601 text:
// the one conversion that needs JS. An invalid Date crosses as its text
// ("Invalid Date"), which the service refuses as it refuses any bad date.
const iso = (v) => (v instanceof Date ? (Number.isNaN(v.getTime()) ? String(v) : v.toISOString()) : v);
const withIsoTimestamps = (messages) =>
  Array.isArray(messages) ? messages.map((m) => (m && m.timestamp instanceof Date ? { ...m, timestamp: iso(m.timestamp) } : m)) : messages;

// A record's `createdAt`/`updatedAt` (and those of the memories and
// messages it holds) as Date objects; everything else as it came.
const DATE_KEYS = new Set(["createdAt", "updatedAt"]);
function withDates(v) {
  if (Array.isArray(v)) return v.map(withDates);
  if (!v || typeof v !== "object") return v;
  for (const [k, x] of Object.entries(v)) {
    if (DATE_KEYS.has(k) && typeof x === "string") v[k] = new Date(x);
    else if (x && typeof x === "object") v[k] = withDates(x);
  }
  return v;
}
// `ingest` accepts any iterable of messages, as the published type says.
const messageList = (messages) =>
  messages != null && typeof messages !== "string" && typeof messages[Symbol.iterator] === "function" ? Array.from(messages) : messages;

// Bad arguments refused here get the service's own error: what Rust's
// refusals look like to an RPC caller.
function invalid(message) {
  return Object.assign(new Error(`${message} (10001)`), { name: "MemoryError", code: 10001, status: 400 });
}
// The parameters of every method a caller can reach. A call with more
// arguments than its method takes is refused: JavaScript would ignore the
// extra ones, and an option passed as a third argument (or a second to
// deleteSession) would be silently dropped. The count is the caller's
// (Workers RPC keeps it, trailing `undefined`s included), and an explicit
// `undefined` beyond the parameters is refused too: within them an
// `undefined` is an omitted optional argument, as in JavaScript, but a
// call site that passes one argument too many is wrong whatever the
// argument holds today, and would otherwise pass or fail with its value.
const PARAMETERS = {
  getProfile: ["name"],
  deleteProfile: ["name"],
  restoreProfile: ["name"],
  ingest: ["messages", "options"],
  remember: ["memory"],
  recall: ["query", "options"],
  list: ["options"],
  get: ["id"],
  forget: ["id"],
  delete: ["id"],
  deleteSession: ["sessionId"],
  getSummary: ["options"],
  export: ["options"],
  import: ["data"],
  stats: [],
  update: ["id", "metadata"],
  consolidate: ["options"],
  undoConsolidation: ["id"],
};
function takes(method, args) {
  const params = PARAMETERS[method];
  if (args.length > params.length) {
    const n = params.length;
    throw invalid(`${method}(${params.join(", ")}) takes ${n === 0 ? "no arguments" : n === 1 ? "1 argument" : `at most ${n} arguments`}, was given ${args.length}`);
  }
}
// JSON has no NaN or Infinity: on their way to Rust they would turn into
// null, an option "not given" (a ttlSeconds of NaN would never expire).
function finiteOnly(v, path) {
  if (typeof v === "number" && !Number.isFinite(v)) throw invalid(`${path} is ${v}: numbers must be finite`);
  if (v !== null && typeof v === "object" && !(v instanceof Date)) {
    for (const [k, x] of Object.entries(v)) finiteOnly(x, `${path}.${k}`);
  }
}
// An options argument: absent, or a plain object. A number or a boolean
// spread into `{}` would be an option silently dropped; a key that the
// positional arguments fill would be silently overwritten.
function options(o, method, positional = []) {
  if (o === undefined || o === null) return {};
  if (typeof o !== "object" || Array.isArray(o) || o instanceof Date) throw invalid(`${method}: options must be an object`);
  for (const k of positional) {
    if (Object.hasOwn(o, k)) throw invalid(`${method}: ${k} is given as an argument, not as an option`);
  }
  return o;
}

class Profile extends RpcTarget {
  #rust;
  #env;
  #name;
  #namespace;
  constructor(rustWorker, env, name, namespace) {
    super();
    this.#rust = rustWorker;
    this.#env = env;
    this.#name = name;
    this.#namespace = namespace;
  }
  #call(op, args) {
    try {
      finiteOnly(args, op);
    } catch (e) {
      return Promise.reject(e);
    }
    return guarded(this.#rust.rpc(this.#env, this.#name, op, args, this.#namespace));
  }
  async ingest(messages, opts) {
    takes("ingest", arguments);
    await this.#call("ingest", { ...options(opts, "ingest", ["messages"]), messages: withIsoTimestamps(messageList(messages)) });
  }
  async remember(request) { takes("remember", arguments); return withDates(await this.#call("remember", request)); }
  async recall(query, opts) {
    takes("recall", arguments);
    const args = { ...options(opts, "recall", ["query"]), query };
    if (args.referenceDate instanceof Date) args.referenceDate = iso(args.referenceDate);
    if (args.asOf instanceof Date) args.asOf = iso(args.asOf);
    return this.#call("recall", args);
  }
  async list(opts) {
    takes("list", arguments);
    const args = { ...options(opts, "list") };
    if (args.asOf instanceof Date) args.asOf = iso(args.asOf);
    return withDates(await this.#call("list", args));
  }
  async get(id) { takes("get", arguments); return withDates(await this.#call("get", { id })); }
  async forget(id) { takes("forget", arguments); return withDates(await this.#call("forget", { id })); }
  async delete(id) { takes("delete", arguments); return withDates(await this.#call("delete", { id })); }
  async deleteSession(sessionId) { takes("deleteSession", arguments); await this.#call("deleteSession", { sessionId }); }
  async getSummary(opts) { takes("getSummary", arguments); return this.#call("getSummary", { ...options(opts, "getSummary") }); }
  async export(opts) { takes("export", arguments); return this.#call("export", { ...options(opts, "export") }); }
  async import(data) { takes("import", arguments); return this.#call("import", { data }); }
  async stats() { takes("stats", arguments); return this.#call("stats", null); }
  async update(id, metadata) { takes("update", arguments); return withDates(await this.#call("update", { id, metadata })); }
  async consolidate(opts) { takes("consolidate", arguments); return this.#call("consolidate", { ...options(opts, "consolidate") }); }
  async undoConsolidation(id) { takes("undoConsolidation", arguments); return this.#call("undoConsolidation", { id }); }
}

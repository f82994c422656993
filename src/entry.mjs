// Module entry of the Worker (wrangler.toml `main`). Thin by design: no
// logic or defaults live here, and no rule of the service's. What it
// refuses is only what Rust could not see once the arguments crossed into
// it: an argument beyond a method's parameters (`takes`), a value JSON
// cannot hold, a string that is not well-formed or a value nested too
// deeply to read (`jsonOnly`), options, a
// memory or a message that is not a plain object.
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
// The caller learns nothing of the fault; the Worker's log records it.
const internalError = (e) => {
  console.error("internal error:", e);
  return new Response(INTERNAL_ERROR, { status: 500, headers: { "content-type": "application/json" } });
};

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
    // A name no profile may have rejects here, as the published types say
    // ("validated against naming rules"), not at the profile's first call.
    profileName(name);
    const worker = rust(this.ctx, this.env);
    worker.checkProfileName(name, this.#namespace);
    return new Profile(worker, this.env, name, this.#namespace);
  }
  async deleteProfile(name) {
    takes("deleteProfile", arguments);
    profileName(name);
    // getProfile "creates" a profile: one only read is deleted as it
    // stands (the HTTP route answers 404 for it, as its reference lists).
    await guarded(rust(this.ctx, this.env).rpc(this.env, name, "deleteProfile", { neverWrittenOk: true }, this.#namespace));
  }
  async restoreProfile(name) {
    takes("restoreProfile", arguments);
    profileName(name);
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

// Strings must be well-formed UTF-16: on their way to Rust a lone
// surrogate would become U+FFFD, as REST and MCP refuse it.
const wellFormed =
  typeof String.prototype.isWellFormed === "function" ? (s) => s.isWellFormed() : (s) => !/\p{Surrogate}/u.test(s);
function loneSurrogate(s) {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
    else if (c >= 0xd800 && c <= 0xdfff) return `U+${c.toString(16).toUpperCase()} at index ${i}`;
  }
}
function notWellFormed(s, what) {
  return invalid(`${what} holds a lone surrogate (${loneSurrogate(s)}): strings must be well-formed Unicode`);
}
// A key in a path: as it is when it reads as a name, else as JSON (which
// escapes a lone surrogate, so the message itself stays well-formed).
const key = (k) => (/^[A-Za-z_$][\w$]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`);

// What crosses into Rust is JSON data, and only that: serde_wasm_bindgen
// would otherwise turn what JSON cannot hold into something else, silently.
// Refused, naming where:
// - a string that is not well-formed (a lone surrogate: U+FFFD in Rust);
// - a number that is NaN or ±Infinity (null in JSON: an option "not
//   given", a ttlSeconds of NaN would never expire);
// - a BigInt (a number in Rust, rounded on the way back);
// - a function (an RPC stub by the time it arrives) or a symbol;
// - an object that is not a plain object or an array: a Map (read as an
//   object), a Date left where no date is taken, a Boolean/Number/String
//   wrapper, an Error, a RegExp, a DataView (all `{}`), a typed array or
//   ArrayBuffer (bytes), a Set;
// - an array with a hole, an `undefined` element (null in Rust) or a
//   property besides its elements (dropped);
// - a value nested deeper than the service reads JSON (`MAX_DEPTH`): the
//   walk stops there, so neither it nor serde_wasm_bindgen's in Rust
//   overflows the stack (a RangeError, or a trap) on a deeper one.
// An `undefined` property of an object is passed on as null, which the
// service reads as "not given" where a field is optional and refuses
// elsewhere. The Dates the service takes (a message's timestamp,
// referenceDate, asOf) are ISO text by the time this runs. Symbol-keyed
// and non-enumerable properties never cross the binding (Workers RPC
// leaves them behind in the caller), so they cannot be seen here.
// It returns the length of the JSON text the arguments make, in UTF-8
// bytes with JSON.stringify's escapes, without making it (a copy of a
// 16 MB ingest in the JS heap):
// the room Rust takes in the isolate's working set before it reads them
// into the Wasm memory, as it does for a REST body's declared length.
// The levels of arrays and objects the arguments may nest, the arguments'
// own object the first: the service reads a call as the JSON text
// {"name", "op", "args"} with serde_json, whose limit of 128 admits 127
// levels, one of them the call's own. Deeper is refused here, as REST
// refuses a body nested too deeply, before anything is written.
const MAX_DEPTH = 126;
// A path that deep, cut to its start and end (whole characters): it
// could otherwise be 126 keys long.
function shortPath(path) {
  const chars = Array.from(path);
  return chars.length <= 160 ? path : `${chars.slice(0, 100).join("")}…${chars.slice(-50).join("")}`;
}
// Text JSON.stringify writes as it is, one byte a unit.
const PLAIN_ASCII = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;
// The UTF-8 bytes of a well-formed string as JSON.stringify writes it,
// quotes included: `"` and `\` are escaped in two bytes, a control
// character in two (\b \t \n \f \r) or six (\u00XX); other text takes
// its UTF-8 length (two or three bytes a unit, four a surrogate pair).
function jsonStringBytes(s) {
  let n = s.length + 2;
  if (PLAIN_ASCII.test(s)) return n;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20) n += c === 8 || c === 9 || c === 10 || c === 12 || c === 13 ? 1 : 5;
    else if (c === 0x22 || c === 0x5c) n += 1;
    else if (c >= 0x80) n += c < 0x800 || (c >= 0xd800 && c <= 0xdfff) ? 1 : 2;
  }
  return n;
}
function jsonOnly(v, path, budget, depth = 0) {
  budget.charge(budget.costs.value);
  switch (typeof v) {
    case "string":
      if (!wellFormed(v)) throw notWellFormed(v, path);
      return budget.spend(jsonStringBytes(v));
    case "number":
      if (!Number.isFinite(v)) throw invalid(`${path} is ${v}: numbers must be finite`);
      return budget.spend(String(v).length);
    case "bigint":
      throw invalid(`${path} is a BigInt (${v}n): numbers must be JavaScript numbers`);
    case "function":
      throw invalid(`${path} is a function: only JSON data is taken`);
    case "symbol":
      throw invalid(`${path} is a symbol: only JSON data is taken`);
    case "object":
      break;
    default:
      return 5; // boolean, undefined (null)
  }
  if (v === null) return 4;
  if (++depth > MAX_DEPTH) throw invalid(`${shortPath(path)} is nested more than ${MAX_DEPTH} levels deep: the arguments nest at most ${MAX_DEPTH} levels of arrays and objects`);
  let size = 2;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      if (!Object.hasOwn(v, i)) throw invalid(`${path}[${i}] is a hole: an array must hold a value at every index`);
      if (v[i] === undefined) throw invalid(`${path}[${i}] is undefined: an array must hold a value at every index`);
      size += jsonOnly(v[i], `${path}[${i}]`, budget, depth) + 1;
    }
    const keys = Object.keys(v);
    if (keys.length !== v.length) {
      const extra = keys.find((k) => !(String(Number(k)) === k && Number(k) < v.length)) ?? "";
      throw invalid(`${path} has a property ${JSON.stringify(extra)} besides its elements`);
    }
    return size;
  }
  const proto = Object.getPrototypeOf(v);
  if (proto !== Object.prototype && proto !== null) {
    const type = Object.prototype.toString.call(v).slice(8, -1);
    throw invalid(`${path} is ${/^[AEIO]/.test(type) ? "an" : "a"} ${type}: only JSON data (plain objects, arrays, strings, finite numbers, booleans, null) is taken`);
  }
  budget.charge(budget.costs.object);
  for (const k of Object.keys(v)) {
    if (!wellFormed(k)) throw notWellFormed(k, `a key of ${path}`);
    budget.charge(budget.costs.member);
    size += budget.spend(jsonStringBytes(k)) + 2 + jsonOnly(v[k], `${path}${key(k)}`, budget, depth);
  }
  return size;
}
// What the walk may still read, as Rust's parse_strict reads a REST body:
// `bytes` of JSON text (strings and numbers), and `tree`, what the values
// would take as serde_json's tree (`costs` a value, an object, a member).
// Workers RPC keeps shared references, so an object referenced twice
// crosses once yet is read (here, and by serde_wasm_bindgen into the Wasm
// memory) as often as it is referenced: {l: v, r: v} nested forty times
// is a few hundred bytes on the wire and 2^40 values read. The walk stops
// as soon as either runs out, refused as too large (10006), as REST
// refuses a body over its limit.
function rpcBudget([bytes, tree, value, object, member]) {
  return {
    bytes,
    tree,
    costs: { value, object, member },
    limits: { bytes, tree },
    // `n` bytes of JSON text; returns them.
    spend(n) {
      if ((this.bytes -= n) < 0) throw overBudget(this, "bytes");
      return n;
    },
    // `n` bytes of tree.
    charge(n) {
      if ((this.tree -= n) < 0) throw overBudget(this, "tree");
    },
  };
}
// An import's file over the import route's limit (`max` bytes of UTF-8),
// refused as REST refuses its body, before it is copied into the Wasm
// memory (the walk's budget is a body's 17 MiB, of JSON text).
function importFits(data, max) {
  if (typeof data !== "string") return;
  let n = 0;
  for (let i = 0; i < data.length && n <= max; i++) {
    const c = data.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < data.length) (n += 4), i++;
    else n += 3;
  }
  if (n > max) {
    throw Object.assign(new Error(`the import's file is over ${max} bytes (10006)`), { name: "MemoryError", code: 10006, status: 413 });
  }
}
function overBudget(budget, what) {
  const { bytes, tree } = budget.limits;
  const { value, object } = budget.costs;
  const message =
    what === "tree"
      ? `the arguments hold too many values: as read, they would take more than ${tree} bytes (${value} a value, ${object} more an object; an object referenced in several places counts each time)`
      : `the arguments are over ${bytes} bytes as JSON (an object referenced in several places counts each time)`;
  return Object.assign(new Error(`${message} (10006)`), { name: "MemoryError", code: 10006, status: 413 });
}
// A profile name a caller gives: any value Rust refuses as it is, but a
// string that is not well-formed would reach it as U+FFFD.
function profileName(name) {
  if (typeof name === "string" && !wellFormed(name)) throw notWellFormed(name, "the profile name");
}
// A plain object, where the published interface takes one (remember's
// memory, a message, update's metadata): a Map, an array or a class
// instance would be read as something else.
const isPlain = (o) => o !== null && typeof o === "object" && !Array.isArray(o) && [Object.prototype, null].includes(Object.getPrototypeOf(o));
// An options argument: absent, or a plain object. A number or a boolean
// spread into `{}` would be an option silently dropped; a key that the
// positional arguments fill would be silently overwritten. A Map (or any
// object not plain) spread into `{}` would lose every entry.
function options(o, method, positional = []) {
  if (o === undefined || o === null) return {};
  if (!isPlain(o)) throw invalid(`${method}: options must be an object`);
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
    let size;
    try {
      profileName(this.#name);
      size = jsonOnly(args, op, rpcBudget(this.#rust.rpcLimits()));
    } catch (e) {
      return Promise.reject(e);
    }
    return guarded(this.#rust.rpc(this.#env, this.#name, op, args, this.#namespace, size));
  }
  async ingest(messages, opts) {
    takes("ingest", arguments);
    const list = messageList(messages);
    // Each message an object: Rust would read an array as its fields in
    // order (["user", "hi"] as {role, content}).
    if (Array.isArray(list)) {
      list.forEach((m, i) => {
        if (!isPlain(m)) throw invalid(`ingest.messages[${i}] must be an object {role, content, timestamp?}`);
      });
    }
    await this.#call("ingest", { ...options(opts, "ingest", ["messages"]), messages: withIsoTimestamps(list) });
  }
  async remember(memory) {
    takes("remember", arguments);
    if (!isPlain(memory)) throw invalid("remember: the memory must be an object");
    return withDates(await this.#call("remember", memory));
  }
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
  async import(data) {
    takes("import", arguments);
    importFits(data, this.#rust.rpcLimits()[5]);
    return this.#call("import", { data });
  }
  async stats() { takes("stats", arguments); return this.#call("stats", null); }
  async update(id, metadata) {
    takes("update", arguments);
    if (!isPlain(metadata)) throw invalid("update: the metadata must be an object");
    return withDates(await this.#call("update", { id, metadata }));
  }
  async consolidate(opts) { takes("consolidate", arguments); return this.#call("consolidate", { ...options(opts, "consolidate") }); }
  async undoConsolidation(id) { takes("undoConsolidation", arguments); return this.#call("undoConsolidation", { id }); }
}

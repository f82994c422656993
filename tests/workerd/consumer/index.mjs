// Test-only "consumer" Worker: holds a Service binding MEMORY to the
// agent-memory Worker's MemoryService entrypoint and exposes it over HTTP so
// Node tests can drive real Worker-to-Worker RPC.
//
//   POST /call    {"profile": "p", "op": "recall", "args": ["query", {...}]}
//        -> env.MEMORY.getProfile(profile)[op](...args)
//   POST /service {"op": "deleteProfile", "args": ["p"]}
//        -> env.MEMORY[op](...args)
// Response: 200 {"ok": true, "result": ...} or
//           500 {"ok": false, "error": {name, message, code, status}}.
// In arguments, tagged objects stand for what JSON cannot hold (see
// `revive` below): {"$date": "<ISO>"} is a Date, {"$number": "NaN"} a
// number JSON cannot hold, {"$bigint": "1"} a BigInt, {"$undefined": true}
// undefined, {"$hole": true} (in an array) a hole, {"$map": [[k, v], ...]}
// a Map, {"$set": [...]} a Set, {"$bytes": [...]} a Uint8Array,
// {"$function": true} a function, {"$error": "message"} an Error,
// {"$deep": [depth, leaf, "array"?]} `leaf` inside `depth` objects {a: …}
// (or arrays […]), built here: thousands of levels deep, more than the
// recursion of `revive` (or a long JSON body) would carry; {"$shared":
// [depth, leaf]} `leaf` under `depth` objects whose two properties are one
// object (below).
const TAGS = {
  $deep: ([depth, leaf, kind]) => {
    let v = revive(leaf);
    for (let i = 0; i < depth; i++) v = kind === "array" ? [v] : { a: v };
    return v;
  },
  // {"$shared": [depth, leaf]}: `leaf` under `depth` levels of {l: v, r: v},
  // each level's two properties one object: Workers RPC keeps shared
  // references, so it crosses in a few hundred bytes and is 2^depth
  // leaves read out.
  $shared: ([depth, leaf]) => {
    let v = revive(leaf);
    for (let i = 0; i < depth; i++) v = { l: v, r: v };
    return v;
  },
  // Dates cross the test's HTTP hop as {"$date": "<ISO>"} and go on over
  // RPC as Date objects, as a Worker calling the binding sends them.
  $date: (v) => new Date(v),
  $number: (v) => Number(v),
  $bigint: (v) => BigInt(v),
  $undefined: () => undefined,
  $map: (v) => new Map(v.map(([k, x]) => [revive(k), revive(x)])),
  $set: (v) => new Set(v.map(revive)),
  $bytes: (v) => new Uint8Array(v),
  $function: () => () => 0,
  $error: (v) => new Error(v),
};
const HOLE = Symbol("hole");
function revive(v) {
  if (Array.isArray(v)) {
    const out = new Array(v.length);
    v.forEach((x, i) => {
      const r = revive(x);
      if (r !== HOLE) out[i] = r;
    });
    return out;
  }
  if (!v || typeof v !== "object") return v;
  const keys = Object.keys(v);
  if (keys.length === 1 && keys[0] === "$hole") return HOLE;
  if (keys.length === 1 && Object.hasOwn(TAGS, keys[0])) return TAGS[keys[0]](v[keys[0]]);
  return Object.fromEntries(keys.map((k) => [k, revive(v[k])]));
}

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    try {
      const body = request.method === "POST" ? revive(JSON.parse(await request.text())) : {};
      let result;
      if (url.pathname === "/call") {
        // body.args: the method's positional arguments, as an array
        using profile = await env.MEMORY.getProfile(body.profile);
        result = await profile[body.op](...(body.args ?? []));
      } else if (url.pathname === "/service") {
        result = await env.MEMORY[body.op](...(body.args ?? []));
      } else {
        return new Response("not found", { status: 404 });
      }
      return Response.json({ ok: true, result: result ?? null });
    } catch (e) {
      const error = { name: e?.name, message: String(e?.message ?? e), code: e?.code, status: e?.status };
      return Response.json({ ok: false, error }, { status: 500 });
    }
  },
};

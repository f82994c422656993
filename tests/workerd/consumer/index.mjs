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
// In arguments, {"$date": "<ISO>"} is a Date and {"$number": "NaN"} a
// number JSON cannot hold.
export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    try {
      // Dates cross the test's HTTP hop as {"$date": "<ISO>"} and go on
      // over RPC as Date objects, as a Worker calling the binding sends them.
      // Non-finite numbers, which JSON cannot hold, as {"$number": "NaN"}.
      const revive = (_, v) =>
        v && typeof v === "object" && typeof v.$date === "string"
          ? new Date(v.$date)
          : v && typeof v === "object" && typeof v.$number === "string"
            ? Number(v.$number)
            : v;
      const body = request.method === "POST" ? JSON.parse(await request.text(), revive) : {};
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

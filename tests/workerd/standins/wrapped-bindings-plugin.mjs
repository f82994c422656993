// A Miniflare external plugin that gives the service WRAPPED bindings, as
// workerd builds the real `AI` and `VECTORIZE` bindings: a plain JavaScript
// object made inside the service's isolate by an internal module, whose
// methods (`run`, `upsert`, `query`, `deleteByIds`) forward to the stand-in
// Worker (bindings-worker.mjs) over JS RPC.
//
// Why not a plain Service binding to the stand-in entrypoint: the service
// calls the binding as wasm-bindgen does, `Reflect.get(AI, "run")` then
// `run.call(AI, ...)`; on an RPC stub `.call` is itself an RPC property, so
// a stub does not speak the binding's protocol. A wrapped binding does.
//
// Used through startWorker's `serviceOverrides.unsafeBindings` (see
// bindings.mjs): `{ name, type: "agent-memory-standin", plugin: { package:
// <this file>, name: "agent-memory-standin" }, options: { kind, worker,
// entrypoint } }`. Miniflare loads it with require.resolve(package).
export const PLUGIN_NAME = "agent-memory-standin";
const BINDING_TYPE = `unsafe:${PLUGIN_NAME}`;
const MODULE = `${PLUGIN_NAME}:wrapped-binding`;

// The internal module. `env` holds the inner bindings: `backend` (a Service
// binding to the stand-in entrypoint) and `kind` ("ai" | "vectorize").
const WRAPPED_MODULE = `
export default function makeBinding(env) {
  const backend = env.backend;
  if (env.kind === "ai") {
    return {
      async run(model, inputs, options) {
        return await backend.run(model, inputs, options);
      },
    };
  }
  if (env.kind === "vectorize") {
    return {
      async upsert(vectors) {
        return await backend.upsert(vectors);
      },
      async query(vector, options) {
        return await backend.query(vector, options);
      },
      async deleteByIds(ids) {
        return await backend.deleteByIds(ids);
      },
    };
  }
  throw new Error("unknown stand-in binding kind " + env.kind);
}
`;

function standinBindings(options) {
  return Object.entries(options.config?.env ?? {}).filter(([, b]) => b?.type === BINDING_TYPE);
}

export const plugins = {
  [PLUGIN_NAME]: {
    bindingTypeDescription: "agent-memory stand-in",
    getBindings(options) {
      return standinBindings(options).map(([name, binding]) => {
        const { kind, worker, entrypoint } = binding.dev?.options ?? {};
        return {
          name,
          wrapped: {
            moduleName: MODULE,
            innerBindings: [
              { name: "backend", service: { name: `core:user:${worker}`, entrypoint } },
              { name: "kind", json: JSON.stringify(kind) },
            ],
          },
        };
      });
    },
    getNodeBindings() {
      return {};
    },
    getServices() {
      return [];
    },
    getExtensions({ options }) {
      if (!options.some((o) => standinBindings(o).length > 0)) return [];
      return [{ modules: [{ name: MODULE, esModule: WRAPPED_MODULE, internal: true }] }];
    },
  },
};

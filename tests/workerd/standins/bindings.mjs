// Wiring for bindings-worker.mjs: the startWorker options that replace the
// service's `AI` and/or `VECTORIZE` bindings (from wrangler.toml) with
// wrapped bindings (wrapped-bindings-plugin.mjs) forwarding to the stand-in
// entrypoints, and a small client to read what the stand-ins saw and steer
// the scripted model.
//
//   const w = await startWorker({ vars, ...bindingStandins({ ai: true, vectorize: true }) });
//   const s = standinClient(w);
//   await s.control({ broken: { extraction: "garbage" } });
//   const { ai, vectorize } = await s.calls();
import path from "node:path";
import { fileURLToPath } from "node:url";
import { PLUGIN_NAME } from "./wrapped-bindings-plugin.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const PLUGIN = path.join(HERE, "wrapped-bindings-plugin.mjs");
export const STANDIN_WORKER = "binding-standins";

export function bindingStandins({ ai = true, vectorize = false } = {}) {
  const unsafeBindings = [];
  const serviceOverrides = { unsafeBindings };
  const wrapped = (name, kind, entrypoint) => ({
    name,
    type: PLUGIN_NAME,
    plugin: { package: PLUGIN, name: PLUGIN_NAME },
    options: { kind, worker: STANDIN_WORKER, entrypoint },
  });
  if (ai) {
    serviceOverrides.ai = undefined; // no remote AI binding: the stand-in is `AI`
    unsafeBindings.push(wrapped("AI", "ai", "AiStandin"));
  }
  if (vectorize) {
    serviceOverrides.vectorize = undefined;
    unsafeBindings.push(wrapped("VECTORIZE", "vectorize", "VectorizeStandin"));
  }
  return {
    serviceOverrides,
    extraWorkers: [
      {
        name: STANDIN_WORKER,
        modulesRoot: HERE,
        modules: [
          { type: "ESModule", path: path.join(HERE, "bindings-worker.mjs") },
          { type: "ESModule", path: path.join(HERE, "scripted-model.mjs") },
        ],
      },
    ],
  };
}

export function standinClient(w) {
  const call = async (pathname, init) => {
    const worker = await w.miniflare.getWorker(STANDIN_WORKER);
    const res = await worker.fetch(`http://standin${pathname}`, init);
    if (!res.ok) throw new Error(`stand-in ${pathname}: ${res.status} ${await res.text()}`);
    return res.json();
  };
  return {
    /** `{ai: [{model, inputs, options, stage?, reply?}], vectorize: [{method, args}]}` */
    calls: () => call("/calls"),
    /** Every vector the Vectorize stand-in holds: `[{id, namespace, dims, metadata}]`. */
    vectors: () => call("/vectors"),
    /** `{queue, broken, heal}` for the scripted model; `{embedError}`. */
    control: (cfg) =>
      call("/control", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(cfg) }),
  };
}

// Env of the wrangler e2e fixture (examples/wrangler-e2e/) and of the d.ts @examples
// (examples/dts/): MEMORY alone, typed by this service's declarations.
//
// Every env file declares into the one global `Env` (as `wrangler types` does), so tsc merges
// them; a member two files declare must have the same type in both. (The get-started agent is
// checked on its own: docs/examples/memory-agent/tsconfig.json, with its own Env.)
declare namespace Cloudflare {
  interface Env {
    MEMORY: import("../../../src/agent-memory").MemoryService;
  }
}
interface Env extends Cloudflare.Env {}

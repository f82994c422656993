// Env of the chat-agent example (examples/chat-agent/): its wrangler config binds AI and
// MEMORY. MEMORY is typed by this service's declarations. See memory-only.d.ts on merging.
declare namespace Cloudflare {
  interface Env {
    AI: Ai;
    MEMORY: import("../../../src/agent-memory").MemoryService;
  }
}
interface Env extends Cloudflare.Env {}

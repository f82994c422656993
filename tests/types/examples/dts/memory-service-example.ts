// Verbatim: the @example of MemoryService in src/agent-memory.d.ts. Its Env: tests/types/env/.
// Do not edit the code.

// with interface Env { MEMORY: MemoryService }
export default {
  async fetch(_request: Request, env: Env): Promise<Response> {
    const profile = env.MEMORY.getProfile("my-project");
    const { memories } = await profile.list({ status: "superseded" });
    return Response.json({ memories, stats: await profile.stats() });
  },
};

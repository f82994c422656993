// Verbatim: the @example of AgentMemoryNamespace in cloudflare/workerd types/defines/agent-memory.d.ts
// @6552d999c (section 1.1; also in src/agent-memory.d.ts). Its Env: tests/types/env/. Do not edit the code.

export default {
  async fetch(_request: Request, env: Env): Promise<Response> {
    const profile = await env.MEMORY.getProfile("wrangler-e2e");
    const summary = await profile.getSummary();
    return Response.json(summary);
  },
};

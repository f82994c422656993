// @ts-check
// Verbatim from cloudflare/workers-sdk packages/wrangler/e2e/remote-binding/workers/agent-memory.js
// @f830836 (docs/compat/published-interface.md section 4.1). Plain JavaScript, checked with checkJs;
// the one added line is the JSDoc @satisfies below, which types `_request` and `env` as a Worker's
// (the fixture's getProfile call is not awaited: RPC promise pipelining). Do not edit the code.

/** @satisfies {ExportedHandler<Env>} */
export default {
	async fetch(_request, env) {
		const profile = env.MEMORY.getProfile("wrangler-e2e");
		const summary = await profile.getSummary();
		return new Response(JSON.stringify(summary));
	},
};

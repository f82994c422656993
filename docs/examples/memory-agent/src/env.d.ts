// The bindings of wrangler.toml, as `npx wrangler types` declares them (the
// guide's "Types" step). MEMORY is a service binding to this repository's
// Worker, typed as the binding it stands in for: the published
// `AgentMemoryNamespace`, from the service's declarations.
declare namespace Cloudflare {
	interface Env {
		AI: Ai;
		MEMORY: import("../../../../src/agent-memory.d.ts").AgentMemoryNamespace;
		ChatAgent: DurableObjectNamespace<import("./server").ChatAgent>;
	}
}
interface Env extends Cloudflare.Env {}

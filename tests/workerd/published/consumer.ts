// A consumer Worker written only against the published Agent Memory types
// (tests/types/published/agent-memory.d.ts, the verbatim workerd declaration file). Its Env is
// the one `wrangler types` generates for an [[agent_memory]] binding.
// tests/workerd/published-binding.test.mjs type-checks it with tsc, strips
// the types with esbuild and runs it in workerd, bound to the service's
// MemoryService entrypoint with props = { namespace }.
//
// Every route takes a JSON body, runs one scenario step through env.MEMORY
// and answers 200 with what the Worker saw:
//   {"ok": true,  "saw": Seen}    the step resolved; Seen describes its value
//   {"ok": false, "threw": Threw} the step threw
// Seen keeps what JSON would lose: `undefined`, absent keys and Dates
// (`instanceof Date`, checked in this Worker's realm).
//
//   POST /ingest          {profile, sessionId?, messages: [{role, content, timestamp?: ISO}]}
//   POST /remember        {profile, content, sessionId?}  (no sessionId key: not passed)
//   POST /recall          {profile, query, thinkingLevel?, responseLength?, referenceDate?: ISO, referenceDateAs?: "Date"|"string"}
//   POST /list            {profile, limit?, cursor?, sessionId?, type?}   one page
//   POST /list-all        {profile, limit?, sessionId?, type?}  pages until `cursor` is absent
//   POST /get             {profile, id}
//   POST /delete          {profile, id}
//   POST /summary         {profile, sessionId?}  (no sessionId key: getSummary())
//   POST /delete-session  {profile, sessionId}
//   POST /delete-profile  {profile}
//   GET  /wrangler-e2e    the wrangler e2e fixture, verbatim in behaviour
import type {
  AgentMemoryGetSummaryOptions,
  AgentMemoryIncomingMemory,
  AgentMemoryListMemoriesOptions,
  AgentMemoryListMemoriesResult,
  AgentMemoryMemoryType,
  AgentMemoryMessage,
  AgentMemoryNamespace,
  AgentMemoryProfile,
  AgentMemoryRecallOptions,
  AgentMemoryResponseLength,
  AgentMemoryThinkingLevel,
} from "../../types/published/agent-memory";

export interface Env {
  MEMORY: AgentMemoryNamespace;
}

type Seen =
  | { kind: "undefined" }
  | { kind: "null" }
  | { kind: "string"; value: string }
  | { kind: "number"; value: number }
  | { kind: "boolean"; value: boolean }
  | { kind: "Date"; iso: string | null }
  | { kind: "array"; items: Seen[] }
  | { kind: "object"; keys: string[]; fields: Record<string, Seen> }
  | { kind: "other"; type: string };

interface Threw {
  isError: boolean;
  name: string | null;
  message: string;
  code: unknown;
  status: unknown;
}

function describe(value: unknown, depth = 0): Seen {
  if (value === undefined) return { kind: "undefined" };
  if (value === null) return { kind: "null" };
  if (value instanceof Date) {
    return { kind: "Date", iso: Number.isNaN(value.getTime()) ? null : value.toISOString() };
  }
  switch (typeof value) {
    case "string":
      return { kind: "string", value };
    case "number":
      return { kind: "number", value };
    case "boolean":
      return { kind: "boolean", value };
    case "object": {
      if (depth > 8) return { kind: "other", type: "too deep" };
      if (Array.isArray(value)) return { kind: "array", items: value.map((v) => describe(v, depth + 1)) };
      const keys = Object.keys(value);
      const fields: Record<string, Seen> = {};
      for (const k of keys) fields[k] = describe((value as Record<string, unknown>)[k], depth + 1);
      return { kind: "object", keys, fields };
    }
    default:
      return { kind: "other", type: typeof value };
  }
}

function threw(e: unknown): Threw {
  const o = (typeof e === "object" && e !== null ? e : {}) as Record<string, unknown>;
  return {
    isError: e instanceof Error,
    name: typeof o.name === "string" ? o.name : null,
    message: typeof o.message === "string" ? o.message : String(e),
    code: o.code ?? null,
    status: o.status ?? null,
  };
}

interface Body {
  profile: string;
  sessionId?: string;
  messages?: { role: AgentMemoryMessage["role"]; content: string; timestamp?: string }[];
  content?: string;
  query?: string;
  thinkingLevel?: AgentMemoryThinkingLevel;
  responseLength?: AgentMemoryResponseLength;
  referenceDate?: string;
  referenceDateAs?: "Date" | "string";
  limit?: number;
  cursor?: string;
  type?: AgentMemoryMemoryType;
  id?: string;
}

// The published d.ts types getProfile() as Promise<AgentMemoryProfile>. The
// wrangler e2e fixture (plain JS) calls getSummary() on that promise without
// awaiting it, which works through RPC promise pipelining; the d.ts does not
// say so, this type does.
type Pipelined<T> = Promise<T> & T;

function listOptions(body: Body): AgentMemoryListMemoriesOptions {
  const options: AgentMemoryListMemoriesOptions = {};
  if (body.limit !== undefined) options.limit = body.limit;
  if (body.cursor !== undefined) options.cursor = body.cursor;
  if (body.sessionId !== undefined) options.sessionId = body.sessionId;
  if (body.type !== undefined) options.type = body.type;
  return options;
}

async function step(route: string, body: Body, env: Env): Promise<unknown> {
  if (route === "/delete-profile") return env.MEMORY.deleteProfile(body.profile);
  if (route === "/get-profile") {
    // getProfile alone: its name is "validated against naming rules".
    await env.MEMORY.getProfile(body.profile);
    return "resolved";
  }
  const profile: AgentMemoryProfile = await env.MEMORY.getProfile(body.profile);
  switch (route) {
    case "/ingest": {
      const messages: AgentMemoryMessage[] = (body.messages ?? []).map((m) => {
        const message: AgentMemoryMessage = { role: m.role, content: m.content };
        if (m.timestamp !== undefined) message.timestamp = new Date(m.timestamp);
        return message;
      });
      return profile.ingest(messages, { sessionId: body.sessionId });
    }
    case "/remember": {
      const memory: AgentMemoryIncomingMemory = { content: body.content ?? "" };
      if ("sessionId" in body) memory.sessionId = body.sessionId;
      return profile.remember(memory);
    }
    case "/recall": {
      const options: AgentMemoryRecallOptions = {};
      if (body.thinkingLevel !== undefined) options.thinkingLevel = body.thinkingLevel;
      if (body.responseLength !== undefined) options.responseLength = body.responseLength;
      if (body.referenceDate !== undefined) {
        options.referenceDate = body.referenceDateAs === "string" ? body.referenceDate : new Date(body.referenceDate);
      }
      return profile.recall(body.query ?? "", options);
    }
    case "/list":
      return profile.list(listOptions(body));
    case "/list-all": {
      // Pages until the cursor key is absent; reports every page as seen.
      const pages: AgentMemoryListMemoriesResult[] = [];
      let cursor: string | undefined;
      for (let i = 0; i < 200; i++) {
        const options = listOptions(body);
        if (cursor !== undefined) options.cursor = cursor;
        const page = await profile.list(options);
        pages.push(page);
        if (!("cursor" in page)) return { pages, exhausted: true };
        cursor = page.cursor;
      }
      return { pages, exhausted: false };
    }
    case "/get":
      return profile.get(body.id ?? "");
    case "/delete":
      return profile.delete(body.id ?? "");
    case "/summary": {
      if (!("sessionId" in body)) return profile.getSummary();
      const options: AgentMemoryGetSummaryOptions = { sessionId: body.sessionId };
      return profile.getSummary(options);
    }
    case "/delete-session":
      return profile.deleteSession(body.sessionId ?? "");
    default:
      throw new Error(`no route ${route}`);
  }
}

const ROUTES = new Set([
  "/ingest", "/remember", "/recall", "/list", "/list-all", "/get", "/delete",
  "/summary", "/delete-session", "/delete-profile", "/get-profile",
]);

export default {
  async fetch(request: Request, env: Env): Promise<Response> {
    const route = new URL(request.url).pathname;
    if (route === "/wrangler-e2e") {
      // packages/wrangler/e2e/remote-binding/workers/agent-memory.js
      try {
        const profile = env.MEMORY.getProfile("wrangler-e2e") as Pipelined<AgentMemoryProfile>;
        const summary = await profile.getSummary();
        return new Response(JSON.stringify(summary));
      } catch (e) {
        return Response.json({ ok: false, threw: threw(e) }, { status: 500 });
      }
    }
    if (request.method !== "POST" || !ROUTES.has(route)) return new Response("not found", { status: 404 });
    const body = await request.json<Body>();
    try {
      return Response.json({ ok: true, saw: describe(await step(route, body, env)) });
    } catch (e) {
      return Response.json({ ok: false, threw: threw(e) });
    }
  },
} satisfies ExportedHandler<Env>;

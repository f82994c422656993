// Checks src/agent-memory.d.ts against Cloudflare's published types (published/agent-memory.d.ts,
// verbatim, and the globals of @cloudflare/workers-types): the published names it exports are the
// published definitions, and this service's extended types are assignable to the published ones.
// The `@ts-expect-error` lines are calls the declarations must refuse: tsc reports an unused
// `@ts-expect-error` as an error, so each of them proves the check can fail.
import type * as Ours from "../../src/agent-memory";
import type * as Published from "./published/agent-memory";

// --- 1. The published names are the published definitions (mutually identical types). ---
type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
type Assert<T extends true> = T;
export type PublishedNamesAreIdentical = [
  Assert<Equal<Ours.AgentMemoryMemoryType, Published.AgentMemoryMemoryType>>,
  Assert<Equal<Ours.AgentMemoryThinkingLevel, Published.AgentMemoryThinkingLevel>>,
  Assert<Equal<Ours.AgentMemoryResponseLength, Published.AgentMemoryResponseLength>>,
  Assert<Equal<Ours.AgentMemoryMessage, Published.AgentMemoryMessage>>,
  Assert<Equal<Ours.AgentMemoryIncomingMemory, Published.AgentMemoryIncomingMemory>>,
  Assert<Equal<Ours.AgentMemoryMemory, Published.AgentMemoryMemory>>,
  Assert<Equal<Ours.AgentMemoryMemoryListEntry, Published.AgentMemoryMemoryListEntry>>,
  Assert<Equal<Ours.AgentMemoryScoredCandidate, Published.AgentMemoryScoredCandidate>>,
  Assert<Equal<Ours.AgentMemoryIngestOptions, Published.AgentMemoryIngestOptions>>,
  Assert<Equal<Ours.AgentMemoryGetSummaryOptions, Published.AgentMemoryGetSummaryOptions>>,
  Assert<Equal<Ours.AgentMemoryGetSummaryResponse, Published.AgentMemoryGetSummaryResponse>>,
  Assert<Equal<Ours.AgentMemoryRecallOptions, Published.AgentMemoryRecallOptions>>,
  Assert<Equal<Ours.AgentMemoryRecallResult, Published.AgentMemoryRecallResult>>,
  Assert<Equal<Ours.AgentMemoryListMemoriesOptions, Published.AgentMemoryListMemoriesOptions>>,
  Assert<Equal<Ours.AgentMemoryListMemoriesResult, Published.AgentMemoryListMemoriesResult>>,
  Assert<Equal<Ours.AgentMemoryProfile, Published.AgentMemoryProfile>>,
  Assert<Equal<Ours.AgentMemoryNamespace, Published.AgentMemoryNamespace>>,
  // ...and the globals @cloudflare/workers-types declares (what `wrangler types` uses).
  Assert<Equal<Ours.AgentMemoryProfile, AgentMemoryProfile>>,
  Assert<Equal<Ours.AgentMemoryNamespace, AgentMemoryNamespace>>,
];

// --- 2. The extended types are assignable to the published ones. ---
declare const service: Ours.MemoryService;
declare const profile: Ours.MemoryProfile;
export const asPublishedNamespace: Published.AgentMemoryNamespace = service;
export const asPublishedProfile: Published.AgentMemoryProfile = profile;
export const asGlobalNamespace: AgentMemoryNamespace = service;
export const asGlobalProfile: AgentMemoryProfile = profile;
export const asPublishedMemory: Published.AgentMemoryMemory = {} as Ours.Memory;
export const asPublishedDetail: Published.AgentMemoryMemory = {} as Ours.MemoryDetail;
export const asPublishedEntry: Published.AgentMemoryMemoryListEntry = {} as Ours.MemoryListEntry;
export const asPublishedCandidate: Published.AgentMemoryScoredCandidate = {} as Ours.MemoryScoredCandidate;
export const asPublishedRecall: Published.AgentMemoryRecallResult = {} as Ours.MemoryRecallResult;
export const asPublishedList: Published.AgentMemoryListMemoriesResult = {} as Ours.MemoryListResult;
export const asPublishedEnv: { MEMORY: Published.AgentMemoryNamespace } = { MEMORY: service };
// Published inputs are accepted where ours are expected.
export const publishedRecallOptions: Ours.MemoryRecallOptions = {} as Published.AgentMemoryRecallOptions;
export const publishedListOptions: Ours.MemoryListOptions = {} as Published.AgentMemoryListMemoriesOptions;
export const publishedIncoming: Ours.MemoryIncomingMemory = {} as Published.AgentMemoryIncomingMemory;
export const publishedMessage: Ours.MemoryMessage = {} as Published.AgentMemoryMessage;

// --- 3. The extensions, used as a consumer would. ---
export async function extensions(env: { MEMORY: Ours.MemoryService }): Promise<void> {
  const pipelined = env.MEMORY.getProfile("p"); // not awaited: RPC promise pipelining
  const { summary }: { summary: string } = await pipelined.getSummary({ sessionId: null });
  const p: Ours.MemoryProfile = await pipelined;
  await p.ingest([{ role: "user", content: summary, timestamp: new Date() }], { sessionId: "s1" });
  await p.ingest(new Set([{ role: "assistant" as const, content: "ok", timestamp: "2026-04-21" }]));
  const m = await p.remember({ content: "Prefers dark mode.", type: "fact", key: "ui.theme", ttlSeconds: 60 });
  const created: Date = m.createdAt;
  const status: Ours.MemoryStatus = m.status;
  const sources: string[] = m.sourceMessageIds;
  const sessionId: string | null = m.sessionId;
  await p.remember({ content: "Renew the domain.", type: "task", expiresAt: "2026-05-01T00:00:00.000Z", sensitive: false });
  const r = await p.recall("theme", {
    thinkingLevel: "high",
    responseLength: "long",
    referenceDate: new Date(),
    limit: 5,
    explain: true,
    includeInactive: true,
    sessionId: "s1",
  });
  const answer: string = r.answer;
  const firstType: Ours.AgentMemoryMemoryType | undefined = r.candidates[0]?.type;
  const channels = r.explain?.channels.map((c) => c.channel);
  const page = await p.list({ limit: 1000, status: "superseded", key: "ui.theme", type: "fact", sessionId: "s1" });
  const next: string | undefined = page.cursor;
  const entryStatus: Ours.MemoryStatus | undefined = page.memories[0]?.status;
  const detail = await p.get(m.id);
  const versions: Ours.Memory[] = detail.versions;
  const sourceRoles: string[] = detail.sourceMessages.map((s) => s.role);
  const deleted: Ours.MemoryDeleteResult = await p.delete(m.id);
  const content: string = deleted.content;
  const alsoDeleted: string[] = [...deleted.deletedMemories, ...deleted.deletedMessages];
  const storedAt: Date | undefined = detail.sourceMessages[0]?.createdAt;
  const forgotten: Ours.Memory = await p.forget(m.id);
  const ndjson: string = await p.export();
  const filter: Ours.MemoryFilter = { agentId: "planner", priority: { gte: 2 }, OR: [{ type: { in: ["fact", "event"] } }, { NOT: { pinned: true } }] };
  await p.remember({ content: "Prefers pnpm.", metadata: { agentId: "planner", priority: 2, pinned: true } });
  await p.ingest([{ role: "user", content: "Use pnpm." }], { sessionId: "s1", metadata: { userId: "u1" } });
  const filtered = await p.recall("package manager", { filter, asOf: new Date() });
  const candidateMeta: Ours.MemoryMetadata | undefined = filtered.candidates[0]?.metadata;
  const held = await p.list({ filter, asOf: "2026-04-15" });
  const entryMeta: Ours.MemoryMetadata | undefined = held.memories[0]?.metadata;
  const validity: [string | undefined, string | undefined] = [detail.validFrom, detail.validTo];
  const subset: string = await p.export({ filter: { agentId: "planner" } });
  const added: number = (await p.import(ndjson)).memories;
  const stats = await p.stats();
  const counts: number = stats.memories + stats.byType["fact"]! + stats.pendingJobs;
  const tagged: Ours.Memory = await p.update(m.id, { agentId: "planner", priority: 3 });
  const taggedAt: Date = tagged.updatedAt;
  const preview: Ours.MemoryConsolidationReport = await p.consolidate({ dryRun: true });
  const report = await p.consolidate({ maxWindows: 2 });
  const first = report.actions[0];
  const action: Ours.MemoryConsolidationAction | undefined = first?.action;
  const undone: Ours.MemoryConsolidationRecord | undefined = first ? await p.undoConsolidation(first.id) : undefined;
  const undoneAt: string | undefined = undone?.undoneAt;
  const history: Ours.MemoryConsolidationRecord[] | undefined = detail.consolidations;
  await p.consolidate();
  await p.deleteSession("s1");
  const gone: void = await env.MEMORY.deleteProfile("p");
  const { restored }: { restored: boolean } = await env.MEMORY.restoreProfile("p");
  try {
    await p.get("missing");
  } catch (e) {
    const err = e as Ours.MemoryError;
    const code = /\((\d{5})\)$/.exec(err.message)?.[1];
    console.log(code, err.message.startsWith("MemoryError: "));
  }
  console.log(created, status, sources, sessionId, answer, firstType, channels, next, entryStatus, versions);
  console.log(sourceRoles, content, alsoDeleted, storedAt, forgotten, added, counts, gone, restored);
  console.log(candidateMeta, entryMeta, validity, subset);
  console.log(taggedAt, preview.activeAfter, report.done, action, undoneAt, history);
}

// --- 4. What the declarations must refuse. ---
export async function refusals(env: { MEMORY: Ours.MemoryService }, published: Published.AgentMemoryNamespace): Promise<void> {
  const p = await env.MEMORY.getProfile("p");
  // @ts-expect-error thinkingLevel is "low" | "medium" | "high"
  await p.recall("q", { thinkingLevel: "extreme" });
  // @ts-expect-error responseLength is "short" | "medium" | "long"
  await p.recall("q", { responseLength: "tiny" });
  // @ts-expect-error recall needs a query
  await p.recall();
  // @ts-expect-error remember needs content
  await p.remember({ sessionId: "s" });
  // @ts-expect-error expiresAt and ttlSeconds exclude each other
  await p.remember({ content: "x", expiresAt: "2030-01-01", ttlSeconds: 60 });
  // @ts-expect-error a memory's type is fact | event | instruction | task
  await p.remember({ content: "x", type: "note" });
  // @ts-expect-error list's status is active | superseded | forgotten | expired
  await p.list({ status: "deleted" });
  // @ts-expect-error the list() filter takes a string sessionId, not null (as published)
  await p.list({ sessionId: null });
  const entry = (await p.list()).memories[0]!;
  // @ts-expect-error list entries have no content
  console.log(entry.content);
  // @ts-expect-error list entries have no source message IDs (get() has them)
  console.log(entry.sourceMessageIds);
  // @ts-expect-error list entries have no validity (get() has it)
  console.log(entry.validFrom);
  // @ts-expect-error metadata is flat: strings, numbers, booleans
  await p.remember({ content: "x", metadata: { nested: { a: 1 } } });
  // @ts-expect-error AND takes an array of filters
  await p.list({ filter: { AND: { agentId: "a" } } });
  // @ts-expect-error asOf is a Date or an ISO-8601 string
  await p.recall("q", { asOf: 1713139200000 });
  // @ts-expect-error a message's role is system | user | assistant
  await p.ingest([{ role: "tool", content: "x" }]);
  // @ts-expect-error a memory's sessionId may be null
  const s: string = (await p.get("id")).sessionId;
  // @ts-expect-error createdAt is a Date over the binding, not a string
  const c: string = (await p.get("id")).createdAt;
  // @ts-expect-error deleteSession resolves to nothing
  const n: number = await p.deleteSession("s");
  // @ts-expect-error the published getProfile is a plain Promise: calling through it is this service's extension
  await published.getProfile("p").getSummary();
  const pp = await published.getProfile("p");
  // @ts-expect-error forget() is an extension the published profile lacks
  await pp.forget("id");
  // @ts-expect-error restoreProfile() is an extension the published namespace lacks
  await published.restoreProfile("p");
  // @ts-expect-error update() takes the memory's id and its metadata
  await p.update({ id: "id", metadata: {} });
  // @ts-expect-error metadata is flat: strings, numbers, booleans
  await p.update("id", { nested: { a: 1 } });
  // @ts-expect-error a consolidation's id is a number
  await p.undoConsolidation("7");
  // @ts-expect-error consolidate() takes dryRun and maxWindows only
  await p.consolidate({ dry: true });
  // @ts-expect-error consolidate() is an extension the published profile lacks
  await pp.consolidate();
  // @ts-expect-error the published profile lacks the extensions, so it is not a MemoryProfile
  const back: Ours.MemoryProfile = pp;
  console.log(s, c, n, back);
}

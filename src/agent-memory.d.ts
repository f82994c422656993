// TypeScript declarations for the `MemoryService` binding of the agent-memory Worker.
//
// HOW TO USE
//   Bind the service from your Worker's wrangler.toml:
//     [[services]]
//     binding = "MEMORY"
//     service = "agent-memory"
//     entrypoint = "MemoryService"
//     props = { namespace = "my-agent" }   # optional: like [[agent_memory]] namespace = "my-agent"
//   then type the binding with one of:
//     import type { AgentMemoryNamespace } from "./agent-memory";
//     interface Env { MEMORY: AgentMemoryNamespace }  // the published surface, unchanged
//   or
//     import type { MemoryService } from "./agent-memory";
//     interface Env { MEMORY: MemoryService }         // the published surface + this service's extensions
//   Code written against Cloudflare's published types (the `AgentMemoryNamespace` that
//   `wrangler types` and @cloudflare/workers-types declare as globals) compiles unchanged
//   against either: the first part of this file is the published declarations, verbatim
//   (cloudflare/workerd types/defines/agent-memory.d.ts at 6552d999c), and `MemoryService` /
//   `MemoryProfile` are assignable to `AgentMemoryNamespace` / `AgentMemoryProfile`.
//
//   Extensions (MemoryService only): `getProfile` also types the un-awaited call
//   (`env.MEMORY.getProfile(name).getSummary()`, RPC promise pipelining); namespace
//   `restoreProfile`; profile `forget`, `export` (optionally filtered), `import`, `stats`,
//   `update` (a memory's metadata), `consolidate`, `undoConsolidation`;
//   recall options `limit`, `explain`, `includeInactive`, `sessionId`, `filter`, `asOf`; list
//   options `status`, `key`, `filter`, `asOf`; remember fields `type`, `key`, `expiresAt` |
//   `ttlSeconds`, `sensitive`, `metadata`; ingest option `metadata`; message `timestamp` as an
//   ISO-8601 string; and the extra fields of memories (`metadata`, `validFrom`, `validTo`, ...),
//   list entries, recall candidates and `get` (with the memory's consolidations).
//
// WHAT THIS FILE DOES NOT DECLARE
//   - the HTTP API (src/openapi.json describes it) or the MCP tools (src/mcp.tools.json);
//   - the RPC stub machinery of @cloudflare/workers-types (`Service<...>`, `Rpc.Stub`,
//     `Symbol.dispose` on stubs): the profile is declared as the plain object it behaves as;
//   - the service's value limits (name and session id lengths, page sizes, content bytes):
//     they are checked at run time, and a call that breaks one throws a `MemoryError`;
//   - an error class: across a service binding, Workers RPC keeps a thrown error's message
//     only, so a consumer receives a plain `Error` whose message reads
//     "MemoryError: <what went wrong> (<code>)", the code being the HTTP API's `errors[].code`
//     (see `MemoryError` below);
//   - the wrangler `[[agent_memory]]` binding: this service is reached as a service binding.
//   Type-only: no runtime code. Checked by tests/types (tsc -p tests/types/tsconfig.json).

// ============================================================================
// Agent Memory
//
// Public type surface for user Workers binding to an Agent Memory namespace.
// ============================================================================

/** Memory type — every memory is classified into exactly one. */
export type AgentMemoryMemoryType = "fact" | "event" | "instruction" | "task";

/** Search intensity for recall. */
export type AgentMemoryThinkingLevel = "low" | "medium" | "high";

/** Response verbosity for recall. */
export type AgentMemoryResponseLength = "short" | "medium" | "long";

/** A conversation message passed to ingest(). */
export interface AgentMemoryMessage {
  role: "system" | "user" | "assistant";
  content: string;
  /** Optional message timestamp. */
  timestamp?: Date;
}

/** Raw memory content passed to remember(). */
export interface AgentMemoryIncomingMemory {
  /** Raw memory content. The service classifies and summarizes automatically. */
  content: string;
  /** Optional session identifier to associate with this memory. */
  sessionId?: string | null | undefined;
}

/** A stored memory returned from remember(), get(), and delete(). */
export interface AgentMemoryMemory {
  /** Memory ID. */
  id: string;
  /** Memory type. */
  type: AgentMemoryMemoryType;
  /** Text summary. */
  summary: string;
  /** Memory text. */
  content: string;
  /** Session that created this memory. */
  sessionId: string | null;
  /** Memory creation time. */
  createdAt: Date;
  /** Memory last-update time. */
  updatedAt: Date;
}

/** Single entry in a list() response. Same shape as Memory minus full content. */
export type AgentMemoryMemoryListEntry = Omit<AgentMemoryMemory, "content">;

/** A scored memory candidate in a recall result. */
export interface AgentMemoryScoredCandidate {
  /** Candidate ID. */
  id: string;
  /** Text summary. */
  summary: string;
  /** Session that created this candidate, when known. */
  sessionId: string | null;
  /** Relevance score (higher is better). Comparable only within a single query. */
  score: number;
}

/** Options for the ingest() method. */
export interface AgentMemoryIngestOptions {
  /** Session identifier to associate with memories created during ingestion. */
  sessionId?: string | null | undefined;
}

/** Options for the getSummary() method. */
export interface AgentMemoryGetSummaryOptions {
  /** Session identifier to retrieve session summary for. */
  sessionId?: string | null | undefined;
}

/** Response from the getSummary() method. */
export interface AgentMemoryGetSummaryResponse {
  /** Markdown summary. */
  summary: string;
}

/**
 * Options for the recall() method.
 *
 * `referenceDate` accepts a Date object, an ISO-8601 date string
 * (YYYY-MM-DD), or a full ISO-8601 datetime string. When provided, this
 * date is used as "today" for resolving relative time references
 * ("how many days ago", "last week") instead of the server's wall-clock time.
 */
export interface AgentMemoryRecallOptions {
  /** Recall intensity: "low" (default), "medium", or "high". */
  thinkingLevel?: AgentMemoryThinkingLevel;
  /** Response verbosity: "short", "medium" (default), or "long". */
  responseLength?: AgentMemoryResponseLength;
  /** Temporal anchor for date arithmetic. */
  referenceDate?: Date | string;
}

/** Response from the recall() method. */
export interface AgentMemoryRecallResult {
  /** Number of memories retrieved. */
  count: number;
  /** LLM-generated answer synthesizing the matching memories. */
  answer: string;
  /** Matching memories ranked by relevance. */
  candidates: AgentMemoryScoredCandidate[];
}

/**
 * Options for the list() method.
 *
 * `cursor` is the opaque continuation token returned by the previous page;
 * pass it back unchanged to fetch the next page. `sessionId` and `type`
 * are exact-match filters; combining them is allowed.
 */
export interface AgentMemoryListMemoriesOptions {
  /** Maximum number of memories to return. Default 20, max 500. */
  limit?: number;
  /** Opaque cursor from a previous page. */
  cursor?: string;
  /** Exact-match session filter. */
  sessionId?: string;
  /** Exact-match memory-type filter. */
  type?: AgentMemoryMemoryType;
}

/** Response from the list() method. */
export interface AgentMemoryListMemoriesResult {
  memories: AgentMemoryMemoryListEntry[];
  /** Continuation cursor; absent when this page exhausted the result set. */
  cursor?: string;
}

/**
 * A single Agent Memory profile, scoped to a profile name.
 *
 * Returned by {@link AgentMemoryNamespace.getProfile}.
 */
export declare abstract class AgentMemoryProfile {
  /**
   * Retrieve a memory by ID.
   *
   * @param memoryId - ULID of the memory to retrieve.
   * @throws if the memory does not exist.
   */
  get(memoryId: string): Promise<AgentMemoryMemory>;

  /**
   * Delete a memory by ID.
   *
   * Removes the memory and any source messages linked by the memory's
   * source message IDs.
   *
   * @param memoryId - ULID of the memory to delete.
   * @throws if the memory does not exist.
   */
  delete(memoryId: string): Promise<AgentMemoryMemory>;

  /**
   * Store a memory in this profile. The content is automatically classified,
   * summarized, and indexed.
   *
   * @param memory - Raw memory content to persist.
   */
  remember(memory: AgentMemoryIncomingMemory): Promise<AgentMemoryMemory>;

  /**
   * Extract memories from a conversation.
   *
   * @param messages - Conversation messages to extract memories from.
   * @param options  - Optional ingest options.
   */
  ingest(
    messages: Iterable<AgentMemoryMessage>,
    options?: AgentMemoryIngestOptions,
  ): Promise<void>;

  /**
   * Get a profile summary.
   *
   * @param options - Optional getSummary options.
   */
  getSummary(
    options?: AgentMemoryGetSummaryOptions,
  ): Promise<AgentMemoryGetSummaryResponse>;

  /**
   * Recall memories in this profile.
   *
   * @param query   - Recall query matched against memory content and keywords.
   * @param options - Optional recall parameters.
   * @returns Matching memories with relevance scores and a synthesized answer.
   */
  recall(
    query: string,
    options?: AgentMemoryRecallOptions,
  ): Promise<AgentMemoryRecallResult>;

  /**
   * List active memories in this profile.
   *
   * Returns a paginated, filterable view of stored memories. Superseded
   * versions are excluded. Use the returned `cursor` (when present) to
   * fetch the next page.
   *
   * @param options - Optional pagination and filter options.
   */
  list(
    options?: AgentMemoryListMemoriesOptions,
  ): Promise<AgentMemoryListMemoriesResult>;

  /**
   * Soft-delete every memory and message in this profile that is tagged
   * with `sessionId`.
   *
   * Idempotent: deleting a sessionId that has no rows is a no-op.
   *
   * @param sessionId - Session to delete.
   */
  deleteSession(sessionId: string): Promise<void>;
}

/**
 * Namespace-level Agent Memory binding.
 *
 * Used as the type of an `env.MEMORY`-style binding backed by the Agent
 * Memory product.
 *
 * @example
 * ```ts
 * export default {
 *   async fetch(_request: Request, env: Env): Promise<Response> {
 *     const profile = await env.MEMORY.getProfile("wrangler-e2e");
 *     const summary = await profile.getSummary();
 *     return Response.json(summary);
 *   },
 * };
 * ```
 */
export declare abstract class AgentMemoryNamespace {
  /**
   * Get a memory profile by name. Profiles are isolated by namespace and
   * addressed by a compound key (namespaceId:profileName).
   *
   * @param profileName - Profile name (validated against naming rules).
   * @returns RPC target for interacting with the profile.
   */
  getProfile(profileName: string): Promise<AgentMemoryProfile>;

  /**
   * Soft-delete a profile and schedule deferred purge. Marks all
   * memories and messages as deleted.
   *
   * @param profileName - Name of the profile to delete.
   */
  deleteProfile(profileName: string): Promise<void>;
}

// ============================================================================
// Extensions of this service (not part of the published interface)
// ============================================================================

/** Where a memory stands in its life. `list` returns `"active"` ones unless asked. */
export type MemoryStatus = "active" | "superseded" | "forgotten" | "expired";

/**
 * What a caller attaches to a memory (remember(), or every memory and message of an ingest()):
 * a flat map of names to strings, numbers or booleans. At most 32 names of 1-64 characters of
 * `[A-Za-z0-9_-]` (a letter or `_` first; not `AND`, `OR`, `NOT`, nor a built-in filter field
 * but `agentId` and `userId`), string values at most 512 bytes, 4 KiB as JSON. `agentId` and
 * `userId` are reserved names: their values are strings, and the service indexes them.
 */
export type MemoryMetadata = Record<string, string | number | boolean>;

/** A value a filter compares with: a metadata value, an ISO-8601 date or date-time (`createdAt`, `updatedAt`, `eventDate`), a memory type. */
export type MemoryFilterValue = string | number | boolean;

/** The comparisons of one filter field. A memory without the field passes only `ne` and `nin`; a number never equals or orders against a string. */
export interface MemoryFilterOperators {
  eq?: MemoryFilterValue;
  ne?: MemoryFilterValue;
  gt?: MemoryFilterValue;
  gte?: MemoryFilterValue;
  lt?: MemoryFilterValue;
  lte?: MemoryFilterValue;
  /** At most 100 values. */
  in?: MemoryFilterValue[];
  /** At most 100 values. */
  nin?: MemoryFilterValue[];
}

/**
 * A filter over memories (recall(), list(), export()): each key a field (a metadata name, or
 * one of the built-ins `type`, `sessionId`, `agentId`, `userId`, `createdAt`, `updatedAt`,
 * `eventDate`) mapped to a value (equality) or to operators; `AND` and `OR` take arrays of
 * filters and `NOT` one. Keys side by side must all hold. At most 5 levels of `AND`/`OR`/`NOT`,
 * 64 conditions, 16 KiB as JSON. TypeScript cannot keep `AND`/`OR`/`NOT` out of the field names,
 * so a field typed here may also hold a nested filter: the service refuses what the grammar does.
 *
 * @example `{ agentId: "planner", OR: [{ priority: { gte: 2 } }, { NOT: { type: "task" } }] }`
 */
export interface MemoryFilter {
  AND?: MemoryFilter[];
  OR?: MemoryFilter[];
  NOT?: MemoryFilter;
  [field: string]: MemoryFilterValue | MemoryFilterOperators | MemoryFilter | MemoryFilter[] | undefined;
}

/** A conversation message passed to ingest(): the published message, with an ISO-8601 string timestamp also accepted. */
export interface MemoryMessage extends Omit<AgentMemoryMessage, "timestamp"> {
  /** Optional message timestamp: a Date, or an ISO-8601 date (YYYY-MM-DD) or date-time string. */
  timestamp?: Date | string;
}

/** Raw memory content passed to remember(), with this service's optional fields. */
export type MemoryIncomingMemory = AgentMemoryIncomingMemory & {
  /** Memory type; when absent the service classifies the content. */
  type?: AgentMemoryMemoryType;
  /** Topic key (1-128 characters) in its stored form, lowercase words joined by `_` and segments by `.` (`user.package_manager`); any other form, or a key on an event or task, is refused. A fact or instruction with the same key supersedes the older one. */
  key?: string;
  /** Content the caller marks sensitive is refused (nothing is stored). */
  sensitive?: boolean;
  /** Attached to the memory. */
  metadata?: MemoryMetadata;
} & (
    | {
        /** ISO-8601 instant after which the memory expires, later than now. Give this or `ttlSeconds`, not both. */
        expiresAt?: string;
        ttlSeconds?: never;
      }
    | {
        /** Seconds to live, from 1 to 10^10. Give this or `expiresAt`, not both. */
        ttlSeconds?: number;
        expiresAt?: never;
      }
  );

/** A stored memory as this service returns it: the published fields plus its record's. */
export interface Memory extends AgentMemoryMemory {
  /** Topic key of a fact or instruction, when it has one. */
  key?: string;
  /** Where the memory stands in its life. */
  status: MemoryStatus;
  /** IDs of the messages the memory was extracted from (empty for remember()). */
  sourceMessageIds: string[];
  /** Questions the memory answers, used by recall. */
  searchQueries: string[];
  /** ID of the older version this memory replaced. */
  supersedes?: string;
  /** ID of the newer version that replaced this memory. */
  supersededBy?: string;
  /** When the remembered thing happened or was said (ISO-8601 date), if known. */
  eventDate?: string;
  /** ISO-8601 instant after which the memory expires, if it does. */
  expiresAt?: string;
  /** What the caller attached (absent when nothing). */
  metadata?: MemoryMetadata;
  /** From when what it says held (ISO-8601): when its source messages were said, else when it was stored. */
  validFrom?: string;
  /** Until when it held (ISO-8601): when what superseded it was said; absent while it holds. */
  validTo?: string;
}

/** Single entry in a list() response: a memory without its content, sources, search queries, version links and validity (get() has them). */
export type MemoryListEntry = Omit<
  Memory,
  "content" | "sourceMessageIds" | "searchQueries" | "supersedes" | "supersededBy" | "validFrom" | "validTo"
>;

/** A raw message as stored, as get() returns its memory's sources. */
export interface MemoryStoredMessage {
  id: string;
  sessionId: string;
  role: string;
  content: string;
  /** The timestamp the message was ingested with (ISO-8601), if any. */
  timestamp?: string;
  /** Position of the message in its session (0-based, first seen). */
  position: number;
  /** When the message was stored. */
  createdAt: Date;
  /** The metadata of the ingest() that stored it (absent when none). */
  metadata?: MemoryMetadata;
}

/** What get() returns: the memory, its version chain, its source messages and its consolidations. */
export interface MemoryDetail extends Memory {
  /** The versions of the memory, oldest first; includes this one. At most the 100 nearest it (one older, one newer, in turn) and 1 MiB of their texts. */
  versions: Memory[];
  /** Whether versions were left out: get() of the oldest (or newest) given reads on from there. */
  moreVersions: boolean;
  /** The messages the memory was extracted from, at most 1 MiB of their texts (one always). */
  sourceMessages: MemoryStoredMessage[];
  /** Whether source messages were left out. */
  moreSourceMessages: boolean;
  /** The consolidations the memory took part in, oldest first: what it was consolidated from, or into (absent when none). */
  consolidations?: MemoryConsolidationRecord[];
}

/**
 * What a consolidation does to a group of memories: `merge` (rewordings of one statement: one
 * stays, the others are superseded by it), `supersede` (a newer statement contradicts older
 * ones, which it supersedes), `fold` (old fine-grained statements or events become one new
 * memory, which supersedes them), `retire` (a stale task expires).
 */
export type MemoryConsolidationAction = "merge" | "supersede" | "fold" | "retire";

/** One change a consolidation made (or, in a dry run, would make), recorded with the memories as they were: undoConsolidation() puts them back exactly. */
export interface MemoryConsolidationRecord {
  /** Its id, for undoConsolidation() (0 in a dry run, which records nothing). */
  id: number;
  /** The run that made it (`"dry-run"` in a dry run). */
  runId: string;
  action: MemoryConsolidationAction;
  /** The memory that holds the result: the survivor of a merge, the newest memory of a supersession, the memory a fold created (`"(new)"` in a dry run), the retired task. */
  target: string;
  /** The IDs of the memories it was made from, oldest first. */
  members: string[];
  /** Why these memories were consolidated. */
  reason: string;
  /** When it was made (ISO-8601). */
  at: string;
  /** When it was undone (ISO-8601); absent while it stands. */
  undoneAt?: string;
}

/** Options for consolidate(). */
export interface MemoryConsolidateOptions {
  /** Report what a run would change, and change nothing. */
  dryRun?: boolean;
  /** Windows of 1000 active memories to go through now, at most (the profile's alarm goes on with the rest; a dry run previews the first ones); 4 by default, each one reasoner call (a model call when a model decides). */
  maxWindows?: number;
}

/** What consolidate() did (or, with `dryRun`, would do). */
export interface MemoryConsolidationReport {
  /** The run (`"dry-run"` for a dry run); a call while a run is in progress continues it. */
  runId: string;
  dryRun: boolean;
  /** Whether the run went through the whole profile; if not, the profile's alarm goes on with the rest (a dry run: it previewed the first `maxWindows` windows only). */
  done: boolean;
  /** Active memories this call read. */
  examined: number;
  /** Active memories when the run began. */
  activeBefore: number;
  /** Active memories now (in a dry run: after the changes it reports). */
  activeAfter: number;
  /** The changes this call made, in order. */
  actions: MemoryConsolidationRecord[];
  /** The record of a run in progress that did not read, as it was stored, which this run replaced (the replaced run's windows kept their changes). */
  replacedRun?: string;
}

/** Options for recall(), with this service's extensions. */
export interface MemoryRecallOptions extends AgentMemoryRecallOptions {
  /** Most candidates to return: 1-100, default 10. */
  limit?: number;
  /** Add the explanation of every score (`candidates[].explanation`, `trace`, and `explain`). */
  explain?: boolean;
  /** Also consider superseded, forgotten and expired memories (not with `asOf`: refused). */
  includeInactive?: boolean;
  /** Only memories of this session (1-64 characters). */
  sessionId?: string | null;
  /** Only memories passing this filter. */
  filter?: MemoryFilter;
  /** Recall what held at this instant (a Date, or an ISO-8601 date or date-time): a memory superseded or expired since counts, one stated after it or forgotten does not. */
  asOf?: string | Date;
}

/** Options for ingest(), with this service's extensions. */
export interface MemoryIngestOptions extends AgentMemoryIngestOptions {
  /** Attached to every memory extracted from this call and to its messages. */
  metadata?: MemoryMetadata;
}

/** Options for export(). */
export interface MemoryExportOptions {
  /** Only the memories passing this filter, and the messages they cite. */
  filter?: MemoryFilter;
}

/** A recall channel. */
export type MemoryRecallChannel = "key" | "fts" | "hyde" | "vector" | "messages";

/** One channel's part in a candidate's fused score (with `explain: true`). */
export interface MemoryRecallContribution {
  channel: MemoryRecallChannel;
  rank: number;
  weight: number;
  contribution: number;
}

/** One node of a candidate's flattened explanation tree: its children follow it, one level deeper. */
export interface MemoryRecallExplanationNode {
  depth: number;
  value: number;
  description: string;
}

/** A scored candidate as this service returns it. */
export interface MemoryScoredCandidate extends AgentMemoryScoredCandidate {
  type: AgentMemoryMemoryType;
  sourceMessageIds: string[];
  /** When the remembered thing happened (ISO-8601 date), if known. */
  eventDate?: string | null;
  /** What the caller attached to the memory (absent when nothing). */
  metadata?: MemoryMetadata;
  /** With `explain: true`: the score as a tree, flattened in pre-order. */
  explanation?: MemoryRecallExplanationNode[] | null;
  /** With `explain: true`: each channel's contribution. */
  trace?: MemoryRecallContribution[] | null;
}

/** The explanation of a whole recall (with `explain: true`). */
export interface MemoryRecallExplanation {
  analysis: {
    /** Candidate topic keys, best first. */
    keys: string[];
    /** Full-text terms, synonyms included. */
    terms: string[];
    /** A declarative sentence phrased as if it answered the query. */
    hyde: string;
  };
  /** Every channel, with the IDs it ranked (best first). */
  channels: { channel: MemoryRecallChannel; weight: number; ids: string[]; error?: string | null }[];
  k: number;
  temporalFacts: string[];
  referenceDate: string;
  /**
   * With a filter or `asOf`: how the channels learned which memories pass
   * (`walk`: each ranked first and tested its best a batch at a time;
   * `ahead`: every passing memory was read before ranking), the sample of
   * the profile that chose it, and for a walk that went past its budget the
   * memories it had tested when it read ahead instead.
   */
  narrowing?: { way: "walk" | "ahead"; sample?: { tested: number; passed: number; span: number }; readAheadAfter?: number };
}

/** Response from recall(), with this service's extensions. */
export interface MemoryRecallResult extends AgentMemoryRecallResult {
  candidates: MemoryScoredCandidate[];
  /** The same text as `answer`. */
  result?: string;
  /** With `explain: true`. */
  explain?: MemoryRecallExplanation | null;
  /** Notes on degraded recall channels or stages. */
  messages?: string[];
}

/** Options for list(), with this service's filters. */
export interface MemoryListOptions extends AgentMemoryListMemoriesOptions {
  /** Maximum number of memories to return (this service allows up to 1000). */
  limit?: number;
  /** Exact-match status filter: active memories when absent (with `asOf`, every status), `"all"` for every status. */
  status?: MemoryStatus | "all";
  /** Exact-match topic-key filter, in the key's stored form (`user.package_manager`); any other form is refused. */
  key?: string;
  /** Only memories passing this filter. */
  filter?: MemoryFilter;
  /** List what held at this instant (a Date, or an ISO-8601 date or date-time), as for recall(). */
  asOf?: string | Date;
}

/** Response from list(). */
export interface MemoryListResult extends AgentMemoryListMemoriesResult {
  memories: MemoryListEntry[];
}

/** What delete() returns: the deleted memory, and what went with it. */
export interface MemoryDeleteResult extends Memory {
  /** IDs of every memory deleted: this one and those that cited one of its source messages. */
  deletedMemories: string[];
  /** IDs of the source messages deleted. */
  deletedMessages: string[];
}

/** What import() added. */
export interface MemoryImportReport {
  messages: number;
  memories: number;
  /** The file's consolidation records not written: those touching a memory the profile held before the import (an export imported again leaves each out so), and those recording a change held already. */
  consolidationsLeftOut: number;
}

/** The memory of the isolate a profile runs in. */
export interface MemoryIsolateStats {
  wasmMemoryBytes: number;
  budgetBytes: number;
  residentBytes: number;
  residentProfiles: number;
  evictions: number;
  /** Room requests hold now for their working memory, and the most they may hold at once. */
  workingSetBytes: number;
  workingSetLimitBytes: number;
  /** Requests (and consolidation windows) that waited for room, and those refused as busy (code 10014), since the isolate started. */
  workingSetWaits: number;
  busyRefusals: number;
  /** Profiles not let build their in-memory state (expected over the budget, or beside busy ones) since the isolate started: they answer from SQLite alone. */
  warmupsRefused: number;
  /** The allocator's bytes live now, the most live at once since the isolate started, and the blocks live now (wasmMemoryBytes beside heapPeakBytes: what fragmentation costs). */
  heapLiveBytes: number;
  heapPeakBytes: number;
  heapBlocks: number;
}

/** Profile statistics. */
export interface MemoryStats {
  messages: number;
  sessions: number;
  memories: number;
  byType: Record<string, number>;
  byStatus: Record<string, number>;
  pendingJobs: number;
  failedJobs: number;
  parkedJobs: number;
  /** Why the last background drain failed, in part or whole; absent once one runs clean. */
  drainError?: string;
  vectors: number;
  storageBytes: number;
  /** Exports being read out, each a copy of the profile held in its database until it is read. */
  spooledExports: number;
  residentBytes: number;
  isolate?: MemoryIsolateStats | null;
}

/** What restoreProfile() reports. */
export interface MemoryProfileRestoreReport {
  restored: boolean;
}

/**
 * What the binding throws, as a consumer across a service binding receives it: a plain
 * `Error` (Workers RPC keeps a thrown error's message, not its other properties) whose
 * message reads "MemoryError: <what went wrong> (<code>)". The code is the HTTP API's
 * `errors[].code`, e.g. 10004 for a memory that does not exist; read it with
 * `/\((\d{5})\)$/.exec(err.message)`.
 */
export interface MemoryError extends Error {
  message: `MemoryError: ${string} (${number})`;
}

/** A profile of this service: the published profile's methods, with wider inputs and richer results, and more. */
export declare abstract class MemoryProfile extends AgentMemoryProfile {
  /** Retrieve a memory with its version chain and source messages. @throws MemoryError if it does not exist. */
  get(memoryId: string): Promise<MemoryDetail>;
  /** Delete a memory and its source messages; returns the deleted memory. @throws MemoryError if it does not exist. */
  delete(memoryId: string): Promise<MemoryDeleteResult>;
  remember(memory: MemoryIncomingMemory): Promise<Memory>;
  ingest(messages: Iterable<MemoryMessage>, options?: MemoryIngestOptions): Promise<void>;
  recall(query: string, options?: MemoryRecallOptions): Promise<MemoryRecallResult>;
  list(options?: MemoryListOptions): Promise<MemoryListResult>;
  /** Mark a memory forgotten: it leaves recall and the vector index. Forgetting twice is harmless. Returns the memory. */
  forget(memoryId: string): Promise<Memory>;
  /** Every message and memory of the profile as NDJSON (a header line, then one record per line); with a filter, the memories passing it and the messages they cite. */
  export(options?: MemoryExportOptions): Promise<string>;
  /** Add the records of an export() file; records already present are left as they are. */
  import(data: string): Promise<MemoryImportReport>;
  /** Profile statistics. */
  stats(): Promise<MemoryStats>;
  /** Replace a memory's metadata (`{}` clears it), whatever its status; returns the memory. @throws MemoryError if it does not exist. */
  update(memoryId: string, metadata: MemoryMetadata): Promise<Memory>;
  /** Consolidate the profile's active memories: merge rewordings, supersede contradicted statements, fold old fine-grained ones, retire stale tasks; every change recorded and undoable. */
  consolidate(options?: MemoryConsolidateOptions): Promise<MemoryConsolidationReport>;
  /** Undo one consolidation: its memories back exactly as they were. Returns its record, with `undoneAt`. @throws MemoryError if there is no such consolidation, it is already undone, or a later one on the same memories stands. */
  undoConsolidation(consolidationId: number): Promise<MemoryConsolidationRecord>;
}

/**
 * What getProfile() returns: a promise of the profile on which the profile's methods can also be
 * called without awaiting it first (RPC promise pipelining).
 */
export type MemoryProfilePromise = Promise<MemoryProfile> & MemoryProfile;

/**
 * The `MemoryService` entrypoint: the published namespace binding, and more.
 *
 * @example
 * ```ts
 * // with interface Env { MEMORY: MemoryService }
 * export default {
 *   async fetch(_request: Request, env: Env): Promise<Response> {
 *     const profile = env.MEMORY.getProfile("my-project");
 *     const { memories } = await profile.list({ status: "superseded" });
 *     return Response.json({ memories, stats: await profile.stats() });
 *   },
 * };
 * ```
 */
export declare abstract class MemoryService extends AgentMemoryNamespace {
  /** Get a profile by name (created on first write); with no `props.namespace` on the binding, "namespace/profile" names address another namespace. */
  getProfile(profileName: string): MemoryProfilePromise;
  /** Mark a profile and all its memories and messages for deletion. */
  deleteProfile(profileName: string): Promise<void>;
  /** Undo deleteProfile() before the profile is purged. */
  restoreProfile(profileName: string): Promise<MemoryProfileRestoreReport>;
}

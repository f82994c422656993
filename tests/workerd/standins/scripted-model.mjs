// A scripted language model for the local stand-ins of Workers AI and of
// an OpenAI-compatible server. Pure JavaScript (no Node or Workers APIs), so
// the Node HTTP stand-in and the workerd stand-in Worker share it.
//
// It reads the stage from the system prompt (src/core/llm/prompts.rs and
// src/core/recall/synthesize.rs), parses the quoted data blocks of the user
// message, and answers the way a well-behaved model would: extraction cites
// the transcript lines, verification passes everything, classification
// gives type, topic key and search queries, query analysis gives keys,
// terms and a HyDE sentence, synthesis answers from the DATA block.
//
// Faults: `queue(stage, ...replies)` makes the next replies of a stage the
// given texts (garbage, fenced or truncated JSON...); `breakStage(stage,
// reply)` answers every call of the stage with `reply` until `heal()`.

/** Stage names, as the tests use them. */
export const STAGES = ["extraction", "detail", "verification", "classification", "query-analysis", "synthesis"];

/** The stage a system prompt belongs to. */
export function stageOf(system = "") {
  if (system.startsWith("You extract durable memories")) return "extraction";
  if (system.startsWith("You extract concrete details")) return "detail";
  if (system.startsWith("You verify memories")) return "verification";
  if (system.startsWith("You classify memories")) return "classification";
  if (system.startsWith("You analyze a question")) return "query-analysis";
  if (system.startsWith("You answer questions from a memory store")) return "synthesis";
  return "unknown";
}

/**
 * What the scripted model knows: a user line matching `match` yields
 * `content`, classified as `type` under `key`. Order matters (first match;
 * query analysis puts the first topic hit in its HyDE sentence).
 */
export const FACTS = [
  {
    match: /pnpm/i,
    content: "The user prefers pnpm over npm for the web project.",
    type: "fact",
    key: "user.package_manager",
    topic: /package manager|npm|pnpm/i,
    queries: ["Which package manager does the user prefer?", "Does the web project use npm or pnpm?", "What package manager should be used?"],
  },
  {
    match: /back to npm/i,
    content: "The user switched the web project back to npm.",
    type: "fact",
    key: "user.package_manager",
    topic: /package manager|npm|pnpm/i,
    queries: ["Which package manager does the user use?", "Does the web project use npm or pnpm?", "What did the user switch the web project to?"],
  },
  {
    match: /Biscuit/,
    content: "The user's dog is named Biscuit.",
    type: "fact",
    key: "user.dog_name",
    topic: /dog|pet|biscuit/i,
    queries: ["What is the user's dog called?", "Does the user have a pet?", "What is the name of the user's dog?"],
  },
  {
    match: /migrat/i,
    content: "The user is migrating the billing service to Postgres.",
    type: "task",
    key: null,
    topic: /billing|postgres|migrat|working on/i,
    queries: ["What is the user working on?", "Which service is being migrated to Postgres?", "What is the status of the billing migration?"],
  },
];

const TRANSCRIPT_LINE = /^\[(\d+)\] (\S+) ([^:]+): (.*)$/;

/** `[{index, date, role, text}]` of the fenced transcript in a user message. */
export function transcriptLines(user) {
  const block = fenced(user, "transcript");
  return block
    .split("\n")
    .map((l) => TRANSCRIPT_LINE.exec(l))
    .filter(Boolean)
    .map((m) => ({ index: Number(m[1]), date: m[2], role: m[3], text: m[4] }));
}

/** The JSON lines of the fenced `data` block of a user message. */
export function dataItems(user) {
  return fenced(user, "data")
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l));
}

function fenced(text, info) {
  const open = text.indexOf("```" + info + "\n");
  if (open < 0) return "";
  const start = open + 3 + info.length + 1;
  const close = text.indexOf("```", start);
  return text.slice(start, close < 0 ? undefined : close);
}

function factFor(content) {
  return FACTS.find((f) => f.content === content) ?? FACTS.find((f) => f.match.test(content));
}

function words(text) {
  return (text.toLowerCase().match(/[a-z0-9]+/g) ?? []).filter((w) => w.length > 2);
}

/** The correct reply of a stage (no faults). */
export function correctReply(system, user) {
  switch (stageOf(system)) {
    case "extraction":
    case "detail": {
      const memories = [];
      for (const line of transcriptLines(user)) {
        if (line.role !== "user") continue;
        const f = FACTS.find((f) => f.match.test(line.text));
        if (f && !memories.some((m) => m.content === f.content)) {
          memories.push({ content: f.content, lines: [line.index], eventDate: null });
        }
      }
      return JSON.stringify({ memories });
    }
    case "verification": {
      const verdicts = dataItems(user).map((c) => ({ index: c.index, verdict: "pass", content: c.content, reason: "stated by the user" }));
      return JSON.stringify({ verdicts });
    }
    case "classification": {
      const items = dataItems(user).map((c) => {
        const f = factFor(c.content);
        return f
          ? { index: c.index, type: f.type, key: f.key, summary: f.content, searchQueries: f.queries }
          : { index: c.index, type: "fact", key: null, summary: c.content, searchQueries: [c.content] };
      });
      return JSON.stringify({ items });
    }
    case "query-analysis": {
      const m = /QUESTION \(quoted data\): (.*)/.exec(user);
      const question = m ? JSON.parse(m[1]) : user;
      const hits = FACTS.filter((f) => f.topic.test(question));
      return JSON.stringify({
        keys: [...new Set(hits.map((f) => f.key).filter(Boolean))],
        terms: words(question),
        hyde: hits[0]?.content ?? `The user said something about ${question}`,
      });
    }
    case "synthesis": {
      const items = dataItems(user);
      if (!items.length) return "I do not know.";
      return `According to memory: ${items[0].text}`;
    }
    default:
      return "I can only answer memory-service prompts.";
  }
}

/**
 * A faulty reply: a string is sent as it is (garbage); `{fence: true}` is
 * the correct JSON inside a Markdown code fence with prose around it (a
 * lenient reader copes); `{truncate: true}` is the correct JSON cut off in
 * the middle, as when a model runs out of tokens.
 */
export function malformed(fault, correct) {
  if (typeof fault === "string") return fault;
  if (fault?.fence) return `Sure! Here is the JSON you asked for:\n\n\`\`\`json\n${correct}\n\`\`\`\n\nLet me know if you need anything else.`;
  if (fault?.truncate) return correct.slice(0, Math.max(1, Math.floor(correct.length / 2)));
  return String(fault);
}

/** A scripted model with fault injection; records nothing (callers do). */
export function createScript() {
  const queued = new Map();
  const broken = new Map();
  return {
    /** The next replies of `stage` are `replies`, in order. */
    queue(stage, ...replies) {
      queued.set(stage, [...(queued.get(stage) ?? []), ...replies]);
    },
    /** Every reply of `stage` is `reply` until healed. */
    breakStage(stage, reply) {
      broken.set(stage, reply);
    },
    /** Heals one stage, or all with no argument; drops queued faults too. */
    heal(stage) {
      if (stage === undefined) {
        queued.clear();
        broken.clear();
      } else {
        queued.delete(stage);
        broken.delete(stage);
      }
    },
    /** `{queue: {stage: [replies]}, broken: {stage: reply}, heal: true|stage}` */
    configure(cfg = {}) {
      if (cfg.heal !== undefined) this.heal(cfg.heal === true ? undefined : cfg.heal);
      for (const [stage, replies] of Object.entries(cfg.queue ?? {})) this.queue(stage, ...replies);
      for (const [stage, reply] of Object.entries(cfg.broken ?? {})) this.breakStage(stage, reply);
    },
    /** `{stage, text, fault}` for one chat request. */
    complete(system, user) {
      const stage = stageOf(system);
      const q = queued.get(stage);
      const fault = q?.length ? q.shift() : broken.get(stage);
      if (fault === undefined) return { stage, text: correctReply(system, user), fault: false };
      return { stage, text: malformed(fault, correctReply(system, user)), fault: true };
    },
  };
}

/** A deterministic bag-of-words embedding (unit length), so that texts
 * sharing words are near each other. */
export function embedText(text, dims = 768) {
  const v = new Array(dims).fill(0);
  for (const w of words(text)) {
    let h = 0x811c9dc5;
    for (let i = 0; i < w.length; i++) {
      h ^= w.charCodeAt(i);
      h = Math.imul(h, 0x01000193) >>> 0;
    }
    v[h % dims] += 1;
  }
  if (v.every((x) => x === 0)) v[0] = 1;
  const norm = Math.hypot(...v);
  return v.map((x) => Math.round((x / norm) * 1e6) / 1e6);
}

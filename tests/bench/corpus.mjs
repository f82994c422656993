// Benchmark corpus: realistic memories, messages, conversations and
// questions generated from the LoCoMo development conversations, with
// variations (speaker names, dates, a few words swapped) so 100k memories
// are not 36 copies of the same 2,760 turns. Deterministic (seeded).
//
// The data file is read from LOCOMO (default
// ../shared/bench/locomo/locomo-dev.json relative to the repository) and
// never copied into the repository.
import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

export function locomoPath(root) {
  const p = process.env.LOCOMO || path.resolve(root, "../shared/bench/locomo/locomo-dev.json");
  if (!existsSync(p)) throw new Error(`LoCoMo data not found at ${p} (set LOCOMO=/path/to/locomo-dev.json)`);
  return p;
}

/** Agents, users and priorities the bench spreads its memories over. */
export const BENCH_AGENTS = 10;
export const BENCH_USERS = 3;
export const BENCH_PRIORITIES = 5;

/**
 * The metadata `make bench` gives a memory or an ingest call, drawn from a
 * hash of `key` (a memory id, or a session id for an ingest call), so the
 * same memory gets the same metadata on every run and every resumed fill:
 * `agentId` one of BENCH_AGENTS (each ~10%: a selective filter), `userId`
 * one of BENCH_USERS, `priority` 0-4 (a number, not indexed: `gte 3` is
 * ~40%). The three are drawn from separate bytes of the hash.
 */
export function benchMetadata(key) {
  const h = createHash("sha256").update(`bench-metadata/${key}`).digest();
  return {
    agentId: `agent-${h.readUInt32BE(0) % BENCH_AGENTS}`,
    userId: `user-${h.readUInt32BE(4) % BENCH_USERS}`,
    priority: h.readUInt32BE(8) % BENCH_PRIORITIES,
  };
}

/** mulberry32: a small seeded PRNG. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const NAMES = (
  "Aaliyah Abel Ada Adrian Aiko Alba Alec Alma Amara Amir Anika Anton Arjun Astrid Aurora Avi Beatriz Bela Bianca Bo " +
  "Bram Caleb Camila Carmen Cyrus Dalia Dante Darius Delia Diego Dina Eamon Edith Elias Elif Elio Emeka Enzo Esme Ezra " +
  "Fatima Felix Freya Gaia Gideon Greta Hana Hugo Ilse Imani Ines Ira Ivo Jade Jalen Jasper Joon Jude Kai Kalani Karim " +
  "Keira Kenji Kofi Lars Leila Lena Levi Lior Luca Lucia Lyra Malik Mara Marek Mateo Maya Mila Milo Mina Nadia Nico Nina " +
  "Noor Odette Omar Orla Oscar Paloma Pia Priya Quinn Rafael Rania Remy Rhea Rosa Rumi Sahar Sami Selin Silas Sofia Soren " +
  "Tala Tariq Teo Thea Tomas Uma Valen Vera Viggo Wren Xavi Yara Yusuf Zadie Zara Zeke Zora"
).split(" ");

const MONTHS = { january: 0, february: 1, march: 2, april: 3, may: 4, june: 5, july: 6, august: 7, september: 8, october: 9, november: 10, december: 11 };

/** "1:56 pm on 8 May, 2023" -> epoch millis (UTC). */
export function parseLocomoDate(s) {
  const m = /(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})/i.exec(s || "");
  if (!m) return Date.UTC(2023, 0, 1);
  let h = Number(m[1]) % 12;
  if (m[3].toLowerCase() === "pm") h += 12;
  return Date.UTC(Number(m[6]), MONTHS[m[5].toLowerCase()] ?? 0, Number(m[4]), h, Number(m[2]));
}

function turnText(t) {
  const text = (t.text || "").trim();
  const caption = (t.blip_caption || "").trim().replace(/^a photo of /, "");
  if (!caption) return text;
  return text ? `${text} [shares a photo of ${caption}]` : `[shares a photo of ${caption}]`;
}

/** The conversations: speakers, sessions (date, turns), questions. */
export function loadLocomo(file) {
  const data = JSON.parse(readFileSync(file, "utf8"));
  return data.map((c, ci) => {
    const conv = c.conversation;
    const sessions = [];
    for (const [key, turns] of Object.entries(conv)) {
      const m = /^session_(\d+)$/.exec(key);
      if (!m || !Array.isArray(turns) || turns.length === 0) continue;
      const n = Number(m[1]);
      sessions.push({
        n,
        millis: parseLocomoDate(conv[`session_${n}_date_time`]),
        turns: turns.map((t) => ({ speaker: t.speaker, text: turnText(t) })).filter((t) => t.text),
      });
    }
    sessions.sort((a, b) => a.n - b.n);
    const questions = (c.qa || []).filter((q) => q.category >= 1 && q.category <= 4).map((q) => q.question);
    return { id: c.sample_id || `conv-${ci}`, a: conv.speaker_a, b: conv.speaker_b, sessions, questions };
  });
}

/** SHA-256 over length-prefixed fields, as core::ids::message_id. */
export function messageId(sessionId, role, content) {
  const h = createHash("sha256");
  for (const f of [sessionId, role, content]) {
    const b = Buffer.from(f, "utf8");
    const len = Buffer.alloc(8);
    len.writeBigUInt64BE(BigInt(b.length));
    h.update(len);
    h.update(b);
  }
  return h.digest("hex").slice(0, 32);
}

function hex(s, n) {
  return createHash("sha256").update(s).digest("hex").slice(0, n);
}

const STOP = new Set(
  ("a about after again all also am an and any are as at be been before being both but by can could did do does doing done " +
    "dont each few for from get got had has have having he her here hers hey hi him his how i if im in into is it its ive " +
    "just let lets lot many me more most much my myself no nor not now of off oh on once only or other our ours out over own " +
    "really same she should so some such than that thats the their theirs them then there these they this those to too " +
    "under until up us very was we were what when where which while who whom why will with would wow yeah you your youre yours").split(" "),
);

function words(s) {
  return (s.toLowerCase().match(/[a-z0-9]+/g) || []).filter((w) => !STOP.has(w));
}

function sentences(s) {
  return s
    .split(/(?<=[.!?])\s+/)
    .map((x) => x.trim())
    .filter((x) => x.split(/\s+/).length >= 4);
}

/**
 * A corpus with variants: variant k renames the two speakers of every
 * conversation, shifts its dates by (k mod 97)*37 days and swaps about one word in
 * twelve for another word of the corpus.
 */
export class Corpus {
  constructor(conversations, seed = 7) {
    this.convs = conversations;
    this.seed = seed;
    const vocab = new Set();
    for (const c of conversations)
      for (const s of c.sessions) for (const t of s.turns) for (const w of t.text.split(/\s+/)) if (/^[a-z]{5,}$/.test(w)) vocab.add(w);
    this.vocab = [...vocab];
    this.turns = conversations.reduce((n, c) => n + c.sessions.reduce((m, s) => m + s.turns.length, 0), 0);
  }

  names(k, ci) {
    const r = rng(this.seed * 7919 + k * 131 + ci);
    const a = NAMES[Math.floor(r() * NAMES.length)];
    let b = NAMES[Math.floor(r() * NAMES.length)];
    if (b === a) b = NAMES[(NAMES.indexOf(a) + 1) % NAMES.length];
    return k === 0 ? [this.convs[ci].a, this.convs[ci].b] : [a, b];
  }

  rename(text, c, [a, b]) {
    return text.replaceAll(c.a, a).replaceAll(c.b, b);
  }

  vary(text, r) {
    return text
      .split(" ")
      .map((w) => (/^[a-z]{5,}$/.test(w) && r() < 1 / 12 ? this.vocab[Math.floor(r() * this.vocab.length)] : w))
      .join(" ");
  }

  /** Every session of variant 0, 1, 2, ... in turn, with its variant. */
  *stream() {
    for (let variant = 0; ; variant++) for (const session of this.sessions(variant)) yield { variant, session };
  }

  /**
   * The sessions of variant k, each as stored messages and the memories a
   * rule-based extraction would produce from them (one per sentence of
   * four words or more). Yields { sessionId, millis, messages, memories }.
   */
  *sessions(k) {
    for (const [ci, c] of this.convs.entries()) {
      const names = this.names(k, ci);
      for (const s of c.sessions) {
        const r = rng(this.seed + k * 100003 + ci * 1009 + s.n);
        // Dates move with the variant, within a decade (valid timestamps).
        const millis = s.millis + (k % 97) * 37 * 86400000;
        const ts = new Date(millis).toISOString();
        const date = ts.slice(0, 10);
        const sessionId = `bench-v${k}-${c.id}-s${s.n}`;
        const messages = [];
        const memories = [];
        s.turns.forEach((t, i) => {
          const role = this.rename(t.speaker, c, names);
          const content = k === 0 ? t.text : this.vary(this.rename(t.text, c, names), r);
          const id = messageId(sessionId, role, content);
          messages.push({ kind: "message", id, sessionId, role, content, timestamp: ts, position: i, createdAt: ts });
          sentences(content).forEach((sentence, j) => {
            const w = words(sentence).filter((x) => x !== role.toLowerCase());
            if (w.length < 2) return;
            const topic = w.slice(0, 3).join(" ");
            const event = /\b(yesterday|last|ago|went|did|was|were|took|started|finished|visited|met)\b/i.test(sentence);
            const content2 = `${role}: ${sentence}`;
            const created = new Date(millis + i * 1000 + j).toISOString();
            const mem = {
              kind: "memory",
              id: (millis + i * 1000 + j).toString(16).padStart(12, "0").slice(-12) + hex(`${sessionId}/${i}/${j}`, 20),
              type: event ? "event" : "fact",
              summary: content2,
              content: content2,
              sessionId,
              sourceMessageIds: [id],
              searchQueries: event
                ? [`When did ${role} ${topic}?`, `What happened with ${topic}?`, `${role} ${topic}`]
                : [`What ${topic} does ${role} have?`, `What does ${role} say about ${topic}?`, `What is known about ${topic}?`],
              status: "active",
              eventDate: date,
              createdAt: created,
              updatedAt: created,
            };
            if (!event) mem.key = `${role.toLowerCase().replace(/[^a-z0-9]/g, "")}.${w.slice(0, 3).join("_")}`;
            memories.push(mem);
          });
        });
        yield { sessionId, millis, ts, messages, memories };
      }
    }
  }

  /** n varied questions over variants [0, variants). */
  questions(n, variants, seed = 99) {
    const r = rng(seed);
    const all = this.convs.flatMap((c, ci) => c.questions.map((q) => [ci, q]));
    const out = [];
    for (let i = 0; i < n; i++) {
      const [ci, q] = all[Math.floor(r() * all.length)];
      const k = Math.floor(r() * Math.max(1, variants));
      out.push(this.rename(q, this.convs[ci], this.names(k, ci)));
    }
    return out;
  }
}

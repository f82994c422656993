// Large ingest bodies at the documented limits, as `make bench-peaks` and
// `make bench-many` send them: 500 messages of 32 KB of generated text.
import { rng } from "./corpus.mjs";

/** The documented limits (src/core/api.rs). */
export const MESSAGES_PER_INGEST = 500;
export const MESSAGE_BYTES = 32 * 1024;

const WORDS = (
  "the a of to and in that it with for on as was at by from this have had not but what all were when we there can an " +
  "your which their said if do will each about how up out them then she many some so these would other into has more her " +
  "two like him see time could no make than first been its who now people my made over did down only way find use may water " +
  "long little very after words called just where most know get through back much before go good new write our used me man " +
  "too any day same right look think also around another came come work three word must because does part even place well " +
  "garden kitchen project meeting budget holiday train river mountain coffee dinner weekend sister brother doctor office " +
  "report invoice schedule concert museum library bicycle recipe festival harbour market village station airport"
).split(" ");
const NAMES = ["Alice", "Bruno", "Chen", "Dara", "Elif", "Farid", "Greta", "Hugo", "Ines", "Jonas"];
const CITIES = ["Lisbon", "Oslo", "Kyoto", "Lima", "Accra", "Tallinn", "Porto", "Quebec", "Hanoi", "Bergen"];
const THINGS = ["tea", "jazz", "chess", "hiking", "sushi", "opera", "tennis", "poetry", "pottery", "sailing"];

/**
 * Exactly `bytes` of ASCII text. `statements` false: a conversation's
 * questions, with a statement (a first-person fact now and then) about
 * twice a message, so the local rule-based extraction (every sentence
 * that states something becomes a memory) makes a few memories of each
 * message; true: prose, every sentence a statement, each one a memory.
 */
function text(rand, bytes, statements) {
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const words = () => {
    const w = Array.from({ length: 8 + Math.floor(rand() * 14) }, () => pick(WORDS));
    w[0] = w[0][0].toUpperCase() + w[0].slice(1);
    return w.join(" ");
  };
  let out = "";
  while (out.length < bytes) {
    let s;
    if (statements || out.length === 0 || rand() < 0.005) {
      const r = rand();
      if (r < 0.03) s = `I moved to ${pick(CITIES)} in ${2000 + Math.floor(rand() * 25)}.`;
      else if (r < 0.06) s = `My favorite hobby is ${pick(THINGS)}.`;
      else if (r < 0.08) s = `My friend ${pick(NAMES)} works as a ${pick(["nurse", "pilot", "teacher", "chef", "lawyer"])}.`;
      else s = words() + ".";
    } else s = words() + "?";
    out += (out ? " " : "") + s;
  }
  return out.slice(0, bytes);
}

/** One ingest's body: `n` messages of 32 KB ([`text`]) in session `session`. */
export function ingestBody(session, seed, n = MESSAGES_PER_INGEST, statements = false) {
  const rand = rng(seed);
  const t0 = Date.UTC(2024, 0, 1) + seed * 86_400_000;
  const messages = Array.from({ length: n }, (_, i) => ({
    role: i % 2 === 0 ? "user" : "assistant",
    content: text(rand, MESSAGE_BYTES, statements),
    timestamp: new Date(t0 + i * 60_000).toISOString(),
  }));
  return JSON.stringify({ messages, sessionId: session });
}

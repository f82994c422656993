// Pure helpers: parsing a pasted conversation and formatting values.
// No DOM here, so these can be read (and tested) on their own.

const ROLE_LINE = /^\s*(user|assistant|system|tool|developer|human|ai|bot|model)\s*:\s?(.*)$/i;
const ROLE_ALIAS = { human: "user", ai: "assistant", bot: "assistant", model: "assistant" };

/**
 * Parses a pasted conversation: a JSON array of {role, content, timestamp?}
 * (or an object with a `messages` array), or "role: text" lines where a
 * line without a role continues the message before it.
 * Returns { messages } or throws an Error saying what is wrong.
 */
export function parseConversation(text) {
  const src = String(text || "").trim();
  if (!src) throw new Error("Paste a conversation first.");
  if (src.startsWith("[") || src.startsWith("{")) {
    let data;
    try {
      data = JSON.parse(src);
    } catch (e) {
      throw new Error(`The conversation looks like JSON but does not parse: ${e.message}`);
    }
    const list = Array.isArray(data) ? data : data?.messages;
    if (!Array.isArray(list)) throw new Error("JSON must be an array of {role, content} messages.");
    const messages = list.map((m, i) => {
      if (!m || typeof m !== "object") throw new Error(`Message ${i + 1} is not an object.`);
      const role = typeof m.role === "string" ? m.role.trim() : "";
      const content = typeof m.content === "string" ? m.content : "";
      if (!role) throw new Error(`Message ${i + 1} has no role.`);
      if (!content.trim()) throw new Error(`Message ${i + 1} has no content.`);
      const out = { role, content };
      if (typeof m.timestamp === "string" && m.timestamp.trim()) out.timestamp = m.timestamp.trim();
      return out;
    });
    if (!messages.length) throw new Error("The conversation has no messages.");
    return { messages };
  }
  const messages = [];
  src.split(/\r?\n/).forEach((line, i) => {
    const m = ROLE_LINE.exec(line);
    if (m) {
      const role = m[1].toLowerCase();
      messages.push({ role: ROLE_ALIAS[role] || role, content: m[2] });
    } else if (messages.length) {
      messages[messages.length - 1].content += `\n${line}`;
    } else if (line.trim()) {
      throw new Error(`Line ${i + 1} does not start with a role ("user:", "assistant:", ...).`);
    }
  });
  for (const m of messages) m.content = m.content.trim();
  const empty = messages.findIndex((m) => !m.content);
  if (empty >= 0) throw new Error(`Message ${empty + 1} (${messages[empty].role}) is empty.`);
  if (!messages.length) throw new Error("The conversation has no messages.");
  return { messages };
}

/** 1536 -> "1.5 KB". */
export function formatBytes(n) {
  if (!Number.isFinite(n)) return "–";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** ISO date-time -> "2026-04-15 10:02" (UTC), or the input if it does not parse. */
export function formatDate(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  if (/^\d{4}-\d{2}-\d{2}$/.test(iso)) return iso;
  return `${d.toISOString().slice(0, 16).replace("T", " ")} UTC`;
}

export function formatNumber(n) {
  return Number.isFinite(n) ? n.toLocaleString("en-US") : "–";
}

/** `attachment; filename="a-b.ndjson"` -> "a-b.ndjson". */
export function filenameFrom(disposition, fallback) {
  const m = /filename\*?=(?:UTF-8'')?"?([^";]+)"?/i.exec(disposition || "");
  const name = m ? decodeURIComponent(m[1]).replace(/[\\/]/g, "_") : "";
  return name || fallback;
}

/** A session id for a pasted conversation: console-2026-04-15-1002. */
export function newSessionId(now = new Date()) {
  const s = now.toISOString();
  return `console-${s.slice(0, 10)}-${s.slice(11, 13)}${s.slice(14, 16)}${s.slice(17, 19)}`;
}

export const NAME_PATTERN = /^[A-Za-z0-9._-]{1,32}$/;
export const PROFILE_PATTERN = /^[A-Za-z0-9._@+-]{1,100}$/;

/** Is this a usable namespace name? */
export function isName(s) {
  return NAME_PATTERN.test(s) && s !== "." && s !== "..";
}

/** Is this a usable profile name (an email serves)? */
export function isProfileName(s) {
  return PROFILE_PATTERN.test(s) && s !== "." && s !== "..";
}

/** The distinctive end of an id (memory ids start with a shared time prefix). */
export function shortId(id) {
  return id ? `…${id.slice(-8)}` : "";
}

// ---- metadata ----

/** The kinds a metadata value may have, as the editor offers them. */
export const META_KINDS = ["string", "number", "boolean"];

/** A metadata value's kind: "string", "number" or "boolean". */
export function metaKind(v) {
  return typeof v === "number" ? "number" : typeof v === "boolean" ? "boolean" : "string";
}

/** A memory's metadata as [key, value] pairs, keys in order ([] for none). */
export function metaEntries(metadata) {
  if (!metadata || typeof metadata !== "object" || Array.isArray(metadata)) return [];
  return Object.entries(metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;

/**
 * The metadata editor's rows, [{ key, type, value }] with `value` the
 * text typed ("true"/"false" for a boolean), as the object PATCH sends.
 * Throws an Error naming the row when a row cannot be one: no key, a key
 * twice, a number that is not one. Whether a key is allowed is the
 * service's to say (it answers 400 with the reason).
 */
export function metadataFromRows(rows) {
  const out = Object.create(null); // a key "__proto__" stays a key
  rows.forEach((r, i) => {
    const key = String(r.key ?? "").trim();
    if (!key) throw new Error(`Field ${i + 1} has no key.`);
    if (Object.hasOwn(out, key)) throw new Error(`The key “${key}” is there twice.`);
    const text = String(r.value ?? "");
    let value;
    if (r.type === "number") {
      if (!JSON_NUMBER.test(text.trim()) || !Number.isFinite(Number(text))) {
        throw new Error(`“${key}” is a number, but “${text.trim()}” is not one.`);
      }
      value = Number(text);
    } else if (r.type === "boolean") {
      if (text !== "true" && text !== "false") throw new Error(`“${key}” is a boolean: true or false.`);
      value = text === "true";
    } else {
      value = text;
    }
    out[key] = value;
  });
  return { ...out };
}

/** Metadata as one line of text, for searching a page: "k=v k2=v2". */
export function metaText(metadata) {
  return metaEntries(metadata)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
}

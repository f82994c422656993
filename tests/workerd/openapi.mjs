// Checks responses against the OpenAPI document (src/openapi.json).
//
//   import { validateResponse } from "./openapi.mjs";
//   validateResponse(doc, "GET", "/accounts/{account}/.../memories", 200, body);
//
// `validateResponse` throws an Error naming the operation, the status and
// every mismatch (with its JSON path) when `body` does not fit the document.
// It is a small JSON Schema validator for the subset the document uses:
// $ref (local JSON pointers), type (including type arrays such as
// ["string", "null"]), properties, required, additionalProperties, items,
// enum, const, oneOf, anyOf, allOf, minimum, maximum, minLength, maxLength,
// pattern, minItems, maxItems. A keyword outside that subset is an error,
// so the document cannot silently outgrow the validator.
//
// No dependencies and no Node APIs at module level, so it loads in workerd.
// `node tests/workerd/openapi.mjs --self-test` checks it against the
// document and a few hand-written envelopes.

/** Keywords the validator enforces. */
const ASSERTING = new Set([
  "$ref", "type", "properties", "required", "additionalProperties", "items", "enum", "const",
  "oneOf", "anyOf", "allOf", "minimum", "maximum", "minLength", "maxLength", "pattern",
  "minItems", "maxItems",
]);
/** Keywords that only annotate. */
const ANNOTATING = new Set(["description", "default", "title", "format", "examples", "deprecated", "readOnly", "writeOnly", "contentMediaType"]);

/** Resolves a local `$ref` ("#/components/schemas/Memory") in `doc`. */
export function resolveRef(doc, ref) {
  if (typeof ref !== "string" || !ref.startsWith("#/")) {
    throw new Error(`unsupported $ref ${JSON.stringify(ref)}: only local references are supported`);
  }
  let node = doc;
  for (const raw of ref.slice(2).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (node === null || typeof node !== "object" || !(key in node)) {
      throw new Error(`unresolved $ref ${ref}`);
    }
    node = node[key];
  }
  return node;
}

function typeOf(value) {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value; // "string" | "number" | "boolean" | "object" | "undefined"
}

function fitsType(type, value) {
  switch (type) {
    case "null": return value === null;
    case "boolean": return typeof value === "boolean";
    case "string": return typeof value === "string";
    case "number": return typeof value === "number" && Number.isFinite(value);
    case "integer": return typeof value === "number" && Number.isInteger(value);
    case "array": return Array.isArray(value);
    case "object": return value !== null && typeof value === "object" && !Array.isArray(value);
    default: throw new Error(`unsupported type ${JSON.stringify(type)}`);
  }
}

function deepEqual(a, b) {
  if (a === b) return true;
  if (typeOf(a) !== typeOf(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (a && typeof a === "object") {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual(a[k], b[k]));
  }
  return false;
}

const show = (v) => {
  const s = JSON.stringify(v);
  return s === undefined ? String(v) : s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

/**
 * Validates `value` against `schema` (resolving `$ref` in `doc`) and
 * returns a list of error strings, empty when it fits.
 */
export function validate(doc, schema, value, path = "$", errors = []) {
  if (schema === true || schema === undefined) return errors;
  if (schema === false) {
    errors.push(`${path}: no value is allowed here`);
    return errors;
  }
  for (const k of Object.keys(schema)) {
    if (!ASSERTING.has(k) && !ANNOTATING.has(k)) {
      throw new Error(`schema keyword ${JSON.stringify(k)} at ${path} is not supported by this validator`);
    }
  }
  if (schema.$ref !== undefined) {
    validate(doc, resolveRef(doc, schema.$ref), value, path, errors);
  }
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((t) => fitsType(t, value))) {
      errors.push(`${path}: expected ${types.join(" or ")}, got ${typeOf(value)} ${show(value)}`);
      return errors; // the other keywords would only repeat this
    }
  }
  if (schema.const !== undefined && !deepEqual(schema.const, value)) {
    errors.push(`${path}: expected ${show(schema.const)}, got ${show(value)}`);
  }
  if (schema.enum !== undefined && !schema.enum.some((e) => deepEqual(e, value))) {
    errors.push(`${path}: ${show(value)} is not one of ${show(schema.enum)}`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${path}: ${value} is below the minimum ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${path}: ${value} is above the maximum ${schema.maximum}`);
  }
  if (typeof value === "string") {
    const length = [...value].length; // code points, as JSON Schema counts
    if (schema.minLength !== undefined && length < schema.minLength) errors.push(`${path}: length ${length} is below minLength ${schema.minLength}`);
    if (schema.maxLength !== undefined && length > schema.maxLength) errors.push(`${path}: length ${length} is above maxLength ${schema.maxLength}`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) {
      errors.push(`${path}: ${show(value)} does not match ${schema.pattern}`);
    }
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) errors.push(`${path}: ${value.length} items, fewer than minItems ${schema.minItems}`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) errors.push(`${path}: ${value.length} items, more than maxItems ${schema.maxItems}`);
    if (schema.items !== undefined) value.forEach((item, i) => validate(doc, schema.items, item, `${path}[${i}]`, errors));
  }
  if (fitsType("object", value)) {
    // A property whose value is `undefined` is absent, as JSON.stringify has it.
    for (const name of schema.required ?? []) {
      if (value[name] === undefined || !Object.hasOwn(value, name)) errors.push(`${path}: missing required property ${JSON.stringify(name)}`);
    }
    const props = schema.properties ?? {};
    for (const [name, v] of Object.entries(value)) {
      if (v === undefined) continue;
      const at = /^[A-Za-z_$][\w$]*$/.test(name) ? `${path}.${name}` : `${path}[${JSON.stringify(name)}]`;
      if (Object.hasOwn(props, name)) {
        validate(doc, props[name], v, at, errors);
      } else if (schema.additionalProperties === false) {
        errors.push(`${path}: unexpected property ${JSON.stringify(name)} (allowed: ${Object.keys(props).join(", ")})`);
      } else if (schema.additionalProperties !== undefined) {
        validate(doc, schema.additionalProperties, v, at, errors);
      }
    }
  }
  if (schema.allOf !== undefined) {
    for (const sub of schema.allOf) validate(doc, sub, value, path, errors);
  }
  if (schema.anyOf !== undefined) {
    const tries = schema.anyOf.map((sub) => validate(doc, sub, value, path, []));
    if (!tries.some((e) => e.length === 0)) {
      errors.push(`${path}: fits none of anyOf: ${tries.map((e, i) => `[${i}] ${e[0]}`).join("; ")}`);
    }
  }
  if (schema.oneOf !== undefined) {
    const tries = schema.oneOf.map((sub) => validate(doc, sub, value, path, []));
    const fits = tries.filter((e) => e.length === 0).length;
    if (fits !== 1) {
      errors.push(fits === 0
        ? `${path}: fits none of oneOf: ${tries.map((e, i) => `[${i}] ${e[0]}`).join("; ")}`
        : `${path}: fits ${fits} of oneOf, exactly one expected`);
    }
  }
  return errors;
}

function follow(doc, node) {
  // Response objects and others may be references.
  let seen = 0;
  while (node && typeof node === "object" && typeof node.$ref === "string" && seen++ < 16) node = resolveRef(doc, node.$ref);
  return node;
}

/**
 * Checks a response against the document.
 *
 * - `method`: "GET", "POST", "DELETE" (any case).
 * - `pathTemplate`: a key of `doc.paths`, e.g.
 *   "/accounts/{account}/agent-memory/namespaces/{namespace}/profiles/{profile}/recall".
 * - `status`: the HTTP status (number or string); looked up as itself, then
 *   as "4XX"/"5XX", then as "default".
 * - `body`: the parsed JSON body, or a string. A string is taken as is for
 *   a non-JSON media type (the NDJSON export), otherwise parsed as JSON.
 * - `contentType` (optional): the response's content type; when absent the
 *   JSON media type is preferred.
 *
 * Returns the schema that matched; throws an Error listing every mismatch.
 */
export function validateResponse(doc, method, pathTemplate, status, body, contentType) {
  const where = `${String(method).toUpperCase()} ${pathTemplate} -> ${status}`;
  const fail = (msg) => { throw new Error(`OpenAPI mismatch for ${where}: ${msg}`); };
  const pathItem = doc?.paths?.[pathTemplate];
  if (!pathItem) fail(`the document has no path ${JSON.stringify(pathTemplate)}`);
  const operation = pathItem[String(method).toLowerCase()];
  if (!operation) fail(`the path has no ${String(method).toUpperCase()} operation (it has: ${Object.keys(pathItem).filter((k) => k !== "parameters").join(", ")})`);
  const code = String(status);
  const responses = operation.responses ?? {};
  const response = follow(doc, responses[code] ?? responses[`${code[0]}XX`] ?? responses.default);
  if (!response) fail(`status ${code} is not documented (documented: ${Object.keys(responses).join(", ")})`);
  const content = response.content ?? {};
  const types = Object.keys(content);
  if (types.length === 0) {
    if (body !== undefined && body !== null && body !== "") fail("the response is documented without a body");
    return undefined;
  }
  const base = contentType ? String(contentType).split(";")[0].trim().toLowerCase() : undefined;
  let mediaType;
  if (base) {
    mediaType = types.find((t) => t.toLowerCase() === base);
    if (!mediaType) fail(`content type ${base} is not documented (documented: ${types.join(", ")})`);
  } else {
    mediaType = types.find((t) => t === "application/json") ?? types[0];
  }
  const isJson = mediaType === "application/json" || mediaType.endsWith("+json");
  let value = body;
  if (isJson && typeof body === "string") {
    try {
      value = JSON.parse(body);
    } catch (e) {
      fail(`the body is not JSON: ${e.message}`);
    }
  }
  const schema = content[mediaType].schema ?? true;
  const errors = validate(doc, schema, value);
  if (errors.length > 0) {
    const shown = errors.slice(0, 20).join("\n  ");
    fail(`${errors.length} problem(s) with the ${mediaType} body:\n  ${shown}${errors.length > 20 ? "\n  ..." : ""}`);
  }
  return schema;
}

/** Every schema keyword the document uses that this validator does not know. */
export function unsupportedKeywords(doc) {
  const out = new Set();
  const visit = (schema) => {
    if (!schema || typeof schema !== "object") return;
    for (const [k, v] of Object.entries(schema)) {
      if (!ASSERTING.has(k) && !ANNOTATING.has(k)) out.add(k);
      if (k === "properties") Object.values(v).forEach(visit);
      else if (k === "items" || k === "additionalProperties") visit(v);
      else if (k === "oneOf" || k === "anyOf" || k === "allOf") v.forEach(visit);
    }
  };
  const mediaSchemas = (content) => Object.values(content ?? {}).forEach((m) => visit(m.schema));
  Object.values(doc.components?.schemas ?? {}).forEach(visit);
  Object.values(doc.components?.parameters ?? {}).forEach((p) => visit(p.schema));
  Object.values(doc.components?.responses ?? {}).forEach((r) => mediaSchemas(r.content));
  for (const item of Object.values(doc.paths ?? {})) {
    for (const [k, op] of Object.entries(item)) {
      if (k === "parameters") { op.forEach((p) => visit(follow(doc, p).schema)); continue; }
      (op.parameters ?? []).forEach((p) => visit(follow(doc, p).schema));
      mediaSchemas(follow(doc, op.requestBody)?.content);
      Object.values(op.responses ?? {}).forEach((r) => mediaSchemas(follow(doc, r).content));
    }
  }
  return [...out];
}

// ---------------------------------------------------------------------------
// Self-test: node tests/workerd/openapi.mjs --self-test

async function selfTest() {
  const { readFileSync } = await import("node:fs");
  const doc = JSON.parse(readFileSync(new URL("../../src/openapi.json", import.meta.url), "utf8"));
  const BASE = "/accounts/{account}/agent-memory/namespaces/{namespace}/profiles/{profile}";
  const ID = "01kppncc00f1t2zrw2mrtmb8qx"; // a ULID, as memory ids are made now
  const OLD_ID = "0123456789abcdef0123456789abcdef"; // a memory id of the earlier form
  const MSG = "fedcba9876543210fedcba9876543210";
  const memory = {
    id: ID, type: "fact", key: "user.package_manager", summary: "The user prefers pnpm.",
    content: "The user prefers pnpm over npm.", sessionId: "s1", sourceMessageIds: [MSG],
    searchQueries: ["Which package manager does the user prefer?"], status: "active",
    createdAt: "2026-04-15T10:00:00.000Z", updatedAt: "2026-04-15T10:00:00.000Z",
  };
  const ok = (result, extra = {}) => ({ success: true, errors: [], messages: [], result, ...extra });
  const err = (code, message) => ({ success: false, errors: [{ code, message }], messages: [], result: null });
  let passed = 0;
  const failures = [];
  const expectOk = (name, ...args) => {
    try { validateResponse(doc, ...args); passed++; } catch (e) { failures.push(`${name}: unexpected rejection: ${e.message}`); }
  };
  const expectFail = (name, needle, ...args) => {
    try { validateResponse(doc, ...args); failures.push(`${name}: was accepted`); } catch (e) {
      if (e.message.includes(needle)) passed++; else failures.push(`${name}: rejected for the wrong reason: ${e.message}`);
    }
  };

  const unknown = unsupportedKeywords(doc);
  if (unknown.length) failures.push(`the document uses unsupported keywords: ${unknown.join(", ")}`); else passed++;
  for (const [p, item] of Object.entries(doc.paths)) {
    for (const [m, op] of Object.entries(item)) {
      if (m === "parameters") continue;
      for (const r of Object.values(op.responses)) follow(doc, r); // every reference resolves
      passed++;
      if (!op.operationId) failures.push(`${m.toUpperCase()} ${p} has no operationId`);
    }
  }

  expectOk("remember ok", "POST", `${BASE}/remember`, 200, ok(memory));
  expectOk("remember ok, an id of the earlier form, no session", "POST", `${BASE}/remember`, 200, ok({ ...memory, id: OLD_ID, sessionId: null }));
  expectOk("remember ok as text", "post", `${BASE}/remember`, "200", JSON.stringify(ok(memory)), "application/json; charset=utf-8");
  expectOk("empty recall", "POST", `${BASE}/recall`, 200, ok({ result: "", answer: "", count: 0, candidates: [] }));
  expectOk("recall with notes and trace", "POST", `${BASE}/recall`, 200, {
    ...ok({
      result: "The user prefers pnpm over npm.", answer: "The user prefers pnpm over npm.", count: 1,
      candidates: [{ id: ID, type: "fact", summary: "pnpm", sessionId: "s1", score: 0.05, sourceMessageIds: [MSG],
        trace: [{ channel: "key", rank: 1, weight: 2, contribution: 2 / 61 }] }],
    }),
    messages: [{ code: 10100, message: "channel vector failed: no query embedding" }],
  });
  const { content, sourceMessageIds, searchQueries, ...entry } = memory;
  const CURSOR = "01kppncc00f1t2zrw2mrtmb8qx.0123456789ab"; // a sealed cursor: position and seal
  expectOk("list page", "GET", `${BASE}/memories`, 200, ok({ memories: [entry], cursor: CURSOR }, { result_info: { cursor: CURSOR, count: 1 } }));
  expectFail("list page, an unsealed cursor", "cursor", "GET", `${BASE}/memories`, 200, ok({ memories: [entry], cursor: ID }, { result_info: { cursor: ID, count: 1 } }));
  expectOk("last list page", "GET", `${BASE}/memories`, 200, ok({ memories: [] }, { result_info: { cursor: null, count: 0 } }));
  expectOk("not found", "GET", `${BASE}/memories/{id}`, 404, err(10004, "no memory with id x"));
  expectOk("undocumented status falls to default", "GET", `${BASE}/stats`, 404, err(10004, "no route"));
  expectOk("export", "GET", `${BASE}/export`, 200, '{"kind":"header"}\n', "application/x-ndjson");
  expectOk("health", "GET", "/health", 200, ok({ status: "ok", service: "agent-memory", version: "0.1.0" }));

  expectFail("missing status", 'missing required property "status"', "POST", `${BASE}/remember`, 200,
    ok({ ...memory, status: undefined }));
  expectFail("renamed field", 'missing required property "sourceMessageIds"', "POST", `${BASE}/remember`, 200,
    ok((({ sourceMessageIds, ...m }) => ({ ...m, source_message_ids: sourceMessageIds }))(memory)));
  expectFail("bad enum", '"note" is not one of', "POST", `${BASE}/remember`, 200, ok({ ...memory, type: "note" }));
  expectFail("bad id", "does not match", "POST", `${BASE}/remember`, 200, ok({ ...memory, id: "not-an-id" }));
  expectFail("id over 64 characters", "above maxLength", "POST", `${BASE}/remember`, 200, ok({ ...memory, id: "a".repeat(65) }));
  expectFail("string count", "expected integer", "POST", `${BASE}/recall`, 200,
    ok({ result: "", answer: "", count: "0", candidates: [] }));
  expectFail("negative count", "below the minimum", "POST", `${BASE}/recall`, 200,
    ok({ result: "", answer: "", count: -1, candidates: [] }));
  expectFail("success flag of an error", "expected false", "GET", `${BASE}/memories/{id}`, 404,
    { ...err(10004, "x"), success: true });
  expectFail("error without errors", "fewer than minItems", "GET", `${BASE}/memories/{id}`, 404,
    { success: false, errors: [], messages: [], result: null });
  expectFail("errors on success", "more than maxItems", "GET", `${BASE}/stats`, 200,
    { ...ok(null), errors: [{ code: 1, message: "x" }] });
  expectFail("unknown path", "has no path", "GET", `${BASE}/nope`, 200, ok({}));
  expectFail("unknown method", "has no PUT operation", "PUT", `${BASE}/memories`, 200, ok({}));
  expectFail("wrong media type", "is not documented", "GET", `${BASE}/export`, 200, "x", "text/csv");

  // The validator itself, on schema shapes the document may come to use.
  const tiny = { components: { schemas: { N: { type: ["string", "null"], maxLength: 2 } } } };
  const v = (schema, value) => validate(tiny, schema, value);
  const checks = [
    [v({ $ref: "#/components/schemas/N" }, null).length === 0, "nullable via type array"],
    [v({ $ref: "#/components/schemas/N" }, "abc").length === 1, "maxLength through $ref"],
    [v({ oneOf: [{ type: "string" }, { type: "integer" }] }, 3).length === 0, "oneOf one fits"],
    [v({ oneOf: [{ type: "number" }, { type: "integer" }] }, 3).length === 1, "oneOf two fit"],
    [v({ anyOf: [{ type: "string" }, { type: "integer" }] }, true).length === 1, "anyOf none fits"],
    [v({ type: "object", additionalProperties: { type: "integer" } }, { a: 1, b: "x" }).length === 1, "additionalProperties schema"],
    [v({ type: "string", minLength: 2 }, "é").length === 1 && v({ type: "string", maxLength: 1 }, "😀").length === 0, "lengths in code points"],
    [v({ const: { a: [1] } }, { a: [1] }).length === 0, "deep const"],
  ];
  for (const [good, name] of checks) if (good) passed++; else failures.push(`validator: ${name}`);
  let threw = false;
  try { v({ not: {} }, 1); } catch { threw = true; }
  if (threw) passed++; else failures.push("validator: an unsupported keyword must throw");

  if (failures.length) {
    console.error(`openapi.mjs self-test: ${failures.length} failure(s), ${passed} passed\n- ${failures.join("\n- ")}`);
    process.exitCode = 1;
  } else {
    console.log(`openapi.mjs self-test: ${passed} checks passed`);
  }
}

if (typeof process !== "undefined" && Array.isArray(process.argv) && process.argv.includes("--self-test")
    && import.meta.url.endsWith("/openapi.mjs") && String(process.argv[1] ?? "").endsWith("openapi.mjs")) {
  selfTest().catch((e) => { console.error(e); process.exitCode = 1; });
}

// The service's enums and limits, read from the OpenAPI document the
// Worker serves (`/openapi.json`, held to the Rust records by
// tests/wit_agreement.rs): the console keeps no copy of its own. `load()`
// runs once at start; the views read `contract` after it.

export const contract = {
  types: [],
  statuses: [],
  responseLengths: [],
  recallLimitMax: 0,
  queryMaxBytes: 0,
  rememberMinChars: 0,
  contentMaxBytes: 0,
};

function schema(doc, name) {
  const s = doc?.components?.schemas?.[name];
  if (!s) throw new Error(`the service's contract has no schema ${name}`);
  return s;
}

/** Fetches the document and fills `contract`; throws if it cannot. */
export async function load(origin = "") {
  const res = await fetch(`${origin}/openapi.json`);
  if (!res.ok) throw new Error(`the service's contract did not load (${res.status})`);
  const doc = await res.json();
  contract.types = schema(doc, "MemoryType").enum;
  contract.statuses = schema(doc, "Status").enum;
  contract.responseLengths = schema(doc, "ResponseLength").enum;
  const recall = schema(doc, "RecallRequest").properties;
  contract.recallLimitMax = recall.limit.maximum;
  contract.queryMaxBytes = recall.query.maxLength;
  const content = schema(doc, "RememberRequest").properties.content;
  contract.rememberMinChars = content.minLength;
  contract.contentMaxBytes = content.maxLength;
  return contract;
}

const label = (s) => s.charAt(0).toUpperCase() + s.slice(1);

/** Fills a <select> with one option per value, after its first ("any") option. */
export function fillOptions(select, values, selected) {
  const keep = [...select.options].filter((o) => o.value === "");
  select.replaceChildren(...keep);
  for (const v of values) {
    const o = document.createElement("option");
    o.value = v;
    o.textContent = label(v);
    if (v === selected) o.selected = true;
    select.append(o);
  }
}

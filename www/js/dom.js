// Small DOM helpers. Text always goes in as text nodes (never innerHTML),
// so stored memories and messages cannot inject markup into the console.

/**
 * h("button", { class: "btn", onclick, dataset: { id } }, "Label", child...)
 * Attributes: `class`, `dataset`, `on*` handlers, booleans (true sets,
 * false/null/undefined skips), anything else via setAttribute.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "style") for (const [p, val] of Object.entries(v)) el.style.setProperty(p, val);
    else if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
}

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Disables a form's controls while `fn` runs; sets aria-busy. */
export async function busy(form, fn) {
  const controls = $$("button, input, select, textarea", form).filter((c) => !c.disabled);
  form.setAttribute("aria-busy", "true");
  for (const c of controls) c.disabled = true;
  try {
    return await fn();
  } finally {
    for (const c of controls) c.disabled = false;
    form.removeAttribute("aria-busy");
  }
}

/** A small SVG icon from the sprite in index.html. */
export function icon(name, label) {
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "icon");
  if (label) {
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", label);
  } else {
    svg.setAttribute("aria-hidden", "true");
  }
  const use = document.createElementNS("http://www.w3.org/2000/svg", "use");
  use.setAttribute("href", `#i-${name}`);
  svg.append(use);
  return svg;
}

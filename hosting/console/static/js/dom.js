// Building DOM nodes without HTML strings: text always goes in as text, never as markup.

/**
 * h("tag.class#id", {attr: value, onclick: fn}, ...children)
 * Children may be strings (inserted as text), nodes, arrays or null/false (skipped).
 */
export function h(spec, attrs = {}, ...children) {
  const [tagAndClasses, id] = spec.split("#");
  const [tag, ...classes] = tagAndClasses.split(".");
  const el = document.createElement(tag || "div");
  if (id) el.id = id;
  if (classes.length) el.className = classes.join(" ");
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(parent, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    parent.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return parent;
}

export function clear(el) {
  while (el.firstChild) el.firstChild.remove();
  return el;
}

/** Pretty JSON as text (for <pre>). */
export function json(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

export function formatTime(text) {
  if (!text) return "—";
  const date = new Date(text);
  return Number.isNaN(date.getTime()) ? String(text) : date.toLocaleString();
}

export function formatBytes(n) {
  if (n === null || n === undefined) return "—";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(2)} MiB`;
}

/** A labelled form control: <div class="field"><label for=id>text</label>control</div> */
export function field(labelText, control, hint) {
  if (!control.id) control.id = `f-${Math.random().toString(36).slice(2, 9)}`;
  const parts = [h("label", { for: control.id }, labelText), control];
  if (hint) {
    const hintId = `${control.id}-hint`;
    control.setAttribute("aria-describedby", hintId);
    parts.push(h("p.hint", { id: hintId }, hint));
  }
  return h("div.field", {}, parts);
}

export function statusBadge(status) {
  const value = String(status || "unknown");
  return h(`span.badge.status-${value.toLowerCase().replace(/[^a-z_]/g, "")}`, {}, value);
}

/** "12 in · 30 out · 42 total" from a usage object (wire or snake case). */
export function formatUsage(usage) {
  if (!usage || typeof usage !== "object") return "—";
  const pick = (...names) => names.map((n) => usage[n]).find((v) => v !== undefined && v !== null);
  const input = pick("inputTokenCount", "input_token_count", "input_tokens");
  const output = pick("outputTokenCount", "output_token_count", "output_tokens");
  const total = pick("totalTokenCount", "total_token_count", "total_tokens");
  const parts = [];
  if (input !== undefined) parts.push(`${input} in`);
  if (output !== undefined) parts.push(`${output} out`);
  if (total !== undefined) parts.push(`${total} total`);
  return parts.length ? parts.join(" · ") : "—";
}

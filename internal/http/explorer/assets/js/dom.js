// dom.js — the one way the explorer builds pages: elements made with createElement and every
// piece of API text set as a text node, never parsed as markup. A stored "<script>" or
// "<img onerror=…>" is shown as those characters and nothing runs (the page's
// Content-Security-Policy would block it anyway).

// h makes an element: h("a", {href: "#/x", class: "c"}, "text", child, [more]).
// Props: class, text attributes, `on` (event listeners), `dataset`, `style` (CSSOM, not an
// attribute), boolean properties (checked, disabled, …) set as properties.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === "on") {
        for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      } else if (k === "dataset") {
        Object.assign(el.dataset, v);
      } else if (k === "style") {
        Object.assign(el.style, v);
      } else if (k === "class") {
        el.className = Array.isArray(v) ? v.filter(Boolean).join(" ") : v;
      } else if (k === "value" || k === "checked" || k === "disabled" || k === "selected" || k === "open") {
        el[k] = v;
      } else if (k === "href" && !safeHref(String(v))) {
        // Links are built from ids; anything that is not a local path or fragment is dropped.
      } else {
        el.setAttribute(k, v === true ? "" : String(v));
      }
    }
  }
  append(el, children);
  return el;
}

function safeHref(v) {
  return v.startsWith("#") || (v.startsWith("/") && !v.startsWith("//"));
}

export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// text is API text as a node.
export const text = (s) => document.createTextNode(s === undefined || s === null ? "" : String(s));

let uid = 0;
export const nextId = (prefix) => `${prefix}-${++uid}`;

// route builds a fragment link from path segments, each encoded.
export function route(...parts) {
  let query = "";
  if (parts.length && typeof parts[parts.length - 1] === "object") {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(parts.pop())) if (v !== undefined && v !== null && v !== "") q.set(k, v);
    const s = q.toString();
    if (s) query = "?" + s;
  }
  return "#/" + parts.map((p) => encodeURIComponent(String(p))).join("/") + query;
}

export function fmtTime(s) {
  if (!s) return "—";
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) return String(s);
  return d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC");
}

export function fmtScore(x) {
  return typeof x === "number" ? x.toFixed(3) : "—";
}

// json renders any JSON value as indented text.
export function json(v) {
  return h("pre", { class: "mono" }, JSON.stringify(v, null, 2));
}

export function loading(what) {
  return h("p", { class: "muted", role: "status" }, `Loading ${what}…`);
}

// dl renders [label, value] pairs, skipping undefined values.
export function facts(pairs) {
  const dl = h("dl", { class: "facts" });
  for (const [k, v] of pairs) {
    if (v === undefined || v === null || v === "") continue;
    dl.append(h("dt", null, k), h("dd", null, v));
  }
  return dl;
}

// ui.js — pieces every view shares.
import { h } from "./dom.js";

// problemView shows a problem in the API's own words.
export function problemView(p) {
  const b = (p && p.body) || { title: String(p) };
  return h("div", { class: "problem", role: "alert" },
    h("strong", null, b.title || "Error"), b.status ? ` (${b.status}${b.code ? ", " + b.code : ""})` : "",
    b.detail ? h("p", null, b.detail) : null,
    b.path ? h("p", { class: "muted" }, "At ", h("code", null, b.path)) : null,
    b.requestId ? h("p", { class: "muted" }, "Request id ", h("code", null, b.requestId)) : null);
}

// pager is a "Load more" button that calls more() and disappears when there is nothing left.
export function moreButton(label, more) {
  const btn = h("button", { class: "secondary", type: "button" }, label);
  btn.addEventListener("click", async () => {
    btn.disabled = true;
    try {
      if (!(await more())) btn.remove();
    } finally {
      btn.disabled = false;
    }
  });
  return btn;
}

export function yesNo(b, yes, no) {
  return b ? h("span", { class: "badge ok" }, yes) : h("span", { class: "badge muted" }, no);
}

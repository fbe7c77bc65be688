// main.js — the explorer's shell: the API key, the hash router, and the views.
import { h } from "./dom.js";
import { getKey, setKey, Problem } from "./api.js";
import { problemView } from "./ui.js";
import { strategiesView } from "./views/strategies.js";
import { memoriesView } from "./views/memories.js";
import { conversationsView } from "./views/conversations.js";
import { timelineView } from "./views/timeline.js";
import { recallView } from "./views/recall.js";
import { runView } from "./views/run.js";
import { explainView } from "./views/explain.js";
import { usageView } from "./views/usage.js";

const main = document.getElementById("main");
const auth = document.getElementById("auth");
let current = null; // the view's AbortController: a new route aborts the old view's requests

const routes = [
  [/^strategies$/, (q) => strategiesView(q), "strategies"],
  [/^memories$/, (q) => memoriesView(q), "memories"],
  [/^conversations$/, (q) => conversationsView(q), "conversations"],
  [/^conversations\/([^/]+)$/, (q, id) => timelineView(id, q), "conversations"],
  [/^conversations\/([^/]+)\/turns\/(\d+)\/explain$/, (q, id, turn) => explainView(id, Number(turn), q), "conversations"],
  [/^conversations\/([^/]+)\/entries\/([^/]+)\/([^/]+)$/, (q, id, mem, entry) => usageView(id, mem, entry, q), "conversations"],
  [/^recalls\/([^/]+)$/, (q, id) => recallView(id, q), "conversations"],
  [/^runs\/([^/]+)$/, (q, id) => runView(id, q), "conversations"],
];

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, "");
  const [path, query] = raw.split("?");
  return { path, query: Object.fromEntries(new URLSearchParams(query || "")) };
}

async function render() {
  const { path, query } = parseHash();
  if (current) current.abort();
  current = new AbortController();
  const signal = current.signal;
  let match = null;
  for (const [re, view, nav] of routes) {
    const m = re.exec(path);
    if (m) {
      match = { view, nav, args: m.slice(1).map(decodeURIComponent) };
      break;
    }
  }
  if (!path) {
    // The home view, without a history entry or a hashchange (which would move the focus).
    history.replaceState(null, "", "#/conversations");
    return render();
  }
  for (const a of document.querySelectorAll("[data-nav]")) {
    if (match && a.dataset.nav === match.nav) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  if (!match) {
    main.replaceChildren(h("h1", null, "Not found"), h("p", null, "No such view. ", h("a", { href: "#/conversations" }, "Conversations")));
    return;
  }
  main.replaceChildren(h("p", { class: "muted", role: "status" }, "Loading…"));
  try {
    const node = await match.view({ ...query, signal }, ...match.args);
    if (signal.aborted) return;
    main.replaceChildren(node);
    const h1 = main.querySelector("h1");
    document.title = (h1 ? h1.textContent + " · " : "") + "footprint explorer";
  } catch (err) {
    if (err.name === "AbortError" || signal.aborted) return;
    main.replaceChildren(problemView(err instanceof Problem ? err : new Problem(0, { title: "Something went wrong", detail: String(err) })));
    if (!(err instanceof Problem)) console.warn(err);
  }
}

// The key: asked for when the server answers 401, kept in sessionStorage, sent as the bearer
// token. A wrong key is refused with the 401 problem's own words.
function renderAuth() {
  if (!getKey()) {
    auth.replaceChildren();
    return;
  }
  auth.replaceChildren(h("span", null, "API key set"),
    h("button", { class: "secondary", type: "button", on: { click: () => { setKey(""); renderAuth(); render(); } } }, "Forget key"));
}

function keyForm(problem) {
  const input = h("input", { id: "api-key", type: "password", autocomplete: "off", required: true, "aria-describedby": "api-key-why" });
  const form = h("form", { class: "card", "aria-labelledby": "key-title" },
    h("h1", { id: "key-title" }, "API key"),
    problemView(problem),
    h("p", { id: "api-key-why" }, "This server has API keys configured. Enter yours: it is kept in this tab only (sessionStorage) and sent as the bearer token."),
    h("div", { class: "field" }, h("label", { for: "api-key" }, "API key"), input),
    h("div", { class: "row-actions" }, h("button", { type: "submit" }, "Use this key")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    setKey(input.value.trim());
    renderAuth();
    render();
  });
  setTimeout(() => input.focus(), 0);
  return form;
}

window.addEventListener("footprint:unauthorized", (e) => {
  if (current) current.abort();
  current = new AbortController();
  auth.replaceChildren();
  main.replaceChildren(keyForm(e.detail));
});

window.addEventListener("hashchange", () => {
  render().then(() => main.focus({ preventScroll: true }));
});

renderAuth();
render();

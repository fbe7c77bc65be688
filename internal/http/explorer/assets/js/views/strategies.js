// Strategies: the catalogue as cards; choosing one shows a form generated from its `params`
// JSON Schema. As the user types, POST /v1/memories?dryRun=true validates the draft; a refusal
// is shown at the field its `path` names, with its `detail` and a button applying its `fix`.
import { h, route } from "../dom.js";
import { get, call, Problem } from "../api.js";
import { problemView } from "../ui.js";

export async function strategiesView(q) {
  const [catalogue, caps] = await Promise.all([get("/v1/strategies", q), get("/v1/capabilities", q)]);
  const strategies = catalogue.strategies;
  const root = h("section", { "aria-labelledby": "strategies-title" });
  const formHost = h("div", { id: "memory-form" });
  const cards = h("div", { class: "cards", role: "list" });
  root.append(
    h("h1", { id: "strategies-title" }, "Strategies"),
    h("p", { class: "muted" }, "What this deployment can run, cheapest first. Choose one to define a memory with it."),
    cards, formHost);

  let form = null;
  const choose = (kind, draft) => {
    for (const c of cards.children) c.classList.toggle("chosen", c.dataset.kind === kind);
    form = memoryForm(strategies, caps, kind, draft, choose);
    formHost.replaceChildren(form.node);
  };
  for (const s of strategies) cards.append(strategyCard(s, () => choose(s.kind)));
  if (q.kind && strategies.some((s) => s.kind === q.kind)) choose(q.kind);
  return root;
}

function strategyCard(s, onChoose) {
  const titleId = `card-${s.kind}`;
  return h("article", { class: "card", role: "listitem", dataset: { kind: s.kind }, "aria-labelledby": titleId },
    h("h2", { id: titleId }, s.kind),
    h("p", null, s.description),
    h("div", null, h("span", { class: "muted" }, "Memory types: "), h("ul", { class: "chips", "aria-label": "memory types" }, s.types.map((t) => h("li", { class: "chip" }, t)))),
    h("div", null, h("span", { class: "muted" }, "Needs: "), s.requirements.length ? s.requirements.join(", ") : "nothing"),
    s.offerable
      ? h("p", { class: "ok" }, h("span", { class: "badge ok" }, "offerable"), " on this deployment")
      : h("p", { class: "bad" }, h("span", { class: "badge bad" }, "not offerable"), " missing: ", s.missing.join(", ")),
    h("div", { class: "row-actions" }, h("button", { type: "button", on: { click: onChoose }, "aria-describedby": titleId }, `Use ${s.kind}`)));
}

// fieldPath is the draft path of a form field: "id", "type", "strategy.size", ….
const fieldId = (path) => "f-" + path.replace(/[^A-Za-z0-9]+/g, "-");

function memoryForm(strategies, caps, kind, draft, choose) {
  const info = strategies.find((s) => s.kind === kind);
  const props = Object.entries(info.params.properties || {}).filter(([k]) => k !== "kind");
  draft = draft || { id: "", type: info.types[0], description: "", strategy: { kind } };
  const fields = new Map(); // path → {wrap, input, read, write}
  const node = h("form", { class: "card", novalidate: true, "aria-labelledby": "form-title" });
  const status = h("div", { class: "status pending", role: "status", "aria-live": "polite" }, "Fill in the form: it is checked as you type.");
  const general = h("div");
  const createBtn = h("button", { type: "submit" }, "Create memory");

  const add = (path, label, input, hint, read, write) => {
    const id = fieldId(path);
    input.id = id;
    const wrap = h("div", { class: "field", dataset: { path } }, h("label", { for: id }, label, hint ? h("span", { class: "hint" }, " — ", hint) : null), input);
    fields.set(path, { wrap, input, read, write });
    return wrap;
  };
  const textInput = (path, label, hint, value) => {
    const input = h("input", { type: "text", value: value ?? "", autocomplete: "off" });
    return add(path, label, input, hint, () => input.value.trim() || undefined, (v) => { input.value = v ?? ""; });
  };

  node.append(
    h("h2", { id: "form-title" }, `A memory with ${kind}`),
    h("p", { class: "muted" }, info.description),
    textInput("id", "Memory id", "letters, digits, . _ -; 1 to 64", draft.id));
  const typeSelect = h("select", null, info.types.map((t) => h("option", { value: t, selected: t === draft.type }, t)));
  node.append(add("type", "Memory type", typeSelect, "the types that accept " + kind, () => typeSelect.value, (v) => { typeSelect.value = v; }));
  node.append(textInput("description", "Description", "optional", draft.description));
  const params = h("fieldset", null, h("legend", null, `${kind} parameters`));
  for (const [name, schema] of props) params.append(paramField(add, "strategy." + name, name, schema, caps, draft.strategy[name]));
  if (!props.length) params.append(h("p", { class: "muted" }, "This strategy has no parameters."));
  node.append(params, status, general, h("div", { class: "row-actions" }, createBtn));

  const body = () => {
    const b = { strategy: { kind } };
    for (const [path, f] of fields) {
      const v = f.read();
      if (v === undefined) continue;
      if (path.startsWith("strategy.")) b.strategy[path.slice(9)] = v;
      else b[path] = v;
    }
    return b;
  };

  const clear = () => {
    general.replaceChildren();
    for (const f of fields.values()) {
      f.wrap.classList.remove("invalid");
      f.input.removeAttribute("aria-invalid");
      f.input.removeAttribute("aria-describedby");
      f.wrap.querySelector(".refusal")?.remove();
    }
  };

  // showRefusal puts the problem at the field its path names (the nearest one: a path inside a
  // strategy part falls back to the field that holds it), with a button that applies `fix`.
  const showRefusal = (p) => {
    const b = p.body;
    const path = b.path || "";
    let target = null;
    for (let cut = path; cut; cut = cut.replace(/(\.[^.[\]]+|\[\d+\])$/, "")) {
      if (fields.has(cut)) {
        target = fields.get(cut);
        break;
      }
      if (!/(\.[^.[\]]+|\[\d+\])$/.test(cut)) break;
    }
    const rid = "refusal-" + fieldId(path || "body");
    const box = h("div", { class: "refusal", id: rid, role: "alert" },
      h("p", null, h("strong", null, b.title || "Refused"), path ? [" at ", h("code", null, path)] : null),
      h("p", null, b.detail || ""),
      b.fix !== undefined ? h("p", null, "This would work: ", h("code", null, JSON.stringify(b.fix))) : null);
    if (b.fix !== undefined) {
      box.append(h("div", { class: "row-actions" }, h("button", { type: "button", class: "secondary", on: { click: () => applyFix(path, b.fix) } }, "Apply fix")));
    }
    if (target) {
      target.wrap.classList.add("invalid");
      target.input.setAttribute("aria-invalid", "true");
      target.input.setAttribute("aria-describedby", rid);
      target.wrap.append(box);
    } else {
      general.append(box);
    }
  };

  // applyFix sets the fix where it belongs: a fix that is a strategy (it has a `kind`)
  // replaces the strategy object that holds `path`, switching the form to its kind; any other
  // value is set at `path` itself.
  const applyFix = (path, fix) => {
    const draftNow = body();
    const segs = parsePath(path);
    if (fix && typeof fix === "object" && !Array.isArray(fix) && fix.kind) {
      while (segs.length && !isStrategyPath(segs)) segs.pop();
      if (!segs.length) segs.push("strategy");
    }
    setAt(draftNow, segs, fix);
    if (draftNow.strategy && draftNow.strategy.kind !== kind) {
      choose(draftNow.strategy.kind, draftNow);
      return;
    }
    for (const [p, f] of fields) {
      const v = p.startsWith("strategy.") ? draftNow.strategy[p.slice(9)] : draftNow[p];
      f.write(v);
    }
    validate();
  };

  let timer = null;
  let seq = 0;
  const validate = async () => {
    const mine = ++seq;
    status.className = "status pending";
    status.textContent = "Checking…";
    try {
      const res = await call("/v1/memories?dryRun=true", { method: "POST", body: body() });
      if (mine !== seq) return;
      clear();
      status.className = "status good";
      status.replaceChildren(h("strong", null, "Valid."), " It would be stored as ", h("code", null, JSON.stringify(res.body.strategy)));
    } catch (err) {
      if (mine !== seq) return;
      clear();
      if (!(err instanceof Problem)) throw err;
      status.className = "status";
      status.textContent = "";
      showRefusal(err);
    }
  };
  node.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(validate, 250);
  });
  node.addEventListener("submit", async (e) => {
    e.preventDefault();
    clearTimeout(timer);
    createBtn.disabled = true;
    try {
      const res = await call("/v1/memories", { method: "POST", body: body() });
      clear();
      status.className = "status good";
      status.replaceChildren(h("strong", null, "Created "), h("code", null, res.body.id), ". ",
        h("a", { href: route("memories") }, "See the memories"), " (", h("code", null, res.headers.get("Location") || ""), ")");
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      clear();
      status.className = "status";
      status.textContent = "";
      if (err.body.path) showRefusal(err);
      else general.append(problemView(err));
    } finally {
      createBtn.disabled = false;
    }
  });
  if (draft.id || Object.keys(draft.strategy).length > 1) setTimeout(validate, 0);
  return { node };
}

function paramField(add, path, name, schema, caps, value) {
  const hint = [];
  if (schema.default !== undefined) hint.push(`default ${JSON.stringify(schema.default)}`);
  if (schema.minimum !== undefined || schema.maximum !== undefined) hint.push(`${schema.minimum ?? "…"} to ${schema.maximum ?? "…"}`);
  const desc = schema.description ? h("p", { class: "hint muted" }, schema.description) : null;
  let input, read, write;
  if (schema.type === "integer" || schema.type === "number") {
    input = h("input", { type: "number", step: schema.type === "integer" ? "1" : "any", min: schema.minimum, max: schema.maximum,
      placeholder: schema.default !== undefined ? String(schema.default) : "", value: value ?? "", inputmode: "decimal" });
    // The server judges the value, not the browser: what was typed is sent as typed.
    read = () => (input.value === "" ? undefined : Number(input.value));
    write = (v) => { input.value = v ?? ""; };
  } else if (schema.type === "string" && schema.enum) {
    input = h("select", null, h("option", { value: "" }, `(default${schema.default ? ": " + schema.default : ""})`),
      schema.enum.map((v) => h("option", { value: v, selected: v === value }, v)));
    read = () => input.value || undefined;
    write = (v) => { input.value = v ?? ""; };
  } else if (schema.type === "array" || schema.type === "object") {
    input = h("textarea", { rows: 5, spellcheck: "false" });
    input.value = value !== undefined ? JSON.stringify(value, null, 1) : (name === "strategies" ? '[{"kind":"window","size":20}]' : "");
    read = () => {
      if (!input.value.trim()) return undefined;
      try {
        return JSON.parse(input.value);
      } catch {
        return input.value; // sent as a string: the server names the field and shows what works
      }
    };
    write = (v) => { input.value = v === undefined ? "" : JSON.stringify(v, null, 1); };
  } else {
    const list = name === "embedder" ? "embedder-ids" : name === "llm" ? "llm-ids" : undefined;
    input = h("input", { type: "text", value: value ?? "", list, autocomplete: "off" });
    read = () => input.value.trim() || undefined;
    write = (v) => { input.value = v ?? ""; };
  }
  const wrap = add(path, name, input, hint.join("; "), read, write);
  if (desc) wrap.append(desc);
  if (name === "embedder") wrap.append(h("datalist", { id: "embedder-ids" }, caps.embedders.map((e) => h("option", { value: e.id }))));
  if (name === "llm") wrap.append(h("datalist", { id: "llm-ids" }, caps.llms.map((l) => h("option", { value: l.id }))));
  return wrap;
}

// parsePath splits "strategy.strategies[1].size" into ["strategy", "strategies", 1, "size"].
function parsePath(path) {
  const out = [];
  for (const m of (path || "").matchAll(/([^.[\]]+)|\[(\d+)\]/g)) out.push(m[2] !== undefined ? Number(m[2]) : m[1]);
  return out;
}

// isStrategyPath: the path names a strategy object (the memory's, or a hybrid's part).
function isStrategyPath(segs) {
  const last = segs[segs.length - 1];
  return (segs.length === 1 && last === "strategy") || (typeof last === "number" && segs[segs.length - 2] === "strategies");
}

function setAt(obj, segs, value) {
  let cur = obj;
  for (let i = 0; i < segs.length - 1; i++) {
    const k = segs[i];
    if (cur[k] === undefined || typeof cur[k] !== "object") cur[k] = typeof segs[i + 1] === "number" ? [] : {};
    cur = cur[k];
  }
  cur[segs[segs.length - 1]] = value;
}

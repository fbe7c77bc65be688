// A recall's evidence: per memory, every candidate with a score bar, its rank, admitted or
// why not, the threshold drawn as a line, nearestMiss, searchMode and the embedder; then the
// assembled prompt with each fragment highlighted (where its systemSpan says it lies) and
// linked to its candidate.
import { h, route, fmtTime, fmtScore, facts, json } from "../dom.js";
import { get } from "../api.js";

const anchor = (kind, mem, id) => `${kind}-${mem}-${id}`.replace(/[^A-Za-z0-9_-]/g, "_");

export async function recallView(recallId, q) {
  const r = await get(`/v1/recalls/${encodeURIComponent(recallId)}`, { signal: q.signal });
  const conversationId = q.conversation || r.conversationId || r.identity?.conversationId;
  const principal = q.principal || r.principal || "";
  const root = h("section", null,
    h("h1", null, "Recall ", h("code", null, recallId)),
    facts([
      ["Conversation", conversationId ? h("a", { href: route("conversations", conversationId, { principal }) }, conversationId) : undefined],
      ["Principal", principal || undefined],
      ["For turn", r.turn ? (conversationId ? h("a", { href: route("conversations", conversationId, "turns", r.turn, "explain", { principal }) }, String(r.turn)) : String(r.turn)) : "not said"],
      ["Run", r.runId ? h("a", { href: route("runs", r.runId) }, r.runId) : "not said"],
      ["Made", r.createdAt ? fmtTime(r.createdAt) : undefined],
      ["Query hash", h("code", null, r.queryHash || "")],
      ["Injections", String((r.injections || []).length)],
    ]));
  for (const m of r.memories || []) root.append(memorySection(m));
  root.append(promptSection(r));
  root.append(h("details", null, h("summary", null, "The receipt as JSON"), json(r)));
  return root;
}

function memorySection(m) {
  const ev = m.evidence || {};
  const cands = ev.candidates || [];
  const scores = cands.map((c) => c.score).filter((x) => typeof x === "number");
  const scale = scoreScale(scores, ev.threshold, ev.nearestMiss);
  const titleId = anchor("mem", m.memoryId, "title");
  const sec = h("section", { class: "card", "aria-labelledby": titleId },
    h("h2", { id: titleId }, "Memory ", h("code", null, m.memoryId), " ", h("span", { class: "muted" }, `${m.type || ""} · ${ev.strategy || m.strategy?.kind || ""}`)),
    facts([
      ["Search mode", ev.searchMode || "none (not a ranking)"],
      ["Embedder", ev.embedderId ? `${ev.embedderId}${ev.dimensions ? ` (${ev.dimensions} dims)` : ""}` : undefined],
      ["Threshold", ev.threshold !== undefined ? fmtScore(ev.threshold) + " (strict: a score must be above it)" : "none"],
      ["Nearest miss", ev.nearestMiss !== undefined ? fmtScore(ev.nearestMiss) : "none"],
      ["k", ev.k || undefined],
      ["Considered", `${ev.consideredCount ?? cands.length}: ${ev.admittedCount ?? 0} admitted, ${ev.rejectedCount ?? 0} rejected${ev.candidatesComplete === false ? " (candidate list cut)" : ""}`],
      ["Decision", ev.decision],
      ["Excluded", ev.excluded && ev.excluded.length ? ev.excluded.join(", ") : undefined],
      ["Note", ev.note],
    ]));
  if (scores.length) {
    sec.append(h("p", { class: "legend" }, h("span", null, `Score bars from ${scale.lo.toFixed(2)} to ${scale.hi.toFixed(2)}.`),
      ev.threshold !== undefined ? h("span", null, h("span", { class: "swatch threshold" }), "threshold") : null,
      ev.nearestMiss !== undefined ? h("span", null, h("span", { class: "swatch nearest" }), "nearest miss") : null));
  }
  if (ev.corpusEmpty) sec.append(h("p", { class: "muted" }, "Nothing to consider: the memory holds no entries here."));
  const tbody = h("tbody");
  for (const c of cands) {
    const row = h("tr", { id: anchor("cand", m.memoryId, c.id) },
      h("td", null, String(c.rank)),
      h("th", { scope: "row" }, h("code", null, c.id), c.turn ? h("span", { class: "muted" }, ` turn ${c.turn}`) : null,
        c.docUri ? h("div", { class: "muted" }, c.docUri, c.page ? ` p.${c.page}` : "", c.heading ? ` · ${c.heading}` : "") : null),
      h("td", { class: "scorecell" }, typeof c.score === "number" ? scoreBar(c, scale, ev) : h("span", { class: "muted" }, "not scored")),
      h("td", null, typeof c.score === "number" ? fmtScore(c.score) : "—"),
      h("td", null, c.admitted
        ? [h("span", { class: "badge ok" }, "admitted"), c.systemSpan !== undefined ? [" ", h("a", { href: "#" + anchor("frag", m.memoryId, c.id), on: { click: jump(anchor("frag", m.memoryId, c.id)) } }, "in the prompt")] : null]
        : h("span", { class: "badge bad" }, c.reason || "not admitted")));
    tbody.append(row);
  }
  sec.append(h("div", { class: "table-wrap" }, h("table", null,
    h("caption", { class: "muted" }, `Every candidate ${m.memoryId} considered, by rank`),
    h("thead", null, h("tr", null, ["Rank", "Entry", "Score", "", "Outcome"].map((c) => h("th", { scope: "col" }, c)))), tbody)));
  return sec;
}

function scoreScale(scores, threshold, nearest) {
  const all = scores.concat([threshold, nearest].filter((x) => typeof x === "number"));
  const lo = Math.min(0, ...all);
  const hi = Math.max(1, ...all);
  return { lo, hi, pos: (x) => `${(((x - lo) / (hi - lo)) * 100).toFixed(2)}%` };
}

function scoreBar(c, scale, ev) {
  const bar = h("div", { class: "scorebar", role: "img", "aria-label": `score ${fmtScore(c.score)}${ev.threshold !== undefined ? `, threshold ${fmtScore(ev.threshold)}` : ""}` },
    h("div", { class: ["fill", c.admitted && "admitted"], style: { width: scale.pos(c.score) } }));
  if (typeof ev.threshold === "number") bar.append(h("div", { class: "threshold", style: { left: scale.pos(ev.threshold) }, title: "threshold" }));
  if (typeof ev.nearestMiss === "number") bar.append(h("div", { class: "nearest", style: { left: scale.pos(ev.nearestMiss) }, title: "nearest miss" }));
  return bar;
}

// jump scrolls to an element of this page without changing the route.
function jump(id) {
  return (e) => {
    e.preventDefault();
    const el = document.getElementById(id);
    if (!el) return;
    for (const t of document.querySelectorAll(".target")) t.classList.remove("target");
    el.classList.add("target");
    el.scrollIntoView({ block: "center" });
    const link = el.querySelector("a") || el;
    link.focus?.({ preventScroll: true });
  };
}

// promptSection shows the assembled system prompt with every admitted candidate's fragment
// marked where its systemSpan puts it, linked to its candidate's row. Spans are UTF-8 byte
// offsets into systemPrompt: the prompt is sliced as bytes and each part decoded.
function promptSection(r) {
  const prompt = r.systemPrompt || "";
  const sec = h("section", { class: "card", "aria-labelledby": "prompt-title" }, h("h2", { id: "prompt-title" }, "The assembled prompt"));
  if (!prompt) {
    sec.append(h("p", { class: "muted" }, "Nothing was admitted: the prompt is empty."));
    return sec;
  }
  const bytes = new TextEncoder().encode(prompt);
  const decode = (start, end) => new TextDecoder().decode(bytes.subarray(start, end));
  let admitted = 0;
  const spans = [];
  for (const m of r.memories || []) {
    for (const c of m.evidence?.candidates || []) {
      if (!c.admitted) continue;
      admitted++;
      const s = c.systemSpan;
      if (!s || s.startByte < 0 || s.startByte > s.endByte || s.endByte > bytes.length) continue;
      if (spans.some((o) => s.startByte < o.end && s.endByte > o.start)) continue;
      spans.push({ start: s.startByte, end: s.endByte, mem: m.memoryId, c });
    }
  }
  spans.sort((a, b) => a.start - b.start);
  const pre = h("div", { class: "prompt", tabindex: "0", "aria-label": "system prompt" });
  let pos = 0;
  for (const s of spans) {
    if (s.start > pos) pre.append(decode(pos, s.start));
    const cand = anchor("cand", s.mem, s.c.id);
    pre.append(h("mark", { id: anchor("frag", s.mem, s.c.id), title: `${s.mem}#${s.c.id}` },
      h("a", { href: "#" + cand, on: { click: jump(cand) } }, decode(s.start, s.end))));
    pos = s.end;
  }
  if (pos < bytes.length) pre.append(decode(pos, bytes.length));
  sec.append(h("p", { class: "muted" }, `${spans.length} of ${admitted} admitted fragments marked where the recall says they lie; each links to its candidate.`), pre);
  return sec;
}

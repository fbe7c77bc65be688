// An explain walk: the answer, then each model call's context (what the model was shown),
// then the origins (shown, or offered only), their entries and the earlier turns that wrote
// them; every honesty flag stated first; the suspects with their proxy scores and verdicts,
// and a form that records an ablation rerun. It shows what the explanation says, field by
// field: members it does not know are listed as they come.
import { h, route, fmtScore, fmtTime, facts } from "../dom.js";
import { get, call, qs, Problem } from "../api.js";
import { problemView } from "../ui.js";

export async function explainView(conversationId, turn, q) {
  const principal = q.principal || "";
  const base = `/v1/conversations/${encodeURIComponent(conversationId)}/turns/${turn}`;
  const [ex, abl] = await Promise.all([
    get(`${base}/explain${qs({ principal, depth: 3 })}`, { signal: q.signal }),
    get(`${base}/ablations${qs({ principal, limit: 200 })}`, { signal: q.signal }),
  ]);
  const ctx = { conversationId, principal, base, reload: () => window.dispatchEvent(new HashChangeEvent("hashchange")) };
  return h("section", null,
    h("h1", null, `Explain turn ${turn} of `, h("code", null, conversationId)),
    h("p", { class: "links" },
      h("a", { href: route("conversations", conversationId, { principal }) }, "Timeline"),
      h("a", { href: `${base}/explain${qs({ principal, depth: 3 })}` }, "This explanation (JSON)")),
    explanation(ex, ctx, 0, abl.ablations));
}

const KNOWN = {
  explanation: ["turn", "conversationId", "principal", "answer", "context", "origins", "honesty", "suspects", "earlier"],
  origin: ["injectionId", "memoryId", "entryId", "recallId", "score", "rank", "threshold", "status", "entry"],
  flag: ["flag", "detail", "droppedEvents", "runId", "entryId"],
  suspect: ["injectionId", "strategy", "score", "rank", "verdict", "reruns", "flips", "note"],
};

// extras lists the members of o the view does not know, so new evidence is never hidden.
function extras(o, known) {
  const rest = Object.entries(o || {}).filter(([k]) => !known.includes(k));
  if (!rest.length) return null;
  return [h("div", { class: "muted" }, "Also in the explanation:"),
    facts(rest.map(([k, v]) => [k, typeof v === "object" ? h("code", null, JSON.stringify(v)) : String(v)]))];
}

function explanation(ex, ctx, depth, ablations) {
  const sec = h("div", { class: depth ? "earlier" : "" });
  const Hn = depth ? "h3" : "h2";

  // Honesty first: what the explanation does not know.
  const flags = ex.honesty || [];
  sec.append(h(Hn, null, "What this explanation does not know"),
    h("ul", { class: "flags", "aria-label": `honesty flags of turn ${ex.turn}` },
      flags.length ? flags.map((f) => h("li", null, h("span", { class: "flag" }, f.flag), " — ", f.detail || "",
        f.runId ? [" (run ", h("a", { href: route("runs", f.runId) }, f.runId), ")"] : null,
        f.droppedEvents ? ` ${f.droppedEvents} events dropped.` : null,
        f.entryId ? [" (", h("code", null, f.entryId), ")"] : null, extras(f, KNOWN.flag)))
        : h("li", { class: "none" }, "No honesty flag: every link this explanation follows was recorded.")));

  // The answer.
  const a = ex.answer || {};
  sec.append(h(Hn, null, "The answer"),
    h("div", { class: "card" },
      facts([
        ["From", a.source === "none" ? "nothing stored for it" : a.source],
        ["Entry", a.entryId ? h("code", null, `${a.memoryId}#${a.entryId}`) : undefined],
        ["Run", a.runId ? h("a", { href: route("runs", a.runId) }, a.runId) : undefined],
        ["Question", a.query],
        ["Answer", a.finalContent],
        ["Decisions", a.decisions ? a.decisions.map((d) => `${d.stageId}: ${d.chosen}${d.rule ? ` (rule: ${d.rule})` : ""}`).join("; ") || "none" : undefined],
        ["Tool calls", a.toolCalls ? a.toolCalls.map((t) => `${t.name}${t.errored ? " (errored)" : ""}`).join(", ") || "none" : undefined],
      ]),
      a.messages && a.messages.length ? a.messages.map((m) => h("p", { class: "msg" }, h("span", { class: "role" }, m.role), h("span", { class: "text" }, m.content))) : null,
      extras(a, ["source", "memoryId", "entryId", "runId", "query", "finalContent", "decisions", "toolCalls", "messages"])));

  // What each model call was shown.
  const runs = ex.context?.runs || [];
  sec.append(h(Hn, null, "What the model was shown, call by call"));
  if (!runs.length) sec.append(h("p", { class: "warn" }, "No run recording is linked: what the model was shown is unknown."));
  for (const run of runs) {
    sec.append(h("div", { class: "card" },
      h("p", null, "Run ", h("a", { href: route("runs", run.runId) }, run.runId), run.complete ? " (complete)" : h("span", { class: "warn" }, " (incomplete)"),
        run.droppedEvents ? h("span", { class: "warn" }, ` — ${run.droppedEvents} events dropped`) : null),
      (run.calls || []).length ? run.calls.map(modelCall)
        : h("p", { class: "muted" }, "The recording announces no context for any model call.")));
  }
  const recalls = ex.context?.recalls || [];
  if (recalls.length) {
    sec.append(h("p", null, "What recall offered: ", recalls.map((r, i) => [i ? ", " : "",
      h("a", { href: route("recalls", r.recallId, { conversation: ctx.conversationId, principal: ctx.principal }) }, r.recallId)])));
  }

  // Origins: the stored entries behind the pieces, and the earlier turns that wrote them.
  // Whether each was shown is read from the linked recordings above: a piece a model call
  // announced was shown; one only a receipt offered was not; without a recording, unknown.
  const shownIn = new Map();
  for (const run of runs) {
    for (const c of run.calls || []) {
      for (const p of c.pieces || []) {
        if (!p.sourceId) continue;
        if (!shownIn.has(p.sourceId)) shownIn.set(p.sourceId, []);
        shownIn.get(p.sourceId).push(`model call ${c.iteration} of ${run.runId}`);
      }
    }
  }
  const shownBadge = (id) => {
    if (!runs.length) return h("span", { class: "badge warn" }, "shown: unknown (no recording)");
    const calls = shownIn.get(id);
    return calls ? h("span", { class: "badge ok" }, "shown in " + calls.join(", ")) : h("span", { class: "badge warn" }, "offered, not shown");
  };
  const origins = ex.origins || [];
  sec.append(h(Hn, null, "Where the context came from"));
  if (!origins.length) sec.append(h("p", { class: "muted" }, "No origin: no linked receipt admitted an entry and no recording showed one."));
  for (const o of origins) {
    const e = o.entry;
    sec.append(h("div", { class: "card", id: `origin-${ex.turn}-${o.injectionId}`.replace(/[^A-Za-z0-9_-]/g, "_") },
      h("p", null, h("code", null, o.injectionId), " ", h("span", { class: ["badge", o.status === "present" ? "ok" : "warn"] }, o.status), " ", shownBadge(o.injectionId)),
      facts([
        ["Offered by", o.recallId ? h("a", { href: route("recalls", o.recallId, { conversation: ctx.conversationId, principal: ctx.principal }) }, o.recallId) : "no linked receipt"],
        ["Score", o.score !== undefined ? `${fmtScore(o.score)}${o.threshold !== undefined ? ` (threshold ${fmtScore(o.threshold)})` : ""}` : undefined],
        ["Rank", o.rank],
        ["Written by", e && e.turn ? h("a", { href: route("conversations", ctx.conversationId, "turns", e.turn, "explain", { principal: ctx.principal }) }, `turn ${e.turn}`) : undefined],
        ["Run", e && e.runId ? h("a", { href: route("runs", e.runId) }, e.runId) : undefined],
        ["It holds", e ? e.finalContent || e.text || e.query : undefined],
        ["Updated", e && e.updatedAt ? fmtTime(e.updatedAt) : undefined],
        ["Used", h("a", { href: route("conversations", ctx.conversationId, "entries", o.memoryId, o.entryId, { principal: ctx.principal }) }, "every recall that admitted it")],
      ]),
      extras(o, KNOWN.origin)));
  }

  // Suspects and their verdicts; record an ablation rerun.
  const suspects = ex.suspects || [];
  sec.append(h(Hn, null, "Suspects"),
    h("p", { class: "muted" }, "Ranked by correlational proxies of influence, never causes. A verdict comes from recorded ablation reruns."));
  if (suspects.length) {
    sec.append(h("div", { class: "table-wrap" }, h("table", null,
      h("thead", null, h("tr", null, ["Piece", "Proxy", "Score", "Rank", "Verdict", "Reruns", ""].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", null, suspects.map((s) => h("tr", null,
        h("th", { scope: "row" }, h("code", null, s.injectionId)), h("td", null, s.strategy), h("td", null, fmtScore(s.score)), h("td", null, String(s.rank)),
        h("td", null, h("strong", { class: `verdict-${s.verdict}` }, s.verdict), s.note ? h("div", { class: "muted" }, s.note) : null),
        h("td", null, `${s.reruns ?? 0} (${s.flips ?? 0} flipped)`),
        h("td", null, depth ? null : h("button", { type: "button", class: "secondary", on: { click: (ev) => openAblation(ev.target, ctx, ex.turn, [s.injectionId]) } }, "Record a rerun without it"))))))));
  } else {
    sec.append(h("p", { class: "muted" }, "No suspect: no piece of context to rank."));
  }
  if (!depth) {
    sec.append(h("div", { class: "row-actions" },
      h("button", { type: "button", class: "secondary", on: { click: (ev) => openAblation(ev.target, ctx, ex.turn, []) } }, "Record a baseline rerun (nothing excluded)")));
    sec.append(h(Hn, null, "Recorded reruns"), ablationList(ablations || []));
  }
  sec.append(extras(ex, KNOWN.explanation));

  for (const e of ex.earlier || []) {
    sec.append(h("details", { class: "card", open: depth < 1 },
      h("summary", null, `Earlier: turn ${e.turn}, which wrote an origin`), explanation(e, ctx, depth + 1)));
  }
  return sec;
}

function modelCall(c) {
  const rows = (c.pieces || []).map((p) => h("tr", null,
    h("th", { scope: "row" }, h("code", null, p.sourceId || p.contentHash || "—")),
    h("td", null, p.slot || ""), h("td", null, p.source || ""), h("td", null, fmtScore(p.score)),
    h("td", null, p.rank ?? "—"), h("td", null, String(p.repeats ?? 0))));
  return h("div", null, h("h4", null, `Model call ${c.iteration}`),
    h("div", { class: "table-wrap" }, h("table", null,
      h("thead", null, h("tr", null, ["Piece", "Slot", "Source", "Score", "Rank", "Repeats"].map((x) => h("th", { scope: "col" }, x)))),
      h("tbody", null, rows))));
}

function ablationList(as) {
  if (!as.length) return h("p", { class: "muted" }, "None yet.");
  return h("div", { class: "table-wrap" }, h("table", null,
    h("thead", null, h("tr", null, ["Excluded", "Answer", "Flipped", "Recorded"].map((x) => h("th", { scope: "col" }, x)))),
    h("tbody", null, as.map((a) => h("tr", null,
      h("td", null, a.excluded.length ? a.excluded.map((x) => h("code", null, x + " ")) : h("em", null, "nothing (baseline)")),
      h("td", null, a.answer), h("td", null, a.flipped ? h("strong", { class: "bad" }, "yes") : "no"), h("td", null, fmtTime(a.createdAt)))))));
}

// openAblation shows, below the button, the form that records one rerun.
function openAblation(button, ctx, turn, excluded) {
  const host = button.closest("tr, .row-actions");
  const old = document.getElementById("ablation-form");
  if (old) old.remove();
  const ex = h("input", { id: "abl-excluded", type: "text", value: excluded.join(" "), autocomplete: "off" });
  const answer = h("textarea", { id: "abl-answer", rows: 3, required: true });
  const flipped = h("input", { id: "abl-flipped", type: "checkbox" });
  const msg = h("div", { role: "status", "aria-live": "polite" });
  const form = h("form", { id: "ablation-form", class: "inline", "aria-label": "Record an ablation rerun" },
    h("div", { class: "field" }, h("label", { for: "abl-excluded" }, "Excluded injection ids ", h("span", { class: "hint" }, "space-separated; empty for a baseline")), ex),
    h("div", { class: "field" }, h("label", { for: "abl-answer" }, "The rerun's answer"), answer),
    h("div", { class: "field" }, h("label", { for: "abl-flipped" }, flipped, "The answer differs from the original")),
    h("div", { class: "row-actions" }, h("button", { type: "submit" }, "Record rerun"), h("button", { type: "button", class: "secondary", on: { click: () => form.remove() } }, "Cancel")),
    msg);
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await call(`${ctx.base}/ablations${qs({ principal: ctx.principal })}`, { method: "POST",
        body: { excluded: ex.value.split(/\s+/).filter(Boolean), answer: answer.value, flipped: flipped.checked } });
      ctx.reload();
    } catch (err) {
      if (!(err instanceof Problem)) throw err;
      msg.replaceChildren(problemView(err));
    }
  });
  if (host.tagName === "TR") {
    const row = h("tr", { id: "ablation-form" }, h("td", { colspan: 7 }, form));
    form.id = "ablation-form-inner";
    host.after(row);
  } else {
    host.after(form);
  }
  answer.focus();
}

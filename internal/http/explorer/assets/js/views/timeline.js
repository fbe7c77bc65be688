// A conversation's timeline: each turn with its messages, its snapshot (decisions, tool calls,
// duration, tokens, or that none were reported), the runs and recalls linked to it, and its
// entries by memory. Newest first; older turns load on demand.
import { h, route, fmtTime, facts } from "../dom.js";
import { get, qs } from "../api.js";
import { moreButton } from "../ui.js";

export async function timelineView(conversationId, q) {
  const principal = q.principal || "";
  const base = `/v1/conversations/${encodeURIComponent(conversationId)}`;
  const list = h("ol", { class: "timeline", reversed: true, style: { listStyle: "none", padding: 0 } });
  const root = h("section", null,
    h("h1", null, "Conversation ", h("code", null, conversationId)),
    facts([["Principal", principal || "none"]]),
    h("p", { class: "links" },
      h("a", { href: route("conversations", { principal }) }, "All conversations" + (principal ? " of " + principal : "")),
      h("a", { href: `/v1/conversations/${encodeURIComponent(conversationId)}/entries${qs({ principal })}` }, "Entries (JSON)")),
    list);
  let cursor = "";
  const load = async () => {
    const page = await get(`${base}/turns${qs({ principal, limit: 20, cursor })}`, { signal: q.signal });
    for (const t of page.turns) list.append(h("li", null, turnCard(conversationId, principal, t)));
    if (!list.children.length) list.append(h("li", null, h("p", null, "No turn is stored for this conversation.")));
    cursor = page.nextCursor || "";
    return Boolean(cursor);
  };
  if (await load()) root.append(h("div", { class: "row-actions" }, moreButton("Older turns", load)));
  return root;
}

export function turnCard(conversationId, principal, t) {
  const card = h("article", { class: "card turn", id: `turn-${t.turn}`, "aria-labelledby": `turn-${t.turn}-title` },
    h("header", null,
      h("h2", { id: `turn-${t.turn}-title` }, `Turn ${t.turn}`),
      h("span", { class: "muted" }, t.createdAt ? fmtTime(t.createdAt) : "under way: nothing posted yet"),
      h("a", { href: route("conversations", conversationId, "turns", t.turn, "explain", { principal }) }, "Explain this turn")));
  if (t.messages.length) {
    card.append(h("div", { class: "messages", "aria-label": "messages" }, t.messages.map((m) =>
      h("p", { class: "msg" }, h("span", { class: "role" }, m.role), h("span", { class: "text" }, m.content),
        m.truncated ? h("span", { class: "muted" }, ` … (${m.length} characters)`) : null))));
  } else {
    card.append(h("p", { class: "muted" }, "No messages stored for this turn."));
  }
  const s = t.snapshot;
  if (s) {
    const figures = [
      ["Decisions", String(s.decisions)],
      ["Tool calls", s.toolCalls ? `${s.toolCalls}${s.erroredToolCalls ? ` (${s.erroredToolCalls} errored)` : ""}` : "0"],
      ["Iterations", s.iterations !== undefined ? String(s.iterations) : "not reported"],
      ["Duration", s.durationMs !== undefined ? `${s.durationMs} ms` : "not reported"],
      ["Tokens", s.tokenUsage ? `${s.tokenUsage.input} in, ${s.tokenUsage.output} out` : "not reported"],
    ];
    card.append(h("div", null, h("h3", null, "Snapshot ", h("code", null, `${s.memoryId}#${s.entryId}`)),
      s.reported ? facts(figures) : h("p", { class: "warn" }, "No evidence was reported with this turn (no decisions, tool calls, iterations, duration or tokens).")));
  } else {
    card.append(h("p", { class: "muted" }, "No causal snapshot: no causal memory stored one."));
  }
  card.append(h("div", { class: "links" },
    h("span", null, "Runs: ", t.runIds.length ? t.runIds.map((id, i) => [i ? ", " : "", h("a", { href: route("runs", id) }, id)]) : h("span", { class: "muted" }, "none linked")),
    h("span", null, "Recalls: ", t.recallIds.length ? t.recallIds.map((id, i) => [i ? ", " : "", h("a", { href: route("recalls", id, { conversation: conversationId, principal }) }, id)]) : h("span", { class: "muted" }, "none linked"))));
  if (t.entries.length) {
    card.append(h("div", null, h("h3", null, "Entries by memory"),
      h("ul", { class: "chips", "aria-label": "entries" }, t.entries.flatMap((m) => m.ids.map((id) =>
        h("li", { class: "chip" }, h("a", { href: route("conversations", conversationId, "entries", m.memoryId, id, { principal }), title: "Where this entry was used" }, `${m.memoryId}#${id}`)))))));
  }
  return card;
}

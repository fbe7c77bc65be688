// Where an entry was used: the recalls that admitted it and the turns they were offered to.
import { h, route, fmtTime, fmtScore } from "../dom.js";
import { get, qs } from "../api.js";
import { moreButton } from "../ui.js";

export async function usageView(conversationId, memoryId, entryId, q) {
  const principal = q.principal || "";
  const base = `/v1/conversations/${encodeURIComponent(conversationId)}/entries/${encodeURIComponent(entryId)}`;
  const tbody = h("tbody");
  const turns = h("p");
  const root = h("section", null,
    h("h1", null, "Entry ", h("code", null, `${memoryId}#${entryId}`)),
    h("p", { class: "links" }, h("a", { href: route("conversations", conversationId, { principal }) }, `Conversation ${conversationId}`)),
    h("p", { class: "muted" }, "Receipts are audit records: they outlive the entry, so this answers for a forgotten or expired entry too."),
    h("h2", null, "Recalls that admitted it"), turns,
    h("div", { class: "table-wrap" }, h("table", null,
      h("thead", null, h("tr", null, ["Recall", "When", "Score", "Rank", "Threshold", "Offered to turns"].map((c) => h("th", { scope: "col" }, c)))), tbody)));
  let cursor = "";
  const all = new Set();
  const load = async () => {
    const page = await get(`${base}/usage${qs({ memory: memoryId, principal, limit: 50, cursor })}`, { signal: q.signal });
    for (const r of page.recalls) {
      tbody.append(h("tr", null,
        h("th", { scope: "row" }, h("a", { href: route("recalls", r.recallId, { conversation: conversationId, principal }) }, r.recallId)),
        h("td", null, fmtTime(r.createdAt)), h("td", null, fmtScore(r.score)), h("td", null, String(r.rank)),
        h("td", null, fmtScore(r.threshold)),
        h("td", null, r.turns.length ? r.turns.map((t, i) => [i ? ", " : "", h("a", { href: route("conversations", conversationId, "turns", t, "explain", { principal }) }, `turn ${t}`)]) : "no turn linked")));
    }
    for (const t of page.turns) all.add(t);
    turns.textContent = all.size ? `Offered to turns ${[...all].sort((a, b) => b - a).join(", ")}. Whether a model call was shown it is in each turn's explanation.` : "No recall of this conversation admitted it.";
    cursor = page.nextCursor || "";
    return Boolean(cursor);
  };
  if (await load()) root.append(h("div", { class: "row-actions" }, moreButton("More recalls", load)));
  return root;
}

// Conversations: with principal, last turn, last update and entry counts; filtered by
// principal and memory; paged.
import { h, route, fmtTime } from "../dom.js";
import { get, qs } from "../api.js";
import { moreButton } from "../ui.js";

export async function conversationsView(q) {
  const memories = (await get("/v1/memories?limit=200", { signal: q.signal })).memories;
  const principal = h("input", { id: "filter-principal", type: "text", value: q.principal || "", autocomplete: "off" });
  const memory = h("select", { id: "filter-memory" }, h("option", { value: "" }, "any memory"),
    memories.map((m) => h("option", { value: m.id, selected: m.id === q.memory }, m.id)));
  const filters = h("form", { class: "filters", role: "search", "aria-label": "Filter conversations" },
    h("div", { class: "field" }, h("label", { for: "filter-principal" }, "Principal"), principal),
    h("div", { class: "field" }, h("label", { for: "filter-memory" }, "Holding entries of"), memory),
    h("div", { class: "field" }, h("button", { type: "submit" }, "Filter")));
  filters.addEventListener("submit", (e) => {
    e.preventDefault();
    location.hash = route("conversations", { principal: principal.value.trim(), memory: memory.value });
  });
  const tbody = h("tbody");
  const count = h("p", { class: "muted", role: "status" });
  const root = h("section", null, h("h1", null, "Conversations"), filters, count,
    h("div", { class: "table-wrap" }, h("table", null,
      h("thead", null, h("tr", null, ["Conversation", "Principal", "Last turn", "Updated", "Entries", "By memory"].map((c) => h("th", { scope: "col" }, c)))),
      tbody)));
  let cursor = "";
  let shown = 0;
  const load = async () => {
    const page = await get("/v1/conversations" + qs({ principal: q.principal, memory: q.memory, limit: 50, cursor }), { signal: q.signal });
    for (const c of page.conversations) {
      tbody.append(h("tr", null,
        h("th", { scope: "row" }, h("a", { href: route("conversations", c.conversationId, { principal: c.principal }) }, c.conversationId)),
        h("td", null, c.principal || h("span", { class: "muted" }, "none")),
        h("td", null, c.lastTurn ? String(c.lastTurn) : "—"),
        h("td", null, fmtTime(c.updatedAt)),
        h("td", null, String(c.entryCount)),
        h("td", null, h("ul", { class: "chips" }, c.memories.map((m) => h("li", { class: "chip" }, `${m.memoryId}: ${m.entryCount}`))))));
      shown++;
    }
    cursor = page.nextCursor || "";
    count.textContent = `${shown} conversation${shown === 1 ? "" : "s"}${cursor ? " so far" : ""}.`;
    if (!shown) tbody.replaceChildren(h("tr", null, h("td", { colspan: 6 }, "No conversation holds entries" + (q.principal || q.memory ? " with these filters." : " yet."))));
    return Boolean(cursor);
  };
  if (await load()) root.append(h("div", { class: "row-actions" }, moreButton("More conversations", load)));
  return root;
}

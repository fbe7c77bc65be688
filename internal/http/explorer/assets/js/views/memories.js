// Memories: every memory definition with its type and strategy, paged.
import { h, route, fmtTime } from "../dom.js";
import { get, qs } from "../api.js";
import { moreButton } from "../ui.js";

export async function memoriesView(q) {
  const tbody = h("tbody");
  const table = h("div", { class: "table-wrap" }, h("table", null,
    h("caption", { class: "muted" }, "Memories, by id"),
    h("thead", null, h("tr", null, ["Memory", "Type", "Strategy", "Description", "Version", "Updated", ""].map((c) => h("th", { scope: "col" }, c)))),
    tbody));
  const root = h("section", null, h("h1", null, "Memories"),
    h("p", null, h("a", { href: route("strategies") }, "Define a memory"), " from the strategy catalogue."), table);
  let cursor = "";
  const load = async () => {
    const page = await get("/v1/memories" + qs({ limit: 50, cursor }), { signal: q.signal });
    for (const m of page.memories) {
      const { kind, ...params } = m.strategy;
      tbody.append(h("tr", null,
        h("th", { scope: "row" }, h("code", null, m.id), m.corpus ? h("span", { class: "chip" }, "corpus") : null, m.readOnly ? h("span", { class: "chip" }, "read-only") : null),
        h("td", null, m.type),
        h("td", null, h("strong", null, kind), " ", h("code", null, JSON.stringify(params))),
        h("td", null, m.description || ""),
        h("td", null, String(m.version ?? "")),
        h("td", null, fmtTime(m.updatedAt)),
        h("td", null, h("a", { href: route("conversations", { memory: m.id }) }, "Conversations"))));
    }
    if (!tbody.children.length) tbody.append(h("tr", null, h("td", { colspan: 7 }, "No memory is defined yet.")));
    cursor = page.nextCursor || "";
    return Boolean(cursor);
  };
  if (await load()) root.append(h("div", { class: "row-actions" }, moreButton("More memories", load)));
  return root;
}

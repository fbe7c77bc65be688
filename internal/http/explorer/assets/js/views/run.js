// A run's tail: the retained events in order, the dropped count and where the tail starts,
// gap markers, repeats folded with their count, truncated payloads marked, and live follow of
// an open run (fetch streaming, resumed after a dropped connection). The list renders only
// the rows in view, so a tail of 10,000 events scrolls as lightly as one of ten.
import { h, route, fmtTime, facts, json } from "../dom.js";
import { get, follow } from "../api.js";

const ROW = 30; // px, .events .row's height

export async function runView(runId, q) {
  const rec = await get(`/v1/runs/${encodeURIComponent(runId)}`, { signal: q.signal });
  const run = rec.run;
  const rows = []; // display rows: {kind: "event", ev, count} | {kind: "gap", from, to}
  let lastIndex = -1;
  let total = 0;
  const add = (ev) => {
    total++;
    lastIndex = Math.max(lastIndex, ev.index);
    const prev = rows[rows.length - 1];
    if (ev.repeat && prev && prev.kind === "event" && prev.ev.type === ev.type && same(prev.ev.payload, ev.payload)) {
      prev.count++;
      prev.last = ev.index;
      return;
    }
    rows.push({ kind: "event", ev, count: 1, last: ev.index });
  };
  if (run.droppedEvents > 0) rows.push({ kind: "gap", from: 0, to: run.firstRetainedEventIndex - 1, dropped: true });
  for (const ev of rec.events) add(ev);

  const counts = h("p", { class: "tail-summary", role: "status", "aria-live": "polite" });
  const liveState = h("span", { class: "live" }, h("span", { class: "dot", "aria-hidden": "true" }), h("span", { class: "label" }, ""));
  const scroller = h("div", { class: "events", tabindex: "0", role: "list", "aria-label": `events of run ${runId}` });
  const spacer = h("div", { class: "spacer" });
  scroller.append(spacer);
  const detail = h("div", { class: "card", "aria-live": "polite" }, h("p", { class: "muted" }, "Choose an event to see it whole."));
  const root = h("section", null,
    h("h1", null, "Run ", h("code", null, runId)),
    facts([
      ["Conversation", run.conversationId ? h("a", { href: route("conversations", run.conversationId, { principal: run.principal }) }, run.conversationId) : "not linked"],
      ["Principal", run.principal],
      ["Turn", run.turn ? (run.conversationId ? h("a", { href: route("conversations", run.conversationId, "turns", run.turn, "explain", { principal: run.principal }) }, String(run.turn)) : String(run.turn)) : "not linked"],
      ["State", run.finished ? (run.complete ? "finished, complete" : "finished, incomplete (abandoned)") : "open"],
      ["Started", run.startedAt ? fmtTime(run.startedAt) : "unknown"],
      ["Ended", run.endedAt ? fmtTime(run.endedAt) : "—"],
      ["Cap", `${run.maxEvents} distinct events`],
    ]),
    h("p", { class: "links" }, h("a", { href: `/v1/runs/${encodeURIComponent(runId)}/context` }, "Context ledger (JSON)")),
    counts, h("p", null, liveState), scroller, detail);

  const summary = () => {
    counts.replaceChildren(
      h("span", null, h("strong", null, String(total)), " events held"),
      h("span", { class: run.droppedEvents ? "warn" : "" }, h("strong", null, String(run.droppedEvents)), " dropped"),
      h("span", null, "tail starts at event ", h("strong", null, "#" + run.firstRetainedEventIndex)),
      h("span", { class: run.truncatedEvents ? "warn" : "" }, h("strong", null, String(run.truncatedEvents)), " truncated payloads"),
      h("span", null, h("strong", null, String(rows.length)), " rows after folding repeats"));
  };

  let selected = -1;
  const draw = () => {
    spacer.style.height = `${rows.length * ROW}px`;
    const top = scroller.scrollTop;
    const first = Math.max(0, Math.floor(top / ROW) - 10);
    const last = Math.min(rows.length, Math.ceil((top + scroller.clientHeight) / ROW) + 10);
    const nodes = [];
    for (let i = first; i < last; i++) nodes.push(rowNode(rows[i], i));
    spacer.replaceChildren(...nodes);
  };
  const rowNode = (r, i) => {
    const style = { top: `${i * ROW}px` };
    if (r.kind === "gap") {
      return h("div", { class: "row gap", role: "listitem", style },
        r.dropped ? `⚠ events #0–#${r.to} were dropped: the tail starts at #${r.to + 1}` : `⚠ gap: events #${r.from}–#${r.to} were lost before they could be read`);
    }
    const ev = r.ev;
    return h("button", { type: "button", class: ["row", i === selected && "selected"], role: "listitem", style, dataset: { index: ev.index },
      on: { click: () => { selected = i; show(r); draw(); } } },
      h("span", { class: "idx" }, "#" + ev.index),
      h("span", { class: "type" }, ev.type),
      r.count > 1 ? h("span", { class: "badge" }, `×${r.count} repeats folded`) : ev.repeat ? h("span", { class: "badge" }, "repeat") : null,
      ev.truncated ? h("span", { class: "badge warn" }, `truncated (${ev.truncated.originalBytes} bytes)`) : null,
      h("span", { class: "payload" }, preview(ev.payload)));
  };
  const show = (r) => {
    const ev = r.ev;
    detail.replaceChildren(
      h("h2", null, `Event #${ev.index} `, h("code", null, ev.type)),
      r.count > 1 ? h("p", null, `Announced ${r.count} times (to #${r.last}); the repeats hold no slot against the cap.`) : null,
      ev.truncated ? h("p", { class: "warn" }, `Truncated: the payload was ${ev.truncated.originalBytes} bytes (sha256 ${ev.truncated.sha256}); what is kept is the start of its JSON text.`) : null,
      h("h3", null, "Payload"), json(ev.payload),
      ev.meta ? [h("h3", null, "Meta"), json(ev.meta)] : null);
  };
  scroller.addEventListener("scroll", () => requestAnimationFrame(draw), { passive: true });
  const resize = new ResizeObserver(() => draw());
  resize.observe(scroller);
  summary();
  requestAnimationFrame(draw);

  // Follow an open run live: fetch streaming, resumed after the last index seen.
  const setLive = (state, text) => {
    liveState.className = "live " + state;
    liveState.querySelector(".label").textContent = text;
  };
  if (run.finished) {
    setLive("", "Finished: nothing more will arrive.");
  } else {
    setLive("retry", "Connecting to follow live…");
    let pending = false;
    const refresh = () => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => {
        pending = false;
        const atBottom = scroller.scrollTop + scroller.clientHeight >= spacer.offsetHeight - ROW * 2;
        summary();
        draw();
        if (atBottom) scroller.scrollTop = spacer.offsetHeight;
      });
    };
    follow(runId, lastIndex, {
      signal: q.signal,
      onEvent: (ev) => {
        if (ev.index <= lastIndex) return;
        add(ev);
        refresh();
      },
      onGap: (g) => {
        rows.push({ kind: "gap", from: g.from, to: g.to });
        refresh();
      },
      onState: (s, err) => {
        if (s === "connected") setLive("on", "Following live");
        else if (s === "retrying") setLive("retry", "Connection lost: reconnecting and resuming after #" + lastIndex + "…");
        else setLive("", err ? `Stopped following: ${err.body?.detail || err.message}` : "Finished: nothing more will arrive.");
      },
    });
  }
  return root;
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function preview(payload) {
  const s = typeof payload === "string" ? payload : JSON.stringify(payload);
  return s === undefined ? "" : s.length > 240 ? s.slice(0, 240) + "…" : s;
}

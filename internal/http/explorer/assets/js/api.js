// api.js — every call the explorer makes: the public /v1 API, with the API key (kept in
// sessionStorage for this tab only) as the bearer token.

const KEY = "footprint.apiKey";

export const getKey = () => sessionStorage.getItem(KEY) || "";
export function setKey(k) {
  if (k) sessionStorage.setItem(KEY, k);
  else sessionStorage.removeItem(KEY);
}

// Problem is an RFC 9457 problem the API answered (or one made up for a network failure).
export class Problem extends Error {
  constructor(status, body) {
    super(body.detail || body.title || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

function headers(extra) {
  const h = new Headers(extra || {});
  const k = getKey();
  if (k) h.set("Authorization", "Bearer " + k);
  return h;
}

async function problemOf(res) {
  let body;
  try {
    body = await res.json();
  } catch {
    body = { title: res.statusText || `HTTP ${res.status}`, status: res.status };
  }
  const p = new Problem(res.status, body);
  if (res.status === 401) window.dispatchEvent(new CustomEvent("footprint:unauthorized", { detail: p }));
  return p;
}

// api calls the API and returns {status, body, headers}; a 4xx or 5xx throws its Problem.
export async function call(path, { method = "GET", body, signal } = {}) {
  const init = { method, signal, headers: headers(body !== undefined ? { "Content-Type": "application/json" } : {}) };
  if (body !== undefined) init.body = JSON.stringify(body);
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new Problem(0, { title: "The server could not be reached", detail: String(err.message || err) });
  }
  if (!res.ok) throw await problemOf(res);
  const ct = res.headers.get("Content-Type") || "";
  return { status: res.status, headers: res.headers, body: ct.includes("json") ? await res.json() : null };
}

export const get = async (path, opts) => (await call(path, opts)).body;

export function qs(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const s = q.toString();
  return s ? "?" + s : "";
}

// follow streams a run's events live over Server-Sent Events with fetch (EventSource cannot send
// an Authorization header), from after `after`, and resumes with Last-Event-ID after a dropped
// connection until the stream ends because the run finished, or signal aborts. onEvent gets
// each RecordedEvent, onGap each {from, to}, onState "connected", "retrying" or "ended".
export async function follow(runId, after, { signal, onEvent, onGap, onState }) {
  let last = after;
  let delay = 500;
  for (;;) {
    if (signal.aborted) return;
    let ended = false;
    try {
      const h = headers({ Accept: "text/event-stream" });
      if (last >= 0) h.set("Last-Event-ID", String(last));
      const res = await fetch(`/v1/runs/${encodeURIComponent(runId)}/events`, { headers: h, signal });
      if (!res.ok) throw await problemOf(res);
      onState("connected");
      delay = 500;
      const reader = res.body.getReader();
      const decoder = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
          const ev = parseBlock(block);
          if (!ev) continue;
          if (ev.event === "gap") onGap(JSON.parse(ev.data));
          else if (ev.data) {
            const rec = JSON.parse(ev.data);
            last = rec.index;
            onEvent(rec);
          }
        }
      }
      // The server ends the stream when the run is finished and every event was sent.
      ended = await runFinished(runId, signal);
    } catch (err) {
      if (err.name === "AbortError" || signal.aborted) return;
      if (err instanceof Problem && err.status && err.status < 500 && err.status !== 429) {
        onState("ended", err);
        return;
      }
    }
    if (ended) {
      onState("ended");
      return;
    }
    onState("retrying");
    await new Promise((r) => setTimeout(r, delay));
    delay = Math.min(delay * 2, 5000);
  }
}

async function runFinished(runId, signal) {
  try {
    const rec = await get(`/v1/runs/${encodeURIComponent(runId)}`, { signal });
    return rec.run.finished;
  } catch {
    return false;
  }
}

function parseBlock(block) {
  const ev = { event: "message", data: "" };
  let any = false;
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    const val = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (field === "event") ev.event = val;
    else if (field === "data") ev.data += (ev.data ? "\n" : "") + val;
    else if (field === "id") ev.id = val;
    any = true;
  }
  return any ? ev : null;
}

// Tests of @footprint/client against a running server: FOOTPRINT_URL, and FOOTPRINT_API_KEY for
// a tenant of its own (cmd/server's TestNodeClients starts the real program on both stores and
// runs this file). Run it by hand with `node --test test/` after `npm run build`.
import assert from "node:assert/strict";
import { test } from "node:test";
import { createFootprint, FootprintError, injectionText, spanText, unwrap } from "../dist/index.js";

const baseUrl = process.env.FOOTPRINT_URL;
const key = process.env.FOOTPRINT_API_KEY;
if (!baseUrl) throw new Error("set FOOTPRINT_URL to a running footprint server");

const fp = createFootprint({ baseUrl, key });
const conv = `ts-client-${Date.now()}`;
const msgs = (q, a) => [{ role: "user", content: q }, { role: "assistant", content: a }];

test("memories, turns, recall and explain, typed by the spec", async () => {
  const chat = await unwrap(fp.POST("/v1/memories", { body: { id: "ts-chat", type: "episodic", strategy: { kind: "window", size: 20 } } }));
  assert.equal(chat.id, "ts-chat");
  assert.equal(chat.version, 1);
  const turn = await unwrap(fp.POST("/v1/conversations/{conversationId}/turns", {
    params: { path: { conversationId: conv } },
    body: { messages: msgs("What is the refund window?", "30 days.") },
  }));
  assert.equal(turn.turn, 1);
  const recall = await unwrap(fp.POST("/v1/conversations/{conversationId}/recall", {
    params: { path: { conversationId: conv } },
    body: { query: "refund window", turn: 2, memories: ["ts-chat"] },
  }));
  assert.match(recall.recallId, /^rcl_/);
  assert.match(recall.systemPrompt, /30 days/);
  assert.ok(recall.memories[0].evidence.candidates.length >= 2);
  // The text is once in the answer; the injections' spans name its parts.
  const pieces = recall.injections.map((inj) => injectionText(recall, inj));
  assert.ok(pieces.every((p) => typeof p === "string" && p.length > 0), JSON.stringify(recall.injections));
  assert.equal(pieces.join("\n\n"), recall.systemPrompt);
  assert.equal(spanText(recall, recall.memories[0].systemSpan), recall.systemPrompt);
  assert.equal(spanText(recall, { startByte: 0, endByte: new TextEncoder().encode(recall.systemPrompt).length + 1 }), undefined);
  await unwrap(fp.POST("/v1/conversations/{conversationId}/turns", {
    params: { path: { conversationId: conv } },
    body: { messages: msgs("And for damaged items?", "Also 30 days."), recallIds: [recall.recallId] },
  }));
  const ex = await unwrap(fp.GET("/v1/conversations/{conversationId}/turns/{turn}/explain", {
    params: { path: { conversationId: conv, turn: 2 } },
  }));
  assert.equal(ex.turn, 2);
  assert.ok(ex.origins.some((o) => o.recallId === recall.recallId), JSON.stringify(ex.origins));
});

test("spanText slices UTF-8 bytes, not UTF-16 units", () => {
  const systemPrompt = "Café → ok\n\nnext";
  const recall = { systemPrompt };
  // "Café → ok" is 12 bytes: é is 2, → is 3.
  assert.equal(spanText(recall, { startByte: 0, endByte: 12 }), "Café → ok");
  assert.equal(spanText(recall, { startByte: 14, endByte: 18 }), "next");
  assert.equal(spanText(recall, { startByte: 4, endByte: 5 }), undefined, "a span inside a character");
  assert.equal(spanText(recall, undefined), undefined);
});

test("a refusal is a FootprintError with the problem's code, path and fix", async () => {
  await assert.rejects(
    unwrap(fp.POST("/v1/memories", { body: { id: "ts-notes", type: "episodic", strategy: "window" } })),
    (err) => {
      assert.ok(err instanceof FootprintError);
      assert.equal(err.status, 422);
      assert.equal(err.code, "invalid-strategy");
      assert.equal(err.path, "strategy");
      assert.deepEqual(err.fix, { kind: "window", size: 20 });
      assert.ok(err.requestId);
      return true;
    },
  );
  const anonymous = createFootprint({ baseUrl });
  await assert.rejects(unwrap(anonymous.GET("/v1/memories")), (err) => err instanceof FootprintError && err.code === "unauthorized" && err.status === 401);
});

test("a turn whose answer is lost is retried with its Idempotency-Key, and replayed", async () => {
  await unwrap(fp.POST("/v1/memories", { body: { id: "ts-retry", type: "episodic", strategy: { kind: "window", size: 20 } } })).catch((err) => {
    if (err.code !== "memory-exists") throw err;
  });
  const seen = [];
  let lost = false;
  const flaky = createFootprint({
    baseUrl,
    key,
    fetch: async (request) => {
      if (request.method === "POST" && new URL(request.url).pathname.endsWith("/turns")) {
        seen.push(request.headers.get("Idempotency-Key"));
        if (!lost) {
          lost = true;
          await fetch(request); // stored; the answer never arrives
          return new Response(JSON.stringify({ type: "/problems/unavailable", title: "Service unavailable", status: 503, code: "unavailable" }),
            { status: 503, headers: { "Content-Type": "application/problem+json", "Retry-After": "0" } });
        }
      }
      return fetch(request);
    },
  });
  const retryConv = `${conv}-retry`;
  const { data, response } = await flaky.POST("/v1/conversations/{conversationId}/turns", {
    params: { path: { conversationId: retryConv } },
    body: { messages: msgs("hello", "hi"), memories: ["ts-retry"] },
  });
  assert.equal(response.status, 201);
  assert.equal(response.headers.get("Idempotent-Replayed"), "true");
  assert.equal(data.turn, 1);
  assert.equal(seen.length, 2);
  assert.ok(seen[0]);
  assert.equal(seen[0], seen[1]);
  const entries = await unwrap(fp.GET("/v1/conversations/{conversationId}/entries", { params: { path: { conversationId: retryConv } } }));
  assert.equal(entries.entries.length, 2, "the turn's two messages, once");
});

test("a 429 past the longest wait is returned at once, saying how long to wait", async () => {
  let calls = 0;
  const limited = createFootprint({
    baseUrl,
    key,
    maxRetryWaitMs: 1000,
    fetch: async () => {
      calls++;
      return new Response(JSON.stringify({ type: "/problems/rate-limited", title: "Too many requests", status: 429, code: "rate-limited", detail: "slow down" }),
        { status: 429, headers: { "Content-Type": "application/problem+json", "Retry-After": "60" } });
    },
  });
  await assert.rejects(unwrap(limited.GET("/v1/memories")), (err) => err.code === "rate-limited" && err.retryAfterMs === 60_000);
  assert.equal(calls, 1);
});

// The official TypeScript MCP SDK against footprint's /mcp (FOOTPRINT_URL, FOOTPRINT_API_KEY for
// a tenant of its own; cmd/server's TestNodeClients runs this on both stores): list the tools,
// define memories, post two turns, recall, explain. The SDK checks every structured answer
// against the tool's output schema, so the schemas read from the spec are checked here too.
import assert from "node:assert/strict";
import { test } from "node:test";
import { connect, runSession } from "../session.js";

const url = process.env.FOOTPRINT_URL;
const key = process.env.FOOTPRINT_API_KEY;
if (!url) throw new Error("set FOOTPRINT_URL to a running footprint server");

test("an agent's session through MCP", async () => {
  const lines = [];
  const seen = await runSession({ url, key, log: (l) => lines.push(l) });
  console.log(lines.join("\n"));

  assert.deepEqual(seen.tools.map((t) => t.name).sort(), [
    "append_events", "define_memory", "explain_turn", "finish_run", "forget_conversation",
    "list_entries", "list_strategies", "open_run", "post_turn", "recall",
  ]);
  for (const t of seen.tools) {
    assert.equal(t.inputSchema.type, "object", t.name);
    assert.equal(t.outputSchema?.type, "object", t.name);
  }
  const [chat, why, refusal] = seen.calls.define_memory;
  assert.equal(chat.isError, undefined, JSON.stringify(chat));
  assert.equal(why.structuredContent.id, "why");
  assert.equal(refusal.isError, true);
  const problem = JSON.parse(refusal.content[0].text);
  assert.equal(problem.code, "invalid-strategy");
  assert.equal(problem.path, "strategy");
  assert.deepEqual(problem.fix, { kind: "window", size: 20 });
  assert.ok(problem.detail && problem.requestId);

  const turns = seen.calls.post_turn.map((r) => r.structuredContent.turn);
  assert.deepEqual(turns, [1, 2, 3]);

  // recall: the system-prompt text as text, the evidence as structured content.
  const recall = seen.recall;
  assert.equal(recall.content[0].type, "text");
  assert.equal(recall.content[0].text, recall.structuredContent.systemPrompt);
  assert.match(recall.content[0].text, /Damaged items are refunded within 30 days\./);
  const why1 = recall.structuredContent.memories.find((m) => m.memoryId === "why");
  assert.ok(why1.evidence.candidates.some((c) => c.id === "snap-1" && c.admitted), JSON.stringify(why1.evidence));

  const ex = seen.explain.structuredContent;
  const origin = ex.origins.find((o) => o.injectionId === "memory:why#snap-1");
  assert.equal(origin?.entryId, "snap-1");
  assert.equal(origin?.recallId, recall.structuredContent.recallId);
  assert.equal(ex.suspects[0].injectionId, "memory:why#snap-1");
});

test("without the key, /mcp refuses to connect", async () => {
  await assert.rejects(connect({ url }), /401|nauthorized/);
});

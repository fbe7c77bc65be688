/**
 * An agent loop on @footprint/client, the same as examples/agent-go: define the memories, and
 * for each turn of a short support conversation recall what to show the model, record what the
 * model was shown, post the finished turn with its evidence, and at the end explain the last
 * answer back to the turn that caused it.
 *
 * The model is a stand-in (`answer`, below) so that the example runs anywhere; put your LLM
 * call there. Against a server (`make run` in another terminal):
 *
 *     npm run build -w examples/agent-ts && node examples/agent-ts/dist/agent.js [conversation]
 *
 * FOOTPRINT_URL (default http://127.0.0.1:8080) and FOOTPRINT_API_KEY are read from the
 * environment.
 */
import { createFootprint, FootprintError, unwrap, type Schemas } from "@footprint/client";

const baseUrl = process.env.FOOTPRINT_URL ?? "http://127.0.0.1:8080";
const fp = createFootprint({ baseUrl, key: process.env.FOOTPRINT_API_KEY });
const conv = process.argv[2] ?? "support-agent-ts";

/** What the user says each turn. */
const script = [
  "What is the refund window for damaged items?",
  "Do you ship to Norway?",
  "How long do refunds for damaged items take?",
];

/**
 * The stand-in model: it repeats an earlier answer to the same question when the system
 * prompt holds one, as a model would, and answers from its own (outdated) handbook otherwise.
 * It also says which rule it followed: the turn's evidence.
 */
function answer(systemPrompt: string, question: string): { reply: string; decision: Schemas["Decision"] } {
  if (question.includes("refund")) {
    return systemPrompt.includes("30 days")
      ? { reply: "We refund damaged items within 30 days.", decision: { stageId: "policy", chosen: "30-day window", rule: "past decision" } }
      : { reply: "Damaged items are refunded within 30 days.", decision: { stageId: "policy", chosen: "30-day window", rule: "old handbook" } };
  }
  return { reply: "Yes, we ship to Norway.", decision: { stageId: "shipping", chosen: "ships to Norway" } };
}

async function main(): Promise<void> {
  // 1. The memories (once per tenant: one that exists is fine).
  const memories: Schemas["MemoryInput"][] = [
    { id: "chat", type: "episodic", strategy: { kind: "window", size: 20 } },
    { id: "why", type: "causal", strategy: { kind: "topK", topK: 2, ranking: "vector", threshold: 0.2 } },
  ];
  for (const m of memories) {
    try {
      await unwrap(fp.POST("/v1/memories", { body: m }));
      console.log(`memory ${m.id}: defined`);
    } catch (err) {
      if (!(err instanceof FootprintError && err.code === "memory-exists")) throw err;
      console.log(`memory ${m.id}: already defined`);
    }
  }

  // 2. The turns.
  let last = 0;
  for (const [i, question] of script.entries()) {
    const turn = i + 1;
    const runId = `${conv}-run-${turn}-${Date.now()}`;
    const path = { conversationId: conv };
    const recall = await unwrap(fp.POST("/v1/conversations/{conversationId}/recall", {
      params: { path },
      body: { query: question, turn, runId },
    }));
    await unwrap(fp.POST("/v1/runs", { body: { runId, conversationId: conv, turn } }));
    const { reply, decision } = answer(recall.systemPrompt, question);
    const events: Schemas["EventInput"][] = recall.injections.map((inj) => ({
      type: "context.injected",
      payload: { slot: "system", source: "memory", sourceId: inj.id, iteration: 1 },
    }));
    events.push({ type: "llm.request", payload: { model: "stand-in", iteration: 1 } });
    await unwrap(fp.POST("/v1/runs/{runId}/events", { params: { path: { runId } }, body: { events } }));
    await unwrap(fp.POST("/v1/runs/{runId}/finish", { params: { path: { runId } }, body: { complete: true } }));
    // The client gives the POST an Idempotency-Key: a retry cannot store the turn twice.
    const posted = await unwrap(fp.POST("/v1/conversations/{conversationId}/turns", {
      params: { path },
      body: {
        messages: [{ role: "user", content: question }, { role: "assistant", content: reply }],
        evidence: { decisions: [decision] },
        recallIds: [recall.recallId],
        runId,
      },
    }));
    if (posted.turn === undefined) throw new Error(`turn ${turn}: nothing was written`);
    last = posted.turn;
    console.log(`turn ${turn}: ${JSON.stringify(question)} -> ${JSON.stringify(reply)} (recalled ${recall.injections.length} pieces, stored as turn ${last})`);
  }

  // 3. Explain the last answer.
  const ex = await unwrap(fp.GET("/v1/conversations/{conversationId}/turns/{turn}/explain", {
    params: { path: { conversationId: conv, turn: last }, query: { depth: 2 } },
  }));
  const top = ex.suspects[0];
  if (!top) {
    console.log(`explain turn ${last}: no suspects`);
    return;
  }
  console.log(`explain turn ${last}: top suspect ${top.injectionId} (${top.strategy} ${top.score.toFixed(2)})`);
  for (const o of ex.origins.filter((o) => o.injectionId === top.injectionId && o.entry)) {
    console.log(`  origin: entry ${o.entryId} of memory ${o.memoryId}, written by turn ${o.entry?.turn}: ${JSON.stringify(o.entry?.finalContent)}`);
  }
  for (const e of ex.earlier) {
    for (const d of e.answer.decisions ?? []) {
      console.log(`  turn ${e.turn} decided ${d.stageId}: ${d.chosen}${d.rule ? ` (rule: ${d.rule})` : ""}`);
    }
  }
}

main().catch((err) => {
  console.error("agent-ts:", err instanceof Error ? err.message : err);
  process.exit(1);
});

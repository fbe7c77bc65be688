// An MCP session with footprint on the official TypeScript SDK (@modelcontextprotocol/sdk),
// over Streamable HTTP to the server's /mcp endpoint with the API key as a bearer token: list
// the tools, define the memories, post two turns, recall for the third, post it, explain it.
// This is what an agent framework's MCP client does on a model's behalf.
//
//     FOOTPRINT_URL=http://127.0.0.1:8080 FOOTPRINT_API_KEY=... node examples/mcp-ts/session.js
//
// It prints a transcript: each call (→) with its arguments and each answer (←).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { fileURLToPath } from "node:url";

/** Connects to footprint's /mcp endpoint. */
export async function connect({ url, key }) {
  const client = new Client({ name: "footprint-mcp-example", version: "0.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL("/mcp", url), {
    requestInit: key ? { headers: { Authorization: `Bearer ${key}` } } : {},
  });
  await client.connect(transport);
  return client;
}

const clip = (s, n = 160) => (s.length > n ? `${s.slice(0, n)}…` : s);

/**
 * Runs the session and returns what it saw; `log` receives the transcript's lines.
 */
export async function runSession({ url, key, conversationId = `mcp-ts-${Date.now()}`, log = console.log }) {
  const client = await connect({ url, key });
  const seen = { calls: {} };
  try {
    const { tools } = await client.listTools();
    seen.tools = tools;
    log(`tools/list → ${tools.length} tools`);
    for (const t of tools) {
      const args = Object.keys(t.inputSchema.properties ?? {}).join(", ");
      log(`  ${t.name}(${args})${t.annotations?.readOnlyHint ? " [read-only]" : ""}${t.annotations?.destructiveHint ? " [destructive]" : ""}`);
      log(`    ${clip(t.description, 110)}`);
    }
    const call = async (name, args) => {
      log(`→ ${name} ${JSON.stringify(args)}`);
      const res = await client.callTool({ name, arguments: args });
      const text = res.content.map((c) => c.text ?? "").join("\n");
      log(`← ${res.isError ? "ERROR " : ""}${clip(text.replaceAll("\n", "\\n"))}`);
      (seen.calls[name] ??= []).push(res);
      return res;
    };
    for (const m of [
      { id: "chat", type: "episodic", strategy: { kind: "window", size: 20 } },
      { id: "why", type: "causal", strategy: { kind: "topK", topK: 2, ranking: "vector", threshold: 0.2 } },
    ]) {
      await call("define_memory", m);
    }
    // A mistake is refused with the field at fault and a value that works.
    await call("define_memory", { id: "notes", type: "episodic", strategy: "window" });
    await call("post_turn", {
      conversationId,
      idempotencyKey: `${conversationId}-turn-1`,
      messages: [
        { role: "user", content: "What is the refund window for damaged items?" },
        { role: "assistant", content: "Damaged items are refunded within 30 days." },
      ],
      evidence: { decisions: [{ stageId: "policy", chosen: "30-day window", rule: "old handbook" }] },
    });
    await call("post_turn", {
      conversationId,
      messages: [
        { role: "user", content: "Do you ship to Norway?" },
        { role: "assistant", content: "Yes, we ship to Norway." },
      ],
    });
    const recall = await call("recall", { conversationId, query: "How long do refunds for damaged items take?", turn: 3 });
    seen.recall = recall;
    await call("post_turn", {
      conversationId,
      recallIds: [recall.structuredContent.recallId],
      messages: [
        { role: "user", content: "How long do refunds for damaged items take?" },
        { role: "assistant", content: "We refund damaged items within 30 days." },
      ],
    });
    const ex = await call("explain_turn", { conversationId, turn: 3 });
    seen.explain = ex;
    const top = ex.structuredContent.suspects[0];
    const origin = ex.structuredContent.origins.find((o) => o.injectionId === top?.injectionId);
    log(`explain: top suspect ${top?.injectionId}, from entry ${origin?.entryId} written by turn ${origin?.entry?.turn}: ${JSON.stringify(origin?.entry?.finalContent)}`);
    return seen;
  } finally {
    await client.close();
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  runSession({ url: process.env.FOOTPRINT_URL ?? "http://127.0.0.1:8080", key: process.env.FOOTPRINT_API_KEY, conversationId: process.argv[2] }).catch((err) => {
    console.error("mcp-ts:", err);
    process.exit(1);
  });
}

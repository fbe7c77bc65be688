// Runs the example against a running server (FOOTPRINT_URL, FOOTPRINT_API_KEY for a tenant of
// its own) and checks that it explains its last answer back to turn 1's decision, as
// examples/agent-go does. cmd/server's TestNodeClients runs it on both stores.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { test } from "node:test";
import { promisify } from "node:util";

const agent = fileURLToPath(new URL("../dist/agent.js", import.meta.url));
const run = (conv) => promisify(execFile)(process.execPath, [agent, conv], { env: process.env, timeout: 60_000 });

test("the agent loop explains its last answer", async () => {
  const conv = `agent-ts-${Date.now()}`;
  const { stdout } = await run(conv);
  console.log(stdout);
  for (const want of [
    /^memory chat: (defined|already defined)$/m,
    /^turn 3: "How long do refunds for damaged items take\?" -> "We refund damaged items within 30 days\."/m,
    /^explain turn 3: top suspect memory:why#snap-1 /m,
    /^ {2}origin: entry snap-1 of memory why, written by turn 1: "Damaged items are refunded within 30 days\."$/m,
    /^ {2}turn 1 decided policy: 30-day window \(rule: old handbook\)$/m,
  ]) {
    assert.match(stdout, want);
  }
  // Again, on the same tenant: the memories exist, a new conversation goes through.
  const again = await run(`${conv}-2`);
  assert.match(again.stdout, /^memory chat: already defined$/m);
  assert.match(again.stdout, /^explain turn 3: top suspect memory:why#snap-1 /m);
});

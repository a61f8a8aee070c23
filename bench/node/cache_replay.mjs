// The reference dynamic-tools scenario of `tackle bench cache`, run through the Vercel AI SDK
// against the same fake model and its simulated prompt cache (bench/cache/run.sh drives it).
//
//   node cache_replay.mjs REPLAY.json active|all
//
// REPLAY.json is `tackle bench cache --export`: the fake's script, Tackle's system messages, tool
// definitions and tool results, and the tools Tackle allowed at each step. `active` gives the AI
// SDK the same per-step availability through `activeTools` (which sends only those tools); `all`
// sends every tool at every step (no availability at all). Prints one JSON line of totals.
import fs from 'node:fs';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';

const [path, mode] = process.argv.slice(2);
if (!path || !['active', 'all'].includes(mode)) {
  console.error('usage: node cache_replay.mjs REPLAY.json active|all');
  process.exit(2);
}
const replay = JSON.parse(fs.readFileSync(path, 'utf8'));
const provider = createOpenAICompatible({
  name: 'fake',
  baseURL: process.env.FAKE_BASE ?? 'http://127.0.0.1:8089/v1',
  apiKey: 'sk-bench',
});
const content = (c) => (typeof c === 'string' ? c : JSON.stringify(c));
// The same definitions Tackle sent; each call returns the result Tackle's tool returned.
const tools = Object.fromEntries(
  replay.tools.map(({ function: f }) => [
    f.name,
    tool({
      description: f.description,
      inputSchema: jsonSchema(f.parameters),
      execute: async (_input, { toolCallId }) => {
        if (!(toolCallId in replay.tool_results)) throw new Error(`no recorded result for ${toolCallId}`);
        return content(replay.tool_results[toolCallId]);
      },
    }),
  ]),
);

const messages = replay.system.map((m) => ({ role: 'system', content: content(m.content) }));
const totals = { mode, steps: 0, turns: 0, input_tokens: 0, cache_read_tokens: 0, tools_sent: 0 };
for (const turn of replay.turns) {
  messages.push({ role: 'user', content: turn.message });
  const result = await generateText({
    model: provider('bench-model'),
    messages,
    allowSystemInMessages: true,
    tools,
    stopWhen: stepCountIs(turn.allowed_tools.length),
    prepareStep: ({ stepNumber }) => (mode === 'active' ? { activeTools: turn.allowed_tools[stepNumber] } : {}),
  });
  if (result.steps.length !== turn.allowed_tools.length) {
    throw new Error(`turn "${turn.message}": ${result.steps.length} steps, Tackle took ${turn.allowed_tools.length}`);
  }
  for (const [i, step] of result.steps.entries()) {
    totals.steps += 1;
    totals.input_tokens += step.usage.inputTokens ?? 0;
    totals.cache_read_tokens += step.usage.inputTokenDetails?.cacheReadTokens ?? 0;
    totals.tools_sent += mode === 'active' ? turn.allowed_tools[i].length : replay.tools.length;
  }
  totals.turns += 1;
  messages.push(...result.response.messages);
}
console.log(JSON.stringify(totals));

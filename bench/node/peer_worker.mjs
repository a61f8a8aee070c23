// The Vercel AI SDK worker of the peer benchmark (protocol in bench/peers/README.md):
// generateText with one `add` tool and stopWhen: stepCountIs(N + 1), a fresh call per run.
// node worker.mjs [--once N]
import readline from 'node:readline';
import { generateText, stepCountIs, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { z } from 'zod';

const provider = createOpenAICompatible({
  name: 'fake',
  baseURL: process.env.FAKE_BASE ?? 'http://127.0.0.1:8089/v1',
  apiKey: 'sk-bench',
  includeUsage: true,
});
const tools = {
  add: tool({
    description: 'Add two integers.',
    inputSchema: z.object({ a: z.number().int(), b: z.number().int() }),
    execute: async ({ a, b }) => a + b,
  }),
};

async function timed(n) {
  const start = performance.now();
  const result = await generateText({
    model: provider(`fake-steps-${n}`),
    system: 'Use the add tool.',
    prompt: 'go',
    tools,
    stopWhen: stepCountIs(n + 1),
  });
  const ms = performance.now() - start;
  process.stdout.write(`RESULT ${JSON.stringify({ ms, answer: result.text })}\n`);
}

const args = process.argv.slice(2);
if (args.length === 2 && args[0] === '--once') {
  await timed(Number(args[1]));
} else if (args.length === 0) {
  const lines = readline.createInterface({ input: process.stdin });
  for await (const line of lines) {
    if (!line.trim()) break;
    await timed(Number(line));
  }
  process.exit(0);
} else {
  console.error('usage: node worker.mjs [--once N]');
  process.exit(2);
}

// The Vercel AI SDK 6 with its default OpenAI provider (`@ai-sdk/openai`, Responses API,
// store left at its default: true) running tool loops against `tackle serve` /v1/responses:
// `generateText` and `streamText`, each over two steps (a tool call with text before it, then
// the answer). From step 2 on the SDK names its earlier output as item_reference items.
// Usage: node ai_sdk_responses.mjs BASE_URL TOKEN; prints what it saw as JSON.
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.TACKLE_NODE_MODULES, "noop.js"));
const { generateText, streamText, tool, stepCountIs, jsonSchema } = require("ai");
const { createOpenAI } = require("@ai-sdk/openai");

const [base, token] = process.argv.slice(2);
const sent = [];
const openai = createOpenAI({
  baseURL: `${base}/v1`,
  apiKey: token,
  // Records what the SDK sends; the request itself is untouched.
  fetch: async (url, init) => {
    if (init?.body) sent.push(JSON.parse(init.body));
    return fetch(url, init);
  },
});
const runs = [];
const tools = {
  get_weather: tool({
    description: "Weather of a city",
    inputSchema: jsonSchema({
      type: "object",
      properties: { city: { type: "string" } },
      required: ["city"],
      additionalProperties: false,
    }),
    execute: async ({ city }) => {
      runs.push(city);
      return `rain, 8 C in ${city}`;
    },
  }),
};
const common = { model: openai("model-x"), tools, stopWhen: stepCountIs(4) };

const generated = await generateText({ ...common, prompt: "Weather in Oslo?" });

const errors = [];
const streamed = streamText({
  ...common,
  prompt: "Weather in Bergen?",
  onError: ({ error }) => errors.push(String(error?.message ?? error)),
});
let streamedText = "";
for await (const delta of streamed.textStream) streamedText += delta;
const steps = await streamed.steps;

const references = sent.flatMap((body) =>
  Array.isArray(body.input) ? body.input.filter((i) => i.type === "item_reference").map((i) => i.id) : [],
);
console.log(
  JSON.stringify({
    generate: { text: generated.text, steps: generated.steps.length, finish: generated.finishReason },
    stream: { text: streamedText, steps: steps.length, finish: await streamed.finishReason, errors },
    runs,
    references,
    requests: sent.length,
  }),
);

// Drives `tackle mcp serve` with the official MCP TypeScript SDK (npm @modelcontextprotocol/sdk,
// unmodified). Usage: node mcp_serve_client.mjs stdio TACKLE_BIN WORKSPACE [typed]
//                     node mcp_serve_client.mjs http URL TOKEN [typed]
// Lists the tools, calls `tackle` (with onprogress) and `tackle_reply` on the session it returned,
// and prints a JSON summary on stdout. With `typed`: calls `tackle` with an `output_schema` (the
// SDK validates the structured content against the declared `outputSchema` in `callTool`), shows
// that the same validator refuses a copy that does not match, and calls it with a bad
// `output_schema`. Any failure exits non-zero.
import { createRequire } from "node:module";
const require = createRequire(process.env.TACKLE_NODE_MODULES + "/");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StdioClientTransport } = require("@modelcontextprotocol/sdk/client/stdio.js");
const { StreamableHTTPClientTransport } = require("@modelcontextprotocol/sdk/client/streamableHttp.js");

const [kind, target, extra, scenario] = process.argv.slice(2);
const transport = kind === "stdio"
  ? new StdioClientTransport({ command: target, args: ["mcp", "serve", "--workspace", extra], env: process.env, stderr: "inherit" })
  : new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: { Authorization: `Bearer ${extra}` } } });
const client = new Client({ name: "tackle-test-ts", version: "1.0.0" });
await client.connect(transport);

const summary = (result, progress) => ({
  text: result.content.filter((c) => c.type === "text").map((c) => c.text),
  structured: result.structuredContent ?? null,
  is_error: Boolean(result.isError),
  progress,
});

const out = { protocol: transport.protocolVersion ?? null };
const tools = (await client.listTools()).tools;
out.tools = tools.map((t) => t.name).sort();
if (scenario === "typed") {
  const schema = {
    type: "object",
    properties: { files: { type: "integer" }, summary: { type: "string" } },
    required: ["files", "summary"],
    additionalProperties: false,
  };
  out.output_schema = tools.find((t) => t.name === "tackle").outputSchema;
  // `callTool` throws when the structured content does not match the declared outputSchema.
  const typed = await client.callTool({ name: "tackle", arguments: { prompt: "Count the files.", output_schema: schema } });
  out.typed = summary(typed, []);
  // The validator `callTool` used (compiled by listTools; a private member, read here only to
  // show the check is live) must refuse a copy that breaks the declared schema.
  const validate = client.getToolOutputValidator("tackle");
  const verdict = validate({ ...typed.structuredContent, end: "finished" });
  out.broken_refused = verdict.valid ? null : verdict.errorMessage;
  const bad = await client.callTool({ name: "tackle", arguments: { prompt: "Count the files.", output_schema: { type: "objekt" } } });
  out.bad = summary(bad, []);
} else {
  const progress = [];
  const first = await client.callTool({ name: "tackle", arguments: { prompt: "Say hello." } }, undefined, {
    onprogress: (p) => progress.push({ progress: p.progress, message: p.message ?? null }),
  });
  out.first = summary(first, progress);
  const second = await client.callTool({
    name: "tackle_reply",
    arguments: { session_id: first.structuredContent.session_id, prompt: "And again." },
  });
  out.second = summary(second, []);
}
await client.close();
console.log(JSON.stringify(out));

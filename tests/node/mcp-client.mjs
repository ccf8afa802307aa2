// The official TypeScript MCP client (@modelcontextprotocol/client) against POST /mcp, for
// tests/python/test_mcp.py: connects in the negotiation mode named by argv[2] ("legacy",
// "auto", or a version to pin), lists every tool (page after page) and the prompts, calls
// get_me and one prompt, and prints what it saw as one JSON line.
// Usage: node mcp-client.mjs <mode> <endpoint URL>, with the bearer token in NETOPS_TOKEN.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";

const [mode, url] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${process.env.NETOPS_TOKEN}` } },
});
const client = new Client(
  { name: "netops-tests", version: "1.0.0" },
  { versionNegotiation: { mode: mode === "legacy" || mode === "auto" ? mode : { pin: mode } } },
);
await client.connect(transport);
const tools = [];
let cursor;
do {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  cursor = page.nextCursor;
} while (cursor);
const me = await client.callTool({ name: "get_me", arguments: {} });
const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
const prompt = await client.getPrompt({ name: "what_changed", arguments: { period: "3h" } });
console.log(
  JSON.stringify({
    version: client.getNegotiatedProtocolVersion(),
    server: client.getServerVersion()?.name ?? null,
    tools: tools.map((t) => t.name),
    annotated: tools.every((t) => t.annotations?.readOnlyHint === true && t.annotations?.title),
    tenant: me.structuredContent?.data?.tenant ?? null,
    isError: me.isError ?? false,
    prompts,
    promptText: prompt.messages[0].content.text,
  }),
);
await client.close();
